"""The VibeMQ codec on the document's examples (vibemq-protocol.rst: every JSON example of
"Command Descriptions" and "Exchange Examples", the two "Frame Example" headers), on the real
codec's vector and differences (SPEC_NOTES.md "VibeMQ": the ``vibemq-1.8`` profile; protocol 1.0
framing as ``vibemq-1.0``), on the framing's bounds (checked before the body is buffered),
compression (gzip, brotli, bombs refused without allocating their output, corrupt bodies), and
on each message field error with its own category. Every decode goes through
:func:`tests.helpers.decode_three_ways`: whole, one byte at a time and in random chunks agree."""
from __future__ import annotations

import copy
import json
import struct
import tracemalloc

import brotli
import pytest

from wirecheck.conformance.strategies.vibemq import (DOCUMENT_EXAMPLES as DOC_EXAMPLES, HELLO, PING_VECTOR,
                                          bomb, frame_of, gzip_with_name, raw_body)
from wirecheck.reference_impl.core.errors import Category, FrameError
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq import compression as comp
from wirecheck.reference_impl.vibemq.codec import Message, VibeLimits
from wirecheck.reference_impl.vibemq.constants import (DEFAULT_MAX_BODY, PROFILES, CommandType, Compression)
from tests.helpers import decode_three_ways



def decode(data: bytes, profile: str = "document", limits=None):
    """(messages, (category, offset) or None), the same whatever the reads."""
    return decode_three_ways(lambda: codec.Decoder(limits, profile=profile), data)


def ok(data: bytes, **options) -> list:
    messages, error = decode(data, **options)
    assert error is None, error
    return messages


def refused(data: bytes, **options) -> tuple:
    messages, error = decode(data, **options)
    assert error is not None, messages
    return error


def one(body: bytes) -> bytes:
    return frame_of(body)


# --- the real codec's vector (SPEC_NOTES.md) --------------------------------------------------

def test_ping_vector_decodes_and_reencodes_in_the_real_profile():
    (ping,) = ok(PING_VECTOR, profile="vibemq-1.8")
    assert ping == Message(CommandType.PING, "p1")
    assert ping.compression == Compression.NONE and ping.version == 1
    assert codec.encode(ping, "vibemq-1.8") == PING_VECTOR
    # The document profile writes the two (empty) error fields as well: 4 more bytes.
    assert codec.encode(ping) == bytes.fromhex("00 00 00 12 00") + PING_VECTOR[5:] + bytes(4)
    assert ok(codec.encode(ping)) == [ping]


def test_ping_vector_in_protocol_1_0_framing():
    # "Protocol Versions": 1.0 had no compression flags byte.
    v10 = PING_VECTOR[:4] + PING_VECTOR[5:]
    (ping,) = ok(v10, profile="vibemq-1.0")
    assert ping == Message(CommandType.PING, "p1")
    assert codec.encode(ping, "vibemq-1.0") == v10
    with pytest.raises(ValueError):
        codec.encode(ping, "vibemq-1.0", Compression.GZIP)
    # A 1.1 frame read with 1.0 framing is misread (its flags byte taken for the version).
    messages, _ = decode(PING_VECTOR, profile="vibemq-1.0")
    assert ping not in messages


# --- the document's JSON examples -------------------------------------------------------------

def _expected_body(example: dict, profile: str) -> bytes:
    """The example's binary message written field by field from "Binary Protocol Structure"
    (not by the codec)."""
    enc = lambda s: (s or "").encode()  # noqa: E731
    payload = example.get("payload")
    kind = int(codec.TYPE_BY_NAME[example["type"]])
    errors = profile == "document" or kind == CommandType.ERROR
    return raw_body(1, kind, enc(example["id"]), enc(example.get("queue")),
                    b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode(),
                    [(enc(k), enc(v)) for k, v in (example.get("headers") or {}).items()],
                    enc(example.get("errorCode")) if errors else None,
                    enc(example.get("errorMessage")) if errors else None)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", list(DOC_EXAMPLES))
