"""RabbitMQ Stream responses: the frame classes under keys with the response bit (bit 15).

Server -> client, except TuneResponse and ConsumerUpdateResponse: the client's answers to the
server's Tune and ConsumerUpdate. Most start with the request's correlation id then a u16
response code (the exceptions are below). Most bodies are read and written from their
``FIELDS`` layout (wire.py); MetadataResponse (with its parts, BrokerInfo and StreamMetadata),
SaslAuthenticateResponse, OpenResponse, RouteResponse and ConsumerUpdateResponse read and
write their own.

Where the real server differs from the document, these classes follow the server
(SPEC_NOTES.md, RabbitMQ Stream): Tune's answer has neither correlation id nor code; Open's
response omits the property count when it has no properties; the Credit response has no
correlation id; the Metadata response has no top-level code, and its entries are name, code,
leader, replicas; SaslAuthenticate's challenge is present only when there is one. Some
answers take more than one form, all of which decode: the Route response's one string (the
document) or array of streams (current servers); a ConsumerUpdate response's offset for any
offset type (rstream); and, from RabbitMQ 3.10, Route and Partitions responses under the
request key (``response_bit=False``, read so by codec.py's ``parse_frame`` given
``origin="server"``). The responses to commands 26-30 are the real server's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .constants import OFFSET_TYPES_WITH_VALUE, Key
from .wire import (_I16, _I32, _I64, _U16, _U32, _U64, CODE, CORR, _b, _Frame, _frame, _props,
                   _Reader, _s, _strs)


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


@_frame(Key.STREAM_STATS, CORR, CODE, ("stats", "stats"), response=True)
@dataclass(frozen=True, slots=True)
class StreamStatsResponse(_Frame):
    correlation_id: int
    code: int
    stats: dict = field(default_factory=dict)
    version: int = 1

