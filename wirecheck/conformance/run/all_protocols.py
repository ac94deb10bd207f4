"""``make run``: every registered protocol's black-box suite against its reference broker, which
the suite starts itself (``--target-command``: ``wirecheck serve`` on a port the kit picks, on a
data directory of its own where the broker keeps data), so that the crash-recovery tests (a
``kill -9`` and a restart) run too instead of being skipped; write the reports, print a
one-screen summary."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time

from wirecheck.reference_impl.core import registry

#: The protocols whose reference broker keeps data on disk (``serve --data-dir``).
DURABLE = ("blipmq", "rabbitmq-stream")


def run_all(reports: str, timeout: float | None = None, alluredir: str | None = None,
            protocols: list[str] | None = None) -> int:
    """``alluredir``: also write allure-pytest results there (``make report-allure``);
    ``protocols``: only these (default: every registered one)."""
    from wirecheck.conformance import cli_signals
    os.makedirs(reports, exist_ok=True)
    rows, worst = [], 0
    chosen = [spec for spec in registry.all_protocols() if not protocols or spec.id in protocols]
    stopped = None
    for i, spec in enumerate(chosen):
        serve = [sys.executable, "-m", "wirecheck", "serve", "--protocol", spec.id, "--port", "{port}"]
        if spec.id in DURABLE:
            serve += ["--data-dir", "{data_dir}"]
        # A broker serving over HTTP/WebSocket (SignalR) is reached by its URL (the kit puts the
        # port it picked in it); the others by HOST:PORT over raw TCP.
        where = "http://127.0.0.1:0/hub" if spec.id == "signalr" else "127.0.0.1:0"
        report = os.path.join(reports, f"{spec.id}.json")
        if os.path.exists(report):
            os.remove(report)               # a stale result must not reach index.html
        junit = os.path.join(reports, f"{spec.id}.junit.xml")
        cmd = [sys.executable, "-m", "wirecheck", "check", "--protocol", spec.id,
               "--target", where, "--target-command", shlex.join(serve), "--report", report,
               "--junitxml", junit, "--label", "reference brokers"]
        if timeout:
            cmd += ["--timeout", str(timeout)]
        print(f"== {spec.id}: the reference broker (wirecheck serve, started by the suite); running the suite",
              flush=True)
        extra = ["--alluredir", alluredir] if alluredir else []
        # a session of its own: a signal (SIGINT, SIGTERM) reaches the suite once, passed on by
        # wait_child, and the suite stops its broker and writes what it judged
        proc = subprocess.Popen(cmd + ["--", "-p", "no:randomly", "-q", "--no-header",
                                       "-o", "console_output_style=count", *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        shown = threading.Thread(target=_progress, args=(spec.id, proc.stdout), daemon=True)
        shown.start()
        status, was_stopped = cli_signals.wait_child(proc)
        shown.join(5.0)
        worst = max(worst, status)
        rows.append((spec, status, report))
        if was_stopped:
            stopped = cli_signals.interrupted([s.id for s in chosen[i + 1:]], "protocols")
            print(f"== {stopped['signal']}: stopped during {spec.id}; {stopped['not_run']} protocol(s) "
                  "not run", flush=True)
            break
    print()
    print(f"{'protocol':<16} {'passed':>6} {'failed':>6} {'timeout':>7} {'non-strict':>10} "
          f"{'MUST cov':>9} {'SHOULD cov':>10} {'untestable':>10}  exit")
    for spec, status, report in rows:
        try:
            with open(report) as fh:
                s = json.load(fh)["summary"].get(spec.id, {})
        except (OSError, ValueError):
            s = {}
        c, cov = s.get("counts", {}), s.get("coverage", {})
        must, should = cov.get("MUST", [0, 0]), cov.get("SHOULD", [0, 0])
        print(f"{spec.id:<16} {c.get('PASS', 0):>6} {c.get('FAIL', 0):>6} {c.get('TIMEOUT', 0):>7} "
              f"{c.get('NON-STRICT', 0):>10} {must[0]:>4}/{must[1]:<4} {should[0]:>5}/{should[1]:<4} "
              f"{cov.get('untestable', 0):>10}  {status}")
        for rid in s.get("failing_requirements", []):
            print(f"    not met: {rid}")
    written = _index(reports, [r for _, _, r in rows])
    print(f"\nreports: {os.path.abspath(reports)} (index.html, index.json, <protocol>.json, "
          f"<protocol>.junit.xml)" if written else f"\nreports: {os.path.abspath(reports)}")
    return cli_signals.exit_status() if stopped is not None else worst


#: Seconds between two progress lines of one suite.
PROGRESS_EVERY = 10.0
_COUNT = re.compile(r"\[\s*(\d+)/(\d+)\]")


def _progress(protocol: str, stream) -> None:
    """A line from the suite's own count ("[ 120/371]" at the end of pytest's lines): the first,
    then at most every :data:`PROGRESS_EVERY` s, and the last: a slow suite is told from a
    hung one."""
    last, shown = time.monotonic(), ""
    for line in stream:
        m = _COUNT.search(line)
        if m is None:
            continue
        now = time.monotonic()
        text = f"   {protocol}: {m.group(1)}/{m.group(2)} tests"
        done = m.group(1) == m.group(2)
        if (not shown or done or now - last >= PROGRESS_EVERY) and text != shown:
            print(text, flush=True)
            last, shown = now, text


def _index(reports: str, results: list[str]) -> bool:
    """index.html and index.json of every protocol's run (the HTML report and Autobahn-like index)."""
    from wirecheck.conformance.report.index import write
    from wirecheck.conformance.report.results import ReportError, load_runs
    try:
        runs = load_runs([r for r in results if os.path.exists(r)])
    except ReportError as exc:
        print(f"no report: {exc}")
        return False
    write(runs, reports)
    return True