def test_document_json_examples_round_trip(name, profile):
    example = copy.deepcopy(DOC_EXAMPLES[name])
    message = codec.from_json(example)
    wire = codec.encode(message, profile)
    body = _expected_body(example, profile)
    assert wire == frame_of(body, Compression.NONE, profile)
    (decoded,) = ok(wire, profile=profile)
    assert decoded == message
    assert codec.to_json(decoded) == {"version": 1, **example}
    assert codec.from_json(codec.to_json(decoded)) == message
    assert codec.parse_message(body) == message


@pytest.mark.parametrize("flag", [Compression.GZIP, Compression.BROTLI])
def test_document_examples_in_one_compressed_stream(flag):
    messages = [codec.from_json(e) for e in DOC_EXAMPLES.values()]
    wire = b"".join(codec.encode(m, compression=flag if i % 2 else Compression.NONE)
                    for i, m in enumerate(messages))
    decoded = ok(wire)
    assert decoded == messages
    assert [m.compression for m in decoded] == [flag if i % 2 else 0 for i in range(len(messages))]


def test_logical_structure_with_explicit_nulls():
    # "Logical Structure": errorCode/errorMessage null; the example's "{...}" placeholders
    # are filled with the Publish example's values.
    logical = {"version": 1, "id": "msg_123", "type": "publish", "queue": "notifications",
               "payload": HELLO, "headers": {"priority": "high"}, "errorCode": None,
               "errorMessage": None}
    message = codec.from_json(logical)
    (decoded,) = ok(codec.encode(message))
    assert codec.to_json(decoded) == {k: v for k, v in logical.items() if v is not None}


def test_frame_example_headers():
    # "Frame Example (no compression)": body length 90 (0x5A), flags 0, body at bytes 5-94.
    message = Message(CommandType.PUBLISH, "msg_123", "notifications", None, None)
    base = len(codec.encode_body(message))
    message.payload = "x" * (90 - base - 2)          # a JSON string: 2 quotes
    wire = codec.encode(message)
    assert wire[:5] == bytes.fromhex("00 00 00 5A 00") and len(wire) == 95
    assert ok(wire) == [message]
    # "Frame Example (Brotli)": compressed length 44 (0x2C), flags 2, body at bytes 5-48.
    # A payload string grown one letter at a time until brotli writes exactly 44 bytes.
    found = None
    for k in range(1, 80):
        text = "".join(chr(97 + (i * 7) % 26) for i in range(k))
        candidate = Message(CommandType.PUBLISH, "msg_1", "notifications", text)
        if len(comp.compress(codec.encode_body(candidate), Compression.BROTLI)) == 44:
            found = candidate
            break
    assert found is not None
    wire = codec.encode(found, compression=Compression.BROTLI)
    assert wire[:5] == bytes.fromhex("00 00 00 2C 02") and len(wire) == 49
    decoder = codec.Decoder()
    assert decoder.feed(wire[:48]) == []             # bytes 5-48 are the body: one short
    (got,) = decoder.feed(wire[48:])
    assert got == found and got.compression == Compression.BROTLI
    assert ok(wire) == [found]


# --- framing bounds ---------------------------------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("length", [0, 1])
def test_body_shorter_than_two_is_refused(profile, length):
    head = struct.pack(">I", length)
    decoder = codec.Decoder(profile=profile)
    with pytest.raises(FrameError) as info:
        decoder.feed(head)                           # the 4 length bytes are enough
    assert (info.value.category, info.value.offset) == (Category.LENGTH_TOO_SMALL, 0)
    wire = one(raw_body()) + head + b"\x00" * 5
    if profile == "vibemq-1.0":
        wire = codec.encode(Message(CommandType.PING, "p1"), profile) + head + b"\x00" * 5
    messages, error = decode(wire, profile=profile)
    assert len(messages) == 1 and error == (Category.LENGTH_TOO_SMALL, len(wire) - 9)


def test_length_above_the_maximum_is_refused_before_the_body():
    decoder = codec.Decoder()
    with pytest.raises(FrameError) as info:
        decoder.feed(struct.pack(">I", DEFAULT_MAX_BODY + 1))
    assert info.value.category == Category.LENGTH_TOO_LARGE and info.value.offset == 0
    # Sticky: the stream cannot be cut any further.
    with pytest.raises(FrameError):
        decoder.feed(b"\x00" * 10)


