"""Micromessage2's standard workload with the reference client (``wirecheck check-client
--protocol micromessage2``): the handshake (``pubsub`` required, ``batch-ack`` offered), a
subscription (probe messages until one comes back: commands are unanswered), ``count`` SENDs
(``msg-0`` ...), then every MESSAGE taken (printed) until each came."""
from __future__ import annotations

import asyncio
import sys
import time

from wirecheck.conformance.clients.drivers import TIMEOUT, LibraryError, message_id, run

TOPIC = "wirecheck/workload"
PROBE = b"probe"


async def workload(host: str, port: int, count: int, emit) -> None:
    from wirecheck.reference_impl.micromessage2.client import HandshakeRefused, MM2Client
    try:
        client = await MM2Client.connect(host, port, required=["pubsub"], optional=["batch-ack:max-count=8"],
                                         timeout=TIMEOUT)
    except HandshakeRefused as exc:
        raise LibraryError(f"handshake refused: {exc}") from None
    try:
        await client.subscribe(TOPIC)
        deadline = time.monotonic() + TIMEOUT
        while True:                       # SUBSCRIBE has no answer: wait until it delivers
            await client.send(TOPIC, PROBE)
            try:
                if (await client.next_message(0.2)).payload == PROBE:
                    break
            except asyncio.TimeoutError:
                if time.monotonic() > deadline:
                    raise LibraryError("the subscription never delivered") from None
        for i in range(count):
            await client.send(TOPIC, f"msg-{i}".encode())
        wanted = {f"msg-{i}" for i in range(count)}
        while wanted:
            msg = await client.next_message()
            if msg.payload == PROBE:
                continue
            name = message_id(msg.payload)
            emit(f"received {name}")
            wanted.discard(name)
    finally:
        await client.close()


if __name__ == "__main__":
    sys.exit(run(workload))
