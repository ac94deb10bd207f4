"""A hypothesis state machine over Micromessage2's ack window, run against a broker through a driver.

The model is what micromessage2.md ("Reliable messaging", "batch-ack", "MESSAGE" sequence
number, the glossary's TOPIC and QUEUE) and the kit's readings of its errata (docs/protocols/micromessage2.md,
"How the kit reads the document") make of a broker:

- **The window comes from the handshake.** ``batch-ack`` with a count spelled ``max-count=N``,
  ``count=N``, ``batch-max=N`` or ``max-count:N`` (erratum 3), default 10; ``ack`` is a window
  of 1 in the ``document`` profile and ``MessagesPerAck`` (default 10) in ``sharpmessaging``,
  where the broker also suggests ``ack:MessagesPerAck=10,AckExpireTime=500`` for the client to
  take. The ack extension is required before or after ``pubsub``, or offered as optional and
  taken from the reply, so its id varies; :func:`terms` draws all that and says what the final
  handshake must agree.
- **The server as pusher.** MESSAGE frames carry sequence numbers from the broker's first one
  (drawn near 65535, so the wrap 65535 -> 1 comes within a few messages), one more per
  message, 0 skipped. With a window the server never has more than ``window`` messages
  un-acked to a receiver, and a receiver with room is never kept waiting: after every step, a
  connection below its window has every message of its topics and no queue it reads from
  holds a message. Acks are cumulative ("all MESSAGE frames with a sequence number up to the
  specified one"), across the wrap, and may come early (the counter resets); an ack of a
  sequence number not in flight gets an ERROR and the connection stays open (MM2-ACK-009).
- **Delivery.** A topic message goes to every connection subscribed when it is published, once,
  in publish order; one published with no subscriber is gone. A queue message goes to one
  subscriber, once, and the messages a queue hands out are always its oldest waiting ones,
  each receiver getting them in order (without filters, so FIFO is exact). The one
  duplicate the document allows: a queue message a receiver had not acked when its connection
  ended goes back to the front of its queue and out again (reliable messaging: acks, not
  transactions); its topic messages are gone with it.
- **The server as receiver.** It acks the client's SENDs cumulatively (the last SEND so far)
  as soon as ``window`` are un-acked, and else ``ack_delay`` after the first un-acked one
  (SharpMessaging's ``AckExpireTime`` with its ``ack``). The client's SENDs also start near the
  wrap. A driver with ``exact`` (in memory) has every ack predicted, and the session's
  ``next_deadline()`` equal to the model's; over the wire every ack must be of a SEND in flight,
  and a full window must have been acked before the barrier's answer.

Each rule acts on one connection, then a barrier runs on that connection and then on every
other one (:mod:`.micromessage2_drivers`): everything before a barrier's ERROR is what the step
caused there, checked frame by frame against the model. Time: in memory the clock moves only in
``time_passes`` and ``settle_sends``; over the wire ``settle_sends`` waits (bounded) for the
broker's delayed acks, and the broker's ack delay is short.

The machine draws slots and positions as integers taken modulo what exists: no rule filters or
assumes.

Coverage: :data:`MATRIX` is every (connection phase x client frame) pair; each frame the
machine sends is counted in ``WindowMachine.reached`` (barriers included: an unknown COMMAND
whose ERROR is checked). The handshake frames are sent by the drivers' ``open``; a malformed
frame (in every phase) and an ERROR frame from the client end the connection, so they are sent
on *probes*: a new connection brought to the phase (``driver.probe``).
"""
from __future__ import annotations

import itertools
import struct
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Optional

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from wirecheck.conformance.report.verdicts import Breach
from wirecheck.reference_impl.micromessage2 import codec
from wirecheck.reference_impl.micromessage2.codec import Error, ExtensionFrame, Message

from .micromessage2_drivers import AWAIT_FINAL, AWAIT_OFFER, OPEN, SessionDriver
from .state_matrix import MALFORMED, Matrix, excluding, holds

