"""The VibeMQ reference broker over loopback: real timers (short ack timeout, backoff, TTL),
delivery modes across connections, limits, raw-socket error paths, ThreadedServer."""
import asyncio
import socket
import struct

import pytest

from wirecheck.reference_impl.core.server import ThreadedServer
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq.broker import make_broker
from wirecheck.reference_impl.vibemq.client import VibeClient, VibeError
from wirecheck.reference_impl.vibemq.constants import CommandType as T

FAST = dict(ack_timeout=0.2, retry_base_delay=0.1, retry_max_delay=0.2)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


async def with_broker(fn, **options):
    broker = make_broker(**options)
    await broker.start()
    try:
        return await fn(broker)
    finally:
        await broker.stop()


async def client(broker, **kw):
    return await VibeClient.connect("127.0.0.1", broker.port, timeout=5, **kw)


async def drain(c, wait=0.3):
    out = []
    while True:
        try:
            out.append(await c.next_delivery(timeout=wait))
        except asyncio.TimeoutError:
            return out


def test_redelivery_then_dead_letter_on_real_timers():
    async def scenario(broker):
        c = await client(broker)
        await c.create_queue("r", dead_letter=True, max_retries=3)
        await c.subscribe("r")
        await c.publish("r", {"x": 1}, message_id="m1")
        attempts = [(await c.next_delivery(2)).header("deliveryAttempts") for _ in range(3)]
        assert attempts == ["1", "2", "3"]
        dlq = await client(broker)
        await dlq.subscribe("r.dlq")
        dead = await dlq.next_delivery(3)
        assert dead.id == "m1" and dead.header("x-dead-letter-reason") == "MaxRetriesExceeded"
        await dlq.ack(dead)
        await c.close()
        await dlq.close()
    run(with_broker(scenario, **FAST))


def test_ack_stops_redelivery():
    async def scenario(broker):
        c = await client(broker)
        await c.subscribe("a")
        await c.publish("a", 1, message_id="once")
        await c.ack(await c.next_delivery(2))
        assert await drain(c, 0.5) == []
        await c.close()
    run(with_broker(scenario, **FAST))


def test_ttl_expires_into_dlq_on_a_timer():
    async def scenario(broker):
        c = await client(broker)
        await c.create_queue("t", ttl_ms=100, dead_letter=True)
        await c.publish("t", 1)
        await asyncio.sleep(0.3)
        assert (await c.queue_info("t"))["messageCount"] == 0
        assert (await c.queue_info("t.dlq"))["messageCount"] == 1
        await c.close()
    run(with_broker(scenario))


def test_modes_across_connections():
    async def scenario(broker):
        admin = await client(broker)
        subs = [await client(broker) for _ in range(3)]
        await admin.create_queue("rr", mode="RoundRobin")
        await admin.create_queue("fa", mode="FanOutWithAck")
        await admin.create_queue("fn", mode="FanOutWithoutAck")
        for s in subs:
            for q in ("rr", "fa", "fn"):
                await s.subscribe(q)
        for i in range(6):
            await admin.publish("rr", i)
        await admin.publish("fa", "all")
        await admin.publish("fn", "all")
        got = [await drain(s) for s in subs]
        for mine in got:
            assert sorted(m.payload for m in mine if m.queue == "rr") in ([0, 3], [1, 4], [2, 5])
            assert [m.payload for m in mine if m.queue != "rr"] == ["all", "all"]
        assert len(broker.state.inflight) == 6 + 3          # rr + one fan-out copy each
        for s, mine in zip(subs, got):
            for m in mine:
                if m.queue != "fn":
                    await s.ack(m)
            await s.ping()
        assert broker.state.inflight == {}
        for c in (admin, *subs):
            await c.close()
    run(with_broker(scenario))             # the default 30 s ack timeout: no redelivery here


def test_rate_limit_over_the_wire():
    async def scenario(broker):
        c = await client(broker)
        await asyncio.sleep(1.05)                            # the Connect leaves the window
        results = await asyncio.gather(*(c.ping() for _ in range(5)), return_exceptions=True)
        codes = [r.code if isinstance(r, VibeError) else "ok" for r in results]
        assert codes.count("ok") == 3 and codes.count("RATE_LIMITED") == 2
        await c.close()
    run(with_broker(scenario, max_messages_per_second=3))


def test_connection_limit_over_the_wire():
    async def scenario(broker):
        first = await client(broker)
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
        data = await asyncio.wait_for(reader.read(4096), 5)
        [err] = codec.Decoder().feed(data)
        assert err.error_code == "CONNECTION_LIMIT"
        assert await asyncio.wait_for(reader.read(1), 5) == b""     # then closed
        writer.close()
        await first.close()
        for _ in range(50):                                  # the slot is given back
            if not broker.state.consumers:
                break
            await asyncio.sleep(0.02)
        again = await client(broker)
        await again.close()
    run(with_broker(scenario, max_connections=1))


def raw_exchange(port, data, expect_close=True):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        buf = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return codec.Decoder().feed(buf)


def test_raw_socket_paths_with_threaded_server():
    connect = codec.encode(codec.Message(T.CONNECT, "c", headers={"authPassword": "vibemq"}))
    with ThreadedServer(make_broker()) as srv:
        port = srv.address[1]
        out = raw_exchange(port, connect + codec.encode(codec.Message(T.PING, "p"))
                           + codec.encode(codec.Message(T.DISCONNECT, "d")))
        assert [(f.type, f.id) for f in out] == [(T.CONNECT_ACK, "c"), (T.PONG, "p")]
        out = raw_exchange(port, connect + b"\x00\x00\x00\x05\x09abcde")     # unknown flag
        assert [f.type for f in out] == [T.CONNECT_ACK]
        body = b"\x01\x0a\x00\x00"                                          # empty id
        out = raw_exchange(port, connect + struct.pack(">IB", len(body), 0) + body)
        assert [(f.type, f.error_code) for f in out] == [(T.CONNECT_ACK, None), (T.ERROR, "INVALID_MESSAGE")]


def test_custom_credentials():
    async def scenario(broker):
        with pytest.raises(VibeError):
            await client(broker)                              # the default password is off
        c = await client(broker, password="pw1")
        await c.close()
        c = await client(broker, username="bob", password="pw2")
        await c.close()
    run(with_broker(scenario, api_keys=("pw1", "bob:pw2")))
