"""RabbitMQ Stream frames: encode, and an incremental decoder.

Wire ("Frame Structure"): ``[u32 size][u16 key][u16 version][body]``; ``size`` counts key,
version and body. Bit 15 of the key marks a response. Requests carry a u32 correlation id
first; responses carry the correlation id then a u16 response code. Strings are i16 length +
UTF-8 (-1 = null), bytes i32 length (-1 = null), arrays i32 count ("Types").

Where the real server differs from the document, the codec follows the server
(SPEC_NOTES.md, RabbitMQ Stream): the Subscribe offset is present only for offset types 4
and 5; DeclarePublisher's reference is one string; SaslHandshake has no mechanism; Tune has no
correlation id in either direction; Open's response omits the property count when it has no
properties; the Credit response has no correlation id; Metadata entries are name, code,
leader, replicas. Commands 26-30 and Publish/Deliver version 2 are decoded as the real server
and clients send them.

Decoding is two-stage. :class:`Decoder` cuts the stream into :class:`RawFrame` envelopes: a
declared size above the limit breaks the stream (sticky, raised as soon as the 4-byte prefix
is there, nothing buffered). Every other error is about one well-delimited frame (a size
below 4, an unknown key or version, a malformed body): that frame is consumed and reported,
and decoding can go on (the session answers with Close 13, as the real server does).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Optional, Union

from ..core.errors import Category, FrameError, LengthError, PayloadError, UnknownTypeError
from ..core.decoding import InPlaceDecoder
from ..core.decoding import decode_all as _decode_all
from ..core.limits import Limits
from . import chunk as osiris
from .chunk import Chunk, Entry, SimpleEntry, SubBatchEntry
from .constants import (DEFAULT_FRAME_MAX, MIN_FRAME_SIZE, OFFSET_TYPES_WITH_VALUE, PROTOCOL,
                        RESPONSE_BIT, Key, code_name)

_HEAD = struct.Struct(">IHH")       # size, key, version
_LEN = struct.Struct(">I")
_KV = struct.Struct(">HH")
_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")
_U64 = struct.Struct(">Q")
_I64 = struct.Struct(">q")
_PUB_HEAD = struct.Struct(">BI")     # publisher id, message count
_PUB_MSG = struct.Struct(">QI")      # publishing id, simple-entry size
_ERR_ITEM = struct.Struct(">QH")
_VERSIONS = struct.Struct(">HHH")
#: Below this many bytes, slicing a chunk out of its frame is cheaper than a memoryview.
_COPY_BELOW = 4096


@dataclass(frozen=True, slots=True)
class StreamConfig(Limits):
    """Limits of the codec. ``max_frame_size`` bounds the size field (the value after Tune's
    frame_max, 0 = no limit is mapped to the hard ceiling by the session)."""
    max_frame_size: int = DEFAULT_FRAME_MAX
    max_uncompressed: int = osiris.DEFAULT_MAX_UNCOMPRESSED


_DEFAULT_LIMITS = StreamConfig()     # frozen: one instance serves every decoder


def _err(cls, message: str, category: Category, offset: int, part: str = "") -> FrameError:
    return cls(message, category=category, protocol=PROTOCOL, offset=offset, part=part)


# --- reading primitives -----------------------------------------------------------------------

class _Reader:
    """Cursor over one frame body; ``base`` is the body's stream offset (for error offsets)."""
    __slots__ = ("data", "pos", "base", "end")

    def __init__(self, data: bytes, base: int = 0) -> None:
        self.data = data
        self.pos = 0
        self.base = base
        self.end = len(data)

    # Every field of every frame passes through these, so each reads its bytes in one step
    # and finds a short body by struct.error (the body is ``data`` to its end) rather than by
    # a test before it: the fuzzers trace every call and comparison.

    def _short(self, n: int, what: str) -> FrameError:
        return _err(PayloadError, f"{what}: {n} bytes needed, {self.end - self.pos} left",
                    Category.TRUNCATED, self.base + self.end)

    def _need(self, n: int, what: str) -> None:
        if self.end - self.pos < n:
            raise self._short(n, what)

    def _unpack(self, st: struct.Struct, what: str):
        try:
            (value,) = st.unpack_from(self.data, self.pos)
        except struct.error:
            raise self._short(st.size, what) from None
        self.pos += st.size
        return value

    def u8(self, what: str = "u8") -> int:
        try:
            value = self.data[self.pos]
        except IndexError:
            raise self._short(1, what) from None
        self.pos += 1
        return value

    def u16(self, what: str = "u16") -> int:
        return self._unpack(_U16, what)

    def u32(self, what: str = "u32") -> int:
        try:
            (value,) = _U32.unpack_from(self.data, self.pos)
        except struct.error:
            raise self._short(4, what) from None
        self.pos += 4
        return value

    def i32(self, what: str = "i32") -> int:
        return self._unpack(_I32, what)

    def u64(self, what: str = "u64") -> int:
        return self._unpack(_U64, what)

    def i64(self, what: str = "i64") -> int:
        return self._unpack(_I64, what)

    def nstr(self, what: str = "string") -> Optional[str]:
        start = self.pos
        try:
            (size,) = _I16.unpack_from(self.data, start)
        except struct.error:
            raise self._short(2, what) from None
        start += 2
        self.pos = start
        if size < 0:
            if size == -1:
                return None
            raise _err(PayloadError, f"{what}: negative length {size}", Category.BAD_VALUE,
                       self.base + start - 2)
        end = start + size
        if end > self.end:
            raise self._short(size, what)
        self.pos = end
        try:
            return self.data[start:end].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _err(PayloadError, f"{what} is not valid UTF-8", Category.BAD_ENCODING,
                       self.base + start + exc.start) from None

    def str(self, what: str = "string") -> str:
        at = self.pos
        value = self.nstr(what)
        if value is None:
            raise _err(PayloadError, f"{what} must not be null", Category.BAD_VALUE, self.base + at)
        return value

    def nbytes(self, what: str = "bytes") -> Optional[bytes]:
        size = self._unpack(_I32, what)
        if size == -1:
            return None
        if size < 0:
            raise _err(PayloadError, f"{what}: negative length {size}", Category.BAD_VALUE,
                       self.base + self.pos - 4)
        self._need(size, what)
        start = self.pos
        self.pos += size
        return bytes(self.data[start:self.pos])

    def count(self, item_size: int, what: str) -> int:
        """An array count, checked against what is left (so no count allocates past the frame)."""
        n = self._unpack(_I32, what + " count")
        if n < 0:
            raise _err(PayloadError, f"{what}: negative count {n}", Category.BAD_VALUE,
                       self.base + self.pos - 4)
        if n * item_size > self.end - self.pos:
            raise _err(PayloadError, f"{what}: {n} items cannot fit in {self.end - self.pos} bytes",
                       Category.TRUNCATED, self.base + self.end)
        return n

    def strs(self, what: str = "strings") -> tuple:
        return tuple(self.str(what) for _ in range(self.count(2, what)))

    def props(self, what: str = "properties") -> dict:
        out: dict = {}
        for _ in range(self.count(4, what)):
            key = self.str(what + " key")
            out[key] = self.str(what + " value")
        return out

    def u64s(self, what: str = "ids") -> tuple:
        n = self.count(8, what)
        values = struct.unpack_from(f">{n}Q", self.data, self.pos)
        self.pos += 8 * n
        return values

    def remaining(self) -> int:
        return self.end - self.pos

    def done(self, name: str) -> None:
        if self.pos != self.end:
            raise _err(PayloadError, f"{name}: {self.end - self.pos} bytes after the last field",
                       Category.TRAILING_BYTES, self.base + self.pos)


