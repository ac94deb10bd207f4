"""HELLO / AUTH handshake (blipmq-protocol.md "HELLO / AUTH Handshake"; SPEC_NOTES.md)."""
import dataclasses

import pytest

from wirecheck.reference_impl.blipmq.codec import Ack, Auth, FrameType, Hello, Nack, Ping, Poll, Pong, Publish, Subscribe

from .conftest import raw

DOC_HELLO = bytes.fromhex("0000000B 01 0000000000000001 0001")
DOC_AUTH = bytes.fromhex("00000012 02 0000000000000002 0007 6465762D6B6579")


@pytest.mark.requirement("BLIP-HELLO-001", "BLIP-FRAME-005")
def test_document_hello_sample_gets_ack_zero(blip):
    conn = blip.connect(hello=False)
    conn.send(DOC_HELLO)
    conn.expect(Ack, correlation_id=1, subscription_id=0)


@pytest.mark.requirement("BLIP-AUTH-005", "BLIP-AUTH-004")
def test_document_auth_sample(blip):
    conn = blip.connect(hello=False)
    conn.send(DOC_HELLO)
    conn.expect(Ack, correlation_id=1)
    conn.send(DOC_AUTH)
    if blip.api_key == "dev-key":
        conn.expect(Ack, correlation_id=2, subscription_id=0)
    else:   # the profile says this target does not accept the sample's key
        blip.expect_nack(conn, 2, 401, "invalid API key")


@pytest.mark.requirement("BLIP-HELLO-002")
@pytest.mark.parametrize("version", [0, 2, 0xFFFF])
def test_hello_version_mismatch_gets_426(blip, version):
    conn = blip.connect(hello=False)
    cid = blip.cid()
    conn.send(Hello(cid, version))
    blip.expect_nack(conn, cid, 426, "unsupported protocol version")


@pytest.mark.requirement("BLIP-HELLO-005", "BLIP-HELLO-001")
def test_hello_retry_after_version_mismatch(blip):
    conn = blip.connect(hello=False)
    bad, good = blip.cid(), blip.cid()
    conn.send(Hello(bad, 9))
    blip.expect_nack(conn, bad, 426)
    conn.send(Hello(good, 1))
    conn.expect(Ack, correlation_id=good, subscription_id=0)


@pytest.mark.requirement("BLIP-HELLO-003")
@pytest.mark.parametrize("authenticated", [False, True], ids=["before-auth", "after-auth"])
def test_second_hello_rejected(blip, authenticated):
    conn = blip.connect(auth=authenticated)
    cid = blip.cid()
    conn.send(Hello(cid, 1))
    blip.expect_nack(conn, cid, 400, "HELLO already performed")


@pytest.mark.requirement("BLIP-HELLO-004")
@pytest.mark.parametrize("payload", [b"", b"\x00", b"\x00\x01\x00"], ids=["empty", "1-byte", "3-bytes"])
def test_hello_payload_not_two_bytes(blip, payload):
    conn = blip.connect(hello=False)
    cid = blip.cid()
    conn.send(raw(FrameType.HELLO, cid, payload))
    blip.expect_nack(conn, cid, 400, "invalid HELLO payload")


@pytest.mark.requirement("BLIP-AUTH-001")
def test_auth_before_hello(blip):
    conn = blip.connect(hello=False)
    cid = blip.cid()
    conn.send(Auth(cid, blip.api_key))
    blip.expect_nack(conn, cid, 400, "HELLO not performed")


@pytest.mark.requirement("BLIP-AUTH-002")
def test_auth_twice(blip):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(Auth(cid, blip.api_key))
    blip.expect_nack(conn, cid, 400, "already authenticated")


@pytest.mark.requirement("BLIP-AUTH-003")
@pytest.mark.parametrize("payload", [
    b"",                               # no key_len
    b"\x00",                           # half a key_len
    b"\x00\x05abc",                    # key_len past the end
    b"\x00\x02abc",                    # trailing byte after the key
    b"\x00\x02\xff\xfe",               # key not UTF-8
], ids=["empty", "short-len", "len-too-big", "trailing", "not-utf8"])
def test_malformed_auth_payload(blip, payload):
    conn = blip.connect(auth=False)
    cid = blip.cid()
    conn.send(raw(FrameType.AUTH, cid, payload))
    blip.expect_nack(conn, cid, 400, "invalid AUTH payload")


@pytest.mark.requirement("BLIP-AUTH-004", "BLIP-NACK-001")
def test_invalid_api_key(blip):
    conn = blip.connect(auth=False)
    cid = blip.cid()
    conn.send(Auth(cid, "wirecheck-not-a-valid-key-" + blip.topic()))
    blip.expect_nack(conn, cid, 401, "invalid API key")


@pytest.mark.requirement("BLIP-AUTH-008", "BLIP-AUTH-005")
def test_auth_retry_after_invalid_key(blip):
    conn = blip.connect(auth=False)
    bad, good = blip.cid(), blip.cid()
    conn.send(Auth(bad, "wirecheck-not-a-valid-key"))
    blip.expect_nack(conn, bad, 401)
    conn.send(Auth(good, blip.api_key))
    conn.expect(Ack, correlation_id=good, subscription_id=0)


def _unauth_frames(blip):
    return {
        "PUBLISH": Publish(0, 0, "t", b"x"), "SUBSCRIBE": Subscribe(0, "t", 0),
        "ACK": Ack(0, 1), "POLL": Poll(0, 1), "PING": Ping(0),
        "NACK": Nack(0, 400, "x"), "PONG": Pong(0),
    }


@pytest.mark.requirement("BLIP-AUTH-006")
@pytest.mark.parametrize("hello", [False, True], ids=["no-hello", "after-hello"])
@pytest.mark.parametrize("kind", ["PUBLISH", "SUBSCRIBE", "ACK", "POLL", "PING", "NACK", "PONG"])
def test_frames_before_auth_get_401(blip, hello, kind):
    conn = blip.connect(hello=hello, auth=False)
    cid = blip.cid()
    frame = _unauth_frames(blip)[kind]
    conn.send(dataclasses.replace(frame, correlation_id=cid))
    blip.expect_nack(conn, cid, 401, "unauthenticated")


@pytest.mark.requirement("BLIP-AUTH-007", "BLIP-PING-001")
def test_ping_after_auth_gets_pong(blip):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(Ping(cid))
    # The reference decoder rejects a PONG with a payload (TRAILING_BYTES), so this also
    # checks the empty payload.
    conn.expect(Pong, correlation_id=cid)

