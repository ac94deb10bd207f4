"""The reference client against the reference broker over loopback: every request, errors as
exceptions, compression both ways, deliveries and acks, both profiles."""
import asyncio

import pytest

from wirecheck.reference_impl.core.client import ConnectionClosed
from wirecheck.reference_impl.vibemq.broker import make_broker
from wirecheck.reference_impl.vibemq.client import VibeClient, VibeError
from wirecheck.reference_impl.vibemq.constants import Compression


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


async def with_broker(fn, **options):
    broker = make_broker(**options)
    await broker.start()
    try:
        return await fn(broker)
    finally:
        await broker.stop()


@pytest.mark.parametrize("profile", ["document", "vibemq-1.8"])
def test_every_request(profile):
    async def scenario(broker):
        async with await VibeClient.connect("127.0.0.1", broker.port, profile=profile, timeout=5) as c:
            assert (await c.ping()).type == 11
            await c.create_queue("jobs", mode="RoundRobin", max_size=100, ttl_ms=60_000, max_retries=2)
            assert "jobs" in await c.list_queues()
            await c.subscribe("jobs")
            ack = await c.publish("jobs", {"n": 1}, priority="High", message_id="job-1")
            assert ack.id == "job-1"
            d = await c.next_delivery(timeout=2)
            assert (d.id, d.queue, d.payload) == ("job-1", "jobs", {"n": 1})
            await c.ack(d)
            info = await c.queue_info("jobs")
            assert info["name"] == "jobs" and info["subscriberCount"] == 1 and info["maxSize"] == 100
            assert info["maxRetryAttempts"] == 2
            await c.ping()                                      # barrier: the ack was processed
            assert broker.state.inflight == {}
            await c.unsubscribe("jobs")
            await c.delete_queue("jobs")
            assert "jobs" not in await c.list_queues()
            assert c.errors == []
            await c.disconnect()
    run(with_broker(scenario, profile=profile))


def test_errors_raise():
    async def scenario(broker):
        with pytest.raises(VibeError) as err:
            await VibeClient.connect("127.0.0.1", broker.port, "wrong", timeout=5)
        assert err.value.code == "AUTH_FAILED"
        async with await VibeClient.connect("127.0.0.1", broker.port, timeout=5) as c:
            with pytest.raises(VibeError) as err:
                await c.queue_info("nope")
            assert err.value.code == "QUEUE_NOT_FOUND"
            await c.create_queue("dup")
            with pytest.raises(VibeError) as err:
                await c.create_queue("dup")
            assert err.value.code == "QUEUE_EXISTS"
            with pytest.raises(VibeError) as err:
                await c.publish("bad name!", 1)
            assert err.value.code == "INVALID_MESSAGE"
            await c.ping()
    run(with_broker(scenario))


def test_real_profile_errors_with_fresh_ids_still_correlate():
    async def scenario(broker):
        with pytest.raises(VibeError) as err:
            await VibeClient.connect("127.0.0.1", broker.port, None, profile="vibemq-1.8", timeout=5)
        assert err.value.code == "AUTH_REQUIRED"
        async with await VibeClient.connect("127.0.0.1", broker.port, username="u", profile="vibemq-1.8",
                                            timeout=5) as c:
            assert c.connect_ack.headers is None
            with pytest.raises(VibeError) as err:
                await c.publish("bad name!", 1)
            assert err.value.code == "INVALID_MESSAGE" and err.value.answer.id != "bad"
            assert (await c.queue_info("nope")) is None
    run(with_broker(scenario, profile="vibemq-1.8"))


@pytest.mark.parametrize("offer,agreed", [(("brotli", "gzip"), Compression.BROTLI),
                                          (("gzip",), Compression.GZIP), ((), None)])
def test_compression_both_ways(offer, agreed):
    async def scenario(broker):
        async with await VibeClient.connect("127.0.0.1", broker.port, compression=offer, timeout=5) as c:
            assert c.negotiated == agreed
            await c.subscribe("z")
            big = {"blob": "z" * 5000}
            await c.publish("z", big)
            await c.publish("z", {"s": 1})
            d1, d2 = await c.next_delivery(2), await c.next_delivery(2)
            assert d1.payload == big and d2.payload == {"s": 1}
            assert d1.compression == (agreed or Compression.NONE)
            assert d2.compression == Compression.NONE
    run(with_broker(scenario))


def test_callback_and_timeouts():
    async def scenario(broker):
        seen = []
        async with await VibeClient.connect("127.0.0.1", broker.port, timeout=5,
                                            on_deliver=seen.append) as c:
            with pytest.raises(asyncio.TimeoutError):
                await c.next_delivery(timeout=0.05)
            await c.subscribe("cb")
            await c.publish("cb", 1)
            await c.next_delivery(2)
            assert [m.payload for m in seen] == [1]
    run(with_broker(scenario))


def test_closed_connection_fails_waiters():
    async def scenario(broker):
        c = await VibeClient.connect("127.0.0.1", broker.port, timeout=5)
        await c.send_raw(b"\x00\x00\x00\x01\x00\x00")           # bad length: the broker drops us
        with pytest.raises(ConnectionClosed):
            await c.next_delivery(2)
        with pytest.raises(ConnectionClosed):
            await c.ping()
        await c.close()
    run(with_broker(scenario))


def test_message_ids_stay_unique_across_clients_made_one_after_another(monkeypatch):
    """"Message Fields": the id is a unique identifier. Each client's ids have a prefix of its
    own, even a client made where a freed one lived: its ``id()`` was the prefix, so the two
    numbered their messages alike (simulated here: every object of the module has one id)."""
    from wirecheck.reference_impl.vibemq import client as client_module
    monkeypatch.setattr(client_module, "id", lambda obj: 0xABCDEF, raising=False)

    async def scenario(broker) -> list:
        ids = []
        for _ in range(30):
            async with await VibeClient.connect("127.0.0.1", broker.port, timeout=5) as client:
                ids.append(client.new_id())
        return ids

    ids = run(with_broker(scenario))
    assert len(set(ids)) == len(ids), ids
