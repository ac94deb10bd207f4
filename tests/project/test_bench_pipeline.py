"""benchmarks/bench_pipeline.py on a small set: every figure is there and sensible (timings
vary by machine: nothing here asserts on them)."""
from __future__ import annotations

import os

import pytest

from benchmarks import bench_pipeline
from benchmarks.bench_pipeline import TreeMemory, run

pytestmark = pytest.mark.slow

NAMES = {"pipeline.input", "pipeline.frames", "pipeline.local1.mbps", "pipeline.local2.mbps",
         "pipeline.scaling", "pipeline.memory.eighth", "pipeline.memory.quarter",
         "pipeline.memory.half", "pipeline.memory.full", "pipeline.memory.growth",
         "pipeline.memory.growth4x", "pipeline.memory.worker", "pipeline.memory.jvm"}


def test_tree_memory_sees_this_process():
    m = TreeMemory(os.getpid(), interval=0.01)
    m._stop.wait(0.05)
    m.stop()
    assert m.peak_total > 10


GOALS = ("pipeline.scaling", "pipeline.memory.growth", "pipeline.memory.growth4x")


def test_small_pipeline_benchmark_reports_every_figure(monkeypatch):
    # The goals apply from GOAL_MB of input (500 MB): lowered here, so this small set gets them.
    monkeypatch.setattr(bench_pipeline, "GOAL_MB", 2.0)
    # Spark runs for real on the whole set (local[1], local[2]: speed, the JVM's and a worker's
    # memory); the memory series' three smaller shares are computed from their sizes, which is
    # all this test checks of them (each Spark start costs ~30 s; `make bench` runs them all).
    real, calls = bench_pipeline.analyze_once, []

    def analyze(paths_dir, master, out, conf=None):
        calls.append(master)
        if len(calls) <= 2:
            return real(paths_dir, master, out, conf)
        return _fake_analysis(paths_dir, master, out, conf)

    monkeypatch.setattr(bench_pipeline, "analyze_once", analyze)
    results = {r["name"]: r for r in run(mb=3.0, files=2)}
    assert NAMES <= set(results) <= NAMES | {"pipeline.vs_tshark"}
    assert 2.0 < results["pipeline.input"]["value"] < 4.5
    assert results["pipeline.frames"]["value"] > 10_000
    for name in GOALS:
        assert results[name]["ratio"] > 0 and isinstance(results[name]["met"], bool)
    # The memory series: each share of the set is a larger input than the one before.
    inputs = [results[f"pipeline.memory.{s}"]["peer"] for s in ("eighth", "quarter", "half", "full")]
    assert inputs == sorted(inputs) and inputs[0] < inputs[-1] / 4
    assert results["pipeline.memory.full"]["peer"] == results["pipeline.input"]["value"]
    assert results["pipeline.memory.jvm"]["value"] > 50      # the JVM was found in the tree
    assert results["pipeline.memory.worker"]["value"] > 10   # and a Python worker
    assert calls == ["local[1]", "local[2]"] + ["local[2]"] * 3


def test_goals_are_left_out_below_the_goal_size(monkeypatch):
    """A set smaller than GOAL_MB lies below the memory plateau: figures, no goals."""
    monkeypatch.setattr(bench_pipeline, "analyze_once", _fake_analysis)
    monkeypatch.setattr(bench_pipeline, "tshark_seconds", lambda paths: None)
    results = {r["name"]: r for r in run(mb=1.0, files=1)}
    for name in GOALS:
        assert results[name]["goal"] is None and results[name]["met"] is None, results[name]
        assert results[name]["ratio"] > 0
    monkeypatch.setattr(bench_pipeline, "GOAL_MB", 0.5)
    results = {r["name"]: r for r in run(mb=1.0, files=1)}
    assert all(isinstance(results[name]["met"], bool) for name in GOALS)


def _fake_analysis(paths_dir, master, out, conf=None):
    """What analyze_once returns, without Spark: the input's size drives every figure."""
    size = sum(os.path.getsize(os.path.join(paths_dir, f)) for f in os.listdir(paths_dir))
    return {"seconds": size / 1e6, "rows": {"frames": size // 100},
            "peak_total_mb": 500 + size / 1e6, "peak_worker_mb": 100.0, "peak_jvm_mb": 300.0}
