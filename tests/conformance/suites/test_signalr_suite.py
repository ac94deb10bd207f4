"""The SignalR suite as a CI gate: it passes against the reference hub over raw TCP (the
embedded run of wirecheck/conformance/suites/signalr covers HTTP + WebSocket) and fails, naming the
requirement, against hubs that break one rule each (tests/support/signalr_faulty.py)."""
import json
import os
import subprocess
import sys

import pytest

from wirecheck.reference_impl.core.server import ThreadedServer
from wirecheck.reference_impl.signalr.broker import make_broker
from wirecheck.reference_impl.signalr.hub import HubState
from wirecheck.reference_impl.signalr.session import HubConfig

from tests.support.signalr_faulty import (AcceptsAnyProtocol, ClosesWithoutCloseMessage, IgnoresProtocolErrors, NoHandshakeResponse,
                             OneCallAtATime, RefusesAck, StreamEndsWithResult, StreamsOnAfterCancel,
                             StreamsSingleResults, raw_server)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def check(target: str, *extra, report=None, timeout=240):
    cmd = [sys.executable, "-m", "wirecheck", "check", "--protocol", "signalr", "--target", target]
    if report:
        cmd += ["--report", str(report)]
    cmd += list(extra)
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("profile", ["v1", "draft"])
def test_suite_passes_over_raw_tcp(tmp_path, profile):
    with ThreadedServer(make_broker(profile=profile)) as server:
        raw = server.server.raw_port
        result = check(f"127.0.0.1:{raw}", "--profile", profile, "--", "-m", "not slow",
                       report=tmp_path / "r.json")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    doc = json.loads((tmp_path / "r.json").read_text())
    verdicts = {t["verdict"] for t in doc["tests"]}
    assert verdicts <= {"PASS", "SKIPPED", "UNIMPLEMENTED", "INFORMATIONAL"}, verdicts
    assert doc["summary"]["signalr"]["counts"]["PASS"] > 150
    # v1 reports what the hub does with a Target differing in case (ASP.NET Core ignores case);
    # the draft holds it to the document's "Target is case-sensitive"
    case = {t["verdict"] for t in doc["tests"] if "test_target_is_case_sensitive" in t["nodeid"]}
    assert case == ({"INFORMATIONAL"} if profile == "v1" else {"PASS"}), case


@pytest.mark.parametrize("session_class,selection,requirement", [
    (StreamsSingleResults, "test_single_result_in_one_completion", "SIGR-INV-003"),
    (NoHandshakeResponse, "test_handshake_then_the_chosen_protocol", "SIGR-HS-004"),
    (AcceptsAnyProtocol, "test_unsupported_protocol_is_refused_and_closed", "SIGR-HS-002"),
    (StreamEndsWithResult, "test_stream_items_then_end", "SIGR-STR-002"),
])
def test_one_broken_rule_fails_and_names_the_requirement(tmp_path, session_class, selection, requirement):
    report = tmp_path / "r.json"
    with ThreadedServer(raw_server(session_class)) as server:
        # --no-preflight: a hub that never answers the handshake is turned away by the preflight
        # (tests/conformance/target/test_preflight.py); here the suite's own test must name the rule
        result = check(f"127.0.0.1:{server.address[1]}", "--timeout", "0.5", "--no-preflight", "--", "-k",
                       selection, report=report)
    assert result.returncode == 1, result.stdout[-3000:]
    doc = json.loads(report.read_text())
    failed = [t for t in doc["tests"] if t["verdict"] in ("FAIL", "TIMEOUT")]
    assert failed and all(requirement in t["requirements"] for t in failed), doc["tests"]
    assert all(t["transcript"] for t in failed)
    assert requirement in doc["summary"]["signalr"]["failing_requirements"]


