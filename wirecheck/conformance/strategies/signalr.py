"""Hypothesis strategies for SignalR hub messages (signalr-hub-protocol.md, an early draft, as
the ``draft`` profile; SPEC_NOTES.md "SignalR" for the ``v1`` profile today's clients speak).

Valid input: :func:`messages` (any hub message a profile can express, with values the encoding
can carry: JSON-safe values for ``json``; ``messagepack`` adds binary and the full integer
range), :func:`handshake_requests`, :func:`handshake_responses`, :func:`streams` (a handshake,
then messages in the protocol it names or is told). Near-valid invalid records, each drawn as
``(body, expected Category)`` for the reference codec's strictness: :func:`invalid_json_records`,
:func:`invalid_msgpack_records`, and framing errors :func:`bad_varints`.

The generic split-read properties (tests/reference_impl/core/test_codec_properties.py) use the registry's default
decoder (a handshake first, origin guessed) and ``spec.encode`` (JSON, v1), so the API they
need works on client streams in JSON: :func:`frames`, :func:`valid_streams` (always starting with
a JSON handshake request), :func:`stream_bytes`, :func:`invalid_frames` and :func:`chunkings`.

Strategies only: the properties are in ``tests/reference_impl/signalr/test_signalr_properties.py``.
"""
from __future__ import annotations

import json
import sys

import msgpack
from hypothesis import strategies as st

from wirecheck.reference_impl.core.errors import Category
from wirecheck.reference_impl.signalr import codec
from wirecheck.reference_impl.signalr.constants import JSON, MESSAGEPACK
from wirecheck.reference_impl.signalr.framing import encode_varint, frame_binary
from wirecheck.reference_impl.signalr.messages import (Ack, CancelInvocation, Close, Completion,
                                             HandshakeRequest, HandshakeResponse, Invocation, Ping,
                                             Sequence, StreamCompletion, StreamInvocation,
                                             StreamItem)

from .reads import chunkings  # noqa: F401  (re-exported: the properties draw reads from here)

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
U64_MAX = (1 << 64) - 1

#: UTF-8 encodable text without the record separator, so raw pieces never cut a JSON record
#: (the JSON encoder escapes control characters anyway); short, so a stream stays small.
_chars = st.characters(codec="utf-8", exclude_characters="\x1e")
texts = st.text(_chars, max_size=16)
ids = st.text(_chars, min_size=1, max_size=12)
targets = st.text(_chars, min_size=1, max_size=16)
sequence_ids = st.integers(I64_MIN, I64_MAX)
#: A headers map; an empty one reads as absent (fields.headers), so absent or non-empty.
headers = st.none() | st.dictionaries(texts, texts, min_size=1, max_size=3)
stream_id_lists = st.none() | st.lists(ids, max_size=3)

_json_scalars = (st.none() | st.booleans() | st.integers(I64_MIN, U64_MAX)
                 | st.floats(allow_nan=False, allow_infinity=False) | texts)
_msgpack_scalars = _json_scalars | st.binary(max_size=16)


def _values(scalars) -> st.SearchStrategy:
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(texts, inner, max_size=4), max_leaves=8)


#: Argument, item and result values ("Type Mappings"): what each encoding can carry.
VALUES = {JSON: _values(_json_scalars), MESSAGEPACK: _values(_msgpack_scalars)}


# --- valid messages -----------------------------------------------------------------------------

def _completions(values, hdrs):
    return st.one_of(st.builds(Completion, ids, headers=hdrs),
                     st.builds(Completion.with_result, ids, values, hdrs),
                     st.builds(Completion.with_error, ids, texts, hdrs))


def message_strategies(profile: str = "v1", protocol: str = JSON) -> dict[type, st.SearchStrategy]:
    """Message class -> strategy, for every message ``profile`` can express."""
    values = VALUES[protocol]
    args = st.lists(values, max_size=4)
    if profile == "draft":
        return {
            Invocation: st.builds(Invocation, targets, args, ids, nonblocking=st.booleans()),
            StreamItem: st.builds(StreamItem, ids, values),
            Completion: _completions(values, st.none()),
            StreamCompletion: st.builds(StreamCompletion, ids, st.none() | texts),
            CancelInvocation: st.builds(CancelInvocation, ids),
        }
    return {
        Invocation: st.builds(Invocation, targets, args, st.none() | ids, headers, stream_id_lists),
        StreamItem: st.builds(StreamItem, ids, values, headers),
        Completion: _completions(values, headers),
        StreamInvocation: st.builds(StreamInvocation, ids, targets, args, headers, stream_id_lists),
        CancelInvocation: st.builds(CancelInvocation, ids, headers),
        Ping: st.just(Ping()),
        Close: st.builds(Close, st.none() | texts, st.none() | st.booleans()),
        Ack: st.builds(Ack, sequence_ids),
        Sequence: st.builds(Sequence, sequence_ids),
    }


