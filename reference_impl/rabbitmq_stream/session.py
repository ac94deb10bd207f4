"""The RabbitMQ Stream server's rules for one connection, sans-IO.

``receive(data, now) -> [bytes]`` answers what the client sent; ``tick(now) -> [bytes]`` runs
the heartbeat; bytes caused by other connections (Deliver after someone else's publish,
MetadataUpdate after a Delete) are handed to ``push`` when the glue attached one
(:meth:`attach`), else they wait in the outbox for the next ``receive``/``tick``/``flush``.

Order (document, "Authentication"; SPEC_NOTES.md): PeerProperties, SaslHandshake,
SaslAuthenticate, then the server's Tune, the client's Tune, Open. Frames other than those
before Open, an unknown key or version, or a malformed body get Close(13, "unknown frame")
and the connection ends; a frame above the tuned frame_max gets Close(14) and ends it.
"""
from __future__ import annotations

import logging
import struct
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Optional

from ..core.errors import Category, FrameError
from . import codec
from .chunk import ChunkType
from .codec import RawFrame
from .constants import (DEFAULT_FRAME_MAX, DEFAULT_HEARTBEAT, DOCUMENT_KEYS, RESPONSE_BIT, Code,
                        Key, OffsetType)
from .state import BrokerState, SuperStream

log = logging.getLogger("wirecheck.rabbitmq_stream")

_DELIVER_V1 = struct.Struct(">IHHB")        # size, key, version, subscription id
_DELIVER_V2 = struct.Struct(">IHHBQ")       # ... committed chunk id

MAX_REFERENCE = 256               # "PublisherReference => string // max 256 characters"
#: Hard ceiling on a frame when frame_max is 0 ("0 means no limit").
UNLIMITED_FRAME = 64 * 1024 * 1024
MECHANISMS = ("PLAIN", "AMQPLAIN")


class Phase(Enum):
    HANDSHAKE = "handshake"        # PeerProperties / SaslHandshake / SaslAuthenticate
    TUNING = "tuning"              # Tune sent, waiting for the client's Tune
    OPENING = "opening"            # waiting for Open
    OPEN = "open"
    CLOSED = "closed"


HANDSHAKE_KEYS = frozenset((Key.PEER_PROPERTIES, Key.SASL_HANDSHAKE, Key.SASL_AUTHENTICATE,
                            Key.CLOSE, Key.HEARTBEAT))
#: Keys a client may send, per profile. ``rabbitmq-3.10`` knows the document's 1-25 only.
CLIENT_KEYS_CURRENT = frozenset(range(1, 31)) - {Key.PUBLISH_CONFIRM, Key.PUBLISH_ERROR,
                                                 Key.DELIVER, Key.METADATA_UPDATE}
PROFILE_KEYS = {
    "document": frozenset(k for k in CLIENT_KEYS_CURRENT if k in DOCUMENT_KEYS),
    "rabbitmq-3.10": frozenset(k for k in CLIENT_KEYS_CURRENT if k in DOCUMENT_KEYS),
    "current": CLIENT_KEYS_CURRENT,
}
#: What ExchangeCommandVersions advertises: (key, min, max).
SERVER_VERSIONS = tuple((int(k), 1, 2 if k in (Key.PUBLISH, Key.DELIVER) else 1)
                        for k in sorted(CLIENT_KEYS_CURRENT | {Key.DELIVER, Key.PUBLISH_CONFIRM,
                                                               Key.PUBLISH_ERROR, Key.METADATA_UPDATE}))


@dataclass(slots=True)
class SessionConfig:
    frame_max: int = DEFAULT_FRAME_MAX
    heartbeat: int = DEFAULT_HEARTBEAT
    profile: str = "current"
    limits: codec.StreamConfig = field(default_factory=codec.StreamConfig)
    #: Handshake must finish within this many seconds (slow clients are dropped).
    handshake_timeout: float = 30.0


@dataclass(slots=True)
class Publisher:
    id: int
    stream: str
    reference: str


@dataclass(slots=True)
class Subscription:
    id: int
    stream: str
    position: int            # next chunk index to look at
    credit: int
    properties: dict


