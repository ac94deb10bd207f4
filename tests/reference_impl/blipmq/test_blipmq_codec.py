"""BlipMQ codec: the document's hex samples, strictness, errors, split reads."""
import struct

import pytest

from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import (Ack, Auth, Decoder, FrameType, Hello, Nack, Ping, Poll,
                                         Pong, Publish, Subscribe)
from wirecheck.reference_impl.core.errors import Category, FrameError

from tests.helpers import decode_three_ways

# blipmq-protocol.md "Hex-Encoded Sample Frames": bytes and the fields the document states.
SAMPLES = [
    ("00 00 00 0B 01 00 00 00 00 00 00 00 01 00 01", Hello(1, 1)),
    ("00 00 00 12 02 00 00 00 00 00 00 00 02 00 07 64 65 76 2D 6B 65 79", Auth(2, "dev-key")),
    ("00 00 00 10 04 00 00 00 00 00 00 00 03 00 04 64 65 6D 6F 01", Subscribe(3, "demo", 1)),
    ("00 00 00 12 03 00 00 00 00 00 00 00 04 01 00 04 64 65 6D 6F 68 69", Publish(4, 1, "demo", b"hi")),
    ("00 00 00 11 05 00 00 00 00 00 00 00 03 00 00 00 00 00 00 00 2A", Ack(3, 42)),
]


@pytest.mark.parametrize("hexed,frame", SAMPLES, ids=[s[1].type.name for s in SAMPLES])
def test_document_samples_decode_and_encode(hexed, frame):
    data = bytes.fromhex(hexed)
    frames, error = decode_three_ways(Decoder, data)
    assert error is None
    assert frames == [frame]
    assert codec.encode(frame) == data


def test_all_samples_in_one_stream_split_every_way():
    data = b"".join(bytes.fromhex(h) for h, _ in SAMPLES)
    frames, error = decode_three_ways(Decoder, data, seed=7)
    assert error is None and frames == [f for _, f in SAMPLES]


@pytest.mark.parametrize("frame", [
    Hello(0, 0xFFFF), Auth(2**64 - 1, ""), Auth(5, "ключ"), Publish(1, 0, "t", b""),
    Publish(9, 7, "topic/ü", bytes(300)), Subscribe(1, "a", 255), Ack(1, 0), Poll(1, 2**64 - 1),
    Nack(3, 404, "unknown subscription or delivery tag"), Nack(3, 65535, ""), Ping(0), Pong(2**63),
])
def test_round_trip(frame):
    assert codec.decode_all(codec.encode(frame)) == [frame]


@pytest.mark.parametrize("length,category", [
    (0, Category.LENGTH_TOO_SMALL), (8, Category.LENGTH_TOO_SMALL),
    (codec.MAX_FRAME_SIZE + 1, Category.LENGTH_TOO_LARGE), (2**32 - 1, Category.LENGTH_TOO_LARGE),
])
def test_length_bounds_checked_from_the_prefix_alone(length, category):
    dec = Decoder()
    with pytest.raises(FrameError) as err:
        dec.feed(struct.pack(">I", length))
    assert err.value.category is category and err.value.offset == 0
    assert dec.buffered == 4   # nothing allocated for the declared body


def test_max_length_is_inclusive():
    head = struct.pack(">IBQ", codec.MAX_FRAME_SIZE, FrameType.PUBLISH, 1)
    dec = Decoder()
    assert dec.feed(head + b"\x00\x00\x01t") == []          # waiting for the body, no error
    body = b"m" * (codec.MAX_FRAME_SIZE - 9 - 4)
    (frame,) = dec.feed(body)
    assert frame.message == body


def test_configurable_limit():
    dec = Decoder(codec.BlipConfig(max_frame_size=100))
    with pytest.raises(FrameError) as err:
        dec.feed(struct.pack(">I", 101))
    assert err.value.category is Category.LENGTH_TOO_LARGE


@pytest.mark.parametrize("frame_type", [0, 10, 0x7F, 0xFF])
def test_unknown_type_offset_points_at_type_byte(frame_type):
    data = codec.encode(Ping(1)) + codec.encode_raw(frame_type, 2)
    frames, error = decode_three_ways(Decoder, data)
    assert frames == [Ping(1)]
    assert error == (Category.UNKNOWN_TYPE, 13 + 4)


def test_errors_are_sticky():
    dec = Decoder()
    with pytest.raises(FrameError):
        dec.feed(b"\x00\x00\x00\x00")
    with pytest.raises(FrameError) as again:
        dec.feed(codec.encode(Ping(1)))
    assert again.value.category is Category.LENGTH_TOO_SMALL


