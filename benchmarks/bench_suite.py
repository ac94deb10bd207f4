"""Suite speed: each protocol's black-box suite against its reference broker, serial and with
two pytest-xdist workers, as an implementer runs it (``wirecheck check --protocol P``, which
starts the reference broker on a free port, one per worker).

Per protocol and mode (``serial``, ``n2``):

- ``suite.<protocol>.<mode>``: tests per second over the test session (the result file's
  ``started`` to ``finished``: collection and the broker's start-up included, the
  interpreter's start-up not), with the test count as ``peer``; goal >= 70 tests/s per core
  (h2spec's pace): 70 serial, 140 with two workers (``ratio``: the pace over that goal).
- ``suite.<protocol>.<mode>.wall``: the whole command's wall time, seconds.

and ``suite.all.serial.wall`` / ``suite.all.n2.wall``: the suites' wall time together, goal
< 120 s for the five. Every test must PASS against the reference broker (a run that does not is an
error here, not a figure). Absence of a response is proven in the suites with a barrier
request, never a sleep (docs/start/server.md), so the pace is the suites' own.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_blipmq_decode import result

ROOT = Path(__file__).resolve().parents[1]
PROTOCOLS = ("blipmq", "rabbitmq-stream", "signalr", "vibemq", "micromessage2")
QUICK = ("blipmq",)
#: --quick (a smoke run: every figure written, none to compare) leaves out the suite's timer
#: tests and state machines, which are most of its time.
QUICK_ARGS = ("-m", "not slow", "-k", "not stateful")
MODES = {"serial": [], "n2": ["-n", "2"]}
#: Tests per second per core (h2spec's pace), and the five suites' wall-time bound.
GOAL_PER_CORE = 70.0
GOAL_ALL_SECONDS = 120.0
#: A suite that takes longer than this is stuck: the run is an error.
TIMEOUT = 600


def run_suite(protocol: str, mode: str, extra: tuple = ()) -> dict:
    """One ``wirecheck check`` run; its test count, session seconds and wall seconds."""
    with tempfile.TemporaryDirectory(prefix="wirecheck-bench-suite-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "wirecheck", "check", "--protocol", protocol,
               "--report", str(report), *MODES[mode], "--", "-q", "-p", "no:cacheprovider", *extra]
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
        wall = time.perf_counter() - start
        if proc.returncode != 0 or not report.exists():
            raise RuntimeError(f"{protocol} suite ({mode}) exited {proc.returncode}:\n"
                               f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        doc = json.loads(report.read_text(encoding="utf-8"))
    from wirecheck.conformance.report.verdicts import needs_target_command
    # the crash-recovery tests are SKIPPED against the embedded broker (the kit does not run it)
    verdicts = {t["verdict"] for t in doc["tests"] if not needs_target_command(t)}
    if verdicts - {"PASS", "INFORMATIONAL", "UNIMPLEMENTED"}:
        raise RuntimeError(f"{protocol} suite ({mode}): verdicts {sorted(verdicts)} against the "
                           "reference broker")
    return {"tests": len(doc["tests"]), "session": doc["finished"] - doc["started"], "wall": wall}


def run(quick: bool = False, protocols: tuple[str, ...] | None = None) -> list[dict]:
    """Every suite in both modes (``quick``: BlipMQ's alone, without its timer tests and state
    machines, for smoke tests)."""
    protocols = protocols or (QUICK if quick else PROTOCOLS)
    out: list[dict] = []
    totals = {mode: 0.0 for mode in MODES}
    for mode, extra in MODES.items():
        goal = GOAL_PER_CORE * (int(extra[1]) if extra else 1)
        for protocol in protocols:
            got = run_suite(protocol, mode, QUICK_ARGS if quick else ())
            pace = got["tests"] / got["session"]
            totals[mode] += got["wall"]
            out.append(result(f"suite.{protocol}.{mode}", pace, "tests/s", float(got["tests"]),
                              pace / goal, ">= 1"))
            out.append(result(f"suite.{protocol}.{mode}.wall", got["wall"], "s"))
    for mode, total in totals.items():
        out.append(result(f"suite.all.{mode}.wall", total, "s", GOAL_ALL_SECONDS,
                          total / GOAL_ALL_SECONDS, "<= 1"))
    return out


if __name__ == "__main__":
    for figure in run(quick="--quick" in sys.argv):
        print(json.dumps(figure), flush=True)