# --- writing primitives -----------------------------------------------------------------------

def _s(value: Optional[str]) -> bytes:
    if value is None:
        return _I16.pack(-1)
    raw = value.encode("utf-8")
    return _I16.pack(len(raw)) + raw


def _b(value: Optional[bytes]) -> bytes:
    if value is None:
        return _I32.pack(-1)
    return _I32.pack(len(value)) + bytes(value)


def _strs(values) -> bytes:
    return _I32.pack(len(values)) + b"".join(_s(v) for v in values)


def _props(values: dict) -> bytes:
    return _I32.pack(len(values)) + b"".join(_s(k) + _s(v) for k, v in values.items())


def _u64s(values) -> bytes:
    return _I32.pack(len(values)) + struct.pack(f">{len(values)}Q", *values)


_READ = {
    "u8": _Reader.u8, "u16": _Reader.u16, "u32": _Reader.u32, "u64": _Reader.u64,
    "i64": _Reader.i64, "str": _Reader.str, "nstr": _Reader.nstr, "nbytes": _Reader.nbytes,
    "strs": _Reader.strs, "props": _Reader.props, "u64s": _Reader.u64s,
}
_WRITE = {
    "u8": _U8.pack, "u16": _U16.pack, "u32": _U32.pack, "u64": _U64.pack, "i64": _I64.pack,
    "str": _s, "nstr": _s, "nbytes": _b, "strs": _strs, "props": _props, "u64s": _u64s,
}


# --- frames -----------------------------------------------------------------------------------

class _Frame:
    """Base of every frame class. ``key`` is the command key (without the response bit);
    ``FIELDS`` is the body layout for the generic reader and writer, in wire order."""
    __slots__ = ()
    key: ClassVar[Key]
    response: ClassVar[bool] = False
    FIELDS: ClassVar[tuple] = ()
    version: int

    @property
    def wire_key(self) -> int:
        bit = self.response and getattr(self, "response_bit", True)
        return self.key | (RESPONSE_BIT if bit else 0)

    def encode_body(self) -> bytes:
        return b"".join(_WRITE[kind](getattr(self, name)) for name, kind in self.FIELDS)

    @classmethod
    def parse_body(cls, r: _Reader, version: int):
        return cls(*[_READ[kind](r, name) for name, kind in cls.FIELDS])


def _frame(key: Key, *layout: tuple[str, str], response: bool = False):
    """Class decorator: set key, direction and generic layout."""
    def wrap(cls):
        cls.key = key
        cls.response = response
        cls.FIELDS = layout
        return cls
    return wrap


CORR = ("correlation_id", "u32")
CODE = ("code", "u16")


# Requests (client -> server unless noted).

@_frame(Key.DECLARE_PUBLISHER, CORR, ("publisher_id", "u8"), ("reference", "str"), ("stream", "str"))
@dataclass(frozen=True, slots=True)
class DeclarePublisher(_Frame):
    correlation_id: int
    publisher_id: int
    reference: str
    stream: str
    version: int = 1


