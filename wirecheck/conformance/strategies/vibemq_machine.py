"""A hypothesis state machine over the queues and subscriptions of a VibeMQ broker, run against
any broker through a driver.

The model is what vibemq-protocol.rst ("Command Descriptions", "Queue Headers", "Message
Headers") and the real server's behaviour (SPEC_NOTES.md "VibeMQ") make of a broker: queues
created with a delivery mode (RoundRobin, FanOutWithAck, FanOutWithoutAck, PriorityBased) and a
``maxQueueSize`` (DropOldest at the limit, the real default), or implicitly by Publish and
Subscribe (``implicit_queues``); a message waits while nobody is subscribed and goes out as
soon as somebody is (the backlog by priority in PriorityBased, else in order); RoundRobin gives
each message to one subscriber, in turn; the fan-out modes give it to every subscriber;
ack-tracked deliveries (RoundRobin, PriorityBased, FanOutWithAck) are in flight until acked,
come again with ``deliveryAttempts`` + 1 after the ack timeout, are dropped after
``maxRetryAttempts`` unacked deliveries, and a connection that goes away gives its RoundRobin
and PriorityBased ones back to their queue. QueueInfo's ``messageCount`` (waiting messages) and
``subscriberCount``, ListQueues, DeleteQueue (subscribers and waiting messages go with the
queue; deliveries in flight stay ackable) and Ping are checked against it, with the profile's
answers (``vibe.feature(...)`` as the suite reads them: QUEUE_EXISTS / QUEUE_NOT_FOUND errors,
PublishAck and Deliver headers, QueueInfo's enum names).

Every step sends its messages on one connection followed by a Ping barrier, then a barrier on
every other connection: everything before a barrier's Pong is that connection's answer set,
so "no answer" and "no delivery" are proven, not waited for. Deliveries are matched per
connection in order; the other answers in order, wherever the deliveries fall between them.

Time (the drivers are in :mod:`.vibemq_drivers`): :class:`SessionDriver` runs several
:class:`VibeSession` objects over one shared
:class:`BrokerState` with a frozen clock, so no redelivery timer fires unless the machine's
``time_passes`` rule moves the clock past every deadline on purpose; deliveries then travel in
the ``deliveries`` Bundle and are acked (or not) by later steps. :class:`WireDriver` talks to
a target through the suite's ``Vibe`` helper; time passes there, so the machine acks every
tracked delivery within the step that brought it (``defer_acks = False``), paces its sends
under the profile's rate limit between steps only, and has no ``time_passes``.

Queues, connections and deliveries travel in Bundles; no rule filters or assumes.

Coverage: :data:`MATRIX` is every (phase x client command type) pair; each message a rule sends
is counted in ``VibeMachine.reached`` under its connection's phase (barrier Pings are not).
The machine's three connections are past Connect, so the ``await-connect`` row, and a
malformed body (which closes the connection), are sent on *probes*: a fresh connection the
driver opens (and, for ``ready``, connects), which is then dropped (``driver.probe``).
"""
from __future__ import annotations

import itertools
from collections import Counter, deque
from typing import Optional
from unittest.mock import ANY

from hypothesis import strategies as st
from hypothesis.stateful import (Bundle, RuleBasedStateMachine, consumes, initialize, invariant,
                                 multiple, precondition, rule)

from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import PRIORITIES, CommandType as T, DeliveryMode
from wirecheck.reference_impl.vibemq.session import DEFAULT_PASSWORD
from wirecheck.reference_impl.vibemq.state import parse_priority

from .state_matrix import MALFORMED, UNKNOWN, Matrix, holds
from .vibemq_model import MODE_RULES, REPLY_RULES, Flight, MQueue, Msg, Slot, reply_rule
# WireDriver and SessionDriver: the suite and the tests import them from here.
from .vibemq_drivers import QUEUE_POOL, SessionDriver, WireDriver  # noqa: F401

