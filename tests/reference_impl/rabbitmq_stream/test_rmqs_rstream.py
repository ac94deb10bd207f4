"""The real client ``rstream`` (PyPI) against the reference broker: create a stream, publish
with confirms, consume from first / offset / next, store and query an offset, delete."""
from __future__ import annotations

import asyncio

import pytest

rstream = pytest.importorskip("rstream")

from wirecheck.reference_impl.core.server import ThreadedServer  # noqa: E402
from wirecheck.reference_impl.rabbitmq_stream import make_broker  # noqa: E402

N = 300
STEP = 10          # seconds: every wait below is bounded


@pytest.fixture
def broker(tmp_path):
    with ThreadedServer(make_broker(data_dir=str(tmp_path / "data"))) as server:
        yield server.server


def _producer(broker):
    return rstream.Producer(broker.host, broker.port, username="guest", password="guest")


def _consumer(broker):
    return rstream.Consumer(broker.host, broker.port, username="guest", password="guest")


async def _consume(broker, stream: str, spec, want: int, after=None) -> list[tuple[int, bytes]]:
    """Subscribe with ``spec`` and collect ``want`` (offset, body) pairs; ``after`` is awaited
    once the subscription is in place (to publish into a NEXT subscription)."""
    got: list[tuple[int, bytes]] = []
    done = asyncio.Event()

    async def on_message(msg, ctx):
        got.append((ctx.offset, bytes(msg)))
        if len(got) >= want:
            done.set()

    async with _consumer(broker) as consumer:
        await consumer.subscribe(stream, on_message, offset_specification=spec)
        if after is not None:
            await after()
        await asyncio.wait_for(done.wait(), STEP)
    return got


def test_rstream_publish_confirm_consume_offsets_delete(broker):
    async def scenario():
        stream = "rstream-interop"
        bodies = [f"message {i}".encode() for i in range(N)]
        async with _producer(broker) as producer:
            await producer.create_stream(stream)
            confirmed: list[int] = []

            async def on_confirm(status):
                assert status.is_confirmed, status
                confirmed.append(status.message_id)

            for i in range(0, N, 100):
                await producer.send_batch(stream, bodies[i:i + 100], on_publish_confirm=on_confirm)
            for _ in range(STEP * 20):
                if len(confirmed) == N:
                    break
                await asyncio.sleep(0.05)
            assert sorted(confirmed) == sorted(set(confirmed)) and len(confirmed) == N

            first = await _consume(broker, stream, rstream.ConsumerOffsetSpecification(
                rstream.OffsetType.FIRST, None), N)
            assert [b for _, b in first[:N]] == bodies
            assert [o for o, _ in first[:N]] == list(range(N))

            mid = await _consume(broker, stream, rstream.ConsumerOffsetSpecification(
                rstream.OffsetType.OFFSET, 250), N - 250)
            assert [b for _, b in mid][:N - 250] == bodies[250:]

            extra = [b"after-subscribe-1", b"after-subscribe-2"]

            async def publish_more():
                for body in extra:
                    await producer.send_wait(stream, body)

            nxt = await _consume(broker, stream, rstream.ConsumerOffsetSpecification(
                rstream.OffsetType.NEXT, None), 2, after=publish_more)
            assert [b for _, b in nxt] == extra

            async with _consumer(broker) as consumer:
                await consumer.store_offset(stream, "reader-1", 123)
                assert await consumer.query_offset(stream, "reader-1") == 123
                with pytest.raises(rstream.OffsetNotFound):
                    await consumer.query_offset(stream, "never-stored")

            await producer.delete_stream(stream)
            assert not await producer.stream_exists(stream)

    asyncio.run(asyncio.wait_for(scenario(), 60))
