"""A BlipMQ client driver with a planted defect, for tests/conformance/clients/test_check_client.py:
``python tests/support/planted_client.py MODE HOST PORT COUNT``. MODE:

- ``good``: the reference driver's workload;
- ``crash-on-nack``: an uncaught exception when a request is refused (a Python traceback);
- ``segfault``: dies of SIGSEGV once connected;
- ``hang-on-close``: waits for ever once the server ends the connection;
- ``ignore-nacks``: publishes without waiting for the outcome (a refusal goes unseen), consumes
  until the broker has nothing more, reports success;
- ``lose-one``: hands every message over but ``msg-1``; ``duplicate-one``: ``msg-0`` twice;
- ``lose-one-and-wait``: loses ``msg-1`` as ``lose-one`` does, then waits for it for ever (a
  library whose lost message leaves a call pending: the hang is the loss's);
- ``exit-silently``: exits 1 without naming an error.
"""
from __future__ import annotations

import asyncio
import os
import signal
import sys

from wirecheck.conformance.clients.drivers import LibraryError, message_id, run
from wirecheck.conformance.clients.drivers.blipmq import TOPIC, workload as good


async def planted(mode: str, host: str, port: int, count: int, emit) -> None:
    from wirecheck.reference_impl.blipmq.client import BlipClient, NackError
    from wirecheck.reference_impl.core.client import ConnectionClosed
    if mode == "good":
        return await good(host, port, count, emit)
    client = await BlipClient.connect(host, port, timeout=5.0)
    if mode == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "exit-silently":
        os._exit(1)
    sub = await client.subscribe(TOPIC, qos=1)
    try:
        for i in range(count):
            if mode == "ignore-nacks":
                await client.publish(TOPIC, f"msg-{i}".encode(), qos=1)
            else:
                await client.publish(TOPIC, f"msg-{i}".encode(), qos=1, confirm=True)
    except NackError as exc:
        if mode == "crash-on-nack":
            raise RuntimeError(f"unexpected {exc}") from None      # uncaught: the driver dies
        raise LibraryError(str(exc)) from None
    except ConnectionClosed:
        if mode == "hang-on-close":
            await asyncio.Event().wait()
        raise
    seen, empty = set(), 0
    while len(seen) < count and empty < 20:
        try:
            msg = await client.poll(sub)
        except ConnectionClosed:
            if mode == "hang-on-close":
                await asyncio.Event().wait()
            raise
        if msg is None:
            empty += 1
            await asyncio.sleep(0.05)
            continue
        await client.ack(sub, msg.tag)
        name = message_id(msg.message)
        seen.add(name)
        if mode in ("lose-one", "lose-one-and-wait") and name == "msg-1":
            continue
        emit(f"received {name}")
        if mode == "duplicate-one" and name == "msg-0":
            emit(f"received {name}")
    if mode == "lose-one-and-wait":
        await asyncio.Event().wait()
    if len(seen) < count and mode != "ignore-nacks":
        raise LibraryError(f"only {len(seen)} of {count} messages came")
    await client.close()


if __name__ == "__main__":
    mode = sys.argv[1]
    sys.exit(run(lambda h, p, c, emit: planted(mode, h, p, c, emit), sys.argv[2:]))