def test_a_hub_that_passes_over_a_protocol_error_breaks_no_must(tmp_path):
    """A Completion with both result and error is a protocol error (SIGR-ERR-006), and the
    other endpoint "may immediately terminate" (SIGR-ERR-010, a MAY): a hub that passes over it
    and goes on is INFORMATIONAL for that MAY, not a FAIL of ERR-006 (which says what the
    client's message is)."""
    report = tmp_path / "r.json"
    with ThreadedServer(raw_server(IgnoresProtocolErrors)) as server:
        result = check(f"127.0.0.1:{server.address[1]}", "--timeout", "10", "--", "-k",
                       "test_completion_with_result_and_error", report=report)
    doc = json.loads(report.read_text())
    assert [(t["verdict"], t.get("broke")) for t in doc["tests"]] == [("INFORMATIONAL", ["SIGR-ERR-010"])], doc["tests"]
    assert doc["summary"]["signalr"]["failing_requirements"] == [] and result.returncode == 0, result.stdout[-3000:]
    # ERR-006 was never checked (its one test stopped at the MAY first): said, not hidden
    assert doc["summary"]["signalr"]["untested_behind"] == {"SIGR-ERR-006": ["SIGR-ERR-010"]}
    assert "MUST not tested (their tests stopped at another breach first): SIGR-ERR-006 (behind SIGR-ERR-010)" \
        in result.stdout, result.stdout[-3000:]


def test_the_hub_that_passes_over_a_protocol_error_reads_what_follows_in_the_same_read():
    """The planted hub goes on whether the suite's Echo behind the bad Completion comes in a
    read of its own or in the same one (a busy machine joins them): it failed on the joined
    read once, a TIMEOUT in place of the verdict above."""
    session = IgnoresProtocolErrors(HubConfig(profile="v1"), state=HubState())
    assert session.receive(b'{"protocol":"json","version":1}\x1e', 0.0) == [b"{}\x1e"]
    bad = b'{"type":3,"invocationId":"x","result":1,"error":"x"}\x1e'
    echo = b'{"type":1,"invocationId":"7","target":"Echo","arguments":["t"]}\x1e'
    for reads in ([bad + echo], [bad, echo], [bad + echo[:9], echo[9:]]):
        answered = [frame for data in reads for frame in session.receive(data, 0.1)]
        assert answered == [b'{"type":3,"invocationId":"7","result":"t"}\x1e'], (reads, answered)
    assert [category for category, _ in session.errors] == ["CONFLICTING_FIELDS"] * 3


def test_a_plain_close_on_a_protocol_error_is_a_should_not_a_must(tmp_path):
    """A hub that closes on a protocol error without a Close message (as aiosignalr 0.1.1 does)
    breaks SIGR-V1-005, a SHOULD: the state machine's MUST run (whose probes send protocol
    errors) passes it, the rule's own test names it (NON-STRICT), and the exit status is 0. The
    SHOULD run of the machine, which checks V1-004, -005 and -006, breaks V1-005 only: the
    other two are not reported as not met."""
    report = tmp_path / "r.json"
    with ThreadedServer(raw_server(ClosesWithoutCloseMessage)) as server:
        result = check(f"127.0.0.1:{server.address[1]}", "--", "-k",
                       "test_invocation_lifecycles or test_protocol_error_is_announced_with_close"
                       " or test_state_machine_should", report=report, timeout=180)
    doc = json.loads(report.read_text())
    got = {t["nodeid"].split("::")[-1]: t["verdict"] for t in doc["tests"]}
    must = {k: v for k, v in got.items() if k.startswith("test_invocation_lifecycles")}
    should = {k: v for k, v in got.items() if k.startswith("test_protocol_error_is_announced_with_close")}
    assert must and set(must.values()) == {"PASS"}, got
    assert should and set(should.values()) == {"NON-STRICT"}, got
    machine = [t for t in doc["tests"] if "test_state_machine_should" in t["nodeid"]]
    assert machine and all(t["verdict"] == "NON-STRICT" and t["broke"] == ["SIGR-V1-005"] for t in machine), machine
    assert "SIGR-V1-005" in doc["summary"]["signalr"]["failing_requirements"]
    assert not {"SIGR-V1-004", "SIGR-V1-006"} & set(doc["summary"]["signalr"]["failing_requirements"]), doc["summary"]
    assert result.returncode == 0, result.stdout[-3000:]