@dataclass(frozen=True, slots=True)
class PublishedMessage:
    """One published message: a simple body, or a sub-batch entry spanning ``count`` offsets
    under one publishing id. ``filter_value`` exists in Publish version 2 only."""
    publishing_id: int
    body: Union[bytes, SubBatchEntry]
    filter_value: Optional[str] = None

    def entry(self) -> Entry:
        return self.body if isinstance(self.body, SubBatchEntry) else SimpleEntry(self.body)


@_frame(Key.PUBLISH)
@dataclass(frozen=True, slots=True)
class Publish(_Frame):
    publisher_id: int
    messages: tuple
    version: int = 1

    def encode_body(self) -> bytes:
        parts = [_PUB_HEAD.pack(self.publisher_id, len(self.messages))]
        v2 = self.version >= 2
        for m in self.messages:
            parts.append(_U64.pack(m.publishing_id))
            if v2:
                parts.append(_s(m.filter_value))
            body = m.body
            parts.append(body.encode() if isinstance(body, SubBatchEntry) else _U32.pack(len(body)) + body)
        return b"".join(parts)

    @classmethod
    def parse_body(cls, r: _Reader, version: int):
        publisher_id = r.u8("publisher id")
        n = r.count(12, "messages")
        data, end, base = r.data, r.end, r.base
        pos = r.pos
        out = []
        v2 = version >= 2
        for _ in range(n):
            if not v2 and end - pos >= 12:                  # fast path: simple v1 message
                pid, size = _PUB_MSG.unpack_from(data, pos)
                if not size & 0x80000000 and end - pos - 12 >= size:
                    start = pos + 12
                    pos = start + size
                    out.append(PublishedMessage(pid, data[start:pos]))
                    continue
            r.pos = pos
            pid = r.u64("publishing id")
            filter_value = r.nstr("filter value") if v2 else None
            entry, pos = osiris.parse_entry(data, r.pos, end, base)
            body = entry.body if isinstance(entry, SimpleEntry) else entry
            out.append(PublishedMessage(pid, body, filter_value))
        r.pos = pos
        return cls(publisher_id, tuple(out), version)

    @property
    def record_count(self) -> int:
        return sum(m.body.count if isinstance(m.body, SubBatchEntry) else 1 for m in self.messages)


@_frame(Key.PUBLISH_CONFIRM, ("publisher_id", "u8"), ("publishing_ids", "u64s"))
@dataclass(frozen=True, slots=True)
class PublishConfirm(_Frame):
    """Server -> client."""
    publisher_id: int
    publishing_ids: tuple
    version: int = 1


@_frame(Key.PUBLISH_ERROR)
@dataclass(frozen=True, slots=True)
class PublishError(_Frame):
    """Server -> client: ``errors`` is a tuple of (publishing id, code)."""
    publisher_id: int
    errors: tuple
    version: int = 1

    def encode_body(self) -> bytes:
        return (_PUB_HEAD.pack(self.publisher_id, len(self.errors))
                + b"".join(_ERR_ITEM.pack(pid, code) for pid, code in self.errors))

    @classmethod
    def parse_body(cls, r: _Reader, version: int):
        publisher_id = r.u8("publisher id")
        n = r.count(10, "publishing errors")
        errors = tuple(_ERR_ITEM.unpack_from(r.data, r.pos + 10 * i) for i in range(n))
        r.pos += 10 * n
        return cls(publisher_id, errors, version)


@_frame(Key.QUERY_PUBLISHER_SEQUENCE, CORR, ("reference", "str"), ("stream", "str"))
@dataclass(frozen=True, slots=True)
class QueryPublisherSequence(_Frame):
    correlation_id: int
    reference: str
    stream: str
    version: int = 1


@_frame(Key.DELETE_PUBLISHER, CORR, ("publisher_id", "u8"))
@dataclass(frozen=True, slots=True)
class DeletePublisher(_Frame):
    correlation_id: int
    publisher_id: int
    version: int = 1


@_frame(Key.SUBSCRIBE)
@dataclass(frozen=True, slots=True)
class Subscribe(_Frame):
    """``offset`` is None unless ``offset_type`` is 4 (u64 offset) or 5 (i64 timestamp, ms).
    ``properties`` None: the frame ends before the property count (the real server accepts
    that, SPEC_NOTES.md), kept apart from an empty map so that encoding gives the same bytes."""
    correlation_id: int
    subscription_id: int
    stream: str
    offset_type: int
    offset: Optional[int]
    credit: int
    properties: Optional[dict] = field(default_factory=dict)
    version: int = 1

    def encode_body(self) -> bytes:
        parts = [_U32.pack(self.correlation_id), _U8.pack(self.subscription_id), _s(self.stream),
                 _U16.pack(self.offset_type)]
        if self.offset_type in OFFSET_TYPES_WITH_VALUE:
            parts.append((_I64 if self.offset_type == 5 else _U64).pack(self.offset or 0))
        parts.append(_U16.pack(self.credit))
        if self.properties is not None:
            parts.append(_props(self.properties))
        return b"".join(parts)

    @classmethod
    def parse_body(cls, r: _Reader, version: int):
        corr = r.u32("correlation id")
        sub = r.u8("subscription id")
        stream = r.str("stream")
        offset_type = r.u16("offset type")
        offset = None
        if offset_type == 4:
            offset = r.u64("offset")
        elif offset_type == 5:
            offset = r.i64("timestamp")
        credit = r.u16("credit")
        # The real server accepts a Subscribe without the properties count (SPEC_NOTES.md).
        props = r.props("properties") if r.remaining() else None
        return cls(corr, sub, stream, offset_type, offset, credit, props, version)