@st.composite
def messages(draw, profile: str = "v1", protocol: str = JSON, classes=None):
    """A valid hub message of ``profile`` (of ``classes``, default all it has), with values
    ``protocol`` can carry."""
    table = message_strategies(profile, protocol)
    kinds = tuple(table) if classes is None else tuple(classes)
    return draw(st.one_of([table[c] for c in kinds]))


@st.composite
def handshake_requests(draw, protocol: str | None = None, profile: str = "v1"):
    """The client's first message; the draft's has no version ("Overview")."""
    name = protocol or draw(st.sampled_from((JSON, MESSAGEPACK)))
    version = 1 if profile == "v1" else draw(st.none() | st.just(1))
    return HandshakeRequest(name, version)


handshake_responses = st.builds(HandshakeResponse, st.none() | texts)


@st.composite
def streams(draw, protocol: str = JSON, profile: str = "v1", origin: str = "client",
            max_size: int = 6):
    """A handshake (request from a client, ``{}`` from a v1 server; the draft defines no
    response, so a draft server's stream is messages only) then up to ``max_size`` messages in
    ``protocol``; ``stream_bytes(stream, protocol, profile)`` is the wire."""
    if origin == "client":
        first = [draw(handshake_requests(protocol, profile))]
    else:
        first = [HandshakeResponse()] if profile == "v1" else []
    return [*first, *draw(st.lists(messages(profile, protocol), max_size=max_size))]


def stream_bytes(message_list, protocol: str = JSON, profile: str = "v1") -> bytes:
    return b"".join(codec.encode(m, protocol, profile) for m in message_list)


# --- the generic API (tests/reference_impl/core/test_codec_properties.py) ---------------------------------------------

@st.composite
def frames(draw):
    """Any v1 hub message with JSON-safe values (what ``spec.encode`` writes)."""
    return draw(messages("v1", JSON))


@st.composite
def valid_streams(draw, min_size: int = 0, max_size: int = 6):
    """A client's JSON stream: the handshake request (counted in ``max_size``), then messages.
    Empty only when ``max_size`` is 0: without a handshake, what follows would be read as one."""
    if max_size < 1:
        return []
    rest = draw(st.lists(frames(), min_size=max(0, min_size - 1), max_size=max_size - 1))
    return [HandshakeRequest(JSON, 1), *rest]


# --- near-valid invalid records ------------------------------------------------------------------

