"""A step that accepts several outcomes (``Connection.expect_one_of``): which one came, and when
none did, a failure that names every accepted outcome and what came instead (as data, for the
report)."""
import socket

import pytest

from wirecheck.conformance.target.connection import CLOSE, Connection, Outcome, TargetClosed, TargetError, TargetTimeout, Transcript
from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import Nack, Pong
from wirecheck.reference_impl.core import registry

from tests.helpers import run_scratch_suite

SPEC = registry.get("blipmq")
NACK_400 = Outcome("NACK 400", lambda f: isinstance(f, Nack) and f.code == 400)


@pytest.fixture
def pair():
    ours, theirs = socket.socketpair()
    conn = Connection(ours, SPEC, 0.3, Transcript("t"))
    yield conn, theirs
    ours.close()
    theirs.close()


def test_the_matching_frame_is_returned(pair):
    conn, peer = pair
    peer.sendall(codec.encode(Nack(7, 400, "empty topic")))
    outcome, frame = conn.expect_one_of(NACK_400, CLOSE)
    assert outcome is NACK_400 and frame.correlation_id == 7


def test_a_close_is_an_outcome_when_accepted(pair):
    conn, peer = pair
    peer.close()
    assert conn.expect_one_of(NACK_400, CLOSE) == (CLOSE, None)


def test_a_close_fails_when_not_accepted(pair):
    conn, peer = pair
    peer.close()
    with pytest.raises(TargetClosed) as failed:
        conn.expect_one_of(NACK_400, reason="empty topic")
    assert failed.value.expected == ["NACK 400"] and failed.value.actual == "the connection closed"


def test_another_frame_names_every_accepted_outcome(pair):
    conn, peer = pair
    peer.sendall(codec.encode(Pong(3)))
    with pytest.raises(TargetError) as failed:
        conn.expect_one_of(NACK_400, CLOSE, reason="empty topic")
    assert failed.value.expected == ["NACK 400", "the connection closes"]
    assert failed.value.actual.startswith("PONG") or "PONG" in failed.value.actual.upper()
    assert "expected NACK 400 or the connection closes (empty topic), got" in str(failed.value)


def test_silence_is_a_timeout_with_the_outcomes(pair):
    conn, _ = pair
    with pytest.raises(TargetTimeout) as failed:
        conn.expect_one_of(NACK_400, CLOSE)
    assert failed.value.expected == ["NACK 400", "the connection closes"]


def test_the_outcomes_reach_the_result_file(tmp_path):
    _, doc = run_scratch_suite(
        tmp_path, "import pytest\nfrom wirecheck.conformance.target.connection import TargetError\n\n"
        "@pytest.mark.requirement('BLIP-PUB-002')\ndef test_o():\n"
        "    raise TargetError('expected NACK 400 or a close, got PONG(3)', ['NACK 400', 'a close'], 'PONG(3)')\n")
    (test,) = doc["tests"]
    assert test["verdict"] == "FAIL"
    assert test["expected"] == ["NACK 400", "a close"] and test["actual"] == "PONG(3)"
    from wirecheck.conformance.report.html import render
    from wirecheck.conformance.report.results import load_run
    page = render([load_run(str(tmp_path / "scratch.json"))])
    assert "one of: NACK 400 | a close" in page and "PONG(3)" in page
