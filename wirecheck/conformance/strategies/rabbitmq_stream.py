"""Hypothesis strategies for RabbitMQ Stream frames (rabbitmq-stream-protocol.adoc "Frame
Structure", "Types" and each command's section; where the real server's layout differs from the
document the codec follows the server, and so do these: SPEC_NOTES.md, RabbitMQ Stream).

Valid input: :func:`frames` (any frame class of the codec, every request and response of keys
1-30, Publish and Deliver in versions 1 and 2, with in-range fields), :func:`client_frames`,
:func:`server_frames`, :func:`valid_streams`; Osiris chunks :func:`chunks` with simple and
sub-batch entries, uncompressed or gzip (:func:`sub_batches`). Near-valid invalid input, each
drawn as ``(bytes, expected Category)`` for a decoder with the reference codec's strictness:
:func:`bad_size_frames`, :func:`unknown_key_frames`, :func:`unknown_version_frames`,
:func:`truncated_frames`, :func:`trailing_bytes_frames`, :func:`bad_string_frames`,
:func:`bad_chunk_frames` (bad CRC among them). :func:`chunkings` draws how a byte string is split
into reads.

Strategies only: the properties are in ``tests/reference_impl/rabbitmq_stream/test_rmqs_properties.py`` and the invariant
functions they share with the fuzzers in :mod:`wirecheck.conformance.strategies.invariants`.
"""
from __future__ import annotations

import dataclasses
import struct

from hypothesis import strategies as st

from wirecheck.reference_impl.core.errors import Category
from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.chunk import (HEADER_SIZE as CHUNK_HEADER_SIZE, SimpleEntry,
                                                  SubBatchEntry, TrackingType, build_chunk,
                                                  encode_tracking)
from wirecheck.reference_impl.rabbitmq_stream.codec import (BrokerInfo, ConsumerUpdateResponse, Deliver,
                                                  MetadataResponse, OpenResponse, Publish,
                                                  PublishedMessage, PublishError, RouteResponse,
                                                  SaslAuthenticateResponse, StreamConfig,
                                                  StreamMetadata, Subscribe)
from wirecheck.reference_impl.rabbitmq_stream.constants import (OFFSET_TYPES_WITH_VALUE, RESPONSE_BIT, Code,
                                                      Compression, Key, OffsetType)

from .reads import chunkings  # noqa: F401  (re-exported: the properties draw reads from here)

U16_MAX = 2**16 - 1
U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1
#: The codec's default bound on the size field (Tune's default frame_max, SPEC_NOTES.md).
MAX_FRAME_SIZE = StreamConfig().max_frame_size

u8s = st.integers(0, 0xFF)
u16s = st.integers(0, U16_MAX)
u32s = st.integers(0, U32_MAX)
u64s = st.integers(0, U64_MAX)
i64s = st.integers(-2**63, 2**63 - 1)
correlation_ids = u32s
#: UTF-8 encodable text (no lone surrogates); short, so a stream stays small. "Types": a string
#: is an int16 length and UTF-8 bytes.
texts = st.text(st.characters(codec="utf-8"), max_size=24)
nullable_texts = st.none() | texts
blobs = st.binary(max_size=64)
properties = st.dictionaries(texts, texts, max_size=4)
#: The "Response Codes" table (and 19, the real server's "no offset"), or any other u16.
codes = st.sampled_from([int(c) for c in Code]) | u16s
offset_types = st.sampled_from([int(t) for t in OffsetType]) | u16s

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


# --- Osiris chunks (SPEC_NOTES.md: the 48-byte header, simple and sub-batch entries) -----------

records = st.binary(max_size=48)


@st.composite
def sub_batches(draw, compressions=(Compression.NONE, Compression.GZIP)):
    """A sub-batch entry of 1-5 records, uncompressed or gzip (the two compressions the codec
    implements; snappy, lz4 and zstd are recognised and refused)."""
    return SubBatchEntry.of(draw(st.lists(records, min_size=1, max_size=5)),
                            draw(st.sampled_from(compressions)))


entries = st.one_of(st.builds(SimpleEntry, records), sub_batches())


@st.composite
def tracking_trailers(draw) -> bytes:
    """A user chunk's trailer: publishers' sequence records (how the store keeps deduplication
    state, reference_impl/rabbitmq_stream/store.py)."""
    refs = draw(st.lists(st.text(st.characters(codec="utf-8"), min_size=1, max_size=16),
                         max_size=3))
    return encode_tracking([(TrackingType.SEQUENCE, ref, draw(u64s)) for ref in refs])


