"""A target that dies or hangs during a test (conformance/crashwatch.py): that test is the one
CRASH, nothing after it is blamed, and the run ends soon after; a healthy target gets none."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


class CrashingTarget:
    """tests/crashing_target.py in its own process: dies (or hangs) at its Nth connection."""

    def __init__(self, crash_on: int, hang: bool = False) -> None:
        argv = [sys.executable, "-m", "tests.crashing_target", "--crash-on", str(crash_on)]
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
def test_a_crash_is_one_crash_and_ends_the_run(tmp_path, workers):
    target = CrashingTarget(crash_on=40)
    try:
        got, took, doc, junit = _run(tmp_path, target.port, *workers)
        assert target.proc.wait(timeout=5) == 70            # it did die, at its 40th connection
    finally:
        target.close()
    assert got.returncode == 1, got.stdout[-3000:]
    verdicts = [t["verdict"] for t in doc["tests"]]
    (crash,) = [t for t in doc["tests"] if t["verdict"] == "CRASH"]
    assert crash["message"].startswith("CRASH: the target went down during this test: it refuses connections")
    # nothing else is blamed: before it PASS, after it SKIPPED "not run"/"not judged"
    assert set(verdicts) == {"PASS", "CRASH", "SKIPPED"}, sorted(set(verdicts))
    skipped = [t for t in doc["tests"] if t["verdict"] == "SKIPPED"]
    assert skipped and all(t["message"].startswith(("not run: the target went down during ",
                                                    "not judged: the target went down during "))
                           and crash["nodeid"] in t["message"] for t in skipped)
    summary = doc["summary"]["blipmq"]
    (recorded,) = summary["crashes"]
    assert summary["counts"]["CRASH"] == 1 and recorded["test"] == crash["nodeid"]
    assert f"target down during {crash['nodeid']}" in got.stdout
    assert took < 60, took
    # JUnit: the CRASH is a failure with its reason
    failures = [tc for tc in junit.iter("testcase") if tc.find("failure") is not None]
    assert len(failures) == 1 and "CRASH: " in failures[0].find("failure").get("message", "") + (
        failures[0].find("failure").text or "")


def test_a_hang_is_a_crash_too(tmp_path):
    target = CrashingTarget(crash_on=40, hang=True)
    try:
        got, took, doc, _junit = _run(tmp_path, target.port)
    finally:
        target.close()
    assert got.returncode == 1, got.stdout[-3000:]
    (crash,) = [t for t in doc["tests"] if t["verdict"] == "CRASH"]
    assert "accepts connections but did not answer" in crash["message"], crash["message"]
    assert {t["verdict"] for t in doc["tests"]} == {"PASS", "CRASH", "SKIPPED"}
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


CRASHING = f"{sys.executable} {ROOT / 'tests' / 'crashing_target.py'} --crash-on 15 --port {{port}}"


def _run_managed(tmp_path, command: str, *extra: str):
    report = tmp_path / "m.json"
    got = subprocess.run([sys.executable, "-m", "pytest", "--protocol", "blipmq", "--target-command", command,
                          "-q", "-p", "no:cacheprovider", "--wirecheck-report", str(report), *extra],
                         cwd=tmp_path, capture_output=True, text=True, timeout=900)
    return got, (json.loads(report.read_text()) if report.exists() else None)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_with_target_command_every_crash_is_one_crash_and_the_suite_completes(tmp_path, workers):
    """The target dies at every 15th connection; the kit restarts it each time."""
    got, doc = _run_managed(tmp_path, CRASHING, "-k", "(test_handshake or test_publish) and not crash_recovery", *workers)
    assert got.returncode == 1, got.stdout[-3000:] + got.stderr[-2000:]
    counts = doc["summary"]["blipmq"]["counts"]
    crashes = doc["summary"]["blipmq"]["crashes"]
    assert counts["CRASH"] == len(crashes) >= 3, counts
    assert all(c["status"] == "exit code 70" for c in crashes), crashes
    for test in (t for t in doc["tests"] if t["verdict"] == "CRASH"):
        assert "exit code 70" in test["message"] and "it refuses connections" in test["message"]
    # every other test: PASS, as against a healthy broker; a test that overlapped a crash three
    # times over (xdist) stays "not judged"
    others = {t["verdict"] for t in doc["tests"]} - {"CRASH"}
    assert others <= {"PASS", "SKIPPED"}, others
    not_judged = [t for t in doc["tests"] if t["verdict"] == "SKIPPED"]
    assert all(t["message"].startswith("not judged: ") for t in not_judged)
    assert len(not_judged) <= (0 if not workers else 8), not_judged


def test_with_target_command_a_hang_is_killed_and_restarted(tmp_path):
    got, doc = _run_managed(tmp_path, CRASHING.replace("--crash-on 15", "--crash-on 30") + " --hang",
                            "-k", "test_handshake")
    assert got.returncode == 1, got.stdout[-3000:]
    crashes = doc["summary"]["blipmq"]["crashes"]
    assert crashes and all(c["status"] == "still running (hung): killed by the kit" for c in crashes)
    assert {t["verdict"] for t in doc["tests"]} <= {"PASS", "CRASH"}


def test_a_target_command_that_does_not_start_is_one_line_and_exit_2(tmp_path):
    got, doc = _run_managed(tmp_path, f"{sys.executable} -c \"raise SystemExit('no config file')\" {{port}}")
    assert got.returncode == 2 and doc is None
    assert got.stderr.startswith("wirecheck: --target-command: the target exited at start (exit code 1)")
    assert "no config file" in got.stderr


def test_a_profile_carries_the_target_command(tmp_path):
    profile = tmp_path / "mine.toml"
    profile.write_text(f'[target]\ncommand = "{sys.executable} {ROOT / "tests" / "crashing_target.py"} '
                       f'--crash-on 30 --port {{port}}"\n')
    report = tmp_path / "p.json"
    got = subprocess.run([sys.executable, "-m", "pytest", "--protocol", "blipmq", "--profile", str(profile),
                          "-q", "-p", "no:cacheprovider", "-n", "2", "-k", "test_handshake",
                          "--wirecheck-report", str(report)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600)
    doc = json.loads(report.read_text())
    crashes = doc["summary"]["blipmq"]["crashes"]
    assert got.returncode == 1 and crashes and all(c["status"] == "exit code 70" for c in crashes), \
        got.stdout[-3000:] + got.stderr[-2000:]
    assert {t["verdict"] for t in doc["tests"]} - {"PASS", "CRASH", "SKIPPED"} == set()