@_frame(Key.DELIVER)
@dataclass(frozen=True, slots=True)
class Deliver(_Frame):
    """Server -> client. Version 2 adds ``committed_chunk_id`` before the chunk."""
    subscription_id: int
    chunk: Chunk
    committed_chunk_id: Optional[int] = None
    version: int = 1

    def encode_body(self) -> bytes:
        head = _U8.pack(self.subscription_id)
        if self.version >= 2:
            head += _U64.pack(self.committed_chunk_id or 0)
        return head + self.chunk.encode()

    @classmethod
    def parse_body(cls, r: _Reader, version: int, *, max_uncompressed: int = 0):
        sub = r.u8("subscription id")
        committed = r.u64("committed chunk id") if version >= 2 else None
        start, data = r.pos, r.data
        if r.end - start > _COPY_BELOW:
            with memoryview(data) as view:     # no copy of a large chunk before its fields are cut
                chunk = osiris.parse_chunk(view[start:], r.base + start)
        else:
            chunk = osiris.parse_chunk(data[start:], r.base + start)
        r.pos = r.end
        return cls(sub, chunk, committed, version)


@_frame(Key.CREDIT, ("subscription_id", "u8"), ("credit", "u16"))
@dataclass(frozen=True, slots=True)
class Credit(_Frame):
    subscription_id: int
    credit: int
    version: int = 1


@_frame(Key.STORE_OFFSET, ("reference", "str"), ("stream", "str"), ("offset", "u64"))
@dataclass(frozen=True, slots=True)
class StoreOffset(_Frame):
    reference: str
    stream: str
    offset: int
    version: int = 1


@_frame(Key.QUERY_OFFSET, CORR, ("reference", "str"), ("stream", "str"))
@dataclass(frozen=True, slots=True)
class QueryOffset(_Frame):
    correlation_id: int
    reference: str
    stream: str
    version: int = 1


@_frame(Key.UNSUBSCRIBE, CORR, ("subscription_id", "u8"))
@dataclass(frozen=True, slots=True)
class Unsubscribe(_Frame):
    correlation_id: int
    subscription_id: int
    version: int = 1


@_frame(Key.CREATE, CORR, ("stream", "str"), ("arguments", "props"))
@dataclass(frozen=True, slots=True)
class Create(_Frame):
    correlation_id: int
    stream: str
    arguments: dict = field(default_factory=dict)
    version: int = 1


@_frame(Key.DELETE, CORR, ("stream", "str"))
@dataclass(frozen=True, slots=True)
class Delete(_Frame):
    correlation_id: int
    stream: str
    version: int = 1


@_frame(Key.METADATA, CORR, ("streams", "strs"))
@dataclass(frozen=True, slots=True)
class Metadata(_Frame):
    correlation_id: int
    streams: tuple
    version: int = 1


@_frame(Key.METADATA_UPDATE, ("code", "u16"), ("stream", "str"))
@dataclass(frozen=True, slots=True)
class MetadataUpdate(_Frame):
    """Server -> client."""
    code: int
    stream: str
    version: int = 1


@_frame(Key.PEER_PROPERTIES, CORR, ("properties", "props"))
@dataclass(frozen=True, slots=True)
class PeerProperties(_Frame):
    correlation_id: int
    properties: dict = field(default_factory=dict)
    version: int = 1


@_frame(Key.SASL_HANDSHAKE, CORR)
@dataclass(frozen=True, slots=True)
class SaslHandshake(_Frame):
    correlation_id: int
    version: int = 1


@_frame(Key.SASL_AUTHENTICATE, CORR, ("mechanism", "str"), ("data", "nbytes"))
@dataclass(frozen=True, slots=True)
class SaslAuthenticate(_Frame):
    correlation_id: int
    mechanism: str
    data: Optional[bytes]
    version: int = 1


@_frame(Key.TUNE, ("frame_max", "u32"), ("heartbeat", "u32"))
@dataclass(frozen=True, slots=True)
class Tune(_Frame):
    """Server -> client (no correlation id); the client's answer is :class:`TuneResponse`
    (key 0x8014) or, as some clients send it, another Tune (key 0x0014)."""
    frame_max: int
    heartbeat: int
    version: int = 1


@_frame(Key.OPEN, CORR, ("virtual_host", "str"))
@dataclass(frozen=True, slots=True)
class Open(_Frame):
    correlation_id: int
    virtual_host: str
    version: int = 1


@_frame(Key.CLOSE, CORR, ("code", "u16"), ("reason", "nstr"))
@dataclass(frozen=True, slots=True)
class Close(_Frame):
    """Either direction."""
    correlation_id: int
    code: int
    reason: Optional[str] = ""
    version: int = 1


@_frame(Key.HEARTBEAT)
@dataclass(frozen=True, slots=True)
class Heartbeat(_Frame):
    """Either direction."""
    version: int = 1


@_frame(Key.ROUTE, CORR, ("routing_key", "str"), ("super_stream", "str"))
@dataclass(frozen=True, slots=True)
class Route(_Frame):
    correlation_id: int
    routing_key: str
    super_stream: str
    version: int = 1


@_frame(Key.PARTITIONS, CORR, ("super_stream", "str"))
@dataclass(frozen=True, slots=True)
class Partitions(_Frame):
    correlation_id: int
    super_stream: str
    version: int = 1


