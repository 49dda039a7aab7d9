"""Spark fan-out: sessions, filtering over executors, design-space sweeps, their store and report."""
