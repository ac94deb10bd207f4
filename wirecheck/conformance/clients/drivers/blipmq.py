"""BlipMQ's standard workload with the reference client (``wirecheck check-client --protocol
blipmq``): HELLO and AUTH, a QoS1 subscription, ``count`` QoS1 publishes (``msg-0`` ...), each
confirmed, then POLL until every one was delivered, each delivery printed and acked."""
from __future__ import annotations

import sys

from wirecheck.conformance.clients.drivers import TIMEOUT, LibraryError, message_id, run

TOPIC = "wirecheck/workload"


async def workload(host: str, port: int, count: int, emit) -> None:
    from wirecheck.reference_impl.blipmq.client import BlipClient, NackError
    client = await BlipClient.connect(host, port, timeout=TIMEOUT)
    try:
        sub = await client.subscribe(TOPIC, qos=1)
        for i in range(count):
            await client.publish(TOPIC, f"msg-{i}".encode(), qos=1, confirm=True)
        wanted = {f"msg-{i}" for i in range(count)}
        async for msg in client.consume(sub):
            name = message_id(msg.message)
            emit(f"received {name}")
            wanted.discard(name)
            if not wanted:
                break
    except NackError as exc:
        raise LibraryError(f"NACK {exc.code}: {exc.message}") from None
    finally:
        await client.close()


if __name__ == "__main__":
    sys.exit(run(workload))