@_frame(Key.CONSUMER_UPDATE, CORR, ("subscription_id", "u8"), ("active", "u8"))
@dataclass(frozen=True, slots=True)
class ConsumerUpdate(_Frame):
    """Server -> client request (single active consumer); the client answers."""
    correlation_id: int
    subscription_id: int
    active: int
    version: int = 1


def _read_versions(r: _Reader, what: str = "command versions") -> tuple:
    n = r.count(6, what)
    out = tuple(_VERSIONS.unpack_from(r.data, r.pos + 6 * i) for i in range(n))
    r.pos += 6 * n
    return out


def _write_versions(values) -> bytes:
    return _I32.pack(len(values)) + b"".join(_VERSIONS.pack(*v) for v in values)


_READ["versions"] = lambda r, what="versions": _read_versions(r, what)
_WRITE["versions"] = _write_versions


@_frame(Key.EXCHANGE_COMMAND_VERSIONS, CORR, ("versions", "versions"))
@dataclass(frozen=True, slots=True)
class ExchangeCommandVersions(_Frame):
    """``versions``: tuple of (key, min version, max version)."""
    correlation_id: int
    versions: tuple
    version: int = 1


@_frame(Key.STREAM_STATS, CORR, ("stream", "str"))
@dataclass(frozen=True, slots=True)
class StreamStats(_Frame):
    correlation_id: int
    stream: str
    version: int = 1


@_frame(Key.CREATE_SUPER_STREAM, CORR, ("name", "str"), ("partitions", "strs"),
        ("binding_keys", "strs"), ("arguments", "props"))
@dataclass(frozen=True, slots=True)
class CreateSuperStream(_Frame):
    correlation_id: int
    name: str
    partitions: tuple
    binding_keys: tuple
    arguments: dict = field(default_factory=dict)
    version: int = 1


@_frame(Key.DELETE_SUPER_STREAM, CORR, ("name", "str"))
@dataclass(frozen=True, slots=True)
class DeleteSuperStream(_Frame):
    correlation_id: int
    name: str
    version: int = 1


# Responses.

def _plain_response(key: Key, class_name: str):
    @_frame(key, CORR, CODE, response=True)
    @dataclass(frozen=True, slots=True)
    class Response(_Frame):
        correlation_id: int
        code: int
        version: int = 1
    Response.__name__ = Response.__qualname__ = class_name
    Response.__doc__ = f"Response to {key.name}: correlation id and code only."
    return Response


DeclarePublisherResponse = _plain_response(Key.DECLARE_PUBLISHER, "DeclarePublisherResponse")
DeletePublisherResponse = _plain_response(Key.DELETE_PUBLISHER, "DeletePublisherResponse")
SubscribeResponse = _plain_response(Key.SUBSCRIBE, "SubscribeResponse")
UnsubscribeResponse = _plain_response(Key.UNSUBSCRIBE, "UnsubscribeResponse")
CreateResponse = _plain_response(Key.CREATE, "CreateResponse")
DeleteResponse = _plain_response(Key.DELETE, "DeleteResponse")
CloseResponse = _plain_response(Key.CLOSE, "CloseResponse")
CreateSuperStreamResponse = _plain_response(Key.CREATE_SUPER_STREAM, "CreateSuperStreamResponse")
DeleteSuperStreamResponse = _plain_response(Key.DELETE_SUPER_STREAM, "DeleteSuperStreamResponse")


@_frame(Key.QUERY_PUBLISHER_SEQUENCE, CORR, CODE, ("sequence", "u64"), response=True)
@dataclass(frozen=True, slots=True)
class QueryPublisherSequenceResponse(_Frame):
    correlation_id: int
    code: int
    sequence: int
    version: int = 1


@_frame(Key.QUERY_OFFSET, CORR, CODE, ("offset", "u64"), response=True)
@dataclass(frozen=True, slots=True)
class QueryOffsetResponse(_Frame):
    correlation_id: int
    code: int
    offset: int
    version: int = 1


@_frame(Key.CREDIT, CODE, ("subscription_id", "u8"), response=True)
@dataclass(frozen=True, slots=True)
class CreditResponse(_Frame):
    """Sent only on error, and without a correlation id (SPEC_NOTES.md)."""
    code: int
    subscription_id: int
    version: int = 1


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    reference: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class StreamMetadata:
    stream: str
    code: int
    leader: int
    replicas: tuple = ()


@_frame(Key.METADATA, response=True)
@dataclass(frozen=True, slots=True)
class MetadataResponse(_Frame):
    """No top-level code: each stream entry has its own (SPEC_NOTES.md)."""
    correlation_id: int
    brokers: tuple
    streams: tuple
    version: int = 1

    def encode_body(self) -> bytes:
        parts = [_U32.pack(self.correlation_id), _I32.pack(len(self.brokers))]
        for b in self.brokers:
            parts += [_U16.pack(b.reference), _s(b.host), _U32.pack(b.port)]
        parts.append(_I32.pack(len(self.streams)))
        for m in self.streams:
            parts += [_s(m.stream), _U16.pack(m.code), _U16.pack(m.leader),
                      _I32.pack(len(m.replicas)), b"".join(_U16.pack(x) for x in m.replicas)]
        return b"".join(parts)

    @classmethod
    def parse_body(cls, r: _Reader, version: int):
        corr = r.u32("correlation id")
        brokers = tuple(BrokerInfo(r.u16("broker reference"), r.str("broker host"), r.u32("broker port"))
                        for _ in range(r.count(8, "brokers")))
        streams = []
        for _ in range(r.count(10, "stream metadata")):
            name, code, leader = r.str("stream"), r.u16("code"), r.u16("leader")
            replicas = tuple(r.u16("replica") for _ in range(r.count(2, "replicas")))
            streams.append(StreamMetadata(name, code, leader, replicas))
        return cls(corr, brokers, tuple(streams), version)


