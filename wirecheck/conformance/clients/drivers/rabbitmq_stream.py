"""RabbitMQ Stream's standard workload with the reference client (``wirecheck check-client
--protocol rabbitmq-stream``): the handshake (guest/guest), Create of a stream, a publisher,
``count`` messages (``msg-0`` ...) published and every one confirmed, a subscription from the
first offset with credit given as chunks come, until every message was delivered (each printed),
then Close."""
from __future__ import annotations

import sys

from wirecheck.conformance.clients.drivers import TIMEOUT, LibraryError, message_id, run

STREAM = "wirecheck-workload"


async def workload(host: str, port: int, count: int, emit) -> None:
    from wirecheck.reference_impl.rabbitmq_stream.client import StreamClient
    from wirecheck.reference_impl.rabbitmq_stream.constants import Code
    client = await StreamClient.connect(host, port, timeout=TIMEOUT, auto_credit=True)
    try:
        def ok(answer, what: str) -> None:
            if answer.code != Code.OK:
                raise LibraryError(f"{what} refused: code {answer.code}")

        ok(await client.create(STREAM), "Create")
        ok(await client.declare_publisher(1, STREAM), "DeclarePublisher")
        client.publish(1, [(i + 1, f"msg-{i}".encode()) for i in range(count)])
        confirms = await client.wait_confirms(1, range(1, count + 1))
        refused = {pid: code for pid, code in confirms.items() if code != Code.OK}
        if refused:
            raise LibraryError(f"publishing ids refused: {refused}")
        ok(await client.subscribe(7, STREAM, credit=1), "Subscribe")
        wanted = {f"msg-{i}" for i in range(count)}
        while wanted:
            deliver = await client.next_delivery(7)
            for body in deliver.chunk.messages():
                name = message_id(body)
                emit(f"received {name}")
                wanted.discard(name)
        ok(await client.close_connection(), "Close")
    finally:
        await client.close()


if __name__ == "__main__":
    sys.exit(run(workload))
