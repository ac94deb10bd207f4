"""Fuzzing speed: every atheris target of wirecheck/fuzz/targets.py under libFuzzer for a few seconds.

Each target runs as ``python -m wirecheck.fuzz.run_smoke`` runs it (fuzz.run_smoke.command: a *copy* of
its seed corpus, its dictionary, crash inputs to a temporary directory) for ``SECONDS`` seconds
(``--quick``: ``QUICK_TARGETS`` only, ``QUICK_SECONDS`` each). libFuzzer's stderr is read as it
comes and every line timed, which gives per target:

- ``fuzz.<target>.execs``: *steady-state* executions per second: executions after the initial
  corpus load (libFuzzer's ``INITED`` line) over the time from that line to ``DONE``. This is
  the per-core speed a long campaign sees; goal (kind "decoder") >= 10,000 exec/s, as
  ``peer``, with the figure over it as ``ratio``.
- ``fuzz.<target>.cpu``: the same executions over the CPU time the fuzzer used meanwhile (from
  ``/proc/<pid>/stat``; where there is none, the wall time): per core even when other work
  shares the machine, which the wall-clock figures are not. Same goal.
- ``fuzz.<target>.avg``: libFuzzer's ``stat::average_exec_per_sec``, which counts from process
  start-up, so it includes the instrumented imports and the corpus load: always lower on a
  run this short. Same ``peer``/``ratio`` as the steady figure, no goal.
- ``fuzz.<target>.cov``, ``.ft`` and ``.corpus``: coverage (edges, features) and units in
  the corpus from the last status line, to see that a faster target still explores.

libFuzzer is single-threaded: the full run fuzzes ``WORKERS`` targets at once, one per core
(2 here), so that every target fits in ``make bench``'s ten minutes; ``--workers 1`` runs one
at a time, for a machine with other work on it (``.cpu`` holds either way, as it counts the
fuzzer's own CPU time).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from wirecheck.fuzz.inprocess import FUZZ, STAT, STATUS, command
from wirecheck.fuzz.targets import TARGETS, FuzzTarget

from benchmarks.bench_blipmq_decode import result

GOAL_EXECS = 10_000.0
#: Goals by target kind ("nested" and "session" targets do more per input: figures only).
GOALS = {"decoder": GOAL_EXECS}
SECONDS = 5
#: The checkout: the targets run from it, as `make bench` does.
REPO = Path(__file__).resolve().parents[1]
QUICK_SECONDS = 3
QUICK_TARGETS = ("blipmq_decoder", "mm2_decoder")

#: Targets fuzzed at once by the full run: one per core, at most two.
WORKERS = max(1, min(2, os.cpu_count() or 1))

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of process ``pid`` so far (Linux), or None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK      # utime, stime (proc(5) fields 14, 15)


def fuzz_once(target: FuzzTarget, seconds: int) -> dict:
    """Run ``target`` for ``seconds``; its figures (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix=f"wirecheck-bench-{target.name}-") as tmp:
        corpus, artifacts = Path(tmp) / "corpus", Path(tmp) / "artifacts"
        shutil.copytree(FUZZ / "corpora" / target.corpus, corpus)
        artifacts.mkdir()
        cmd = command(target, corpus, artifacts, runs=None, seconds=seconds)
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, bufsize=1)
        inited = last = None
        stats, tail = {}, []
        for line in proc.stderr:
            now = time.perf_counter()
            tail = (tail + [line])[-20:]
            if m := STATUS.match(line):
                status = (now, int(m[1]), m[2], int(m[3]), int(m[4]), int(m[5]), cpu_seconds(proc.pid))
                if m[2] == "INITED":
                    inited = status
                last = status
            elif m := STAT.match(line):
                stats[m[1]] = int(m[2])
        proc.wait()
        if proc.returncode != 0 or inited is None or last is None or last[2] != "DONE":
            raise RuntimeError(f"{target.name} exited {proc.returncode}:\n{''.join(tail)}")
    span = last[0] - inited[0]
    cpu = last[6] - inited[6] if last[6] is not None and inited[6] is not None else span
    runs = last[1] - inited[1]
    return {"steady": runs / span if span > 0 else 0.0, "cpu": runs / cpu if cpu > 0 else 0.0,
            "average": stats.get("average_exec_per_sec", 0), "cov": last[3], "ft": last[4],
            "corpus": last[5]}


def run(quick: bool = False, targets=None, seconds: int | None = None,
        workers: int | None = None) -> list[dict]:
    names = targets or (QUICK_TARGETS if quick else sorted(TARGETS))
    seconds = seconds or (QUICK_SECONDS if quick else SECONDS)
    workers = workers or (1 if quick else WORKERS)
    with ThreadPoolExecutor(workers) as pool:        # each job waits on its own fuzzer process
        figures = list(pool.map(lambda name: fuzz_once(TARGETS[name], seconds), names))
    out = []
    for name, got in zip(names, figures):
        target = TARGETS[name]
        goal = GOALS.get(target.kind)
        peer = goal or None
        out += [result(f"fuzz.{name}.execs", round(float(got["steady"]), 1), "exec/s", peer,
                       round(got["steady"] / goal, 4) if goal else None, ">= 1" if goal else None),
                result(f"fuzz.{name}.cpu", round(float(got["cpu"]), 1), "exec/s", peer,
                       round(got["cpu"] / goal, 4) if goal else None, ">= 1" if goal else None),
                result(f"fuzz.{name}.avg", float(got["average"]), "exec/s", peer,
                       round(got["average"] / goal, 4) if goal else None),
                result(f"fuzz.{name}.cov", float(got["cov"]), "edges"),
                result(f"fuzz.{name}.ft", float(got["ft"]), "features"),
                result(f"fuzz.{name}.corpus", float(got["corpus"]), "units")]
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.bench_fuzz [--time S] [--target NAME ...]``: the figures as JSON
    lines (``benchmarks/run.py`` runs every target and writes the report)."""
    import argparse
    import json
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_fuzz", description=main.__doc__)
    p.add_argument("--time", type=int, default=SECONDS, metavar="S", help="seconds per target")
    p.add_argument("--target", action="append", choices=sorted(TARGETS), help="repeatable; default all")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="targets fuzzed at once (default 1: one at a time)")
    args = p.parse_args(argv)
    for r in run(targets=args.target, seconds=args.time, workers=args.workers):
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
