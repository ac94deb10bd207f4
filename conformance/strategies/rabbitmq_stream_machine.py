"""A hypothesis state machine for one RabbitMQ Stream connection, run against the sans-IO session.

The machine keeps a model of what the server must do (rabbitmq-stream-protocol.adoc
"Authentication", "DeclarePublisher", "Publish", "Subscribe", "Credit", "StoreOffset",
"QueryOffset", "Create", "Delete"; SPEC_NOTES.md, RabbitMQ Stream, for the real server's rules)
and checks every answer against it: response codes, publish confirms, and each Deliver's
subscription, first offset and messages. It reaches the server through a *driver*:
``exchange(frames: list[bytes], barrier: bool, names) -> list[frame]`` sends the bytes and,
with ``barrier`` (once the connection is open: Metadata is refused before), a barrier Metadata
request for ``names``, and returns every frame answered before the barrier's answer (kept as
``barrier_answer``), so "no answer" (StoreOffset, Credit, Heartbeat) is proven, never waited
for. :class:`SessionDriver` runs the reference
:class:`StreamSession` in memory; every frame it sends must be one whole frame of a class the
server sends ("nothing but documented frames comes out").

Invariants checked on every step: each publishing id of a Publish is confirmed exactly once
(or errored once, for an unknown publisher); a subscription never gets more chunks than the
credit it was given; chunk offsets delivered to a subscription only increase, and are the
model's; the barrier's Metadata agrees with the model about which streams exist; the
connection stays open.

Time is kept out: the driver passes a fixed ``now`` and clock, so there are no heartbeats and
every chunk has the same timestamp (the machine never subscribes by timestamp).

Offsets follow the real server: a user chunk takes one offset per record (a sub-batch of N
records takes N), and each StoreOffset takes one of its own (SPEC_NOTES.md: "each StoreOffset
occupies an offset of its own in the stream"). Publishing ids start at 1 and increase per
publisher, as a deduplicating client's do; re-sending old ids under a reference is
deduplicated (confirmed, not stored).
"""
from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

from hypothesis import strategies as st
from hypothesis.stateful import (Bundle, RuleBasedStateMachine, initialize, invariant,
                                 multiple, rule)

from reference_impl.rabbitmq_stream import codec
from reference_impl.rabbitmq_stream.chunk import ChunkType, SubBatchEntry
from reference_impl.rabbitmq_stream.codec import PublishedMessage
from reference_impl.rabbitmq_stream.constants import Code, Compression, Key, OffsetType
from reference_impl.rabbitmq_stream.session import SessionConfig, StreamSession
from reference_impl.rabbitmq_stream.state import BrokerState
from reference_impl.rabbitmq_stream.store import StreamStore

from .rabbitmq_stream import SERVER_CLASSES

#: Barrier Metadata requests use correlation ids above every id the machine draws.
BARRIER_BASE = 0xB000_0000
cids = st.integers(0, BARRIER_BASE - 16)     # the handshake uses cid .. cid + 4
STREAM_NAMES = ("s1", "s2")              # few, so creates, deletes and uses meet
#: Create arguments: none, or a retention the machine never reaches (time stands still).
ARGUMENTS = ({}, {"max-age": "7D"})
PUBLISHER_IDS = st.integers(0, 1)
SUBSCRIPTION_IDS = st.integers(0, 1)
UNKNOWN_ID = 255                          # never declared, never subscribed
REFERENCES = ("", "ref-a", "ref-b")       # "" = no deduplication, no stored offsets
USER, PASSWORD, VHOST = "guest", "guest", "/"
SERVER_FRAMES = frozenset(SERVER_CLASSES)

records = st.binary(max_size=16)
#: A message body, or a sub-batch of 1-3 records (uncompressed or gzip) spanning 1-3 offsets.
bodies = records | st.builds(SubBatchEntry.of, st.lists(records, min_size=1, max_size=3),
                             st.sampled_from((Compression.NONE, Compression.GZIP)))


