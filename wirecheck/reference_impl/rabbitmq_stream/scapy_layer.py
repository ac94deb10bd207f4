"""scapy layers for RabbitMQ Stream (rabbitmq-stream-protocol.adoc "Frame Structure", "Types"
and each command's section; SPEC_NOTES.md, RabbitMQ Stream, for the layouts the codec takes
from the real server).

``RabbitMQStream`` is the envelope: ``size`` (u32, counts key, version and body), ``response``
(bit 15 of the key), ``key`` (the other 15 bits), ``version``. The body is one layer chosen by
(response, key, version), named after the codec's class: ``RMQSPublish`` / ``RMQSPublishV2``,
``RMQSDeliver`` / ``RMQSDeliverV2`` (carrying an :class:`OsirisChunk` whose entries are
:class:`RMQSSimpleEntry` and :class:`RMQSSubBatchEntry` layers), ``RMQSSubscribe``,
``RMQSMetadataResponse``... and, for every command whose body is a plain sequence of fields,
a class built from the codec's own ``FIELDS`` layout (``RMQSCreate``, ``RMQSTune``,
``RMQSQueryOffsetResponse``...), so the two cannot drift apart. Heartbeat has no body.
Several frames in one buffer or TCP segment dissect as consecutive layers
(``RabbitMQStream / RMQSPublish / RabbitMQStream / RMQSCredit / ...``); :func:`frames` lists
them. Field names are the codec's (but ``super_stream`` for the super stream commands' ``name``,
which scapy reserves); strings are bytes (None for a null string).

Build::

    RabbitMQStream() / RMQSCreate(correlation_id=1, stream=b"s", arguments=[(b"max-age", b"7D")])

``size`` and the counts are computed on build, ``response``/``key``/``version`` follow the
body layer, and an Osiris chunk's CRC, record count and lengths too when left unset.

Not dissected as the codec reads them: the document's single-string Route response (read
here as the current array form, else left Raw), the old 16-bit SaslAuthenticate challenge
length, and RabbitMQ 3.10's Route/Partitions responses sent without the response bit (the codec
tells them apart only when told the bytes come from a server). Reassembly of captures goes
through scapy's ``TCPSession`` and :meth:`RabbitMQStream.tcp_reassemble`. Only this module
imports scapy; the registry imports it lazily.
"""
from __future__ import annotations

import struct
import zlib

from scapy.fields import (BitEnumField, BitField, ByteEnumField, ByteField, ConditionalField,
                          Field, FieldLenField, IntField, LongField, PacketField,
                          PacketListField, ShortEnumField, ShortField, SignedLongField, StrField,
                          StrFixedLenField, StrLenField, XByteField, XIntField)
from scapy.layers.inet import TCP
from scapy.packet import Packet, bind_layers

from ..core.scapy_frames import PrefixedFrame, frames_of

from . import codec
from .chunk import HEADER_SIZE as CHUNK_HEADER_SIZE
from .chunk import MAGIC_VERSION
from .constants import (DEFAULT_PORT, MIN_FRAME_SIZE, OFFSET_TYPES_WITH_VALUE, ChunkType, Code,
                        Compression, Key, OffsetType)

__all__ = ["RabbitMQStream", "OsirisChunk", "RMQSSimpleEntry", "RMQSSubBatchEntry", "frames",
           "bind_rabbitmq_stream", "BODY_LAYERS"]

HEADER_SIZE = 8                               # size, key, version
#: Largest size a frame is cut at: the reference session's ceiling when Tune's frame_max is 0
#: ("no limit"); the dissector does not know what a connection tuned.
MAX_FRAME_SIZE = 64 * 1024 * 1024
_KEYS = {int(k): k.name for k in Key}
_CODES = {int(c): c.name for c in Code}
_OFFSET_TYPES = {int(t): t.name for t in OffsetType}
_CHUNK_TYPES = {int(t): t.name for t in ChunkType}
_COMPRESSIONS = {int(c): c.name for c in Compression}
#: Key in TCPSession's per-connection dict marking a direction whose framing is lost.
_BROKEN = "rabbitmq_stream_unframed"


