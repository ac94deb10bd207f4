"""Properties of the RabbitMQ Stream codec (rabbitmq-stream-protocol.adoc "Frame Structure",
"Types"; SPEC_NOTES.md, RabbitMQ Stream): round trip of every frame class, split-read
invariance, nothing but FrameError from any input, the right category for each near-valid
invalid frame, size bounds checked before any body is buffered, and the Osiris chunk's CRC,
entries and bounded gzip."""
import struct
import tracemalloc
import zlib
from functools import cache

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from wirecheck.conformance.strategies import rabbitmq_stream as rs
from wirecheck.conformance.strategies.invariants import (assert_same,
                                               assert_split_invariant, decode_chunked, decode_whole)
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import Category, FrameError
from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.chunk import (DEFAULT_MAX_UNCOMPRESSED, Chunk, SimpleEntry,
                                                  SubBatchEntry, build_chunk, parse_chunk)
from wirecheck.reference_impl.rabbitmq_stream.codec import RawFrame
from wirecheck.reference_impl.rabbitmq_stream.constants import Code, Compression
from wirecheck.reference_impl.rabbitmq_stream.session import SessionConfig, StreamSession
from wirecheck.reference_impl.rabbitmq_stream.state import BrokerState
from wirecheck.reference_impl.rabbitmq_stream.store import StreamStore

SPEC = registry.get("rabbitmq-stream")
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SMALL = settings(FAST, max_examples=25)
HEAD = 8            # size, key, version ("Frame Structure")


def decode(data: bytes):
    return decode_whole(data, SPEC)


def split_invariant(data: bytes, sizes):
    return assert_split_invariant(data, sizes, SPEC)


# --- round trip ---------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", rs.ALL_CLASSES, ids=lambda c: c.__name__)
@SMALL
@given(data=st.data())
def test_round_trip(cls, data):
    frame = data.draw(rs.frames([cls]))
    wire = codec.encode(frame)
    size, key, version = struct.unpack_from(">IHH", wire)
    assert size == len(wire) - 4
    assert key == frame.wire_key == cls.key | (0x8000 if cls.response else 0)
    assert version == frame.version
    assert decode(wire) == ([frame], None, None)
    raw = RawFrame(key, version, wire[HEAD:])
    assert codec.parse_frame(raw) == frame


@pytest.mark.parametrize("version", [1, 2])
@SMALL
@given(data=st.data())
def test_publish_round_trip_with_sub_batches(version, data):
    frame = data.draw(rs.publishes(version))
    frame = codec.Publish(frame.publisher_id, frame.messages + (
        codec.PublishedMessage(7, data.draw(rs.sub_batches()),
                               data.draw(rs.nullable_texts) if version == 2 else None),), version)
    (got,) = decode(codec.encode(frame)).frames
    assert got == frame and got.version == version
    assert got.record_count == frame.record_count


@pytest.mark.parametrize("version", [1, 2])
@SMALL
@given(data=st.data())
def test_deliver_round_trip_and_messages(version, data):
    frame = data.draw(rs.delivers(version))
    (got,) = decode(codec.encode(frame)).frames
    assert got == frame and got.version == version
    expected = [r for e in frame.chunk.entries() for r in e.records()]
    assert got.chunk.messages() == expected
    assert len(expected) == got.chunk.num_records


@SMALL
@given(data=st.data(), single=st.booleans(), partitions=st.booleans())
def test_route_and_partitions_without_response_bit_from_a_server(data, single, partitions):
    # RabbitMQ 3.10 answers Route and Partitions under the request key (codec.py): read as the
    # responses only by a decoder told the bytes come from a server.
    streams = tuple(data.draw(st.lists(rs.texts, min_size=1 if single else 0, max_size=3)))
    cid, code = data.draw(rs.correlation_ids), data.draw(rs.codes)
    if partitions:
        frame = codec.PartitionsResponse(cid, code, streams, response_bit=False)
    else:
        frame = codec.RouteResponse(cid, code, streams[:1] if single else streams, single,
                                    response_bit=False)
    wire = codec.encode(frame)
    assert struct.unpack_from(">H", wire, 4)[0] == frame.key
    assert codec.Decoder(origin="server").feed(wire) == [frame]


