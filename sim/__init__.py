"""cocotb testbenches for the generated RTL (see the regression issue)."""