class StreamSession:
    protocol = "rabbitmq-stream"

    def __init__(self, state: BrokerState, config: SessionConfig | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.state = state
        self.config = config or SessionConfig()
        self.keys = PROFILE_KEYS.get(self.config.profile, CLIENT_KEYS_CURRENT)
        self.decoder = codec.Decoder(self.config.limits, parse=False)
        self.decoder.max_frame_size = self.config.frame_max or UNLIMITED_FRAME
        self.clock = clock           # wall clock for chunk timestamps
        self.phase = Phase.HANDSHAKE
        self.authenticated = False
        self.user: Optional[str] = None
        self.peer_properties: dict = {}
        self.frame_max = self.config.frame_max
        self.heartbeat = self.config.heartbeat
        self.deliver_version = 1
        self.publishers: dict[int, Publisher] = {}
        self.subscriptions: dict[int, Subscription] = {}
        self.close_reason: Optional[str] = None
        self._out: list[bytes] = []
        self._push: Optional[Callable[[list[bytes]], None]] = None
        self._close: Optional[Callable[[], None]] = None
        self._started: Optional[float] = None
        self._last_recv = self._last_send = 0.0
        self._correlation = 0
        state.sessions.add(self)

    # -- I/O surface --------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.phase is Phase.CLOSED

    def attach(self, push: Callable[[list[bytes]], None], close: Callable[[], None]) -> None:
        self._push, self._close = push, close

    def receive(self, data: bytes, now: float) -> list[bytes]:
        if self.closed:
            return []
        self._touch_recv(now)
        self.decoder.receive(data)
        try:
            while not self.closed and (raw := self.decoder.next_raw()) is not None:
                self._dispatch(raw)
        except FrameError as exc:
            if exc.category is Category.LENGTH_TOO_LARGE:
                self._fatal(Code.FRAME_TOO_LARGE, "frame too large")
            else:
                self._fatal(Code.UNKNOWN_FRAME, "unknown frame")
        return self._drain(now)

    def tick(self, now: float) -> list[bytes]:
        """Heartbeats and timeouts; call it every fraction of a second."""
        if self.closed:
            return []
        if self._started is None:
            self._started = self._last_recv = self._last_send = now
        if self.phase is not Phase.OPEN and now - self._started > self.config.handshake_timeout:
            self.close_reason = "handshake timeout"
            self._set_closed()
            return []
        if self.phase is Phase.OPEN and self.heartbeat:
            if now - self._last_recv > 2 * self.heartbeat:
                # Two heartbeat periods without a byte: the peer is gone (missed heartbeats).
                self.close_reason = "heartbeat timeout"
                self._set_closed()
                return []
            if now - self._last_send >= self.heartbeat:
                self._send(codec.Heartbeat())
        return self._drain(now)

    def flush(self) -> list[bytes]:
        out, self._out = self._out, []
        return out

    def connection_lost(self) -> None:
        self._set_closed()

    # -- internals ----------------------------------------------------------------------------

    def _touch_recv(self, now: float) -> None:
        if self._started is None:
            self._started = self._last_send = now
        self._last_recv = now

    def _drain(self, now: float) -> list[bytes]:
        if self._out:
            self._last_send = now
        out, self._out = self._out, []
        return out

    def _send(self, frame) -> None:
        self._out.append(codec.encode(frame))

    def _wake(self) -> None:
        """Bytes produced outside ``receive``: hand them to the transport now."""
        if self._push is not None and self._out:
            out, self._out = self._out, []
            self._push(out)
            if self.closed and self._close is not None:
                self._close()

    def _set_closed(self) -> None:
        if self.phase is Phase.CLOSED:
            return
        self.phase = Phase.CLOSED
        self.state.sessions.discard(self)
        for sub in self.subscriptions.values():
            readers = self.state.readers.get(sub.stream)
            if readers is not None:
                readers.discard(self)
        for pub in self.publishers.values():
            if self.state.references.get((pub.stream, pub.reference)) is self:
                del self.state.references[(pub.stream, pub.reference)]
        self.subscriptions.clear()
        self.publishers.clear()

    def _fatal(self, code: int, reason: str) -> None:
        """Server-initiated close: Close(code, reason), then the connection ends."""
        self._correlation += 1
        self._send(codec.Close(self._correlation, int(code), reason))
        self.close_reason = f"{code}: {reason}"
        self._set_closed()

    def _dispatch(self, raw: RawFrame) -> None:
        key = raw.key
        if key is None:                                   # size < 4
            return self._fatal(Code.UNKNOWN_FRAME, "unknown frame")
        if key == Key.TUNE or key == Key.TUNE | RESPONSE_BIT:
            return self._on_tune(raw)
        if key == Key.CONSUMER_UPDATE | RESPONSE_BIT and Key.CONSUMER_UPDATE in self.keys:
            return self._parse(raw) and None               # an answer we may not have asked for
        if key == Key.CLOSE | RESPONSE_BIT:                # answer to our Close
            self._parse(raw)
            return self._set_closed()
        if key & RESPONSE_BIT or key not in self.keys:
            return self._fatal(Code.UNKNOWN_FRAME, "unknown frame")
        if self.phase is not Phase.OPEN and key not in HANDSHAKE_KEYS and key != Key.OPEN:
            return self._fatal(Code.UNKNOWN_FRAME, "unknown frame")
        frame = self._parse(raw)
        if frame is not None:
            getattr(self, "_on_" + Key(key).name.lower())(frame)

    def _parse(self, raw: RawFrame):
        try:
            return codec.parse_frame(raw, self.config.limits)
        except FrameError:
            self._fatal(Code.UNKNOWN_FRAME, "unknown frame")
            return None

    # -- handshake ----------------------------------------------------------------------------

    def _on_peer_properties(self, f: codec.PeerProperties) -> None:
        self.peer_properties = dict(f.properties)
        self._send(codec.PeerPropertiesResponse(f.correlation_id, Code.OK, {
            "product": "wirecheck", "version": "1", "platform": "Python",
            "copyright": "wirecheck", "information": "reference broker for conformance testing",
            "cluster_name": "wirecheck"}))

    def _on_sasl_handshake(self, f: codec.SaslHandshake) -> None:
        self._send(codec.SaslHandshakeResponse(f.correlation_id, Code.OK, MECHANISMS))

    def _on_sasl_authenticate(self, f: codec.SaslAuthenticate) -> None:
        if self.authenticated:
            return self._fatal(Code.UNKNOWN_FRAME, "unknown frame")
        if f.mechanism not in MECHANISMS:
            return self._send(codec.SaslAuthenticateResponse(f.correlation_id,
                                                             Code.SASL_MECHANISM_NOT_SUPPORTED))
        creds = _plain(f.data) if f.mechanism == "PLAIN" else _amqplain(f.data)
        if creds is None:
            return self._send(codec.SaslAuthenticateResponse(f.correlation_id, Code.SASL_ERROR))
        if not self.state.authenticate(*creds):
            self._send(codec.SaslAuthenticateResponse(f.correlation_id, Code.AUTHENTICATION_FAILURE))
            self.close_reason = "authentication failure"
            return self._set_closed()
        self.authenticated = True
        self.user = creds[0]
        self._send(codec.SaslAuthenticateResponse(f.correlation_id, Code.OK))
        self._send(codec.Tune(self.config.frame_max, self.config.heartbeat))
        self.phase = Phase.TUNING

    def _on_tune(self, raw: RawFrame) -> None:
        if self.phase is not Phase.TUNING:
            return self._fatal(Code.UNKNOWN_FRAME, "unknown frame")
        f = self._parse(raw)
        if f is None:
            return
        self.frame_max = _negotiate(self.config.frame_max, f.frame_max)
        self.heartbeat = _negotiate(self.config.heartbeat, f.heartbeat)
        self.decoder.max_frame_size = self.frame_max or UNLIMITED_FRAME
        self.phase = Phase.OPENING

    def _on_open(self, f: codec.Open) -> None:
        if self.phase is not Phase.OPENING:
            return self._fatal(Code.UNKNOWN_FRAME, "unknown frame")
        if f.virtual_host not in self.state.vhosts:
            self._send(codec.OpenResponse(f.correlation_id, Code.VIRTUAL_HOST_ACCESS_FAILURE))
            self.close_reason = "virtual host access failure"
            return self._set_closed()
        self.phase = Phase.OPEN
        self._send(codec.OpenResponse(f.correlation_id, Code.OK, {
            "advertised_host": self.state.advertised_host,
            "advertised_port": str(self.state.advertised_port)}))

    def _on_close(self, f: codec.Close) -> None:
        self._send(codec.CloseResponse(f.correlation_id, Code.OK))
        self.close_reason = f"client closed: {f.code} {f.reason}"
        self._set_closed()

    def _on_heartbeat(self, f) -> None:
        pass                                   # receiving it already reset the timer

    # -- streams ------------------------------------------------------------------------------

    def _on_create(self, f: codec.Create) -> None:
        code = self._create(f.stream, f.arguments)
        self._send(codec.CreateResponse(f.correlation_id, code))

    def _create(self, name: str, arguments: dict) -> int:
        if not self.state.valid_name(name):
            return Code.PRECONDITION_FAILED
        existing = self.state.stream(name)
        if existing is not None:
            same = dict(existing.arguments) == dict(arguments)
            return Code.STREAM_ALREADY_EXISTS if same else Code.PRECONDITION_FAILED
        try:
            self.state.store.create(name, dict(arguments))
        except ValueError:
            return Code.PRECONDITION_FAILED
        return Code.OK

    def _on_delete(self, f: codec.Delete) -> None:
        if self.state.stream(f.stream) is None:
            return self._send(codec.DeleteResponse(f.correlation_id, Code.STREAM_DOES_NOT_EXIST))
        self._send(codec.DeleteResponse(f.correlation_id, Code.OK))
        self.state.delete_stream(f.stream)

    def stream_deleted(self, name: str) -> None:
        """Another connection (or this one) deleted ``name``: drop what used it and say so."""
        used = False
        for sid in [s for s, sub in self.subscriptions.items() if sub.stream == name]:
            del self.subscriptions[sid]
            used = True
        for pid in [p for p, pub in self.publishers.items() if pub.stream == name]:
            del self.publishers[pid]
            used = True
        if used and not self.closed:
            self._send(codec.MetadataUpdate(Code.STREAM_NOT_AVAILABLE, name))
            self._wake()

    def _on_metadata(self, f: codec.Metadata) -> None:
        brokers = (codec.BrokerInfo(0, self.state.advertised_host, self.state.advertised_port),)
        entries = []
        for name in f.streams:
            if self.state.stream(name) is None:
                entries.append(codec.StreamMetadata(name, Code.STREAM_DOES_NOT_EXIST, 0xFFFF, ()))
            else:
                entries.append(codec.StreamMetadata(name, Code.OK, 0, ()))
        self._send(codec.MetadataResponse(f.correlation_id, brokers, tuple(entries)))

    def _on_stream_stats(self, f: codec.StreamStats) -> None:
        log_ = self.state.stream(f.stream)
        if log_ is None:
            return self._send(codec.StreamStatsResponse(f.correlation_id, Code.STREAM_DOES_NOT_EXIST, {}))
        self._send(codec.StreamStatsResponse(f.correlation_id, Code.OK, dict(log_.stats())))

    def _on_exchange_command_versions(self, f: codec.ExchangeCommandVersions) -> None:
        theirs = {k: (lo, hi) for k, lo, hi in f.versions}
        if Key.DELIVER in theirs and theirs[Key.DELIVER][1] >= 2:
            self.deliver_version = 2
        self._send(codec.ExchangeCommandVersionsResponse(f.correlation_id, Code.OK, SERVER_VERSIONS))

    # -- super streams ------------------------------------------------------------------------

    def _on_create_super_stream(self, f: codec.CreateSuperStream) -> None:
        st = self.state
        if (not st.valid_name(f.name) or not f.partitions
                or len(f.partitions) != len(f.binding_keys)
                or len(set(f.partitions)) != len(f.partitions)):
            return self._send(codec.CreateSuperStreamResponse(f.correlation_id, Code.PRECONDITION_FAILED))
        if f.name in st.super_streams:
            return self._send(codec.CreateSuperStreamResponse(f.correlation_id, Code.STREAM_ALREADY_EXISTS))
        if any(st.stream(p) is not None for p in f.partitions):
            return self._send(codec.CreateSuperStreamResponse(f.correlation_id, Code.STREAM_ALREADY_EXISTS))
        for p in f.partitions:
            code = self._create(p, f.arguments)
            if code != Code.OK:
                return self._send(codec.CreateSuperStreamResponse(f.correlation_id, code))
        st.super_streams[f.name] = SuperStream(f.name, list(f.partitions), list(f.binding_keys),
                                               dict(f.arguments))
        self._send(codec.CreateSuperStreamResponse(f.correlation_id, Code.OK))

    def _on_delete_super_stream(self, f: codec.DeleteSuperStream) -> None:
        sup = self.state.super_streams.pop(f.name, None)
        if sup is None:
            return self._send(codec.DeleteSuperStreamResponse(f.correlation_id, Code.STREAM_DOES_NOT_EXIST))
        self._send(codec.DeleteSuperStreamResponse(f.correlation_id, Code.OK))
        for p in sup.partitions:
            if self.state.stream(p) is not None:
                self.state.delete_stream(p)

    def _on_route(self, f: codec.Route) -> None:
        sup = self.state.super_streams.get(f.super_stream)
        # An array of streams, as RabbitMQ 3.10 sends too (the document's single string is an
        # erratum); 3.10's missing response bit is not copied (the codec reads it from servers).
        single = False
        if sup is None:
            return self._send(codec.RouteResponse(f.correlation_id, Code.STREAM_DOES_NOT_EXIST, (), single))
        streams = tuple(sup.route(f.routing_key))
        code = Code.OK if streams else Code.STREAM_DOES_NOT_EXIST
        self._send(codec.RouteResponse(f.correlation_id, code, streams[:1] if single else streams, single))

    def _on_partitions(self, f: codec.Partitions) -> None:
        sup = self.state.super_streams.get(f.super_stream)
        if sup is None:
            return self._send(codec.PartitionsResponse(f.correlation_id, Code.STREAM_DOES_NOT_EXIST, ()))
        self._send(codec.PartitionsResponse(f.correlation_id, Code.OK, tuple(sup.partitions)))

    # -- publishing ---------------------------------------------------------------------------

    def _on_declare_publisher(self, f: codec.DeclarePublisher) -> None:
        code = self._declare(f)
        self._send(codec.DeclarePublisherResponse(f.correlation_id, code))

    def _declare(self, f: codec.DeclarePublisher) -> int:
        if f.publisher_id in self.publishers:
            return Code.PRECONDITION_FAILED
        if len(f.reference) > MAX_REFERENCE:
            return Code.PRECONDITION_FAILED
        if self.state.stream(f.stream) is None:
            return Code.STREAM_DOES_NOT_EXIST
        if f.reference:
            owner = self.state.references.get((f.stream, f.reference))
            if owner is not None and not owner.closed:
                return Code.PRECONDITION_FAILED
            self.state.references[(f.stream, f.reference)] = self
        self.publishers[f.publisher_id] = Publisher(f.publisher_id, f.stream, f.reference)
        return Code.OK

    def _on_delete_publisher(self, f: codec.DeletePublisher) -> None:
        pub = self.publishers.pop(f.publisher_id, None)
        if pub is None:
            return self._send(codec.DeletePublisherResponse(f.correlation_id, Code.PUBLISHER_DOES_NOT_EXIST))
        if pub.reference and self.state.references.get((pub.stream, pub.reference)) is self:
            del self.state.references[(pub.stream, pub.reference)]
        self._send(codec.DeletePublisherResponse(f.correlation_id, Code.OK))

    def _on_query_publisher_sequence(self, f: codec.QueryPublisherSequence) -> None:
        log_ = self.state.stream(f.stream)
        if log_ is None:
            return self._send(codec.QueryPublisherSequenceResponse(
                f.correlation_id, Code.STREAM_DOES_NOT_EXIST, 0))
        seq = log_.writer_sequence(f.reference) if f.reference else None
        self._send(codec.QueryPublisherSequenceResponse(f.correlation_id, Code.OK, seq or 0))

    def _on_publish(self, f: codec.Publish) -> None:
        pub = self.publishers.get(f.publisher_id)
        if pub is None:
            errors = tuple((m.publishing_id, Code.PUBLISHER_DOES_NOT_EXIST) for m in f.messages)
            return self._send(codec.PublishError(f.publisher_id, errors))
        log_ = self.state.stream(pub.stream)
        if log_ is None:
            errors = tuple((m.publishing_id, Code.STREAM_DOES_NOT_EXIST) for m in f.messages)
            return self._send(codec.PublishError(f.publisher_id, errors))
        # Deduplication: with a reference, ids at or below the last stored one are dropped
        # but still confirmed (the publisher only needs to know they are safe).
        last = (log_.writer_sequence(pub.reference) or 0) if pub.reference else None
        fresh = f.messages if last is None else [m for m in f.messages if m.publishing_id > last]
        if fresh:
            seqs = None
            if pub.reference:
                seqs = {pub.reference: max(m.publishing_id for m in fresh)}
            try:
                log_.append([m.entry() for m in fresh], int(self.clock() * 1000), seqs)
            except OSError as exc:
                log.error("append to %s failed: %s", pub.stream, exc)
                errors = tuple((m.publishing_id, Code.INTERNAL_ERROR) for m in f.messages)
                return self._send(codec.PublishError(f.publisher_id, errors))
        self._send(codec.PublishConfirm(f.publisher_id, tuple(m.publishing_id for m in f.messages)))
        if fresh:
            self.state.appended(pub.stream)

    # -- consuming ----------------------------------------------------------------------------

    def _on_subscribe(self, f: codec.Subscribe) -> None:
        if f.subscription_id in self.subscriptions:
            return self._send(codec.SubscribeResponse(f.correlation_id, Code.SUBSCRIPTION_ID_ALREADY_EXISTS))
        log_ = self.state.stream(f.stream)
        if log_ is None:
            return self._send(codec.SubscribeResponse(f.correlation_id, Code.STREAM_DOES_NOT_EXIST))
        t = f.offset_type
        if t == OffsetType.FIRST:
            position = log_.first_chunk_index()
        elif t == OffsetType.LAST:
            last = log_.last_user_chunk_index()
            position = log_.end_chunk_index() if last is None else last
        elif t == OffsetType.NEXT:
            position = log_.end_chunk_index()
        elif t == OffsetType.OFFSET:
            position = log_.chunk_index(max(f.offset, log_.first_offset))
        elif t == OffsetType.TIMESTAMP:
            position = log_.chunk_index_for_timestamp(f.offset)
        else:
            return self._send(codec.SubscribeResponse(f.correlation_id, Code.PRECONDITION_FAILED))
        sub = Subscription(f.subscription_id, f.stream, position, f.credit, dict(f.properties))
        self.subscriptions[f.subscription_id] = sub
        self.state.readers.setdefault(f.stream, set()).add(self)
        self._send(codec.SubscribeResponse(f.correlation_id, Code.OK))
        self._deliver(sub)

    def _on_credit(self, f: codec.Credit) -> None:
        sub = self.subscriptions.get(f.subscription_id)
        if sub is None:
            # The only answer Credit ever gets, without a correlation id (SPEC_NOTES.md).
            return self._send(codec.CreditResponse(Code.SUBSCRIPTION_ID_DOES_NOT_EXIST, f.subscription_id))
        sub.credit = min(sub.credit + f.credit, 0xFFFF)
        self._deliver(sub)

    def _on_unsubscribe(self, f: codec.Unsubscribe) -> None:
        sub = self.subscriptions.pop(f.subscription_id, None)
        if sub is None:
            return self._send(codec.UnsubscribeResponse(f.correlation_id, Code.SUBSCRIPTION_ID_DOES_NOT_EXIST))
        if not any(s.stream == sub.stream for s in self.subscriptions.values()):
            self.state.readers.get(sub.stream, set()).discard(self)
        self._send(codec.UnsubscribeResponse(f.correlation_id, Code.OK))

    def _on_store_offset(self, f: codec.StoreOffset) -> None:
        log_ = self.state.stream(f.stream)
        if log_ is None or not f.reference or len(f.reference) > MAX_REFERENCE:
            return                                   # no response exists for StoreOffset
        log_.store_offset(f.reference, f.offset, int(self.clock() * 1000))

    def _on_query_offset(self, f: codec.QueryOffset) -> None:
        log_ = self.state.stream(f.stream)
        if log_ is None:
            return self._send(codec.QueryOffsetResponse(f.correlation_id, Code.STREAM_DOES_NOT_EXIST, 0))
        offset = log_.stored_offset(f.reference)
        if offset is None:
            return self._send(codec.QueryOffsetResponse(f.correlation_id, Code.NO_OFFSET, 0))
        self._send(codec.QueryOffsetResponse(f.correlation_id, Code.OK, offset))

    def _on_consumer_update(self, f) -> None:
        self._fatal(Code.UNKNOWN_FRAME, "unknown frame")   # a server-to-client request

    def _deliver(self, sub: Subscription) -> None:
        """Send chunks while the subscription has credit and the stream has user chunks."""
        log_ = self.state.stream(sub.stream)
        if log_ is None:
            return
        sub.position = max(sub.position, log_.first_chunk_index())
        end = log_.end_chunk_index()
        while sub.credit > 0 and sub.position < end:
            index = sub.position
            sub.position += 1
            if log_.chunk_type_at(index) != ChunkType.USER:
                continue                      # tracking chunks are never delivered
            chunk = log_.delivery_bytes_at(index)
            if chunk is None:
                continue
            sub.credit -= 1
            # The chunk goes out as stored (CRC checked by the store), without re-encoding.
            if self.deliver_version >= 2:
                committed = log_.stats().get("committed_chunk_id", 0)
                head = _DELIVER_V2.pack(13 + len(chunk), Key.DELIVER, 2, sub.id,
                                        max(committed, 0))
            else:
                head = _DELIVER_V1.pack(5 + len(chunk), Key.DELIVER, 1, sub.id)
            self._out.append(head + chunk)

    def stream_grew(self, name: str) -> None:
        if self.closed:
            return
        for sub in self.subscriptions.values():
            if sub.stream == name:
                self._deliver(sub)
        self._wake()


def _negotiate(server: int, client: int) -> int:
    """Tune: the smaller non-zero value wins; 0 ("no limit") only if both say 0."""
    if server == 0:
        return client
    if client == 0:
        return server
    return min(server, client)


def _plain(data: Optional[bytes]) -> Optional[tuple[str, str]]:
    """PLAIN (RFC 4616): ``authzid \\0 user \\0 password``."""
    if data is None:
        return None
    parts = data.split(b"\0")
    if len(parts) != 3:
        return None
    try:
        return parts[1].decode("utf-8"), parts[2].decode("utf-8")
    except UnicodeDecodeError:
        return None


def _amqplain(data: Optional[bytes]) -> Optional[tuple[str, str]]:
    """AMQPLAIN: an AMQP 0-9-1 field table body with LOGIN and PASSWORD long strings."""
    if data is None:
        return None
    fields: dict[str, bytes] = {}
    pos = 0
    try:
        while pos < len(data):
            n = data[pos]
            name = data[pos + 1:pos + 1 + n].decode("utf-8")
            pos += 1 + n
            if data[pos:pos + 1] != b"S":
                return None
            size = int.from_bytes(data[pos + 1:pos + 5], "big")
            value = data[pos + 5:pos + 5 + size]
            if len(value) != size:
                return None
            fields[name] = value
            pos += 5 + size
        return fields["LOGIN"].decode("utf-8"), fields["PASSWORD"].decode("utf-8")
    except (IndexError, KeyError, UnicodeDecodeError):
        return None
