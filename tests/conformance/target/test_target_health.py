"""The target's health between tests when the kit runs it (conformance/target/health.py): a
thread that spins with no test running is found and blamed on the one test that set it going;
memory and descriptors are reported per test; a healthy target gets no such finding, also under
pytest-xdist load (tests/conformance/suites/test_crash_recovery.py runs the whole BlipMQ suite that way)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
HANDSHAKE = str(ROOT / "wirecheck" / "conformance" / "suites" / "blipmq" / "test_handshake.py")


def _run(tmp_path, target_options: str, *extra: str):
    report = tmp_path / "r.json"
    command = f"{sys.executable} {ROOT / 'tests' / 'support' / 'crashing_target.py'} {target_options} --port {{port}}"
    got = subprocess.run([sys.executable, "-m", "pytest", "--protocol", "blipmq", "-q", "-p", "no:cacheprovider",
                          "-p", "no:randomly", HANDSHAKE, "--target-command", command,
                          "--wirecheck-report", str(report), *extra],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    return got, json.loads(report.read_text())


def test_a_spinning_thread_is_found_and_charged_only_where_a_test_causes_it(tmp_path):
    """The thread goes spinning at the server's 40th connection, whichever test opens it: the
    tests it began with are each measured on a target of their own (run/health_reruns.py), none sets it
    off there, so none is charged; the spin is reported, and fails the run only under
    ``--strict`` (run so here: without it a spin leaves exit 0, as the spin plant of
    tests/conformance/run/test_crash_culprits.py shows). (A spin set off by what a test sends is charged to
    that test: tests/conformance/run/test_crash_culprits.py.)"""
    got, doc = _run(tmp_path, "--spin-on 40", "--strict")
    assert got.returncode == 1, got.stdout[-3000:]          # NON-STRICT: a failure under --strict only
    summary = doc["summary"]["blipmq"]
    (spin,) = summary["target_health"]["spins"]
    assert spin["cpu"] >= 0.5, spin
    # no test is charged: every verdict PASS (so without --strict the exit status is 0)
    assert [t["nodeid"] for t in doc["tests"] if t["verdict"] != "PASS"] == []
    assert summary["target_health"]["charged"] == []
    # a spin breaks no requirement
    assert summary["failing_requirements"] == []
    assert "target busy while idle: thread" in got.stdout


def test_memory_and_descriptors_per_test_and_a_descriptor_leak(tmp_path):
    healthy_dir, leaky_dir = tmp_path / "healthy", tmp_path / "leaky"
    healthy_dir.mkdir(), leaky_dir.mkdir()
    _got, healthy = _run(healthy_dir, "")
    _got, leaky = _run(leaky_dir, "--leak-fds")
    for doc in (healthy, leaky):
        assert all({"rss_kb", "fds", "rss_growth_kb", "fd_growth"} <= set(t["target"]) for t in doc["tests"])
        assert doc["summary"]["blipmq"]["target_health"]["spins"] == []
    h, lk = (d["summary"]["blipmq"]["target_health"] for d in (healthy, leaky))
    # one descriptor kept per connection: 35 tests, each with at least one connection
    assert lk["peak_fds"] >= h["peak_fds"] + 35, (h["peak_fds"], lk["peak_fds"])
    assert lk["fd_growers"] and all(g["fd_growth"] >= 1 for g in lk["fd_growers"])


def test_a_spinning_thread_counts_fully_on_a_machine_with_every_core_busy():
    """A spin is runnable time, not CPU time: with twice as many busy processes as cores, a
    spinning thread gets well under a core but stays runnable all the time; a sleeping thread
    stays near nothing. (CPU time put such a spin under the half-core line on a busy machine.)"""
    import os
    import time

    from wirecheck.conformance.target import health as th
    # The main thread prints both ids in one line once both threads have them: two threads'
    # print() calls may interleave their words and newlines.
    code = ("import threading, time\n"
            "ids, ready = {}, threading.Barrier(3)\n"
            "def spin():\n    ids['spinner'] = threading.get_native_id(); ready.wait()\n    while True: pass\n"
            "def sleep():\n    ids['sleeper'] = threading.get_native_id(); ready.wait()\n    time.sleep(60)\n"
            "threading.Thread(target=spin, daemon=True).start()\n"
            "threading.Thread(target=sleep, daemon=True).start()\n"
            "ready.wait()\n"
            "print(' '.join(f'{k} {v}' for k, v in ids.items()), flush=True)\n"
            "time.sleep(60)\n")
    target = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE, text=True)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 1))]
    try:
        words = target.stdout.readline().split()
        tids = dict(zip(words[::2], words[1::2]))
        time.sleep(0.5)
        before, t0 = th.thread_times(target.pid), time.monotonic()
        time.sleep(1.5)
        usage = th.cores(before, th.thread_times(target.pid), time.monotonic() - t0)
    finally:
        for p in [target, *hogs]:
            p.kill()
            p.wait()
    share = {name: usage[f"{target.pid}/{tid}"][1] for name, tid in tids.items()}
    assert share["spinner"] >= 0.9 and share["sleeper"] < 0.05, share


def test_a_spin_is_looked_at_before_a_crash_recovery_kill(tmp_path):
    """A test sets a thread spinning, and the next test kills the target on purpose (a
    crash-recovery test) before the watch's streak was long enough: the thread is measured
    before the kill (SpinWatch.look_now), not lost with the process, and charged to the test
    that set it going (tests/support/planted_servers.py: a spin on frame type 0xEE)."""
    suite = ROOT / "wirecheck" / "conformance" / "suites" / "blipmq"
    report = tmp_path / "r.json"
    command = (f"{sys.executable} {ROOT / 'tests' / 'support' / 'planted_servers.py'} --port {{port}} --data-dir {{data_dir}} "
               "--on type-0xee --effect spin")
    spinner = "test_framing.py::test_unknown_frame_type_closes_connection[0xee]"
    got = subprocess.run([sys.executable, "-m", "pytest", "--protocol", "blipmq", "-q", "-p", "no:cacheprovider",
                          "-p", "no:randomly", f"{suite}/{spinner}",
                          f"{suite}/test_crash_recovery.py::test_publishes_handled_before_a_kill_mid_batch_survive",
                          "--target-command", command, "--wirecheck-report", str(report)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    doc = json.loads(report.read_text())
    health = doc["summary"]["blipmq"]["target_health"]
    assert [c["test"] for c in health["charged"]] == [f"blipmq/{spinner}"], (health, got.stdout[-3000:])
    verdicts = {t["nodeid"]: t["verdict"] for t in doc["tests"]}
    assert verdicts[f"blipmq/{spinner}"] == "NON-STRICT", verdicts
