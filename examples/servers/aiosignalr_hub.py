"""The wirecheck test hub served by aiosignalr (PyPI ``aiosignalr==0.1.1``, ``aiosignalr.server``).

Start it (from a virtualenv that has ``aiosignalr==0.1.1`` and aiohttp)::

    python examples/servers/aiosignalr_hub.py 5100
    # prints "listening on http://127.0.0.1:5100/hub" once it accepts; stops on SIGTERM/SIGINT

Run the SignalR server suite against it::

    wirecheck check --protocol signalr --target http://127.0.0.1:5100/hub -n 2 \\
        --report out-aiosignalr.json
    # the same without the three timer tests
    wirecheck check --protocol signalr --target http://127.0.0.1:5100/hub -n 2 \\
        --report out-aiosignalr.json -- -m "not slow"

The hub mirrors ``wirecheck/reference_impl/signalr/hub.py`` method by method. Where
aiosignalr's API decided how a method looks on the wire:

* Method discovery: aiosignalr makes every public method of the ``Hub`` subclass invocable,
  matching the Target case-insensitively (``echo`` and ``ECHO`` reach ``Echo``; the hub cannot
  change that), and decides from the *raw return annotation* whether the Completion carries
  a result. Methods with a result are annotated ``-> Any``; ``Nothing`` and ``Remember`` are
  annotated ``-> None`` so their Completion has none. The module must not use
  ``from __future__ import annotations``: the annotation would be the string ``"None"`` and
  aiosignalr would send ``"result": null`` for the void methods.
* Server streams (``Counter``, ``StreamFailure``, ``Endless``) must be async generators.
  aiosignalr wraps any exception raised inside one as
  ``"An error occurred on the server while streaming results. <message>"``: the
  ``StreamFailure`` error and the argument errors of the streaming methods reach the client
  with that prefix, not as the reference hub words them. A generator only starts when the
  first item is pulled, so argument errors of streaming methods come as that stream error,
  not as "Failed to invoke ...".
* After a CancelInvocation aiosignalr cancels the generator's task and then sends an empty
  Completion for the cancelled id (``_run_stream``); the hub cannot suppress it.
* Argument counts are checked by aiosignalr itself: too many arguments give "Failed to invoke
  'X' due to an error on the server. Invocation provides N argument(s) but target expects
  M."; too few give "... Missing required argument 'name'." (its wording, kept as is).
  Argument *types* are not checked by aiosignalr (Python is untyped at the boundary); the hub
  checks them itself and words the error as the reference hub does
  ("Failed to invoke 'X' due to an error on the server. 'text' must be a string").
* ``Sum(stream)``: the upload stream is a parameter annotated ``IncomingStream``; a client
  stream that ends with an error surfaces as ``HubException`` from the iterator and is
  reported as "Client stream failed: <error>".
* ``Remember``/``Recall``: aiosignalr builds a new hub object per invocation, so the value
  lives in the connection's ``HubContext.state`` dict.
* ``CallMe``: ``clients.caller.send`` (an Invocation without an id), then ``true``.
* ``AskMe``: ``clients.caller.invoke`` (an Invocation with a server id ``s<n>``). aiosignalr
  resolves a client Completion *without* a result to ``None``, so the hub cannot tell it from
  a ``null`` result: AskMe always answers with a result (``null`` when the client's method
  was void), where the reference hub sends a Completion without one. A client error comes
  back as ``HubException`` and is reported as "The client failed: <error>".
* Server options: aiosignalr's defaults (keep-alive 15 s, client timeout 30 s, handshake
  timeout 15 s, 32 KiB messages, one invocation at a time per connection) are kept.
  ``ServerOptions.handshake_timeout`` is declared but never read by aiosignalr 0.1.1: a
  connection that never sends a handshake is only dropped by the client timeout (30 s).

Failures the suite reports that come from aiosignalr 0.1.1 itself, not from this program:
every MessagePack Completion, StreamItem and CancelInvocation carries the integer 128
(``cc 80``) where the empty headers map (``80``) belongs; a handshake split over several
WebSocket messages closes the connection; MessagePack records sent in the same message as the
handshake are dropped; an invocation id still in use is not refused; Targets match
case-insensitively; a protocol error closes the socket without a Close message; JSON goes out
in binary WebSocket messages.
"""
# No "from __future__ import annotations" here: aiosignalr reads the raw return annotation,
# and the string "None" would count as a result type.
import asyncio
import itertools
import signal
import sys
from typing import Any