# --- split reads of large frames (the generic split-read properties are in
# tests/reference_impl/core/test_codec_properties.py) ---------------------------------------------------------------

@settings(FAST, max_examples=8)
@given(data=st.data(), size=st.integers(60_000, 150_000), fill=st.integers(0, 255))
def test_large_frames_any_split(data, size, fill):
    # Past the buffer's 64 KiB compaction threshold, so compaction happens between reads.
    small = data.draw(rs.valid_streams(max_size=3))
    big = codec.Publish(7, (codec.PublishedMessage(1, bytes([fill]) * size),))
    stream = [*small, big, *small]
    wire = rs.stream_bytes(stream)
    sizes = data.draw(rs.chunkings(wire, max_chunks=200))
    whole = decode(wire)
    assert whole == (stream, None, None)
    assert_same(whole, decode_chunked(wire, sizes, SPEC), "chunked")


@FAST
@given(data=st.data())
def test_mutated_stream(data):
    wire = bytearray(rs.stream_bytes(data.draw(rs.valid_streams(min_size=1, max_size=4))))
    for _ in range(data.draw(st.integers(1, 4))):
        wire[data.draw(st.integers(0, len(wire) - 1))] = data.draw(st.integers(0, 255))
    wire = bytes(wire)
    split_invariant(wire, data.draw(rs.chunkings(wire)))


KNOWN = sorted(codec.FRAME_CLASSES)


@FAST
@given(known=st.sampled_from(KNOWN), payload=st.binary(max_size=160) | rs.invalid_utf8(),
       origin=st.sampled_from((None, "server", "client")))
def test_parse_frame_only_frame_error(known, payload, origin):
    key, version = known
    raw = RawFrame(key, version, payload, offset=100)
    try:
        frame = codec.parse_frame(raw, None, origin)
    except FrameError as exc:
        assert exc.category in set(Category)
        assert 100 + HEAD <= exc.offset <= 100 + HEAD + len(payload)
    else:
        assert frame.key == key & 0x7FFF and frame.version == version


@FAST
@given(frame=rs.delivers(), cut=st.integers(0, 2**16))
def test_deliver_messages_only_frame_error(frame, cut):
    # A chunk whose entries are cut or garbled: messages() reports a FrameError, nothing else.
    data = frame.chunk.data[:cut % (len(frame.chunk.data) + 1)]
    broken = Chunk(0, frame.chunk.num_entries, frame.chunk.num_records, 0, 0, 0,
                   zlib.crc32(data), data)
    try:
        broken.messages()
    except FrameError as exc:
        assert exc.category in set(Category)


# --- the right category -------------------------------------------------------------------------

@FAST
@given(prefix=rs.valid_streams(max_size=3), bad=rs.bad_size_frames())
@example(prefix=[], bad=(b"\x00\x00\x00\x00", Category.LENGTH_TOO_SMALL))
@example(prefix=[], bad=(b"\x00\x00\x00\x03\x00\x17\x00", Category.LENGTH_TOO_SMALL))
@example(prefix=[], bad=(struct.pack(">I", rs.MAX_FRAME_SIZE + 1), Category.LENGTH_TOO_LARGE))
def test_bad_size_category(prefix, bad):
    wire, category = bad
    head = rs.stream_bytes(prefix)
    assert decode(head + wire) == (prefix, category, len(head))


@FAST
@given(prefix=rs.valid_streams(max_size=3), bad=rs.unknown_key_frames())
def test_unknown_key_category(prefix, bad):
    wire, category = bad
    head = rs.stream_bytes(prefix)
    assert decode(head + wire) == (prefix, category, len(head) + 4)


@FAST
@given(prefix=rs.valid_streams(max_size=3), bad=rs.unknown_version_frames())
def test_unknown_version_category(prefix, bad):
    wire, category = bad
    head = rs.stream_bytes(prefix)
    assert decode(head + wire) == (prefix, category, len(head) + 6)