# -- "Types" -----------------------------------------------------------------------------------

class _WireField(Field):
    """A field with its own variable-length wire form; dissecting short input raises (the layer
    then falls back to Raw, as scapy does for any failed dissection)."""
    __slots__ = ()

    def __init__(self, name: str, default) -> None:
        Field.__init__(self, name, default, fmt="B")

    def read(self, pkt, s: bytes):            # -> (value, bytes used)
        raise NotImplementedError

    def write(self, pkt, value) -> bytes:
        raise NotImplementedError

    def getfield(self, pkt, s):
        value, n = self.read(pkt, s)
        return s[n:], value

    def addfield(self, pkt, s, val):
        return s + self.write(pkt, val)

    def i2len(self, pkt, x):
        return len(self.write(pkt, x))


def _need(s: bytes, n: int, what: str) -> None:
    if len(s) < n:
        raise ValueError(f"{what}: {n} bytes needed, {len(s)} left")


def _read_string(s: bytes, pos: int, what: str):
    _need(s[pos:], 2, what)
    (n,) = struct.unpack_from(">h", s, pos)
    if n == -1:
        return None, 2
    if n < 0:
        raise ValueError(f"{what}: negative length {n}")
    _need(s[pos + 2:], n, what)
    return bytes(s[pos + 2:pos + 2 + n]), 2 + n


def _write_string(value) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode() if isinstance(value, str) else bytes(value)
    return struct.pack(">h", len(raw)) + raw


class StreamStringField(_WireField):
    """``string``: int16 length, UTF-8 bytes; -1 is null (None)."""
    __slots__ = ()

    def any2i(self, pkt, x):
        return x.encode() if isinstance(x, str) else x

    def read(self, pkt, s):
        return _read_string(s, 0, self.name)

    def write(self, pkt, value):
        return _write_string(value)


class StreamBytesField(_WireField):
    """``bytes``: int32 length, bytes; -1 is null (None)."""
    __slots__ = ()

    def read(self, pkt, s):
        _need(s, 4, self.name)
        (n,) = struct.unpack_from(">i", s)
        if n == -1:
            return None, 4
        if n < 0:
            raise ValueError(f"{self.name}: negative length {n}")
        _need(s[4:], n, self.name)
        return bytes(s[4:4 + n]), 4 + n

    def write(self, pkt, value):
        return struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + bytes(value)


class StreamArrayField(_WireField):
    """``[item]``: int32 count, then the items; the value is a list. ``item`` is one of
    ``"string"``, ``"u16"``, ``"u64"``, ``"property"`` (a (key, value) pair of strings),
    ``"stat"`` (string, int64), ``"version"`` (key, min, max as u16)."""
    __slots__ = ["item"]
    islist = 1
    _FIXED = {"u16": struct.Struct(">H"), "u64": struct.Struct(">Q"), "version": struct.Struct(">HHH")}

    def __init__(self, name: str, item: str, default=None) -> None:
        _WireField.__init__(self, name, [] if default is None else default)
        self.item = item

    def _read_item(self, s: bytes, pos: int):
        fixed = self._FIXED.get(self.item)
        if fixed is not None:
            _need(s[pos:], fixed.size, self.name)
            values = fixed.unpack_from(s, pos)
            return (values if self.item == "version" else values[0]), fixed.size
        key, n = _read_string(s, pos, self.name)
        if self.item == "string":
            return key, n
        if self.item == "stat":
            _need(s[pos + n:], 8, self.name)
            return (key, struct.unpack_from(">q", s, pos + n)[0]), n + 8
        value, m = _read_string(s, pos + n, self.name)
        return (key, value), n + m

    def _write_item(self, value) -> bytes:
        fixed = self._FIXED.get(self.item)
        if fixed is not None:
            return fixed.pack(*value) if self.item == "version" else fixed.pack(value)
        if self.item == "string":
            return _write_string(value)
        if self.item == "stat":
            return _write_string(value[0]) + struct.pack(">q", value[1])
        return _write_string(value[0]) + _write_string(value[1])

    def read(self, pkt, s):
        _need(s, 4, self.name)
        (count,) = struct.unpack_from(">i", s)
        if count < 0:
            raise ValueError(f"{self.name}: negative count {count}")
        pos, out = 4, []
        for _ in range(count):
            value, n = self._read_item(s, pos)
            out.append(value)
            pos += n
        return out, pos

    def write(self, pkt, value):
        value = value or []
        return struct.pack(">i", len(value)) + b"".join(self._write_item(v) for v in value)


