"""A target that dies or hangs during a test (conformance/target/crashwatch.py): that test is the one
CRASH, nothing after it is blamed, and the run ends soon after; a healthy target gets none."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


class CrashingTarget:
    """tests/support/crashing_target.py in its own process: dies (or hangs) at its Nth connection."""

    def __init__(self, crash_on: int, hang: bool = False) -> None:
        argv = [sys.executable, "-m", "tests.support.crashing_target", "--crash-on", str(crash_on)]
        self.proc = subprocess.Popen(argv + (["--hang"] if hang else []), cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)


def _run(tmp_path, port: int, *extra: str):
    report, junit = tmp_path / "r.json", tmp_path / "j.xml"
    started = time.monotonic()
    got = subprocess.run([sys.executable, "-m", "pytest", "--protocol", "blipmq", "--target", f"127.0.0.1:{port}",
                          "-q", "-p", "no:cacheprovider", "--wirecheck-report", str(report),
                          "--junitxml", str(junit), *extra],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    return got, time.monotonic() - started, json.loads(report.read_text()), ET.parse(junit)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_crash_without_target_command_ends_the_run_and_charges_no_test(tmp_path, workers):
    """The kit cannot re-run anything to find which test did it: the tests that ran then are
    "not judged", with each other's names; the rest "not run"; exit 1 (the target went down)."""
    target = CrashingTarget(crash_on=40)
    try:
        got, took, doc, junit = _run(tmp_path, target.port, *workers)
        assert target.proc.wait(timeout=5) == 70            # it did die, at its 40th connection
    finally:
        target.close()
    assert got.returncode == 1, got.stdout[-3000:]
    verdicts = [t["verdict"] for t in doc["tests"]]
    assert set(verdicts) <= {"PASS", "SKIPPED"} and "SKIPPED" in verdicts, sorted(set(verdicts))
    (crash,) = doc["summary"]["blipmq"]["crashes"]
    assert crash["attributed"] is False and crash["reason"].startswith("it refuses connections")
    skipped = [t for t in doc["tests"] if t["verdict"] == "SKIPPED"]
    not_judged = [t for t in skipped if t["message"].startswith("not judged: ")]
    assert {t["nodeid"] for t in not_judged} == set(crash["suspects"])
    assert all(t["message"].startswith("not run: the target went down") for t in skipped if t not in not_judged)
    assert "--target-command lets the kit re-run them" in got.stdout
    assert doc["summary"]["blipmq"]["counts"].get("CRASH", 0) == 0
    assert took < 60, took
    # JUnit: nothing fails (a skip charges nobody); the exit status says the target went down
    assert not [tc for tc in junit.iter("testcase") if tc.find("failure") is not None]


def test_a_hang_is_a_crash_too(tmp_path):
    target = CrashingTarget(crash_on=40, hang=True)
    try:
        got, took, doc, _junit = _run(tmp_path, target.port)
    finally:
        target.close()
    assert got.returncode == 1, got.stdout[-3000:]
    (crash,) = doc["summary"]["blipmq"]["crashes"]
    assert "accepts connections but did not answer" in crash["reason"], crash
    assert {t["verdict"] for t in doc["tests"]} <= {"PASS", "SKIPPED"}
    assert took < 90, took


def test_a_healthy_target_has_no_crash(tmp_path):
    target = CrashingTarget(crash_on=10**9)
    try:
        got, _took, doc, _junit = _run(tmp_path, target.port, "-n", "2", "-k", "handshake or framing")
    finally:
        target.close()
    assert got.returncode == 0, got.stdout[-3000:]
    assert {t["verdict"] for t in doc["tests"]} == {"PASS"}
    assert doc["summary"]["blipmq"]["crashes"] == []


PLANTED = f"{sys.executable} {ROOT / 'tests' / 'support' / 'planted_servers.py'} --on auth-key-signed --port {{port}}"


def _run_managed(tmp_path, command: str, *extra: str):
    report = tmp_path / "m.json"
    got = subprocess.run([sys.executable, "-m", "pytest", "--protocol", "blipmq", "--target-command", command,
                          "-q", "-p", "no:cacheprovider", "--wirecheck-report", str(report), *extra],
                         cwd=tmp_path, capture_output=True, text=True, timeout=900)
    return got, (json.loads(report.read_text()) if report.exists() else None)


def test_with_target_command_a_hang_is_killed_and_charged_to_its_test(tmp_path):
    got, doc = _run_managed(tmp_path, PLANTED + " --effect hang", "-k", "test_handshake or test_api_key_length")
    assert got.returncode == 1, got.stdout[-3000:]
    crashes = doc["summary"]["blipmq"]["crashes"]
    assert crashes and all(c["status"] == "still running (hung): killed by the kit" for c in crashes)
    verdicts = {t["nodeid"]: t for t in doc["tests"]}
    assert {n for n, t in verdicts.items() if t["verdict"] == "CRASH"} == {
        "blipmq/test_boundaries.py::test_api_key_length[65535]"}
    crash = verdicts["blipmq/test_boundaries.py::test_api_key_length[65535]"]
    assert "run alone on a freshly started target" in crash["message"] and "planted hang" in crash["message"]
    assert {t["verdict"] for t in doc["tests"]} <= {"PASS", "CRASH"}


def test_a_target_command_that_does_not_start_is_one_line_and_exit_2(tmp_path):
    got, doc = _run_managed(tmp_path, f"{sys.executable} -c \"raise SystemExit('no config file')\" {{port}}")
    assert got.returncode == 2 and doc is None
    assert got.stderr.startswith("wirecheck: --target-command: the target exited at start (exit code 1)")
    assert "no config file" in got.stderr
    got, doc = _run_managed(tmp_path, f"{tmp_path}/no-such-server --port {{port}}")
    assert got.returncode == 2 and doc is None and "Traceback" not in got.stderr
    assert got.stderr.startswith(f"wirecheck: --target-command: cannot run '{tmp_path}/no-such-server': "
                                 "No such file or directory"), got.stderr


def test_a_profile_carries_the_target_command(tmp_path):
    profile = tmp_path / "mine.toml"
    profile.write_text(f'[target]\ncommand = "{PLANTED}"\n')
    report = tmp_path / "p.json"
    got = subprocess.run([sys.executable, "-m", "pytest", "--protocol", "blipmq", "--profile", str(profile),
                          "-q", "-p", "no:cacheprovider", "-n", "2", "-k", "test_handshake or test_api_key_length",
                          "--wirecheck-report", str(report)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600)
    doc = json.loads(report.read_text())
    crashes = doc["summary"]["blipmq"]["crashes"]
    assert got.returncode == 1 and crashes and all(c["status"] == "exit code 70" for c in crashes), \
        got.stdout[-3000:] + got.stderr[-2000:]
    assert {t["verdict"] for t in doc["tests"]} - {"PASS", "CRASH", "SKIPPED"} == set()
