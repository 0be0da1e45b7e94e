"""Benchmarks for gpu-engine: generators, programs, peer engines, runner and report."""