class OptionalTail(_WireField):
    """A last field the server may leave out (SPEC_NOTES.md: Open's response without the
    property count, the SaslAuthenticate challenge only when there is one; rstream's 8-byte
    ConsumerUpdate offset): None when absent, and then nothing is written."""
    __slots__ = ["fld", "islist"]

    def __init__(self, fld: Field) -> None:
        _WireField.__init__(self, fld.name, None)
        self.fld = fld
        # A list value is one value here, not a set of packets to generate (Packet.__iter__).
        self.islist = fld.islist

    def read(self, pkt, s):
        if not s:
            return None, 0
        rest, value = self.fld.getfield(pkt, s)
        return value, len(s) - len(rest)

    def write(self, pkt, value):
        return b"" if value is None else self.fld.addfield(pkt, b"", value)


class OffsetValueField(_WireField):
    """Subscribe's and ConsumerUpdate's offset: u64, or an i64 timestamp (ms) for offset
    type 5 ("Subscribe", OffsetSpecification)."""
    __slots__ = ()

    def _struct(self, pkt):
        return struct.Struct(">q" if pkt is not None and pkt.offset_type == OffsetType.TIMESTAMP else ">Q")

    def read(self, pkt, s):
        fmt = self._struct(pkt)
        _need(s, fmt.size, self.name)
        return fmt.unpack_from(s)[0], fmt.size

    def write(self, pkt, value):
        return self._struct(pkt).pack(value or 0)


# -- the envelope ("Frame Structure") ----------------------------------------------------------

class RabbitMQStream(PrefixedFrame, Packet):
    """``[u32 size][u16 key (bit 15: response)][u16 version]`` ("Frame Structure")."""
    name = "RabbitMQStream"
    LENGTH_FIELD = "size"
    MIN_LENGTH, MAX_LENGTH = MIN_FRAME_SIZE, MAX_FRAME_SIZE
    HEADER_SIZE = HEADER_SIZE
    BROKEN_KEY = _BROKEN
    fields_desc = [
        IntField("size", None),                         # key + version + body
        BitField("response", 0, 1),
        BitEnumField("key", int(Key.HEARTBEAT), 15, _KEYS),
        ShortField("version", 1),
    ]

    # -- display and matching --------------------------------------------------------------

    def mysummary(self) -> str:
        kind = " response" if self.response else ""
        return self.sprintf(f"RabbitMQStream %key%{kind} v%version%")

    def hashret(self) -> bytes:
        # A response echoes its request's correlation id ("Frame Structure"): key and id match.
        corr = getattr(self.payload, "correlation_id", None)
        return struct.pack(">H", self.key or 0) + (b"" if corr is None else struct.pack(">I", corr))

    def answers(self, other) -> bool:
        return (isinstance(other, RabbitMQStream) and bool(self.response) and not other.response
                and self.key == other.key and self.hashret() == other.hashret())


def frames(pkt: Packet) -> list[RabbitMQStream]:
    """Every RabbitMQStream layer of ``pkt``, in order."""
    return frames_of(pkt, RabbitMQStream)


# -- Osiris chunks (SPEC_NOTES.md: the 48-byte header, simple and sub-batch entries) -----------