@FAST
@given(prefix=rs.valid_streams(max_size=3), bad=rs.truncated_frames())
def test_truncated_body_category(prefix, bad):
    wire, category = bad
    head = rs.stream_bytes(prefix)
    # Fields are read in order: the codec runs out of bytes at the end of the frame.
    assert decode(head + wire) == (prefix, category, len(head) + len(wire))


@FAST
@given(prefix=rs.valid_streams(max_size=3), bad=rs.trailing_bytes_frames())
def test_trailing_bytes_category(prefix, bad):
    wire, category = bad
    head = rs.stream_bytes(prefix)
    result = decode(head + wire)
    assert result.frames == prefix and result.category == category
    assert len(head) + HEAD <= result.offset < len(head) + len(wire)


@FAST
@given(prefix=rs.valid_streams(max_size=3),
       bad=st.one_of(rs.bad_string_frames(), rs.bad_chunk_frames()))
def test_bad_field_category(prefix, bad):
    wire, category = bad
    head = rs.stream_bytes(prefix)
    result = decode(head + wire)
    assert result.frames == prefix and result.category == category
    assert len(head) + HEAD <= result.offset <= len(head) + len(wire)
    # The envelope itself is fine: only the body is rejected.
    raw = codec.Decoder(parse=False).feed(wire)
    assert len(raw) == 1 and raw[0].key == struct.unpack_from(">H", wire, 4)[0]


@FAST
@given(before=rs.valid_streams(max_size=3), bad=rs.invalid_frames(),
       after=rs.valid_streams(min_size=1, max_size=3))
def test_error_consumes_one_frame_and_decoding_goes_on(before, bad, after):
    # Only a size above the limit breaks the stream; any other error is about one delimited
    # frame, which is consumed (codec.py, Decoder): feeding on yields the frames after it.
    wire, category = bad
    decoder = SPEC.make_decoder()
    with pytest.raises(FrameError) as info:
        decoder.feed(rs.stream_bytes(before) + wire + rs.stream_bytes(after))
    assert info.value.frames == before and info.value.category == category
    if category is Category.LENGTH_TOO_LARGE:
        with pytest.raises(FrameError):
            decoder.feed(b"")
    else:
        assert decoder.feed(b"") == after
        decoder.eof()


def test_size_at_the_limit_is_within_bounds():
    decoder = SPEC.make_decoder()
    assert decoder.feed(struct.pack(">IHH", rs.MAX_FRAME_SIZE, 2, 1)) == []
    assert decoder.buffered == HEAD


@pytest.mark.parametrize("size", [rs.MAX_FRAME_SIZE + 1, 0xFFFFFFFF])
def test_huge_size_fails_after_four_bytes_nothing_buffered(size):
    prefix = struct.pack(">I", size)
    decoder = SPEC.make_decoder()
    for byte in prefix[:3]:
        assert decoder.feed(bytes([byte])) == []
    with pytest.raises(FrameError) as info:
        decoder.feed(prefix[3:])
    assert (info.value.category, info.value.offset) == (Category.LENGTH_TOO_LARGE, 0)
    assert decoder.buffered == 4
    with pytest.raises(FrameError) as again:     # sticky
        decoder.feed(b"\x00" * 64)
    assert again.value.category == Category.LENGTH_TOO_LARGE
    assert decoder.buffered == 4


# --- Osiris chunks ------------------------------------------------------------------------------

@FAST
@given(chunk=rs.chunks())
def test_chunk_round_trip(chunk):
    assert parse_chunk(chunk.encode()) == chunk
    bare = parse_chunk(chunk.encode(trailer=False))      # the form sent to consumers
    assert bare.data == chunk.data and bare.trailer == b""
    assert len(chunk.messages()) == chunk.num_records


