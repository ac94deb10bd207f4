"""``wirecheck fuzz --all --time 10m``: every fuzz target within one time budget.

Jobs are every in-process target of fuzz/targets.py and, unless ``--no-live``, the network
fuzzer against each protocol's reference broker (``--serve``). The budget is split evenly:
with ``jobs`` workers (default: the CPUs) each job gets ``budget * jobs / len(jobs)``, so the
campaign ends in about the budget with every core busy. Each job is its own ``wirecheck fuzz
... --json`` process (a crash or a stuck target cannot take the campaign down; each is
bounded by its budget plus a margin, then killed).

The budget bounds the whole campaign: each job's share is less its process's start-up
(:data:`STARTUP`), a job that starts late (the jobs before it took longer than their share)
gets what is left of the budget, never less than :data:`MIN_SHARE` (every target is fuzzed a
little rather than some not at all); minimizing the crashes found takes what is left, and at
least :data:`MINIMIZE_FLOOR` of the budget (a crash found is worth a small input). A campaign
whose budget covers every job's :data:`MIN_SHARE` thus ends within about the budget plus that
floor and one job's start-up.

At the end, findings are deduplicated by signature across jobs (the same bug reached from two
targets counts once), in-process crash inputs are minimized (fuzz/minimize.py), and one JSON
summary is written (``--out``, default ``reports/fuzz/campaign-<UTC time>.json``): the machine,
the budget, per job ``execs``, ``exec_per_s``, ``coverage``, ``corpus_size``, its coverage
timeline and findings, and the deduplicated findings. The Spark pipeline's ``analyze-fuzz``
and the report read these files. Exit status: 1 when anything was found, else 0.
"""
from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from wirecheck.conformance import cli_signals
from wirecheck.fuzz.targets import REPORTS, TARGETS

#: Seconds a job may run past its budget (start-up, seed loading, a last long input) before
#: it is killed; and the shortest share worth starting a job for.
MARGIN = 90.0
MIN_SHARE = 5.0
#: Seconds a job's process takes to start fuzzing (imports, seed corpora), taken from its share.
STARTUP = 3.0
#: The part of the budget that minimizing crashes may take beyond it; and one input's time.
MINIMIZE_FLOOR = 0.1
MINIMIZE_ONE = 30.0


@dataclass
class Job:
    name: str
    argv: list[str]
    seconds: float
    result: dict | None = None
    error: str = ""
    started: float = 0.0
    finished: float = 0.0


def plan(args, protocols: list[str], workers: int, budget: float) -> list[Job]:
    # targets of no protocol (the capture reader) run in a campaign over every protocol
    everything = not args.protocol
    names = [t.name for _, t in sorted(TARGETS.items())
             if (t.protocol in protocols or (everything and not t.protocol))
             and (not args.name or t.name in args.name)]
    live = [] if args.no_live or args.name else protocols
    count = len(names) + len(live)
    if count == 0:
        return []
    # each job's process takes some seconds to start (imports, seeds): out of its share
    share = max(MIN_SHARE, budget * workers / count - STARTUP)
    base = [sys.executable, "-m", "wirecheck", "fuzz", "--json"]       # --time: when it starts (run_job)
    common = []
    if args.findings:
        common += ["--findings", str(args.findings)]
    jobs = []
    for name in names:
        t = TARGETS[name]
        kind = "--" + t.kind
        extra = ["--workdir", str(args.workdir)] if args.workdir else []
        protocol = ["--protocol", t.protocol] if t.protocol else []
        jobs.append(Job(name, base + protocol + [kind, "--name", name] + common + extra, share))
    for protocol in live:
        jobs.append(Job(f"live_{protocol}", base + ["--protocol", protocol, "--serve", "--seed",
                                                  str(args.seed)] + common, share))
    return jobs