class _Entry(Packet):
    """An entry of a chunk's data, or of a Publish message; the next one follows it."""

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class RMQSSimpleEntry(_Entry):
    """u32 size (top bit clear), then one record."""
    name = "RabbitMQStream simple entry"
    fields_desc = [FieldLenField("entry_size", None, length_of="body", fmt="I"),
                   StrLenField("body", b"", length_from=lambda p: p.entry_size)]


class RMQSSubBatchEntry(_Entry):
    """u8 ``0x80 | compression << 4``, u16 record count, u32 uncompressed length, u32 length,
    then ``length`` bytes holding ``count`` simple records (compressed unless NONE)."""
    name = "RabbitMQStream sub-batch entry"
    fields_desc = [BitField("sub_batch", 1, 1), BitEnumField("compression", 0, 3, _COMPRESSIONS),
                   BitField("reserved", 0, 4), ShortField("count", 0), IntField("uncompressed_size", 0),
                   FieldLenField("length", None, length_of="body", fmt="I"),
                   StrLenField("body", b"", length_from=lambda p: p.length)]


class RMQSEntry(_Entry):
    """Dispatches on the entry's first bit: a sub-batch, or a simple entry."""

    @classmethod
    def dispatch_hook(cls, _pkt: bytes = b"", *args, **kargs):
        return RMQSSubBatchEntry if _pkt and _pkt[0] & 0x80 else RMQSSimpleEntry


class OsirisChunk(Packet):
    """A chunk as Deliver carries it (and segment files hold it). On build, unset ``crc``,
    ``num_records``, the lengths and the entry count are computed."""
    name = "Osiris chunk"
    fields_desc = [
        XByteField("magic_version", MAGIC_VERSION),
        ByteEnumField("chunk_type", int(ChunkType.USER), _CHUNK_TYPES),
        FieldLenField("num_entries", None, count_of="entries", fmt="H"),
        IntField("num_records", None),
        SignedLongField("timestamp", 0),
        LongField("epoch", 1),
        LongField("first_offset", 0),
        XIntField("crc", None),
        FieldLenField("data_length", None, length_of="entries", fmt="I"),
        FieldLenField("trailer_length", None, length_of="trailer", fmt="I"),
        FieldLenField("bloom_size", None, length_of="bloom", fmt="B"),
        StrFixedLenField("reserved", b"\0\0\0", 3),
        StrLenField("bloom", b"", length_from=lambda p: p.bloom_size),
        # User chunks hold entries; tracking chunks the broker's records, kept as bytes.
        ConditionalField(PacketListField("entries", [], RMQSEntry, length_from=lambda p: p.data_length,
                                         max_count=0x10000), lambda p: p.chunk_type == ChunkType.USER),
        ConditionalField(StrLenField("data", b"", length_from=lambda p: p.data_length),
                         lambda p: p.chunk_type != ChunkType.USER),
        StrField("trailer", b""),        # the rest: a consumer's chunk may come without it
    ]

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        start = CHUNK_HEADER_SIZE + pkt[44]
        (length,) = struct.unpack_from(">I", pkt, 36)
        if self.crc is None:
            pkt = pkt[:32] + struct.pack(">I", zlib.crc32(pkt[start:start + length])) + pkt[36:]
        if self.num_records is None:
            records = sum(getattr(e, "count", 1) for e in self.entries or ())
            pkt = pkt[:4] + struct.pack(">I", records) + pkt[8:]
        return pkt + pay

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


# -- bodies with their own layout --------------------------------------------------------------

def _publishing_id() -> Field:
    return LongField("publishing_id", 0)


class RMQSPublishedMessage(_Entry):
    name = "RabbitMQStream published message"
    fields_desc = [_publishing_id(), PacketField("entry", None, RMQSEntry)]


class RMQSPublishedMessageV2(_Entry):
    """Version 2 adds a filter value (null when none) before the entry."""
    name = "RabbitMQStream published message v2"
    fields_desc = [_publishing_id(), StreamStringField("filter_value", None),
                   PacketField("entry", None, RMQSEntry)]