@pytest.mark.parametrize("frame_type,payload,category,field_offset", [
    (FrameType.HELLO, b"", Category.TRUNCATED, 0),
    (FrameType.HELLO, b"\x00\x01\x00", Category.TRAILING_BYTES, 2),
    (FrameType.AUTH, b"\x00", Category.TRUNCATED, 1),
    (FrameType.AUTH, b"\x00\x03ab", Category.TRUNCATED, 4),
    (FrameType.AUTH, b"\x00\x01ab", Category.TRAILING_BYTES, 3),
    (FrameType.AUTH, b"\x00\x02a\xff", Category.BAD_ENCODING, 3),
    (FrameType.PUBLISH, b"\x00\x00", Category.TRUNCATED, 2),
    (FrameType.PUBLISH, b"\x00\x00\x02a", Category.TRUNCATED, 4),
    (FrameType.PUBLISH, b"\x01\x00\x01\x80", Category.BAD_ENCODING, 3),
    (FrameType.SUBSCRIBE, b"\x00\x01a", Category.TRUNCATED, 3),
    (FrameType.ACK, b"\x00" * 7, Category.TRUNCATED, 7),
    (FrameType.POLL, b"\x00" * 9, Category.TRAILING_BYTES, 8),
    (FrameType.NACK, b"\x01\x90\x00\x05abc", Category.TRUNCATED, 7),
    (FrameType.NACK, b"\x01\x90\x00\x01abc", Category.TRAILING_BYTES, 5),
    (FrameType.PONG, b"x", Category.TRAILING_BYTES, 0),
])
def test_payload_errors(frame_type, payload, category, field_offset):
    data = codec.encode(Ping(7)) + codec.encode_raw(frame_type, 1, payload)
    frames, error = decode_three_ways(Decoder, data)
    assert frames == [Ping(7)]
    assert error == (category, 13 + 13 + field_offset)


def test_subscribe_ignores_trailing_bytes():
    data = codec.encode_raw(FrameType.SUBSCRIBE, 1, b"\x00\x01a\x01junk")
    assert codec.decode_all(data) == [Subscribe(1, "a", 1)]


def test_envelope_mode_yields_raw_frames_and_leaves_payload_errors_to_the_caller():
    dec = Decoder(parse=False)
    (raw,) = dec.feed(codec.encode_raw(FrameType.HELLO, 5, b"\x00"))
    assert (raw.type, raw.correlation_id, raw.payload, raw.offset) == (FrameType.HELLO, 5, b"\x00", 0)
    with pytest.raises(FrameError) as err:
        codec.parse_payload(raw)
    assert err.value.category is Category.TRUNCATED


def test_truncated_stream_at_eof():
    data = codec.encode(Ping(1)) + codec.encode(Ping(2))[:-3]
    frames, error = decode_three_ways(Decoder, data)
    assert frames == [Ping(1)] and error == (Category.TRUNCATED, 13)


def test_feed_keeps_frames_decoded_before_an_error():
    dec = Decoder()
    with pytest.raises(FrameError) as err:
        dec.feed(codec.encode(Ping(1)) + codec.encode(Pong(2)) + b"\x00\x00\x00\x01")
    assert err.value.frames == [Ping(1), Pong(2)]


def test_encode_refuses_oversized_frame():
    with pytest.raises(ValueError):
        codec.encode(Publish(1, 0, "t", bytes(codec.MAX_FRAME_SIZE)))


def test_frame_to_dict_is_json_friendly():
    d = codec.frame_to_dict(Publish(4, 1, "demo", b"\xffhi"))
    assert d == {"type": "PUBLISH", "correlation_id": 4, "qos": 1, "topic": "demo",
                 "message": None, "message_hex": "ff6869"}


@pytest.mark.parametrize("frame", [Publish(1, 300, "t", b""), Ping(2**64), Ack(1, -1), Nack(1, 70000, "")])
def test_encode_out_of_range_field_is_a_value_error(frame):
    with pytest.raises(ValueError):
        codec.encode(frame)


def test_broken_stream_buffers_nothing_more():
    dec = Decoder()
    with pytest.raises(FrameError):
        dec.feed(b"\xff\xff\xff\xff")
    for _ in range(100):
        with pytest.raises(FrameError):
            dec.feed(bytes(10_000))
    assert dec.buffered == 4
