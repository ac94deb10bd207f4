"""Capture scenarios with the kit's reference clients (tools/record_captures.py records them).

One scenario, ``client``, per protocol: a whole ordinary session of
``wirecheck/reference_impl/<P>/client.py`` against the reference broker through the recording relay. Each
covers every request the client can send and the broker's normal answers to it (no error
paths: those are in the ``suite`` capture), with a small, an empty and a large (about 300 KB)
message, and a publisher and a subscriber connection where the protocol fans out.

The captures are replayed against a fresh broker (``wirecheck replay``), which walks the
recorded events in capture order and only waits for the frames it compares. So every frame a
server sends here follows from what the clients sent before it in that order: a connection
waits for the confirmation of its subscription (or a barrier: a PING, a request that is
answered in order) before another connection publishes; where two connections do race, the
answers are the same either way (a RabbitMQ Stream Credit and a publish); and a server's
timers (redelivery, delayed acks, a stream's interval) never decide which frame comes next
on a connection. Names are fixed (``capture-...``): a replay starts a fresh broker, and
``wirecheck replay`` renames what must be new.

Every wait is bounded (``STEP``), and a whole session too (``SESSION``).
"""
from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

from tools.record_captures import Scenario

#: Longest wait for one answer, and for one whole session (seconds).
STEP = 5.0
SESSION = 10.0
#: The large message: about 300 KB, a fixed pattern (the captures are compared byte for byte).
LARGE = bytes(range(256)) * 1200
LARGE_TEXT = "".join(chr(0x21 + i % 94) for i in range(300 * 1024))


def _check(condition: bool, what: str) -> None:
    """A scenario step went otherwise than an ordinary session goes."""
    if not condition:
        raise RuntimeError(f"unexpected answer: {what}")


def _sync(session: Callable[[str, int, str | None], Awaitable[None]]):
    """The scenario's ``run``: one asyncio session, bounded by ``SESSION``."""
    def run(host: str, port: int, url: str | None) -> None:
        asyncio.run(asyncio.wait_for(session(host, port, url), SESSION))
    return run


async def _close_all(*clients) -> None:
    for client in clients:
        if client is not None:
            await client.close()


# -- BlipMQ ------------------------------------------------------------------------------------

async def _blipmq(host: str, port: int, url: str | None) -> None:
    """HELLO/AUTH, PING, SUBSCRIBE (QoS 1 and 0), POLL (empty, then deliveries), ACK, PUBLISH
    (QoS 1 confirmed, QoS 0 fire-and-forget), on a subscriber and a publisher connection.

    BlipMQ delivers only on POLL, so the fan-out is: the publisher's PUBLISHes are confirmed
    (PING barrier) before the subscriber polls. Each delivery is acked before the next POLL,
    as an unacked QoS1 delivery is queued again after 0.1 s (a timer)."""
    from wirecheck.reference_impl.blipmq.client import BlipClient
    sub = pub = None
    try:
        sub = await BlipClient.connect(host, port, timeout=STEP)
        await sub.ping()
        orders = await sub.subscribe("capture-orders", qos=1)
        ticks = await sub.subscribe("capture-ticks", qos=0)
        _check(await sub.poll(orders) is None, "a POLL of a new subscription delivered something")

        pub = await BlipClient.connect(host, port, timeout=STEP)
        own = await pub.subscribe("capture-orders", qos=1)      # a second subscription of the topic
        bodies = [b"order 1", b"", LARGE]
        for body in bodies:
            await pub.publish("capture-orders", body, qos=1, confirm=True)
        await pub.publish("capture-ticks", b"tick", qos=0)
        await pub.ping()                                        # the QoS 0 publish was processed

        for n, body in enumerate(bodies, 1):
            msg = await sub.poll(orders)
            _check(msg is not None and (msg.tag, msg.qos, msg.message) == (n, 1, body),
                   f"delivery {n} of capture-orders: {msg!r:.200}")
            await sub.ack(orders, msg.tag)
        await sub.ping()                                        # the acks were processed
        tick = await sub.poll(ticks)
        _check(tick is not None and (tick.qos, tick.message) == (0, b"tick"), f"QoS 0 delivery {tick!r}")
        _check(await sub.poll(orders) is None, "an acked message came again")

        mine = await pub.poll(own)
        _check(mine is not None and mine.message == b"order 1", f"the publisher's own copy {mine!r:.200}")
        await pub.ack(own, mine.tag, confirm=True)
        _check(not sub.errors and not pub.errors, f"NACKs: {sub.errors + pub.errors}")
    finally:
        await _close_all(pub, sub)