@st.composite
def chunks(draw, min_entries: int = 1, max_entries: int = 6, trailer: bool = True,
           bloom: bool = True):
    """A user chunk with a correct CRC and record count. With ``trailer``, sometimes a trailer
    (the segment form; consumers usually get the chunk without it); with ``bloom``, sometimes
    magic/version 0x51 and bloom filter bytes (0x50 has none, SPEC_NOTES.md)."""
    chunk = build_chunk(draw(st.lists(entries, min_size=min_entries, max_size=max_entries)),
                        first_offset=draw(st.integers(0, 2**63)), timestamp=draw(i64s),
                        epoch=draw(u64s),
                        trailer=draw(tracking_trailers()) if trailer and draw(st.booleans()) else b"")
    if bloom and draw(st.integers(0, 7)) == 0:
        chunk = dataclasses.replace(chunk, magic_version=0x51,
                                    bloom=draw(st.binary(min_size=1, max_size=16)))
    return chunk


# --- valid frames -------------------------------------------------------------------------------

#: Every frame class of the codec, in key order, requests before responses.
ALL_CLASSES = tuple(sorted(set(codec.FRAME_CLASSES.values()), key=lambda c: (c.key, c.response)))

#: Strategies for the generic field kinds of the codec's ``FIELDS`` layouts ("Types").
_KINDS = {
    "u8": u8s, "u16": u16s, "u32": u32s, "u64": u64s, "i64": i64s,
    "str": texts, "nstr": nullable_texts, "nbytes": st.none() | blobs,
    "strs": st.lists(texts, max_size=4).map(tuple), "props": properties,
    "u64s": st.lists(u64s, max_size=6).map(tuple),
    "versions": st.lists(st.tuples(u16s, u16s, u16s), max_size=5).map(tuple),
    "stats": st.dictionaries(texts, i64s, max_size=4),
}
_BY_NAME = {"code": codes, "offset_type": offset_types}


def is_generic(cls) -> bool:
    """True if ``cls`` is read and written from its ``FIELDS`` layout alone."""
    return "encode_body" not in vars(cls) and "parse_body" not in vars(cls)


def _generic(cls) -> st.SearchStrategy:
    return st.builds(cls, **{name: _BY_NAME.get(name, _KINDS[kind]) for name, kind in cls.FIELDS})


def _offset_value(offset_type: int) -> st.SearchStrategy:
    # "Subscribe": offset for type 4 (u64), timestamp for type 5 (i64, ms).
    return i64s if offset_type == OffsetType.TIMESTAMP else u64s


@st.composite
def published_messages(draw, version: int = 1):
    """A message of Publish: a simple body or a sub-batch; a filter value only in version 2."""
    body = draw(blobs | sub_batches())
    return PublishedMessage(draw(u64s), body, draw(nullable_texts) if version >= 2 else None)


@st.composite
def publishes(draw, version: int | None = None):
    v = draw(st.sampled_from((1, 2))) if version is None else version
    return Publish(draw(u8s), tuple(draw(st.lists(published_messages(v), max_size=5))), v)


@st.composite
def delivers(draw, version: int | None = None, trailer: bool = True):
    """Deliver, version 2 with a committed chunk id before the chunk (SPEC_NOTES.md)."""
    v = draw(st.sampled_from((1, 2))) if version is None else version
    return Deliver(draw(u8s), draw(chunks(trailer=trailer)), draw(u64s) if v >= 2 else None, v)


@st.composite
def _subscribe(draw):
    offset_type = draw(offset_types)
    offset = draw(_offset_value(offset_type)) if offset_type in OFFSET_TYPES_WITH_VALUE else None
    return Subscribe(draw(correlation_ids), draw(u8s), draw(texts), offset_type, offset,
                     draw(u16s), draw(properties))


@st.composite
def _consumer_update_response(draw):
    # The offset follows for types 4 and 5; rstream writes 8 bytes for any type (requests.py, Subscribe).
    offset_type = draw(offset_types)
    if offset_type in OFFSET_TYPES_WITH_VALUE:
        offset = draw(_offset_value(offset_type))
    else:
        offset = draw(st.none() | u64s)
    return ConsumerUpdateResponse(draw(correlation_ids), draw(codes), offset_type, offset)


@st.composite
def _route_response(draw):
    # Current servers answer an array, the document one string (responses.py, RouteResponse).
    if draw(st.booleans()):
        return RouteResponse(draw(correlation_ids), draw(codes), (draw(texts),), True)
    return RouteResponse(draw(correlation_ids), draw(codes), tuple(draw(st.lists(texts, max_size=4))))