def test_four_gib_length_refused_with_five_bytes_fed():
    tracemalloc.start()
    try:
        decoder = codec.Decoder()
        with pytest.raises(FrameError) as info:
            decoder.feed(b"\xff\xff\xff\xff\x00")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.category == Category.LENGTH_TOO_LARGE
    assert decoder.buffered <= 5 and peak < 1 << 20
    assert refused(b"\xff\xff\xff\xff\x00") == (Category.LENGTH_TOO_LARGE, 0)


def test_length_of_exactly_the_maximum_is_accepted():
    message = Message(CommandType.PUBLISH, "big", "q")
    base = len(codec.encode_body(message))
    message.payload = "a" * (DEFAULT_MAX_BODY - base - 2)
    wire = codec.encode(message)
    assert struct.unpack_from(">I", wire)[0] == DEFAULT_MAX_BODY
    assert codec.Decoder().feed(wire) == [message]
    # One byte more: refused as soon as the length is there.
    message.payload += "a"
    with pytest.raises(FrameError) as info:
        codec.Decoder().feed(codec.encode(message)[:4])
    assert info.value.category == Category.LENGTH_TOO_LARGE


def test_limits_are_configurable_and_the_bound_is_on_the_compressed_length():
    message = Message(CommandType.PUBLISH, "id", "q", "z" * 5000)
    plain, packed = codec.encode(message), codec.encode(message, compression=Compression.GZIP)
    limits = VibeLimits(max_frame_size=1000)
    assert len(packed) - 5 <= 1000 < len(plain) - 5
    assert refused(plain, limits=limits) == (Category.LENGTH_TOO_LARGE, 0)
    assert ok(packed, limits=limits) == [message]          # inflates past max_frame_size: fine


def test_incomplete_frame_is_need_more_data_then_truncated_at_eof():
    wire = codec.encode(codec.from_json(DOC_EXAMPLES["Publish"]))
    decoder = codec.Decoder()
    for i in range(len(wire) - 1):
        assert decoder.feed(wire[i:i + 1]) == []
    with pytest.raises(FrameError) as info:
        decoder.eof()
    assert (info.value.category, info.value.offset) == (Category.TRUNCATED, 0)
    assert refused(wire[:-1]) == (Category.TRUNCATED, 0)


@pytest.mark.parametrize("flag", [0x03, 0x04, 0x80, 0xFF])
def test_unknown_compression_flag_ends_the_stream(flag):
    good = codec.encode(Message(CommandType.PING, "p1"))
    wire = good + frame_of(raw_body(), flag) + good
    messages, error = decode(wire)
    assert messages == [Message(CommandType.PING, "p1")]
    assert error == (Category.UNKNOWN_TYPE, len(good) + 4)
    decoder = codec.Decoder()
    with pytest.raises(FrameError):
        decoder.feed(wire)
    with pytest.raises(FrameError):                  # sticky: the next frame never comes out
        decoder.feed(good)


# --- compression ------------------------------------------------------------------------------

@pytest.mark.parametrize("flag", [Compression.GZIP, Compression.BROTLI])
@pytest.mark.parametrize("profile", ["document", "vibemq-1.8"])
def test_compressed_frames(flag, profile):
    message = codec.from_json(DOC_EXAMPLES["QueueInfo-response"])
    wire = codec.encode(message, profile, flag)
    assert wire[4] == flag
    body = wire[5:]
    assert comp.decompress(body, flag, 1 << 20) == codec.encode_body(message, profile)
    (got,) = ok(wire, profile=profile)
    assert got == message and got.compression == flag
    assert codec.frame_to_dict(got)["compression"] == flag
    assert codec.encode(got, profile) == wire        # sent back the way it came


def test_gzip_member_with_optional_header_fields():
    body = codec.encode_body(codec.from_json(DOC_EXAMPLES["Deliver"]))
    packed = gzip_with_name(body)
    assert packed[3] & 0x08                          # FNAME set
    (got,) = ok(frame_of(packed, Compression.GZIP))
    assert got == codec.from_json(DOC_EXAMPLES["Deliver"])


def _peak(fn):
    tracemalloc.start()
    try:
        try:
            fn()
        except FrameError as exc:
            error = exc
        else:
            error = None
        return error, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


BOMB = 10 * 1024 * 1024
SMALL_LIMITS = VibeLimits(max_decompressed=1024 * 1024)


