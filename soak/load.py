"""Load: many concurrent connections per reference broker, every message accounted for.

For each protocol the reference broker runs as a child process (``wirecheck serve``, in
memory), and this process opens C connections (full run 500, quick 50) with the protocol's
reference client. Connection *i* publishes M messages (full 1,000, quick 100) to a destination
of its own and consumes those of connection *i - 1* (a ring: every delivery crosses from one
connection to another, and every connection both publishes and consumes). SignalR's hub has no
publish/subscribe between connections, so there each connection consumes its own (below).

Each message is :data:`SIZE` bytes of ASCII: the publisher's number, the sequence number, and
filler that depends on both, so the receiving side can tell a message that was never published
(``foreign``: altered, misrouted or invented) from a duplicate. The :class:`Ledger` counts, per
publisher: messages handed to the client (``published``), confirmed by the broker
(``confirmed``), delivered at least once (``delivered``), delivered again (``duplicates``) and
delivered first after a later one of the same publisher (``reordered``). ``lost`` is what was
published and never delivered.

Flow control. None of these protocols makes a publisher wait for its consumer, and every broker
bounds its queues (benchmarks/bench_brokers.py, "Flow control"; the hardening limits add more).
So each publisher keeps at most :data:`WINDOW` messages published and not yet delivered (fewer
with many connections: :data:`IN_FLIGHT` in all), an end-to-end window as an application would
keep; what is measured is the brokers under 500 busy connections, not their overflow policies
nor their ack timeouts.

Per protocol (workload, delivery mode, what is asserted):

- ``blipmq``: topic ``load/<i>``, SUBSCRIBE QoS1 (the ACK proves it exists before anything is
  published: "a publish reaches only the subscriptions existing at that moment"), PUBLISH QoS1
  with a PING barrier every :data:`CONFIRM_EVERY` messages (the client's ``confirm``); read with
  POLL, each delivery ACKed. QoS1 is at-least-once (unacked deliveries come again after a
  backoff), so duplicates are counted, not refused; the per-subscription queue is FIFO, so first
  deliveries must keep the publisher's order. The broker keeps its defaults (redelivery after
  0.1 s doubling, 3 deliveries at most: SPEC_NOTES.md): the client ACKs a delivery before its
  next POLL on the same connection, and the broker looks for expired deliveries of a
  subscription only when it is polled, so a slow broker makes no redelivery here.
- ``vibemq``: queue ``load-<i>`` (auto-created, RoundRobin, one subscriber), Subscribe
  (SubscribeAck), each Publish confirmed by its PublishAck, every Deliver Acked. At-least-once
  (redelivery after the ack timeout); a queue is FIFO. The broker runs with the options of the
  broker benchmark (no per-connection rate limit, the real server's ack timing).
- ``micromessage2``: QUEUE ``load/<i>`` ("Messaging where order is important and each message is
  delivered to one receiver", micromessage2.md), extensions ``pubsub`` and ``batch-ack`` with a
  window of 100; SENDs are confirmed by the broker's acks, deliveries batch-acked by the client.
  At-least-once (a queue message unacked by a subscriber that leaves goes to another).
- ``rabbitmq-stream``: stream ``load-<i>``, created by its publisher, DeclarePublisher with a
  reference (deduplication), Publish with PublishConfirm; the consumer subscribes from FIRST and
  grants credit per chunk. A log read once from FIRST by one consumer delivers each offset
  once, and the deduplicating publisher never resends: duplicates must be zero; offsets give
  the order.
- ``signalr``: MessagePack over the WebSocket after negotiate (as real clients connect). Each
  message is ``invoke("AskMe", "Deliver", message)``: the server invokes ``Deliver(message)`` on
  the caller with an id, the client's handler records the delivery and returns the message's
  key, and the server completes AskMe with it ("client results"), so the Completion proves the
  delivery. The protocol has no retransmission ("Reliable, in-order ... provides no facility for
  retransmission"): duplicates must be zero, and one connection keeps the order.

Bounds: every client wait has :data:`STALL` seconds (a publisher whose window does not move, or a
consumer that receives nothing, for that long stops and its messages count as lost); each
protocol's whole run has :data:`RUN_TIMEOUT`; the broker is stopped (killed if it must be)
whatever happens. RLIMIT_NOFILE's soft limit is raised to the hard limit here, before the broker
starts: 500 connections need 500 descriptors on each side, and the child inherits the limit.

Figures per protocol: msgs/s (distinct deliveries / seconds from the first publish to the last
first delivery), elapsed, duplicates, lost, the broker's peak RSS (``VmHWM``).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:          # runnable as a script from the repository root
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_brokers import SERVE_OPTIONS as BENCH_SERVE_OPTIONS  # noqa: E402
from wirecheck.reference_impl.core.server import raise_open_file_limit  # noqa: E402
from soak.common import HighWater, write_result  # noqa: E402

NAME = "load"
PROTOCOLS = ("blipmq", "vibemq", "micromessage2", "rabbitmq-stream", "signalr")
#: (connections, messages per connection): full run / quick.
SIZES = {False: (500, 1_000), True: (50, 100)}
#: Bytes of each message.
SIZE = 100
#: At most this many messages of one publisher published and not yet delivered ...
WINDOW = 100
#: ... and of all publishers together (500 connections: 20 each). A message waits behind about
#: this many others (Little's law), and a loaded broker must get it through well inside the
#: ack timeouts: 50,000 in flight on a busy machine took VibeMQ past its 30 s ack timeout, and
#: each redelivery added load (836,913 duplicates, 1.1k msgs/s instead of 6k).
IN_FLIGHT = 10_000
#: BlipMQ: a PING barrier (publish confirm) after this many publishes.
CONFIRM_EVERY = 25
#: Seconds any single wait may last (a client request, a window that does not move).
STALL = {False: 60.0, True: 20.0}
#: Seconds one protocol's whole run may last (connect, publish, deliver, close).
RUN_TIMEOUT = {False: 900.0, True: 90.0}
#: Connections opened (and closed) at once: a burst stays within any listener's accept
#: backlog (asyncio's default is 100), so no SYN waits for a retransmission.
CONNECT_CONCURRENCY = 50
#: Error texts kept per protocol (all are counted).
ERROR_SAMPLES = 5


@dataclass(frozen=True)
class Mode:
    """What a protocol promises the run checks against (see the module docstring)."""
    delivery: str
    duplicates_allowed: bool
    ordered: bool
    serve_options: dict = field(default_factory=dict)


MODES = {
    "blipmq": Mode("at-least-once", True, True),
    "vibemq": Mode("at-least-once", True, True, dict(BENCH_SERVE_OPTIONS["vibemq"])),
    "micromessage2": Mode("at-least-once", True, True),
    "rabbitmq-stream": Mode("once per offset", False, True),
    "signalr": Mode("at-most-once", False, True),
}

def window(connections: int) -> int:
    """Each publisher's window: :data:`WINDOW`, or its share of :data:`IN_FLIGHT`."""
    return max(1, min(WINDOW, IN_FLIGHT // connections))


_FILL = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" * 3
_HEAD = 14                                 # b"%05d %07d " : publisher, sequence number


# -- what was published and delivered ------------------------------------------------------------

class Ledger:
    """Every message of a run: ``connections`` publishers of ``messages`` each. Connection
    ``i`` consumes publisher ``source(i)``. Never raises on what it is given: a delivery that
    was not published is counted (``foreign``), as are duplicates and reorderings."""

    def __init__(self, connections: int, messages: int, window: int = WINDOW,
                 source: Callable[[int], int] | None = None, size: int = SIZE) -> None:
        if size < _HEAD + 1 or not 0 < connections < 100_000 or not 0 < messages < 10_000_000:
            raise ValueError(f"{connections} x {messages} messages of {size} bytes do not fit "
                             "the header (5 + 7 digits)")
        self.connections, self.messages, self.window, self.size = connections, messages, window, size
        self.source = source or (lambda i: (i - 1) % connections)
        self.copies = [bytearray(messages) for _ in range(connections)]
        self.published = [0] * connections
        self.confirmed = [0] * connections
        self.delivered = [0] * connections
        self.highest = [-1] * connections
        self.duplicates = self.reordered = self.foreign = 0
        self.errors: list[str] = []
        self.error_count = 0
        self.first_ns = self.last_ns = 0
        self._moved = [asyncio.Event() for _ in range(connections)]

    # messages
    def body(self, publisher: int, seq: int) -> bytes:
        fill = self.size - _HEAD
        start = (publisher * 7 + seq) % 62
        return b"%05d %07d " % (publisher, seq) + _FILL[start:start + fill]

    def payload(self, publisher: int, seq: int) -> bytes:
        """Message ``seq`` of ``publisher``, counted as published (call it when handing it over)."""
        if not self.first_ns:
            self.first_ns = time.perf_counter_ns()
        self.published[publisher] += 1
        return self.body(publisher, seq)

    @staticmethod
    def key(data) -> str:
        """The publisher and sequence number a message starts with (SignalR's proof of delivery)."""
        raw = data.encode("ascii") if isinstance(data, str) else bytes(data)
        return raw[:_HEAD - 1].decode("ascii", "replace")

    # deliveries
    def received(self, consumer: int, data) -> None:
        try:
            raw = data.encode("ascii") if isinstance(data, str) else bytes(data)
            publisher, seq = int(raw[:5]), int(raw[6:13])
        except (ValueError, TypeError, UnicodeError):
            self._foreign(consumer, data)
            return
        if (not 0 <= publisher < self.connections or not 0 <= seq < self.messages
                or publisher != self.source(consumer) or raw != self.body(publisher, seq)):
            self._foreign(consumer, raw)
            return
        copies = self.copies[publisher]
        if copies[seq]:
            self.duplicates += 1
            copies[seq] = min(255, copies[seq] + 1)
            return
        copies[seq] = 1
        if seq < self.highest[publisher]:
            self.reordered += 1
        else:
            self.highest[publisher] = seq
        self.delivered[publisher] += 1
        self.last_ns = time.perf_counter_ns()
        self._moved[publisher].set()

    def _foreign(self, consumer: int, data) -> None:
        self.foreign += 1
        self.error(f"connection {consumer} got a message that was not published to it: "
                   f"{bytes(data)[:40] if not isinstance(data, str) else data[:40]!r}")

    def error(self, text: str) -> None:
        self.error_count += 1
        if len(self.errors) < ERROR_SAMPLES:
            self.errors.append(text)

    def complete(self, publisher: int) -> bool:
        return self.delivered[publisher] >= self.messages

    async def moved(self, publisher: int, stall: float) -> None:
        """Wait for the next first delivery of ``publisher``'s messages (TimeoutError after ``stall``)."""
        event = self._moved[publisher]
        event.clear()
        await asyncio.wait_for(event.wait(), stall)

    async def room(self, publisher: int, stall: float) -> None:
        """Until ``publisher`` has fewer than ``window`` messages published and not delivered."""
        while self.published[publisher] - self.delivered[publisher] >= self.window:
            await self.moved(publisher, stall)

    def totals(self) -> dict:
        planned = self.connections * self.messages
        published, delivered = sum(self.published), sum(self.delivered)
        elapsed = (self.last_ns - self.first_ns) / 1e9 if self.last_ns > self.first_ns else 0.0
        return {"planned": planned, "published": published, "confirmed": sum(self.confirmed),
                "delivered": delivered, "lost": published - delivered,
                "duplicates": self.duplicates, "reordered": self.reordered,
                "foreign": self.foreign, "errors": self.error_count,
                "error_samples": list(self.errors), "elapsed_s": round(elapsed, 3),
                "msgs_per_s": round(delivered / elapsed, 1) if elapsed else 0.0}


# -- one connection per protocol ---------------------------------------------------------------
#
# A peer is connection ``index``: ``publish_setup()`` creates what it publishes to,
# ``consume_setup()`` subscribes to its source's (both before anyone publishes), ``publish(seq)``
# hands one message over, ``receive()`` returns the next deliveries' payloads, ``settle()``
# waits for the outstanding confirms and reports the protocol's errors to the ledger.

class Peer:
    def __init__(self, index: int, ledger: Ledger, addr: dict, timeout: float) -> None:
        self.index, self.ledger, self.addr, self.timeout = index, ledger, addr, timeout
        self.client = None
        self.source = ledger.source(index)

    def dest(self, publisher: int) -> str:
        return f"load-{publisher}"

    async def publish_setup(self) -> None:
        pass

    async def consume_setup(self) -> None:
        pass

    #: ``async receive() -> list`` of payloads; None where the client hands deliveries to a
    #: callback that records them in the ledger itself.
    receive: Optional[Callable] = None

    async def settle(self) -> None:
        pass

    def confirmed(self, count: int = 1) -> None:
        self.ledger.confirmed[self.index] += count

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()


class BlipPeer(Peer):
    def dest(self, publisher: int) -> str:
        return f"load/{publisher}"

    async def open(self) -> None:
        from wirecheck.reference_impl.blipmq.client import BlipClient
        self.client = await BlipClient.connect(self.addr["host"], self.addr["port"], timeout=self.timeout)

    async def consume_setup(self) -> None:
        sid = await self.client.subscribe(self.dest(self.source), qos=1)
        self._deliveries = self.client.consume(sid)          # POLL with backoff, ACKs QoS1

    async def publish(self, seq: int) -> None:
        last = seq == self.ledger.messages - 1
        confirm = last or seq % CONFIRM_EVERY == CONFIRM_EVERY - 1
        await self.client.publish(self.dest(self.index), self.ledger.payload(self.index, seq),
                                  qos=1, confirm=confirm)
        if confirm:                                          # the barrier covers the batch
            self.confirmed(seq + 1 - self.ledger.confirmed[self.index])

    async def receive(self) -> list:
        msg = await self._deliveries.__anext__()
        if msg.qos != 1:
            self.ledger.error(f"blipmq: a QoS {msg.qos} delivery on a QoS1 subscription")
        return [msg.message]

    async def settle(self) -> None:
        await self.client.ping()             # the ACKs written so far are processed
        for err in self.client.errors:
            self.ledger.error(f"blipmq connection {self.index}: {err}")


class VibePeer(Peer):
    async def open(self) -> None:
        from wirecheck.reference_impl.vibemq.client import VibeClient
        self.client = await VibeClient.connect(self.addr["host"], self.addr["port"], timeout=self.timeout)
        self._tasks: set[asyncio.Task] = set()

    async def consume_setup(self) -> None:
        await self.client.subscribe(self.dest(self.source))

    async def publish(self, seq: int) -> None:
        # Each Publish waits for its PublishAck in a task of its own, so the window is in
        # flight at once; the task writes its frame when it starts, and tasks start in order.
        task = asyncio.ensure_future(self.client.publish(self.dest(self.index),
                                                         self.ledger.payload(self.index, seq).decode("ascii")))
        self._tasks.add(task)
        task.add_done_callback(self._acked)

    def _acked(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        if task.exception() is not None:
            self.ledger.error(f"vibemq connection {self.index}: publish: {task.exception()!r}")
        else:
            self.confirmed()

    async def receive(self) -> list:
        msg = await self.client.next_delivery()
        await self.client.ack(msg)
        return [msg.payload]

    async def settle(self) -> None:
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=self.timeout)
        await self.client.ping()             # the Acks written so far are processed
        for err in self.client.errors:
            self.ledger.error(f"vibemq connection {self.index}: {err}")
        if self.client.dropped:
            self.ledger.error(f"vibemq connection {self.index}: {self.client.dropped} deliveries "
                              "dropped by the client's queue")

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await super().close()


class MM2Peer(Peer):
    #: pubsub for SUBSCRIBE; batch-ack's window (the document's default is 10).
    EXTENSIONS = ("pubsub", "batch-ack:max-count=100")

    def dest(self, publisher: int) -> str:
        return f"load/{publisher}"           # not "topic/...": a QUEUE (micromessage2 state.py)

    async def open(self) -> None:
        from wirecheck.reference_impl.micromessage2.client import MM2Client
        self.client = await MM2Client.connect(self.addr["host"], self.addr["port"],
                                              required=list(self.EXTENSIONS), timeout=self.timeout)
        self._sent = 0

    async def consume_setup(self) -> None:
        # SUBSCRIBE has no answer; a queue keeps its messages until a subscriber takes them.
        await self.client.subscribe(self.dest(self.source))

    async def publish(self, seq: int) -> None:
        await self.client.send(self.dest(self.index), self.ledger.payload(self.index, seq))
        self._sent += 1
        self._count_acks()

    def _count_acks(self) -> None:
        acked = self._sent - len(self.client.outbox.inflight)
        self.confirmed(acked - self.ledger.confirmed[self.index])

    async def receive(self) -> list:
        msg = await self.client.next_message()
        if msg.destination != self.dest(self.source):
            self.ledger.error(f"micromessage2: a delivery to {msg.destination!r} on connection {self.index}")
        return [msg.payload]

    async def settle(self) -> None:
        # The broker acks the last SENDs after its ack delay (batch-ack): wait for them.
        deadline = time.monotonic() + self.timeout
        while self.client.outbox.inflight and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self._count_acks()
        for err in self.client.errors:
            self.ledger.error(f"micromessage2 connection {self.index}: {err}")


class StreamPeer(Peer):
    PUBLISHER, SUBSCRIPTION, CREDIT = 1, 1, 10

    async def open(self) -> None:
        from wirecheck.reference_impl.rabbitmq_stream.client import StreamClient
        # auto_credit: one Credit per Deliver, as a consumer that keeps CREDIT chunks coming.
        self.client = await StreamClient.connect(self.addr["host"], self.addr["port"],
                                                 timeout=self.timeout, auto_credit=True)

    async def publish_setup(self) -> None:
        stream = self.dest(self.index)
        self._check("Create", await self.client.create(stream))
        self._check("DeclarePublisher",
                    await self.client.declare_publisher(self.PUBLISHER, stream, reference=stream))

    async def consume_setup(self) -> None:
        from wirecheck.reference_impl.rabbitmq_stream.constants import OffsetType
        self._check("Subscribe", await self.client.subscribe(
            self.SUBSCRIPTION, self.dest(self.source), OffsetType.FIRST, credit=self.CREDIT))

    def _check(self, what: str, response) -> None:
        from wirecheck.reference_impl.rabbitmq_stream import codec
        from wirecheck.reference_impl.rabbitmq_stream.constants import Code
        if response.code != Code.OK:
            raise ConnectionError(f"{what} refused: {codec.code_name(response.code)}")

    async def publish(self, seq: int) -> None:
        # Publishing ids from 1, increasing: what deduplication needs.
        self.client.publish(self.PUBLISHER, [(seq + 1, self.ledger.payload(self.index, seq))])

    async def receive(self) -> list:
        frame = await self.client.next_delivery(self.SUBSCRIPTION)
        return frame.chunk.messages()

    async def settle(self) -> None:
        from wirecheck.reference_impl.rabbitmq_stream.constants import Code
        ids = range(1, self.ledger.published[self.index] + 1)
        codes = await self.client.wait_confirms(self.PUBLISHER, ids)
        bad = {pid: code for pid, code in codes.items() if code != Code.OK}
        self.confirmed(len(codes) - len(bad))
        if bad:
            self.ledger.error(f"rabbitmq-stream connection {self.index}: {len(bad)} publish errors, "
                              f"e.g. {next(iter(bad.items()))}")


class HubPeer(Peer):
    METHOD = "Deliver"

    async def open(self) -> None:
        from wirecheck.reference_impl.signalr.client import HubClient
        from wirecheck.reference_impl.signalr.constants import MESSAGEPACK
        self.client = await HubClient.connect(self.addr["url"], MESSAGEPACK, timeout=self.timeout)
        self.client.on(self.METHOD, self._deliver)
        self._tasks: set[asyncio.Task] = set()

    def _deliver(self, payload) -> str:
        self.ledger.received(self.index, payload)
        return Ledger.key(payload)           # the client's result: AskMe's completion

    async def publish(self, seq: int) -> None:
        payload = self.ledger.payload(self.index, seq)
        task = asyncio.ensure_future(self.client.invoke("AskMe", self.METHOD, payload))
        self._tasks.add(task)
        task.add_done_callback(lambda t: self._completed(t, Ledger.key(payload)))

    def _completed(self, task: asyncio.Task, key: str) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        if task.exception() is not None:
            self.ledger.error(f"signalr connection {self.index}: AskMe: {task.exception()!r}")
        elif task.result() != key:
            self.ledger.error(f"signalr connection {self.index}: AskMe completed with "
                              f"{task.result()!r}, not {key!r}")
        else:
            self.confirmed()

    async def settle(self) -> None:
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=self.timeout)
        for message in self.client.unexpected:
            self.ledger.error(f"signalr connection {self.index}: unexpected {message!r}")

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await super().close()


PEERS = {"blipmq": BlipPeer, "vibemq": VibePeer, "micromessage2": MM2Peer,
         "rabbitmq-stream": StreamPeer, "signalr": HubPeer}


# -- one protocol's run --------------------------------------------------------------------------

async def _bounded(items, concurrency: int, work) -> list:
    """``work(item)`` for every item, at most ``concurrency`` at once; exceptions returned."""
    gate = asyncio.Semaphore(concurrency)

    async def one(item):
        async with gate:
            return await work(item)
    return await asyncio.gather(*(one(item) for item in items), return_exceptions=True)


async def _publisher(peer: Peer, stall: float) -> None:
    ledger, i = peer.ledger, peer.index
    try:
        for seq in range(ledger.messages):
            await ledger.room(i, stall)
            await peer.publish(seq)
    except asyncio.TimeoutError:
        ledger.error(f"publisher {i}: its window did not move for {stall} s")
    except Exception as exc:         # noqa: BLE001 - recorded; its undelivered messages are lost
        ledger.error(f"publisher {i}: {exc!r}")


async def _consumer(peer: Peer, stall: float) -> None:
    ledger, src, i = peer.ledger, peer.source, peer.index
    try:
        while not ledger.complete(src):
            if peer.receive is None:             # delivered through a callback: wait for it
                await ledger.moved(src, stall)   # (no await between the check and the wait)
                continue
            for payload in await asyncio.wait_for(peer.receive(), stall):
                ledger.received(i, payload)
    except asyncio.TimeoutError:
        ledger.error(f"consumer {i}: nothing delivered for {stall} s")
    except Exception as exc:         # noqa: BLE001 - recorded; what it did not get is lost
        ledger.error(f"consumer {i}: {exc!r}")


async def drive(protocol: str, addr: dict, ledger: Ledger, stall: float, phases: dict) -> None:
    """The workload against a broker at ``addr``, accounted in ``ledger``; the phases'
    durations go to ``phases``. A publisher and a consumer fail on their own (each records
    why), so one stuck connection does not stop the others."""
    peers = [PEERS[protocol](i, ledger, addr, stall) for i in range(ledger.connections)]
    opened: list[Peer] = []
    started = time.monotonic()
    try:
        async def open_one(peer: Peer) -> None:
            await peer.open()
            opened.append(peer)
        for step in (open_one, lambda p: p.publish_setup(), lambda p: p.consume_setup()):
            targets = peers if step is open_one else list(opened)
            for exc in await _bounded(targets, CONNECT_CONCURRENCY, step):
                if exc is not None:
                    ledger.error(f"setup: {exc!r}")
        phases["setup_s"] = round(time.monotonic() - started, 3)
        if ledger.error_count:
            return
        began = time.monotonic()
        await asyncio.gather(*(_publisher(p, stall) for p in opened),
                             *(_consumer(p, stall) for p in opened))
        phases["run_s"] = round(time.monotonic() - began, 3)
        for exc in await _bounded(opened, CONNECT_CONCURRENCY,
                                  lambda p: asyncio.wait_for(p.settle(), stall)):
            if exc is not None:
                ledger.error(f"settle: {exc!r}")
    finally:
        began = time.monotonic()
        await _bounded(opened, CONNECT_CONCURRENCY, lambda p: asyncio.wait_for(p.close(), 10.0))
        phases["close_s"] = round(time.monotonic() - began, 3)


def _goals(mode: Mode, totals: dict, timed_out: bool) -> list[dict]:
    def goal(name: str, figure, target: str, met: bool) -> dict:
        return {"name": name, "figure": figure, "goal": target, "met": bool(met)}
    goals = [
        goal("finished in time", not timed_out, "true", not timed_out),
        goal("all published", totals["published"], f"== {totals['planned']}",
             totals["published"] == totals["planned"]),
        goal("all confirmed", totals["confirmed"], f"== {totals['published']}",
             totals["confirmed"] == totals["published"]),
        goal("nothing lost", totals["lost"], "== 0", totals["lost"] == 0),
        goal("nothing foreign", totals["foreign"], "== 0", totals["foreign"] == 0),
        goal("no errors", totals["errors"], "== 0", totals["errors"] == 0),
    ]
    if mode.duplicates_allowed:
        goals.append(goal(f"duplicates ({mode.delivery}: allowed, counted)", totals["duplicates"],
                          ">= 0", True))
    else:
        goals.append(goal(f"no duplicates ({mode.delivery})", totals["duplicates"], "== 0",
                          totals["duplicates"] == 0))
    if mode.ordered:
        goals.append(goal("per-publisher order", totals["reordered"], "== 0", totals["reordered"] == 0))
    return goals


def run_protocol(protocol: str, connections: int, messages: int, *, quick: bool = False) -> dict:
    """Start ``protocol``'s broker, drive the workload (bounded by :data:`RUN_TIMEOUT`), stop
    the broker; the result."""
    from tests.support.blipmq_proc import BrokerProcess

    # 500 connections are 500 descriptors here and 500 in the broker: the soft RLIMIT_NOFILE
    # goes up to the hard limit before the broker starts, so the child inherits it too.
    raise_open_file_limit()
    mode = MODES[protocol]
    options = [arg for key, value in mode.serve_options.items()
               for arg in ("--option", f"{key}={json.dumps(value)}")]
    stall, deadline = STALL[quick], RUN_TIMEOUT[quick]
    ledger = Ledger(connections, messages, window(connections),
                    (lambda i: i) if protocol == "signalr" else None)
    phases: dict = {}
    broker = BrokerProcess(*options, protocol=protocol).start()
    peak = HighWater(broker.proc.pid)
    try:
        addr = {"host": "127.0.0.1", "port": broker.port}
        if protocol == "signalr":
            from wirecheck.reference_impl.signalr.broker import DEFAULT_HUB_PATH
            addr["url"] = f"http://127.0.0.1:{broker.port}{DEFAULT_HUB_PATH}"

        async def main() -> bool:
            task = asyncio.ensure_future(drive(protocol, addr, ledger, stall, phases))
            done, _ = await asyncio.wait([task], timeout=deadline)
            if not done:
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return not done

        timed_out = asyncio.run(main())
    finally:
        peak.stop()
        alive = broker.proc.poll() is None
        broker.terminate()
    if timed_out:
        ledger.error(f"the run did not end within {deadline} s")
    if not alive:
        ledger.error("the broker exited during the run: " + "".join(broker.output[-5:])[-500:])
    totals = ledger.totals()
    goals = _goals(mode, totals, timed_out)
    return {"protocol": protocol, "connections": connections, "messages_per_connection": messages,
            "delivery": mode.delivery, "duplicates_allowed": mode.duplicates_allowed,
            "ordered": mode.ordered, "serve_options": mode.serve_options,
            **totals, **phases, "broker_peak_rss_mb": round(peak.mb, 1),
            "goals": goals, "ok": all(g["met"] for g in goals)}


def run(quick: bool, protocols=PROTOCOLS, connections: int | None = None,
        messages: int | None = None, progress: bool = False) -> dict:
    """Every protocol in turn (``progress``: a line per protocol as it ends)."""
    default_c, default_m = SIZES[quick]
    connections, messages = connections or default_c, messages or default_m
    started = time.monotonic()
    results = {}
    for p in protocols:
        results[p] = r = run_protocol(p, connections, messages, quick=quick)
        if progress:
            print(f"{p}: {'ok' if r['ok'] else 'FAILED'}  {r['delivered']}/{r['planned']} delivered, "
                  f"{r['lost']} lost, {r['duplicates']} duplicates, {r['reordered']} reordered, "
                  f"{r['msgs_per_s']} msgs/s, broker peak {r['broker_peak_rss_mb']} MB"
                  + (f"; {r['error_samples'][:2]}" if r["errors"] else ""), flush=True)
    return {"name": NAME, "quick": quick,
            "parameters": {"connections": connections, "messages_per_connection": messages,
                           "message_bytes": SIZE, "window": window(connections), "stall_s": STALL[quick],
                           "run_timeout_s": RUN_TIMEOUT[quick], "protocols": list(protocols)},
            "protocols": results,
            "goals": [dict(g, name=f"{p}: {g['name']}") for p, r in results.items() for g in r["goals"]],
            "elapsed_s": round(time.monotonic() - started, 1),
            "ok": all(r["ok"] for r in results.values())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m soak.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{SIZES[True][0]} x {SIZES[True][1]} "
                        f"instead of {SIZES[False][0]} x {SIZES[False][1]}")
    parser.add_argument("--protocol", action="append", choices=PROTOCOLS, help="only these (repeatable)")
    parser.add_argument("--connections", type=int, help="override the connections per protocol")
    parser.add_argument("--messages", type=int, help="override the messages per connection")
    parser.add_argument("--out", default=f"reports/soak/{NAME}.json")
    args = parser.parse_args(argv)
    result = run(args.quick, tuple(args.protocol or PROTOCOLS), args.connections, args.messages,
                 progress=True)
    write_result(args.out, result)
    print(f"load: {'all goals met' if result['ok'] else 'FAILED'} in {result['elapsed_s']} s; {args.out}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
