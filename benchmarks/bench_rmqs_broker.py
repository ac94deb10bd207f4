"""RabbitMQ Stream: the reference broker against a real RabbitMQ, both driven by the same
rstream workload in one run (issue goal: >= 0.8x RabbitMQ's msgs/s).

Workload: one producer publishes N messages of 100 bytes in batches of 500 with confirms and
waits for every confirm (publish+confirm msgs/s); then one consumer reads all N from FIRST
(consume msgs/s). The reference broker runs as ``wirecheck serve`` in its own process with a
data directory and fsync ``always``; RabbitMQ 3.10 runs from Debian's package (``make
real-peers``); when it is absent its figures are left out and the result says so.
"""
from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_blipmq_decode import result  # noqa: E402

SIZE = 100
BATCH = 500


async def _publish(port: int, stream: str, n: int) -> float:
    import rstream
    body = b"x" * SIZE
    confirmed = 0
    done = asyncio.Event()

    async def on_confirm(status):
        nonlocal confirmed
        confirmed += 1
        if confirmed >= n:
            done.set()

    async with rstream.Producer("127.0.0.1", port, username="guest", password="guest") as producer:
        await producer.create_stream(stream, exists_ok=True)
        start = time.perf_counter()
        for i in range(0, n, BATCH):
            await producer.send_batch(stream, [body] * min(BATCH, n - i), on_publish_confirm=on_confirm)
        await asyncio.wait_for(done.wait(), 300)
        return time.perf_counter() - start


async def _consume(port: int, stream: str, n: int) -> float:
    import rstream
    got = 0
    done = asyncio.Event()

    async def on_message(msg, ctx):
        nonlocal got
        got += 1
        if got >= n:
            done.set()

    async with rstream.Consumer("127.0.0.1", port, username="guest", password="guest") as consumer:
        start = time.perf_counter()
        await consumer.subscribe(stream, on_message, offset_specification=rstream.ConsumerOffsetSpecification(
            rstream.OffsetType.FIRST, None), initial_credit=10)
        await asyncio.wait_for(done.wait(), 300)
        return time.perf_counter() - start


def _workload(port: int, n: int, label: str) -> dict[str, float]:
    stream = f"bench-{label}-{os.getpid()}-{time.monotonic_ns()}"
    pub = asyncio.run(_publish(port, stream, n))
    con = asyncio.run(_consume(port, stream, n))
    return {"publish": n / pub, "consume": n / con}


def run(quick: bool = False) -> list[dict]:
    try:
        import rstream  # noqa: F401
    except ImportError:
        return [result("rmqs.broker.skipped (rstream not installed)", 0, "")]
    from tests.support.blipmq_proc import BrokerProcess
    from tools.rabbitmq_real import RealRabbitMQ, available

    n = 5_000 if quick else 100_000
    out: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess("--data-dir", os.path.join(tmp, "data"), "--fsync", "always",
                               protocol="rabbitmq-stream").start()
        try:
            ours = _workload(broker.port, n, "ref")
        finally:
            broker.terminate()
    theirs = None
    if not quick and available():
        with RealRabbitMQ() as rabbit:
            theirs = _workload(rabbit.stream_port, n, "real")
    for kind in ("publish", "consume"):
        name = f"rmqs.broker.{kind}{'+confirm' if kind == 'publish' else ''}.{n}x{SIZE}B"
        if theirs is None:
            out.append(result(name, ours[kind], "msgs/s"))
        else:
            out.append(result(name, ours[kind], "msgs/s", theirs[kind], ours[kind] / theirs[kind],
                              ">= 0.8"))
    return out


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
