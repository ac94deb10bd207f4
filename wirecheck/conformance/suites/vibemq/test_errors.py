"""Error paths beyond the document's table ("Error Codes"; SPEC_NOTES lists the codes the real
server emits). The document's reading answers with the document's codes, the real server
with its own: each test accepts the code of the target's profile."""
import pytest

from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import CommandType as T


def _code(vibe, document: str, real: str) -> str:
    return document if vibe.reading == "document" else real


@pytest.mark.requirement("VIBE-ERR-005", "VIBE-ERR-001")
def test_connect_without_password(vibe):
    conn = vibe.open()
    conn.send(Message(T.CONNECT, vibe.new_id("conn"), headers={"clientVersion": "1.0.0"}))
    error = vibe.expect_error(conn, _code(vibe, "AUTH_FAILED", "AUTH_REQUIRED"))
    assert error.error_message


@pytest.mark.requirement("VIBE-ERR-006")
@pytest.mark.parametrize("kind", [T.PUBLISH, T.SUBSCRIBE, T.CREATE_QUEUE])
def test_command_without_a_queue(vibe, kind):
    conn = vibe.connect()
    mid = vibe.new_id()
    conn.send(Message(kind, mid, None, {"x": 1} if kind == T.PUBLISH else None))
    error = vibe.expect_error(conn, _code(vibe, "INVALID_MESSAGE", "INVALID_QUEUE"))
    assert error.id == mid, "a handler's error answers the request's id"
    vibe.barrier(conn, "an error (the connection stays open)")


@pytest.mark.requirement("VIBE-ERR-007")
@pytest.mark.parametrize("options", [{"deliveryMode": "Sideways"}, {"maxQueueSize": "0"},
                                     {"messageTtl": "-5"}, {"maxRetryAttempts": "x"}])
def test_create_queue_with_invalid_options(vibe, options):
    conn = vibe.connect()
    conn.send(Message(T.CREATE_QUEUE, vibe.new_id("create"), vibe.queue(), headers=options))
    vibe.expect_error(conn, _code(vibe, "INVALID_MESSAGE", "INVALID_PAYLOAD"))
    vibe.barrier(conn, "an invalid CreateQueue")