# -- VibeMQ ------------------------------------------------------------------------------------

async def _vibemq(host: str, port: int, url: str | None) -> None:
    """Connect (one side offering gzip), Ping, CreateQueue (round robin with options, fan-out),
    ListQueues, QueueInfo, Subscribe, Publish (small with a priority, empty, large and so
    compressed), Deliver, Ack, Unsubscribe, DeleteQueue, Disconnect, on an admin/publisher and a
    subscriber connection; both subscribe to the fan-out queue."""
    from wirecheck.reference_impl.vibemq.client import VibeClient
    admin = sub = None
    try:
        admin = await VibeClient.connect(host, port, compression=("gzip",), timeout=STEP)
        _check(admin.negotiated is not None, "gzip was not agreed")
        await admin.ping()
        await admin.create_queue("capture-orders", mode="RoundRobin", max_size=1000, ttl_ms=600_000,
                                 max_retries=2)
        await admin.create_queue("capture-news", mode="FanOutWithAck")
        queues = await admin.list_queues()
        _check({"capture-orders", "capture-news"} <= set(queues), f"ListQueues: {queues}")

        sub = await VibeClient.connect(host, port, timeout=STEP)
        await sub.subscribe("capture-orders")
        await sub.subscribe("capture-news")
        await admin.subscribe("capture-news")

        bodies = [{"order": 1, "item": "capture"}, "", LARGE_TEXT]
        for n, body in enumerate(bodies):
            ack = await admin.publish("capture-orders", body, priority="High" if n == 0 else None)
            got = await sub.next_delivery(STEP)
            _check((got.id, got.queue, got.payload) == (ack.id, "capture-orders", body),
                   f"delivery of capture-orders message {n}: {got.payload!r:.200}")
            await sub.ack(got)
        await admin.publish("capture-news", {"headline": "capture"})
        for client in (sub, admin):
            got = await client.next_delivery(STEP)
            _check(got.payload == {"headline": "capture"}, f"fan-out delivery {got.payload!r:.200}")
            await client.ack(got)
        await sub.ping()                                        # the acks were processed
        await admin.ping()

        info = await admin.queue_info("capture-orders")
        _check(info is not None and info.get("subscriberCount") == 1, f"QueueInfo: {info}")
        await sub.unsubscribe("capture-orders")
        await sub.unsubscribe("capture-news")
        await admin.unsubscribe("capture-news")
        await admin.delete_queue("capture-orders")
        await admin.delete_queue("capture-news")
        queues = await admin.list_queues()
        _check(not {"capture-orders", "capture-news"} & set(queues), f"ListQueues after delete: {queues}")
        _check(not admin.errors and not sub.errors, f"Errors: {admin.errors + sub.errors}")
        await sub.disconnect()
        sub = None
        await admin.disconnect()
        admin = None
    finally:
        await _close_all(sub, admin)


# -- Micromessage2 -----------------------------------------------------------------------------

def _ack_received(client) -> None:
    """Ack what ``client`` received and has not acked yet (it acks by itself only when its
    window is full)."""
    if client.inbox.pending:
        client.ack(client.inbox.take_ack())


