"""The open FPGA tools (Yosys, nextpnr as YoWASP wheels): synthesis, place and route, summaries."""
