"""A SignalR hub with none of what a hub may lack (tests/support/planted_signalr.py --bare: no client
results, no handshake timeout, no client timeout), declared so by its profile, gets no FAIL or
TIMEOUT: the tests that need what it lacks are UNIMPLEMENTED. Undeclared, those same tests fail
(the plant is real)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[3]
SELECT = "test_errors or test_v1 or handshake_timeout"
PROFILE = ('extends = "v1"\n[features]\nclient_results = false\nhandshake_timeout = false\n'
           'client_timeout = false\n[timing]\nhandshake_timeout = 1.0\nclient_timeout = 1.0\n'
           'keep_alive_interval = 0.5\n')


def _check(tmp_path: Path, name: str, profile: str | None) -> tuple[int, dict]:
    report = tmp_path / f"{name}.json"
    argv = [sys.executable, "-m", "wirecheck", "check", "--protocol", "signalr", "--target",
            "http://127.0.0.1:0/hub", "--target-command",
            f"{sys.executable} {ROOT / 'tests' / 'support' / 'planted_signalr.py'} --port {{port}} --bare",
            "--report", str(report), "--timeout", "2"]
    if profile:
        path = tmp_path / f"{name}.toml"
        path.write_text(profile)
        argv += ["--profile", str(path)]
    got = subprocess.run(argv + ["--", "-k", SELECT], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    return got.returncode, json.loads(report.read_text())


def test_a_hub_without_client_results_or_timers_declared_so_has_no_failure(tmp_path):
    status, doc = _check(tmp_path, "declared", PROFILE)
    verdicts = {t["nodeid"]: t["verdict"] for t in doc["tests"]}
    bad = {t: v for t, v in verdicts.items() if v in ("FAIL", "TIMEOUT", "CRASH", "HARNESS-ERROR")}
    assert status == 0 and not bad, bad
    # the error tests with a vehicle every such hub has run and pass: a Completion with both
    # result and error (ERR-006), no StreamItem before a plain call's Completion (ERR-005), a
    # StreamItem after the Completion that ended a client stream (ERR-009)
    for name in ("test_completion_with_result_and_error", "test_completion_after_stream_item",
                 "test_message_after_completion"):
        assert {v for t, v in verdicts.items() if name in t} == {"PASS"}, (name, verdicts)
    unimplemented = set(doc["summary"]["signalr"]["unimplemented_requirements"])
    # ERR-008 needs an id the hub chose (v1: only a call that waits for the client's result has one)
    assert {"SIGR-ERR-008", "SIGR-V1-007", "SIGR-HS-007", "SIGR-V1-009"} \
        <= unimplemented | {r for t in doc["tests"] if t["verdict"] == "UNIMPLEMENTED" for r in t["requirements"]}
    # undeclared, the same hub fails those tests: what the profile turned off is really absent
    status, doc = _check(tmp_path, "undeclared", PROFILE.split("[features]")[0] + "[timing]" + PROFILE.split("[timing]")[1])
    failed = {r for t in doc["tests"] if t["verdict"] in ("FAIL", "TIMEOUT", "NON-STRICT") for r in t["requirements"]}
    assert status == 1 and {"SIGR-ERR-008", "SIGR-HS-007"} <= failed, failed