def split_at_barrier(answers: list, barrier: int) -> tuple[list, object]:
    """(answers before the barrier's answer, the barrier's answer); it must come last."""
    for i, frame in enumerate(answers):
        if isinstance(frame, codec.MetadataResponse) and frame.correlation_id == barrier:
            if i != len(answers) - 1:
                raise AssertionError(f"frames after the barrier's answer: {answers[i + 1:]}")
            return answers[:i], frame
    raise AssertionError(f"no answer to the barrier Metadata({barrier}) in {answers}")


class SessionDriver:
    """The reference session in memory, over a fresh in-memory store; time stands still."""

    def __init__(self, now: float = 1_700_000_000.0, config: SessionConfig | None = None) -> None:
        self.now = now
        self.session = StreamSession(BrokerState(StreamStore(None)), config or SessionConfig(),
                                     clock=lambda: self.now)
        # Server-to-client bytes, whatever the tuned frame_max (a Deliver may exceed it).
        self.decoder = codec.Decoder(codec.StreamConfig(max_frame_size=0), origin="server")
        self.barrier_answer = None
        self._barriers = itertools.count(BARRIER_BASE)

    @property
    def closed(self) -> bool:
        return self.session.closed

    def exchange(self, frames: list[bytes], barrier: bool, names=()) -> list:
        wire = b"".join(frames)
        cid = next(self._barriers)
        if barrier:
            wire += codec.encode(codec.Metadata(cid, tuple(names)))
        answers = []
        for out in self.session.receive(wire, self.now):
            got = self.decoder.feed(out)
            # The session hands out whole frames, one per item.
            assert len(got) == 1 and self.decoder.buffered == 0, f"not one whole frame: {out.hex()}"
            assert type(got[0]) in SERVER_FRAMES, f"the server sent a {type(got[0]).__name__}"
            answers.append(got[0])
        if not barrier:
            return answers
        answers, self.barrier_answer = split_at_barrier(answers, cid)
        return answers

    def close(self) -> None:
        self.session.connection_lost()


@dataclass
class ModelChunk:
    first_offset: int
    records: list | None              # None: a tracking chunk (never delivered)


@dataclass
class ModelStream:
    arguments: dict
    chunks: list = field(default_factory=list)
    next_offset: int = 0
    sequences: dict = field(default_factory=dict)     # publisher reference -> last id
    offsets: dict = field(default_factory=dict)       # consumer reference -> stored offset

    def start(self, offset_type: int, offset: int) -> int:
        """The chunk index a subscription starts at ("Subscribe", OffsetSpecification)."""
        if offset_type == OffsetType.FIRST:
            return 0
        if offset_type == OffsetType.LAST:        # the last user chunk (SPEC_NOTES.md)
            users = [i for i, c in enumerate(self.chunks) if c.records is not None]
            return users[-1] if users else len(self.chunks)
        if offset_type == OffsetType.NEXT or offset >= self.next_offset:
            return len(self.chunks)
        # OFFSET: the chunk holding it; the client skips the records before it.
        return max(i for i, c in enumerate(self.chunks) if c.first_offset <= offset)


@dataclass
class ModelPublisher:
    stream: str
    reference: str
    next_id: int = 1


@dataclass
class ModelSubscription:
    stream: str
    position: int
    credit: int
    granted: int                      # credit given in total
    delivered: int = 0                # chunks delivered in total
    last_offset: int = -1             # first offset of the last chunk delivered