from aiosignalr.errors import HubException
from aiosignalr.server import Hub, IncomingStream, ServerOptions, SignalRServer

STREAM_FAILURE_ERROR = "Ran out of data!"
MIN_ENDLESS_INTERVAL = 0.001
MAX_COUNT = 1_000_000
MAX_DELAY_MS = 60_000


def _reject(method: str, reason: str) -> HubException:
    return HubException(f"Failed to invoke '{method}' due to an error on the server. {reason}")


def _int(method: str, name: str, value: Any) -> int:
    # bool is a subclass of int in Python; the reference hub refuses it too
    if type(value) is not int:
        raise _reject(method, f"'{name}' must be an integer")
    return value


def _count(method: str, name: str, value: Any) -> int:
    value = _int(method, name, value)
    if not 0 <= value <= MAX_COUNT:
        raise _reject(method, f"'{name}' must be 0..{MAX_COUNT}")
    return value


def _delay(method: str, name: str, value: Any) -> float:
    value = _int(method, name, value)
    if not 0 <= value <= MAX_DELAY_MS:
        raise _reject(method, f"'{name}' must be 0..{MAX_DELAY_MS} ms")
    return value / 1000.0


def _str(method: str, name: str, value: Any) -> str:
    if type(value) is not str:
        raise _reject(method, f"'{name}' must be a string")
    return value


class WirecheckHub(Hub):
    """The wirecheck test hub. Method names are the wire names."""

    # -- single results ---------------------------------------------------------------------

    async def Echo(self, text) -> Any:  # noqa: N802 - wire name
        return _str("Echo", "text", text)

    async def Add(self, x, y) -> Any:  # noqa: N802
        return _int("Add", "x", x) + _int("Add", "y", y)

    async def Nothing(self) -> None:  # noqa: N802
        return None

    async def Fail(self, message) -> Any:  # noqa: N802
        raise HubException(_str("Fail", "message", message))

    async def Batched(self, count) -> Any:  # noqa: N802
        return list(range(_count("Batched", "count", count)))

    # -- server streams ---------------------------------------------------------------------

    async def Counter(self, count, delayMs):  # noqa: N802, N803
        n = _count("Counter", "count", count)
        interval = _delay("Counter", "delayMs", delayMs)
        for i in range(n):
            if i and interval:
                await asyncio.sleep(interval)
            yield i

    async def StreamFailure(self, count):  # noqa: N802
        n = _count("StreamFailure", "count", count)
        for i in range(n):
            yield i
        raise HubException(STREAM_FAILURE_ERROR)

    async def Endless(self, delayMs):  # noqa: N802, N803
        interval = max(_delay("Endless", "delayMs", delayMs), MIN_ENDLESS_INTERVAL)
        for i in itertools.count():
            if i:
                await asyncio.sleep(interval)
            yield i

    # -- client-to-server stream ------------------------------------------------------------

    async def Sum(self, stream: IncomingStream) -> Any:  # noqa: N802
        total = 0
        bad = False
        try:
            async for item in stream:
                if type(item) is not int:
                    bad = True          # keep draining so the upload completes cleanly
                elif not bad:
                    total += item
        except HubException as exc:
            raise HubException(f"Client stream failed: {exc}") from None
        if bad:
            raise HubException("Sum takes a stream of integers")
        return total

    # -- fire-and-forget and its proof ------------------------------------------------------

    async def Remember(self, value) -> None:  # noqa: N802
        self.context.state["remembered"] = value

    async def Recall(self) -> Any:  # noqa: N802
        return self.context.state.get("remembered")

    # -- the server calls the client --------------------------------------------------------

    async def CallMe(self, method, argument) -> Any:  # noqa: N802
        target = _str("CallMe", "method", method)
        await self.clients.caller.send(target, argument)
        return True

    async def AskMe(self, method, argument) -> Any:  # noqa: N802
        target = _str("AskMe", "method", method)
        try:
            return await self.clients.caller.invoke(target, argument)
        except HubException as exc:
            raise HubException(f"The client failed: {exc}") from None


async def _main(port: int) -> None:
    server = SignalRServer(WirecheckHub, options=ServerOptions())
    host, bound = await server.serve("127.0.0.1", port, path="/hub")
    print(f"listening on http://{host}:{bound}/hub", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.close()


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print(f"usage: {argv[0]} PORT", file=sys.stderr)
        return 2
    asyncio.run(_main(int(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
