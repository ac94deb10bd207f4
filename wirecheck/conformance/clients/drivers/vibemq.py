"""VibeMQ's standard workload with the reference client (``wirecheck check-client --protocol
vibemq``): Connect (the default password, gzip offered), Subscribe to a queue, ``count`` Publishes (payload
``{"text": "msg-0"}`` ...), each answered, then every Deliver taken (printed) and Acked until
each message came, then Disconnect."""
from __future__ import annotations

import sys

from wirecheck.conformance.clients.drivers import TIMEOUT, LibraryError, run

QUEUE = "wirecheck-workload"


async def workload(host: str, port: int, count: int, emit) -> None:
    from wirecheck.reference_impl.vibemq.client import VibeClient, VibeError
    client = await VibeClient.connect(host, port, timeout=TIMEOUT, compression=("gzip",))
    try:
        await client.subscribe(QUEUE)
        for i in range(count):
            await client.publish(QUEUE, {"text": f"msg-{i}"})
        wanted = {f"msg-{i}" for i in range(count)}
        while wanted:
            delivery = await client.next_delivery()
            payload = delivery.payload
            name = payload.get("text") if isinstance(payload, dict) else None
            emit(f"received {name if isinstance(name, str) and name.isprintable() and ' ' not in name else '(other)'}")
            await client.ack(delivery)
            wanted.discard(name)
        await client.disconnect()
    except VibeError as exc:
        raise LibraryError(f"Error {exc.code}: {exc.message}") from None
    finally:
        await client.close()


if __name__ == "__main__":
    sys.exit(run(workload))
