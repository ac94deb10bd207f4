"""A hypothesis state machine for one BlipMQ connection, run against any server through a driver.

The machine keeps a model of what the server must do (blipmq-protocol.md "HELLO / AUTH
Handshake", "Payload Formats"; SPEC_NOTES.md for the real server's extra rules) and checks
every answer against it, exact NACK codes and messages included. It reaches the server only
through a *driver*: ``exchange(frames: list[bytes]) -> list[frame]`` sends the bytes followed by
a barrier PING and returns every frame answered before the barrier's own answer (PONG once
authenticated, ``NACK(401, "unauthenticated")`` before), so "no answer" is proven, never waited
for. :class:`SessionDriver` runs the reference :class:`BlipSession` in memory;
:class:`WireDriver` speaks to a target over a :class:`wirecheck.conformance.target.connection.Connection`.

Time is kept out: the in-memory driver passes a fixed ``now`` and the machine never waits, so
there is no QoS1 redelivery to model. Over the wire time does pass, so there the machine acks
each QoS1 delivery in the very next exchange (``defer_acks = False``).

Two knobs, set by subclasses:

- ``should``: also check behaviour that is SHOULD-level (SPEC_NOTES.md): HELLO/AUTH retries,
  effective QoS = min(message, subscription), QoS0 delivery id = the POLL's, delivery tags per
  subscription from 1 in enqueue order, a publish reaching only the subscriptions that exist.
  With ``should = False`` the machine avoids or tolerates those, and checks MUSTs only.
- ``defer_acks``: keep QoS1 deliveries in flight across steps (needs frozen time).

Runs are short (over the wire ~15 examples), so the ``start`` initializer usually performs the
handshake, creates subscriptions and publishes to the first one: polls and acks then have
something to find. Subscription ids and delivery tags travel in Bundles; no rule filters.

Coverage: :data:`MATRIX` is every (phase x client frame type) pair; each frame a rule sends is
counted in ``BlipMachine.reached`` under the phase it was sent in (the barrier PINGs are not).
A frame that closes the connection (an unknown type, BLIP-FRAME-006) is sent on a *probe*: a
second connection the driver opens and brings to the machine's phase, so the machine's own
connection and model go on (``driver.probe``).
"""
from __future__ import annotations

import itertools
import time
from collections import Counter, deque
from dataclasses import dataclass, field

from hypothesis import strategies as st
from hypothesis.stateful import (Bundle, RuleBasedStateMachine, consumes, initialize, invariant,
                                 multiple, precondition, rule)

from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import Ack, Auth, Hello, Nack, Ping, Poll, Pong, Publish, Subscribe
from wirecheck.reference_impl.blipmq.session import DEFAULT_API_KEY, BlipSession
from wirecheck.reference_impl.blipmq.state import BrokerState
from wirecheck.reference_impl.core.errors import FrameError

from .state_matrix import MALFORMED, UNKNOWN, Matrix, holds, probe_answers

#: Barrier PINGs use ids above every id the machine draws, so they cannot be confused.
BARRIER_BASE = 2**63 + 0xB10B_0000
cids = st.integers(0, 2**63 - 1)
TOPIC_NAMES = ("a", "b")               # few, so subscriptions and publishes meet
UNKNOWN_SUB = 2**64 - 1                 # no server hands out this subscription id
FAR_TAGS = st.integers(2**62, 2**63 - 1)  # far above any tag a subscription reaches here
BAD_KEYS = (st.sampled_from(["", "dev-ke", "DEV-KEY", "dev-key\x00"])
            | st.text(max_size=12).map(lambda s: "bad-" + s))
BAD_QOS = st.integers(2, 255)
MESSAGES = st.lists(st.binary(max_size=16), min_size=1, max_size=3)
QOS = st.sampled_from((1, 0))           # QoS1 first: the simplest examples then use delivery tags
#: At most one defect per request: which one a server reports first is not specified.
DEFECTS = st.sampled_from((None, None, None, "empty topic", "invalid QoS value"))
UNKNOWN_TAG = "unknown subscription or delivery tag"

HELLO, AUTH, READY = "await-hello", "await-auth", "ready"

#: Frame types with a payload layout of their own ("Payload Formats"), and a malformed payload
#: of each (too short, key_len past the end, topic_len past the end, not 8 bytes).
MALFORMED_PAYLOADS = {"HELLO": b"\x00", "AUTH": b"\x00\x09dev", "PUBLISH": b"\x00\x00",
                      "SUBSCRIBE": b"\x00\x05ab", "ACK": b"\x00" * 7, "POLL": b"\x00" * 9}