class StreamMachine(RuleBasedStateMachine):
    """Each rule updates the model with what its request must change, then sends it and checks
    the answers (and the barrier's Metadata) against the model."""
    driver_factory = SessionDriver

    streams = Bundle("streams")                 # names created
    publishers = Bundle("publishers")           # publisher ids declared

    def __init__(self, driver=None) -> None:
        super().__init__()
        self.driver = driver if driver is not None else type(self).driver_factory()
        self.model: dict[str, ModelStream] = {}
        self.pubs: dict[int, ModelPublisher] = {}
        self.subs: dict[int, ModelSubscription] = {}
        self.v2 = False                         # Publish/Deliver version 2 negotiated
        self._pending: dict[int, list] = {}     # subscription id -> chunks the step delivers

    def teardown(self) -> None:
        self.driver.close()

    # -- helpers ---------------------------------------------------------------------------------

    def _exchange(self, *frames) -> list:
        """Send ``frames``; return the answers with every Deliver checked against the model
        (removed from the list)."""
        answers = self.driver.exchange([codec.encode(f) for f in frames], True, STREAM_NAMES)
        barrier = self.driver.barrier_answer
        codes = {m.stream: m.code for m in barrier.streams}
        expected = {n: Code.OK if n in self.model else Code.STREAM_DOES_NOT_EXIST for n in STREAM_NAMES}
        assert codes == expected, f"Metadata says {codes}, the model {expected}"
        delivered = [f for f in answers if isinstance(f, codec.Deliver)]
        self._check_deliveries(delivered)
        return [f for f in answers if not isinstance(f, codec.Deliver)]

    def _check(self, frame, expected: list, what: str) -> None:
        answers = self._exchange(frame)
        assert answers == expected, f"{what}: expected {expected}, got {answers}"

    def _deliver(self, sub_id: int) -> list:
        """What the server sends ``sub_id`` now: its next user chunks, one per credit."""
        sub = self.subs[sub_id]
        chunks = self.model[sub.stream].chunks
        out = []
        while sub.credit > 0 and sub.position < len(chunks):
            chunk = chunks[sub.position]
            sub.position += 1
            if chunk.records is None:            # tracking chunks are never delivered
                continue
            sub.credit -= 1
            out.append((sub_id, chunk))
        return out

    def _check_deliveries(self, delivered: list) -> None:
        """``delivered`` against what the rule expected (``_pending``, filled before sending)."""
        expected = [pair for sub_id in self.subs for pair in self._pending.pop(sub_id, [])]
        assert not self._pending, f"deliveries expected for gone subscriptions {sorted(self._pending)}"
        by_sub: dict[int, list] = {}
        for frame in delivered:
            by_sub.setdefault(frame.subscription_id, []).append(frame)
        want: dict[int, list] = {}
        for sub_id, chunk in expected:
            want.setdefault(sub_id, []).append(chunk)
        assert sorted(by_sub) == sorted(want), \
            f"chunks delivered to subscriptions {sorted(by_sub)}, expected {sorted(want)}"
        for sub_id, frames in by_sub.items():
            sub = self.subs[sub_id]
            assert len(frames) == len(want[sub_id]), \
                f"subscription {sub_id}: {len(frames)} chunks delivered, expected {len(want[sub_id])}"
            for frame, chunk in zip(frames, want[sub_id]):
                assert frame.version == (2 if self.v2 else 1), f"Deliver version {frame.version}"
                if frame.version == 2:
                    # A chunk is delivered once committed: the committed chunk id (a chunk's
                    # id is its first offset) is at least this chunk's.
                    assert frame.committed_chunk_id >= frame.chunk.first_offset, frame
                assert frame.chunk.chunk_type == ChunkType.USER
                first = frame.chunk.first_offset
                assert first > sub.last_offset, \
                    f"subscription {sub_id}: offset {first} after {sub.last_offset}"
                assert first == chunk.first_offset, \
                    f"subscription {sub_id}: chunk at offset {first}, expected {chunk.first_offset}"
                assert frame.chunk.messages() == chunk.records, f"subscription {sub_id}: messages differ"
                sub.last_offset = first
                sub.delivered += 1
            assert sub.delivered <= sub.granted, \
                f"subscription {sub_id}: {sub.delivered} chunks for {sub.granted} credits"

    def _expect_deliveries(self, stream: str) -> None:
        for sub_id, sub in self.subs.items():
            if sub.stream == stream:
                self._pending.setdefault(sub_id, []).extend(self._deliver(sub_id))

    # -- handshake -------------------------------------------------------------------------------

    @initialize(target=publishers, steps=st.sampled_from((2, 2, 2, 1, 0)), cid=cids,
                tune=st.sampled_from(("response", "request")),
                frame_max=st.sampled_from((0, 131_072, 1_048_576)), heartbeat=st.sampled_from((0, 60)),
                versions=st.booleans(), reference=st.sampled_from(REFERENCES),
                offset_type=st.sampled_from((OffsetType.FIRST, OffsetType.NEXT)),
                credit=st.integers(1, 3), messages=st.lists(bodies, max_size=3))
    def start(self, steps, cid, tune, frame_max, heartbeat, versions, reference, offset_type,
              credit, messages):
        """The handshake, then (most runs: a run is short and the deeper rules need them) a
        stream, a publisher and a subscription on it, and a few messages published: some runs
        stop after creating the stream, or after the handshake."""
        self._handshake(cid, tune, frame_max, heartbeat, versions)
        if steps >= 1:
            self.create(cid, STREAM_NAMES[0], ARGUMENTS[0])
        if steps < 2:
            return multiple()
        self.subscribe(cid, 0, STREAM_NAMES[0], offset_type, 0, credit)
        self.declare_publisher(cid, 0, STREAM_NAMES[0], reference)
        if messages:
            self.publish(0, messages, [None] * len(messages), False)
        return 0

    def _handshake(self, cid, tune, frame_max, heartbeat, versions) -> None:
        """The handshake ("Authentication"): PeerProperties, SaslHandshake, SaslAuthenticate
        (PLAIN), the server's Tune, the client's (as 0x8014 or, as some clients send it, 0x0014), Open;
        then, with ``versions``, ExchangeCommandVersions asking for Publish/Deliver version 2."""
        d = self.driver
        answers = d.exchange([codec.encode(codec.PeerProperties(cid, {"product": "machine"})),
                              codec.encode(codec.SaslHandshake(cid + 1))], False)
        assert [type(a) for a in answers] == [codec.PeerPropertiesResponse, codec.SaslHandshakeResponse]
        assert [a.correlation_id for a in answers] == [cid, cid + 1]
        assert answers[0].code == answers[1].code == Code.OK
        assert "PLAIN" in answers[1].mechanisms
        answers = d.exchange([codec.encode(codec.SaslAuthenticate(
            cid + 2, "PLAIN", b"\0" + USER.encode() + b"\0" + PASSWORD.encode()))], False)
        assert len(answers) == 2 and answers[0] == codec.SaslAuthenticateResponse(cid + 2, Code.OK)
        assert isinstance(answers[1], codec.Tune), f"no Tune after SaslAuthenticate: {answers}"
        answer = (codec.TuneResponse if tune == "response" else codec.Tune)(frame_max, heartbeat)
        assert d.exchange([codec.encode(answer)], False) == []
        answers = d.exchange([codec.encode(codec.Open(cid + 3, VHOST))], False)
        assert len(answers) == 1 and isinstance(answers[0], codec.OpenResponse)
        assert (answers[0].correlation_id, answers[0].code) == (cid + 3, Code.OK)
        if versions:
            wanted = ((Key.PUBLISH, 1, 2), (Key.DELIVER, 1, 2))
            answers = self._exchange(codec.ExchangeCommandVersions(cid + 4, wanted))
            assert len(answers) == 1 and answers[0].code == Code.OK, answers
            offered = {k: (lo, hi) for k, lo, hi in answers[0].versions}
            assert offered.get(Key.DELIVER, (1, 1))[1] >= 2 and offered.get(Key.PUBLISH, (1, 1))[1] >= 2
            self.v2 = True

    @rule()
    def heartbeat_and_metadata(self):
        """A Heartbeat gets no answer; the barrier's Metadata is checked on every step."""
        assert self._exchange(codec.Heartbeat()) == []

    # -- streams ---------------------------------------------------------------------------------

    @rule(target=streams, cid=cids, name=st.sampled_from(STREAM_NAMES),
          arguments=st.sampled_from(ARGUMENTS))
    def create(self, cid, name, arguments):
        existing = self.model.get(name)
        if existing is None:
            code = Code.OK
        elif existing.arguments == arguments:
            code = Code.STREAM_ALREADY_EXISTS          # SPEC_NOTES.md: same arguments 5,
        else:
            code = Code.PRECONDITION_FAILED            # different ones 17
        if code == Code.OK:
            self.model[name] = ModelStream(dict(arguments))
        self._check(codec.Create(cid, name, dict(arguments)), [codec.CreateResponse(cid, code)],
                    f"Create {name} {arguments}")
        return name if code == Code.OK else multiple()

    @rule(cid=cids, name=streams | st.sampled_from(STREAM_NAMES))
    def delete(self, cid, name):
        if name not in self.model:
            return self._check(codec.Delete(cid, name),
                               [codec.DeleteResponse(cid, Code.STREAM_DOES_NOT_EXIST)], f"Delete {name}")
        used = any(p.stream == name for p in self.pubs.values()) or \
            any(s.stream == name for s in self.subs.values())
        # Its publishers and subscriptions go with it (the model changes first: the barrier's
        # Metadata is checked against it).
        del self.model[name]
        self.pubs = {i: p for i, p in self.pubs.items() if p.stream != name}
        self.subs = {i: s for i, s in self.subs.items() if s.stream != name}
        answers = self._exchange(codec.Delete(cid, name))
        # The connection that used the stream hears of it ("MetadataUpdate"); in which order
        # relative to the response the document does not say.
        expected = [codec.DeleteResponse(cid, Code.OK)]
        if used:
            expected.append(codec.MetadataUpdate(Code.STREAM_NOT_AVAILABLE, name))
        by_type = lambda frames: sorted(frames, key=lambda f: type(f).__name__)  # noqa: E731
        assert by_type(answers) == by_type(expected), \
            f"Delete {name}: expected {expected}, got {answers}"

    # -- publishing ------------------------------------------------------------------------------

    @rule(target=publishers, cid=cids, pid=PUBLISHER_IDS, name=streams | st.sampled_from(STREAM_NAMES),
          reference=st.sampled_from(REFERENCES))
    def declare_publisher(self, cid, pid, name, reference):
        if pid in self.pubs:
            code = Code.PRECONDITION_FAILED
        elif name not in self.model:
            code = Code.STREAM_DOES_NOT_EXIST
        elif reference and any(p.stream == name and p.reference == reference for p in self.pubs.values()):
            code = Code.PRECONDITION_FAILED            # a reference has one publisher at a time
        else:
            code = Code.OK
        if code == Code.OK:
            self.pubs[pid] = ModelPublisher(name, reference)
        self._check(codec.DeclarePublisher(cid, pid, reference, name),
                    [codec.DeclarePublisherResponse(cid, code)], f"DeclarePublisher {pid} on {name}")
        return pid if code == Code.OK else multiple()

    @rule(cid=cids, pid=publishers)
    def delete_publisher(self, cid, pid):
        code = Code.OK if self.pubs.pop(pid, None) is not None else Code.PUBLISHER_DOES_NOT_EXIST
        self._check(codec.DeletePublisher(cid, pid), [codec.DeletePublisherResponse(cid, code)],
                    f"DeletePublisher {pid}")

    @rule(pid=publishers, messages=st.lists(bodies, min_size=1, max_size=3),
          filters=st.lists(st.none() | st.text(max_size=4), min_size=3, max_size=3),
          again=st.booleans())
    def publish(self, pid, messages, filters, again):
        """One Publish; with ``again``, the publisher's last ids are sent again (new ids when
        it has not sent that many): deduplicated under a reference, stored again without."""
        pub = self.pubs.get(pid)
        first = pub.next_id if pub is not None else 1
        if again and pub is not None and pub.next_id > len(messages):
            first = pub.next_id - len(messages)
        ids = list(range(first, first + len(messages)))
        version = 2 if self.v2 else 1
        frame = codec.Publish(pid, tuple(
            PublishedMessage(i, body, filters[n] if version == 2 else None)
            for n, (i, body) in enumerate(zip(ids, messages))), version)
        if pub is None:
            expected = [codec.PublishError(pid, tuple((i, Code.PUBLISHER_DOES_NOT_EXIST) for i in ids))]
            return self._check(frame, expected, f"Publish with unknown publisher {pid}")
        pub.next_id = max(pub.next_id, ids[-1] + 1)
        stream = self.model[pub.stream]
        # Under a reference, ids at or below the last stored one are dropped, still confirmed.
        last = stream.sequences.get(pub.reference, 0) if pub.reference else None
        fresh = [m for i, m in zip(ids, messages) if last is None or i > last]
        if fresh:
            if pub.reference:
                stream.sequences[pub.reference] = max(i for i in ids if i > last)
            stored = [r for m in fresh for r in (m.records() if isinstance(m, SubBatchEntry) else [m])]
            stream.chunks.append(ModelChunk(stream.next_offset, stored))
            stream.next_offset += len(stored)
            self._expect_deliveries(pub.stream)
        answers = self._exchange(frame)
        # Each publishing id confirmed exactly once ("PublishConfirm").
        assert all(isinstance(a, codec.PublishConfirm) and a.publisher_id == pid for a in answers), \
            f"Publish {ids}: {answers}"
        confirmed = [i for a in answers for i in a.publishing_ids]
        assert Counter(confirmed) == Counter(ids), f"publishing ids {ids} confirmed as {confirmed}"

    @rule(messages=st.lists(records, min_size=1, max_size=3))
    def publish_unknown_publisher(self, messages):
        """Publishing with an undeclared publisher id: PublishError 18 for each message
        (SPEC_NOTES.md)."""
        self.publish(UNKNOWN_ID, messages, [None] * len(messages), False)

    @rule(cid=cids, reference=st.sampled_from(REFERENCES), name=streams | st.sampled_from(STREAM_NAMES))
    def query_publisher_sequence(self, cid, reference, name):
        stream = self.model.get(name)
        if stream is None:
            expected = codec.QueryPublisherSequenceResponse(cid, Code.STREAM_DOES_NOT_EXIST, 0)
        else:
            expected = codec.QueryPublisherSequenceResponse(cid, Code.OK, stream.sequences.get(reference, 0))
        self._check(codec.QueryPublisherSequence(cid, reference, name), [expected],
                    f"QueryPublisherSequence {reference!r} on {name}")

    # -- consuming -------------------------------------------------------------------------------

    @rule(cid=cids, sub_id=SUBSCRIPTION_IDS,
          name=streams | st.sampled_from(STREAM_NAMES),
          offset_type=st.sampled_from((OffsetType.FIRST, OffsetType.LAST, OffsetType.NEXT,
                                       OffsetType.OFFSET)),
          offset=st.integers(0, 24), credit=st.integers(0, 3))
    def subscribe(self, cid, sub_id, name, offset_type, offset, credit):
        if sub_id in self.subs:
            code = Code.SUBSCRIPTION_ID_ALREADY_EXISTS
        elif name not in self.model:
            code = Code.STREAM_DOES_NOT_EXIST
        else:
            code = Code.OK
            position = self.model[name].start(offset_type, offset)
            self.subs[sub_id] = ModelSubscription(name, position, credit, credit)
            self._pending[sub_id] = self._deliver(sub_id)
        value = offset if offset_type == OffsetType.OFFSET else None
        self._check(codec.Subscribe(cid, sub_id, name, offset_type, value, credit),
                    [codec.SubscribeResponse(cid, code)],
                    f"Subscribe {sub_id} to {name} at {OffsetType(offset_type).name} {value}")

    @rule(sub_id=SUBSCRIPTION_IDS, credit=st.integers(1, 3))
    def credit(self, sub_id, credit):
        """Credit gets no answer, unless the subscription does not exist (SPEC_NOTES.md: then
        a response without correlation id)."""
        sub = self.subs.get(sub_id)
        if sub is None:
            expected = [codec.CreditResponse(Code.SUBSCRIPTION_ID_DOES_NOT_EXIST, sub_id)]
        else:
            expected = []
            sub.credit = min(sub.credit + credit, 0xFFFF)
            sub.granted += credit
            self._pending[sub_id] = self._deliver(sub_id)
        self._check(codec.Credit(sub_id, credit), expected, f"Credit {credit} to {sub_id}")

    @rule(credit=st.integers(1, 3))
    def credit_unknown_subscription(self, credit):
        self.credit(UNKNOWN_ID, credit)

    @rule(cid=cids, sub_id=SUBSCRIPTION_IDS | st.just(UNKNOWN_ID))
    def unsubscribe(self, cid, sub_id):
        code = Code.OK if self.subs.pop(sub_id, None) is not None else Code.SUBSCRIPTION_ID_DOES_NOT_EXIST
        self._check(codec.Unsubscribe(cid, sub_id), [codec.UnsubscribeResponse(cid, code)],
                    f"Unsubscribe {sub_id}")

    # -- offsets ---------------------------------------------------------------------------------

    @rule(cid=cids, reference=st.sampled_from(REFERENCES), name=streams | st.sampled_from(STREAM_NAMES),
          offset=st.integers(0, 2**64 - 1), then_query=st.booleans())
    def store_offset(self, cid, reference, name, offset, then_query):
        """StoreOffset has no response; stored under a non-empty reference, it occupies an
        offset of its own (SPEC_NOTES.md), so later chunks start one offset later. With
        ``then_query``, a QueryOffset for it follows in the same write."""
        stream = self.model.get(name)
        if stream is not None and reference:
            stream.offsets[reference] = offset
            stream.chunks.append(ModelChunk(stream.next_offset, None))
            stream.next_offset += 1
            self._expect_deliveries(name)        # a tracking chunk: nothing to deliver
        frames = [codec.StoreOffset(reference, name, offset)]
        if then_query:
            frames.append(codec.QueryOffset(cid, reference, name))
        answers = self._exchange(*frames)
        expected = [self._query_offset_answer(cid, reference, name)] if then_query else []
        assert answers == expected, f"StoreOffset {reference!r} {offset} on {name}: {answers}"

    def _query_offset_answer(self, cid: int, reference: str, name: str):
        stream = self.model.get(name)
        if stream is None:
            return codec.QueryOffsetResponse(cid, Code.STREAM_DOES_NOT_EXIST, 0)
        if reference not in stream.offsets:
            return codec.QueryOffsetResponse(cid, Code.NO_OFFSET, 0)    # 19, SPEC_NOTES.md
        return codec.QueryOffsetResponse(cid, Code.OK, stream.offsets[reference])

    @rule(cid=cids, reference=st.sampled_from(REFERENCES), name=streams | st.sampled_from(STREAM_NAMES))
    def query_offset(self, cid, reference, name):
        self._check(codec.QueryOffset(cid, reference, name),
                    [self._query_offset_answer(cid, reference, name)],
                    f"QueryOffset {reference!r} on {name}")

    # -- invariants ------------------------------------------------------------------------------

    @invariant()
    def credit_never_exceeded(self):
        for sub_id, sub in self.subs.items():
            assert sub.delivered <= sub.granted, f"subscription {sub_id} got more chunks than credit"
            assert sub.credit == sub.granted - sub.delivered, f"subscription {sub_id}: credit mismatch"

    @invariant()
    def connection_open(self):
        assert not self.driver.closed, "the server closed the connection"
