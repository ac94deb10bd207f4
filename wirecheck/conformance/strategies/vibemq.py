"""Hypothesis strategies for VibeMQ (vibemq-protocol.rst "Framing", "Compression", "Message
Format"; SPEC_NOTES.md "VibeMQ" for the real codec's differences, the ``vibemq-1.8`` profile).

Valid input: :func:`messages` (every command type, optional fields absent or present, unicode
strings, JSON payloads; only what survives the encoding: "" reads as null, so strings are
absent or non-empty, and a header map is absent or non-empty), :func:`frames` (a message that
carries the compression flag it is sent with: none, GZip or Brotli), :func:`streams`,
:func:`bodies` (one binary message). Near-valid invalid input, each drawn as ``(bytes, expected
Category)`` for the reference codec's strictness: :func:`bad_framing` (length out of bounds,
unknown compression flag), :func:`invalid_bodies` (every message field error: truncated at a
field, bad UTF-8 in each string, payload not JSON, NaN, nesting too deep, empty id, empty
header name, trailing bytes, unknown type) and :func:`bad_compressed_bodies` (corrupt,
truncated or extended gzip and brotli data, a bad message inside good compression).
:func:`raw_body` writes a message field by field from raw bytes, independently of the codec.

The generic split-read properties (tests/reference_impl/core/test_codec_properties.py) use the registry's default
decoder (profile ``document`` framing, flags byte) and ``codec.encode`` with its defaults:
:func:`frames`, :func:`valid_streams`, :func:`stream_bytes`, :func:`invalid_frames` and
:func:`chunkings`. :class:`DecoderSpec` stands for a registry entry with a fixed profile.

Strategies only: the properties are in ``tests/reference_impl/vibemq/test_vibemq_properties.py``.
"""
from __future__ import annotations

import gzip
import io
import json
import struct
import sys
import zlib

import brotli
from hypothesis import strategies as st

from wirecheck.reference_impl.core.errors import Category
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq import compression as comp
from wirecheck.reference_impl.vibemq.constants import (DEFAULT_MAX_BODY, MIN_BODY, PROFILES, CommandType,
                                             Compression, ErrorCode)

from .reads import chunkings  # noqa: F401  (re-exported: the properties draw reads from here)

U32_MAX = 2**32 - 1
ALGORITHMS = (Compression.GZIP, Compression.BROTLI)
#: Flags the framing refuses ("Compression Flags Byte" defines 0-2).
UNKNOWN_FLAGS = st.integers(3, 0xFF)
UNKNOWN_TYPES = st.integers(0, 0xFF).filter(lambda t: t not in {int(c) for c in CommandType})

_chars = st.characters(codec="utf-8")
#: Non-empty UTF-8 text (no lone surrogates); "" would read back as null.
words = st.text(_chars, min_size=1, max_size=16)
#: A string field: absent (null) or non-empty ("Length 0 means the field is absent/null").
optional_words = st.none() | words
ids = words | st.sampled_from(("msg_123", "conn_001", "p1", "ack_123"))
#: The document's header names ("Headers"), and the compression ones.
DOCUMENT_HEADERS = ("authPassword", "clientVersion", "serverVersion", "connectionId", "priority",
                    "correlationId", "timestamp", "deliveryAttempts", "messageId", "queueName",
                    "subscriptionId", "deliveryMode", "maxQueueSize", "messageTtl",
                    "enableDeadLetterQueue", "maxRetryAttempts", "supported-compression",
                    "negotiated-compression")
header_names = st.sampled_from(DOCUMENT_HEADERS) | words
#: A header map: absent or non-empty (a count of 0 reads as null); a value may be null.
headers = st.none() | st.dictionaries(header_names, optional_words, min_size=1, max_size=4)
error_codes = st.sampled_from([str(c) for c in ErrorCode]) | words
versions = st.just(1) | st.integers(0, 0xFF)

_json_scalars = (st.none() | st.booleans() | st.integers(-2**64, 2**64)
                 | st.floats(allow_nan=False, allow_infinity=False) | st.text(_chars, max_size=12))
#: A JSON value the payload can carry (payload "stored as JSON in UTF-8").
json_values = st.recursive(_json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(_chars, max_size=8), inner, max_size=4),
                           max_leaves=10)
#: A payload: absent, or any JSON value (a JSON null reads as absent: both are None).
payloads = st.none() | json_values
command_types = st.sampled_from(list(CommandType))


# --- valid messages -----------------------------------------------------------------------------