_SPECIAL = {
    Publish: publishes(),
    Deliver: delivers(),
    Subscribe: _subscribe(),
    PublishError: st.builds(PublishError, u8s,
                            st.lists(st.tuples(u64s, codes), max_size=5).map(tuple)),
    MetadataResponse: st.builds(
        MetadataResponse, correlation_ids,
        st.lists(st.builds(BrokerInfo, u16s, texts, u32s), max_size=3).map(tuple),
        st.lists(st.builds(StreamMetadata, texts, codes, u16s,
                           st.lists(u16s, max_size=3).map(tuple)), max_size=3).map(tuple)),
    SaslAuthenticateResponse: st.builds(SaslAuthenticateResponse, correlation_ids, codes,
                                        st.none() | blobs),
    OpenResponse: st.builds(OpenResponse, correlation_ids, codes, properties),
    RouteResponse: _route_response(),
    ConsumerUpdateResponse: _consumer_update_response(),
}

FRAME_STRATEGIES: dict[type, st.SearchStrategy] = {
    cls: _SPECIAL[cls] if cls in _SPECIAL else _generic(cls) for cls in ALL_CLASSES}
assert all(is_generic(cls) for cls in ALL_CLASSES if cls not in _SPECIAL), \
    "a frame class with its own layout has no strategy"

#: Frames only the server sends ("Commands" table, "From" column; SPEC_NOTES.md for 26-30).
_SERVER_ONLY = (codec.PublishConfirm, codec.PublishError, Deliver, codec.MetadataUpdate,
                codec.ConsumerUpdate)
#: Responses the client sends: its answer to Tune and to ConsumerUpdate (and Close, either way).
_CLIENT_RESPONSES = (codec.TuneResponse, ConsumerUpdateResponse, codec.CloseResponse)
CLIENT_CLASSES = tuple(c for c in ALL_CLASSES
                       if (not c.response and c not in _SERVER_ONLY) or c in _CLIENT_RESPONSES)
SERVER_CLASSES = tuple(c for c in ALL_CLASSES
                       if (c.response and c not in (codec.TuneResponse, ConsumerUpdateResponse))
                       or c in _SERVER_ONLY or c in (codec.Tune, codec.Close, codec.Heartbeat))


@st.composite
def frames(draw, classes=None):
    """Any valid frame (of ``classes``, default every class of the codec)."""
    kinds = ALL_CLASSES if classes is None else tuple(classes)
    return draw(st.one_of([FRAME_STRATEGIES[c] for c in kinds]))


@st.composite
def client_frames(draw):
    return draw(frames(CLIENT_CLASSES))


@st.composite
def server_frames(draw):
    return draw(frames(SERVER_CLASSES))


@st.composite
def valid_streams(draw, min_size: int = 0, max_size: int = 6):
    """A list of valid frames; ``stream_bytes(...)`` is their stream."""
    return draw(st.lists(frames(), min_size=min_size, max_size=max_size))


def stream_bytes(frame_list) -> bytes:
    return b"".join(codec.encode(f) for f in frame_list)


# --- near-valid invalid frames ------------------------------------------------------------------
# Offsets: a size error is at the frame's first byte, an unknown key at its key (+4), an unknown
# version at its version (+6); body errors as each strategy says.

@st.composite
def bad_size_frames(draw):
    """A size out of bounds ("Frame Structure": size counts key and version, so >= 4; at most
    the tuned frame_max): ``(bytes, LENGTH_TOO_SMALL | LENGTH_TOO_LARGE)``. A size below 4 still
    delimits a frame (the codec consumes it and the server answers Close 13, SPEC_NOTES.md);
    one above the limit is detected at the prefix, whatever follows."""
    if draw(st.booleans()):
        size = draw(st.integers(0, 3))
        return struct.pack(">I", size) + draw(st.binary(min_size=size, max_size=size)), \
            Category.LENGTH_TOO_SMALL
    size = draw(st.sampled_from((MAX_FRAME_SIZE + 1, U32_MAX)) | st.integers(MAX_FRAME_SIZE + 1, U32_MAX))
    return struct.pack(">I", size) + draw(st.binary(max_size=32)), Category.LENGTH_TOO_LARGE


