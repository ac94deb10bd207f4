"""The Micromessage2 suite under the ``sharpmessaging`` profile, against a target that, like the
real SharpMessaging server, stops reading at the first COMMAND frame (its reader has no COMMAND
handling: docs/protocols/micromessage2.md, "What the real implementation's source shows"). The suite must still give a
verdict on everything that target can show: its barrier there is the ack of a SEND, never a
command; the COMMAND tests time out, and nothing else does."""
import json
import os
import subprocess
import sys

from wirecheck.reference_impl.core.server import ThreadedServer
from wirecheck.reference_impl.micromessage2.broker import make_broker
from wirecheck.reference_impl.micromessage2.codec import Command, Error
from wirecheck.reference_impl.micromessage2.session import MM2Session

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class StallsOnCommands(MM2Session):
    """Reads nothing more on a connection once a COMMAND frame arrived, and answers nothing."""

    stalled = False

    def _handle(self, frame) -> None:
        if isinstance(frame, Command):
            self.stalled = True
        if not self.stalled:
            super()._handle(frame)


def _check(port, *extra, report):
    cmd = [sys.executable, "-m", "wirecheck", "check", "--protocol", "micromessage2",
           "--target", f"127.0.0.1:{port}", "--report", str(report), *extra]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def _stalling_broker(profile):
    broker = make_broker(profile=profile)
    state, config = broker.state, broker.config
    broker.server.make_session = lambda: StallsOnCommands(state, config)
    return broker


def test_sharpmessaging_profile_needs_no_command_answered(tmp_path):
    broker = _stalling_broker("sharpmessaging")
    with ThreadedServer(broker) as server:
        result = _check(server.address[1], "--profile", "sharpmessaging", "--timeout", "0.5",
                        "--", "-p", "no:randomly", report=tmp_path / "r.json")
    tests = json.loads((tmp_path / "r.json").read_text())["tests"]
    by = {}
    for t in tests:
        by.setdefault(t["verdict"], []).append(t)
    # A target that answers no COMMAND is not asked one: the unknown-command test, which timed
    # out here and failed the run, is UNIMPLEMENTED; nothing fails.
    assert result.returncode == 0, result.stdout[-2000:]
    assert not by.get("TIMEOUT"), [(t["nodeid"], t["message"][:200]) for t in by.get("TIMEOUT", [])]
    unasked = {t["nodeid"].split("::")[-1].split("[")[0] for t in by["UNIMPLEMENTED"]}
    assert "test_unknown_command_gets_an_error_and_the_connection_stays" in unasked
    assert not by.get("FAIL") and not by.get("HARNESS-ERROR"), \
        [(t["nodeid"], t["message"][:300]) for t in by.get("FAIL", []) + by.get("HARNESS-ERROR", [])]
    passed = {t["nodeid"].split("::")[-1].split("[")[0] for t in by["PASS"]}
    # Tests that end with the barrier, and tests that need the ack of a SEND, pass.
    assert {"test_offer_without_extensions_gets_a_handshake", "test_large_payload_send_is_acked",
            "test_continued_sends_are_acked", "test_split_sends_are_acked",
            "test_ack_id_follows_the_final_order", "test_send_without_destination"} <= passed, passed
    reasons = {t["message"] for t in by["UNIMPLEMENTED"]}
    assert any("features.commands = false" in r for r in reasons), reasons
    # The real server's documented readings stay visible: 1.1 answered to a 1.0 client
    # (MM2-HS-003), unknown optional extensions echoed (MM2-HS-014).
    assert {r for t in by["NON-STRICT"] for r in t["requirements"]} >= {"MM2-HS-003", "MM2-HS-014"}


def test_document_reading_without_commands(tmp_path):
    """A profile file that only turns ``commands`` off: the barrier's ``ack`` is the document's
    (window one, no properties), which a document-reading target accepts."""
    profile = tmp_path / "p.toml"
    profile.write_text('extends = "document"\n[features]\ncommands = false\n')
    with ThreadedServer(_stalling_broker("document")) as server:
        result = _check(server.address[1], "--profile", str(profile), "--timeout", "0.5",
                        "--", "-p", "no:randomly", report=tmp_path / "r.json")
    tests = json.loads((tmp_path / "r.json").read_text())["tests"]
    bad = {t["nodeid"].split("::")[-1].split("[")[0]: t["verdict"] for t in tests
           if t["verdict"] not in ("PASS", "UNIMPLEMENTED", "INFORMATIONAL")}
    # the unknown-command test needs commands: UNIMPLEMENTED, not a TIMEOUT that fails the run
    assert bad == {}, (bad, result.stdout[-1500:])
    assert result.returncode == 0
    assert sum(t["verdict"] == "PASS" for t in tests) >= 25


def test_a_count_that_starts_near_the_wrap_breaks_only_the_should(tmp_path):
    """The document fixes that each sequence number follows the one before (65535 -> 1), not
    where a connection's count starts: a server starting at 65533 (it wraps after three
    messages) is only NON-STRICT on MM2-MSG-007, SPEC_NOTES' "start at 1"."""
    report = tmp_path / "r.json"
    with ThreadedServer(make_broker(first_sequence=65533)) as server:
        result = _check(server.address[1], report=report)
    doc = json.loads(report.read_text())
    bad = {t["nodeid"]: (t["verdict"], t["requirements"]) for t in doc["tests"]
           if t["verdict"] not in ("PASS", "UNIMPLEMENTED", "INFORMATIONAL")}
    assert result.returncode == 0, result.stdout[-3000:]
    assert list(bad.values()) == [("NON-STRICT", ["MM2-MSG-007"])], bad


class StaysAfterClientError(MM2Session):
    """Keeps the connection after the client's ERROR frame (MM2-ERR-002, a SHOULD reading)."""

    def _handle(self, frame) -> None:
        if not isinstance(frame, Error):
            super()._handle(frame)


def test_the_should_machine_names_the_requirement_it_broke(tmp_path):
    """The SHOULD run of the state machine checks MM2-FRAME-003 and MM2-ERR-002 with its probes;
    a server that stays after the client's ERROR breaks ERR-002 alone, and FRAME-003 is not
    reported as not met."""
    report = tmp_path / "r.json"
    broker = make_broker()
    state, config = broker.state, broker.config
    broker.server.make_session = lambda: StaysAfterClientError(state, config)
    with ThreadedServer(broker) as server:
        result = _check(server.address[1], "--timeout", "0.5", "--", "-k", "test_state_machine_should",
                        report=report)
    doc = json.loads(report.read_text())
    [machine] = doc["tests"]
    assert machine["verdict"] == "NON-STRICT" and machine["broke"] == ["MM2-ERR-002"], machine
    assert "ERROR on a connection" in machine["message"], machine["message"]
    assert doc["summary"]["micromessage2"]["failing_requirements"] == ["MM2-ERR-002"], doc["summary"]
    assert result.returncode == 0, result.stdout[-3000:]