#: Malformed payloads the MUST-level machine sends (BLIP-AUTH-003, -SUB-001, -ACK-001,
#: -POLL-001, and 401 before AUTH); HELLO's and PUBLISH's answers are SPEC_NOTES.md (SHOULD).
MUST_MALFORMED = ("ACK", "AUTH", "POLL", "SUBSCRIBE")
#: The rule each malformed payload's NACK(400, "invalid <TYPE> payload") is.
MALFORMED_RULES = {"HELLO": "BLIP-HELLO-004", "AUTH": "BLIP-AUTH-003", "PUBLISH": "BLIP-PUB-006",
                   "SUBSCRIBE": "BLIP-SUB-001", "ACK": "BLIP-ACK-001", "POLL": "BLIP-POLL-001"}



#: Type bytes no frame has ("Frame Types": 0x01-0x09).
UNKNOWN_TYPES = st.sampled_from((0x00, 0x0A, 0x10, 0x7F, 0xFF))

MATRIX = Matrix(
    "blipmq", (HELLO, AUTH, READY),
    ("HELLO", "AUTH", "PUBLISH", "SUBSCRIBE", "ACK", "POLL", "PING", "PONG", "NACK", UNKNOWN, MALFORMED))
# Not a state of the matrix: "closed". After an unknown type or a bad length the server closes
# the connection without an answer; nothing sent afterwards is read (the probe checks the close).


def split_at_barrier(answers: list, barrier: int) -> tuple[list, object]:
    """(answers before the barrier's answer, the barrier's answer); it must come last."""
    for i, frame in enumerate(answers):
        if isinstance(frame, (Pong, Nack)) and frame.correlation_id == barrier:
            if i != len(answers) - 1:
                raise AssertionError(f"frames after the barrier's answer: {answers[i + 1:]}")
            return answers[:i], frame
    raise AssertionError(f"no answer to the barrier PING({barrier}) in {answers}")


def _without_redeliveries(answers: list) -> list:
    """``answers`` without a QoS1 delivery that repeats one made earlier in the same exchange
    (same tag, same message): the target's redelivery timer fired between two POLLs."""
    seen, kept = set(), []
    for frame in answers:
        key = (frame.correlation_id, frame.topic, frame.message) \
            if isinstance(frame, Publish) and frame.qos == 1 else None
        if key is not None and key in seen:
            continue
        if key is not None:
            seen.add(key)
        kept.append(frame)
    return kept


class SessionDriver:
    """The reference session in memory, over a fresh broker state; time stands still."""

    def __init__(self, now: float = 1000.0, api_key: str = DEFAULT_API_KEY) -> None:
        self.session = BlipSession(BrokerState())
        self.decoder = codec.Decoder()
        self.now = now
        self.api_key = api_key
        #: time stands still: no redelivery timer can fire (WireDriver.retry_backoff)
        self.retry_backoff = None
        self.max_retries = None
        self.barrier_answer = None
        self.clock = lambda: self.now
        self._barriers = itertools.count(BARRIER_BASE)

    @property
    def closed(self) -> bool:
        return self.session.closed

    def topic(self, name: str) -> str:
        return name

    def exchange(self, frames: list[bytes]) -> list:
        barrier = next(self._barriers)
        out = self.session.receive(b"".join(frames) + codec.encode(Ping(barrier)), self.now)
        answers, self.barrier_answer = split_at_barrier(self.decoder.feed(b"".join(out)), barrier)
        return answers

    def probe(self, steps: int, wire: bytes) -> tuple[list, bool]:
        """A second session over the same broker state, past HELLO (``steps`` >= 1) and AUTH
        (2); then ``wire`` and a barrier PING: (the answers before the barrier's, closed)."""
        session, decoder = BlipSession(self.session.state), codec.Decoder()
        for i, frame in enumerate(_setup(steps, self.api_key)):
            got = decoder.feed(b"".join(session.receive(codec.encode(frame), self.now)))
            assert got == [Ack(frame.correlation_id, 0)], f"probe set-up {frame}: {got}"
        barrier = next(self._barriers)
        got = decoder.feed(b"".join(session.receive(wire + codec.encode(Ping(barrier)), self.now)))
        if session.closed:
            return got, True
        return split_at_barrier(got, barrier)[0], False

    def close(self) -> None:
        pass