@_frame(Key.PEER_PROPERTIES, CORR, CODE, ("properties", "props"), response=True)
@dataclass(frozen=True, slots=True)
class PeerPropertiesResponse(_Frame):
    correlation_id: int
    code: int
    properties: dict = field(default_factory=dict)
    version: int = 1


@_frame(Key.SASL_HANDSHAKE, CORR, CODE, ("mechanisms", "strs"), response=True)
@dataclass(frozen=True, slots=True)
class SaslHandshakeResponse(_Frame):
    correlation_id: int
    code: int
    mechanisms: tuple
    version: int = 1


@_frame(Key.SASL_AUTHENTICATE, response=True)
@dataclass(frozen=True, slots=True)
class SaslAuthenticateResponse(_Frame):
    """The challenge is present only when there is one (SPEC_NOTES.md); written as the
    document's ``bytes``; older servers wrote it with a 16-bit length, which is read too."""
    correlation_id: int
    code: int
    challenge: Optional[bytes] = None
    version: int = 1

    def encode_body(self) -> bytes:
        body = _U32.pack(self.correlation_id) + _U16.pack(self.code)
        return body if self.challenge is None else body + _b(self.challenge)

    @classmethod
    def parse_body(cls, r: _Reader, version: int):
        corr, code = r.u32("correlation id"), r.u16("code")
        left = r.remaining()
        challenge = None
        if left >= 4 and _I32.unpack_from(r.data, r.pos)[0] == left - 4:
            challenge = r.nbytes("challenge")
        elif left >= 2 and _U16.unpack_from(r.data, r.pos)[0] == left - 2:
            challenge = bytes(r.data[r.pos + 2:r.end])
            r.pos = r.end
        elif left:
            challenge = r.nbytes("challenge")       # raises TRUNCATED with the right offset
        return cls(corr, code, challenge, version)


@_frame(Key.TUNE, ("frame_max", "u32"), ("heartbeat", "u32"), response=True)
@dataclass(frozen=True, slots=True)
class TuneResponse(_Frame):
    frame_max: int
    heartbeat: int
    version: int = 1


@_frame(Key.OPEN, response=True)
@dataclass(frozen=True, slots=True)
class OpenResponse(_Frame):
    """The real server omits the property count when there are no properties; so does this
    encoder. Both forms decode."""
    correlation_id: int
    code: int
    properties: dict = field(default_factory=dict)
    version: int = 1

    def encode_body(self) -> bytes:
        body = _U32.pack(self.correlation_id) + _U16.pack(self.code)
        return body + _props(self.properties) if self.properties else body

    @classmethod
    def parse_body(cls, r: _Reader, version: int):
        corr, code = r.u32("correlation id"), r.u16("code")
        props = r.props("connection properties") if r.remaining() else {}
        return cls(corr, code, props, version)


@_frame(Key.ROUTE, response=True)
@dataclass(frozen=True, slots=True)
class RouteResponse(_Frame):
    """Current servers answer an array of streams; the document (and early servers) one
    string. Both decode; ``single`` says which form was seen / is written."""
    correlation_id: int
    code: int
    streams: tuple
    single: bool = field(default=False, compare=False)
    version: int = 1
    #: False when sent as RabbitMQ 3.10 does: under key 0x0018, without the response bit.
    response_bit: bool = field(default=True, compare=False)

    def encode_body(self) -> bytes:
        head = _U32.pack(self.correlation_id) + _U16.pack(self.code)
        if self.single:
            return head + _s(self.streams[0] if self.streams else "")
        return head + _strs(self.streams)

    @classmethod
    def parse_body(cls, r: _Reader, version: int):
        corr, code = r.u32("correlation id"), r.u16("code")
        left = r.remaining()
        if left >= 2 and _I16.unpack_from(r.data, r.pos)[0] == left - 2:
            return cls(corr, code, (r.str("stream"),), True, version)
        return cls(corr, code, r.strs("streams"), False, version)


#: RabbitMQ 3.10 answers Route and Partitions under the request key (no response bit); a
#: decoder told that its bytes come from a server reads those keys as the responses.
_FROM_SERVER = {Key.ROUTE: "RouteResponse", Key.PARTITIONS: "PartitionsResponse"}


@_frame(Key.PARTITIONS, CORR, CODE, ("streams", "strs"), response=True)
@dataclass(frozen=True, slots=True)
class PartitionsResponse(_Frame):
    correlation_id: int
    code: int
    streams: tuple
    version: int = 1
    #: False when sent as RabbitMQ 3.10 does: under key 0x0019, without the response bit.
    response_bit: bool = field(default=True, compare=False)