CONNECTIONS = 3
TOPICS = ("topic/a", "topic/b")
QUEUES = ("q1", "q2")
DESTINATIONS = TOPICS + QUEUES
SEQUENCE_MAX = 0xFFFF                 # "Sequence number": u16, wraps to 1 (erratum 6)
DEFAULT_WINDOW = 10                   # "batch-ack": "the default count is 10"
#: First sequence numbers: mostly just below the wrap (a window or two of messages reach it);
#: 1 as the document's start.
FIRST_SEQUENCES = st.one_of(st.integers(SEQUENCE_MAX - 4, SEQUENCE_MAX), st.just(1))
_SEQ = struct.Struct(">H")
_ANY = st.integers(0, 2**16 - 1)      # an index, taken modulo the choices that exist


FRAMES = ("HANDSHAKE", "MESSAGE", "COMMAND", "EXTENSION", "ERROR", MALFORMED)
MATRIX = Matrix("micromessage2", (AWAIT_OFFER, AWAIT_FINAL, OPEN), FRAMES, {
    **excluding((AWAIT_OFFER, AWAIT_FINAL), ("MESSAGE", "COMMAND", "EXTENSION", "ERROR"),
                "impossible: the first two frames are handshake frames by position (a handshake "
                "has no flags byte), so the bytes of any other frame there are a malformed "
                "handshake: the 'malformed' column"),
    (OPEN, "HANDSHAKE"): "impossible: after the handshake its bytes are read as a frame whose "
                         "flags byte is the major version (1 = COMMAND): a COMMAND or 'malformed'",
})
# No "unknown type" column: frames are typed by flag bits, and an undefined bit is 'malformed'.
# Not a state of the matrix: "closed" (after an ERROR either way, or a refused handshake).
#: A probe's frame per (phase, kind) -> what ends the connection. An offer / final handshake
#: whose identity is not ASCII ("Handshake": identity), a frame with the undefined flag bit
#: 0x20, the client's ERROR ("ERROR").
PROBES = {(AWAIT_OFFER, MALFORMED): bytes.fromhex("01000002fffe00000000"),
          (AWAIT_FINAL, MALFORMED): bytes.fromhex("01000002fffe00000000"),
          (OPEN, MALFORMED): bytes.fromhex("200000"),
          (OPEN, "ERROR"): codec.encode(Error("wirecheck probe: giving up"))}


def after(seq: int) -> int:
    """The next sequence number: the document's "simplistic example" (65535 -> 1, never 0)."""
    return 1 if seq == SEQUENCE_MAX else seq + 1


def before(seq: int) -> int:
    return SEQUENCE_MAX if seq == 1 else seq - 1


# --- the handshake's terms ----------------------------------------------------------------------

@dataclass(frozen=True)
class Terms:
    """What a connection offers and takes in its handshake, and what the model says it agrees:
    ``names`` the final handshake's extensions in id order, ``window`` (None: no acks),
    ``delay`` the server's ack delay for SENDs below the window (None: the broker's)."""
    required: str
    optional: str = ""
    accept: tuple[str, ...] = ()
    names: tuple[str, ...] = ("pubsub",)
    window: Optional[int] = None
    delay: Optional[float] = None

    @property
    def ack_id(self) -> Optional[int]:
        return next((i for i, n in enumerate(self.names, 1) if n in ("ack", "batch-ack")), None)