#: Byte sequences that make any surrounding valid UTF-8 invalid (as in the other strategies).
_BAD_UTF8 = (b"\xff", b"\xfe", b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xed\xa0\x80",
             b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xe2\x82", b"\xc3", b"\xf0\x9f\x98")

#: Required JSON fields per v1 type (json_protocol.V1), and per draft type.
_REQUIRED = {"v1": {1: ("target", "arguments"), 2: ("invocationId", "item"), 3: ("invocationId",),
                    4: ("invocationId", "target", "arguments"), 5: ("invocationId",),
                    8: ("sequenceId",), 9: ("sequenceId",)},
             "draft": {1: ("invocationId", "target", "arguments"), 2: ("invocationId", "item"),
                       3: ("invocationId",), 4: ("invocationId",), 5: ("invocationId",)}}
#: A JSON value of a type each field cannot have.
_WRONG = {"target": 5, "arguments": {}, "invocationId": 7, "sequenceId": "1", "headers": [],
          "streamIds": [1], "error": False, "allowReconnect": "yes", "nonblocking": 1}
_KNOWN_TYPES = {"v1": range(1, 10), "draft": range(1, 6)}


def _json_object(draw, profile: str) -> dict:
    classes = None
    if profile == "v1":
        classes = (Invocation, StreamItem, Completion, StreamInvocation, CancelInvocation, Ack,
                   Sequence)
    message = draw(messages(profile, JSON, classes))
    from wirecheck.reference_impl.signalr.json_protocol import to_object
    return to_object(message, profile)


def _json_record(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@st.composite
def invalid_json_records(draw, profile: str = "v1", cases=None):
    """A JSON record body (no separator) the codec rejects, and the category it must give:
    MISSING_FIELD, UNKNOWN_TYPE, BAD_ENCODING (not UTF-8, not JSON), BAD_VALUE (a field of the
    wrong type, a non-object, a number out of range), CONFLICTING_FIELDS (result and error),
    UNKNOWN_FIELD (draft only)."""
    choices = ["missing", "unknown_type", "utf8", "syntax", "wrong_type", "not_object",
               "conflict", "surrogate", "huge_float"]
    if profile == "draft":
        choices.append("unknown_field")
    case = draw(st.sampled_from(tuple(cases or choices)))
    if case == "missing":
        obj = _json_object(draw, profile)
        if draw(st.booleans()) or obj["type"] not in _REQUIRED[profile]:
            obj.pop("type")
        else:
            obj.pop(draw(st.sampled_from(_REQUIRED[profile][obj["type"]])))
        return _json_record(obj), Category.MISSING_FIELD
    if case == "unknown_type":
        kind = draw(st.integers(-5, 300).filter(lambda k: k not in _KNOWN_TYPES[profile]))
        return _json_record({"type": kind, "invocationId": draw(ids)}), Category.UNKNOWN_TYPE
    if case == "utf8":
        good = _json_record(_json_object(draw, profile)).decode("utf-8")
        cut = draw(st.integers(0, len(good)))         # between characters: nothing completes it
        return (good[:cut].encode() + draw(st.sampled_from(_BAD_UTF8)) + good[cut:].encode(),
                Category.BAD_ENCODING)
    if case == "syntax":
        good = _json_record(_json_object(draw, profile))
        return good[:draw(st.integers(1, len(good) - 1))], Category.BAD_ENCODING
    if case == "wrong_type":
        obj = _json_object(draw, profile)
        name = draw(st.sampled_from([k for k in obj if k in _WRONG] or ["invocationId"]))
        obj[name] = _WRONG[name]
        return _json_record(obj), Category.BAD_VALUE
    if case == "not_object":
        value = draw(st.lists(st.integers(0, 9), max_size=3) | st.integers() | texts)
        return _json_record(value), Category.BAD_VALUE
    if case == "conflict":
        hdrs = draw(headers) if profile == "v1" else None
        obj = {"type": 3, "invocationId": draw(ids), "result": draw(VALUES[JSON]),
               "error": draw(texts)}
        if hdrs:
            obj["headers"] = hdrs
        return _json_record(obj), Category.CONFLICTING_FIELDS
    if case == "surrogate":
        body = _json_record({"type": 2, "invocationId": draw(ids), "item": "\x00"})
        return body.replace(b"\\u0000", b"\\ud800"), Category.BAD_ENCODING
    if case == "huge_float":
        body = _json_record({"type": 2, "invocationId": draw(ids), "item": 0})
        return body.replace(b'"item":0', b'"item":1e400'), Category.BAD_VALUE
    obj = _json_object(draw, profile)
    name = draw(st.sampled_from(("foo", "headers", "streamIds", "Type", "result ")))
    if name in obj:
        name = "extra"
    obj[name] = draw(_json_scalars)
    return _json_record(obj), Category.UNKNOWN_FIELD


@st.composite
def invalid_frames(draw):
    """A JSON v1 record with its separator that the codec rejects: ``(bytes, Category)``."""
    body, category = draw(invalid_json_records("v1"))
    return body + b"\x1e", category


_V1_MIN_ITEMS = {1: 5, 2: 4, 3: 4, 4: 5, 5: 3, 7: 2, 8: 2, 9: 2}
_DRAFT_MIN_ITEMS = {1: 5, 2: 3, 3: 3, 4: 2, 5: 2}
_DRAFT_MAX_ITEMS = {1: 5, 2: 3, 4: 3, 5: 2}


def _packb(value) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


@st.composite
def invalid_msgpack_records(draw, profile: str = "v1", cases=None):
    """A MessagePack record body (no VarInt) the codec rejects, and its category: MISSING_FIELD
    (an array too short), UNKNOWN_TYPE, BAD_ENCODING (a str that is not UTF-8, a reserved
    format byte), BAD_VALUE (an item of the wrong type, not an array), TRUNCATED (the value
    ends early), TRAILING_BYTES (bytes after it), LENGTH_TOO_SMALL (an empty record),
    UNKNOWN_FIELD (draft only: items past the ones a type has)."""
    choices = ["missing", "unknown_type", "utf8", "reserved", "wrong_type", "not_array",
               "truncated", "trailing", "empty"]
    if profile == "draft":
        choices.append("unknown_field")
    case = draw(st.sampled_from(tuple(cases or choices)))
    minimum = _V1_MIN_ITEMS if profile == "v1" else _DRAFT_MIN_ITEMS
    if case == "missing":
        kind = draw(st.sampled_from(sorted(minimum)))
        items = codec.msgpack_protocol.to_array(
            draw(messages(profile, MESSAGEPACK, [_class_of(kind, profile)])), profile)
        return _packb(items[:draw(st.integers(0, minimum[kind] - 1))]), Category.MISSING_FIELD
    if case == "unknown_type":
        known = _KNOWN_TYPES[profile]
        kind = draw(st.integers(-32, 0x7F).filter(lambda k: k not in known))
        return _packb([kind, {}, draw(ids)]), Category.UNKNOWN_TYPE
    if case == "utf8":
        bad = draw(texts).encode() + draw(st.sampled_from(_BAD_UTF8))
        target = b"\xd9" + bytes([len(bad)]) + bad                  # str 8 of invalid bytes
        head = [1, {}, "x"] if profile == "v1" else [1, "x", False]
        body = b"\x95" + b"".join(map(_packb, head)) + target + _packb([])
        return body, Category.BAD_ENCODING
    if case == "reserved":
        return bytes([0x92, 0x02, 0xc1]), Category.BAD_ENCODING
    if case == "wrong_type":
        if profile == "v1":
            items = [1, {}, draw(st.none() | ids), draw(st.integers(I64_MIN, I64_MAX) | st.lists(texts, max_size=2)),
                     []]
        else:
            items = [1, draw(ids), draw(st.integers(0, 9)), "Target", []]
        return _packb(items), Category.BAD_VALUE
    if case == "not_array":
        value = draw(st.integers(I64_MIN, U64_MAX) | texts | st.dictionaries(texts, texts, max_size=2))
        return _packb(value), \
            Category.BAD_VALUE
    if case in ("truncated", "trailing"):
        good = codec.msgpack_protocol.encode_body(draw(messages(profile, MESSAGEPACK)), profile)
        if case == "trailing":
            return good + draw(st.binary(min_size=1, max_size=8)), Category.TRAILING_BYTES
        if len(good) < 2:
            good = _packb([2, {}, "abc", [1, 2]]) if profile == "v1" else _packb([2, "abc", [1]])
        return good[:draw(st.integers(1, len(good) - 1))], Category.TRUNCATED
    if case == "empty":
        return b"", Category.LENGTH_TOO_SMALL
    kind = draw(st.sampled_from(sorted(_DRAFT_MAX_ITEMS)))
    items = codec.msgpack_protocol.to_array(
        draw(messages("draft", MESSAGEPACK, [_class_of(kind, "draft")])), "draft")
    items += [None] * (_DRAFT_MAX_ITEMS[kind] - len(items))
    return _packb(items + draw(st.lists(_msgpack_scalars, min_size=1, max_size=3))), \
        Category.UNKNOWN_FIELD


def _class_of(kind: int, profile: str) -> type:
    if profile == "draft":
        return {1: Invocation, 2: StreamItem, 3: Completion, 4: StreamCompletion,
                5: CancelInvocation}[kind]
    return {1: Invocation, 2: StreamItem, 3: Completion, 4: StreamInvocation,
            5: CancelInvocation, 6: Ping, 7: Close, 8: Ack, 9: Sequence}[kind]


def msgpack_record(body: bytes) -> bytes:
    return frame_binary(body)


@st.composite
def bad_varints(draw, max_size: int | None = None):
    """A binary record length the framing refuses, and its category (all LENGTH_TOO_LARGE):
    more than 5 bytes, a 5th byte above 7 (past 0x7FFFFFFF), or above ``max_size``."""
    case = draw(st.sampled_from(("long", "fifth") + (("limit",) if max_size is not None else ())))
    if case == "long":
        return bytes([draw(st.integers(0x80, 0xFF)) for _ in range(5)]) + b"\x01", \
            Category.LENGTH_TOO_LARGE
    if case == "fifth":
        head = bytes(draw(st.integers(0x80, 0xFF)) for _ in range(4))
        return head + bytes([draw(st.integers(0x08, 0x7F))]), Category.LENGTH_TOO_LARGE
    return encode_varint(draw(st.integers(max_size + 1, 0x7FFFFFFF))), Category.LENGTH_TOO_LARGE


@st.composite
def non_minimal_varint(draw, value: int):
    """``value`` as a VarInt with 1-3 needless zero groups (refused only with strict_varint)."""
    plain = bytearray(encode_varint(value))
    pad = draw(st.integers(1, 5 - len(plain))) if len(plain) < 5 else 0
    if pad == 0:
        return bytes(plain)
    plain[-1] |= 0x80
    return bytes(plain) + b"\x80" * (pad - 1) + b"\x00"


class DecoderSpec:
    """What the invariant functions (conformance/strategies/invariants.py) need of a registry
    spec, for a SignalR decoder with fixed options (``protocol``, ``profile``, ``origin``,
    ``handshake``; none: the registry's default, a handshake first and its sender guessed)."""

    id = "signalr"

    def __init__(self, **options) -> None:
        self.options = options
        self.protocol = options.get("protocol") or JSON
        self.profile = options.get("profile", "v1")

    def make_decoder(self, limits=None, origin=None):
        return codec.Decoder(limits, **self.options)

    def encode(self, message) -> bytes:
        return codec.encode(message, self.protocol, self.profile)

    frame_to_dict = staticmethod(codec.frame_to_dict)

    def load(self, slot: str):
        assert slot == "strategies", slot
        return sys.modules[__name__]
