"""A ``wirecheck check-client`` driver for rbfly (PyPI, 0.10.0), a RabbitMQ Stream client for
Python asyncio: the protocol's standard workload (docs/start/clients.md, "The client suite").

    wirecheck check-client --protocol rabbitmq-stream \
        --client-command "python examples/check-client/rbfly_driver.py {host} {port} {count}"

Connect (``rabbitmq-stream://guest:guest@HOST:PORT/``), create a stream, publish COUNT messages
``msg-0`` ... with a publisher whose ``send`` waits for each confirm, consume them from the first
offset, printing ``received ID`` for each message rbfly hands over, then unsubscribe and close
the connection. An error rbfly raises is printed as ``error ...`` and the exit status is 1.

rbfly's ways, which this driver leaves as they are (they are what is being judged):

- The connection is made lazily, by the first call that needs it; a connection lost during
  the handshake is opened again, every 30 s, without end, and the application is not told.
- A connection lost later fails the request in flight with ``ConnectionError`` (Create,
  DeclarePublisher, ...), which reaches the application, whereas a publisher's ``send`` and a
  subscription's iterator reconnect by themselves (declaring the publisher and subscription
  again, resending what was unconfirmed). The driver does not fight this.
- A Close from the server makes rbfly drop the TCP connection (no CloseResponse); what follows
  is a lost connection, as above.
- A refused request (a response code other than OK) is raised as ``ProtocolError``, except a
  Create of a stream that exists (code 5), which is ignored, and a DeclarePublisher or
  Subscribe refused with code 2 or 6 (stream does not exist / not available), which rbfly
  retries every second without end.
- A PublishError frame is only logged: the ``send`` it answers never returns.
- Messages are AMQP 1.0 messages; a ``bytes`` body is sent as a data section and handed back
  as ``bytes``.

Every wait is bounded: the whole workload, the closing included, has :data:`WAIT` seconds. When
rbfly has not returned by then, the driver prints ``hung ...`` naming what never came (what an
application would wait on for ever: the kit's verdict is HANG) and exits 1 at once, without
waiting for rbfly's own cleanup (which may wait on the server, or sleep before reconnecting).
"""
import asyncio
import contextlib
import os
import sys

from rbfly.streams import Offset, streams_client

STREAM = "wirecheck-workload"
#: Seconds the workload may take (the kit's --budget is the outer bound).
WAIT = 20


class Progress:
    """What the workload waits for from rbfly at the moment (named in a timeout)."""

    def __init__(self) -> None:
        self.waiting = "the connection"


def body_text(body) -> str:
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body).decode("ascii", "replace")
    return str(body)


async def workload(host: str, port: int, count: int, progress: Progress) -> None:
    client = streams_client(f"rabbitmq-stream://guest:guest@{host}:{port}/")
    progress.waiting = "the connection, or the answer to Create"
    await client.create_stream(STREAM)

    progress.waiting = "the publisher (DeclarePublisher)"
    async with client.publisher(STREAM) as publisher:
        for i in range(count):
            progress.waiting = f"the confirm of msg-{i}"
            await publisher.send(f"msg-{i}".encode())
        progress.waiting = "the publisher's deletion (DeletePublisher)"

    wanted = {f"msg-{i}" for i in range(count)}
    progress.waiting = "the subscription, or a delivery of " + ", ".join(sorted(wanted)[:10])
    if wanted:
        messages = client.subscribe(STREAM, offset=Offset.FIRST)
        # closing the iterator unsubscribes (and waits for the answer)
        async with contextlib.aclosing(messages):
            async for body in messages:
                name = body_text(body)
                print(f"received {name}", flush=True)
                wanted.discard(name)
                if not wanted:
                    progress.waiting = "the answer to Unsubscribe"
                    break
                progress.waiting = "a delivery of " + ", ".join(sorted(wanted)[:10])

    progress.waiting = "the answer to Close"
    await client.disconnect()


async def run(host: str, port: int, count: int) -> int:
    progress = Progress()
    task = asyncio.ensure_future(workload(host, port, count, progress))
    done, _ = await asyncio.wait({task}, timeout=WAIT)
    if not done:
        print(f"hung {progress.waiting} never came within {WAIT} s (rbfly raised nothing)", flush=True)
        sys.stderr.flush()
        os._exit(1)                 # rbfly's pending tasks are not waited for
    exc = task.exception()
    if exc is not None:            # what rbfly raised to its application
        print(f"error {type(exc).__name__}: {exc}", flush=True)
        return 1
    return 0


def main() -> int:
    host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    return asyncio.run(run(host, port, count))


if __name__ == "__main__":
    sys.exit(main())
