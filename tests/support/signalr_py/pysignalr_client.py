"""The real client pysignalr (PyPI) against a hub, driven by tests/reference_impl/signalr/test_signalr_real_clients.py.

    python pysignalr_client.py URL json|messagepack yes|no      (third argument: skipNegotiation)

Runs Echo, Add, a server stream (Counter), fire-and-forget (Remember, checked with Recall), an
error (Fail), server-to-client calls (CallMe; AskMe: a client result), a client stream (Sum),
then a barrier call (Echo) and a stop. Prints one line ``RESULT <json>``; every wait is bounded.

pysignalr quirks this driver works around (signalr-real-clients.md):
- ``SignalRClient`` has no skip-negotiation option; its transport has one
  (``_skip_negotiation``), and then hands the URL to ``websockets`` unchanged, so the URL must
  be ``ws://`` there (``http://`` is refused by websockets);
- it has no stop API: cancelling ``run()`` closes the WebSocket (status 1011), with no SignalR
  Close;
- it ignores a Completion for an id it does not know, so the driver records every Completion
  (wrapping the transport's callback) to show that none arrived for Sum;
- its client stream (``client_stream``) sends the Invocation without an invocationId, so the
  hub's result of Sum can never reach it: the driver records what arrives (nothing) and proves
  the connection still works with a barrier call.
"""
from __future__ import annotations

import asyncio
import json
import sys

from pysignalr.client import SignalRClient
from pysignalr.protocol.json import JSONProtocol
from pysignalr.protocol.messagepack import MessagepackProtocol

STEP = 10.0


async def main(url: str, protocol: str, skip: bool) -> dict:
    if skip:
        url = url.replace("http://", "ws://", 1).replace("https://", "wss://", 1)
    client = SignalRClient(url, protocol=MessagepackProtocol() if protocol == "messagepack"
                           else JSONProtocol(), retry_count=1)
    if skip:
        client._transport._skip_negotiation = True
    loop = asyncio.get_running_loop()
    opened = asyncio.Event()
    errors: list = []
    hello: asyncio.Future = loop.create_future()

    async def on_open() -> None:
        opened.set()

    async def on_error(message) -> None:
        errors.append(message.error)

    async def on_hello(arguments) -> None:
        if not hello.done():
            hello.set_result(arguments)

    async def on_double(arguments):
        return arguments[0] * 2

    # Every Completion that reaches the client, to show that none answers the id-less Sum.
    completions: list = []
    dispatch = client._transport._callback

    async def recording(message) -> None:
        if type(message).__name__ == "CompletionMessage":
            completions.append(message.invocation_id)
        await dispatch(message)

    client._transport._callback = recording
    client.on_open(on_open)
    client.on_error(on_error)
    client.on("Hello", on_hello)
    client.on("Double", on_double)
    runner = loop.create_task(client.run())

    async def call(method: str, *args):
        done: asyncio.Future = loop.create_future()

        async def on_completion(message) -> None:
            if not done.done():
                done.set_result(message)

        await client.send(method, list(args), on_completion)
        message = await asyncio.wait_for(done, STEP)
        return {"error": message.error} if message.error else message.result

    result: dict = {}
    try:
        await asyncio.wait_for(opened.wait(), STEP)
        result["echo"] = await call("Echo", "hello ✓")
        result["add"] = await call("Add", 2, 3)

        items: list = []
        ended: asyncio.Future = loop.create_future()

        async def on_next(item) -> None:
            items.append(item)

        async def on_complete(message) -> None:
            if not ended.done():
                ended.set_result(message.error)

        await client.stream("Counter", [5, 10], on_next, on_complete, on_error)
        await asyncio.wait_for(ended, STEP)
        result["counter"] = items

        await client.send("Remember", ["fire-and-forget"])          # no invocationId
        result["recall"] = await call("Recall")
        result["fail"] = await call("Fail", "boom")
        await call("CallMe", "Hello", 7)
        result["callme"] = await asyncio.wait_for(hello, STEP)
        result["askme"] = await call("AskMe", "Double", 21)

        before = len(completions)
        async with client.client_stream("Sum") as stream:
            for n in (1, 2, 3, 4):
                await stream.send(n)
        result["after_sum"] = await call("Echo", "still open")       # barrier
        # Completions between the Sum and the barrier's own (the last one): none is expected.
        result["sum_completions"] = completions[before:-1]
        result["errors"] = errors
    finally:
        runner.cancel()                                             # pysignalr's only "stop"
        try:
            await asyncio.wait_for(runner, STEP)
        except (asyncio.CancelledError, Exception):                 # noqa: BLE001 - cancelled run()
            pass
    return result


if __name__ == "__main__":
    out = asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] == "yes"))
    print("RESULT " + json.dumps(out), flush=True)