async def _acked(client) -> None:
    """Until the server acked every SEND of ``client`` (its acks come at once when the window
    is full: the sends here always fill it)."""
    async def wait() -> None:
        while client.outbox.inflight:
            await asyncio.sleep(0.005)
    await asyncio.wait_for(wait(), STEP)


async def _micromessage2(host: str, port: int, url: str | None) -> None:
    """Handshakes with ack, batch-ack, pubsub, dotnet and json; SUBSCRIBE commands (a topic,
    and a queue with a filter); SENDs (small with properties and a .NET type, empty, large),
    MESSAGE deliveries, acks both ways; three connections: a topic subscriber, a publisher
    and a queue consumer.

    SUBSCRIBE has no answer and the broker acks on a timer unless the window is full, so: the
    subscriber proves its subscription by two SENDs to its own topic (window 2: acked at once,
    and delivered back), the publisher's window is 1 (``ack``), and the queue consumer's
    messages wait in the queue until it subscribes."""
    from wirecheck.reference_impl.micromessage2.client import MM2Client
    topic, queue = "topic/capture-news", "capture-orders"
    sub = pub = consumer = None
    try:
        sub = await MM2Client.connect(host, port, identity="capture-subscriber", timeout=STEP,
                                      required=["pubsub", "batch-ack:max-count=2"], optional=["dotnet"])
        await sub.subscribe(topic)
        for marker in (b"ready 1", b"ready 2"):
            await sub.send(topic, marker)
        for marker in (b"ready 1", b"ready 2"):
            got = await sub.next_message(STEP)
            _check(got.payload == marker, f"the subscriber's own marker: {got.payload!r}")
        await _acked(sub)

        pub = await MM2Client.connect(host, port, identity="capture-publisher", timeout=STEP,
                                      required=["ack"], optional=["dotnet"])
        sent = [(b"order 1", {"price": "N12"}, "Capture.Order"), (b"", {}, None), (LARGE, {}, None)]
        for payload, props, dotnet in sent:
            await pub.send(topic, payload, props, dotnet_type=dotnet)
            await _acked(pub)
        for payload, props, _ in sent:
            got = await sub.next_message(STEP)
            _check((got.payload, dict(got.properties)) == (payload, props),
                   f"topic delivery {got.payload!r:.100}")
        _check(sub.dotnet_type == "Capture.Order", f"the .NET type frame: {sub.dotnet_type!r}")
        _ack_received(sub)
        for price in ("N12", "N5"):             # to the queue, before its consumer comes
            await pub.send(queue, f'{{"price": {price[1:]}}}'.encode(), {"price": price})
            await _acked(pub)

        consumer = await MM2Client.connect(host, port, identity="capture-consumer", timeout=STEP,
                                           required=["pubsub", "json"])
        await consumer.subscribe(queue, filter="price>=N10")
        got = await consumer.next_message(STEP)
        _check((got.payload, dict(got.properties)) == (b'{"price": 12}', {"price": "N12"}),
               f"the queue's filtered delivery {got.payload!r}")
        await consumer.send(topic, b'{"from": "consumer"}')
        got = await sub.next_message(STEP)
        _check(got.payload == b'{"from": "consumer"}', f"topic delivery from the consumer {got.payload!r}")
        _ack_received(sub)
        await asyncio.wait_for(sub.writer.drain(), STEP)
        _check(not (sub.errors or pub.errors or consumer.errors),
               f"ERROR frames: {sub.errors + pub.errors + consumer.errors}")
    finally:
        await _close_all(consumer, pub, sub)


# -- RabbitMQ Stream ---------------------------------------------------------------------------