@st.composite
def terms(draw, profile: str, expire_choices=(None,), suggested_expire: int = 500):
    """``expire_choices``: AckExpireTime values (ms; None: left out, the default 500) a
    ``sharpmessaging`` connection may ask for; ``suggested_expire``: the one in the ``ack``
    the broker suggests."""
    kinds = ["none", "batch-ack", "ack"] + (["suggested"] if profile == "sharpmessaging" else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return Terms("pubsub")
    if kind == "suggested":
        # SPEC_NOTES: the real server suggests ack:MessagesPerAck=10,AckExpireTime=500.
        return Terms("pubsub", accept=("ack",), names=("pubsub", "ack"), window=10,
                     delay=suggested_expire / 1000)
    delay = None
    if kind == "batch-ack":
        count = draw(st.none() | st.integers(1, 5))
        spelling = draw(st.sampled_from(("max-count=", "count=", "batch-max=", "max-count:")))
        ext = "batch-ack" if count is None else f"batch-ack:{spelling}{count}"
        window = count or DEFAULT_WINDOW
    elif profile == "sharpmessaging":
        # SPEC_NOTES: the real ack carries MessagesPerAck (default 10) and AckExpireTime (ms,
        # default 500).
        count = draw(st.none() | st.integers(1, 5))
        expire = draw(st.sampled_from(expire_choices))
        props = ([f"MessagesPerAck={count}"] if count else []) + ([f"AckExpireTime={expire}"] if expire else [])
        ext = "ack" + (":" + ",".join(props) if props else "")
        window, delay = count or DEFAULT_WINDOW, (expire or 500) / 1000
    else:
        ext, window = "ack", 1                        # "limits the amount ... to one"
    name = kind
    where = draw(st.sampled_from(("after", "before", "optional")))
    if where == "optional":
        return Terms("pubsub", ext, (name,), ("pubsub", name), window, delay)
    if where == "before":
        return Terms(f"{ext};pubsub", names=(name, "pubsub"), window=window, delay=delay)
    return Terms(f"pubsub;{ext}", names=("pubsub", name), window=window, delay=delay)


# --- the model ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Msg:
    n: int
    destination: str
    payload: bytes


@dataclass
class Conn:
    """The model of one connection."""
    terms: Terms
    last_pushed: int                                   # the last MESSAGE's sequence number
    last_send: int                                     # the last SEND's sequence number
    outstanding: deque = field(default_factory=deque)  # (sequence, Msg) pushed, not acked
    topics: dict = field(default_factory=dict)         # topic -> deque of Msg owed to us
    queues: list = field(default_factory=list)
    unacked_sends: list = field(default_factory=list)
    inbox: int = 0                                     # SENDs since the server's last ack
    #: the first MESSAGE's number is the target's to choose (the document does not fix it):
    #: taken from its first MESSAGE, then every next one must follow it
    learn_first: bool = False
    due: Optional[float] = None                        # when the server acks them anyway
    expect_acks: list = field(default_factory=list)    # exact drivers: acks due this step
    expect_errors: int = 0

    @property
    def window(self) -> Optional[int]:
        return self.terms.window

    def has_room(self) -> bool:
        return self.window is None or len(self.outstanding) < self.window


def _short(frames) -> list:
    return [codec.frame_to_dict(f) for f in frames]


class WindowMachine(RuleBasedStateMachine):
    """``profile``: the broker's (``document`` or ``sharpmessaging``). ``make_driver(first
    sequence, first SEND sequence)``: a driver (default: in memory)."""

    profile = "document"
    #: Send the probes (SHOULD-level readings: MM2-FRAME-003, MM2-ERR-002).
    probes = True

    def __init__(self, make_driver=None) -> None:
        super().__init__()
        self.make_driver = make_driver or (lambda first, send: SessionDriver(self.profile, first, send))
        self.driver = None
        self.conns: list[Conn] = []
        self.waiting: dict[str, deque] = {q: deque() for q in QUEUES}
        self.messages: dict[bytes, Msg] = {}
        self._numbers = itertools.count(1)

    #: (phase, frame) -> frames sent (see :data:`MATRIX`); a subclass may have its own.
    reached: Counter = Counter()

    def teardown(self) -> None:
        if self.driver is not None:
            self.driver.close()

    # -- connections ---------------------------------------------------------------------------

    def _terms(self):
        return terms(self.profile, self.driver.expire_choices, self.driver.suggested_expire)

    def _open(self, slot: int, terms: Terms) -> None:
        self.reached[(AWAIT_OFFER, "HANDSHAKE")] += 1
        self.reached[(AWAIT_FINAL, "HANDSHAKE")] += 1
        names = self.driver.open(slot, terms)
        holds(names == terms.names, f"the final handshake has {names}, the model {terms.names}", "MM2-HS-011")
        conn = Conn(terms, last_pushed=self.first - 1, last_send=self.first_send - 1,
                    learn_first=getattr(self.driver, "learns_first", False))
        if slot == len(self.conns):
            self.conns.append(conn)
        else:
            self.conns[slot] = conn

    @initialize(data=st.data(), first=FIRST_SEQUENCES, first_send=FIRST_SEQUENCES,
                subscriptions=st.lists(st.tuples(st.integers(0, CONNECTIONS - 1), st.sampled_from(DESTINATIONS)),
                                       min_size=1, max_size=6, unique=True))
    def start(self, data, first, first_send, subscriptions):
        """A broker whose pusher starts at ``first`` and clients whose SENDs start at
        ``first_send``; three connections with their own terms, and some subscriptions (so
        that short runs already have somewhere to deliver)."""
        self.first, self.first_send = first, first_send
        self.driver = self.make_driver(first, first_send)
        self.first = self.driver.first_sequence or first     # a target's own (1)
        for slot in range(CONNECTIONS):
            self._open(slot, data.draw(self._terms(), label=f"terms {slot}"))
        for slot, dest in subscriptions:
            self._subscribe(slot, dest)
        self._step(None)

    def _subscribe(self, slot: int, dest: str) -> None:
        conn = self.conns[slot]
        if dest in TOPICS:
            conn.topics[dest] = deque()
        else:
            conn.queues.append(dest)
        self.reached[(OPEN, "COMMAND")] += 1
        self.driver.subscribe(slot, dest)

    def _unsubscribed(self) -> list:
        return [(s, d) for s, c in enumerate(self.conns) for d in DESTINATIONS
                if d not in c.topics and d not in c.queues]

    def _slot(self, pick: int, which) -> int:
        slots = [s for s, c in enumerate(self.conns) if which(c)]
        return slots[pick % len(slots)]

    # -- rules -----------------------------------------------------------------------------------

    @precondition(lambda self: self._unsubscribed())
    @rule(data=st.data())
    def subscribe(self, data):
        """``subscribe;destination=D`` (the kit's reading of the pubsub extension): a topic
        owes the connection what is published from now on; a queue hands it waiting messages."""
        slot, dest = data.draw(st.sampled_from(self._unsubscribed()), label="subscription")
        self._subscribe(slot, dest)
        self._step(slot)

    @rule(slot=st.integers(0, CONNECTIONS - 1), dest=st.sampled_from(DESTINATIONS),
          count=st.integers(1, 6))
    def publish(self, slot, dest, count):
        """``count`` SENDs to ``dest`` from ``slot`` (a conforming client: never more than the
        window un-acked; the broker acks a full window at once)."""
        conn = self.conns[slot]
        for _ in range(count):
            n = next(self._numbers)
            msg = Msg(n, dest, b"m%d" % n)
            self.messages[msg.payload] = msg
            if dest in TOPICS:
                for c in self.conns:
                    if dest in c.topics:
                        c.topics[dest].append(msg)
            else:
                self.waiting[dest].append(msg)
            conn.last_send = after(conn.last_send)
            if conn.window is not None:
                conn.unacked_sends.append(conn.last_send)
                conn.inbox += 1
                if conn.inbox >= conn.window:            # "batch-ack": the window is full
                    conn.expect_acks.append(conn.last_send)
                    conn.inbox, conn.due = 0, None
                elif conn.due is None and self.driver.clock_control:
                    conn.due = self.driver.now + (conn.terms.delay or self.driver.ack_delay)
            self.reached[(OPEN, "MESSAGE")] += 1
            seq = self.driver.publish(slot, dest, msg.payload)
            assert seq == conn.last_send, f"the client sent SEND {seq}, the model counts {conn.last_send}"
        self._step(slot)

    @precondition(lambda self: any(c.outstanding for c in self.conns))
    @rule(pick=_ANY, which=_ANY)
    def ack(self, pick, which):
        """Ack one of the messages in flight: the oldest (a single ack) or a later one (a
        cumulative ack of everything up to it, across the wrap, and early when the window is
        not full)."""
        slot = self._slot(pick, lambda c: c.outstanding)
        conn = self.conns[slot]
        k = which % len(conn.outstanding)
        seq = conn.outstanding[k][0]
        for _ in range(k + 1):
            conn.outstanding.popleft()
        self.reached[(OPEN, "EXTENSION")] += 1
        self.driver.ack(slot, seq)
        self._step(slot)

    @precondition(lambda self: any(c.terms.ack_id is not None for c in self.conns))
    @rule(pick=_ANY, kind=st.sampled_from(("next", "released", "zero")))
    def ack_not_in_flight(self, pick, kind):
        """An ack of a sequence number not in flight: the next one (never sent), the one before
        the oldest in flight (released already, or never sent), 0 (never used): an ERROR, and
        nothing is released (MM2-ACK-009, the kit's reading)."""
        slot = self._slot(pick, lambda c: c.terms.ack_id is not None)
        conn = self.conns[slot]
        if kind == "next":
            seq = after(conn.last_pushed)
        elif kind == "released":
            seq = before(conn.outstanding[0][0]) if conn.outstanding else conn.last_pushed
        else:
            seq = 0
        conn.expect_errors += 1
        self.reached[(OPEN, "EXTENSION")] += 1
        self.driver.ack(slot, seq)
        self._step(slot)

    @precondition(lambda self: self.driver.clock_control)
    @rule(seconds=st.sampled_from((0.125, 0.25, 0.5, 1.0)))
    def time_passes(self, seconds):
        self._advance(seconds)

    def _settles(self, conn: Conn) -> bool:
        # Over the wire a delayed ack arrives when it arrives: which rules can run must not
        # depend on it, or hypothesis cannot replay (and shrink) a run.
        return bool(conn.unacked_sends) if self.driver.clock_control else conn.window is not None

    @precondition(lambda self: any(self._settles(c) for c in self.conns))
    @rule(pick=_ANY)
    def settle_sends(self, pick):
        """Wait until the broker acks a connection's SENDs below the window (its ack delay):
        in memory the clock moves to the deadline, over the wire the driver waits."""
        slot = self._slot(pick, self._settles)
        conn = self.conns[slot]
        if self.driver.clock_control:
            assert conn.due is not None, f"model: SENDs {conn.unacked_sends} un-acked and no ack due"
            self._advance(conn.due - self.driver.now)
        else:
            self.driver.settle(slot)
            self._step(None)
        holds(not conn.unacked_sends, f"SENDs {conn.unacked_sends} still un-acked", "MM2-ACK-010")

    def _advance(self, seconds: float) -> None:
        now = self.driver.advance(seconds)
        for conn in self.conns:
            if conn.due is not None and conn.due <= now:
                conn.expect_acks.append(conn.last_send)   # cumulative: the last SEND so far
                conn.inbox, conn.due = 0, None
        self._step(None)

    @rule(slot=st.integers(0, CONNECTIONS - 1), resubscribe=st.booleans(), data=st.data())
    def reconnect(self, slot, resubscribe, data):
        """The connection ends and a new one with new terms takes its slot (and, as a consumer
        that restarts, subscribes to what the old one did). Queue messages it had not acked go
        back to the front of their queues, in order, and out to the subscribers with room;
        topic messages owed to it are gone."""
        conn = self.conns[slot]
        back: dict[str, list] = {}
        for _, msg in conn.outstanding:
            if msg.destination in QUEUES:
                back.setdefault(msg.destination, []).append(msg)
        for queue, msgs in back.items():
            self.waiting[queue].extendleft(reversed(msgs))
        self.driver.drop(slot)
        self._open(slot, data.draw(self._terms(), label="new terms"))
        # The others are served first: the barriers prove the redelivery before the new
        # connection's subscriptions can take anything.
        self._step(None)
        if resubscribe and (conn.topics or conn.queues):
            for dest in list(conn.topics) + conn.queues:
                self._subscribe(slot, dest)
            self._step(slot)

    @precondition(lambda self: self.probes)
    @rule()
    def probe(self):
        """Every probe of :data:`PROBES`, each on a new connection: a malformed frame, in any
        phase, gets an ERROR frame and the connection ends ("ERROR": the stream cannot be
        trusted); an ERROR from the client ends it with no answer. The machine's connections
        and model are untouched."""
        for (phase, kind), wire in PROBES.items():
            self.reached[(phase, kind)] += 1
            frames, closed = self.driver.probe(phase, wire)
            want = [] if kind == "ERROR" else [Error]
            if not (closed and [type(f) for f in frames] == want):
                # the client's ERROR is MM2-ERR-002's; any other probe, a malformed frame, MM2-FRAME-003's
                raise Breach(f"{kind} on a connection in phase {phase}: got {_short(frames)} "
                             f"({'closed' if closed else 'open'}), expected {[w.__name__ for w in want]} "
                             "and the close", "MM2-ERR-002" if kind == "ERROR" else "MM2-FRAME-003")

    # -- checking ----------------------------------------------------------------------------------

    def _step(self, acting: Optional[int]) -> None:
        """A barrier on the acting connection first (the broker has then handled its frames,
        deliveries to the others included), then on every other one; then the checks."""
        order = ([acting] if acting is not None else []) + [s for s in range(CONNECTIONS) if s != acting]
        self.reached[(OPEN, "COMMAND")] += len(order)              # the barriers
        got = {s: self.driver.collect(s, self.conns[s].expect_errors) for s in order}
        handed: dict[str, list] = {q: [] for q in QUEUES}
        for slot in order:
            self._check_connection(slot, got[slot], handed)
        for queue, taken in handed.items():
            self._check_queue(queue, taken)
        for slot, conn in enumerate(self.conns):
            if conn.has_room():                # nobody with room is kept waiting
                owed = {t: [m.n for m in q] for t, q in conn.topics.items() if q}
                holds(not owed, f"connection {slot} has room ({len(conn.outstanding)} of "
                      f"{conn.window} in flight) and was not sent {owed}",
                      "MM2-MSG-005" if conn.window is None else "MM2-ACK-005")
                stuck = {q: [m.n for m in self.waiting[q]] for q in conn.queues if self.waiting[q]}
                holds(not stuck, f"connection {slot} has room and reads queues still holding {stuck}", "MM2-PS-003")
            if self.driver.exact and conn.window is not None:
                assert self.driver.deadline(slot) == conn.due, \
                    f"connection {slot}: the session's next deadline is {self.driver.deadline(slot)}, " \
                    f"the model's ack of SENDs is due at {conn.due}"

    def _check_connection(self, slot: int, frames: list, handed: dict) -> None:
        conn = self.conns[slot]
        acks, errors = [], 0
        for frame in frames:
            if isinstance(frame, Message):
                self._pushed(slot, conn, frame, handed)
            elif isinstance(frame, ExtensionFrame):
                acks.append(self._acked_sends(slot, conn, frame))
            elif isinstance(frame, Error):
                errors += 1
            else:
                raise Breach(f"connection {slot}: unexpected {codec.frame_to_dict(frame)}", "MM2-FRAME-001")
        assert errors == conn.expect_errors, \
            f"connection {slot}: {errors} ERROR frame(s), {conn.expect_errors} expected: {_short(frames)}"
        if self.driver.exact:
            holds(acks == conn.expect_acks,
                  f"connection {slot}: acks of SENDs {acks}, the model expects {conn.expect_acks}", "MM2-ACK-010")
        if conn.window is not None:
            # "batch-ack": the receiver of a full window acks it before anything else.
            holds(len(conn.unacked_sends) < conn.window,
                  f"connection {slot}: SENDs {conn.unacked_sends} (a full window) not acked", "MM2-ACK-010")
        conn.expect_errors, conn.expect_acks = 0, []

    def _pushed(self, slot: int, conn: Conn, frame: Message, handed: dict) -> None:
        what = f"connection {slot}: MESSAGE {codec.frame_to_dict(frame)}"
        if conn.learn_first:
            conn.last_pushed, conn.learn_first = before(frame.sequence), False
        want = after(conn.last_pushed)
        holds(frame.sequence == want, f"{what}: sequence number {frame.sequence}, {want} expected", "MM2-MSG-001")
        conn.last_pushed = want
        msg = self.messages.get(frame.payload)
        holds(msg is not None, f"{what}: never published", "MM2-MSG-001")
        holds((frame.destination, frame.properties) == (self.driver.destination(msg.destination), ()),
              f"{what}: not as published", "MM2-MSG-001")
        if conn.window is not None:
            holds(len(conn.outstanding) < conn.window,
                  f"{what}: {len(conn.outstanding)} un-acked already, window {conn.window}",
                  "MM2-ACK-003" if "batch-ack" in conn.terms.names else "MM2-ACK-002")
            conn.outstanding.append((frame.sequence, msg))
        if msg.destination in TOPICS:
            owed = conn.topics.get(msg.destination)
            holds(owed and owed[0] is msg,
                  f"{what}: {msg.n} is not the next message owed on {msg.destination} "
                  f"({[m.n for m in owed] if owed is not None else 'not subscribed'})", "MM2-PS-002")
            owed.popleft()
        else:
            holds(msg.destination in conn.queues, f"{what}: not subscribed to {msg.destination}", "MM2-PS-003")
            handed[msg.destination].append((slot, msg))

    def _acked_sends(self, slot: int, conn: Conn, frame: ExtensionFrame) -> int:
        what = f"connection {slot}: {codec.frame_to_dict(frame)}"
        holds(conn.terms.ack_id is not None and frame.extension_id == conn.terms.ack_id,
              f"{what}: not an ack (ack extension id {conn.terms.ack_id})", "MM2-HS-011")
        holds(len(frame.payload) == 2, f"{what}: an ack carries a u16", "MM2-ACK-007")
        (seq,) = _SEQ.unpack(frame.payload)
        holds(seq in conn.unacked_sends, f"{what}: SEND {seq} is not in flight ({conn.unacked_sends})", "MM2-ACK-005")
        del conn.unacked_sends[:conn.unacked_sends.index(seq) + 1]
        return seq

    def _check_queue(self, queue: str, taken: list) -> None:
        """The messages a queue handed out this step are its oldest waiting ones, each once,
        and each receiver got its share in queue order."""
        waiting = self.waiting[queue]
        head = list(waiting)[:len(taken)]
        holds(sorted(m.n for _, m in taken) == sorted(m.n for m in head),
              f"{queue} handed out {[(s, m.n) for s, m in taken]}, its oldest waiting are {[m.n for m in head]}",
              "MM2-PS-003")
        place = {m.n: i for i, m in enumerate(head)}
        for slot in range(CONNECTIONS):
            mine = [place[m.n] for s, m in taken if s == slot]
            holds(mine == sorted(mine), f"{queue}: connection {slot} got its messages out of order", "MM2-PS-003")
        for _ in taken:
            waiting.popleft()

    @invariant()
    def windows_hold(self):
        for slot, conn in enumerate(self.conns):
            assert conn.window is None or len(conn.outstanding) <= conn.window, f"model: connection {slot}"
