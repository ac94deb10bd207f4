"""A ``wirecheck check-client`` driver for rstream (PyPI), RabbitMQ Stream's Python client: the
protocol's standard workload (docs/start/clients.md, "The client suite").

    wirecheck check-client --protocol rabbitmq-stream \
        --client-command "python examples/check-client/rstream_driver.py {host} {port} {count}"

Create a stream, publish COUNT messages ``msg-0`` ... waiting for each confirm, consume them from
the first offset, printing ``received ID`` for each message rstream hands over; an error rstream
raises is printed as ``error ...`` and the exit status is 1.
"""
import asyncio
import sys

from rstream import (AMQPMessage, Consumer, ConsumerOffsetSpecification, MessageContext, OffsetType, Producer,
                     amqp_decoder)

STREAM = "wirecheck-workload"
#: Seconds the workload may take (the kit's --budget is the outer bound).
WAIT = 20


async def workload(host: str, port: int, count: int) -> None:
    credentials = {"username": "guest", "password": "guest"}
    async with Producer(host, port=port, **credentials) as producer:
        await producer.create_stream(STREAM, exists_ok=True)
        for i in range(count):
            await producer.send_wait(STREAM, AMQPMessage(body=f"msg-{i}".encode()))
    wanted = {f"msg-{i}" for i in range(count)}
    done = asyncio.Event()

    async def on_message(message: AMQPMessage, context: MessageContext) -> None:
        body = message.body
        body = b"".join(body) if isinstance(body, list) else bytes(body)
        name = body.decode("ascii", "replace")
        print(f"received {name}", flush=True)
        wanted.discard(name)
        if not wanted:
            done.set()

    consumer = Consumer(host, port=port, **credentials)
    await consumer.start()
    try:
        await consumer.subscribe(STREAM, on_message, decoder=amqp_decoder,
                                 offset_specification=ConsumerOffsetSpecification(OffsetType.FIRST, None))
        await asyncio.wait_for(done.wait(), WAIT)
    finally:
        await consumer.close()


def main() -> int:
    host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        asyncio.run(workload(host, port, count))
    except Exception as exc:          # what rstream raised to its application
        print(f"error {type(exc).__name__}: {exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