def _messages(cls) -> list[Field]:
    return [ByteField("publisher_id", 0),
            FieldLenField("message_count", None, count_of="messages", fmt="i"),
            PacketListField("messages", [], cls, count_from=lambda p: p.message_count,
                            max_count=1 << 24)]


class RMQSPublish(Packet):
    name = "RabbitMQStream Publish"
    fields_desc = _messages(RMQSPublishedMessage)


class RMQSPublishV2(Packet):
    name = "RabbitMQStream Publish v2"
    fields_desc = _messages(RMQSPublishedMessageV2)


class RMQSPublishingError(_Entry):
    name = "RabbitMQStream publishing error"
    fields_desc = [_publishing_id(), ShortEnumField("code", 0, _CODES)]


class RMQSPublishError(Packet):
    name = "RabbitMQStream PublishError"
    fields_desc = [ByteField("publisher_id", 0),
                   FieldLenField("error_count", None, count_of="errors", fmt="i"),
                   PacketListField("errors", [], RMQSPublishingError,
                                   count_from=lambda p: p.error_count, max_count=1 << 24)]


class RMQSDeliver(Packet):
    name = "RabbitMQStream Deliver"
    fields_desc = [ByteField("subscription_id", 0), PacketField("chunk", OsirisChunk(), OsirisChunk)]


class RMQSDeliverV2(Packet):
    """Version 2 adds the committed chunk id before the chunk (SPEC_NOTES.md)."""
    name = "RabbitMQStream Deliver v2"
    fields_desc = [ByteField("subscription_id", 0), LongField("committed_chunk_id", 0),
                   PacketField("chunk", OsirisChunk(), OsirisChunk)]


class RMQSSubscribe(Packet):
    """The offset is there for offset types 4 and 5 only (SPEC_NOTES.md); the real server also
    takes a Subscribe without the properties count (``properties`` None)."""
    name = "RabbitMQStream Subscribe"
    fields_desc = [IntField("correlation_id", 0), ByteField("subscription_id", 0),
                   StreamStringField("stream", b""),
                   ShortEnumField("offset_type", int(OffsetType.FIRST), _OFFSET_TYPES),
                   ConditionalField(OffsetValueField("offset", 0),
                                    lambda p: p.offset_type in OFFSET_TYPES_WITH_VALUE),
                   ShortField("credit", 0),
                   OptionalTail(StreamArrayField("properties", "property"))]


class RMQSBroker(_Entry):
    name = "RabbitMQStream broker"
    fields_desc = [ShortField("reference", 0), StreamStringField("host", b""), IntField("port", 0)]


class RMQSStreamMetadata(_Entry):
    name = "RabbitMQStream stream metadata"
    fields_desc = [StreamStringField("stream", b""), ShortEnumField("code", 0, _CODES),
                   ShortField("leader", 0), StreamArrayField("replicas", "u16")]


class RMQSMetadataResponse(Packet):
    """Entries are name, code, leader, replicas (SPEC_NOTES.md); no top-level code."""
    name = "RabbitMQStream MetadataResponse"
    fields_desc = [IntField("correlation_id", 0),
                   FieldLenField("broker_count", None, count_of="brokers", fmt="i"),
                   PacketListField("brokers", [], RMQSBroker, count_from=lambda p: p.broker_count,
                                   max_count=1 << 20),
                   FieldLenField("stream_count", None, count_of="streams", fmt="i"),
                   PacketListField("streams", [], RMQSStreamMetadata,
                                   count_from=lambda p: p.stream_count, max_count=1 << 20)]


def _response_head() -> list[Field]:
    return [IntField("correlation_id", 0), ShortEnumField("code", int(Code.OK), _CODES)]


class RMQSSaslAuthenticateResponse(Packet):
    name = "RabbitMQStream SaslAuthenticateResponse"
    fields_desc = [*_response_head(), OptionalTail(StreamBytesField("challenge", None))]