@pytest.mark.parametrize("flag", [Compression.GZIP, Compression.BROTLI])
def test_decompression_bombs_refused_without_allocating_the_output(flag):
    packed = bomb(flag, BOMB)
    if flag == Compression.GZIP:
        assert 8 * 1024 < len(packed) < 12 * 1024     # a 10 MiB bomb in a ~10 KiB frame
    wire = frame_of(packed, flag)
    error, peak = _peak(lambda: codec.Decoder(SMALL_LIMITS).feed(wire))
    assert error is not None and error.category == Category.LENGTH_TOO_LARGE
    assert error.offset == 5
    assert peak < 4 * 1024 * 1024, f"peak {peak} bytes for a {BOMB}-byte bomb"
    assert refused(wire, limits=SMALL_LIMITS) == (Category.LENGTH_TOO_LARGE, 5)


@pytest.mark.parametrize("flag", [Compression.GZIP, Compression.BROTLI])
def test_default_limit_refuses_a_bomb_past_64_mib(flag):
    # 256 MiB of zeros: about 255 KiB of gzip (under the 1 MiB frame bound), 405 bytes of
    # brotli. What is held is bounded by the 64 MiB limit (zlib's output buffer may be
    # resized once: up to about twice the limit), never by the bomb.
    packed = bomb(flag, 256 * 1024 * 1024)
    assert len(packed) < DEFAULT_MAX_BODY
    error, peak = _peak(lambda: codec.Decoder().feed(frame_of(packed, flag)))
    assert error is not None and error.category == Category.LENGTH_TOO_LARGE
    assert peak < 160 * 1024 * 1024, f"peak {peak} bytes"


@pytest.mark.parametrize("flag", [Compression.GZIP, Compression.BROTLI])
def test_inflated_size_exactly_at_the_limit(flag):
    body = raw_body(payload=b'"' + b"y" * 1000 + b'"')
    wire = frame_of(comp.compress(body, flag), flag)
    assert ok(wire, limits=VibeLimits(max_decompressed=len(body)))[0].payload == "y" * 1000
    assert refused(wire, limits=VibeLimits(max_decompressed=len(body) - 1)) == \
        (Category.LENGTH_TOO_LARGE, 5)


def _after(flag_body: bytes, flag: int) -> tuple:
    """Decode a bad compressed frame between two good ones: the frame is refused, the
    stream goes on (message errors are not sticky)."""
    good = codec.encode(Message(CommandType.PING, "p1"))
    wire = good + frame_of(flag_body, flag) + good
    decoder = codec.Decoder()
    with pytest.raises(FrameError) as info:
        decoder.feed(wire)
    assert info.value.frames == [Message(CommandType.PING, "p1")]
    assert list(decoder) == [Message(CommandType.PING, "p1")]
    messages, error = decode(wire)
    assert messages == [Message(CommandType.PING, "p1")]
    return error[0], error[1] - len(good)


BODY = codec.encode_body(codec.from_json(DOC_EXAMPLES["Publish"]))
GZ, BR = comp.compress(BODY, Compression.GZIP), comp.compress(BODY, Compression.BROTLI)