@pytest.mark.parametrize(("hub", "test", "verdict", "broke", "status"), [
    (RefusesAck, "test_state_machine_should", "NON-STRICT", "SIGR-V1-006", 0),
    (StreamsSingleResults, "test_invocation_lifecycles", "FAIL", "SIGR-INV-003", 1),
], ids=["should-run", "must-run"])
def test_the_state_machine_names_the_requirement_it_broke(tmp_path, hub, test, verdict, broke, status):
    """The SHOULD run of the machine checks SIGR-V1-004, -005 and -006; a hub that closes on an
    Ack breaks V1-006 alone: the run is NON-STRICT for that one, the others are not "not met".
    The MUST run checks some twenty requirements; a hub whose one defect is a StreamItem before
    Add's single result breaks SIGR-INV-003 alone, whatever step met it (the machine's steps
    name their rule: signalr_machine.broken_rule and ``rule=``)."""
    report = tmp_path / "r.json"
    with ThreadedServer(raw_server(hub)) as server:
        result = check(f"127.0.0.1:{server.address[1]}", "--", "-k", test, report=report, timeout=180)
    doc = json.loads(report.read_text())
    machine = [t for t in doc["tests"] if test in t["nodeid"]]
    assert machine and all(t["verdict"] == verdict and t["broke"] == [broke] for t in machine), machine
    if hub is RefusesAck:
        assert "Ack" in machine[0]["message"] or "Sequence" in machine[0]["message"], machine[0]["message"]
    assert doc["summary"]["signalr"]["failing_requirements"] == [broke], doc["summary"]
    assert result.returncode == status, result.stdout[-3000:]


def test_a_stream_that_never_stops_ends_the_cancel_test(tmp_path):
    """A hub that goes on streaming after CancelInvocation and never answers the barrier: the
    test stops after MAX_ITEMS_AFTER_CANCEL items (NON-STRICT, SIGR-STR-004 is a SHOULD)
    instead of reading the stream until its time runs out."""
    report = tmp_path / "r.json"
    with ThreadedServer(raw_server(StreamsOnAfterCancel)) as server:
        result = check(f"127.0.0.1:{server.address[1]}", "--timeout", "0.5", "--", "-k",
                       "test_cancel_stops_the_stream", report=report, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:]
    doc = json.loads(report.read_text())
    assert [t["verdict"] for t in doc["tests"]] == ["NON-STRICT", "NON-STRICT"], doc["tests"]
    for t in doc["tests"]:
        assert "SIGR-STR-004" in t["requirements"]
        assert "StreamItems after CancelInvocation" in t["message"] and t["duration"] < 30, t


@pytest.mark.parametrize("refusal", ["http", "close"])
def test_an_unknown_or_reused_token_may_be_refused_either_way(tmp_path, refusal):
    """SIGR-HTTP-004: a 404 before the upgrade and a WebSocket closed at once (4404) are both
    refusals; a server that accepts the id fails."""
    report = tmp_path / "r.json"
    with ThreadedServer(make_broker(refuse_unknown_id=refusal)) as server:
        result = check(f"http://127.0.0.1:{server.address[1]}/hub", "--", "-k",
                       "unknown_connection_id or single_use", report=report)
    assert result.returncode == 0, result.stdout[-3000:]
    verdicts = [t["verdict"] for t in json.loads(report.read_text())["tests"]]
    assert verdicts == ["PASS", "PASS"], verdicts
    with ThreadedServer(make_broker()) as server:
        server.server.negotiations.claim = lambda token: "accepted"     # every id, any number of times
        result = check(f"http://127.0.0.1:{server.address[1]}/hub", "--strict", "--", "-k",
                       "unknown_connection_id or single_use", report=report)
    assert result.returncode == 1, result.stdout[-3000:]      # a SHOULD: FAIL under --strict
    doc = json.loads(report.read_text())
    assert [t["verdict"] for t in doc["tests"]] == ["FAIL", "FAIL"], doc["tests"]
    assert all("was accepted" in t["message"] for t in doc["tests"]), [t["message"] for t in doc["tests"]]


def test_a_hub_that_runs_one_call_at_a_time_passes(tmp_path):
    """The document does not say that invocations run concurrently: a hub that holds every
    other message while a client-to-server stream is open passes the stream tests and the
    state machines (which send an upload whole over the wire)."""
    report = tmp_path / "r.json"
    with ThreadedServer(raw_server(OneCallAtATime)) as server:
        result = check(f"127.0.0.1:{server.address[1]}", "--timeout", "2", "--", "-k",
                       "client_to_server_stream or stateful", report=report)
    doc = json.loads(report.read_text())
    verdicts = {t["nodeid"]: t["verdict"] for t in doc["tests"]}
    assert result.returncode == 0 and set(verdicts.values()) == {"PASS"}, (verdicts, result.stdout[-3000:])
    assert len(verdicts) >= 4
