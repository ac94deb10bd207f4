"""A ``wirecheck check-client`` driver for signalrcore-async (PyPI, 0.5.4), an asyncio rewrite of
signalrcore's client on ``websockets``: SignalR's standard workload (docs/start/clients.md, "The
client suite"), as far as this library can run it.

    wirecheck check-client --protocol signalr \
        --client-command "python examples/check-client/signalrcore_async_driver.py {url} {count}"

Negotiate and the WebSocket to the hub at URL (the JSON hub protocol), COUNT invocations of
``Echo("msg-N")`` printing ``received msg-N`` for each result, a ``Counter(COUNT, 0)`` server
stream printing ``received item-N`` for each item, then ``stop()``. What signalrcore-async
raises is printed as ``error TYPE: TEXT`` and the exit status is 1.

The upload to ``Sum`` is left out: the library's client-to-server stream cannot start.
``send("Sum", Subject())`` raises ``NameError: name 'Subject' is not defined`` (its hub
connection module never imports ``Subject``), before anything is written; past that,
``Subject.start()`` sends through ``self.connection.hub``, an attribute the hub connection does
not have (``AttributeError``). The driver would report the same defect under every scenario.

How signalrcore-async is used, and its quirks:

- it needs ``websockets`` < 14: it calls ``websockets.connect(..., extra_headers=...)``, which
  the new asyncio client of websockets 14+ (the default ``connect`` since 14.0) refuses with
  ``TypeError``; its requirement (``websockets>=8.1``) does not say so, so the pin is 13.1;
- ``await start()`` negotiates (``requests``, blocking), opens the WebSocket, waits for the
  handshake answer and starts the receive loop as a task;
- ``await invoke(method, args)`` returns the result, or raises ``Exception(error)`` for an
  error Completion; it keeps ONE pending call (a single event and id), which this sequential
  workload respects;
- ``await stream(method, args, on_next)`` calls ``on_next(item)`` for each item and returns at
  the Completion;
- a server Close makes it ``stop()``, which fails the pending call with ``Exception("The
  connection was closed unexpectedly.")``; when the socket ends otherwise, the receive task
  ends with the ``ConnectionClosed`` and nobody is told: the pending call waits for ever.

Every wait is bounded (:data:`WAIT` seconds): a call that never returns is printed as ``hung
...`` (the kit's verdict: HANG) and the exit status is 1.
"""
import asyncio
import contextlib
import logging
import sys

from signalrcore_async.hub_connection_builder import HubConnectionBuilder

#: Seconds any one step may take before the driver gives up on the library.
WAIT = 20
#: Seconds ``stop()`` may take.
STOP_WAIT = 5


class Timeout(Exception):
    """A step the library never finished (the driver's bound, not the library's error)."""


async def bounded(awaitable, what: str, seconds: float = WAIT):
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except TimeoutError:
        raise Timeout(f"{what} never came within {seconds} s") from None


def shown(value) -> str:
    """A result as one word (the kit reads ``received ID``)."""
    return value if isinstance(value, str) and value.isprintable() and " " not in value else f"(other:{value!r})"


async def workload(url: str, count: int) -> None:
    connection = HubConnectionBuilder().with_url(url).configure_logging(logging.CRITICAL).build()
    # start() negotiates with a blocking requests.post: bounded in a thread's time, as a whole
    await bounded(connection.start(), "the connection (negotiate, WebSocket, handshake)")
    failed = True
    try:
        for i in range(count):
            result = await bounded(connection.invoke("Echo", [f"msg-{i}"]), f"the result of Echo(msg-{i})")
            print(f"received {shown(result)}", flush=True)

        def on_next(item) -> None:
            print(f"received item-{item}" if isinstance(item, int) else f"received (other:{item!r})", flush=True)

        await bounded(connection.stream("Counter", [count, 0], on_next), "the end of the Counter stream")
        failed = False
    finally:
        try:
            await bounded(connection.stop(), "the end of stop()", STOP_WAIT)
        except Exception:
            if not failed:            # a failing stop() matters only when nothing failed before
                raise


def main() -> int:
    url, count = sys.argv[1], int(sys.argv[2])
    try:
        asyncio.run(workload(url, count))
    except Timeout as exc:
        print(f"hung {exc}", flush=True)     # the library never returned: a HANG
        return 1
    except Exception as exc:          # noqa: BLE001 - what signalrcore-async raised to its application
        print(f"error {type(exc).__name__}: {exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
