"""wirecheck.reference_impl.core.client: the read loop and failure propagation shared by the clients."""
import asyncio

import pytest

from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.core.client import ConnectionClosed, FramedClient


class Echo(FramedClient):
    """Resolves the waiter keyed by each frame's correlation id."""

    def on_frame(self, frame):
        self.resolve(frame.correlation_id, frame)


async def serve(reply: bytes, close: bool):
    async def handle(reader, writer):
        await reader.read(100)
        writer.write(reply)
        await writer.drain()
        if close:
            writer.close()
        else:
            await asyncio.sleep(5)
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def client_against(reply: bytes, close: bool, timeout: float = 5.0):
    server, port = await serve(reply, close)
    client = Echo(*await FramedClient.open_stream("127.0.0.1", port, 5), codec.Decoder(), timeout)
    return server, client


def test_request_is_answered_by_correlation_key():
    async def go():
        server, client = await client_against(codec.encode(codec.Pong(7)), close=False)
        async with server, client:
            assert await client.request(7, codec.encode(codec.Ping(7))) == codec.Pong(7)
    asyncio.run(go())


@pytest.mark.parametrize("reply", [b"", b"\xff\xff\xff\xff"], ids=["eof", "undecodable"])
def test_waiters_fail_when_the_connection_ends(reply):
    async def go():
        server, client = await client_against(reply, close=True)
        async with server, client:
            with pytest.raises(ConnectionClosed):
                await client.request(1, codec.encode(codec.Ping(1)))
            with pytest.raises(ConnectionClosed):
                client.write(b"more")
    asyncio.run(go())


def test_request_times_out_on_a_silent_peer():
    async def go():
        server, client = await client_against(b"", close=False, timeout=0.2)
        async with server, client:
            with pytest.raises(asyncio.TimeoutError):
                await client.request(1, codec.encode(codec.Ping(1)))
    asyncio.run(go())
