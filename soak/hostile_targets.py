"""The kit against hostile targets (the hardening issue, item 1): for each protocol and each
hostile server of tests/support/hostile_targets.py, run ``wirecheck check --protocol P --target ...
--timeout T --report FILE.json`` in a child process and check four goals:

- it ends within ``cases x T + 60 s``, plus five times the profile's longest protocol timer
  (the wait of a timer test; 0-20 s with the profiles used here). It is killed at twice that,
  and then fails the goal. The kit enforces it itself: wirecheck/conformance/plugin.py's run allowance;
- every collected case has a verdict in the result file, and every FAIL/TIMEOUT a reason;
- the child's peak memory (VmHWM) stays under :data:`MEMORY_BOUND_MB`;
- its exit code is non-zero (a hostile target is never conformant).

Full run (``python -m soak.hostile_targets``): every case of every suite, against every server,
two children at a time. Quick run (``--quick``): a few cases per protocol (a handshake test and
a hypothesis state machine, whose shrinking is what repeats timeouts) and a short timeout.
SignalR runs twice: raw TCP (``signalr``) and HTTP negotiate + WebSocket (``signalr-ws``).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from wirecheck.conformance import cli_signals

from wirecheck.conformance.report import verdicts
from soak.common import HighWater, run_stoppable, write_result

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "hostile_targets"
#: (label, protocol, transport) of every suite run.
TARGETS = (("blipmq", "blipmq", "tcp"), ("micromessage2", "micromessage2", "tcp"),
           ("rabbitmq-stream", "rabbitmq-stream", "tcp"), ("signalr", "signalr", "tcp"),
           ("signalr-ws", "signalr", "ws"), ("vibemq", "vibemq", "tcp"))
#: The bound on the kit's peak memory: what a suite run needs against a sound target (about
#: 80-150 MB: Python, pytest, hypothesis, the codecs; measured by this run's own figures), plus
#: one message of the largest size the suite accepts from a target (64 MiB, the suites'
#: MAX_INCOMING), plus the transcripts' byte limit (8 MiB, target.TranscriptLimits) and what the
#: run's reports keep of them (16 M characters, plugin.RUN_TRANSCRIPT_CHARS), with room to
#: spare. A kit that buffers a flood or allocates a declared 4 GiB length breaks it at once.
MEMORY_BOUND_MB = 300.0
SLACK_S = 60.0
#: Quick run: per protocol, a ``-k`` selection of a handshake test (and one that waits for a
#: close) plus a hypothesis state machine.
QUICK_SELECTION = {
    "blipmq": "test_document_hello_sample_gets_ack_zero or test_state_machine_must",
    "vibemq": "test_connect_is_acknowledged or test_disconnect_closes_the_connection "
              "or test_queue_and_subscription_lifecycles",
    "micromessage2": "test_offer_without_extensions_gets_a_handshake or test_unknown_required_extension_disconnects "
                     "or test_state_machine_must",
    "rabbitmq-stream": "test_full_handshake or test_command_before_open_ends_the_connection "
                       "or test_state_machine_must",
    "signalr": "test_handshake_then_the_chosen_protocol or test_unsupported_protocol_is_refused_and_closed "
               "or test_invocation_lifecycles",
}
QUICK_TIMEOUT, FULL_TIMEOUT = 0.3, 1.0
#: Short protocol timers for SignalR (a profile file), matching the broker behind never-close
#: (registry ``embedded_timing``): the timer tests wait seconds, not the default 15-30 s.
_SIGNALR_PROFILE = 'extends = "v1"\n[timing]\nhandshake_timeout = 2.0\nkeep_alive_interval = 3.0\nclient_timeout = 4.0\n'


def _raise_nofile() -> None:
    # Hypothesis examples and never-close relays hold many sockets at once (two per client
    # connection in the relay): raise the soft descriptor limit to the hard one.
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass


def _check_argv(protocol: str, target: str, timeout: float, report: str, extra: list[str]) -> list[str]:
    # --no-preflight: what is measured is how each test and the run bound a hostile target;
    # the preflight (which turns most of these away at once) is tests/conformance/target/test_preflight.py's.
    return [sys.executable, "-m", "wirecheck", "check", "--protocol", protocol, "--target", target,
            "--timeout", str(timeout), "--report", report, "--no-preflight", "--", "-p", "no:randomly",
            *extra]


def _profile_args(protocol: str, workdir: str) -> list[str]:
    if protocol != "signalr":
        return []
    path = os.path.join(workdir, "signalr-hostile.toml")
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(_SIGNALR_PROFILE)
    return ["--profile", path]


def profile_timer(protocol: str, workdir: str) -> float:
    """The longest timer of the profile the run uses (what the kit's run allowance adds)."""
    from wirecheck.conformance.run.budgets import longest_timer
    from wirecheck.conformance.profiles import load_profile
    from wirecheck.reference_impl.core import registry
    args = _profile_args(protocol, workdir)
    return longest_timer(load_profile(registry.get(protocol), args[1] if args else None))


def collect(protocol: str, extra: list[str], workdir: str) -> list[str]:
    """The node ids the suite runs with these pytest arguments (what must each get a verdict)."""
    argv = [sys.executable, "-m", "wirecheck", "check", "--protocol", protocol,
            *_profile_args(protocol, workdir), "--", "--collect-only", "-p", "no:randomly", *extra]
    out = run_stoppable(argv, cwd=ROOT, timeout=300).stdout
    # One node id per line (the kit runs pytest with -q). A parametrized id may hold spaces
    # ("emoji \U0001f600"): a line is a node id when it starts with a test file's path.
    return sorted(_nodeid(line.rstrip("\r\n")) for line in out.splitlines() if _NODEID.match(line))


_NODEID = re.compile(r"\S+\.py::\S")


def _nodeid(text: str) -> str:
    # The result file names tests relative to wirecheck/conformance/suites (the kit's rootdir).
    return text.split("conformance/suites/", 1)[-1]


def run_case(label: str, protocol: str, transport: str, kind: str, *, timeout: float, extra: list[str],
             expected: list[str], workdir: str) -> dict:
    """One suite run against one hostile server; the facts and the four goals."""
    from tests.support import hostile_targets
    report = os.path.join(workdir, f"{label}-{kind}.json")
    log = os.path.join(workdir, f"{label}-{kind}.log")
    bound = len(expected) * timeout + SLACK_S + 5.0 * profile_timer(protocol, workdir)
    server = hostile_targets.start(kind, protocol, transport)
    hung = False
    try:
        argv = _check_argv(protocol, server.target, timeout, report, extra)
        argv[argv.index("--"):argv.index("--")] = _profile_args(protocol, workdir)
        started = time.monotonic()
        with open(log, "w", encoding="utf-8") as out:
            with _SUITES.started(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT) as proc:
                memory = HighWater(proc.pid)
                try:
                    code = proc.wait(timeout=2 * bound)
                except subprocess.TimeoutExpired:
                    hung = True
                    proc.kill()
                    code = proc.wait()
                finally:
                    memory.stop()
        wall = time.monotonic() - started
    finally:
        server.close()
    tests = _tests(report)
    got = {t["nodeid"]: t for t in tests}
    missing = sorted(set(expected) - set(got))
    # Verdicts for cases the collection did not name: the count (and so the time bound) is wrong.
    unexpected = sorted(set(got) - set(expected))
    unexplained = sorted(t["nodeid"] for t in tests if t["verdict"] in (verdicts.FAIL, verdicts.TIMEOUT)
                         and not str(t.get("message") or "").strip())
    goals = {"within_time_bound": {"figure": round(wall, 2), "bound": round(bound, 2),
                                   "met": not hung and wall <= bound},
             "every_case_has_a_verdict": {"figure": len(missing), "bound": 0,
                                          "met": bool(expected) and not missing and not unexplained
                                          and not unexpected},
             "memory_bounded": {"figure": round(memory.mb, 1), "bound": MEMORY_BOUND_MB,
                                "met": 0 < memory.mb <= MEMORY_BOUND_MB},
             "non_zero_exit": {"figure": code, "met": code not in (0, None)}}
    return {"target": label, "protocol": protocol, "transport": transport, "server": kind,
            "cases": len(expected), "reported": len(tests), "missing": missing[:20],
            "unexpected": unexpected[:20],
            "without_reason": unexplained[:20], "killed_after_s": round(2 * bound, 1) if hung else None,
            "verdicts": dict(Counter(t["verdict"] for t in tests)), "exit_code": code,
            "connections_accepted": server.accepted, "goals": goals,
            "ok": all(g["met"] for g in goals.values()),
            "log_tail": _tail(log) if not all(g["met"] for g in goals.values()) else ""}


def _tests(report: str) -> list[dict]:
    import json
    try:
        with open(report, encoding="utf-8") as fh:
            return json.load(fh).get("tests", [])
    except (OSError, ValueError):
        return []


def _tail(path: str, n: int = 2000) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()[-n:]
    except OSError:
        return ""


#: The suite runs under way (run_case, in the pool's threads): each in a session of its own, so
#: that a signal to the soak's group reaches it once, from run().
_SUITES = cli_signals.Children()


def run(quick: bool, *, targets=TARGETS, kinds=None, jobs: int = 2) -> dict:
    """Every target x every hostile server (``kinds``: a subset). Two children at a time."""
    from tests.support import hostile_targets
    _raise_nofile()
    kinds = list(kinds or hostile_targets.KINDS)
    timeout = QUICK_TIMEOUT if quick else FULL_TIMEOUT
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="wirecheck-hostile-") as workdir:
        extra = {p: (["-k", QUICK_SELECTION[p]] if quick else []) for _, p, _ in targets}
        expected = {p: collect(p, extra[p], workdir) for p in sorted({p for _, p, _ in targets})}
        cases = [(label, p, t, k) for label, p, t in targets for k in kinds]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(run_case, *c, timeout=timeout, extra=extra[c[1]], expected=expected[c[1]],
                                   workdir=workdir) for c in cases]
            try:
                results = [f.result() for f in futures]
            except KeyboardInterrupt:
                # stopped: no further case starts; those under way are given the signal once
                # and waited for (each stops as the kit's commands do), then killed
                for f in futures:
                    f.cancel()
                _SUITES.stop()
                raise
    goals = {name: all(r["goals"][name]["met"] for r in results) for name in results[0]["goals"]} if results else {}
    return {"name": NAME, "quick": quick, "started": started, "seconds": round(time.time() - started, 1),
            "parameters": {"timeout_s": timeout, "slack_s": SLACK_S, "memory_bound_mb": MEMORY_BOUND_MB,
                           "servers": kinds, "targets": [label for label, _, _ in targets], "jobs": jobs,
                           "selection": {p: " ".join(a) for p, a in extra.items()} if quick else "all cases",
                           "bound": "cases x timeout + slack + 5 x the profile's longest timer"},
            "cases_per_protocol": {p: len(ids) for p, ids in expected.items()},
            "peak_memory_mb": max((r["goals"]["memory_bounded"]["figure"] for r in results), default=0),
            "goals": {name: {"met": met} for name, met in goals.items()},
            "runs": results, "ok": bool(results) and all(r["ok"] for r in results)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m soak.hostile_targets", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few cases per protocol, short timeout")
    parser.add_argument("--out", default=os.path.join("reports", "soak", f"{NAME}.json"))
    parser.add_argument("--server", action="append", help="only this hostile server (repeatable)")
    parser.add_argument("--target", action="append", help="only this target label (repeatable)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    targets = [t for t in TARGETS if not args.target or t[0] in args.target]
    result = run(args.quick, targets=targets, kinds=args.server, jobs=args.jobs)
    write_result(args.out, result)
    for r in result["runs"]:
        g = r["goals"]
        print(f"{r['target']:<16} {r['server']:<15} {'ok ' if r['ok'] else 'NOT'} "
              f"{g['within_time_bound']['figure']:>7}s/{g['within_time_bound']['bound']:<7} "
              f"verdicts {r['reported']}/{r['cases']} {r['verdicts']} exit {r['exit_code']} "
              f"peak {g['memory_bounded']['figure']} MB")
    print(f"{'all goals met' if result['ok'] else 'GOALS NOT MET'}; wrote {args.out}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
