"""Throughput and scaling benchmarks; ``python benchmarks/run.py --out reports/bench.json``."""