async def _rabbitmq_stream(host: str, port: int, url: str | None) -> None:
    """PeerProperties, SaslHandshake, SaslAuthenticate, Tune, Open, ExchangeCommandVersions;
    Create, Metadata, StreamStats; DeclarePublisher, QueryPublisherSequence, Publish (v1:
    small + empty in one frame, large; v2 with a filter value), PublishConfirm; Subscribe,
    Deliver, Credit, StoreOffset, QueryOffset, Unsubscribe; a single active consumer
    (ConsumerUpdate and its answer); CreateSuperStream, Partitions, Route, DeleteSuperStream;
    Heartbeat; DeletePublisher, Delete (MetadataUpdate to the subscriber), Close. A publisher
    and a consumer connection."""
    from wirecheck.reference_impl.rabbitmq_stream import codec
    from wirecheck.reference_impl.rabbitmq_stream.client import StreamClient
    from wirecheck.reference_impl.rabbitmq_stream.constants import Code, Key, OffsetType
    stream = "capture-orders"

    def ok(response, what: str) -> None:
        _check(response.code == Code.OK, f"{what}: {codec.code_name(response.code)}")

    pub = con = None
    try:
        pub = await StreamClient.connect(host, port, timeout=STEP,
                                         properties={"connection_name": "capture-publisher"})
        ok(await pub.exchange_command_versions([(Key.PUBLISH, 1, 2), (Key.DELIVER, 1, 2)]),
           "ExchangeCommandVersions")
        ok(await pub.create(stream, {"max-length-bytes": "100000000",
                                     "queue-leader-locator": "least-leaders"}), "Create")
        meta = await pub.metadata(stream)
        _check([m.code for m in meta.streams] == [Code.OK], f"Metadata: {meta}")
        ok(await pub.declare_publisher(1, stream, "capture-writer"), "DeclarePublisher")
        seq = await pub.query_publisher_sequence("capture-writer", stream)
        ok(seq, "QueryPublisherSequence")
        pub.publish(1, [(1, b"order 1"), (2, b"")])
        _check(await pub.wait_confirms(1, [1, 2], STEP) == {1: Code.OK, 2: Code.OK}, "confirms of 1, 2")

        con = await StreamClient.connect(host, port, timeout=STEP,
                                         properties={"connection_name": "capture-consumer"})
        ok(await con.exchange_command_versions([(Key.DELIVER, 1, 2)]), "ExchangeCommandVersions")
        ok(await con.subscribe(1, stream, OffsetType.FIRST, credit=1), "Subscribe")
        got = await con.next_delivery(1, STEP)
        _check(got.chunk.messages() == [b"order 1", b""], f"first chunk {got.chunk.messages()!r:.200}")
        # credit for the next chunk; it is delivered whichever of the credit and the publish
        # reaches the broker first
        con.credit(1, 1)
        pub.publish(1, [(3, LARGE)])
        _check(await pub.wait_confirms(1, [3], STEP) == {3: Code.OK}, "confirm of 3")
        got = await con.next_delivery(1, STEP)
        _check(got.chunk.messages() == [LARGE], "the large message's chunk")
        con.credit(1, 1)
        pub.publish(1, [codec.PublishedMessage(4, b"order 4", "capture-filter")], version=2)
        _check(await pub.wait_confirms(1, [4], STEP) == {4: Code.OK}, "confirm of 4")
        got = await con.next_delivery(1, STEP)
        _check(got.chunk.messages() == [b"order 4"], f"v2 chunk {got.chunk.messages()!r:.200}")

        con.store_offset("capture-reader", stream, 3)
        stored = await con.query_offset("capture-reader", stream)
        _check(stored.code == Code.OK and stored.offset == 3, f"QueryOffset: {stored}")
        ok(await con.unsubscribe(1), "Unsubscribe")
        stats = await pub.stream_stats(stream)
        ok(stats, "StreamStats")
        seq = await pub.query_publisher_sequence("capture-writer", stream)
        _check(seq.code == Code.OK and seq.sequence == 4, f"QueryPublisherSequence: {seq}")

        # single active consumer: the broker asks which offset to start from
        ok(await con.subscribe(2, stream, OffsetType.FIRST, credit=10,
                               properties={"single-active-consumer": "true", "name": "capture-group"}),
           "Subscribe (single active consumer)")
        update = await asyncio.wait_for(con.consumer_updates.get(), STEP)
        con.send(codec.ConsumerUpdateResponse(update.correlation_id, Code.OK, OffsetType.OFFSET, 3))
        got = await con.next_delivery(2, STEP)
        _check(got.chunk.messages() == [b"order 4"],
               f"single active consumer from offset 3: {got.chunk.messages()!r:.200}")
        ok(await con.unsubscribe(2), "Unsubscribe (single active consumer)")

        ok(await pub.create_super_stream("capture-invoices", ["capture-invoices-0", "capture-invoices-1"],
                                         ["0", "1"]), "CreateSuperStream")
        parts = await pub.partitions("capture-invoices")
        _check(parts.code == Code.OK and list(parts.streams) == ["capture-invoices-0", "capture-invoices-1"],
               f"Partitions: {parts}")
        route = await pub.route("1", "capture-invoices")
        _check(route.code == Code.OK and list(route.streams) == ["capture-invoices-1"], f"Route: {route}")
        ok(await pub.delete_super_stream("capture-invoices"), "DeleteSuperStream")

        pub.send(codec.Heartbeat())
        con.send(codec.Heartbeat())
        ok(await con.subscribe(3, stream, OffsetType.NEXT, credit=1), "Subscribe (next)")
        ok(await pub.delete_publisher(1), "DeletePublisher")
        ok(await pub.delete(stream), "Delete")
        update = await asyncio.wait_for(con.metadata_updates.get(), STEP)
        _check((update.code, update.stream) == (Code.STREAM_NOT_AVAILABLE, stream),
               f"MetadataUpdate: {update}")
        for client in (con, pub):
            ok(await client.close_connection(), "Close")
    finally:
        await _close_all(con, pub)