@FAST
@given(data=st.data(), chunk=rs.chunks(trailer=False), base=st.integers(0, 2**20))
def test_chunk_any_flipped_data_byte_is_bad_value(data, chunk, base):
    # ChunkCrc is zlib.crc32 of the entry data (SPEC_NOTES.md); a CRC-32 catches every error
    # confined to 32 bits, so any one changed byte.
    wire = bytearray(chunk.encode())
    start = len(wire) - len(chunk.data)
    wire[start + data.draw(st.integers(0, len(chunk.data) - 1))] ^= data.draw(st.integers(1, 255))
    with pytest.raises(FrameError) as info:
        parse_chunk(bytes(wire), base)
    assert (info.value.category, info.value.offset) == (Category.BAD_VALUE, base + 32)


@SMALL
@given(frame=rs.delivers(trailer=False), xor=st.integers(1, 2**32 - 1))
def test_deliver_with_bad_crc_field_at_the_crc(frame, xor):
    wire = bytearray(codec.encode(frame))
    base = HEAD + 1 + (8 if frame.version == 2 else 0)
    struct.pack_into(">I", wire, base + 32, frame.chunk.crc ^ xor)
    assert decode(bytes(wire)) == ([], Category.BAD_VALUE, base + 32)


def test_spec_notes_crc_vector():
    # SPEC_NOTES.md, RabbitMQ Stream: data `00000006 "msg: 9"` has CRC 3486439553.
    data = bytes.fromhex("00000006") + b"msg: 9"
    assert zlib.crc32(data) == 3486439553
    chunk = build_chunk([SimpleEntry(b"msg: 9")], first_offset=9, timestamp=0)
    assert chunk.data == data and chunk.crc == 3486439553
    assert parse_chunk(chunk.encode()).messages() == [b"msg: 9"]
    deliver = codec.Deliver(1, chunk)
    assert decode(codec.encode(deliver)) == ([deliver], None, None)


@cache
def _gzip_bomb(size: int) -> bytes:
    """A gzip body holding one record of ``size`` zero bytes (a sub-batch's raw layout)."""
    co = zlib.compressobj(9, wbits=31)
    parts = [co.compress(struct.pack(">I", size))]
    block = bytes(1 << 20)
    for _ in range(size >> 20):
        parts.append(co.compress(block))
    parts.append(co.compress(bytes(size & ((1 << 20) - 1))))
    parts.append(co.flush())
    return b"".join(parts)


@pytest.mark.parametrize("declared", [100, 4096, DEFAULT_MAX_UNCOMPRESSED + 1])
def test_gzip_bomb_is_bounded(declared):
    # 256 MiB of zeros in a few hundred KiB: inflating stops after the declared size (+1), and
    # a declared size above the limit is refused before inflating anything (chunk.py).
    bomb = _gzip_bomb(256 << 20)
    entry = SubBatchEntry(Compression.GZIP, 1, declared, bomb)
    chunk = build_chunk([entry], 0, 0)
    (frame,) = decode(codec.encode(codec.Deliver(1, chunk))).frames
    tracemalloc.start()
    try:
        with pytest.raises(FrameError) as info:
            frame.chunk.messages()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.category == Category.BAD_VALUE
    assert peak < 1 << 20, f"{peak} bytes allocated while refusing the bomb"


@SMALL
@given(records=st.lists(rs.records, min_size=1, max_size=5), limit=st.integers(0, 256))
def test_gzip_declared_size_against_the_limit(records, limit):
    entry = SubBatchEntry.of(records, Compression.GZIP)
    if entry.uncompressed_size > limit:
        with pytest.raises(FrameError) as info:
            entry.records(limit)
        assert info.value.category == Category.BAD_VALUE
    else:
        assert entry.records(limit) == records


@FAST
@given(blob=st.binary(max_size=512), check_crc=st.booleans())
@example(blob=bytes.fromhex("50 00 0001 00000001") + bytes(36), check_crc=False)
def test_parse_chunk_arbitrary_bytes_only_frame_error(blob, check_crc):
    try:
        chunk = parse_chunk(blob, check_crc=check_crc)
        chunk.messages(max_uncompressed=1 << 16)
    except FrameError as exc:
        assert exc.category in set(Category)


