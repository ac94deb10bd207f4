"""Hypothesis strategies for BlipMQ frames (blipmq-protocol.md "Frame Layout", "Payload Formats").

Valid input: :func:`frames` (any of the nine typed frames with in-range fields),
:func:`client_frames`, :func:`valid_streams`. Near-valid invalid input, each drawn as
``(bytes, expected Category)`` for a decoder with the reference codec's strictness
(SPEC_NOTES.md): :func:`bad_length_frames`, :func:`unknown_type_frames`,
:func:`bad_payload_frames`. :func:`chunkings` draws how a byte string is split into reads.

Strategies only: the properties are in ``tests/reference_impl/blipmq/test_blipmq_properties.py`` and the invariant
functions they share with the fuzzers in :mod:`wirecheck.conformance.strategies.invariants`.
"""
from __future__ import annotations

import struct

from hypothesis import strategies as st

from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import (MAX_FRAME_SIZE, MIN_FRAME_LENGTH, Ack, Auth, FrameType,
                                         Hello, Nack, NackCode, Ping, Poll, Pong, Publish, Subscribe)
from wirecheck.reference_impl.core.errors import Category

from .reads import chunkings  # noqa: F401  (re-exported: the properties draw reads from here)

U16_MAX = 2**16 - 1
U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1

correlation_ids = st.integers(0, U64_MAX)
u64s = st.integers(0, U64_MAX)
qos_values = st.sampled_from((0, 1))
#: UTF-8 encodable text (no lone surrogates); short, so a stream stays small.
texts = st.text(st.characters(codec="utf-8"), max_size=24)
topics = st.text(st.characters(codec="utf-8"), min_size=1, max_size=24)
messages = st.binary(max_size=64)

