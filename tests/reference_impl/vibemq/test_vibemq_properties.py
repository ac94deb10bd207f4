"""Properties of the VibeMQ codec (vibemq-protocol.rst "Framing", "Compression", "Message
Format"; SPEC_NOTES.md "VibeMQ"): round trip of any message with and without compression in
each profile, split-read invariance, the right category for each near-valid invalid frame (and
the stream going on after a bad message), nothing but FrameError from random bytes, from random
bytes inside a compressed frame and from mutated compressed bodies, and bounded decompression.
The registry-wide properties (tests/reference_impl/core/test_codec_properties.py) cover the default decoder once
the protocol is registered; here they run for every profile through :class:`DecoderSpec`."""
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from wirecheck.conformance.strategies import vibemq as vs
from wirecheck.conformance.strategies.invariants import (assert_extension_invariant, assert_split_invariant,
                                               decode_whole)
from wirecheck.reference_impl.core.errors import Category, FrameError
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq import compression as comp
from wirecheck.reference_impl.vibemq.codec import Message, VibeLimits
from wirecheck.reference_impl.vibemq.constants import PROFILES, CommandType, Compression

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SMALL = settings(FAST, max_examples=40)
SPECS = {p: vs.DecoderSpec(p) for p in PROFILES}
profiles = pytest.mark.parametrize("profile", PROFILES)
flagged = pytest.mark.parametrize("profile", ["document", "vibemq-1.8"])


# --- round trip -------------------------------------------------------------------------------

@profiles
@FAST
@given(data=st.data())
def test_round_trip_with_and_without_compression(profile, data):
    flag = data.draw(vs.compressions(profile))
    message = data.draw(vs.messages(profile))
    wire = codec.encode(message, profile, flag)
    head = 4 if profile == "vibemq-1.0" else 5
    assert int.from_bytes(wire[:4], "big") == len(wire) - head
    if head == 5:
        assert wire[4] == flag
    result = decode_whole(wire, SPECS[profile])
    assert result == ([message], None, None)
    assert result.frames[0].compression == flag
    body = codec.encode_body(message, profile)
    assert codec.parse_message(body) == message
    assert comp.decompress(wire[head:], flag, len(body)) == body
    assert codec.from_json(codec.to_json(message)) == message


@profiles
@FAST
@given(data=st.data())
def test_real_codec_drops_error_fields_outside_error(profile, data):
    message = data.draw(vs.messages("document"))
    (got,) = decode_whole(codec.encode(message, profile, Compression.NONE), SPECS[profile]).frames
    if profile == "document" or message.type == CommandType.ERROR:
        assert got == message
    else:
        assert got == Message(message.type, message.id, message.queue, message.payload,
                              message.headers, None, None, message.version)


@FAST
@given(vs.messages("vibemq-1.8"))
def test_real_and_document_bodies_read_alike(message):
    # A reader takes both forms: the real codec's body is the document's minus the tail.
    doc, real = codec.encode_body(message), codec.encode_body(message, "vibemq-1.8")
    assert codec.parse_message(doc) == codec.parse_message(real) == message
    if message.type != CommandType.ERROR:
        assert doc == real + bytes(4)


# --- split reads ------------------------------------------------------------------------------

@profiles
@FAST
@given(data=st.data())
def test_stream_any_split(profile, data):
    stream = data.draw(vs.streams(profile))
    wire = vs.stream_bytes(stream, profile)
    result = assert_split_invariant(wire, data.draw(vs.chunkings(wire)), SPECS[profile])
    assert result == (stream, None, None)
    assert [m.compression for m in result.frames] == [m.compression for m in stream]


@profiles
@SMALL
@given(data=st.data())
def test_stream_with_bytes_appended(profile, data):
    wire = vs.stream_bytes(data.draw(vs.streams(profile, max_size=4)), profile)
    wire = wire[:data.draw(st.integers(0, len(wire)))]
    extra = data.draw(st.binary(max_size=64))
    assert_extension_invariant(wire, extra, SPECS[profile])


# --- errors -----------------------------------------------------------------------------------

@profiles
@FAST
@given(data=st.data())
def test_invalid_frame_category_offset_and_frames_any_split(profile, data):
    spec = SPECS[profile]
    before = data.draw(vs.streams(profile, max_size=3))
    bad, category = data.draw(vs.invalid_frames(profile))
    after = data.draw(vs.streams(profile, max_size=2))
    head = vs.stream_bytes(before, profile)
    wire = head + bad + vs.stream_bytes(after, profile)
    result = assert_split_invariant(wire, data.draw(vs.chunkings(wire)), spec)
    assert result.frames == before
    assert result.category == category
    assert len(head) <= result.offset <= len(head) + len(bad)


