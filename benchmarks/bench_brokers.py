"""Reference brokers driven by their reference clients: publish -> deliver msgs/s and latency, for
BlipMQ, VibeMQ, Micromessage2 and SignalR (RabbitMQ Stream: bench_rmqs_broker.py).

Each broker runs in its own process (``wirecheck serve --protocol P --port 0``, in memory), so
the broker and the clients (one asyncio loop in this process) each get a core. Each message is
100 bytes of ASCII: its sequence number, the ``time.perf_counter_ns()`` taken just before it is
handed to the client, and filler that depends on the sequence number. The receiving side checks
every message against what was sent (a wrong, missing or duplicated message raises: a broker
that delivers wrong data gives an error, not a figure), and the latency of a message is its
receive time minus that stamp (same process, same clock).

Figures (no peer: no real server of these protocols is installed here):

- ``broker.<protocol>.msgs``: N / (last delivery - first publish), msgs/s;
- ``broker.<protocol>.latency.p50`` / ``.p99`` (and ``.p999`` when N >= 1,000), ms,
  nearest-rank percentiles over the N messages.

Flow control. None of these brokers slows a publisher down when a subscriber falls behind; each
bounds the backlog instead and then loses messages or the subscriber: BlipMQ evicts the oldest
pending message past ``max_queue`` (1,024, ``wirecheck/reference_impl/blipmq/state.py``), VibeMQ's queues
drop the oldest past 10,000 (``maxQueueSize`` and DropOldest, the real server's defaults,
``wirecheck/reference_impl/vibemq/state.py``), Micromessage2 disconnects a subscriber with more than
10,000 messages waiting for its acks (``wirecheck/reference_impl/micromessage2/session.py``). So the
publisher publishes in batches of :data:`BATCH` and stays at most :data:`AHEAD` messages ahead
of what the subscriber has received. The latency figures are therefore latencies under
saturating load with at most :data:`AHEAD` messages in flight, not those of an idle broker.

Workload per protocol (one subscriber connected and subscribed first, then one publisher):

- BlipMQ: topic ``bench/topic``, SUBSCRIBE QoS1 (its ACK proves the subscription exists),
  PUBLISH QoS1 fire-and-forget with ``confirm=True`` on the last of each batch (the client's
  PING barrier: PUBLISH has no answer on success, blipmq-protocol.md "PUBLISH", and the PONG
  proves every earlier frame was processed). The subscriber reads with the client's
  ``consume()``: one POLL (pipelined with a PING) at a time, backing off 5 ms doubling to 0.5 s
  while the queue is empty ("POLL": "no frame; client should backoff and retry"), each QoS1
  delivery ACKed ("ACK for QoS1 delivery").
- VibeMQ: queue ``bench-queue`` (auto-created, RoundRobin, one subscriber), Subscribe
  (SubscribeAck), each Publish waits for its PublishAck ("PublishAck"), the batch's publishes
  concurrently; every Deliver is Acked ("Ack"). The payload is a JSON string whose encoding is
  100 bytes (the payload field is JSON, "Message Format"). ``wirecheck serve`` builds this
  broker with the black-box suite's timing (``wirecheck/reference_impl/vibemq/__init__.py``): at most 100
  messages per second per connection, Acks included (RATE_LIMITED, "Error Codes"), which would
  be the figure, and a redelivery of what is not Acked within 0.4 s ("deliveryAttempts" 2),
  which a loaded machine turns into duplicates (seen with other processes busy on both cores;
  never with the real timing). So this module gives it :data:`SERVE_OPTIONS` (``wirecheck
  serve --option``): no rate limit and the real server's ack timing (30 s, retries from 2 s:
  ``BrokerConfig``'s defaults).
- Micromessage2: extensions ``pubsub`` and ``batch-ack:max-count=100`` on both connections
  ("batch-ack": the pusher stops after 100 unacked messages; the document's default is 10),
  destination ``topic/bench`` (a TOPIC: "enqueued to all subscribers", the glossary). The
  SUBSCRIBE command (pub/sub extension) has no answer, so the publisher sends probe messages
  until one reaches the subscriber before it starts (the probes are not counted). SENDs are
  acked by the broker (the publisher's window), deliveries by the client's automatic batch ack.
- SignalR: the hub protocol has no publish/subscribe between connections (an application's hub
  decides who gets what) and the reference test hub (``hub.py``) has no broadcast method: its
  only server -> client delivery is ``CallMe(method, argument)``, which invokes
  ``method(argument)`` on the caller. So one connection is both publisher and subscriber:
  ``invoke("CallMe", "Deliver", payload)`` (its Completion is the acknowledgement: "Indicates a
  previous Invocation has completed", "Terms"), the delivery is the server's Invocation of
  ``Deliver`` seen by the client's ``on("Deliver")`` handler. MessagePack hub protocol (the
  payload is a ``bin``), over the WebSocket after negotiate, as real clients connect
  (``broker.signalr.*``), and again over the broker's raw TCP port, the document's hub protocol
  on a plain stream (``broker.signalr.tcp.*``).

Sizes: N = 20,000 per protocol (``quick``: 500). Every client wait is bounded by the client's
timeout (:data:`CLIENT_TIMEOUT`), each protocol's whole run by :data:`RUN_TIMEOUT`, and the
broker process is stopped (killed if it does not exit) whatever happens.
"""
from __future__ import annotations

