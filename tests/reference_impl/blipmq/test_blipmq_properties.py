"""Properties of the BlipMQ codec (blipmq-protocol.md "Frame Layout", "Payload Formats"):
round trip, split-read invariance, nothing but FrameError from any input, the right category
for each near-valid invalid frame, and length bounds checked before any body is buffered."""
import struct

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from wirecheck.conformance.strategies import blipmq as bs
from wirecheck.conformance.strategies.invariants import (assert_same,
                                               assert_split_invariant, decode_chunked, decode_whole)
from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import (HEADER_SIZE, MAX_FRAME_SIZE, Auth, FrameType, Hello, Nack,
                                         Ping, Pong, RawFrame)
from wirecheck.reference_impl.blipmq.session import BlipSession
from wirecheck.reference_impl.blipmq.state import BrokerState
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import Category, FrameError

SPEC = registry.get("blipmq")
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SMALL = settings(FAST, max_examples=40)


# --- round trip ---------------------------------------------------------------------------------

@pytest.mark.parametrize("frame_type", list(FrameType), ids=lambda t: t.name)
@SMALL
@given(data=st.data())
def test_round_trip(frame_type, data):
    frame = data.draw(bs.frames([frame_type]))
    wire = codec.encode(frame)
    (length,) = struct.unpack_from(">I", wire)
    assert length == len(wire) - 4
    assert wire[4] == frame_type
    assert decode_whole(wire) == ([frame], None, None)
    raw = RawFrame(frame_type, frame.correlation_id, wire[HEADER_SIZE:])
    assert codec.parse_payload(raw) == frame


# --- split reads of large frames (the generic split-read properties are in
# tests/reference_impl/core/test_codec_properties.py) ---------------------------------------------------------------

@settings(FAST, max_examples=8)
@given(data=st.data(), size=st.integers(60_000, 150_000), fill=st.integers(0, 255))
def test_large_frames_any_split(data, size, fill):
    # Past the buffer's 64 KiB compaction threshold, so compaction happens between reads.
    small = data.draw(bs.valid_streams(max_size=3))
    big = codec.Publish(7, 1, "big", bytes([fill]) * size)
    stream = [*small, big, *small]
    wire = bs.stream_bytes(stream)
    sizes = data.draw(bs.chunkings(wire, max_chunks=200))
    whole = decode_whole(wire)
    assert whole == (stream, None, None)
    assert_same(whole, decode_chunked(wire, sizes), "chunked")


@FAST
@given(data=st.data())
def test_mutated_stream(data):
    wire = bytearray(bs.stream_bytes(data.draw(bs.valid_streams(min_size=1, max_size=5))))
    for _ in range(data.draw(st.integers(1, 4))):
        wire[data.draw(st.integers(0, len(wire) - 1))] = data.draw(st.integers(0, 255))
    wire = bytes(wire)
    assert_split_invariant(wire, data.draw(bs.chunkings(wire)))


@FAST
@given(frame_type=st.sampled_from(FrameType), cid=bs.correlation_ids,
       payload=st.binary(max_size=128) | bs.invalid_utf8())
def test_parse_payload_only_frame_error(frame_type, cid, payload):
    raw = RawFrame(frame_type, cid, payload, offset=100)
    try:
        frame = codec.parse_payload(raw)
    except FrameError as exc:
        assert exc.category in set(Category)
        assert 100 + HEADER_SIZE <= exc.offset <= 100 + HEADER_SIZE + len(payload)
    else:
        assert frame.type is frame_type and frame.correlation_id == cid


# --- the right category -------------------------------------------------------------------------

@FAST
@given(prefix=bs.valid_streams(max_size=3), bad=bs.bad_length_frames())
@example(prefix=[], bad=(b"\x00\x00\x00\x00", Category.LENGTH_TOO_SMALL))
@example(prefix=[], bad=(b"\x00\x00\x00\x08" + bytes(8), Category.LENGTH_TOO_SMALL))
@example(prefix=[], bad=(struct.pack(">I", MAX_FRAME_SIZE + 1), Category.LENGTH_TOO_LARGE))
def test_bad_length_category(prefix, bad):
    wire, category = bad
    head = bs.stream_bytes(prefix)
    assert decode_whole(head + wire) == (prefix, category, len(head))


@FAST
@given(prefix=bs.valid_streams(max_size=3), bad=bs.unknown_type_frames())
def test_unknown_type_category(prefix, bad):
    wire, category = bad
    head = bs.stream_bytes(prefix)
    assert decode_whole(head + wire) == (prefix, category, len(head) + 4)


@FAST
@given(prefix=bs.valid_streams(max_size=3), bad=bs.bad_payload_frames())
def test_bad_payload_category(prefix, bad):
    wire, category = bad
    head = bs.stream_bytes(prefix)
    result = decode_whole(head + wire)
    assert result.frames == prefix and result.category == category
    assert len(head) + HEADER_SIZE <= result.offset <= len(head) + len(wire)
    # The envelope itself is fine: only the payload is rejected.
    raw = codec.Decoder(parse=False).feed(wire)
    assert len(raw) == 1 and raw[0].type == wire[4]


