"""Cycle-accurate models of the generated hardware, driven by the same plan as the RTL."""
