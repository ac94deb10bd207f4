"""The reference client against the reference broker: pipelining, POLL backoff, NACKs."""
import asyncio

import pytest

from wirecheck.reference_impl.blipmq.broker import make_broker
from wirecheck.reference_impl.blipmq.client import BlipClient, NackError


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


async def with_broker(fn, **options):
    broker = make_broker(**options)
    await broker.start()
    try:
        return await fn(broker)
    finally:
        await broker.stop()


def test_pipelined_publishes_and_polls():
    async def scenario(broker):
        async with await BlipClient.connect("127.0.0.1", broker.port) as c:
            sub = await c.subscribe("p", 1)
            await asyncio.gather(*(c.publish("p", b"%d" % i, qos=1) for i in range(50)))
            await c.ping()
            msgs = await asyncio.gather(*(c.poll(sub) for _ in range(51)))
            assert [m.message for m in msgs[:50]] == [b"%d" % i for i in range(50)]
            assert msgs[50] is None
            assert [m.tag for m in msgs[:50]] == list(range(1, 51))
            await asyncio.gather(*(c.ack(sub, m.tag) for m in msgs[:50]))
            await c.ping()
            assert c.errors == []
    run(with_broker(scenario))


def test_nacks_surface_as_errors():
    async def scenario(broker):
        async with await BlipClient.connect("127.0.0.1", broker.port) as c:
            with pytest.raises(NackError) as err:
                await c.subscribe("", 0)
            assert err.value.code == 400 and err.value.message == "empty topic"
            with pytest.raises(NackError) as err:
                await c.publish("t", b"x", qos=5, confirm=True)
            assert err.value.message == "invalid QoS value"
            with pytest.raises(NackError) as err:
                await c.poll(0)
            assert err.value.code == 400
            await c.ack(1, 99)
            await c.ping()
            assert [e.code for e in c.errors] == [404]
    run(with_broker(scenario))


def test_wrong_key_is_refused():
    async def scenario(broker):
        with pytest.raises(NackError) as err:
            await BlipClient.connect("127.0.0.1", broker.port, api_key="wrong")
        assert err.value.code == 401
    run(with_broker(scenario, api_keys=("right",)))


def test_consume_backs_off_then_receives():
    async def scenario(broker):
        async with await BlipClient.connect("127.0.0.1", broker.port) as consumer, \
                await BlipClient.connect("127.0.0.1", broker.port) as producer:
            sub = await consumer.subscribe("c", 1)

            async def produce():
                await asyncio.sleep(0.05)       # the consumer polls an empty queue first
                for i in range(3):
                    await producer.publish("c", b"%d" % i, qos=1, confirm=True)

            task = asyncio.create_task(produce())
            got = []
            async for msg in consumer.consume(sub, min_backoff=0.001, max_backoff=0.02):
                got.append(msg.message)
                if len(got) == 3:
                    break
            await task
            assert got == [b"0", b"1", b"2"]
            assert await consumer.poll(sub) is None   # auto-acked: no redelivery
    run(with_broker(scenario))
