"""xpfilt: XPath path-profile filtering in FPGA hardware, with a model, a reference and tooling."""

__version__ = "0.1.0"
