"""benchmarks/bench_brokers.py, quick: every broker figure is there, positive, in its unit
(timings vary by machine: nothing here asserts on them). Five short runs, each with its broker
as a child process: about two seconds in all."""
from __future__ import annotations

import math

from benchmarks.bench_brokers import PROTOCOLS, SIZES, run

UNITS = {"msgs": "msgs/s", "latency.p50": "ms", "latency.p99": "ms"}


def test_quick_broker_benchmark_reports_every_figure():
    assert SIZES[True] < 1000          # so no p999: too few messages for it to mean anything
    results = {r["name"]: r for r in run(quick=True)}
    expected = {f"broker.{name}.{figure}": unit
                for name in PROTOCOLS for figure, unit in UNITS.items()}
    assert set(results) == set(expected)
    for name, unit in expected.items():
        row = results[name]
        assert isinstance(row["value"], float) and math.isfinite(row["value"]), row
        assert row["value"] > 0, row
        assert row["unit"] == unit, row
        assert row["peer"] is row["ratio"] is row["goal"] is row["met"] is None, row


def test_a_wrong_duplicated_or_foreign_delivery_is_an_error_not_a_figure():
    from benchmarks.bench_brokers import Run

    for deliver in (lambda p: p[:-1] + b"!",          # altered
                    lambda p: b"not a message",       # never published
                    lambda p: p.decode("ascii")):     # right (as text): the duplicate fails
        r = Run(2)
        first = r.payload(0)
        r.received(first)
        assert r.error is None and r.count == 1
        r.received(deliver(first))
        assert isinstance(r.error, AssertionError) and r.finished and r.count == 1