def run_job(job: Job, deadline: float | None = None) -> Job:
    """Run ``job`` for its share, or what is left before ``deadline`` (monotonic) if that is
    less, and at least :data:`MIN_SHARE`."""
    job.started = time.monotonic()
    if deadline is not None:
        job.seconds = max(MIN_SHARE, min(job.seconds, deadline - job.started))
    argv = job.argv[:4] + ["--time", f"{job.seconds:.0f}"] + job.argv[4:]
    if STOPPING.is_set():                # the campaign was stopped before this job began
        job.finished = job.started
        return job
    try:
        proc = _run(argv, job.seconds + MARGIN)
        line = next((x for x in reversed(proc.stdout.splitlines()) if x.startswith("{")), "")
        if line:
            job.result = json.loads(line)
            error = job.result.get("kit_error")
            if error:               # the job's summary came, but the kit failed: an error, not a finding
                job.error = (f"the kit's own error in case {error['case']} of --seed {error['seed']}: "
                             f"{error['error']}")
        else:
            job.error = f"exit {proc.returncode}: " + "\n".join(proc.stderr.splitlines()[-10:])
    except subprocess.TimeoutExpired:
        job.error = f"killed after {job.seconds + MARGIN:.0f} s (budget {job.seconds:.0f} s)"
    job.finished = time.monotonic()
    return job


#: Set when the campaign is stopped (SIGINT, SIGTERM): jobs not begun are not run.
STOPPING = threading.Event()
#: the jobs' processes (each a ``wirecheck fuzz`` command in a session of its own: a signal to
#: the campaign's process group reaches each job once, through :func:`pass_on`; a second one
#: would stop it at once, its summary unwritten)
_JOBS = cli_signals.Children()


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    return _JOBS.run(argv, timeout)


def pass_on(signum: int) -> None:
    """The campaign was stopped: every job's process gets the same signal, ends its run and
    prints its summary (a job is a ``wirecheck fuzz`` command: conformance/cli_signals.py)."""
    STOPPING.set()
    _JOBS.pass_on(signum)


