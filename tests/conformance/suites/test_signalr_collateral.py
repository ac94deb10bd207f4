"""One defect, one requirement: a SignalR hub whose only defect is to answer every non-blocking
invocation with a Completion that has no invocationId (tests/support/planted_signalr.py
--idless-completions) is charged with SIGR-INV-007 alone. The value, array, map and binary
carry-through tests that meet that Completion (Remember, then Recall) fail as its collateral:
their own requirements (SIGR-JSON-005, SIGR-MSGPACK-005, ...) are not "not met", and those
tests do not count as having tested them (conformance/suites/signalr/conftest.py
NonBlockingWatch, verdicts.Breach)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from wirecheck.conformance.report import causes

from wirecheck.conformance.report import verdicts

ROOT = Path(__file__).resolve().parents[3]
#: the tests that meet the id-less Completion, and one that passes a blocking call alone
SELECT = "carry_through or binary_length or nonblocking or test_string_length"


def _against(tmp_path, plant: str, select: str):
    report = tmp_path / "r.json"
    got = subprocess.run(
        [sys.executable, "-m", "wirecheck", "check", "--protocol", "signalr", "--target", "http://127.0.0.1:0/hub",
         "--target-command", f"{sys.executable} {ROOT / 'tests' / 'support' / 'planted_signalr.py'} --port {{port}} {plant}",
         "--report", str(report), "--timeout", "2", "--", "-k", select],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    return got, json.loads(report.read_text())


def test_an_idless_completion_is_charged_to_inv_007_alone(tmp_path):
    got, doc = _against(tmp_path, "--idless-completions", SELECT)
    summary = doc["summary"]["signalr"]
    assert got.returncode == 1, got.stdout[-3000:]
    assert summary["failing_requirements"] == ["SIGR-INV-007"], (summary["failing_requirements"], got.stdout[-3000:])
    failed = [t for t in doc["tests"] if t["verdict"] == "FAIL"]
    carried = [t for t in failed if "carry" in t["nodeid"] or "binary_length" in t["nodeid"]]
    assert len(carried) >= 20, [t["nodeid"] for t in failed]
    for t in carried:
        # charged with the breach it met, not with what it checks; said so
        assert t["broke"] == ["SIGR-INV-007"] and verdicts.collateral(t) == ["SIGR-INV-007"], t
        assert t["message"].startswith("collateral: ") and "non-blocking" in t["message"], t["message"]
    # a test of INV-007 itself fails on it, not as collateral
    own = [t for t in failed if "nonblocking_invocation_gets_nothing_back" in t["nodeid"]]
    assert own and all(not verdicts.collateral(t) for t in own), own
    # JSON and MessagePack meet one defect: one cause, named by what it means
    by_cause = [c for c in summary["causes"] if c["requirements"] == ["SIGR-INV-007"]]
    assert len({c["cause"] for c in by_cause}) == 1 and by_cause[0]["tests"] >= len(carried), summary["causes"]
    assert "SIGR-INV-007" in causes.cause("collateral: breaks SIGR-INV-007 at byte 3")
    # the carry-through requirements were not tested by tests that stopped at the breach: what
    # the run says of them comes from the tests that reached their check (Echo of strings)
    verdict_of = {rid: v for rid, v in
                  ((rid, [t["verdict"] for t in doc["tests"] if rid in t["requirements"] and not t.get("broke")])
                   for rid in ("SIGR-JSON-005", "SIGR-MSGPACK-005"))}
    assert all(v and set(v) == {"PASS"} for v in verdict_of.values()), verdict_of


def test_a_refusal_without_the_error_response_is_charged_to_hs_005_alone(tmp_path):
    """A hub that closes a failed handshake without ``{"error": ...}`` (--silent-refusals): the
    handshake tests and the state machines' probes agree on what that breaks: SIGR-HS-005 alone,
    not SIGR-HS-003 (it closed, as it must), nor the protocol or version tests' own IDs."""
    got, doc = _against(tmp_path, "--silent-refusals", "test_handshake or invocation_lifecycles")
    summary = doc["summary"]["signalr"]
    assert got.returncode == 1 and summary["failing_requirements"] == ["SIGR-HS-005"], got.stdout[-3000:]
    failed = {t["nodeid"].split("::")[-1]: t for t in doc["tests"] if t["verdict"] == "FAIL"}
    assert {n.split("[")[0] for n in failed} >= {"test_first_message_not_a_handshake_closes",
                                                 "test_unsupported_protocol_is_refused_and_closed",
                                                 "test_invocation_lifecycles"}, sorted(failed)
    assert all(t["broke"] == ["SIGR-HS-005"] for t in failed.values()), failed
    assert "Breach" not in got.stdout      # the lines say what broke, not the exception's class


def test_a_hub_that_goes_on_after_a_protocol_error_fails_nothing(tmp_path):
    """The document lets a hub end the connection on a protocol error (SIGR-ERR-010, "may"); a
    draft hub that passes over an id never invoked, reused or finished and goes on
    (tests/support/planted_signalr.py --lenient --draft) fails no MUST: those tests are INFORMATIONAL,
    charged to the MAY not taken, and nothing is "not met"."""
    report = tmp_path / "r.json"
    got = subprocess.run(
        [sys.executable, "-m", "wirecheck", "check", "--protocol", "signalr", "--profile", "draft",
         "--target", "http://127.0.0.1:0/hub", "--target-command",
         f"{sys.executable} {ROOT / 'tests' / 'support' / 'planted_signalr.py'} --port {{port}} --lenient --draft",
         "--report", str(report), "--timeout", "2", "--", "-k", "test_errors"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    doc = json.loads(report.read_text())
    assert got.returncode == 0, got.stdout[-3000:]
    assert doc["summary"]["signalr"]["failing_requirements"] == [], doc["summary"]["signalr"]
    went_on = [t for t in doc["tests"] if t["verdict"] == "INFORMATIONAL"]
    assert len(went_on) >= 10 and all(t["broke"] == ["SIGR-ERR-010"] for t in went_on), went_on
    assert all("went on after a protocol error" in t["message"] for t in went_on)