import asyncio
import json
import math
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Awaitable, Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_blipmq_decode import result  # noqa: E402

SIZE = 100
#: Messages per protocol: full run / quick.
SIZES = {False: 20_000, True: 500}
#: Messages handed to the client at once (one confirm / one gather per batch).
BATCH = 50
#: At most this many messages published and not yet received (see the module docstring).
#: Under this saturating load a message waits behind about AHEAD others, so the latency is
#: about AHEAD / throughput (Little's law) wherever the publisher outruns delivery: 100 ... 1,000
#: changed the msgs/s by a few percent (BlipMQ ~10 %) and the latency in proportion.
AHEAD = 200
#: Bound of every single wait of a reference client (request, receive).
CLIENT_TIMEOUT = 10.0
#: Bound of one protocol's whole run (connect, publish and receive everything, close).
RUN_TIMEOUT = {False: 90.0, True: 30.0}
#: Seconds a broker process gets to print its address.
START_TIMEOUT = 20.0
#: The runs: figure name (``broker.<name>.*``) -> the broker's protocol.
PROTOCOLS = {"blipmq": "blipmq", "vibemq": "vibemq", "micromessage2": "micromessage2",
             "signalr": "signalr", "signalr.tcp": "signalr"}
#: Broker options given to ``wirecheck serve`` (``--option KEY=VALUE``, JSON values).
#: VibeMQ: no rate limit, and the real server's ack timeout and retry delays instead of the
#: suite's (see the module docstring).
SERVE_OPTIONS: dict[str, dict] = {"vibemq": {"max_messages_per_second": None, "ack_timeout": 30.0,
                                             "retry_base_delay": 2.0, "retry_max_delay": 120.0}}

BLIP_TOPIC = "bench/topic"
VIBE_QUEUE = "bench-queue"
MM2_TOPIC = "topic/bench"       # "topic/" makes it a topic (micromessage2 state.py)
MM2_WINDOW = 100
SIGNALR_METHOD = "Deliver"