def minimize_findings(findings: list[dict], seconds: float = MINIMIZE_ONE, total: float | None = None) -> None:
    """Minimize each in-process crash input in place of the report (fuzz/minimize.py), each
    for at most ``seconds``, all of them within ``total`` seconds; a crash left when ``total``
    is spent says so (``minimized.error``), its full input kept."""
    crashes = [f for f in findings if f.get("mode") == "inprocess" and f["kind"] == "crash" and f.get("file")]
    end = time.monotonic() + total if total is not None else None
    for i, f in enumerate(crashes):
        left = (end - time.monotonic()) / (len(crashes) - i) if end is not None else seconds
        if left < 2.0:
            f["minimized"] = {"error": "not minimized: the campaign's time budget was spent"}
            continue
        seconds_one = min(seconds, left)
        try:
            proc = subprocess.run([sys.executable, "-m", "wirecheck.fuzz.minimize", f["target"], f["file"],
                                   "--time", f"{seconds_one:.0f}"], capture_output=True, text=True,
                                  timeout=seconds_one + 60, check=False)
            result = json.loads(proc.stdout.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:
            f["minimized"] = {"error": str(exc)}
            continue
        f["minimized"] = result


def dedupe(jobs: list[Job]) -> list[dict]:
    by_sig: dict[str, dict] = {}
    for job in jobs:
        for f in (job.result or {}).get("findings", []):
            entry = by_sig.get(f["signature"])
            if entry is None:
                by_sig[f["signature"]] = {**f, "mode": job.result.get("mode"),
                                          "target": job.result.get("target") if job.result.get("mode") == "inprocess"
                                          else job.name, "found_by": [job.name]}
            else:
                entry["count"] = entry.get("count", 1) + f.get("count", 1)
                if job.name not in entry["found_by"]:
                    entry["found_by"].append(job.name)
    return list(by_sig.values())


class _Progress:
    """rich progress on a terminal (a bar per job, by time); plain lines otherwise."""

    def __init__(self, jobs: list[Job], enabled: bool) -> None:
        self.jobs = jobs
        self.enabled = enabled
        self.bar = None
        if enabled:
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
            self.bar = Progress(TextColumn("{task.description:<28}"), BarColumn(), TextColumn("{task.fields[note]}"),
                                TimeRemainingColumn(), transient=False)
            self.tasks = {j.name: self.bar.add_task(j.name, total=j.seconds, note="waiting") for j in jobs}
            self.bar.start()

    def tick(self) -> None:
        if self.bar is None:
            return
        now = time.monotonic()
        for j in self.jobs:
            if j.started and not j.finished:
                self.bar.update(self.tasks[j.name], completed=min(j.seconds, now - j.started), note="running")

    def done(self, job: Job) -> None:
        r = job.result
        note = (f"{r['execs']} execs, {r['exec_per_s']}/s, cov {r['coverage']}, {len(r['findings'])} finding(s)"
                + (" (stopped)" if r.get("interrupted") else "") if r
                else f"ERROR {job.error.splitlines()[0]}" if job.error else "not run (the campaign was stopped)")
        if self.bar is not None:
            self.bar.update(self.tasks[job.name], completed=job.seconds, note=note)
        else:
            print(f"{job.name}: {note}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def main(args) -> int:
    from wirecheck.reference_impl.core import registry
    protocols = [s.id for s in (args.protocol or registry.all_protocols())]
    budget = args.time or 600.0
    workers = max(1, args.jobs or os.cpu_count() or 1)
    jobs = plan(args, protocols, workers, budget)
    if not jobs:
        print("wirecheck fuzz --all: no target matches", file=sys.stderr)
        return 2
    started, t0 = time.time(), time.monotonic()
    enabled = sys.stderr.isatty() if args.progress is None else args.progress
    progress = _Progress(jobs, enabled)
    stop = threading.Event()

    def ticker() -> None:
        while not stop.wait(0.5):
            progress.tick()

    threading.Thread(target=ticker, daemon=True).start()
    stopped = None
    deadline = t0 + budget
    pool = ThreadPoolExecutor(workers)
    try:
        futures = [pool.submit(run_job, j, deadline) for j in jobs]
        for future in futures:
            while True:
                try:
                    progress.done(future.result())
                    break
                except KeyboardInterrupt:
                    # SIGINT or SIGTERM (conformance/cli_signals.py): the running jobs get it
                    # too and print what they found; the jobs not begun are not run
                    stopped = cli_signals.received() or signal.SIGINT
                    pass_on(stopped)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        stop.set()
        progress.stop()
    findings = dedupe(jobs)
    if stopped is None:
        minimize_findings(findings, total=max(deadline - time.monotonic(), budget * MINIMIZE_FLOOR))
    summary = {
        "kind": "fuzz-campaign", "started": started, "seconds": round(time.monotonic() - t0, 1),
        "budget": budget, "workers": workers,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "execs": sum(j.result["execs"] for j in jobs if j.result),
        "jobs": [{"name": j.name, "seconds_budget": round(j.seconds, 1), "error": j.error, **(j.result or {})}
                 for j in jobs],
        "findings": findings, "errors": [j.name for j in jobs if j.error],
    }
    if stopped is not None:
        summary["interrupted"] = cli_signals.interrupted(
            [j.name for j in jobs if not j.result and not j.error], "jobs")
    out = Path(args.out) if args.out else REPORTS / time.strftime(
        "campaign-%Y%m%dT%H%M%SZ.json", time.gmtime(started))
    out.parent.mkdir(parents=True, exist_ok=True)
    from wirecheck.conformance.atomic_file import write_json
    write_json(out, summary)
    if args.json:
        print(json.dumps({k: v for k, v in summary.items() if k != "jobs"} | {"summary": str(out)}), flush=True)
    else:
        print(f"campaign: {len(jobs)} jobs in {summary['seconds']} s, {summary['execs']} execs, "
              f"{len(findings)} distinct finding(s), {len(summary['errors'])} job error(s); summary in {out}")
        for f in findings:
            print(f"  {f['kind'].upper()}: {f['signature']} ({', '.join(f['found_by'])}) {f.get('file', '')}")
        for j in jobs:
            for e in (j.result or {}).get("not_reproduced") or []:
                print(f"  {e['kind'].upper()} (not reproduced, 0 of {e['replays']}; not a finding): "
                      f"{e['signature']} ({j.name})")
        for j in jobs:
            if j.error:
                print(f"  job {j.name} failed: {j.error}", file=sys.stderr)
    if stopped is not None:
        print(f"wirecheck fuzz --all: {summary['interrupted']['signal']}: stopped; "
              f"{summary['interrupted']['not_run']} job(s) not run", file=sys.stderr)
        return 128 + stopped
    return 1 if findings else 2 if summary["errors"] else 0
