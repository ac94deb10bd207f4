"""Today's protocol (SPEC_NOTES, SignalR): Ping, Close, headers, forward compatibility,
Ack/Sequence, server-to-client invocations, keep-alive and timeouts."""
import pytest

from wirecheck.conformance.target.connection import TargetClosed
from wirecheck.conformance.report.verdicts import unimplemented
from wirecheck.reference_impl.signalr.messages import (Ack, Close, Completion, Invocation, Ping, Sequence,
                                             StreamInvocation)

from .conftest import only, raw_json, raw_msgpack


def _v1(sig, what: str, feature: str | None = None) -> None:
    if sig.draft:
        unimplemented(f"{what} (v1)")
    if feature and not sig.has(feature):
        unimplemented(f"{what}: the profile says the hub has no {feature!r}")


@pytest.mark.requirement("SIGR-V1-001")
def test_ping_needs_no_answer(sig):
    _v1(sig, "Ping", "ping")
    conn = sig.connect()
    conn.send(Ping(), Ping())
    sig.barrier(conn, "two Pings")


@pytest.mark.requirement("SIGR-V1-002")
@pytest.mark.parametrize("close", [Close(), Close("client going away"), Close(None, True)])
def test_close_ends_the_connection(sig, close):
    _v1(sig, "Close")
    conn = sig.connect()
    conn.send(close)
    conn.expect_closed(reason="the client sent Close")


@pytest.mark.requirement("SIGR-V1-003")
def test_headers_are_accepted(sig):
    _v1(sig, "headers", "headers")
    conn = sig.connect()
    iid = sig.new_id()
    conn.send(Invocation("Echo", ["with headers"], iid, headers={"Content-Type": "application/json"}))
    conn.expect(Completion, invocation_id=iid, result="with headers")
    sid = sig.new_id()
    conn.send(StreamInvocation(sid, "Counter", [1, 0], headers={"trace": "abc"}))
    got = sig.collect(conn, sid)
    assert got[-1].error is None


@pytest.mark.requirement("SIGR-V1-004")
def test_unknown_message_type_is_ignored(sig):
    _v1(sig, "forward-compatible message types")
    conn = sig.connect()
    conn.send(raw_json('{"type":99,"future":true}') if sig.encoding == "json" else raw_msgpack([99, {}, "x"]))
    sig.barrier(conn, "a message of unknown type 99")


@pytest.mark.requirement("SIGR-V1-005")
def test_protocol_error_is_announced_with_close(sig):
    _v1(sig, "Close messages")
    conn = sig.connect()
    conn.send(raw_json('{"type":1,"invocationId":"p"}') if sig.encoding == "json" else raw_msgpack([1, {}]))
    close = sig.expect_protocol_error(conn, "an Invocation without target and arguments")
    assert close is not None, "v1 servers send a Close carrying the error before closing"
    assert close.error, f"the Close must carry the error, got {close!r}"


@pytest.mark.requirement("SIGR-V1-006")
def test_ack_and_sequence_without_stateful_reconnect(sig):
    _v1(sig, "Ack/Sequence")
    conn = sig.connect()
    conn.send(Ack(1), Sequence(1))
    sig.barrier(conn, "Ack and Sequence")


@pytest.mark.requirement("SIGR-V1-007")
def test_server_invokes_the_client(sig):
    _v1(sig, "server-to-client invocations")
    conn = sig.connect()
    call = sig.invocation("CallMe", "ReceiveMessage", "hi")
    conn.send(call)
    got = {}
    for _ in range(2):
        message = sig.recv(conn, "the server's Invocation and CallMe's Completion")
        got[type(message).__name__] = message
    inv = got.get("Invocation")
    assert inv is not None, f"no Invocation of ReceiveMessage: {got!r}"
    assert inv.target == "ReceiveMessage" and inv.arguments == ["hi"]
    assert inv.invocation_id is None, "a call that expects no result carries no invocationId (v1)"
    assert "Completion" in got


@pytest.mark.requirement("SIGR-V1-007")
def test_server_waits_for_a_client_result(sig):
    _v1(sig, "client results", "client_results")
    conn = sig.connect()
    call = sig.invocation("AskMe", "GetAnswer", 41)
    conn.send(call)
    inv = sig.recv(conn, "the server's Invocation of GetAnswer")
    assert isinstance(inv, Invocation) and inv.invocation_id, f"expected an Invocation with an id: {inv!r}"
    conn.send(Completion.with_result(inv.invocation_id, 42))
    conn.expect(Completion, invocation_id=call.invocation_id, result=42)


@pytest.mark.requirement("SIGR-V1-008")
@pytest.mark.slow
@only("json")
def test_keep_alive_ping(sig):
    _v1(sig, "keep-alive Ping", "ping")
    conn = sig.connect()
    interval = float(sig.target.profile.timing.get("keep_alive_interval", 15.0))
    message = conn.recv(interval + 5.0, expecting=f"a keep-alive Ping within {interval:g} s", keep=True)
    assert isinstance(message, Ping), repr(message)


@pytest.mark.requirement("SIGR-V1-009")
@pytest.mark.slow
@only("json")
def test_silent_client_is_dropped(sig):
    _v1(sig, "client timeout", "client_timeout")
    conn = sig.connect()
    limit = float(sig.target.profile.timing.get("client_timeout", 30.0))
    deadline_note = f"nothing sent for the client timeout ({limit:g} s)"
    # Keep-alive Pings may come first (sig.recv reads past them): the close is due within the
    # client timeout of the handshake, plus 5 s, however many Pings come.
    try:
        message = sig.recv(conn, f"the connection to close within {limit + 5.0:g} s ({deadline_note})",
                           timeout=limit + 5.0)
    except TargetClosed:
        return
    assert isinstance(message, Close), f"{deadline_note}: got {message!r}"
    conn.expect_closed(reason=deadline_note)