# --- the session's side of the same inputs ------------------------------------------------------

NOW = 1_700_000_000.0
HANDSHAKE = codec.encode_many([
    codec.PeerProperties(1, {}), codec.SaslHandshake(2),
    codec.SaslAuthenticate(3, "PLAIN", b"\0guest\0guest"),
    codec.TuneResponse(rs.MAX_FRAME_SIZE, 60), codec.Open(4, "/")])


def _session():
    return StreamSession(BrokerState(StreamStore(None)), SessionConfig(), clock=lambda: NOW)


def _answers(session, wire: bytes) -> list:
    out = session.receive(wire, NOW)
    frames = []
    for piece in out:
        result = decode_whole(piece, SPEC)
        assert result.ok and len(result.frames) == 1, f"session sent {piece.hex()}: {result}"
        assert type(result.frames[0]) in rs.SERVER_CLASSES, result.frames[0]
        frames += result.frames
    return frames


def test_handshake_answers():
    answers = _answers(_session(), HANDSHAKE)
    assert [type(f).__name__ for f in answers] == [
        "PeerPropertiesResponse", "SaslHandshakeResponse", "SaslAuthenticateResponse", "Tune",
        "OpenResponse"]
    assert all(f.code == 1 for f in answers if hasattr(f, "code"))


@FAST
@given(bad=rs.invalid_frames(), split=st.booleans())
def test_session_closes_on_an_invalid_frame(bad, split):
    # An unknown key or version, or a malformed body: Close 13 (SPEC_NOTES.md); a size above
    # frame_max: Close 14 ("Response Codes": frame too large). Then the connection ends.
    wire, category = bad
    session = _session()
    answers = _answers(session, HANDSHAKE) if split else []
    answers += _answers(session, wire if split else HANDSHAKE + wire)
    assert len(answers) == 6 and isinstance(answers[-1], codec.Close), answers
    expected = 14 if category is Category.LENGTH_TOO_LARGE else 13
    assert answers[-1].code == expected and session.closed
    assert session.receive(HANDSHAKE, NOW) == []


@FAST
@given(data=st.data(), blob=st.binary(max_size=1024), handshake=st.booleans())
def test_session_any_bytes_any_split(data, blob, handshake):
    wire = (HANDSHAKE if handshake else b"") + blob
    sizes = data.draw(rs.chunkings(wire, max_chunks=8))
    session = _session()
    pos, answers = 0, []
    for size in sizes:
        answers += _answers(session, wire[pos:pos + size])
        pos += size
    assert answers == _answers(_session(), wire)


@FAST
@given(requests=st.lists(rs.client_frames(), max_size=10))
def test_session_answers_client_frames_with_server_frames(requests):
    session = _session()
    _answers(session, HANDSHAKE)
    _answers(session, rs.stream_bytes(requests))


@pytest.mark.parametrize("reference", ["r" * 256, "\u20ac" * 100])
@pytest.mark.parametrize("what", ["StoreOffset", "Publish"])
def test_session_long_reference_is_answered_not_raised(reference, what):
    session = _session()
    _answers(session, HANDSHAKE + codec.encode(codec.Create(5, "s", {})))
    if what == "StoreOffset":
        # Too long to track: not stored (StoreOffset has no answer), so QueryOffset finds none.
        wire = codec.encode_many([codec.StoreOffset(reference, "s", 1),
                                  codec.QueryOffset(7, reference, "s")])
        (answer,) = _answers(session, wire)
        assert answer == codec.QueryOffsetResponse(7, Code.NO_OFFSET, 0)
    else:
        wire = codec.encode_many([codec.DeclarePublisher(6, 0, reference, "s"),
                                  codec.Publish(0, (codec.PublishedMessage(1, b"x"),))])
        declared, error = _answers(session, wire)
        assert declared == codec.DeclarePublisherResponse(6, Code.PRECONDITION_FAILED)
        assert error == codec.PublishError(0, ((1, Code.PUBLISHER_DOES_NOT_EXIST),))