@_frame(Key.CONSUMER_UPDATE, response=True)
@dataclass(frozen=True, slots=True)
class ConsumerUpdateResponse(_Frame):
    """Client -> server. The offset follows only for types 4 and 5, as in Subscribe; a client
    that always writes 8 bytes (rstream) is read too."""
    correlation_id: int
    code: int
    offset_type: int
    offset: Optional[int] = None
    version: int = 1

    def encode_body(self) -> bytes:
        body = _U32.pack(self.correlation_id) + _U16.pack(self.code) + _U16.pack(self.offset_type)
        if self.offset_type in OFFSET_TYPES_WITH_VALUE or self.offset is not None:
            body += (_I64 if self.offset_type == 5 else _U64).pack(self.offset or 0)
        return body

    @classmethod
    def parse_body(cls, r: _Reader, version: int):
        corr, code, otype = r.u32("correlation id"), r.u16("code"), r.u16("offset type")
        offset = None
        if otype in OFFSET_TYPES_WITH_VALUE or r.remaining() == 8:
            offset = r.i64("timestamp") if otype == 5 else r.u64("offset")
        return cls(corr, code, otype, offset, version)


@_frame(Key.EXCHANGE_COMMAND_VERSIONS, CORR, CODE, ("versions", "versions"), response=True)
@dataclass(frozen=True, slots=True)
class ExchangeCommandVersionsResponse(_Frame):
    correlation_id: int
    code: int
    versions: tuple
    version: int = 1


def _read_stats(r: _Reader, what: str = "statistics") -> dict:
    out = {}
    for _ in range(r.count(10, what)):
        name = r.str(what + " key")
        out[name] = r.i64(what + " value")
    return out


_READ["stats"] = _read_stats
_WRITE["stats"] = lambda values: _I32.pack(len(values)) + b"".join(
    _s(k) + _I64.pack(v) for k, v in values.items())


@_frame(Key.STREAM_STATS, CORR, CODE, ("stats", "stats"), response=True)
@dataclass(frozen=True, slots=True)
class StreamStatsResponse(_Frame):
    correlation_id: int
    code: int
    stats: dict = field(default_factory=dict)
    version: int = 1


Frame = Any   # any of the classes above

_ALL = [obj for obj in list(globals().values())
        if isinstance(obj, type) and issubclass(obj, _Frame) and obj is not _Frame]
#: (wire key, version) -> frame class. Versions: 1 everywhere; Publish and Deliver also 2.
FRAME_CLASSES: dict[tuple[int, int], type] = {}
for _cls in _ALL:
    _wk = _cls.key | (RESPONSE_BIT if _cls.response else 0)
    FRAME_CLASSES[(_wk, 1)] = _cls
    if _cls in (Publish, Deliver):
        FRAME_CLASSES[(_wk, 2)] = _cls
WIRE_KEYS = frozenset(k for k, _ in FRAME_CLASSES)
#: A client's answer to Tune may come as key 0x0014 (a Tune) too.
REQUESTS_WITH_CORRELATION = frozenset(c.key for c in _ALL
                                      if not c.response and c.FIELDS[:1] == (CORR,))
REQUESTS_WITH_CORRELATION |= {Key.SUBSCRIBE}


def has_correlation(frame) -> bool:
    return hasattr(frame, "correlation_id")


# --- envelopes and encoding -------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RawFrame:
    """A frame whose body has not been parsed. ``offset`` is the stream offset of its size
    field; ``key`` includes the response bit. A size below 4 leaves key and version None."""
    key: Optional[int]
    version: Optional[int]
    body: bytes
    offset: int = field(default=0, compare=False)

    @property
    def command(self) -> Optional[int]:
        return None if self.key is None else self.key & ~RESPONSE_BIT

    @property
    def is_response(self) -> bool:
        return self.key is not None and bool(self.key & RESPONSE_BIT)

    @property
    def size(self) -> int:
        return len(self.body) + (4 if self.key is not None else 0)


def encode_raw(key: int, version: int = 1, body: bytes = b"") -> bytes:
    """Any frame, valid or not in its body (the suite and the fuzzers need both)."""
    return _HEAD.pack(4 + len(body), key, version) + body


def encode(frame) -> bytes:
    """The frame's bytes; ValueError if a field is out of its wire range."""
    try:
        body = frame.encode_body()
    except (struct.error, OverflowError) as exc:
        raise ValueError(f"{type(frame).__name__}: field out of range: {exc}") from None
    except UnicodeEncodeError as exc:
        raise ValueError(f"{type(frame).__name__}: {exc}") from None
    return _HEAD.pack(4 + len(body), frame.wire_key, frame.version) + body


def encode_many(frames) -> bytes:
    return b"".join(encode(f) for f in frames)


def key_name(key: Optional[int]) -> str:
    if key is None:
        return "(none)"
    cmd = key & ~RESPONSE_BIT
    try:
        name = Key(cmd).name
    except ValueError:
        name = f"0x{cmd:04x}"
    return name + ("_RESPONSE" if key & RESPONSE_BIT else "")


def parse_frame(raw: RawFrame, limits: StreamConfig | None = None, origin: Optional[str] = None):
    """The typed frame of an envelope; raises :class:`FrameError`. ``origin="server"`` says
    the bytes were sent by a server (the only case where the 3.10 Route/Partitions quirk
    can be told apart from a request)."""
    base = raw.offset + 8
    if raw.key is None:
        raise _err(LengthError, f"frame size {len(raw.body)} < {MIN_FRAME_SIZE}",
                   Category.LENGTH_TOO_SMALL, raw.offset)
    if origin == "server" and raw.key in _FROM_SERVER and raw.version == 1:
        cls = globals()[_FROM_SERVER[raw.key]]
        r = _Reader(raw.body, base)
        frame = cls.parse_body(r, 1)
        r.done(cls.__name__)
        return replace(frame, response_bit=False)
    cls = FRAME_CLASSES.get((raw.key, raw.version))
    if cls is None:
        if raw.key in WIRE_KEYS:
            raise _err(UnknownTypeError, f"{key_name(raw.key)} version {raw.version} is not defined",
                       Category.UNKNOWN_TYPE, raw.offset + 6, part="version")
        raise _err(UnknownTypeError, f"unknown command key 0x{raw.key:04x}",
                   Category.UNKNOWN_TYPE, raw.offset + 4)
    r = _Reader(raw.body, base)
    try:
        frame = cls.parse_body(r, raw.version)
    except (struct.error, IndexError) as exc:     # a count/size check missed: still a FrameError
        raise _err(PayloadError, f"{cls.__name__}: {exc}", Category.TRUNCATED, base + r.end) from None
    r.done(cls.__name__)
    return frame