#: Byte sequences that make any surrounding valid UTF-8 invalid: an invalid byte, a lone
#: continuation byte, overlong, surrogate, past U+10FFFF, a cut multi-byte sequence. Valid
#: UTF-8 never starts with a continuation byte, so what follows cannot complete them.
_BAD_UTF8 = (b"\xff", b"\xfe", b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xed\xa0\x80",
             b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xe2\x82", b"\xc3", b"\xf0\x9f\x98")


@st.composite
def invalid_utf8(draw) -> bytes:
    """Bytes that are not valid UTF-8 (built, not filtered)."""
    head = draw(texts).encode()
    tail = draw(texts).encode()
    return head + draw(st.sampled_from(_BAD_UTF8)) + tail


# --- valid frames -------------------------------------------------------------------------------

FRAME_STRATEGIES: dict[FrameType, st.SearchStrategy] = {
    FrameType.HELLO: st.builds(Hello, correlation_ids, st.integers(0, U16_MAX)),
    FrameType.AUTH: st.builds(Auth, correlation_ids, texts),
    FrameType.PUBLISH: st.builds(Publish, correlation_ids, qos_values, topics, messages),
    FrameType.SUBSCRIBE: st.builds(Subscribe, correlation_ids, topics, qos_values),
    FrameType.ACK: st.builds(Ack, correlation_ids, u64s),
    FrameType.NACK: st.builds(Nack, correlation_ids,
                              st.sampled_from([int(c) for c in NackCode]) | st.integers(0, U16_MAX),
                              texts),
    FrameType.PING: st.builds(Ping, correlation_ids),
    FrameType.PONG: st.builds(Pong, correlation_ids),
    FrameType.POLL: st.builds(Poll, correlation_ids, u64s),
}

CLIENT_TYPES = (FrameType.HELLO, FrameType.AUTH, FrameType.PUBLISH, FrameType.SUBSCRIBE,
                FrameType.ACK, FrameType.PING, FrameType.POLL)


@st.composite
def frames(draw, types=None):
    """Any valid typed frame (of ``types``, default all nine)."""
    kinds = tuple(FrameType) if types is None else tuple(types)
    return draw(st.one_of([FRAME_STRATEGIES[t] for t in kinds]))


@st.composite
def client_frames(draw):
    """A valid frame of a type a client sends ("Frame Types", Direction column)."""
    return draw(frames(CLIENT_TYPES))


@st.composite
def valid_streams(draw, min_size: int = 0, max_size: int = 8):
    """A list of valid frames; ``b"".join(map(codec.encode, ...))`` is their stream."""
    return draw(st.lists(frames(), min_size=min_size, max_size=max_size))


def stream_bytes(frame_list) -> bytes:
    return b"".join(codec.encode(f) for f in frame_list)


# --- near-valid invalid frames ------------------------------------------------------------------

@st.composite
def bad_length_frames(draw):
    """A length prefix out of bounds ("Frame Layout": 9 <= length <= 16 MiB) and whatever
    follows it: ``(bytes, LENGTH_TOO_SMALL | LENGTH_TOO_LARGE)``, detected at the prefix."""
    if draw(st.booleans()):
        length = draw(st.integers(0, MIN_FRAME_LENGTH - 1))
        category = Category.LENGTH_TOO_SMALL
    else:
        length = draw(st.sampled_from((MAX_FRAME_SIZE + 1, U32_MAX))
                      | st.integers(MAX_FRAME_SIZE + 1, U32_MAX))
        category = Category.LENGTH_TOO_LARGE
    tail = draw(st.binary(max_size=32))
    return struct.pack(">I", length) + tail, category


UNKNOWN_TYPE_VALUES = tuple(t for t in range(256) if t not in {int(k) for k in FrameType})


@st.composite
def unknown_type_frames(draw):
    """A well-formed envelope whose type byte is not in "Frame Types": ``(bytes, UNKNOWN_TYPE)``."""
    type_byte = draw(st.sampled_from(UNKNOWN_TYPE_VALUES))
    payload = draw(st.binary(max_size=32))
    return codec.encode_raw(type_byte, draw(correlation_ids), payload), Category.UNKNOWN_TYPE


def _sized(draw, size: int):
    """A payload of the wrong size where exactly ``size`` bytes are required (``_exact`` in
    codec.py): shorter is TRUNCATED, longer TRAILING_BYTES."""
    n = draw(st.integers(0, size - 1) | st.integers(size + 1, size + 16))
    category = Category.TRUNCATED if n < size else Category.TRAILING_BYTES
    return draw(st.binary(min_size=n, max_size=n)), category


def _bad_hello(draw):
    return _sized(draw, 2)


def _bad_ack_or_poll(draw):
    return _sized(draw, 8)


def _bad_empty(draw):
    # PING / PONG carry no payload ("PING / PONG").
    return draw(st.binary(min_size=1, max_size=16)), Category.TRAILING_BYTES


def _bad_auth(draw):
    case = draw(st.sampled_from(("short", "key_len>rest", "key_len<rest", "utf8")))
    if case == "short":
        return draw(st.binary(max_size=1)), Category.TRUNCATED
    key = draw(st.binary(max_size=24))
    if case == "key_len>rest":
        return struct.pack(">H", draw(st.integers(len(key) + 1, U16_MAX))) + key, Category.TRUNCATED
    if case == "key_len<rest":
        extra = draw(st.binary(min_size=1, max_size=8))
        return struct.pack(">H", len(key)) + key + extra, Category.TRAILING_BYTES
    bad = draw(invalid_utf8())
    return struct.pack(">H", len(bad)) + bad, Category.BAD_ENCODING


def _bad_publish(draw):
    case = draw(st.sampled_from(("short", "topic_len>rest", "utf8")))
    qos = draw(st.integers(0, 255))
    if case == "short":
        return draw(st.binary(max_size=2)), Category.TRUNCATED
    if case == "topic_len>rest":
        topic = draw(st.binary(max_size=24))
        return (struct.pack(">BH", qos, draw(st.integers(len(topic) + 1, U16_MAX))) + topic,
                Category.TRUNCATED)
    bad = draw(invalid_utf8())
    return struct.pack(">BH", qos, len(bad)) + bad + draw(messages), Category.BAD_ENCODING


def _bad_subscribe(draw):
    case = draw(st.sampled_from(("short", "no_qos", "utf8")))
    if case == "short":
        return draw(st.binary(max_size=2)), Category.TRUNCATED
    if case == "no_qos":
        # topic_len leaves no room for the qos byte (or runs past the end).
        topic = draw(st.binary(min_size=1, max_size=24))
        topic_len = draw(st.integers(len(topic), U16_MAX))
        return struct.pack(">H", topic_len) + topic, Category.TRUNCATED
    bad = draw(invalid_utf8())
    extra = draw(st.binary(max_size=4))     # ignored after the qos byte (SPEC_NOTES.md)
    return struct.pack(">H", len(bad)) + bad + bytes([draw(st.integers(0, 255))]) + extra, \
        Category.BAD_ENCODING


def _bad_nack(draw):
    case = draw(st.sampled_from(("short", "len>rest", "len<rest", "utf8")))
    code = draw(st.integers(0, U16_MAX))
    if case == "short":
        return draw(st.binary(max_size=3)), Category.TRUNCATED
    msg = draw(st.binary(max_size=24))
    if case == "len>rest":
        return struct.pack(">HH", code, draw(st.integers(len(msg) + 1, U16_MAX))) + msg, Category.TRUNCATED
    if case == "len<rest":
        extra = draw(st.binary(min_size=1, max_size=8))
        return struct.pack(">HH", code, len(msg)) + msg + extra, Category.TRAILING_BYTES
    bad = draw(invalid_utf8())
    return struct.pack(">HH", code, len(bad)) + bad, Category.BAD_ENCODING


_BAD_PAYLOADS = {
    FrameType.HELLO: _bad_hello,
    FrameType.AUTH: _bad_auth,
    FrameType.PUBLISH: _bad_publish,
    FrameType.SUBSCRIBE: _bad_subscribe,
    FrameType.ACK: _bad_ack_or_poll,
    FrameType.NACK: _bad_nack,
    FrameType.PING: _bad_empty,
    FrameType.PONG: _bad_empty,
    FrameType.POLL: _bad_ack_or_poll,
}


@st.composite
def bad_payload_frames(draw, types=None):
    """A whole envelope (valid length and type) whose payload ``parse_payload`` rejects:
    ``(bytes, TRUNCATED | TRAILING_BYTES | BAD_ENCODING)`` as codec.py decides each case."""
    frame_type = draw(st.sampled_from(tuple(_BAD_PAYLOADS) if types is None else tuple(types)))
    payload, category = _BAD_PAYLOADS[frame_type](draw)
    return codec.encode_raw(frame_type, draw(correlation_ids), payload), category


@st.composite
def invalid_frames(draw):
    """Any of the three kinds above."""
    return draw(st.one_of(bad_length_frames(), unknown_type_frames(), bad_payload_frames()))