KNOWN_WIRE_KEYS = frozenset(codec.WIRE_KEYS)
UNKNOWN_WIRE_KEYS = tuple(k for k in range(U16_MAX + 1) if k not in KNOWN_WIRE_KEYS)
#: Unknown keys worth drawing often: 0, the first keys after the last command, and the
#: response bit on the commands that have no response (Publish, Deliver, Credit's request...).
_NOTABLE_UNKNOWN = tuple(sorted({0, 31, 32, 0x7FFF, 0xFFFF} | {int(k) | RESPONSE_BIT for k in Key}
                                - KNOWN_WIRE_KEYS))


@st.composite
def unknown_key_frames(draw):
    """A well-delimited frame whose key (response bit included) no class has:
    ``(bytes, UNKNOWN_TYPE)``. The server answers Close 13 (SPEC_NOTES.md)."""
    key = draw(st.sampled_from(_NOTABLE_UNKNOWN) | st.sampled_from(UNKNOWN_WIRE_KEYS))
    return codec.encode_raw(key, draw(st.integers(1, 2)), draw(st.binary(max_size=32))), \
        Category.UNKNOWN_TYPE


@st.composite
def unknown_version_frames(draw):
    """A known key with a version the codec does not define (1 everywhere, 2 also for Publish
    and Deliver, SPEC_NOTES.md): ``(bytes, UNKNOWN_TYPE)``."""
    key = draw(st.sampled_from(sorted(KNOWN_WIRE_KEYS)))
    top = 2 if key in (Key.PUBLISH, Key.DELIVER) else 1
    version = draw(st.just(0) | st.integers(top + 1, U16_MAX))
    return codec.encode_raw(key, version, draw(st.binary(max_size=32))), Category.UNKNOWN_TYPE


def _rewrap(frame, body: bytes) -> bytes:
    return codec.encode_raw(frame.wire_key, frame.version, body)


#: Classes with an optional tail or a form chosen by what is left (responses.py: the Open response
#: without properties, the SaslAuthenticate challenge, Route's two forms, ConsumerUpdate's
#: offset), where a cut or extra bytes can make another valid frame; and Heartbeat, which has
#: no body to cut.
_AMBIGUOUS_TAIL = (OpenResponse, SaslAuthenticateResponse, RouteResponse, ConsumerUpdateResponse)
STRICT_CLASSES = tuple(c for c in ALL_CLASSES if c not in _AMBIGUOUS_TAIL)
_CUTTABLE = tuple(c for c in STRICT_CLASSES if c is not codec.Heartbeat)


def _strict_frame(draw, classes=STRICT_CLASSES):
    cls = draw(st.sampled_from(classes))
    if cls is Deliver:                # a trailer may be absent: no trailer, so no cut is valid
        return draw(delivers(trailer=False))
    return draw(FRAME_STRATEGIES[cls])


@st.composite
def truncated_frames(draw):
    """A valid frame's body cut short, the size field matching the cut: ``(bytes, TRUNCATED)``,
    reported at the end of the frame (the codec reads fields in order and runs out there)."""
    frame = _strict_frame(draw, _CUTTABLE)
    body = codec.encode(frame)[8:]
    cut = draw(st.integers(0, len(body) - 1))
    if isinstance(frame, Subscribe):
        # The real server accepts a Subscribe without the properties count (SPEC_NOTES.md):
        # a cut right there is a valid frame, so cut one byte further (into the count).
        bare = len(codec.encode(dataclasses.replace(frame, properties={}))) - 8 - 4
        cut += cut == bare
    return _rewrap(frame, body[:cut]), Category.TRUNCATED


@st.composite
def trailing_bytes_frames(draw):
    """A valid frame with 1-16 bytes after its last field, the size counting them:
    ``(bytes, TRAILING_BYTES)``, reported where the extra bytes start."""
    frame = _strict_frame(draw)
    body = codec.encode(frame)[8:] + draw(st.binary(min_size=1, max_size=16))
    return _rewrap(frame, body), Category.TRAILING_BYTES


# Field writers for bodies built field by field ("Types"), independent of the codec's own.
_WRITERS = {
    "u8": lambda v: struct.pack(">B", v), "u16": lambda v: struct.pack(">H", v),
    "u32": lambda v: struct.pack(">I", v), "u64": lambda v: struct.pack(">Q", v),
    "i64": lambda v: struct.pack(">q", v),
    "str": lambda v: _string(v), "nstr": lambda v: _string(v),
    "nbytes": lambda v: struct.pack(">i", -1) if v is None else struct.pack(">i", len(v)) + v,
    "strs": lambda v: struct.pack(">i", len(v)) + b"".join(_string(s) for s in v),
    "props": lambda v: struct.pack(">i", len(v)) + b"".join(_string(k) + _string(x) for k, x in v.items()),
    "u64s": lambda v: struct.pack(f">i{len(v)}Q", len(v), *v),
    "versions": lambda v: struct.pack(">i", len(v)) + b"".join(struct.pack(">HHH", *t) for t in v),
    "stats": lambda v: struct.pack(">i", len(v)) + b"".join(_string(k) + struct.pack(">q", x)
                                                           for k, x in v.items()),
}


