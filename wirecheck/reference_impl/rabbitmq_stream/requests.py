"""RabbitMQ Stream requests: the frame classes of keys 1-30 without the response bit.

Client -> server unless a class says otherwise: the server sends PublishConfirm, PublishError,
Deliver, MetadataUpdate, Tune and ConsumerUpdate itself, and Close and Heartbeat go either
way. Most bodies are read and written from their ``FIELDS`` layout (wire.py); Publish (with
its messages, :class:`PublishedMessage`), PublishError, Subscribe and Deliver read and write
their own.

Where the real server differs from the document, these classes follow the server
(SPEC_NOTES.md, RabbitMQ Stream): the Subscribe offset is present only for offset types 4 and
5, and a Subscribe may end before its property count; DeclarePublisher's reference is one
string; SaslHandshake has no mechanism; Tune has no correlation id (nor has the client's
answer, responses.py's TuneResponse). Commands 26-30 and Publish/Deliver version 2 are
decoded as the real server and clients send them.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Optional, Union

from . import chunk as osiris
from .chunk import Chunk, Entry, SimpleEntry, SubBatchEntry
from .constants import OFFSET_TYPES_WITH_VALUE, Key
from .wire import _I64, _U8, _U16, _U32, _U64, CORR, _Frame, _frame, _props, _Reader, _s

_PUB_HEAD = struct.Struct(">BI")     # publisher id, message count
_PUB_MSG = struct.Struct(">QI")      # publishing id, simple-entry size
_ERR_ITEM = struct.Struct(">QH")     # publishing id, code
#: Below this many bytes, slicing a chunk out of its frame is cheaper than a memoryview.
_COPY_BELOW = 4096


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
