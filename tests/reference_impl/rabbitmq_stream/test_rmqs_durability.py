"""Durability of the RabbitMQ Stream reference broker, driven by the real client rstream:
publish with confirms into ``wirecheck serve --data-dir``, kill -9 the broker, restart it on
the same directory, and read every confirmed message back (issue acceptance: 100,000
100-byte messages; ``WIRECHECK_RMQS_DURABILITY_N`` changes the count)."""
from __future__ import annotations

import asyncio
import os

import pytest

rstream = pytest.importorskip("rstream")

from tests.support.blipmq_proc import BrokerProcess  # noqa: E402

N = int(os.environ.get("WIRECHECK_RMQS_DURABILITY_N", "100000"))
SIZE = 100
BATCH = 500
STREAM = "durable"


def _body(i: int) -> bytes:
    return f"{i:010d}".encode().ljust(SIZE, b".")


async def _publish(port: int, n: int) -> set[int]:
    """Publish ``n`` messages; returns the indexes whose confirm arrived."""
    confirmed: set[int] = set()
    async with rstream.Producer("127.0.0.1", port, username="guest", password="guest") as producer:
        await producer.create_stream(STREAM, exists_ok=True)

        async def on_confirm(status):
            if status.is_confirmed:
                confirmed.add(status.message_id)

        for start in range(0, n, BATCH):
            await producer.send_batch(STREAM, [_body(i) for i in range(start, min(n, start + BATCH))],
                                      on_publish_confirm=on_confirm)
        for _ in range(600):
            if len(confirmed) == n:
                break
            await asyncio.sleep(0.05)
    # publishing ids are 1-based and sequential per publisher: id k carries message k-1
    return {pid - 1 for pid in confirmed}


async def _read_all(port: int, want: int) -> list[bytes]:
    got: list[bytes] = []
    done = asyncio.Event()

    async def on_message(msg, ctx):
        got.append(bytes(msg))
        if len(got) >= want:
            done.set()

    async with rstream.Consumer("127.0.0.1", port, username="guest", password="guest") as consumer:
        await consumer.subscribe(STREAM, on_message, offset_specification=rstream.ConsumerOffsetSpecification(
            rstream.OffsetType.FIRST, None))
        try:
            await asyncio.wait_for(done.wait(), 120)
        except asyncio.TimeoutError:
            pass
    return got


def test_confirmed_messages_survive_kill_9(tmp_path):
    data = str(tmp_path / "data")
    broker = BrokerProcess("--data-dir", data, protocol="rabbitmq-stream").start()
    try:
        confirmed = asyncio.run(asyncio.wait_for(_publish(broker.port, N), 300))
        assert len(confirmed) == N, f"only {len(confirmed)} of {N} confirmed"
        before = asyncio.run(_read_all(broker.port, N))
        assert before == [_body(i) for i in range(N)]
    finally:
        broker.kill()                          # SIGKILL: no clean shutdown

    broker = BrokerProcess("--data-dir", data, protocol="rabbitmq-stream").start()
    try:
        after = asyncio.run(_read_all(broker.port, N))
    finally:
        broker.kill()
    assert len(after) == N, f"{N - len(after)} confirmed messages lost after kill -9"
    assert after == [_body(i) for i in range(N)]