@st.composite
def messages(draw, profile: str = "document", types=None, compression: int = Compression.NONE):
    """A message ``profile`` writes and reads back equal: the document writes errorCode and
    errorMessage in every message, the real codec only in Error, so other profiles draw them
    for Error only. ``compression`` is the flag it is to be sent with."""
    kind = draw(command_types if types is None else st.sampled_from(list(types)))
    with_errors = profile == "document" or kind == CommandType.ERROR
    return codec.Message(
        int(kind), draw(ids), draw(optional_words), draw(payloads), draw(headers),
        draw(error_codes | st.none()) if with_errors else None,
        draw(optional_words) if with_errors else None, draw(versions), compression)


def compressions(profile: str = "document") -> st.SearchStrategy:
    """A flag ``profile`` can send: protocol 1.0 frames have none."""
    if profile == "vibemq-1.0":
        return st.just(Compression.NONE)
    return st.sampled_from(list(Compression))


@st.composite
def profile_frames(draw, profile: str = "document"):
    """A message of ``profile`` with the compression flag it goes out with."""
    return draw(messages(profile, compression=draw(compressions(profile))))


@st.composite
def streams(draw, profile: str = "document", min_size: int = 0, max_size: int = 6):
    return draw(st.lists(profile_frames(profile), min_size=min_size, max_size=max_size))


def stream_bytes(message_list, profile: str = "document") -> bytes:
    """The frames of ``message_list``, each compressed as its ``compression`` says."""
    return b"".join(codec.encode(m, profile) for m in message_list)


@st.composite
def bodies(draw, profile: str = "document"):
    """One binary message (no frame)."""
    return codec.encode_body(draw(messages(profile)), profile)


# --- the generic API (tests/reference_impl/core/test_codec_properties.py) ---------------------------------------------

@st.composite
def frames(draw):
    """Any message, uncompressed, gzip or brotli (what ``codec.encode`` writes by default)."""
    return draw(profile_frames("document"))


@st.composite
def valid_streams(draw, min_size: int = 0, max_size: int = 6):
    return draw(streams("document", min_size, max_size))


# --- writing a message from raw bytes -------------------------------------------------------------

