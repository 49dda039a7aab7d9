"""Verification beyond unit tests: cocotb regressions (plain, programmable, sharded) and the fuzz harness."""