def _string(value) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


def body_of(frame) -> bytes:
    """The body of a generic-layout frame, written field by field with :data:`_WRITERS`."""
    return b"".join(_WRITERS[kind](getattr(frame, name)) for name, kind in frame.FIELDS)


#: Generic classes with a string that must not be null, and those with an array count.
_WITH_STR = tuple(c for c in ALL_CLASSES if is_generic(c) and any(k == "str" for _, k in c.FIELDS))
_WITH_COUNT = tuple(c for c in ALL_CLASSES if is_generic(c)
                    and any(k in ("strs", "props", "u64s", "versions", "stats") for _, k in c.FIELDS))


@st.composite
def bad_string_frames(draw):
    """A generic-layout frame with one field made invalid, every other field valid ("Types"):
    a string that is not UTF-8 (BAD_ENCODING), null where the layout has a plain string, a
    string length below -1, or an array count below 0 (BAD_VALUE). ``(bytes, Category)``."""
    case = draw(st.sampled_from(("utf8", "null", "negative length", "negative count")))
    cls = draw(st.sampled_from(_WITH_COUNT if case == "negative count" else _WITH_STR))
    frame = draw(FRAME_STRATEGIES[cls])
    wanted = ("strs", "props", "u64s", "versions", "stats") if case == "negative count" else ("str",)
    index = draw(st.sampled_from([i for i, (_, k) in enumerate(cls.FIELDS) if k in wanted]))
    parts = [_WRITERS[kind](getattr(frame, name)) for name, kind in cls.FIELDS]
    if case == "utf8":
        bad = draw(invalid_utf8())
        parts[index], category = struct.pack(">h", len(bad)) + bad, Category.BAD_ENCODING
    elif case == "null":
        parts[index], category = struct.pack(">h", -1), Category.BAD_VALUE
    elif case == "negative length":
        parts[index], category = struct.pack(">h", draw(st.integers(-2**15, -2))), Category.BAD_VALUE
    else:
        parts[index], category = struct.pack(">i", draw(st.integers(-2**31, -1))), Category.BAD_VALUE
    return _rewrap(frame, b"".join(parts)), category


#: Magic 5 is the only magic; versions 0 and 1 the only versions (chunk.py).
_BAD_MAGIC_VERSIONS = tuple(v for v in range(256) if v not in (0x50, 0x51))


@st.composite
def bad_chunk_frames(draw, cases=("crc", "data", "magic", "chunk type", "records")):
    """A Deliver whose chunk is wrong in one way (SPEC_NOTES.md, the chunk header): the CRC
    field, one byte of the entry data (so the CRC no longer matches), the magic, an unknown
    chunk type, or a record count its entries do not add up to: ``(bytes, BAD_VALUE)``."""
    frame = draw(delivers(trailer=False))
    wire = bytearray(codec.encode(frame))
    base = 8 + 1 + (8 if frame.version >= 2 else 0)        # the chunk's first byte
    case = draw(st.sampled_from(cases))
    if case == "crc":
        struct.pack_into(">I", wire, base + 32, frame.chunk.crc ^ draw(st.integers(1, U32_MAX)))
    elif case == "data":
        data_start = base + CHUNK_HEADER_SIZE + len(frame.chunk.bloom)
        wire[data_start + draw(st.integers(0, len(frame.chunk.data) - 1))] ^= draw(st.integers(1, 255))
    elif case == "magic":
        wire[base] = draw(st.sampled_from(_BAD_MAGIC_VERSIONS))
    elif case == "chunk type":
        wire[base + 1] = draw(st.integers(3, 255))
    else:
        n = draw(st.integers(0, U32_MAX - 1))
        struct.pack_into(">I", wire, base + 4, n + (n >= frame.chunk.num_records))
    return bytes(wire), Category.BAD_VALUE


@st.composite
def invalid_frames(draw):
    """Any of the kinds above."""
    return draw(st.one_of(bad_size_frames(), unknown_key_frames(), unknown_version_frames(),
                          truncated_frames(), trailing_bytes_frames(), bad_string_frames(),
                          bad_chunk_frames()))