def test_exactly_16_mib_length_is_within_bounds():
    decoder = SPEC.make_decoder()
    assert decoder.feed(struct.pack(">IBQ", MAX_FRAME_SIZE, FrameType.PUBLISH, 1)) == []
    assert decoder.buffered == HEADER_SIZE


@pytest.mark.parametrize("length", [MAX_FRAME_SIZE + 1, 0xFFFFFFFF])
def test_huge_length_fails_after_four_bytes_nothing_buffered(length):
    prefix = struct.pack(">I", length)
    decoder = SPEC.make_decoder()
    for byte in prefix[:3]:
        assert decoder.feed(bytes([byte])) == []
    with pytest.raises(FrameError) as info:
        decoder.feed(prefix[3:])
    assert (info.value.category, info.value.offset) == (Category.LENGTH_TOO_LARGE, 0)
    assert decoder.buffered == 4
    with pytest.raises(FrameError) as again:     # sticky
        decoder.feed(b"\x00")
    assert again.value.category == Category.LENGTH_TOO_LARGE


# --- the session's side of the same inputs ------------------------------------------------------

HANDSHAKE = codec.encode(Hello(1, 1)) + codec.encode(Auth(2, "dev-key"))
NOW = 1000.0


def _answers(session, wire):
    out = b"".join(session.receive(wire, NOW))
    result = decode_whole(out)
    assert result.ok, f"session sent undecodable bytes: {result}"
    return result.frames


@FAST
@given(bad=bs.bad_payload_frames())
def test_session_answers_bad_payload_with_nack_400(bad):
    wire, _ = bad
    session = BlipSession(BrokerState())
    assert len(_answers(session, HANDSHAKE)) == 2
    cid = struct.unpack_from(">Q", wire, 5)[0]
    answers = _answers(session, wire + codec.encode(Ping(99)))
    frame_type = FrameType(wire[4])
    if frame_type in (FrameType.NACK, FrameType.PONG):       # ignored after AUTH (session.py)
        expected = []
    elif frame_type is FrameType.PING:                       # the server never parses a PING
        expected = [Pong(cid)]
    elif frame_type is FrameType.HELLO:
        expected = [Nack(cid, 400, "HELLO already performed")]
    elif frame_type is FrameType.AUTH:
        expected = [Nack(cid, 400, "already authenticated")]
    else:
        expected = [Nack(cid, 400, f"invalid {frame_type.name} payload")]
    assert answers == [*expected, Pong(99)]
    assert not session.closed


@FAST
@given(bad=bs.bad_length_frames() | bs.unknown_type_frames(), split=st.booleans())
def test_session_closes_on_stream_error_without_answer(bad, split):
    wire, _ = bad
    session = BlipSession(BrokerState())
    ping = codec.encode(Ping(5))
    if split:
        answers = _answers(session, HANDSHAKE + ping) + _answers(session, wire)
    else:
        answers = _answers(session, HANDSHAKE + ping + wire)
    assert [type(f).__name__ for f in answers] == ["Ack", "Ack", "Pong"]
    assert session.closed
    assert session.receive(ping, NOW) == []


@FAST
@given(data=st.data(), blob=st.binary(max_size=1024), handshake=st.booleans())
def test_session_any_bytes_any_split(data, blob, handshake):
    wire = (HANDSHAKE if handshake else b"") + blob
    sizes = data.draw(bs.chunkings(wire, max_chunks=8))
    session = BlipSession(BrokerState())
    pos, answers = 0, []
    for size in sizes:
        answers += _answers(session, wire[pos:pos + size])
        pos += size
    whole = _answers(BlipSession(BrokerState()), wire)
    assert answers == whole


def test_session_huge_length_closes_with_four_bytes_buffered():
    session = BlipSession(BrokerState())
    assert session.receive(b"\xff\xff\xff\xff", NOW) == []
    assert session.closed and session.decoder.buffered == 4
    assert session.receive(b"\x00" * 1024, NOW) == []
    assert session.decoder.buffered == 4


@FAST
@given(requests=st.lists(bs.client_frames(), max_size=12))
def test_session_answers_each_client_frame_at_most_once(requests):
    session = BlipSession(BrokerState())
    _answers(session, HANDSHAKE)
    answers = _answers(session, bs.stream_bytes(requests))
    assert len(answers) <= len(requests) and not session.closed
    asked = {f.correlation_id for f in requests}
    for frame in answers:
        # Every answer echoes a request's id, except a QoS1 delivery (its id is the tag).
        assert frame.correlation_id in asked or (type(frame).__name__ == "Publish" and frame.qos == 1)