@flagged
@FAST
@given(data=st.data())
def test_a_bad_message_does_not_end_the_stream(profile, data):
    # Bodies are cut by the frame's length: a bad one (even a bad compressed one) is refused
    # and the frames after it still decode. Framing errors, by contrast, are sticky.
    if data.draw(st.booleans()):
        body, category = data.draw(vs.invalid_bodies())
        bad = vs.frame_of(body)
    else:
        flag, body, category = data.draw(vs.bad_compressed_bodies())
        bad = vs.frame_of(body, flag)
    after = data.draw(vs.streams(profile, min_size=1, max_size=3))
    decoder = codec.Decoder(profile=profile)
    with pytest.raises(FrameError) as info:
        decoder.feed(bad + vs.stream_bytes(after, profile))
    assert info.value.category == category and info.value.offset <= len(bad)
    assert list(decoder) == after


@profiles
@SMALL
@given(data=st.data())
def test_framing_errors_are_sticky(profile, data):
    bad, category = data.draw(vs.bad_framing(profile))
    after = vs.stream_bytes(data.draw(vs.streams(profile, min_size=1, max_size=2)), profile)
    decoder = codec.Decoder(profile=profile)
    with pytest.raises(FrameError) as info:
        decoder.feed(bad)
    # At the length, or at the flags byte for an unknown flag.
    assert info.value.category == category
    assert info.value.offset == (4 if category == Category.UNKNOWN_TYPE else 0)
    with pytest.raises(FrameError):
        decoder.feed(after)


@FAST
@given(vs.invalid_bodies())
def test_invalid_bodies_parse_message_category(case):
    body, category = case
    with pytest.raises(FrameError) as info:
        codec.parse_message(body, 1000)
    assert info.value.category == category
    assert 1000 <= info.value.offset <= 1000 + len(body)


# --- nothing but FrameError -------------------------------------------------------------------

@profiles
@FAST
@given(data=st.data(), blob=st.binary(max_size=2048))
@example(data=None, blob=b"\x00\x00\x00\x02\x00\x01\x0a")
@example(data=None, blob=b"\x00\x00\x00\x02\x01\x1f\x8b")
@example(data=None, blob=b"\x00\x00\x00\x02\x02\xff\xff")
def test_random_bytes_only_frame_error(profile, data, blob):
    sizes = data.draw(vs.chunkings(blob)) if data is not None else [1]
    assert_split_invariant(blob, sizes, SPECS[profile])


@flagged
@FAST
@given(data=st.data(), flag=st.sampled_from(vs.ALGORITHMS), blob=st.binary(min_size=2, max_size=1024))
def test_random_bytes_inside_a_compressed_frame(profile, data, flag, blob):
    wire = vs.frame_of(blob, flag)
    result = assert_split_invariant(wire, data.draw(vs.chunkings(wire)), SPECS[profile])
    if not result.ok:                              # at the compressed body's first byte
        assert result.offset == 5 and len(result.frames) == 0


@FAST
@given(data=st.data(), flag=st.sampled_from(vs.ALGORITHMS))
def test_mutated_compressed_bodies(data, flag):
    message = data.draw(vs.messages())
    packed = bytearray(comp.compress(codec.encode_body(message), flag))
    for _ in range(data.draw(st.integers(1, 4))):
        packed[data.draw(st.integers(0, len(packed) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        packed = packed[:data.draw(st.integers(2, len(packed)))]
    result = assert_split_invariant(vs.frame_of(bytes(packed), flag), [7, 3, 1],
                                    vs.DecoderSpec(limits=VibeLimits(max_decompressed=1 << 16)))
    if result.ok:                                  # what decodes is a message that re-encodes
        (got,) = result.frames
        assert codec.parse_message(codec.encode_body(got)) == got


@FAST
@given(blob=st.binary(max_size=512))
def test_parse_message_random_bytes(blob):
    try:
        message = codec.parse_message(blob)
    except FrameError:
        return
    assert codec.parse_message(codec.encode_body(message)) == message


@FAST
@given(flag=st.sampled_from(vs.ALGORITHMS), blob=st.binary(max_size=512),
       limit=st.integers(0, 4096))
def test_decompress_random_bytes_bounded(flag, blob, limit):
    try:
        out = comp.decompress(blob, flag, limit)
    except FrameError:
        return
    assert len(out) <= limit


@SMALL
@given(flag=st.sampled_from(vs.ALGORITHMS), size=st.integers(0, 40_000), limit=st.integers(0, 40_000))
def test_decompress_limit_is_exact(flag, size, limit):
    packed = comp.compress(bytes(range(256)) * (size // 256) + bytes(size % 256), flag)
    if size <= limit:
        assert len(comp.decompress(packed, flag, limit)) == size
    else:
        with pytest.raises(FrameError) as info:
            comp.decompress(packed, flag, limit)
        assert info.value.category == Category.LENGTH_TOO_LARGE