# -- SignalR -----------------------------------------------------------------------------------

async def _signalr_calls(client, batch_size: int) -> None:
    """Every kind of call the test hub has, on one connection; one at a time, so that a
    server stream's items never interleave with another call's answer."""
    from wirecheck.reference_impl.signalr.client import HubError
    _check(await client.invoke("Echo", "hello capture") == "hello capture", "Echo")
    _check(await client.invoke("Echo", "") == "", "Echo of an empty string")
    # the largest a client may send: the hub takes messages up to 32 KB (ASP.NET Core's default)
    _check(await client.invoke("Echo", LARGE_TEXT[:30_000]) == LARGE_TEXT[:30_000], "Echo of 30 KB")
    _check(await client.invoke("Add", 2, 3) == 5, "Add")
    _check(await client.invoke("Nothing") is None, "Nothing")
    try:
        await client.invoke("Fail", "capture failure")
        _check(False, "Fail completed without an error")
    except HubError as exc:
        _check("capture failure" in str(exc), f"Fail: {exc}")
    batch = await client.invoke("Batched", batch_size)
    _check(batch == list(range(batch_size)), f"Batched({batch_size})")
    stream = await client.stream("Counter", 3, 10)
    _check(await stream.collect() == [0, 1, 2], "Counter stream")
    failing = await client.stream("StreamFailure", 2)
    items = []
    try:
        async for item in failing:
            items.append(item)
        _check(False, "StreamFailure ended without an error")
    except HubError:
        _check(items == [0, 1], f"StreamFailure items {items}")
    # one item at once, the next after a minute: cancelled in between, nothing racing it
    endless = await client.stream("Endless", 60_000)
    _check(await endless.__anext__() == 0, "Endless' first item")
    await endless.cancel()
    _check(await client.invoke("Sum", streams=[[1, 2, 3, 4]]) == 10, "Sum of a client stream")
    await client.send("Remember", "capture")
    _check(await client.invoke("Recall") == "capture", "Recall after Remember")
    notified = asyncio.get_running_loop().create_future()
    client.on("capture.notify", lambda value: notified.done() or notified.set_result(value))
    client.on("capture.ask", lambda value: value + 1)
    _check(await client.invoke("CallMe", "capture.notify", 7) is True, "CallMe")
    _check(await asyncio.wait_for(notified, STEP) == 7, "the server's Invocation of capture.notify")
    _check(await client.invoke("AskMe", "capture.ask", 41) == 42, "AskMe (client result)")
    await client.ping()


