"""Framing, compression flags and the binary message ("Framing", "Frame Format",
"Compression Flags Byte", "Binary Protocol Structure"; SPEC_NOTES for the real bounds)."""
import struct
import zlib

import pytest

from wirecheck.conformance.report.verdicts import unimplemented
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import CommandType as T
from wirecheck.reference_impl.vibemq.constants import Compression

from .conftest import raw_body, raw_frame


def _v11(vibe) -> None:
    if vibe.reading == "vibemq-1.0":
        unimplemented("the compression flags byte (protocol 1.1)")


@pytest.mark.requirement("VIBE-FRAME-001", "VIBE-PING-001", "VIBE-MSG-001", "VIBE-MSG-003")
def test_ping_frame_by_hand(vibe):
    _v11(vibe)
    conn = vibe.connect()
    conn.send(struct.pack(">IB", 14 + (4 if vibe.reading == "document" else 0), 0)
              + raw_body(vibe, T.PING, b"p1"))
    pong = vibe.expect(conn, T.PONG, "Pong(p1)")
    assert pong.id == "p1" and pong.version == 1


@pytest.mark.requirement("VIBE-FRAME-002")
@pytest.mark.parametrize("chunks", [1, 3, 7])
def test_frames_split_over_writes(vibe, chunks):
    conn = vibe.connect()
    pings = [Message(T.PING, vibe.new_id("ping")) for _ in range(3)]
    conn.send(*pings, chunks=chunks)
    for p in pings:
        vibe.expect(conn, T.PONG, id=p.id)


@pytest.mark.requirement("VIBE-FRAME-002")
def test_several_frames_in_one_write(vibe):
    conn = vibe.open()
    ping = Message(T.PING, vibe.new_id("ping"))
    conn.send(vibe.connect_message(), ping, Message(T.PING, "second"))
    vibe.expect(conn, T.CONNECT_ACK)
    vibe.expect(conn, T.PONG, id=ping.id)
    vibe.expect(conn, T.PONG, id="second")


@pytest.mark.requirement("VIBE-FRAME-003")
@pytest.mark.parametrize("flag", [0x03, 0x10, 0xFF])
def test_unknown_compression_flag_drops_the_connection(vibe, flag):
    _v11(vibe)
    conn = vibe.connect()
    body = codec.encode_body(Message(T.PING, "x"), vibe.reading)
    conn.send(struct.pack(">IB", len(body), flag) + body)
    conn.expect_closed(reason=f"compression flag 0x{flag:02x} is not defined")


@pytest.mark.requirement("VIBE-FRAME-004")
@pytest.mark.parametrize("length", [0, 1])
def test_body_shorter_than_two_drops_the_connection(vibe, length):
    conn = vibe.connect()
    conn.send(raw_frame(vibe, b"\x01" * length))
    conn.expect_closed(reason=f"body length {length} < 2")


@pytest.mark.requirement("VIBE-FRAME-005")
@pytest.mark.parametrize("length", [0xFFFFFFFF, 1_048_577])
def test_body_over_the_maximum_drops_the_connection(vibe, length):
    conn = vibe.connect()
    limit = int(vibe.profile.limits.get("max_frame_size", 1_048_576))
    if length <= limit:
        pytest.skip(f"the target's limit is {limit}")
    # Only the header: a target that waited for the body would never answer.
    conn.send(struct.pack(">I", length) + (b"\x00" if vibe.reading != "vibemq-1.0" else b""))
    conn.expect_closed(reason=f"body length {length} over the limit, refused from the header")


def _gzip_zeros(inflated: int) -> bytes:
    """A gzip stream of ``inflated`` zero bytes, built a MiB at a time (never held whole)."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    return b"".join(deflater.compress(block) for _ in range(inflated >> 20)) + deflater.flush()


@pytest.mark.requirement("VIBE-FRAME-006")
def test_decompression_bomb_is_refused(vibe):
    _v11(vibe)
    conn = vibe.connect()
    limit = int(vibe.profile.limits.get("max_decompressed", 64 * 1024 * 1024))
    body = _gzip_zeros(limit + (16 << 20))             # ~1/1000 of that on the wire
    conn.send(struct.pack(">IB", len(body), Compression.GZIP) + body)
    vibe.expect_error_or_close(conn, ("INVALID_MESSAGE",), f"a {len(body)}-byte body inflating past {limit}")


@pytest.mark.requirement("VIBE-FRAME-007")
def test_protocol_1_0_frames_have_no_flags_byte(vibe):
    if vibe.reading != "vibemq-1.0":
        unimplemented("protocol 1.0 framing (profile vibemq-1.0)")
    conn = vibe.connect()
    body = codec.encode_body(Message(T.PING, "p10"), vibe.reading)
    conn.send(struct.pack(">I", len(body)) + body)
    vibe.expect(conn, T.PONG, id="p10")


@pytest.mark.requirement("VIBE-MSG-005")
@pytest.mark.parametrize("case", ["payload-not-json", "payload-not-utf8", "bad-utf8-id", "truncated"])
def test_malformed_message(vibe, case):
    conn = vibe.connect()
    q = vibe.queue().encode()
    body = {"payload-not-json": raw_body(vibe, T.PUBLISH, b"bad", q, b'{"a":1,'),
            "payload-not-utf8": raw_body(vibe, T.PUBLISH, b"bad", q, b'"\xff"'),
            "bad-utf8-id": raw_body(vibe, T.PUBLISH, b"\xff\xfe", q, b"1"),
            "truncated": raw_body(vibe, T.PUBLISH, b"bad", q, b"1")[:9]}[case]
    conn.send(raw_frame(vibe, body))
    vibe.expect_error_or_close(conn, ("INVALID_MESSAGE", "INVALID_PAYLOAD"), f"a malformed message ({case})")


@pytest.mark.requirement("VIBE-MSG-006")
@pytest.mark.parametrize("kind", [3, 12, 31, 98, 100, 255])
def test_unknown_command_type(vibe, kind):
    conn = vibe.connect()
    conn.send(raw_frame(vibe, raw_body(vibe, kind, b"u")))
    vibe.expect_error_or_close(conn, ("UNKNOWN_COMMAND", "INVALID_MESSAGE"), f"command type {kind}")


@pytest.mark.requirement("VIBE-MSG-007")
def test_empty_id_is_refused(vibe):
    conn = vibe.connect()
    conn.send(raw_frame(vibe, raw_body(vibe, T.PING, b"")))
    vibe.expect_error_or_close(conn, ("INVALID_MESSAGE",), "a Ping with an empty id")


@pytest.mark.requirement("VIBE-MSG-004", "VIBE-MSG-008")
def test_body_ending_after_the_headers_is_read(vibe):
    conn = vibe.connect()
    message = Message(T.PING, "short", headers={"empty": ""})
    body = codec.encode_body(message, "vibemq-1.8")          # no errorCode/errorMessage
    conn.send(raw_frame(vibe, body))
    pong = vibe.expect(conn, T.PONG, id="short")
    assert pong.error_code is None and pong.error_message is None