MODES = [m.value for m in DeliveryMode]
TRACKED = {DeliveryMode.ROUND_ROBIN.value, DeliveryMode.FAN_OUT_WITH_ACK.value,
           DeliveryMode.PRIORITY_BASED.value}
ONE_EACH = {DeliveryMode.ROUND_ROBIN.value, DeliveryMode.PRIORITY_BASED.value}
#: The real server's queue defaults (SPEC_NOTES; QueueOptions.cs): an implicit queue has them.
DEFAULT_MODE, DEFAULT_MAX_SIZE = DeliveryMode.ROUND_ROBIN.value, 10_000
CONNECTIONS = 3
SIZES = st.sampled_from([2, 3, 1000])
#: "Message Headers" priority: absent, the document's names, and a lower-case spelling.
PRIORITY_VALUES = st.sampled_from([None, "Low", "Normal", "High", "Critical", "high"])
_TEXT = st.text(st.characters(codec="utf-8"), max_size=8)
PAYLOADS = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | _TEXT,
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
                        max_leaves=5)


AWAIT_CONNECT, READY = "await-connect", "ready"
#: The document's client-to-server commands ("Command Types").
CLIENT_TYPES = (T.CONNECT, T.DISCONNECT, T.PING, T.PUBLISH, T.SUBSCRIBE, T.UNSUBSCRIBE, T.ACK,
                T.CREATE_QUEUE, T.DELETE_QUEUE, T.QUEUE_INFO, T.LIST_QUEUES)
#: Type bytes no command has.
UNKNOWN_TYPES = st.sampled_from((3, 50, 77, 200))
MATRIX = Matrix("vibemq", (AWAIT_CONNECT, READY), tuple(t.name for t in CLIENT_TYPES) + (UNKNOWN, MALFORMED))
# Not a state of the matrix: "closed" (after Disconnect or a bad frame the server closes the
# connection; nothing sent afterwards is read).


def retyped(wire: bytes, type_byte: int, reading: str) -> bytes:
    """``wire`` (one uncompressed frame) with another command type byte (after the length, the
    flags byte but in protocol 1.0, and the version byte)."""
    at = (4 if reading == "vibemq-1.0" else 5) + 1
    return wire[:at] + bytes((type_byte,)) + wire[at + 1:]


def malformed(reading: str) -> bytes:
    """A frame whose body ends inside its id (version, Ping, id length 5, one byte)."""
    body = bytes((1, T.PING, 0, 5)) + b"x"
    return len(body).to_bytes(4, "big") + (b"" if reading == "vibemq-1.0" else b"\x00") + body


# --- the model ----------------------------------------------------------------------------------

def _short(messages) -> list:
    return [codec.frame_to_dict(m) if isinstance(m, Message) else m.hex() for m in messages]


