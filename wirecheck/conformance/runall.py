"""``make run``: start every registered protocol's reference broker, run its black-box suite
against it over TCP, write the reports, print a one-screen summary."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.server import ThreadedServer


def run_all(reports: str, timeout: float | None = None, alluredir: str | None = None,
            protocols: list[str] | None = None) -> int:
    """``alluredir``: also write allure-pytest results there (``make report-allure``);
    ``protocols``: only these (default: every registered one)."""
    os.makedirs(reports, exist_ok=True)
    rows, worst = [], 0
    for spec in registry.all_protocols():
        if protocols and spec.id not in protocols:
            continue
        broker = ThreadedServer(spec.make_broker("127.0.0.1", 0)).start()
        host, port = broker.address
        # A broker serving over HTTP/WebSocket (SignalR) is reached by its URL: its port is the
        # HTTP one, not raw TCP.
        where = getattr(broker.server, "url", None) or f"{host}:{port}"
        report = os.path.join(reports, f"{spec.id}.json")
        if os.path.exists(report):
            os.remove(report)               # a stale result must not reach index.html
        junit = os.path.join(reports, f"{spec.id}.junit.xml")
        cmd = [sys.executable, "-m", "wirecheck", "check", "--protocol", spec.id,
               "--target", where, "--report", report, "--junitxml", junit,
               "--label", "reference brokers"]
        if timeout:
            cmd += ["--timeout", str(timeout)]
        print(f"== {spec.id}: reference broker on {where}; running the suite", flush=True)
        try:
            extra = ["--alluredir", alluredir] if alluredir else []
            status = subprocess.run(cmd + ["--", "-p", "no:randomly", "-q", "--no-header",
                                           "-o", "console_output_style=count", *extra],
                                    stdout=subprocess.DEVNULL).returncode
        finally:
            broker.stop()
        worst = max(worst, status)
        rows.append((spec, status, report))
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
    return worst


def _index(reports: str, results: list[str]) -> bool:
    """index.html and index.json of every protocol's run (the HTML report and Autobahn-like index)."""
    from wirecheck.conformance.report_index import write
    from wirecheck.conformance.results import ReportError, load_runs
    try:
        runs = load_runs([r for r in results if os.path.exists(r)])
    except ReportError as exc:
        print(f"no report: {exc}")
        return False
    write(runs, reports)
    return True
