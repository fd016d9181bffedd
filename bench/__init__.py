"""Benchmarks: `make bench` (python -m bench). Not part of the test suite."""
