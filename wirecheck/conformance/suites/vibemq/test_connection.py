"""Connect, authentication, Ping and Disconnect ("Connection Management", "Keep-alive",
"Error Codes"; SPEC_NOTES for what the real server allows before Connect)."""
import pytest

from wirecheck.conformance.target.connection import TargetClosed
from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import CommandType as T


@pytest.mark.requirement("VIBE-CONN-001", "VIBE-CONN-005")
def test_connect_is_acknowledged(vibe):
    conn = vibe.open()
    request = vibe.connect_message(clientVersion="1.0.0")
    conn.send(request)
    ack = vibe.expect(conn, T.CONNECT_ACK, "ConnectAck")
    assert ack.id, "ConnectAck carries an id"
    if vibe.feature("connect_ack_document_headers", vibe.reading == "document"):
        # The document's example: the request's id, serverVersion and connectionId.
        assert ack.id == request.id
        assert ack.header("serverVersion") and ack.header("connectionId"), ack.headers
    vibe.barrier(conn, "ConnectAck")


@pytest.mark.requirement("VIBE-CONN-002", "VIBE-ERR-001")
@pytest.mark.parametrize("password", ["wrong", ""])
def test_wrong_password_is_refused(vibe, password):
    conn = vibe.open()
    conn.send(vibe.connect_message(password=password + "-not-it"))
    error = vibe.expect_error(conn, "AUTH_FAILED")
    assert error.error_message, "an Error carries a message"


@pytest.mark.requirement("VIBE-CONN-003")
@pytest.mark.parametrize("kind", [T.PUBLISH, T.SUBSCRIBE, T.CREATE_QUEUE, T.LIST_QUEUES])
def test_commands_before_connect_are_refused(vibe, kind):
    conn = vibe.open()
    conn.send(Message(kind, vibe.new_id(), vibe.queue(), {"x": 1} if kind == T.PUBLISH else None))
    vibe.expect_error(conn, ("NOT_AUTHENTICATED", "AUTH_REQUIRED"), "an Error before Connect")


@pytest.mark.requirement("VIBE-CONN-003", "VIBE-PING-001")
def test_ping_before_connect_is_answered(vibe):
    conn = vibe.open()
    conn.send(Message(T.PING, "early"))
    vibe.expect(conn, T.PONG, id="early")


@pytest.mark.requirement("VIBE-PING-001")
@pytest.mark.parametrize("pid", ["p", "ping_123", "пинг-✓", "x" * 300])
def test_pong_carries_the_ping_id(vibe, pid):
    conn = vibe.connect()
    conn.send(Message(T.PING, pid))
    vibe.expect(conn, T.PONG, id=pid)


@pytest.mark.requirement("VIBE-CONN-004")
def test_disconnect_closes_the_connection(vibe):
    conn = vibe.connect()
    conn.send(Message(T.DISCONNECT, vibe.new_id("disc")))
    try:
        message = conn.recv(expecting="the connection to close")
    except TargetClosed:
        return
    assert message is None, f"expected the connection to close after Disconnect, got {message!r}"
