"""``benchmarks/run.py --quick`` runs as a script from the repository root and writes every
expected result. Timings vary by machine: nothing here asserts on them."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

EXPECTED = [
    *(f"blipmq.decode.{kind}.whole{suffix}" for kind in ("ping", "publish32", "publish64k")
      for suffix in ("", ".mbps")),
    "blipmq.split.whole", "blipmq.split.1byte", "blipmq.split.random",
    "blipmq.linear.whole.4x", "blipmq.linear.1byte.4x",
    "scapy.dissect.ping", "scapy.dissect.publish32", "scapy.dissect.publish64k",
    *(f"rmqs.decode.{kind}{suffix}"
      for kind in ("deliver100x100", "deliver100xvar", "deliver1x16", "confirm")
      for suffix in (".whole", ".whole.mbps", ".feedlist")),
    *(f"rmqs.rstream.decode.{kind}"
      for kind in ("deliver100x100", "deliver100xvar", "deliver1x16", "confirm")),
    *(f"rmqs.scapy.dissect.{kind}" for kind in ("deliver100x100", "deliver1x16", "confirm")),
    # --quick runs the reference broker alone (no real RabbitMQ: its start-up alone is ~20 s)
    "rmqs.broker.publish+confirm.5000x100B", "rmqs.broker.consume.5000x100B",
    # benchmarks/bench_brokers.py, quick: too few messages for a p999
    *(f"broker.{name}.{figure}" for name in ("blipmq", "vibemq", "micromessage2", "signalr", "signalr.tcp")
      for figure in ("msgs", "latency.p50", "latency.p99")),
    *(f"signalr.decode.{kind}.whole{suffix}"
      for kind in ("json.small", "json.large", "msgpack.small", "msgpack.large")
      for suffix in ("", ".mbps")),
    *(f"signalr.pysignalr.decode.{kind}"
      for kind in ("json.small", "json.large", "msgpack.small", "msgpack.large")),
    *(f"vibemq.decode.{flag}.{size}.whole{suffix}" for flag in ("plain", "gzip", "brotli")
      for size in ("small", "large") for suffix in ("", ".mbps")),
    # benchmarks/bench_protocols.py: the same figures for the four other protocols
    *(f"mm2.decode.{kind}{suffix}" for kind in ("small", "large", "command") for suffix in ("", ".mbps")),
    *(f"{p}.split.{how}" for p in ("mm2", "rmqs", "signalr.json", "signalr.msgpack", "vibemq")
      for how in ("whole", "1byte", "random")),
    *(f"{p}.linear.{how}.4x" for p in ("mm2", "rmqs", "signalr.json", "signalr.msgpack", "vibemq")
      for how in ("whole", "1byte")),
    *(f"mm2.scapy.dissect.{kind}" for kind in ("small", "large", "command")),
    *(f"{p}.scapy.dissect.{kind}" for p in ("signalr.json", "signalr.msgpack", "vibemq")
      for kind in ("small", "large")),
    # benchmarks/bench_suite.py: --quick runs BlipMQ's suite alone, serial and with two workers
    "suite.blipmq.serial", "suite.blipmq.serial.wall", "suite.blipmq.n2", "suite.blipmq.n2.wall",
    "suite.all.serial.wall", "suite.all.n2.wall",
    "report.write", "report.html.mb", "replay.8mb.rss", "replay.8mb.mbps",
    # --quick fuzzes two targets for a few seconds each (benchmarks/bench_fuzz.py QUICK_TARGETS)
    *(f"fuzz.{target}.{figure}" for target in ("blipmq_decoder", "mm2_decoder")
      for figure in ("execs", "cpu", "avg", "cov", "ft", "corpus")),
]


def test_quick_benchmark_run_writes_every_result(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "benchmarks/run.py", "--quick", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True,
                          timeout=600)   # a bound against a hang: ~90 s idle, twice that on a busy machine
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())

    assert {"platform", "python", "cpu", "cores", "calibration_us"} <= set(report["machine"])
    assert report["machine"]["calibration_us"] > 0
    results = {r["name"]: r for r in report["results"]}
    assert sorted(results) == sorted(EXPECTED)
    for name, r in results.items():
        assert set(r) == {"name", "value", "unit", "peer", "ratio", "goal", "met"}, name
        assert isinstance(r["value"], float) and r["value"] > 0, name
        if r["goal"] is not None:
            assert r["ratio"] > 0 and r["peer"] > 0 and isinstance(r["met"], bool), name
    for name in ("blipmq.split.1byte", "blipmq.split.random",
                 *(f"rmqs.rstream.decode.{k}" for k in ("deliver100x100", "deliver1x16", "confirm"))):
        assert results[name]["ratio"] > 0 and results[name]["peer"] > 0
    # The Markdown table carries the same rows.
    table = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + len(EXPECTED)
    assert all(any(f"| {name} |" in line for line in table) for name in EXPECTED)
    # a line per step on stderr while it runs: a slow run is told from a hung one
    steps = [line for line in proc.stderr.splitlines() if line.startswith("bench: [")]
    assert len(steps) == 2 * 11 and steps[-1].startswith("bench: [11/11] bench_fuzz: "), proc.stderr[-2000:]