class RMQSOpenResponse(Packet):
    name = "RabbitMQStream OpenResponse"
    fields_desc = [*_response_head(), OptionalTail(StreamArrayField("properties", "property"))]


class RMQSRouteResponse(Packet):
    name = "RabbitMQStream RouteResponse"
    fields_desc = [*_response_head(), StreamArrayField("streams", "string")]


class RMQSConsumerUpdateResponse(Packet):
    name = "RabbitMQStream ConsumerUpdateResponse"
    fields_desc = [*_response_head(),
                   ShortEnumField("offset_type", int(OffsetType.NEXT), _OFFSET_TYPES),
                   OptionalTail(OffsetValueField("offset", 0))]


# -- bodies built from the codec's FIELDS layouts ----------------------------------------------

#: Codec field names that scapy reserves (``Packet.name`` is the layer's name).
FIELD_NAMES = {"name": "super_stream"}


def _field(name: str, kind: str) -> Field:
    name = FIELD_NAMES.get(name, name)
    if name == "code":
        return ShortEnumField(name, int(Code.OK), _CODES)
    simple = {"u8": ByteField, "u16": ShortField, "u32": IntField, "u64": LongField,
              "i64": SignedLongField}
    if kind in simple:
        return simple[kind](name, 0)
    if kind in ("str", "nstr"):
        return StreamStringField(name, b"" if kind == "str" else None)
    if kind == "nbytes":
        return StreamBytesField(name, None)
    items = {"strs": "string", "props": "property", "u64s": "u64", "versions": "version",
             "stats": "stat"}
    return StreamArrayField(name, items[kind])


_SPECIAL = {
    (codec.Publish, 1): RMQSPublish, (codec.Publish, 2): RMQSPublishV2,
    (codec.Deliver, 1): RMQSDeliver, (codec.Deliver, 2): RMQSDeliverV2,
    (codec.PublishError, 1): RMQSPublishError, (codec.Subscribe, 1): RMQSSubscribe,
    (codec.MetadataResponse, 1): RMQSMetadataResponse,
    (codec.SaslAuthenticateResponse, 1): RMQSSaslAuthenticateResponse,
    (codec.OpenResponse, 1): RMQSOpenResponse, (codec.RouteResponse, 1): RMQSRouteResponse,
    (codec.ConsumerUpdateResponse, 1): RMQSConsumerUpdateResponse,
}

#: (codec frame class, version) -> body layer (Heartbeat has none).
BODY_LAYERS: dict[tuple[type, int], type] = {}
for (_wire_key, _version), _cls in sorted(codec.FRAME_CLASSES.items()):
    _layer = _SPECIAL.get((_cls, _version))
    if _layer is None and _cls.FIELDS:
        _layer = type(f"RMQS{_cls.__name__}", (Packet,), {
            "name": f"RabbitMQStream {_cls.__name__}",
            "fields_desc": [_field(n, k) for n, k in _cls.FIELDS],
            "__module__": __name__,
            "__doc__": f"The body of {_cls.__name__}, field by field as the codec's FIELDS."})
        globals()[_layer.__name__] = _layer
        __all__.append(_layer.__name__)
    if _layer is not None:
        BODY_LAYERS[(_cls, _version)] = _layer


# -- bindings --------------------------------------------------------------------------------

for (_cls, _version), _layer in BODY_LAYERS.items():
    bind_layers(RabbitMQStream, _layer, response=int(_cls.response), key=int(_cls.key),
                version=_version)


def bind_rabbitmq_stream(port: int) -> None:
    """Dissect TCP traffic to or from ``port`` as RabbitMQ Stream. ``dport`` is bound last, so
    ``TCP() / RabbitMQStream()`` builds a client-to-server segment."""
    bind_layers(TCP, RabbitMQStream, sport=port)
    bind_layers(TCP, RabbitMQStream, dport=port)


bind_layers(TCP, RabbitMQStream, sport=DEFAULT_PORT)    # 5552, the stream plugin's port
bind_layers(TCP, RabbitMQStream, dport=DEFAULT_PORT)