def _setup(steps: int, api_key: str) -> list:
    """The frames that bring a probe connection to phase ``steps`` (0 HELLO, 1 AUTH, 2 READY)."""
    return [Hello(BARRIER_BASE - 2, 1), Auth(BARRIER_BASE - 1, api_key)][:steps]


class WireDriver:
    """A target over one :class:`wirecheck.conformance.target.connection.Connection` (already connected, no HELLO).
    ``connect()`` opens another such connection, for probes."""

    def __init__(self, conn, *, api_key: str, topic_prefix: str, max_answers: int = 16,
                 connect=None, retry_backoff: float | None = None, max_retries: int | None = None) -> None:
        self.conn = conn
        #: the target's first QoS1 redelivery delay (its profile's [timing]); once a POLL is
        #: older than that, a redelivery of what it delivered is legal (None: not known)
        self.retry_backoff = retry_backoff
        #: deliveries after which the target drops an unacked message (its profile's [timing])
        self.max_retries = max_retries
        self.clock = time.monotonic
        self.connect = connect
        self.api_key = api_key
        self.topic_prefix = topic_prefix
        self.max_answers = max_answers
        self.barrier_answer = None
        self._barriers = itertools.count(BARRIER_BASE)

    @property
    def closed(self) -> bool:
        return self.conn.closed_by_peer

    def topic(self, name: str) -> str:
        return f"{self.topic_prefix}.{name}"      # unique per connection: tests share a broker

    def exchange(self, frames: list[bytes]) -> list:
        from wirecheck.conformance.target.connection import TargetError
        barrier = next(self._barriers)
        self.conn.send(*[_typed(f) for f in frames], Ping(barrier))
        answers = []
        while True:
            frame = self.conn.recv(expecting=f"answers, then PONG or NACK({barrier}) to the barrier")
            if isinstance(frame, (Pong, Nack)) and frame.correlation_id == barrier:
                self.barrier_answer = frame
                return answers
            answers.append(frame)
            if len(answers) > len(frames) + self.max_answers:
                raise TargetError(f"{len(answers)} answers to {len(frames)} frames and no barrier answer")

    def probe(self, steps: int, wire: bytes) -> tuple[list, bool]:
        """As :meth:`SessionDriver.probe`, on a new connection: (answers, closed by the target)."""
        conn = self.connect()
        try:
            for frame in _setup(steps, self.api_key):
                conn.send(frame)
                conn.expect(Ack, correlation_id=frame.correlation_id, subscription_id=0)
            barrier = next(self._barriers)
            conn.send(wire, Ping(barrier))
            answers, answer = probe_answers(
                lambda: conn.recv(expecting=f"the close, or PONG or NACK({barrier}) to the barrier"),
                lambda f: isinstance(f, (Pong, Nack)) and f.correlation_id == barrier, self.max_answers)
            return answers, answer is None
        finally:
            conn.close()

    def close(self) -> None:
        self.conn.close()


def _typed(wire: bytes):
    """The frame ``wire`` encodes exactly, else ``wire``: transcripts then show it decoded."""
    try:
        frames = codec.decode_all(wire)
    except FrameError:
        return wire
    return frames[0] if len(frames) == 1 and codec.encode(frames[0]) == wire else wire


@dataclass
class Queued:
    qos: int            # the message's QoS as published
    message: bytes
    tag: int            # the tag the reference assigns at enqueue (checked when ``should``)


@dataclass
class ModelSub:
    id: int
    topic: str
    qos: int
    queue: deque = field(default_factory=deque)
    inflight: dict = field(default_factory=dict)      # tag -> Queued
    next_tag: int = 1
    deliveries: Counter = field(default_factory=Counter)   # tag -> times the target sent it


