"""The RabbitMQ Stream server's rules for one connection, sans-IO.

``receive(data, now) -> [bytes]`` answers what the client sent; ``tick(now) -> [bytes]`` runs
the heartbeat; bytes caused by other connections (Deliver after someone else's publish,
MetadataUpdate after a Delete) are handed to ``push`` when the glue attached one
(:meth:`attach`), else they wait in the outbox for the next ``receive``/``tick``/``flush``.

Order (document, "Authentication"; SPEC_NOTES.md): PeerProperties, SaslHandshake,
SaslAuthenticate, then the server's Tune, the client's Tune, Open. Before Open, any other
frame (Heartbeat and Close included) ends the connection without a word, as RabbitMQ does.
After Open, an unknown key or version, a handshake command, or a malformed body gets
Close(13, "unknown frame") and the connection ends; a frame above the tuned frame_max gets
Close(14) and ends it. A failed SaslAuthenticate or a refused Open is answered, then the
connection ends.
"""
from __future__ import annotations

import logging
import struct
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Optional

from ..core.errors import Category, FrameError
from . import codec, sasl
from .batch import WriteBatch
from .chunk import ChunkType
from .codec import RawFrame
from .constants import DEFAULT_FRAME_MAX, DEFAULT_HEARTBEAT, DOCUMENT_KEYS, RESPONSE_BIT, Code, Key
from .store import StoreError
from .state import BrokerState, SuperStream, start_chunk

log = logging.getLogger("wirecheck.rabbitmq_stream")

_DELIVER_V1 = struct.Struct(">IHHB")        # size, key, version, subscription id
_DELIVER_V2 = struct.Struct(">IHHBQ")       # ... committed chunk id

#: "PublisherReference => string // max 256 characters"; tracking records (Osiris, and this
#: broker's store) hold a reference's length in one byte, so 255 UTF-8 bytes is the bound.
MAX_REFERENCE_BYTES = 255


def _reference_too_long(reference: str) -> bool:
    return len(reference.encode("utf-8")) > MAX_REFERENCE_BYTES
#: Hard ceiling on a frame when frame_max is 0 ("0 means no limit").
UNLIMITED_FRAME = 64 * 1024 * 1024
MECHANISMS = sasl.MECHANISMS
#: Heartbeat periods of silence from the client after which it is taken for gone.
HEARTBEAT_MISSED = 3


class Phase(Enum):
    HANDSHAKE = "handshake"        # PeerProperties / SaslHandshake / SaslAuthenticate
    TUNING = "tuning"              # Tune sent, waiting for the client's Tune
    OPENING = "opening"            # waiting for Open
    OPEN = "open"
    CLOSED = "closed"


#: The only commands before Open (plus the client's Tune and Open itself); RabbitMQ 3.10
#: drops a connection that sends anything else first, Heartbeat and Close included.
HANDSHAKE_KEYS = frozenset((Key.PEER_PROPERTIES, Key.SASL_HANDSHAKE, Key.SASL_AUTHENTICATE))
#: Keys a client may send, per profile. ``rabbitmq-3.10`` knows the document's 1-25 only.
CLIENT_KEYS_CURRENT = frozenset(range(1, 31)) - {Key.PUBLISH_CONFIRM, Key.PUBLISH_ERROR,
                                                 Key.DELIVER, Key.METADATA_UPDATE}
PROFILE_KEYS = {
    "document": frozenset(k for k in CLIENT_KEYS_CURRENT if k in DOCUMENT_KEYS),
    "rabbitmq-3.10": frozenset(k for k in CLIENT_KEYS_CURRENT if k in DOCUMENT_KEYS),
    "current": CLIENT_KEYS_CURRENT,
}
#: What ExchangeCommandVersions advertises: (key, min, max).
#: Frames that join the pending write batch (rabbitmq-3.10, batch.py); any other frame writes it
#: first. A Heartbeat neither reads nor writes a stream.
BATCHED_KEYS = frozenset((Key.PUBLISH, Key.STORE_OFFSET, Key.HEARTBEAT))
SERVER_VERSIONS = tuple((int(k), 1, 2 if k in (Key.PUBLISH, Key.DELIVER) else 1)
                        for k in sorted(CLIENT_KEYS_CURRENT | {Key.DELIVER, Key.PUBLISH_CONFIRM,
                                                               Key.PUBLISH_ERROR, Key.METADATA_UPDATE}))


