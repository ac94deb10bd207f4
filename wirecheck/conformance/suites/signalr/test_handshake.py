"""The negotiation (handshake) message ("Overview"; SPEC_NOTES for v1's response)."""
import pytest

from wirecheck.conformance.target.connection import TargetClosed
from wirecheck.conformance.report.verdicts import Breach, unimplemented
from wirecheck.reference_impl.signalr.messages import Completion, HandshakeRequest, HandshakeResponse

from .conftest import only, raw_json


@pytest.mark.requirement("SIGR-HS-001", "SIGR-HS-004")
def test_handshake_then_the_chosen_protocol(sig):
    conn = sig.open()
    conn.send(HandshakeRequest(sig.encoding, None if sig.draft else 1))
    if not sig.draft:
        # v1: {} + 0x1E comes first, before any hub message.
        conn.expect(HandshakeResponse, error=None)
    done = sig.call(conn, "Echo", "after the handshake")
    assert done.result == "after the handshake"


def _expect_handshake_refused(sig, conn, reason: str) -> None:
    if sig.draft:
        conn.expect_closed(reason=reason)
        return
    try:
        answer = conn.expect(HandshakeResponse)
    except TargetClosed:
        # refused, as it must be, but without the v1 error response: SIGR-HS-005 alone
        raise Breach(f"{reason}: the connection closed without the error response {{\"error\": ...}}",
                     "SIGR-HS-005") from None
    assert isinstance(answer.error, str) and answer.error, f"{reason}: the error response has no error text"
    conn.expect_closed(reason=f"{reason}: the server must close after the error response")


@pytest.mark.requirement("SIGR-HS-002", "SIGR-HS-005")
def test_unsupported_protocol_is_refused_and_closed(sig):
    conn = sig.open()
    conn.send(HandshakeRequest("protobuf-xml", None if sig.draft else 1))
    _expect_handshake_refused(sig, conn, "the protocol 'protobuf-xml' is not supported")


@pytest.mark.requirement("SIGR-HS-003")
@pytest.mark.parametrize("first", ["invocation", "empty-object", "not-json"])
def test_first_message_not_a_handshake_closes(sig, first, request):
    """The connection closes (SIGR-HS-003); in v1 after the error response, a failed handshake's
    answer (SIGR-HS-005), as the state machine's probes read it too: a plain close then breaks
    that one alone."""
    v1 = not sig.draft
    if v1:
        request.node.add_marker(pytest.mark.requirement("SIGR-HS-005"))
    conn = sig.open()
    records = {"invocation": raw_json('{"type":1,"invocationId":"1","target":"Echo","arguments":["x"]}'),
               "empty-object": raw_json("{}"),
               "not-json": raw_json("hello")}
    conn.send(records[first])
    try:
        answer = conn.recv(expecting="the connection to close")
    except TargetClosed:
        if v1:
            raise Breach(f"the first message ({first}) was not a handshake: the connection closed, as it must, "
                         f"but without the error response {{\"error\": ...}} a failed v1 handshake gets",
                         "SIGR-HS-005") from None
        return
    assert isinstance(answer, HandshakeResponse) and answer.error, f"got {answer!r} instead of a close"
    conn.expect_closed(reason="the first message was not a handshake")


@pytest.mark.requirement("SIGR-HS-006")
def test_unsupported_version_is_refused(sig):
    if sig.draft or not sig.has("handshake_response"):
        unimplemented("protocol versions in the handshake (v1; the profile's handshake_response)")
    conn = sig.open()
    conn.send(HandshakeRequest(sig.encoding, 99))
    _expect_handshake_refused(sig, conn, "version 99 is not supported")


@pytest.mark.requirement("SIGR-HS-007")
@pytest.mark.slow
@only("json")          # the timer runs before any protocol is chosen: once is enough
def test_no_handshake_is_closed_after_the_handshake_timeout(sig):
    if not sig.has("handshake_timeout"):
        unimplemented("the handshake timeout: the profile says the hub has no 'handshake_timeout'")
    conn = sig.open()
    limit = float(sig.target.profile.timing.get("handshake_timeout", 15.0))
    conn.expect_closed(timeout=limit + 5.0, reason=f"no handshake within {limit:g} s")


@pytest.mark.requirement("SIGR-HS-008", "SIGR-HS-001")
def test_handshake_and_invocation_in_one_write(sig):
    conn = sig.open()
    call = sig.invocation("Echo", "same write")
    conn.send(HandshakeRequest(sig.encoding, None if sig.draft else 1), call)
    if not sig.draft:
        conn.expect(HandshakeResponse, error=None)
    conn.expect(Completion, invocation_id=call.invocation_id, result="same write")


@pytest.mark.requirement("SIGR-HS-008")
def test_handshake_split_into_single_bytes(sig):
    conn = sig.open()
    conn.send(HandshakeRequest(sig.encoding, None if sig.draft else 1), chunks=1)
    if not sig.draft:
        conn.expect(HandshakeResponse, error=None)
    assert sig.call(conn, "Echo", "split").result == "split"