class BlipMachine(RuleBasedStateMachine):
    should = True
    defer_acks = True
    driver_factory = SessionDriver

    subscriptions = Bundle("subscriptions")     # server-assigned subscription ids
    inflight = Bundle("inflight")               # (subscription id, tag) delivered, not acked
    settled = Bundle("settled")                 # (subscription id, tag) acked

    def __init__(self, driver=None) -> None:
        super().__init__()
        self.driver = driver if driver is not None else type(self).driver_factory()
        self.phase = HELLO
        self.subs: dict[int, ModelSub] = {}
        self.published = False

    def teardown(self) -> None:
        self.driver.close()

    # -- helpers ---------------------------------------------------------------------------------

    #: (phase, frame type) -> frames sent (see :data:`MATRIX`); a subclass may have its own.
    reached: Counter = Counter()

    def _exchange(self, *frames, kind: str | None = None, phase: str | None = None) -> list:
        """Send ``frames`` (frames, or bytes of one ``kind``) and the barrier; the answers.
        ``phase``: the one they are sent in, where the model has moved on already."""
        for f in frames:
            self.reached[(phase or self.phase, kind or f.type.name)] += 1
        answers = self.driver.exchange([f if isinstance(f, bytes) else codec.encode(f) for f in frames])
        barrier = self.driver.barrier_answer
        if self.phase == READY:
            holds(isinstance(barrier, Pong), f"PING once authenticated got {barrier}, not PONG", "BLIP-PING-001")
        else:
            holds(barrier == Nack(barrier.correlation_id, 401, "unauthenticated"),
                   f"PING before AUTH completed got {barrier}, not NACK(401, \"unauthenticated\")", "BLIP-AUTH-006")
        return answers

    def _check(self, frame, expected: list, what: str, phase: str | None = None, rule: str | None = None) -> None:
        """``frame`` must get ``expected``; a difference breaks ``rule``, the one the step
        checks (None: the run's requirements, all of them)."""
        answers = self._exchange(frame, phase=phase)
        holds(answers == expected, f"{what}: expected {expected}, got {answers}", rule)

    def _ready_or_401(self, frame, expected: list, what: str, rule: str) -> None:
        if self.phase == READY:
            self._check(frame, expected, what, rule=rule)
        else:
            self._check(frame, [Nack(frame.correlation_id, 401, "unauthenticated")], what, rule="BLIP-AUTH-006")

    # -- handshake -------------------------------------------------------------------------------

    @initialize(target=subscriptions, steps=st.sampled_from((2, 2, 2, 1, 0)), cid=cids,
                subs=st.lists(st.tuples(st.sampled_from(TOPIC_NAMES), QOS), min_size=1, max_size=3),
                qos=QOS, messages=st.lists(st.binary(max_size=16), max_size=3))
    def start(self, steps, cid, subs, qos, messages):
        """Most runs start authenticated, with subscriptions and a few messages published to the
        first one's topic (the deeper rules need them: a run is short, over the wire especially);
        some stop after HELLO or before it. The handshake rule can still run at any point."""
        if steps >= 1:
            self._hello(cid, 1)
        if steps < 2:
            return multiple()
        self._auth(cid, self.driver.api_key, good=True)
        ids = [self.subscribe(cid, name, sub_qos, None, 2) for name, sub_qos in subs]
        if messages:
            self._publish(cid, self.subs[ids[0]].topic, qos, messages)
        return multiple(*ids)

    @rule(cid=cids, hello=st.booleans(), wrong=st.booleans(),
          version=st.just(0) | st.integers(2, 2**16 - 1), bad_key=BAD_KEYS)
    def handshake(self, cid, hello, wrong, version, bad_key):
        """HELLO or AUTH, right or wrong, in whatever phase. Without ``should``: only the valid
        ones, and no second HELLO (retries after a 426 or 401 are SHOULD, SPEC_NOTES.md)."""
        wrong = wrong and self.should
        if hello and (self.should or self.phase == HELLO):
            self._hello(cid, version if wrong else 1)
        else:
            self._auth(cid, bad_key if wrong else self.driver.api_key, good=not wrong)

    def _hello(self, cid: int, version: int) -> None:
        sent_in = self.phase
        if self.phase != HELLO:
            expected, rule = Nack(cid, 400, "HELLO already performed"), "BLIP-HELLO-003"
        elif version != 1:
            expected, rule = Nack(cid, 426, "unsupported protocol version"), "BLIP-HELLO-002"
        else:
            self.phase = AUTH
            expected, rule = Ack(cid, 0), "BLIP-HELLO-001"
        self._check(Hello(cid, version), [expected], f"HELLO version {version}", sent_in, rule)

    def _auth(self, cid: int, key: str, good: bool) -> None:
        sent_in = self.phase
        if self.phase == HELLO:
            expected, rule = Nack(cid, 400, "HELLO not performed"), "BLIP-AUTH-001"
        elif self.phase == READY:
            expected, rule = Nack(cid, 400, "already authenticated"), "BLIP-AUTH-002"
        elif not good:
            expected, rule = Nack(cid, 401, "invalid API key"), "BLIP-AUTH-004"
        else:
            self.phase = READY
            expected, rule = Ack(cid, 0), "BLIP-AUTH-005"
        self._check(Auth(cid, key), [expected], f"AUTH with key {key!r}", sent_in, rule)

    @rule(ids=st.lists(cids, min_size=1, max_size=4), stray=st.sampled_from((None, "PONG", "NACK")))
    def ping(self, ids, stray):
        """Several PINGs in one write: each answered, in order ("Backpressure & Batching"). With
        ``should``, a client-sent PONG or NACK first: ignored once authenticated (SPEC_NOTES.md)."""
        frames = [Ping(i) for i in ids]
        if stray and self.should:
            frames.insert(0, Pong(ids[0]) if stray == "PONG" else Nack(ids[0], 400, "stray"))
        answers = self._exchange(*frames)
        if self.phase == READY:
            expected, rule = [Pong(i) for i in ids], "BLIP-PING-001"
        else:
            expected, rule = [Nack(f.correlation_id, 401, "unauthenticated") for f in frames], "BLIP-AUTH-006"
        holds(answers == expected, f"{frames}: expected {expected}, got {answers}", rule)

    # -- publish / subscribe ---------------------------------------------------------------------

    @rule(cid=cids, name=st.sampled_from(TOPIC_NAMES), qos=QOS, messages=MESSAGES,
          defect=DEFECTS, bad_qos=BAD_QOS)
    def publish(self, cid, name, qos, messages, defect, bad_qos):
        """One PUBLISH with a defect, or 1-3 valid ones pipelined (fire-and-forget: no answer)."""
        if defect:
            topic = "" if defect == "empty topic" else self.driver.topic(name)
            frame = Publish(cid, bad_qos if defect == "invalid QoS value" else qos, topic, b"m")
            return self._ready_or_401(frame, [Nack(cid, 400, defect)], f"PUBLISH with {defect}",
                                      "BLIP-PUB-002" if defect == "empty topic" else "BLIP-PUB-003")
        self._publish(cid, self.driver.topic(name), qos, messages)

    @rule(cid=cids, sub_id=subscriptions, qos=QOS, messages=MESSAGES)
    def publish_to_subscription(self, cid, sub_id, qos, messages):
        """Like ``publish``, to the topic of a subscription (so that polls find messages)."""
        self._publish(cid, self.subs[sub_id].topic, qos, messages)

    def _publish(self, cid: int, topic: str, qos: int, messages: list[bytes]) -> None:
        frames = [Publish(cid + i, qos, topic, m) for i, m in enumerate(messages)]
        answers = self._exchange(*frames)
        expected = [] if self.phase == READY else [Nack(f.correlation_id, 401, "unauthenticated")
                                                   for f in frames]
        holds(answers == expected, f"PUBLISH x{len(frames)} to {topic}: expected {expected}, got {answers}",
               "BLIP-PUB-004" if self.phase == READY else "BLIP-AUTH-006")
        if self.phase != READY:
            return
        self.published = True
        for message in messages:
            for sub in self.subs.values():     # only the subscriptions that exist now
                if sub.topic == topic:
                    sub.queue.append(Queued(qos, message, sub.next_tag))
                    sub.next_tag += 1

    @precondition(lambda self: self.should or not self.published)
    @rule(target=subscriptions, cid=cids, name=st.sampled_from(TOPIC_NAMES),
          qos=QOS, defect=DEFECTS, bad_qos=BAD_QOS)
    def subscribe(self, cid, name, qos, defect, bad_qos):
        topic = "" if defect == "empty topic" else self.driver.topic(name)
        frame = Subscribe(cid, topic, bad_qos if defect == "invalid QoS value" else qos)
        if defect or self.phase != READY:      # 401 before AUTH, whatever the defect
            self._ready_or_401(frame, [Nack(cid, 400, defect)], f"SUBSCRIBE with {defect or 'no defect'}",
                               "BLIP-SUB-002" if defect == "empty topic" else "BLIP-SUB-003")
            return multiple()
        answers = self._exchange(frame)
        holds(len(answers) == 1 and isinstance(answers[0], Ack) and answers[0].correlation_id == cid,
               f"SUBSCRIBE: expected ACK({cid}, new id), got {answers}", "BLIP-SUB-004")
        sub_id = answers[0].subscription_id
        holds(sub_id != 0, "SUBSCRIBE answered with subscription_id 0", "BLIP-SUB-005")
        holds(sub_id not in self.subs, f"SUBSCRIBE reused subscription id {sub_id}", "BLIP-SUB-005")
        self.subs[sub_id] = ModelSub(sub_id, topic, qos)
        return sub_id

    # -- poll / ack ------------------------------------------------------------------------------

    def _late(self, since: float) -> bool:
        """Whether the target's redelivery timer may have fired for a delivery made after
        ``since``: over the wire on a slow link or a busy machine an exchange can outlast the
        target's retry backoff, and a redelivery then is legal behaviour, not a fault."""
        backoff = self.driver.retry_backoff
        return backoff is not None and self.driver.clock() - since >= backoff

    def _poll(self, sub_id: int, cid: int, count: int) -> list[int]:
        """``count`` POLLs pipelined (ids ``cid``, ``cid + 1``, ...), answers checked against the
        model; returns the QoS1 delivery tags now in flight."""
        sub = self.subs[sub_id]
        self._poll_started = self.driver.clock()
        answers = self._exchange(*[Poll(cid + i, sub_id) for i in range(count)])
        for got in answers:
            if isinstance(got, Publish) and got.qos == 1:
                sub.deliveries[got.correlation_id] += 1
        if self._late(self._poll_started):
            answers = _without_redeliveries(answers)
        items = [sub.queue.popleft() for _ in range(min(count, len(sub.queue)))]
        # The first polls get the queued messages, the others nothing ("Returns no frame").
        holds(len(answers) == len(items) and all(isinstance(a, Publish) for a in answers),
               f"{count} POLLs with {len(items)} messages queued: expected {len(items)} PUBLISH, got {answers}",
               "BLIP-POLL-003" if len(answers) > len(items) else "BLIP-POLL-004")
        tags = []
        for i, (got, item) in enumerate(zip(answers, items)):
            holds((got.topic, got.message) == (sub.topic, item.message),
                   f"POLL delivered {got}, expected topic {sub.topic!r} message {item.message!r} (publish order)",
                   "BLIP-PUB-007")
            effective = min(item.qos, sub.qos)
            allowed = {effective} if self.should else {effective, item.qos}
            holds(got.qos in allowed, f"delivery qos {got.qos}, expected {sorted(allowed)}",
                   "BLIP-PUB-010" if self.should else "BLIP-PUB-007")
            if got.qos == 0:
                if self.should:
                    holds(got.correlation_id == cid + i, "a QoS0 delivery carries its POLL's correlation id",
                           "BLIP-PUB-009")
                continue
            tag = got.correlation_id
            if self.should:
                holds(tag == item.tag, f"delivery tag {tag}, expected {item.tag} (per subscription, from 1)",
                       "BLIP-QOS1-003")
            holds(tag not in sub.inflight, f"delivery tag {tag} is already in flight", "BLIP-PUB-008")
            sub.inflight[tag] = Queued(item.qos, item.message, tag)
            tags.append(tag)
        return tags

    @precondition(lambda self: self.defer_acks)
    @rule(target=inflight, sub_id=subscriptions, cid=cids, count=st.integers(1, 3))
    def poll(self, sub_id, cid, count):
        return multiple(*[(sub_id, tag) for tag in self._poll(sub_id, cid, count)])

    @precondition(lambda self: not self.defer_acks)
    @rule(target=settled, sub_id=subscriptions, cid=cids, count=st.integers(1, 3))
    def poll_and_ack(self, sub_id, cid, count):
        """Over the wire time passes: ack at once, before any redelivery backoff can expire.
        When the poll and its ack took longer than the backoff all the same, the target may
        have taken the delivery back for redelivery: NACK(404) is then accepted and the model
        expects the message again, after those queued (blipmq-protocol.md, QoS1 retries)."""
        tags = self._poll(sub_id, cid, count)
        return multiple(*[self.ack((sub_id, tag), since=self._poll_started) for tag in tags])

    @rule(target=settled, pair=consumes(inflight))
    def ack(self, pair, since: float | None = None):
        sub_id, tag = pair
        sub = self.subs[sub_id]
        answers = self._exchange(Ack(tag, sub_id))
        taken_back = [Nack(tag, 404, UNKNOWN_TAG)]
        if since is not None and answers == taken_back and self._late(since):
            item = sub.inflight.pop(tag)
            limit = self.driver.max_retries
            if limit is None or sub.deliveries[tag] < limit:
                sub.queue.append(item)       # redelivered later, same tag
            # else: delivered max_retries times, so the timer dropped it (BLIP-QOS1-002)
            return pair
        holds(answers == [], f"ACK of in-flight tag {tag}: expected [], got {answers}", "BLIP-ACK-004")
        del sub.inflight[tag]
        return pair

    @rule(pair=settled)
    def ack_again(self, pair):
        sub_id, tag = pair
        self._check(Ack(tag, sub_id), [Nack(tag, 404, UNKNOWN_TAG)], f"second ACK of tag {tag}", rule="BLIP-ACK-003")

    @rule(sub_id=subscriptions, tag=FAR_TAGS)
    def ack_unknown_tag(self, sub_id, tag):
        self._check(Ack(tag, sub_id), [Nack(tag, 404, UNKNOWN_TAG)], f"ACK of unknown tag {tag}", rule="BLIP-ACK-003")

    @rule(cid=cids, which=st.sampled_from(("ack unknown", "ack zero", "poll zero", "poll unknown")))
    def request_for_no_subscription(self, cid, which):
        """ACK/POLL naming subscription 0 (400) or one that does not exist (404 / nothing)."""
        kind, sub = which.split()
        frame = (Ack if kind == "ack" else Poll)(cid, 0 if sub == "zero" else UNKNOWN_SUB)
        if sub == "zero":
            expected = [Nack(cid, 400, "subscription_id must be non-zero")]
            rule = "BLIP-ACK-002" if kind == "ack" else "BLIP-POLL-002"
        else:
            expected = [Nack(cid, 404, UNKNOWN_TAG)] if kind == "ack" else []
            rule = "BLIP-ACK-003" if kind == "ack" else "BLIP-POLL-003"
        self._ready_or_401(frame, expected, f"{kind.upper()} of subscription {frame.subscription_id}", rule)

    # -- malformed payloads, unknown types --------------------------------------------------------

    @rule(cid=cids, data=st.data())
    def malformed(self, cid, data):
        """A frame whose payload does not fit its type's layout. Once authenticated: NACK(400,
        "invalid <TYPE> payload") (BLIP-ACK-001, BLIP-POLL-001, BLIP-AUTH-003, BLIP-SUB-001;
        BLIP-HELLO-004, BLIP-PUB-006 are SPEC_NOTES.md); HELLO and AUTH are refused for their
        phase first, as valid ones are; anything else before AUTH gets 401."""
        name = data.draw(st.sampled_from(sorted(MALFORMED_PAYLOADS) if self.should else MUST_MALFORMED),
                         label="type")
        wire = codec.encode_raw(codec.FrameType[name], cid, MALFORMED_PAYLOADS[name])
        if name == "HELLO" and self.phase != HELLO:
            expected, rule = Nack(cid, 400, "HELLO already performed"), "BLIP-HELLO-003"
        elif name == "AUTH" and self.phase != AUTH:
            expected = Nack(cid, 400, "HELLO not performed" if self.phase == HELLO else "already authenticated")
            rule = "BLIP-AUTH-001" if self.phase == HELLO else "BLIP-AUTH-002"
        elif name in ("HELLO", "AUTH") or self.phase == READY:
            expected, rule = Nack(cid, 400, f"invalid {name} payload"), MALFORMED_RULES[name]
        else:
            expected, rule = Nack(cid, 401, "unauthenticated"), "BLIP-AUTH-006"
        answers = self._exchange(wire, kind=MALFORMED)
        holds(answers == [expected], f"malformed {name} payload: expected {[expected]}, got {answers}", rule)

    @rule(cid=cids, type_byte=UNKNOWN_TYPES)
    def unknown_type(self, cid, type_byte):
        """An unknown frame type, on a probe in the machine's phase: the connection is closed,
        without an answer (BLIP-FRAME-006)."""
        self.reached[(self.phase, UNKNOWN)] += 1
        steps = {HELLO: 0, AUTH: 1, READY: 2}[self.phase]
        answers, closed = self.driver.probe(steps, codec.encode_raw(type_byte, cid))
        holds(answers == [] and closed,
               f"frame type {type_byte:#04x} in phase {self.phase}: got {answers}, "
               f"{'closed' if closed else 'still open'} (expected no answer and the connection closed)",
               "BLIP-FRAME-006")

    @invariant()
    def connection_open(self):
        assert not self.driver.closed, "the server closed the connection"