@dataclass(slots=True)
class SessionConfig:
    frame_max: int = DEFAULT_FRAME_MAX
    heartbeat: int = DEFAULT_HEARTBEAT
    profile: str = "current"
    limits: codec.StreamConfig = field(default_factory=codec.StreamConfig)
    #: Open must come within this many seconds of connecting (RabbitMQ 3.10: 10 s).
    handshake_timeout: float = 10.0


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
    group: Optional[str] = None      # single-active-consumer group name
    active: bool = True              # False: a group member waiting for its turn
    update: Optional[int] = None     # correlation id of the ConsumerUpdate awaiting an answer


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
        # RabbitMQ 3.10's writer batches what reaches it together (batch.py); elsewhere each
        # Publish and StoreOffset is written as it comes
        self._batch = WriteBatch() if self.config.profile == "rabbitmq-3.10" else None
        state.sessions.add(self)

    # -- I/O surface --------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.phase is Phase.CLOSED

    @property
    def established(self) -> bool:
        """Open accepted (the glue's byte budget for the handshake stops here)."""
        return self.phase is Phase.OPEN

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
        if self._batch:
            self._write_batch()
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
            # As RabbitMQ 3.10 does (SPEC_NOTES.md): a Heartbeat after half a period without
            # sending, and the peer is gone after three periods without a byte from it.
            if now - self._last_recv > HEARTBEAT_MISSED * self.heartbeat:
                self.close_reason = "heartbeat timeout"
                self._set_closed()
                return []
            if now - self._last_send >= self.heartbeat / 2:
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
        for sub in list(self.subscriptions.values()):
            readers = self.state.readers.get(sub.stream)
            if readers is not None:
                readers.discard(self)
            self._leave_group(sub)
        self.subscriptions.clear()
        self.publishers.clear()

    def _fatal(self, code: int, reason: str) -> None:
        """Server-initiated close: Close(code, reason), then the connection ends. Before Open
        the connection just ends: RabbitMQ 3.10 sends nothing to a peer that has not finished
        the handshake."""
        if self.phase is not Phase.OPEN:
            self.close_reason = f"{code}: {reason} (before Open)"
            return self._set_closed()
        self._correlation += 1
        self._send(codec.Close(self._correlation, int(code), reason))
        self.close_reason = f"{code}: {reason}"
        self._set_closed()

    def _dispatch(self, raw: RawFrame) -> None:
        key = raw.key
        if self._batch and key not in BATCHED_KEYS:
            self._write_batch()                       # it sees everything sent before it
        if key is None:                                   # size < 4
            return self._fatal(Code.UNKNOWN_FRAME, "unknown frame")
        if key == Key.TUNE or key == Key.TUNE | RESPONSE_BIT:
            return self._on_tune(raw)
        if key == Key.CONSUMER_UPDATE | RESPONSE_BIT and Key.CONSUMER_UPDATE in self.keys:
            frame = self._parse(raw)                       # the answer to our ConsumerUpdate
            return None if frame is None else self._on_consumer_update_response(frame)
        if key == Key.CLOSE | RESPONSE_BIT:                # answer to our Close
            self._parse(raw)
            return self._set_closed()
        if key & RESPONSE_BIT or key not in self.keys:
            return self._fatal(Code.UNKNOWN_FRAME, "unknown frame")
        before_open = self.phase is not Phase.OPEN
        if before_open != (key in HANDSHAKE_KEYS or key == Key.OPEN):
            # Before Open only the handshake; after it, the handshake again is an error.
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
        # Every failure is answered, then the connection ends (RabbitMQ 3.10, SPEC_NOTES.md).
        if f.mechanism not in MECHANISMS:
            return self._refuse_auth(f, Code.SASL_MECHANISM_NOT_SUPPORTED, "mechanism not supported")
        creds = sasl.plain(f.data) if f.mechanism == "PLAIN" else sasl.amqplain(f.data)
        if creds is None:
            return self._refuse_auth(f, Code.SASL_ERROR, "malformed SASL response")
        if not self.state.authenticate(*creds):
            return self._refuse_auth(f, Code.AUTHENTICATION_FAILURE, "authentication failure")
        self.authenticated = True
        self.user = creds[0]
        self._send(codec.SaslAuthenticateResponse(f.correlation_id, Code.OK))
        self._send(codec.Tune(self.config.frame_max, self.config.heartbeat))
        self.phase = Phase.TUNING

    def _refuse_auth(self, f: codec.SaslAuthenticate, code: int, reason: str) -> None:
        self._send(codec.SaslAuthenticateResponse(f.correlation_id, code))
        self.close_reason = reason
        self._set_closed()

    def _on_tune(self, raw: RawFrame) -> None:
        if self.phase is not Phase.TUNING:
            return self._fatal(Code.UNKNOWN_FRAME, "unknown frame")
        f = self._parse(raw)
        if f is None:
            return
        self.frame_max = _negotiate(self.config.frame_max, f.frame_max)
        # The client answers "with the settings he agrees on" ("Authentication"): its
        # heartbeat is the connection's, 0 ("no heartbeat") included, as RabbitMQ takes it.
        self.heartbeat = f.heartbeat
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
        brokers, entries = self.state.metadata(f.streams, as_rabbitmq_310=self.config.profile == "rabbitmq-3.10")
        self._send(codec.MetadataResponse(f.correlation_id, brokers, entries))

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

    @property
    def _routing_response_bit(self) -> bool:
        """RabbitMQ 3.10 answers Route and Partitions with the request key (bit 15 clear);
        speaking that profile, so does this broker (the suite's profile feature
        ``route_response_bit`` says the same of the target), and nowhere else."""
        return self.config.profile != "rabbitmq-3.10"

    def _on_route(self, f: codec.Route) -> None:
        sup = self.state.super_streams.get(f.super_stream)
        # An array of streams, as RabbitMQ 3.10 sends too (the document's single string is an
        # erratum).
        bit = self._routing_response_bit
        if sup is None:
            return self._send(codec.RouteResponse(f.correlation_id, Code.STREAM_DOES_NOT_EXIST, (),
                                                  response_bit=bit))
        streams = tuple(sup.route(f.routing_key))
        code = Code.OK if streams else Code.STREAM_DOES_NOT_EXIST
        self._send(codec.RouteResponse(f.correlation_id, code, streams, response_bit=bit))

    def _on_partitions(self, f: codec.Partitions) -> None:
        sup = self.state.super_streams.get(f.super_stream)
        bit = self._routing_response_bit
        if sup is None:
            return self._send(codec.PartitionsResponse(f.correlation_id, Code.STREAM_DOES_NOT_EXIST, (),
                                                       response_bit=bit))
        self._send(codec.PartitionsResponse(f.correlation_id, Code.OK, tuple(sup.partitions),
                                            response_bit=bit))

    # -- publishing ---------------------------------------------------------------------------

    def _on_declare_publisher(self, f: codec.DeclarePublisher) -> None:
        code = self._declare(f)
        self._send(codec.DeclarePublisherResponse(f.correlation_id, code))

    def _declare(self, f: codec.DeclarePublisher) -> int:
        if f.publisher_id in self.publishers:
            return Code.PRECONDITION_FAILED
        if _reference_too_long(f.reference):
            return Code.PRECONDITION_FAILED
        if self.state.stream(f.stream) is None:
            return Code.STREAM_DOES_NOT_EXIST
        # A reference is unique among this connection's publishers of the stream only: RabbitMQ
        # 3.10 lets publishers on other connections share it (and its sequence).
        if f.reference and any(p.stream == f.stream and p.reference == f.reference
                               for p in self.publishers.values()):
            return Code.PRECONDITION_FAILED
        self.publishers[f.publisher_id] = Publisher(f.publisher_id, f.stream, f.reference)
        return Code.OK

    def _on_delete_publisher(self, f: codec.DeletePublisher) -> None:
        pub = self.publishers.pop(f.publisher_id, None)
        if pub is None:
            return self._send(codec.DeletePublisherResponse(f.correlation_id, Code.PUBLISHER_DOES_NOT_EXIST))
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
        # In order: an id at or below the last one kept, earlier in this frame included, is a
        # duplicate (RabbitMQ 3.10 drops 7 after 10 in one Publish).
        fresh = list(f.messages)
        last = None
        if pub.reference:
            last = self._batch.sequence(pub.stream, pub.reference) if self._batch else None
            if last is None:
                last = log_.writer_sequence(pub.reference) or 0
            fresh = []
            for m in f.messages:
                if m.publishing_id > last:
                    fresh.append(m)
                    last = m.publishing_id
        if self._batch is not None:
            entries = [m.entry() for m in fresh]
            if self._batch.would_overflow(pub.stream, entries):
                self._write_batch()
            self._batch.publish(pub.stream, f.publisher_id, tuple(m.publishing_id for m in f.messages),
                                entries, pub.reference, last)
            return
        if fresh:
            seqs = None
            if pub.reference:
                seqs = {pub.reference: last}
            try:
                log_.append([m.entry() for m in fresh], int(self.clock() * 1000), seqs)
            except (OSError, StoreError) as exc:
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
        position = start_chunk(log_, f.offset_type, f.offset)
        group = None
        properties = f.properties or {}
        if properties.get("single-active-consumer") == "true" and Key.CONSUMER_UPDATE in self.keys:
            group = properties.get("name")
            if not group:               # a group is named by its consumers' "name"
                position = None
        if position is None:
            return self._send(codec.SubscribeResponse(f.correlation_id, Code.PRECONDITION_FAILED))
        sub = Subscription(f.subscription_id, f.stream, position, f.credit, dict(properties), group)
        self.subscriptions[f.subscription_id] = sub
        self.state.readers.setdefault(f.stream, set()).add(self)
        self._send(codec.SubscribeResponse(f.correlation_id, Code.OK))
        if group is None:
            return self._deliver(sub)
        # Single active consumer: the first member of the group is told it is active by
        # ConsumerUpdate and consumes from the offset specification of its answer; the others
        # wait, silent, until it leaves (SPEC_NOTES.md, command 26).
        sub.active = False
        members = self.state.consumer_groups.setdefault((f.stream, group), [])
        members.append((self, sub.id))
        if len(members) == 1:
            self._activate(sub)

    def _activate(self, sub: Subscription) -> None:
        self._correlation += 1
        sub.update = self._correlation
        self._send(codec.ConsumerUpdate(sub.update, sub.id, 1))

    def _on_consumer_update_response(self, f: codec.ConsumerUpdateResponse) -> None:
        sub = next((s for s in self.subscriptions.values() if s.update == f.correlation_id), None)
        if sub is None:
            return                       # an answer to nothing still waiting: ignored
        log_ = self.state.stream(sub.stream)
        position = start_chunk(log_, f.offset_type, f.offset) if log_ is not None else None
        if position is None:
            return self._fatal(Code.UNKNOWN_FRAME, "unknown frame")
        sub.position, sub.active, sub.update = position, True, None
        self._deliver(sub)

    def _leave_group(self, sub: Subscription) -> None:
        """``sub`` leaves its group; if it was the active member, the next one takes over."""
        members = self.state.consumer_groups.get((sub.stream, sub.group))
        if sub.group is None or members is None or (self, sub.id) not in members:
            return
        was_active = members[0] == (self, sub.id)
        members.remove((self, sub.id))
        if not members:
            del self.state.consumer_groups[(sub.stream, sub.group)]
        elif was_active:
            session, sub_id = members[0]
            session._activate(session.subscriptions[sub_id])
            if session is not self:
                session._wake()

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
        self._leave_group(sub)

    def _on_store_offset(self, f: codec.StoreOffset) -> None:
        log_ = self.state.stream(f.stream)
        if log_ is None or not f.reference or _reference_too_long(f.reference):
            return                                   # no response exists for StoreOffset
        if self._batch is not None:
            return self._batch.store_offset(f.stream, f.reference, f.offset)
        try:
            log_.store_offset(f.reference, f.offset, int(self.clock() * 1000))
        except (OSError, StoreError) as exc:
            log.error("storing offset %r on %s failed: %s", f.reference, f.stream, exc)

    def _write_batch(self) -> None:
        """Write what this connection's read left pending (profile rabbitmq-3.10, batch.py),
        then confirm it."""
        for name, written, answers in self._batch.write(self.state.stream, int(self.clock() * 1000)):
            if not self.closed:
                for frame in answers:
                    self._send(frame)
            if written:
                self.state.appended(name)

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
        if not sub.active:
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