async def _signalr(host: str, port: int, url: str | None) -> None:
    """Negotiate (versions 1 and 0), the WebSocket upgrade, the handshake (JSON and
    MessagePack), Invocations with results, void, errors and a large (about 300 KB JSON)
    result; a non-blocking Invocation; StreamInvocation with items, an error end and a
    CancelInvocation; a client-to-server stream; the server invoking client methods with and
    without a result; Ping; Close. Two connections open at once, one per hub protocol (the
    test hub has no broadcast, so they do not interact)."""
    from wirecheck.reference_impl.signalr.client import HubClient
    from wirecheck.reference_impl.signalr.constants import JSON, MESSAGEPACK
    text = binary = None
    try:
        text = await HubClient.connect(url, JSON, timeout=STEP)
        binary = await HubClient.connect(url, MESSAGEPACK, negotiate_version=0, timeout=STEP)
        await _signalr_calls(text, 45_000)          # a JSON result of about 300 KB
        await _signalr_calls(binary, 1_000)
        for client in (binary, text):
            _check(not client.unexpected, f"unexpected messages: {client.unexpected[:3]}")
            await client.close()
            await client.wait_closed(STEP)
    finally:
        for client in (binary, text):
            if client is not None:
                await client.abort()


# -- the table ---------------------------------------------------------------------------------

def _scenario(protocol: str, package: str, what: str, session) -> Scenario:
    client = f"wirecheck {protocol} reference client (wirecheck/reference_impl/{package}/client.py)"
    return Scenario("client", what, client, _sync(session))


SCENARIOS: dict[str, list[Scenario]] = {
    "blipmq": [_scenario(
        "blipmq", "blipmq",
        "reference client session: HELLO/AUTH, PING, SUBSCRIBE QoS 0/1, PUBLISH (small, empty, ~300 KB; "
        "QoS 1 confirmed, QoS 0), POLL (empty and deliveries), ACK; a publisher and a subscriber",
        _blipmq)],
    "vibemq": [_scenario(
        "vibemq", "vibemq",
        "reference client session: Connect (gzip agreed), Ping, CreateQueue, ListQueues, QueueInfo, "
        "Subscribe, Publish (small, empty, ~300 KB compressed), Deliver, Ack, fan-out to two "
        "connections, Unsubscribe, DeleteQueue, Disconnect",
        _vibemq)],
    "micromessage2": [_scenario(
        "micromessage2", "micromessage2",
        "reference client session: handshakes (ack, batch-ack, pubsub, dotnet, json), subscribe "
        "(topic; queue with a filter), SEND (small, empty, ~300 KB), MESSAGE, acks both ways, "
        ".NET type frames; a subscriber, a publisher and a queue consumer",
        _micromessage2)],
    "rabbitmq-stream": [_scenario(
        "rabbitmq-stream", "rabbitmq_stream",
        "reference client session: handshake, ExchangeCommandVersions, Create, Metadata, publishers, "
        "Publish v1/v2 (small, empty, ~300 KB), confirms, Subscribe, Deliver, Credit, offsets, "
        "single active consumer, super streams, StreamStats, Heartbeat, Delete with MetadataUpdate, "
        "Close; a publisher and a consumer",
        _rabbitmq_stream)],
    "signalr": [_scenario(
        "signalr", "signalr",
        "reference client session over negotiate + WebSocket, JSON and MessagePack at once: "
        "results, void, errors, a ~300 KB result, non-blocking calls, server streams (items, "
        "error, cancel), a client stream, client methods with and without a result, Ping, Close",
        _signalr)],
}