class VibeMachine(RuleBasedStateMachine):
    """Subclasses (or the wire suite) provide ``make_driver()``. ``should``: also send what
    only the real server's rules answer exactly (SPEC_NOTES.md: before Connect, a second
    Connect, the codes for an unknown command and a malformed body); without it only unknown
    types and malformed bodies are probed, and any Error or the close is accepted for them
    (VIBE-MSG-006)."""

    should = True

    conns = Bundle("connections")
    queues = Bundle("queues")
    deliveries = Bundle("deliveries")

    def make_driver(self):
        return SessionDriver()

    def __init__(self, driver=None) -> None:
        super().__init__()
        self.driver = driver if driver is not None else self.make_driver()
        self.exact = self.driver.exact
        self.defer_acks = self.driver.clock_control
        self.document = self.driver.reading == "document"
        self.model: dict[str, MQueue] = {}
        self.flights: dict[tuple, list] = {}           # (conn key, message id) -> [Flight]
        self.keys: list[int] = []                       # slot -> current connection key
        self._keys = itertools.count(1)
        self._ids = itertools.count(1)
        self._seq = itertools.count(1)

    def new_id(self, label: str) -> str:
        return f"{label}-{next(self._ids)}"

    #: (phase, command type) -> messages sent (see :data:`MATRIX`); a subclass may have its own.
    reached: Counter = Counter()

    def _record(self, phase: str, messages) -> None:
        for m in messages:
            self.reached[(phase, T(m.type).name if isinstance(m, Message) else UNKNOWN)] += 1

    def teardown(self) -> None:
        self.driver.close()

    # -- the exchange and its checks ---------------------------------------------------------------

    def _open_all(self) -> None:
        """The connections, past Connect/ConnectAck (by whichever initializer runs first)."""
        while len(self.keys) < CONNECTIONS:
            self.reached[(AWAIT_CONNECT, T.CONNECT.name)] += 1
            self.driver.open(len(self.keys))
            self.keys.append(next(self._keys))

    @initialize(target=conns)
    def start(self):
        self._open_all()
        return multiple(*range(CONNECTIONS))

    def _step(self, slot: int, messages: list, replies: list, slots: list, *,
              pace: bool = True) -> list:
        """Send ``messages`` on ``slot``, barrier every connection; check the non-Deliver
        answers on ``slot`` against ``replies`` and every Deliver against ``slots``. Returns
        the (conn key, message id) of the tracked deliveries still to be acked."""
        if pace:
            self.driver.pace()
        self._record(READY, messages)
        got = {slot: self.driver.exchange(slot, messages)}
        for other in range(CONNECTIONS):
            if other != slot:
                got[other] = self.driver.exchange(other, [])
        return self._check(got, slot, messages, replies, slots)

    def _check(self, got: dict, slot, messages, replies, slots, unordered=False) -> list:
        for s, answers in got.items():
            others = [m for m in answers if m.type != T.DELIVER]
            want = replies if s == slot else []
            holds(len(others) == len(want) and all(self._same(g, w) for g, w in zip(others, want)),
                   f"connection {s} after {_short(messages)}:\n  got  {_short(others)}\n  want {_short(want)}",
                   reply_rule(messages, others, want))
        delivered = {self.keys[s]: deque(m for m in answers if m.type == T.DELIVER) for s, answers in got.items()}
        if unordered:
            delivered = {k: deque(sorted(v, key=lambda m: m.id)) for k, v in delivered.items()}
            slots = sorted(slots, key=lambda x: x.message.id)
        fresh = []
        for expected in slots:
            hits = [k for k in expected.candidates if delivered.get(k) and delivered[k][0].id == expected.message.id]
            holds(len(hits) == 1, f"{expected.message.id} to one of connections {expected.candidates}: "
                   f"next deliveries {({k: _short(v)[:1] for k, v in delivered.items()})}",
                   MODE_RULES.get(getattr(self.model.get(expected.message.queue), "mode", None), "VIBE-DEL-001"))
            key = hits[0]
            message = delivered[key].popleft()
            want = self._deliver(expected.message, expected.attempts)
            holds(self._same(message, want), f"got {codec.frame_to_dict(message)}, want {codec.frame_to_dict(want)}",
                   "VIBE-DEL-002")
            if expected.queue is not None:
                holds(key not in expected.queue.recent,
                       f"RoundRobin: {key} again before every subscriber had its turn ({list(expected.queue.recent)})",
                       "VIBE-MODE-001")
                expected.queue.recent.append(key)
            if expected.track is not None:
                t = expected.track
                self.flights.setdefault((key, message.id), []).append(
                    Flight(t.message, t.attempts, t.max_retries, t.requeue))
                fresh.append((key, message.id))
        extra = {k: _short(v) for k, v in delivered.items() if v}
        holds(not extra, f"deliveries the model does not expect: {extra}", "VIBE-DEL-001")
        return fresh

    def _ask(self, slot: int, request: Message, kind: int) -> Message:
        """One answer of ``kind`` to ``request`` on ``slot``, nothing anywhere else."""
        self.driver.pace()
        self._record(READY, [request])
        answers = self.driver.exchange(slot, [request])
        rule = REPLY_RULES.get(request.type)
        holds(len(answers) == 1 and answers[0].type == kind and answers[0].id == request.id,
               f"{codec.frame_to_dict(request)}: got {_short(answers)}", rule)
        for other in range(CONNECTIONS):
            if other != slot:
                got = self.driver.exchange(other, [])
                holds(got == [], f"connection {other} after {codec.frame_to_dict(request)}: {_short(got)}", rule)
        return answers[0]

    def _same(self, got: Message, want: Message) -> bool:
        if self.exact:
            return got == want
        if (got.type, got.id, got.error_code) != (want.type, want.id, want.error_code):
            return False
        if want.type in (T.SUBSCRIBE_ACK, T.UNSUBSCRIBE_ACK):        # either form names the queue
            name = (want.headers or {}).get("queueName") or want.queue
            return got.queue == name or got.header("queueName") == name
        if want.queue is not None and got.queue != want.queue:
            return False
        if (want.payload is not None or want.type == T.QUEUE_INFO) and got.payload != want.payload:
            return False
        return all(got.header(k) == v for k, v in (want.headers or {}).items())

    def _settle(self, fresh: list):
        """Tracked deliveries: into the Bundle (frozen clock), or acked right away (time passes)."""
        if self.defer_acks or not fresh:
            return multiple(*[(self._slot_of(key), key, mid) for key, mid in fresh])
        by_slot: dict = {}
        for key, mid in fresh:
            by_slot.setdefault(self._slot_of(key), []).append(mid)
        for slot, mids in by_slot.items():
            acks = [Message(T.ACK, mid, headers={"messageId": mid}) for mid in mids]
            self._step(slot, acks, [], [], pace=False)
            for mid in mids:
                self._acked(self.keys[slot], mid)
        return multiple()

    def _slot_of(self, key: int) -> int:
        return self.keys.index(key)

    def _acked(self, key: int, mid: str) -> None:
        items = self.flights.get((key, mid))
        if items:
            items.pop(0)
            if not items:
                del self.flights[(key, mid)]

    # -- expected messages ------------------------------------------------------------------------

    def _error(self, request: Message, code: str) -> Message:
        """An Error with the request's id and ``code``; its text is not compared."""
        return Message(T.ERROR, request.id, error_code=code, error_message=ANY)

    def _ack_for(self, request: Message, kind: int, queue: str) -> Message:
        """The document's answers name the queue in headers, the real server's in ``queue``."""
        if kind == T.PUBLISH_ACK and self.driver.feature("publish_ack_headers", self.document):
            return Message(kind, request.id, None if self.document else queue,
                           headers={"messageId": request.id, "queueName": queue})
        if not self.document:
            return Message(kind, request.id, queue)
        headers = {T.SUBSCRIBE_ACK: {"queueName": queue, "subscriptionId": request.id},
                   T.UNSUBSCRIBE_ACK: {"queueName": queue}}.get(kind)
        return Message(kind, request.id, headers=headers)

    def _deliver(self, message: Msg, attempts: int) -> Message:
        if self.driver.feature("deliver_headers", True):
            headers = dict(message.headers or {})
            headers["priority"] = PRIORITIES[message.priority]
            headers["deliveryAttempts"] = str(attempts)
        else:
            headers = dict(message.headers) if message.headers else None
        return Message(T.DELIVER, message.id, message.queue, message.payload, headers)

    # -- model operations -------------------------------------------------------------------------

    def _implicit(self, name: str) -> Optional[MQueue]:
        if name not in self.model and self.driver.feature("implicit_queues", True):
            self.model[name] = MQueue(DEFAULT_MODE, DEFAULT_MAX_SIZE)
        return self.model.get(name)

    def _enqueue(self, queue: MQueue, message: Msg) -> None:
        if len(queue.waiting) >= queue.max_size:         # DropOldest (the real default)
            queue.drop_oldest()
        queue.waiting.append(message)

    def _pump(self, queue: MQueue) -> list:
        slots = []
        while queue.waiting and queue.subscribers:
            message = queue.pop()
            subs = tuple(queue.subscribers)
            if queue.mode == DeliveryMode.FAN_OUT_WITHOUT_ACK.value:
                message.attempts += 1
                slots += [Slot(message, message.attempts, (k,)) for k in subs]
            elif queue.mode == DeliveryMode.FAN_OUT_WITH_ACK.value:
                flight = Flight(message, message.attempts + 1, queue.max_retries, False)
                slots += [Slot(message, flight.attempts, (k,), flight) for k in subs]
            else:
                message.attempts += 1
                flight = Flight(message, message.attempts, queue.max_retries, True)
                slots.append(Slot(message, message.attempts, subs, flight, queue))
        return slots

    @initialize(target=queues, mode=st.sampled_from(MODES), size=SIZES,
                subscribers=st.sets(st.integers(0, CONNECTIONS - 1)))
    def first_queue(self, mode, size, subscribers):
        """A queue to start with, and some subscribers: publishes then have somewhere to go."""
        self._open_all()
        name = self.driver.queue_names[0]
        request = Message(T.CREATE_QUEUE, self.new_id("create"), name,
                          headers={"deliveryMode": mode, "maxQueueSize": str(size)})
        self.model[name] = MQueue(mode, size)
        self._step(0, [request], [Message(T.CREATE_QUEUE, request.id, name)], [])
        for slot in sorted(subscribers):
            self.subscribe(slot, name)
        return name

    # -- rules: queues ----------------------------------------------------------------------------

    @rule(target=queues, conn=conns, pick=st.integers(0, QUEUE_POOL - 1), mode=st.sampled_from(MODES),
          size=SIZES, in_payload=st.booleans())
    def create_queue(self, conn, pick, mode, size, in_payload):
        name = self.driver.queue_names[pick]
        options = {"deliveryMode": mode, "maxQueueSize": size}
        if in_payload and self.driver.payload_options:
            request = Message(T.CREATE_QUEUE, self.new_id("create"), name, options)
        else:
            request = Message(T.CREATE_QUEUE, self.new_id("create"), name,
                              headers={k: str(v) for k, v in options.items()})
        if name not in self.model:
            self.model[name] = MQueue(mode, size)
            reply = Message(T.CREATE_QUEUE, request.id, name)
        elif self.driver.feature("queue_exists_error", True):
            reply = self._error(request, "QUEUE_EXISTS")
        else:                                   # the real server answers and keeps the old one
            reply = Message(T.CREATE_QUEUE, request.id, name)
        self._step(conn, [request], [reply], [])
        return name

    @rule(conn=conns, name=queues)
    def delete_queue(self, conn, name):
        request = Message(T.DELETE_QUEUE, self.new_id("delete"), name)
        if name in self.model or not self.driver.feature("queue_not_found_errors", True):
            reply = Message(T.DELETE_QUEUE, request.id, name)
        else:
            reply = self._error(request, "QUEUE_NOT_FOUND")
        self.model.pop(name, None)
        self._step(conn, [request], [reply], [])

    @rule(conn=conns, name=queues)
    def queue_info(self, conn, name):
        request = Message(T.QUEUE_INFO, self.new_id("info"), name)
        queue = self.model.get(name)
        if queue is None:
            if self.driver.feature("queue_not_found_errors", True):
                reply = self._error(request, "QUEUE_NOT_FOUND")
            else:
                reply = Message(T.QUEUE_INFO, request.id, name)
            self._step(conn, [request], [reply], [])
            return
        answer = self._ask(conn, request, T.QUEUE_INFO)
        info = answer.payload
        mode = queue.mode if self.driver.feature("queue_info_names", True) else MODES.index(queue.mode)
        want = {"name": name, "messageCount": len(queue.waiting), "subscriberCount": len(queue.subscribers),
                "deliveryMode": mode, "maxSize": queue.max_size}
        holds(isinstance(info, dict) and {k: info.get(k) for k in want} == want,
               f"QueueInfo({name}): got {info}, want {want}", "VIBE-QUEUE-004")
        holds(isinstance(info.get("createdAt"), str) and info["createdAt"], repr(info), "VIBE-QUEUE-004")
        holds(answer.queue == name or not self.exact, repr(answer), "VIBE-QUEUE-004")

    @rule(conn=conns)
    def list_queues(self, conn):
        request = Message(T.LIST_QUEUES, self.new_id("list"))
        answer = self._ask(conn, request, T.LIST_QUEUES)
        holds(isinstance(answer.payload, list), repr(answer), "VIBE-QUEUE-005")
        listed = set(answer.payload)
        if not self.driver.exclusive:
            listed &= set(self.driver.queue_names)
        holds(listed == set(self.model), f"ListQueues: {sorted(listed)}, model {sorted(self.model)}", "VIBE-QUEUE-005")

    # -- rules: subscriptions and messages -------------------------------------------------------

    @rule(target=deliveries, conn=conns, name=queues)
    def subscribe(self, conn, name):
        request = Message(T.SUBSCRIBE, self.new_id("sub"), name)
        queue = self._implicit(name)
        if queue is None:
            return self._settle(self._step(conn, [request], [self._error(request, "QUEUE_NOT_FOUND")], []))
        key = self.keys[conn]
        if key not in queue.subscribers:
            queue.subscribers.append(key)
            queue.changed()
        slots = self._pump(queue)
        return self._settle(self._step(conn, [request], [self._ack_for(request, T.SUBSCRIBE_ACK, name)], slots))

    @rule(conn=conns, name=queues)
    def unsubscribe(self, conn, name):
        request = Message(T.UNSUBSCRIBE, self.new_id("unsub"), name)
        queue = self.model.get(name)
        key = self.keys[conn]
        if queue is not None and key in queue.subscribers:
            queue.subscribers.remove(key)
            queue.changed()
        self._step(conn, [request], [self._ack_for(request, T.UNSUBSCRIBE_ACK, name)], [])

    @rule(target=deliveries, conn=conns, name=queues,
          batch=st.lists(st.tuples(PAYLOADS, PRIORITY_VALUES, st.none() | st.just("corr-1")),
                         min_size=1, max_size=3))
    def publish(self, conn, name, batch):
        """One to three Publish in one write (payload, priority, a correlationId header)."""
        requests, replies, slots = [], [], []
        for payload, priority, correlation in batch:
            headers = {k: v for k, v in (("priority", priority), ("correlationId", correlation)) if v} or None
            request = Message(T.PUBLISH, self.new_id("msg"), name, payload, headers)
            requests.append(request)
            queue = self._implicit(name)
            if queue is None:
                replies.append(self._error(request, "QUEUE_NOT_FOUND"))
                continue
            self._enqueue(queue, Msg(request.id, name, payload, headers, parse_priority(priority),
                                     next(self._seq)))
            slots += self._pump(queue)
            replies.append(self._ack_for(request, T.PUBLISH_ACK, name))
        return self._settle(self._step(conn, requests, replies, slots))

    @rule(delivery=consumes(deliveries))
    def ack(self, delivery):
        slot, key, mid = delivery
        self._step(slot, [Message(T.ACK, mid, headers={"messageId": mid})], [], [])
        if self.keys[slot] == key:               # else an old connection's: unknown here
            self._acked(key, mid)

    @rule(conn=conns)
    def ack_unknown(self, conn):
        mid = self.new_id("never-delivered")
        self._step(conn, [Message(T.ACK, mid, headers={"messageId": mid})], [], [])

    @rule(conn=conns)
    def ping(self, conn):
        request = Message(T.PING, self.new_id("ping"))
        self._step(conn, [request], [Message(T.PONG, request.id)], [])

    @rule(target=deliveries, conn=conns)
    def reconnect(self, conn):
        """Disconnect, then a new connection in the same slot: the old one's subscriptions end,
        its RoundRobin/PriorityBased deliveries in flight go back to their queues (and out to
        other subscribers), its FanOutWithAck copies are dropped."""
        key = self.keys[conn]
        touched = []
        for queue in self.model.values():
            if key in queue.subscribers:
                queue.subscribers.remove(key)
                queue.changed()
                touched.append(queue)
        for (k, mid), items in list(self.flights.items()):
            if k != key:
                continue
            del self.flights[(k, mid)]
            for flight in items:
                queue = self.model.get(flight.message.queue)
                if flight.requeue and queue is not None:
                    flight.message.attempts = flight.attempts
                    self._enqueue(queue, flight.message)
                    touched.append(queue)
        slots = []
        for queue in touched:
            if queue in self.model.values():
                slots += self._pump(queue)
        self.driver.pace()
        self._record(READY, [Message(T.DISCONNECT, "")])
        got = self.driver.disconnect(conn, Message(T.DISCONNECT, self.new_id("bye")))
        holds(got == [], f"answers to Disconnect: {_short(got)}", "VIBE-CONN-004")
        self.reached[(AWAIT_CONNECT, T.CONNECT.name)] += 1
        self.driver.open(conn)
        self.keys[conn] = next(self._keys)
        got = {s: self.driver.exchange(s, []) for s in range(CONNECTIONS)}
        return self._settle(self._check(got, conn, [], [], slots))

    # -- rules: the other (phase, command) pairs ---------------------------------------------------

    @precondition(lambda self: self.should)
    @rule(conn=conns)
    def connect_again(self, conn):
        """A second Connect on a connected connection: ConnectAck again (the document puts no
        limit on Connect; the real ConnectHandler answers every one), nothing else changes."""
        request = Message(T.CONNECT, self.new_id("conn"), headers={"authPassword": DEFAULT_PASSWORD})
        self.driver.pace()
        self._record(READY, [request])
        answers = self.driver.exchange(conn, [request])
        holds(len(answers) == 1 and answers[0].type == T.CONNECT_ACK and answers[0].error_code is None,
               f"a second Connect: got {_short(answers)}, expected one ConnectAck", "VIBE-CONN-001")
        holds(answers[0].id == request.id or not self.document,
               f"ConnectAck {answers[0].id!r} to Connect {request.id!r}", "VIBE-CONN-001")

    @precondition(lambda self: self.should)
    @rule(conn=conns, type_byte=UNKNOWN_TYPES)
    def unknown_command(self, conn, type_byte):
        """A command type the document does not have: an Error with the request's id
        (UNKNOWN_COMMAND on the real server, INVALID_MESSAGE in the document's codes) and the
        connection stays open."""
        request = Message(T.PING, self.new_id("what"))
        code = "INVALID_MESSAGE" if self.document else "UNKNOWN_COMMAND"
        wire = retyped(codec.encode(request, self.driver.reading), type_byte, self.driver.reading)
        self._step(conn, [wire], [self._error(request, code)], [])

    @rule(connected=st.booleans(), type_byte=UNKNOWN_TYPES,
          kinds=st.lists(st.sampled_from(CLIENT_TYPES + (UNKNOWN, MALFORMED)), min_size=1, max_size=4))
    def probe(self, connected, type_byte, kinds):
        """Each of ``kinds`` on a fresh connection of its own (see :meth:`_probe`)."""
        for kind in kinds:
            if self.should:
                self._probe(connected, kind, type_byte)
            else:
                self._probe_refused(connected, MALFORMED if kind == MALFORMED else UNKNOWN, type_byte)

    def _probe_refused(self, connected, kind, type_byte):
        """Without ``should``: an unknown command type or a malformed body must be refused with
        an Error or by closing the connection, never acted upon (VIBE-MSG-006, -MSG-005)."""
        phase = READY if connected else AWAIT_CONNECT
        self.reached[(phase, kind)] += 1
        reading = self.driver.reading
        sent = (malformed(reading) if kind == MALFORMED else
                retyped(codec.encode(Message(T.PING, self.new_id("probe")), reading), type_byte, reading))
        answers, closed = self.driver.probe(connected, [sent])
        holds(all(m.type == T.ERROR for m in answers) and (answers or closed),
               f"{phase}: {kind}: got {_short(answers)} ({'closed' if closed else 'open'}), "
               "expected an Error or the connection closed", "VIBE-MSG-005" if kind == MALFORMED else "VIBE-MSG-006")

    def _probe(self, connected, kind, type_byte):
        """One message on a fresh connection. Before Connect (``connected`` False): Connect gets
        ConnectAck, Ping Pong, anything else an Error NOT_AUTHENTICATED (SPEC_NOTES.md, the real
        read loop); a malformed body, in either phase: the connection closes, after an Error
        INVALID_MESSAGE in the document profile (the real codec throws out of its read loop).
        Connected, only the malformed body is probed (``connected`` is ignored for the others):
        the machine's connections send the rest."""
        connected = connected and kind == MALFORMED
        phase = READY if connected else AWAIT_CONNECT
        self.reached[(phase, kind if kind in (UNKNOWN, MALFORMED) else kind.name)] += 1
        rid = self.new_id("probe")
        queue = self.driver.queue_names[0]
        reading = self.driver.reading
        ids_kept = self.document               # the real server's errors before dispatch: new ids
        if kind == MALFORMED:
            sent, want, closes = [malformed(reading)], ([(T.ERROR, ANY, "INVALID_MESSAGE")]
                                                      if self.document else []), True
        elif kind == UNKNOWN:
            sent = [retyped(codec.encode(Message(T.PING, rid), reading), type_byte, reading)]
            want, closes = [(T.ERROR, rid if ids_kept else ANY, "NOT_AUTHENTICATED")], False
        else:
            headers = ({"authPassword": DEFAULT_PASSWORD} if kind == T.CONNECT else
                       {"messageId": rid} if kind == T.ACK else None)
            queue_of = None if kind in (T.CONNECT, T.DISCONNECT, T.PING, T.ACK, T.LIST_QUEUES) else queue
            sent = [Message(kind, rid, queue_of, {"x": 1} if kind == T.PUBLISH else None, headers)]
            if kind == T.CONNECT:
                want = [(T.CONNECT_ACK, rid if ids_kept else ANY, None)]
            elif kind == T.PING:
                want = [(T.PONG, rid, None)]
            else:
                want = [(T.ERROR, rid if ids_kept else ANY, "NOT_AUTHENTICATED")]
            closes = False
        answers, closed = self.driver.probe(connected, sent)
        got = [(m.type, m.id, m.error_code) for m in answers]
        holds(got == want and closed == closes,
               f"{phase}: {kind if isinstance(kind, str) else kind.name} got {_short(answers)} "
               f"({'closed' if closed else 'open'}), expected {want} ({'closed' if closes else 'open'})",
               "VIBE-MSG-005" if kind == MALFORMED else "VIBE-CONN-003")

    @precondition(lambda self: self.driver.clock_control)
    @rule(target=deliveries)
    def time_passes(self):
        """Past every deadline: each delivery in flight comes again with deliveryAttempts + 1
        to the same connection, or, after maxRetryAttempts unacked deliveries, is dropped (no
        dead-letter queue here)."""
        slots = []
        for (key, mid), items in list(self.flights.items()):
            keep = []
            for flight in items:
                if flight.attempts >= flight.max_retries:
                    continue
                flight.attempts += 1
                if flight.requeue:
                    flight.message.attempts = flight.attempts
                slots.append(Slot(flight.message, flight.attempts, (key,)))
                keep.append(flight)
            if keep:
                self.flights[(key, mid)] = keep
            else:
                del self.flights[(key, mid)]
        self.driver.advance(self.driver.all_due)
        got = {s: self.driver.exchange(s, []) for s in range(CONNECTIONS)}
        self._check(got, None, [], [], slots, unordered=True)
        return multiple()

    @invariant()
    def backlog_only_without_subscribers(self):
        for name, queue in self.model.items():
            assert not (queue.waiting and queue.subscribers), f"model: {name} holds messages while subscribed"