@pytest.mark.parametrize("name, flag, data, category", [
    ("gzip-bad-magic", 1, b"\x1f\x8c" + GZ[2:], Category.BAD_ENCODING),
    ("gzip-bad-crc", 1, GZ[:-8] + bytes([GZ[-8] ^ 1]) + GZ[-7:], Category.BAD_ENCODING),
    ("gzip-bad-size", 1, GZ[:-4] + bytes([GZ[-4] ^ 1]) + GZ[-3:], Category.BAD_ENCODING),
    ("gzip-truncated", 1, GZ[:-1], Category.BAD_ENCODING),
    ("gzip-header-only", 1, GZ[:10], Category.BAD_ENCODING),
    ("gzip-then-garbage", 1, GZ + b"\x00", Category.TRAILING_BYTES),
    ("gzip-two-members", 1, GZ + GZ, Category.TRAILING_BYTES),
    ("gzip-plain-bytes", 1, BODY, Category.BAD_ENCODING),
    ("brotli-truncated", 2, BR[:-1], Category.BAD_ENCODING),
    ("brotli-half", 2, BR[:len(BR) // 2], Category.BAD_ENCODING),
    ("brotli-then-garbage", 2, BR + b"junk", Category.BAD_ENCODING),
    ("brotli-gzip-data", 2, GZ, Category.BAD_ENCODING),
    ("gzip-brotli-data", 1, BR, Category.BAD_ENCODING),
    ("gzip-empty-message", 1, comp.compress(b"", 1), Category.TRUNCATED),
    ("brotli-one-byte-message", 2, comp.compress(b"\x01", 2), Category.TRUNCATED),
    ("gzip-bad-message", 1, comp.compress(raw_body(kind=77), 1), Category.UNKNOWN_TYPE),
    ("brotli-bad-message", 2, comp.compress(raw_body(mid=b""), 2), Category.BAD_VALUE),
])
def test_corrupt_or_truncated_compressed_bodies(name, flag, data, category):
    # The error sits at the compressed body's first byte (5 past the frame's start): a
    # position inside the inflated bytes is not a stream position.
    assert _after(data, flag) == (category, 5)


# --- message field errors ---------------------------------------------------------------------

FULL = dict(version=1, kind=int(CommandType.PUBLISH), mid=b"msg_123", queue=b"notifications",
            payload=b'{"title":"Hello"}', header_pairs=[(b"priority", b"high"), (b"k", b"v")],
            error_code=b"E1", error_message=b"boom")
FULL_BODY = raw_body(**FULL)
#: Offsets in FULL_BODY: version 0, type 1, id 2, queue 11, payload 26, header count 47,
#: first header name 49 and value 59, errorCode 71, errorMessage 75.
TOLERANT_END = 71          # the body may end after the headers


def test_full_body_layout():
    assert len(FULL_BODY) == 81
    assert len(raw_body(**dict(FULL, error_code=None))) == TOLERANT_END
    message = codec.parse_message(FULL_BODY)
    assert message == Message(CommandType.PUBLISH, "msg_123", "notifications", {"title": "Hello"},
                              {"priority": "high", "k": "v"}, "E1", "boom")
    assert codec.encode_body(message) == FULL_BODY


@pytest.mark.parametrize("cut", [n for n in range(2, len(FULL_BODY)) if n != TOLERANT_END])
def test_body_truncated_at_each_field(cut):
    body = FULL_BODY[:cut]
    with pytest.raises(FrameError) as info:
        codec.parse_message(body, 100)
    assert (info.value.category, info.value.offset) == (Category.TRUNCATED, 100 + cut)
    assert _message_error(body) == (Category.TRUNCATED, 5 + cut)


def _message_error(body: bytes) -> tuple:
    """A plain frame of ``body`` between two good ones: refused, the stream goes on."""
    good = codec.encode(Message(CommandType.PONG, "p"))
    messages, error = decode(good + one(body) + good)
    assert messages == [Message(CommandType.PONG, "p")]
    decoder = codec.Decoder()
    with pytest.raises(FrameError):
        decoder.feed(good + one(body) + good)
    assert list(decoder) == [Message(CommandType.PONG, "p")]
    return error[0], error[1] - len(good)


@pytest.mark.parametrize("field, start", [
    ("mid", 2), ("queue", 11), ("payload", 26), ("name", 49), ("value", 59), ("error_code", 71),
    ("error_message", 75)])
@pytest.mark.parametrize("bad", [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x82"])
def test_bad_utf8_in_each_string(field, start, bad):
    parts = dict(FULL, header_pairs=list(FULL["header_pairs"]))
    if field in ("name", "value"):
        k, v = parts["header_pairs"][0]
        parts["header_pairs"][0] = (k + bad, v) if field == "name" else (k, v + bad)
    elif field == "payload":
        parts["payload"] = b'"' + bad + b'"'
    else:
        parts[field] = parts[field] + bad
    body = raw_body(**parts)
    category, offset = _message_error(body)
    assert category == Category.BAD_ENCODING
    # The offset is the string's first byte (past its length field).
    length_field = 4 if field == "payload" else 2
    assert offset == 5 + start + length_field


#: Where raw_body()'s payload text starts: version, type, id "p1" (2 + 2), empty queue (2),
#: payload length (4).
PAYLOAD_AT = 12


@pytest.mark.parametrize("payload", [b"{", b"[1,]", b"{'a': 1}", b"tru", b'"open', b"1 2",
                                     b'{"a"}', b"\x00", b"[1]]"])
def test_invalid_json_payload(payload):
    assert _message_error(raw_body(payload=payload)) == (Category.BAD_ENCODING, 5 + PAYLOAD_AT)


@pytest.mark.parametrize("payload", [b"NaN", b"Infinity", b"-Infinity", b"[1, NaN]",
                                     b'{"x": Infinity}', b"1e400", b"-1e999"])
def test_nan_infinity_and_out_of_range_numbers(payload):
    # None of these can be written back as JSON.
    assert _message_error(raw_body(payload=payload)) == (Category.BAD_ENCODING, 5 + PAYLOAD_AT)


@pytest.mark.parametrize("payload", [b'"\\ud800"', b'["a", "\\udfff"]', b'{"\\udbff": 1}'])
def test_lone_surrogate_escape(payload):
    assert _message_error(raw_body(payload=payload)) == (Category.BAD_ENCODING, 5 + PAYLOAD_AT)


def test_surrogate_pair_escape_is_fine():
    (got,) = ok(one(raw_body(payload=b'"\\ud83d\\ude00"')))
    assert got.payload == "\U0001F600"


def test_nesting_bound():
    depth = codec.MAX_JSON_DEPTH
    (got,) = ok(one(raw_body(payload=b"[" * depth + b"]" * depth)))
    assert got.payload is not None
    deeper = b"[" * (depth + 1) + b"]" * (depth + 1)
    assert _message_error(raw_body(payload=deeper)) == (Category.BAD_VALUE, 5 + PAYLOAD_AT)
    # Brackets inside strings do not count.
    (got,) = ok(one(raw_body(payload=b'"' + b"[" * (depth + 10) + b'"')))
    assert got.payload == "[" * (depth + 10)


def test_empty_id():
    assert _message_error(raw_body(mid=b"")) == (Category.BAD_VALUE, 5 + 2)


def test_empty_header_name():
    body = raw_body(header_pairs=[(b"ok", b"1"), (b"", b"v")])
    category, _ = _message_error(body)
    assert category == Category.BAD_VALUE


@pytest.mark.parametrize("extra", [b"\x00", b"\x00\x00\x00", b"junk!"])
def test_trailing_bytes(extra):
    body = raw_body()
    assert _message_error(body + extra) == (Category.TRAILING_BYTES, 5 + len(body))


@pytest.mark.parametrize("kind", [3, 9, 12, 27, 44, 98, 100, 255])
def test_unknown_command_type(kind):
    assert _message_error(raw_body(kind=kind)) == (Category.UNKNOWN_TYPE, 5 + 1)


def test_every_command_type_is_known():
    for kind in CommandType:
        (got,) = ok(one(raw_body(kind=int(kind))))
        assert got.type == kind and got.type_name == codec.TYPE_NAMES[kind]


# --- the real codec's differences (SPEC_NOTES.md) -----------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
def test_tolerant_read_body_ends_after_headers(profile):
    body = raw_body(kind=int(CommandType.PUBLISH), mid=b"m", queue=b"q", payload=b"[1]",
                    header_pairs=[(b"a", b"b")], error_code=None)
    (got,) = ok(frame_of(body, Compression.NONE, profile), profile=profile)
    assert got == Message(CommandType.PUBLISH, "m", "q", [1], {"a": "b"})
    assert got.error_code is None and got.error_message is None
    # An Error too: the real codec writes the fields, but a reader does not insist.
    body = raw_body(kind=int(CommandType.ERROR), mid=b"e", error_code=None)
    (got,) = ok(frame_of(body, Compression.NONE, profile), profile=profile)
    assert got == Message(CommandType.ERROR, "e")
    # errorCode without errorMessage is a truncated body.
    body = raw_body(kind=int(CommandType.ERROR), mid=b"e", error_code=b"X", error_message=None)
    assert refused(frame_of(body, Compression.NONE, profile), profile=profile)[0] == Category.TRUNCATED


def test_document_writes_error_fields_always_the_real_codec_only_in_error():
    publish = Message(CommandType.PUBLISH, "m", "q", None, None, "CODE", "text")
    doc, real = codec.encode_body(publish), codec.encode_body(publish, "vibemq-1.8")
    assert doc == real + b"\x00\x04CODE\x00\x04text"
    assert codec.parse_message(doc) == publish
    assert codec.parse_message(real) == Message(CommandType.PUBLISH, "m", "q")
    assert codec.encode_body(publish, "vibemq-1.0") == real
    error = Message(CommandType.ERROR, "e", None, None, None, "AUTH_FAILED", "no")
    assert codec.encode_body(error) == codec.encode_body(error, "vibemq-1.8") \
        == codec.encode_body(error, "vibemq-1.0")
    assert codec.encode_body(error).endswith(b"\x00\x0bAUTH_FAILED\x00\x02no")
    # An Error without error fields: the real codec still writes two empty strings.
    assert codec.encode_body(Message(CommandType.ERROR, "e"), "vibemq-1.8").endswith(bytes(4))


@pytest.mark.parametrize("profile", PROFILES)
def test_empty_string_and_null_both_read_as_none(profile):
    for value in ("", None):
        message = Message(CommandType.ERROR, "e", value, None, {"h": value}, value, value)
        (got,) = ok(codec.encode(message, profile), profile=profile)
        assert got == Message(CommandType.ERROR, "e", None, None, {"h": None}, None, None)
        as_json = codec.from_json({"id": "e", "type": "error", "queue": value, "errorCode": value})
        assert ok(codec.encode(as_json, profile), profile=profile)[0].queue is None
    # On the wire both are a zero length.
    assert codec.encode_body(Message(CommandType.PING, "p", "")) == \
        codec.encode_body(Message(CommandType.PING, "p", None))


@pytest.mark.parametrize("profile", PROFILES)
def test_header_count_zero_reads_as_none(profile):
    (got,) = ok(codec.encode(Message(CommandType.PUBLISH, "p", headers={}), profile), profile=profile)
    assert got.headers is None
    assert codec.to_json(got) == {"version": 1, "id": "p", "type": "publish"}


def test_json_null_payload_reads_as_absent():
    (got,) = ok(one(raw_body(payload=b"null")))
    assert got.payload is None


def test_version_byte_is_kept():
    (got,) = ok(one(raw_body(version=7)))
    assert got.version == 7 and codec.encode(got) == one(raw_body(version=7))


def test_unicode_fields_round_trip():
    message = Message(CommandType.DELIVER, "ид-✓", "очередь/🐇", {"ключ": ["值", 1.5, None]},
                      {"名前": "значение"})
    (got,) = ok(codec.encode(message, compression=Compression.BROTLI))
    assert got == message


def test_encoder_refuses_what_the_wire_cannot_carry():
    with pytest.raises(ValueError):
        codec.encode_body(Message(CommandType.PING, ""))
    with pytest.raises(ValueError):
        codec.encode_body(Message(CommandType.PING, "p", "q" * 70000))
    with pytest.raises(ValueError):
        codec.encode_body(Message(CommandType.PING, "p", headers={"": "v"}))
    with pytest.raises(ValueError):
        codec.encode_body(Message(CommandType.PUBLISH, "p", payload=float("nan")))
    with pytest.raises(ValueError):
        comp.compress(b"x", 7)


def test_decompress_unknown_algorithm_is_a_frame_error():
    with pytest.raises(FrameError) as info:
        comp.decompress(b"xx", 9, 100, 3)
    assert (info.value.category, info.value.offset) == (Category.UNKNOWN_TYPE, 3)


def test_brotli_stream_in_pieces_through_the_decoder():
    # Bytes of a compressed frame arriving one at a time change nothing (decode_three_ways),
    # and a large compressible body crosses the buffer's compaction threshold.
    message = Message(CommandType.DELIVER, "d", "q", ["row %d" % i for i in range(20000)])
    wire = b"".join(codec.encode(message, compression=f) for f in (1, 2, 0))
    assert len(wire) > 64 * 1024
    got = ok(wire)
    assert got == [message] * 3 and [m.compression for m in got] == [1, 2, 0]
    assert brotli.decompress(codec.encode(message, compression=2)[5:]) == codec.encode_body(message)
