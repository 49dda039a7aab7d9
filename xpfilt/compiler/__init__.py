"""Profiles to hardware: the custom compiler (plans), programmable placement and configuration, split nodes, Verilog."""