_FILL = (b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") * 4
_HEAD = 30                      # b"%08d %020d " : sequence number, send stamp


# -- messages and what was received ---------------------------------------------------------

class Run:
    """One protocol's run: stamps what is published, checks and times what is received, and
    paces the publisher (:meth:`drive`). ``size``: bytes of each message."""

    def __init__(self, n: int, size: int = SIZE) -> None:
        if size < _HEAD + 1:
            raise ValueError(f"messages of {size} bytes cannot hold the header")
        self.n, self.size = n, size
        self.sent = [0] * n                     # send stamp of each sequence number
        self.latency = [0] * n                  # ns
        self.seen = bytearray(n)
        self.count = 0
        self.first_ns = 0
        self.last_ns = 0
        self.error: Optional[BaseException] = None
        self.done = asyncio.Event()
        self._room = asyncio.Event()

    @property
    def finished(self) -> bool:
        return self.done.is_set()

    def _body(self, seq: int, stamp: int) -> bytes:
        fill = self.size - _HEAD
        start = seq % 62
        return b"%08d %020d " % (seq, stamp) + _FILL[start:start + fill].ljust(fill, b".")

    def payload(self, seq: int) -> bytes:
        """The message ``seq``, stamped now (call it right before handing it to the client)."""
        stamp = time.perf_counter_ns()
        if not self.first_ns:
            self.first_ns = stamp
        self.sent[seq] = stamp
        return self._body(seq, stamp)

    def text(self, seq: int) -> str:
        return self.payload(seq).decode("ascii")

    def received(self, data) -> None:
        """A delivery's payload (bytes or str). Never raises (it may run in a client's callback,
        which would swallow it): the first problem is kept in ``error`` and ends the run."""
        now = time.perf_counter_ns()
        if self.finished:
            return
        try:
            raw = data.encode("ascii") if isinstance(data, str) else bytes(data)
            try:
                seq, stamp = int(raw[:8]), int(raw[9:29])
            except ValueError:
                raise AssertionError(f"a delivery that was not published: {raw[:200]!r}") from None
            if not 0 <= seq < self.n or self.sent[seq] != stamp or raw != self._body(seq, stamp):
                raise AssertionError(f"a delivery that was not published: {raw[:200]!r}")
            if self.seen[seq]:
                raise AssertionError(f"message {seq} delivered twice")
        except (AssertionError, UnicodeError, TypeError) as exc:
            self.fail(exc)
            return
        self.seen[seq] = 1
        self.latency[seq] = now - stamp
        self.count += 1
        self._room.set()
        if self.count == self.n:
            self.last_ns = now
            self.done.set()

    def fail(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = exc
        self.done.set()
        self._room.set()

    async def _delivery(self, published: int) -> None:
        """Wait for the next delivery; a lost message must not look like a slow broker, so
        :data:`CLIENT_TIMEOUT` without one is a failure."""
        self._room.clear()
        try:
            await asyncio.wait_for(self._room.wait(), CLIENT_TIMEOUT)
        except asyncio.TimeoutError:
            raise AssertionError(f"{self.count} of {published} published messages received, "
                                 f"then none for {CLIENT_TIMEOUT:g} s") from None

    async def drive(self, publish: Callable[[range], Awaitable[None]],
                    consume: Optional[Awaitable[None]] = None) -> None:
        """Publish every message in batches (``publish(range of sequence numbers)``), at most
        :data:`AHEAD` ahead of delivery, while ``consume`` (if any) receives; until all N are
        received. Raises the first failure of either side or of the checks."""
        async def publisher() -> None:
            for start in range(0, self.n, BATCH):
                while start + BATCH - self.count > AHEAD and not self.finished:
                    await self._delivery(start)
                if self.finished:
                    break
                await publish(range(start, min(self.n, start + BATCH)))
            while not self.finished:
                await self._delivery(self.n)

        tasks = [asyncio.ensure_future(publisher())]
        if consume is not None:
            tasks.append(asyncio.ensure_future(consume))
        try:
            pending = set(tasks)
            while pending:
                finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in finished:
                    exc = task.exception()
                    if isinstance(exc, asyncio.TimeoutError):     # a client's own wait
                        raise AssertionError(f"{self.count} of {self.n} messages received when "
                                             f"a client wait timed out") from exc
                    if exc is not None:
                        raise exc
                if self.error is not None:
                    break       # a bad delivery: the consumer may be waiting for more
            # Otherwise both sides end by themselves: the publisher once its last batch is
            # acknowledged, so every acknowledgement is checked too.
        finally:
            for task in tasks:
                task.cancel()
            # Collect what the other side ended with (its failure, or the cancellation), so
            # that no task is left with an exception nobody retrieved.
            await asyncio.gather(*tasks, return_exceptions=True)
        if self.error is not None:
            raise self.error
        if self.count != self.n:
            raise AssertionError(f"received {self.count} of {self.n} messages")

    def figures(self, protocol: str) -> list[dict]:
        seconds = (self.last_ns - self.first_ns) / 1e9
        lat = sorted(self.latency)
        out = [result(f"broker.{protocol}.msgs", self.n / seconds, "msgs/s")]
        quantiles = [("p50", 0.50), ("p99", 0.99)] + ([("p999", 0.999)] if self.n >= 1000 else [])
        for name, q in quantiles:
            # nearest rank: the smallest latency with at least q of the messages at or below it
            value = lat[max(0, math.ceil(q * self.n) - 1)] / 1e6
            out.append(result(f"broker.{protocol}.latency.{name}", value, "ms"))
        return out


# -- the workloads ----------------------------------------------------------------------------

async def _close_all(*clients) -> None:
    for client in clients:
        if client is not None:
            try:
                await asyncio.wait_for(client.close(), 5.0)
            except Exception:           # closing after a failure: the failure is what matters
                pass


async def bench_blipmq(addr: dict, run: Run) -> None:
    from wirecheck.reference_impl.blipmq.client import BlipClient

    sub = pub = None
    try:
        sub = await BlipClient.connect(addr["host"], addr["port"], timeout=CLIENT_TIMEOUT)
        pub = await BlipClient.connect(addr["host"], addr["port"], timeout=CLIENT_TIMEOUT)
        sid = await sub.subscribe(BLIP_TOPIC, qos=1)

        async def publish(seqs: range) -> None:
            last = seqs[-1]
            for seq in seqs:
                await pub.publish(BLIP_TOPIC, run.payload(seq), qos=1, confirm=seq == last)

        async def consume() -> None:
            async for msg in sub.consume(sid):          # ACKs each QoS1 delivery
                if msg.topic != BLIP_TOPIC or msg.qos != 1:
                    raise AssertionError(f"delivery on {msg.topic!r} with QoS {msg.qos}")
                run.received(msg.message)
                if run.finished:
                    return

        await run.drive(publish, consume())
        await sub.ping()          # the ACKs written after the last delivery are processed
        errors = pub.errors + sub.errors
        if errors:
            raise AssertionError(f"NACKs: {errors[:3]}")
    finally:
        await _close_all(pub, sub)


async def bench_vibemq(addr: dict, run: Run) -> None:
    from wirecheck.reference_impl.vibemq.client import VibeClient

    sub = pub = None
    try:
        sub = await VibeClient.connect(addr["host"], addr["port"], timeout=CLIENT_TIMEOUT)
        pub = await VibeClient.connect(addr["host"], addr["port"], timeout=CLIENT_TIMEOUT)
        await sub.subscribe(VIBE_QUEUE)

        async def publish_one(seq: int) -> None:
            await pub.publish(VIBE_QUEUE, run.text(seq))

        async def publish(seqs: range) -> None:
            await asyncio.gather(*(publish_one(seq) for seq in seqs))

        async def consume() -> None:
            while not run.finished:
                msg = await sub.next_delivery()
                run.received(msg.payload)
                await sub.ack(msg)

        await run.drive(publish, consume())
        await sub.ping()          # the Acks written after the last delivery are processed
        if pub.errors or sub.errors or sub.dropped:
            raise AssertionError(f"errors {(pub.errors + sub.errors)[:3]}, {sub.dropped} dropped")
    finally:
        await _close_all(pub, sub)


async def bench_micromessage2(addr: dict, run: Run) -> None:
    from wirecheck.reference_impl.micromessage2.client import MM2Client

    extensions = ["pubsub", f"batch-ack:max-count={MM2_WINDOW}"]
    sub = pub = None
    try:
        sub = await MM2Client.connect(addr["host"], addr["port"], required=extensions,
                                      timeout=CLIENT_TIMEOUT)
        pub = await MM2Client.connect(addr["host"], addr["port"], required=extensions,
                                      timeout=CLIENT_TIMEOUT)
        await sub.subscribe(MM2_TOPIC)
        # The SUBSCRIBE command gets no answer (micromessage2.md defines none for commands),
        # and a topic message nobody subscribes to is dropped: probe until one arrives, so
        # that the subscription exists before the first counted message.
        probed = asyncio.Event()

        async def probe() -> None:
            while not probed.is_set():
                await pub.send(MM2_TOPIC, b"probe")
                await asyncio.sleep(0.01)

        async def consume() -> None:
            while not run.finished:
                msg = await sub.next_message()
                if msg.destination != MM2_TOPIC:
                    raise AssertionError(f"delivery to {msg.destination!r}")
                if msg.payload == b"probe":
                    probed.set()
                    continue
                run.received(msg.payload)

        async def publish(seqs: range) -> None:
            for seq in seqs:
                await pub.send(MM2_TOPIC, run.payload(seq))

        consumer = asyncio.ensure_future(consume())
        try:
            await asyncio.wait_for(asyncio.gather(probe(), probed.wait()), CLIENT_TIMEOUT)
        except BaseException:
            consumer.cancel()
            raise
        await run.drive(publish, consumer)
        if pub.errors or sub.errors:
            raise AssertionError(f"ERROR frames: {(pub.errors + sub.errors)[:3]}")
    finally:
        await _close_all(pub, sub)


async def bench_signalr(addr: dict, run: Run, transport: str = "websocket") -> None:
    """``transport``: ``websocket`` (negotiate, then a WebSocket) or ``tcp`` (raw port)."""
    from wirecheck.reference_impl.signalr.client import HubClient
    from wirecheck.reference_impl.signalr.constants import MESSAGEPACK

    raw = f"tcp://{addr['host']}:{addr['raw_port']}"
    address = addr["url"] if transport == "websocket" else raw
    client = None
    try:
        client = await HubClient.connect(address, MESSAGEPACK, timeout=CLIENT_TIMEOUT)
        client.on(SIGNALR_METHOD, run.received)

        async def publish_one(seq: int) -> None:
            answer = await client.invoke("CallMe", SIGNALR_METHOD, run.payload(seq))
            if answer is not True:           # CallMe completes with true (hub.py)
                raise AssertionError(f"CallMe completed with {answer!r}")

        async def publish(seqs: range) -> None:
            await asyncio.gather(*(publish_one(seq) for seq in seqs))

        await run.drive(publish)             # deliveries arrive through the handler
        if client.unexpected:
            raise AssertionError(f"unexpected messages: {client.unexpected[:3]}")
    finally:
        await _close_all(client)


async def bench_signalr_tcp(addr: dict, run: Run) -> None:
    await bench_signalr(addr, run, "tcp")


WORKLOADS = {"blipmq": bench_blipmq, "vibemq": bench_vibemq,
             "micromessage2": bench_micromessage2, "signalr": bench_signalr,
             "signalr.tcp": bench_signalr_tcp}
#: Bytes of each message as the protocol carries it (VibeMQ: a JSON string, 2 quotes).
PAYLOAD_SIZE = {"vibemq": SIZE - 2}


# -- the broker process -----------------------------------------------------------------------

class BrokerProcess:
    """``wirecheck serve --protocol P --port 0`` (with its :data:`SERVE_OPTIONS`) as a child
    process. Its output is read by a thread for as long as it runs, so a chatty
    broker never blocks on a full pipe; the address is taken from what it prints."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self.argv = [sys.executable, "-m", "wirecheck", "serve", "--protocol", protocol,
                     "--port", "0"]
        for key, value in SERVE_OPTIONS.get(protocol, {}).items():
            self.argv += ["--option", f"{key}={json.dumps(value)}"]
        self.proc: Optional[subprocess.Popen] = None
        self.reader: Optional[threading.Thread] = None
        self.lines: queue.Queue = queue.Queue()
        self.output: list[str] = []

    def _read(self) -> None:
        with self.proc.stdout:                  # closed here, at its end, not under the reader
            for line in self.proc.stdout:
                self.lines.put(line)
        self.lines.put(None)

    def start(self) -> dict:
        """Start it; its address: ``host``, ``port`` (SignalR: ``url`` of the hub too)."""
        self.proc = subprocess.Popen(self.argv, cwd=ROOT, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True,
                                       name=f"bench-broker-{self.protocol}")
        self.reader.start()
        deadline = time.monotonic() + START_TIMEOUT
        addr: dict = {}
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            self.output.append(line)
            m = re.search(r"listening on ([\d.]+):(\d+)", line)
            if m:
                addr.update(host=m.group(1), port=int(m.group(2)))
            m = re.search(r"serving (http://\S+) and raw TCP on [\d.]+:(\d+)", line)
            if m:
                addr.update(url=m.group(1), raw_port=int(m.group(2)))
            if addr and (self.protocol != "signalr" or "url" in addr):
                return addr
        self.stop()
        raise RuntimeError(f"{self.protocol} broker did not start: "
                           f"{''.join(self.output)[-2000:]!r}")

    def stop(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if self.reader is not None:
            self.reader.join(5)                 # the pipe ends with the process


# -- running --------------------------------------------------------------------------------------

def bench(name: str, n: int, quick: bool = False) -> list[dict]:
    """One run of :data:`PROTOCOLS`: start its broker, run the workload (bounded by
    :data:`RUN_TIMEOUT`), stop the broker; its figures."""
    protocol = PROTOCOLS[name]
    broker = BrokerProcess(protocol)
    try:
        addr = broker.start()

        async def main() -> Run:
            run = Run(n, PAYLOAD_SIZE.get(protocol, SIZE))
            await asyncio.wait_for(WORKLOADS[name](addr, run), RUN_TIMEOUT[quick])
            return run

        run = asyncio.run(main())
    finally:
        broker.stop()
    return run.figures(name)


def run(quick: bool = False) -> list[dict]:
    out: list[dict] = []
    for name in PROTOCOLS:
        out += bench(name, SIZES[quick], quick)
    return out


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(json.dumps(row))