def _json(value) -> bytes:
    """Compact JSON in UTF-8, as the codec writes a payload."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _s(raw: bytes) -> bytes:
    return struct.pack(">H", len(raw)) + raw


def raw_body(version: int = 1, kind: int = int(CommandType.PING), mid: bytes = b"p1",
             queue: bytes = b"", payload: bytes = b"", header_pairs=(), error_code: bytes | None = b"",
             error_message: bytes | None = b"") -> bytes:
    """A binary message from raw field bytes ("Binary Protocol Structure"), written here
    without the codec. ``error_code`` None: the body ends after the headers (the real codec's
    form for all but Error); ``error_message`` None: it ends after the errorCode."""
    out = struct.pack(">BB", version, kind) + _s(mid) + _s(queue)
    out += struct.pack(">I", len(payload)) + payload
    out += struct.pack(">H", len(header_pairs)) + b"".join(_s(k) + _s(v) for k, v in header_pairs)
    if error_code is not None:
        out += _s(error_code)
        if error_message is not None:
            out += _s(error_message)
    return out


def frame_of(body: bytes, flag: int = Compression.NONE, profile: str = "document") -> bytes:
    """``body`` framed as it is (already compressed if ``flag`` says so)."""
    if profile == "vibemq-1.0":
        return struct.pack(">I", len(body)) + body
    return struct.pack(">IB", len(body), flag) + body


# --- near-valid invalid input ---------------------------------------------------------------------

#: Byte sequences that make any surrounding valid UTF-8 invalid.
BAD_UTF8 = (b"\xff", b"\xfe", b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xe2\x82", b"\xc3", b"\xf0\x9f\x98")
#: Payload texts the codec refuses, and why: not JSON text at all, constants JSON does not
#: have, a number no encoder can write back, a lone surrogate.
BAD_JSON = (b"{", b"[1,]", b"{'a':1}", b"tru", b"\"open", b"1 2", b"{\"a\"}", b"NaN", b"-Infinity",
            b"Infinity", b"[NaN]", b"1e400", b"{\"x\":-1e999}", b"\"\\ud800\"", b"[\"\\udfff\"]")
#: Where a string field sits, for :func:`invalid_bodies`'s bad-UTF-8 case.
STRING_FIELDS = ("id", "queue", "payload", "header name", "header value", "errorCode", "errorMessage")


def _parts(draw) -> dict:
    """Raw fields of a valid message with every field present (so any can be spoiled)."""
    enc = lambda s: s.encode("utf-8")  # noqa: E731
    pairs = [(enc(k), enc(v)) for k, v in draw(st.dictionaries(header_names, words, min_size=1,
                                                                max_size=3)).items()]
    payload = _json(draw(json_values.filter(lambda v: v is not None)))
    return {"version": draw(versions), "kind": int(draw(command_types)), "mid": enc(draw(ids)),
            "queue": enc(draw(words)), "payload": payload, "header_pairs": pairs,
            "error_code": enc(draw(error_codes)), "error_message": enc(draw(words))}


def _spoil(draw, raw: bytes) -> bytes:
    text = raw.decode("utf-8")
    cut = draw(st.integers(0, len(text)))       # between characters: nothing completes it
    return text[:cut].encode() + draw(st.sampled_from(BAD_UTF8)) + text[cut:].encode()


@st.composite
def invalid_bodies(draw, cases=None):
    """A binary message the codec refuses, and its category: ``truncated`` (cut inside a
    field: TRUNCATED), ``utf8`` (a string that is not UTF-8: BAD_ENCODING), ``json`` (a payload
    that is not JSON, or NaN, Infinity, 1e400, a lone surrogate: BAD_ENCODING), ``deep``
    (nesting past the codec's bound: BAD_VALUE), ``empty_id`` and ``empty_header_name``
    (BAD_VALUE), ``trailing`` (bytes after the message: TRAILING_BYTES), ``unknown_type``
    (UNKNOWN_TYPE). Every body is at least 2 bytes (framing refuses shorter ones)."""
    case = draw(st.sampled_from(tuple(cases or ("truncated", "utf8", "json", "deep", "empty_id",
                                                "empty_header_name", "trailing", "unknown_type"))))
    parts = _parts(draw)
    if case == "truncated":
        body = raw_body(**parts)
        tail = 4 + len(parts["error_code"]) + len(parts["error_message"])
        tolerant = len(body) - tail                     # the body may end after the headers
        cut = draw(st.integers(2, len(body) - 1).filter(lambda n: n != tolerant))
        return body[:cut], Category.TRUNCATED
    if case == "utf8":
        where = draw(st.sampled_from(STRING_FIELDS))
        if where == "payload":
            parts["payload"] = b'"' + _spoil(draw, draw(st.text(_chars, max_size=8)).encode()) + b'"'
        elif where.startswith("header"):
            k, v = parts["header_pairs"][0]
            spoilt = (_spoil(draw, k), v) if where == "header name" else (k, _spoil(draw, v))
            parts["header_pairs"][0] = spoilt
        else:
            key = {"id": "mid", "queue": "queue", "errorCode": "error_code",
                   "errorMessage": "error_message"}[where]
            parts[key] = _spoil(draw, parts[key])
        return raw_body(**parts), Category.BAD_ENCODING
    if case == "json":
        bad = draw(st.sampled_from(BAD_JSON))
        if draw(st.booleans()):
            bad = b'{"v":' + bad + b"}" if not bad.startswith(b"{") else bad
        parts["payload"] = bad
        return raw_body(**parts), Category.BAD_ENCODING
    if case == "deep":
        depth = draw(st.integers(codec.MAX_JSON_DEPTH + 1, codec.MAX_JSON_DEPTH + 40))
        opener, closer = draw(st.sampled_from(((b"[", b"]"), (b'{"a":', b"}"))))
        parts["payload"] = opener * depth + b"0" + closer * depth
        return raw_body(**parts), Category.BAD_VALUE
    if case == "empty_id":
        parts["mid"] = b""
        return raw_body(**parts), Category.BAD_VALUE
    if case == "empty_header_name":
        k, v = parts["header_pairs"][-1]
        parts["header_pairs"][-1] = (b"", v)
        return raw_body(**parts), Category.BAD_VALUE
    if case == "trailing":
        return raw_body(**parts) + draw(st.binary(min_size=1, max_size=8)), Category.TRAILING_BYTES
    parts["kind"] = draw(UNKNOWN_TYPES)
    return raw_body(**parts), Category.UNKNOWN_TYPE


@st.composite
def bad_compressed_bodies(draw, cases=None):
    """``(flag, compressed body, category)`` for a frame the codec refuses after reading its
    header: ``corrupt`` (not the algorithm's format), ``cut`` (the stream ends early), ``after``
    (bytes after a gzip member: TRAILING_BYTES; after a brotli stream: BAD_ENCODING), ``inner``
    (good compression of a bad message: the message's category), ``short`` (inflates to fewer
    than 2 bytes: TRUNCATED)."""
    case = draw(st.sampled_from(tuple(cases or ("corrupt", "cut", "after", "inner", "short"))))
    flag = draw(st.sampled_from(ALGORITHMS))
    if case == "inner":
        body, category = draw(invalid_bodies())
        return flag, comp.compress(body, flag), category
    if case == "short":
        # Brotli writes nothing in a single byte, which framing refuses first.
        plain = draw(st.binary(min_size=0 if flag == Compression.GZIP else 1, max_size=1))
        return flag, comp.compress(plain, flag), Category.TRUNCATED
    good = comp.compress(draw(bodies()), flag)
    if case == "corrupt":
        if flag == Compression.GZIP:      # a gzip member starts 1f 8b 08
            return flag, b"\x1f\x8c" + good[2:], Category.BAD_ENCODING
        return flag, b"\xff" * draw(st.integers(2, 8)) + good, Category.BAD_ENCODING
    if case == "cut":
        return flag, good[:draw(st.integers(2, len(good) - 1))], Category.BAD_ENCODING
    extra = draw(st.binary(min_size=1, max_size=8))
    if flag == Compression.GZIP:
        return flag, good + extra, Category.TRAILING_BYTES
    return flag, good + extra, Category.BAD_ENCODING


@st.composite
def bad_framing(draw, profile: str = "document"):
    """Frame headers the framing refuses: a body length below 2 (LENGTH_TOO_SMALL), above
    the default 1,048,576 (LENGTH_TOO_LARGE; up to 4 GiB), an unknown compression flag
    (UNKNOWN_TYPE). Framing errors end the stream (the real server drops the connection)."""
    head = 4 if profile == "vibemq-1.0" else 5
    cases = ("small", "large") if profile == "vibemq-1.0" else ("small", "large", "flag")
    case = draw(st.sampled_from(cases))
    if case == "small":
        n = draw(st.integers(0, MIN_BODY - 1))
        wire = struct.pack(">I", n) + bytes(head - 4) + draw(st.binary(min_size=n, max_size=n))
        return wire, Category.LENGTH_TOO_SMALL
    if case == "large":
        n = draw(st.integers(DEFAULT_MAX_BODY + 1, U32_MAX) | st.just(U32_MAX))
        return struct.pack(">I", n) + draw(st.binary(max_size=8)), Category.LENGTH_TOO_LARGE
    body = draw(bodies())
    return frame_of(body, draw(UNKNOWN_FLAGS)), Category.UNKNOWN_TYPE


@st.composite
def invalid_frames(draw, profile: str = "document"):
    """A frame the codec refuses: ``(bytes, Category)``; framing errors, message errors in a
    plain body, and (with a flags byte) bad compressed bodies."""
    choices = ["framing", "body"] + ([] if profile == "vibemq-1.0" else ["compressed"])
    case = draw(st.sampled_from(choices))
    if case == "framing":
        return draw(bad_framing(profile))
    if case == "body":
        body, category = draw(invalid_bodies())
        return frame_of(body, Compression.NONE, profile), category
    flag, body, category = draw(bad_compressed_bodies())
    return frame_of(body, flag, profile), category


# --- bombs ----------------------------------------------------------------------------------------

def bomb(flag: int, size: int, block: int = 1 << 20) -> bytes:
    """``size`` zero bytes compressed with ``flag``, built block by block so the plain
    bytes are never held at once (a decompression bomb for tests and the fuzz corpus)."""
    zeros = bytes(min(block, size))
    if flag == Compression.GZIP:
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        out = [packer.compress(zeros[:min(block, size - done)]) for done in range(0, size, block)]
        return b"".join(out) + packer.flush()
    packer = brotli.Compressor(quality=5)
    out = [packer.process(zeros[:min(block, size - done)]) for done in range(0, size, block)]
    return b"".join(out) + packer.finish()


def gzip_with_name(data: bytes, name: str = "body.bin") -> bytes:
    """A gzip member with the optional FNAME header field (what other writers may send)."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename=name, mode="wb", fileobj=buf, mtime=0) as fh:
        fh.write(data)
    return buf.getvalue()


# --- a registry stand-in --------------------------------------------------------------------------

class DecoderSpec:
    """What the invariant functions (conformance/strategies/invariants.py) need of a registry
    spec, for a VibeMQ decoder of one ``profile`` (and optional limits)."""

    id = "vibemq"

    def __init__(self, profile: str = "document", limits=None) -> None:
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}")
        self.profile = profile
        self.limits = limits

    def make_decoder(self, limits=None, origin=None):
        return codec.Decoder(limits or self.limits, profile=self.profile, origin=origin)

    def encode(self, message) -> bytes:
        if self.profile == "vibemq-1.0":
            return codec.encode(message, self.profile, Compression.NONE)
        return codec.encode(message, self.profile)

    frame_to_dict = staticmethod(codec.frame_to_dict)

    def load(self, slot: str):
        assert slot == "strategies", slot
        return sys.modules[__name__]


# --- the document's examples (facts the tests and the fuzz corpora share) --------------------

#: SPEC_NOTES.md, VibeMQ: Ping with id "p1" in the real codec's form.
PING_VECTOR = bytes.fromhex("00 00 00 0E 00 01 0A 00 02 70 31 00 00 00 00 00 00 00 00")

#: vibemq-protocol.rst "Command Descriptions" and "Exchange Examples" (name -> logical JSON).
HELLO = {"title": "Hello", "body": "World"}
DOCUMENT_EXAMPLES = {
    "Connect": {"id": "conn_123", "type": "connect",
                "headers": {"authPassword": "my-secret-password", "clientVersion": "1.0.0"}},
    "ConnectAck": {"id": "conn_123", "type": "connectAck",
                   "headers": {"serverVersion": "1.0.0", "connectionId": "srv_456"}},
    "Disconnect": {"id": "disc_123", "type": "disconnect"},
    "Ping": {"id": "ping_123", "type": "ping"},
    "Pong": {"id": "ping_123", "type": "pong"},
    "Publish": {"id": "msg_123", "type": "publish", "queue": "notifications", "payload": HELLO,
                "headers": {"priority": "high", "correlationId": "corr_456",
                            "timestamp": "2026-02-18T10:30:00Z"}},
    "PublishAck": {"id": "msg_123", "type": "publishAck",
                   "headers": {"messageId": "msg_123", "queueName": "notifications"}},
    "Subscribe": {"id": "sub_123", "type": "subscribe", "queue": "notifications"},
    "SubscribeAck": {"id": "sub_123", "type": "subscribeAck",
                     "headers": {"queueName": "notifications", "subscriptionId": "sub_123"}},
    "Unsubscribe": {"id": "unsub_123", "type": "unsubscribe", "queue": "notifications"},
    "UnsubscribeAck": {"id": "unsub_123", "type": "unsubscribeAck",
                       "headers": {"queueName": "notifications"}},
    "Deliver": {"id": "msg_123", "type": "deliver", "queue": "notifications", "payload": HELLO,
                "headers": {"priority": "high", "deliveryAttempts": "1"}},
    "Ack": {"id": "ack_123", "type": "ack", "headers": {"messageId": "msg_123"}},
    "CreateQueue": {"id": "create_123", "type": "createQueue", "queue": "my-queue",
                    "headers": {"deliveryMode": "RoundRobin", "maxQueueSize": "10000",
                                "messageTtl": "3600000"}},
    "DeleteQueue": {"id": "delete_123", "type": "deleteQueue", "queue": "my-queue"},
    "QueueInfo-request": {"id": "info_123", "type": "queueInfo", "queue": "my-queue"},
    "QueueInfo-response": {"id": "info_123", "type": "queueInfo", "queue": "my-queue",
                           "payload": {"name": "my-queue", "messageCount": 42, "subscriberCount": 3,
                                       "deliveryMode": "RoundRobin", "maxSize": 10000,
                                       "createdAt": "2026-02-18T10:00:00Z"}},
    "ListQueues-request": {"id": "list_123", "type": "listQueues"},
    "ListQueues-response": {"id": "list_123", "type": "listQueues",
                            "payload": ["queue1", "queue2", "queue3"]},
    "Error": {"id": "err_123", "type": "error", "errorCode": "AUTH_FAILED",
              "errorMessage": "Invalid username or password"},
    # "Exchange Examples"
    "exchange-connect": {"id": "conn_001", "type": "connect",
                         "headers": {"authPassword": "my-password",
                                     "supported-compression": "brotli,gzip"}},
    "exchange-connectAck": {"id": "conn_001", "type": "connectAck",
                            "headers": {"connectionId": "srv_100",
                                        "negotiated-compression": "brotli"}},
    "exchange-publish": {"id": "msg_001", "type": "publish", "queue": "notifications",
                         "payload": HELLO},
    "exchange-publishAck": {"id": "msg_001", "type": "publishAck",
                            "headers": {"messageId": "msg_001", "queueName": "notifications"}},
    "exchange-deliver": {"id": "msg_001", "type": "deliver", "queue": "notifications",
                         "payload": HELLO},
    "exchange-ack": {"id": "ack_001", "type": "ack", "headers": {"messageId": "msg_001"}},
    "exchange-ping": {"id": "ping_001", "type": "ping"},
    "exchange-pong": {"id": "ping_001", "type": "pong"},
}