# --- stream decoding --------------------------------------------------------------------------

class Decoder(InPlaceDecoder):
    """Incremental decoder: ``feed(data) -> list[frame]``.

    ``parse=False`` yields :class:`RawFrame` envelopes. A size above ``max_frame_size`` is a
    sticky stream error; other errors concern one frame, which is consumed: call ``feed(b"")``
    (or iterate again) to go on past it. ``max_frame_size`` may be changed between calls (the
    session applies the tuned frame_max). Frames are read in place in the decoder's own buffer
    (core/decoding.py :class:`InPlaceDecoder`).
    """

    protocol = PROTOCOL

    def __init__(self, limits: StreamConfig | None = None, *, parse: bool = True,
                 origin: Optional[str] = None) -> None:
        self.limits = limits or _DEFAULT_LIMITS
        self.origin = origin           # "server", "client" or None (unknown)
        self.parse = parse
        self._init_buffer()
        self._error: FrameError | None = None
        # Bytes the frame in hand needs before reading it again can change anything (the size
        # check read bytes that stay buffered): with fewer, next_frame answers None at once, so
        # reads of a byte or two cost one comparison. A new max_frame_size resets it.
        self._frame_need = 4
        self.max_frame_size = self.limits.max_frame_size

    @property
    def max_frame_size(self) -> int:
        return self._max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, value: int) -> None:
        self._max_frame_size = value
        self._frame_need = 4               # the size of a frame in hand is checked against it anew

    @property
    def broken(self) -> bool:
        return self._error is not None

    def next_frame(self):
        """The next whole frame (an envelope with ``parse=False``), None if more bytes are
        needed: the header read in place, one copy of the body."""
        if self._error is not None:
            raise self._error
        data, pos = self._data, self._pos
        available = len(data) - pos
        if available < self._frame_need:
            return None
        if available >= 8:
            size, key, version = _HEAD.unpack_from(data, pos)
        else:
            (size,) = _LEN.unpack_from(data, pos)
            key = version = None
        limit = self._max_frame_size
        if limit and size > limit:
            self._error = _err(LengthError, f"frame size {size} > frame_max {limit}",
                               Category.LENGTH_TOO_LARGE, self._base + pos)
            raise self._error
        end = pos + 4 + size
        if len(data) < end:
            self._frame_need = 4 + size
            return None
        self._frame_need = 4
        self._pos = end                          # consumed, whatever its body turns out to be
        if size < MIN_FRAME_SIZE:
            raw = RawFrame(None, None, bytes(data[pos + 4:end]), self._base + pos)
        else:
            raw = RawFrame(key, version, bytes(data[pos + 8:end]), self._base + pos)
        if not self.parse:
            return raw
        return parse_frame(raw, self.limits, self.origin)


def decode_all(data: bytes, limits: StreamConfig | None = None, origin: Optional[str] = None) -> list:
    """Every frame of a complete byte string; the first error raises (with ``frames``)."""
    return _decode_all(Decoder(limits, origin=origin), data)


# --- views ------------------------------------------------------------------------------------

#: Values _jsonable returns as they are, by exact type (most of a frame's fields): one test
#: instead of the seven below (the fuzzers call frame_to_dict on every frame they decode).
_PLAIN = frozenset((int, str, bool, float, type(None)))


def _jsonable(value):
    if type(value) in _PLAIN:
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return {"text": raw.decode("utf-8"), "hex": raw.hex()}
        except UnicodeDecodeError:
            return {"hex": raw.hex()}
    if isinstance(value, Chunk):
        out = {f.name: _jsonable(getattr(value, f.name)) for f in fields(value)
               if f.name not in ("data", "trailer", "bloom", "bodies")}
        out["data_length"] = len(value.data)
        out["trailer_length"] = len(value.trailer)
        try:
            out["messages"] = [_jsonable(m) for m in value.messages()]
        except FrameError as exc:
            out["messages_error"] = exc.as_dict()
        return out
    if isinstance(value, SubBatchEntry):
        return {"sub_batch": {"compression": value.compression, "count": value.count,
                              "uncompressed_size": value.uncompressed_size,
                              "body_hex": value.body.hex()}}
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: _jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return value


def frame_to_dict(frame) -> dict:
    """JSON-friendly view for the CLI and transcripts; codes also by name."""
    if isinstance(frame, RawFrame):
        return {"type": key_name(frame.key), "version": frame.version, "body_hex": frame.body.hex()}
    out: dict = {"type": type(frame).__name__, "key": f"0x{frame.wire_key:04x}"}
    for f in fields(frame):
        value = getattr(frame, f.name)
        out[f.name] = value if type(value) in _PLAIN else _jsonable(value)
    if "code" in out and isinstance(out["code"], int):
        out["code_name"] = code_name(out["code"])
    return out
