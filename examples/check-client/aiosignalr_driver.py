"""A ``wirecheck check-client`` driver for aiosignalr (PyPI; its client package
``aiosignalr.client``): SignalR's standard workload (docs/start/clients.md, "The client suite").

    wirecheck check-client --protocol signalr \
        --client-command "python examples/check-client/aiosignalr_driver.py {url} {count}"

Negotiate and the WebSocket to the hub at URL (the JSON hub protocol), COUNT invocations of
``Echo("msg-N")`` printing ``received msg-N`` for each result, a ``Counter(COUNT, 0)`` server
stream printing ``received item-N`` for each item, an upload of ``0 .. COUNT-1`` to ``Sum``
(client-to-server stream; its result is checked), then ``stop()``.

aiosignalr's API is plain ``await``: ``invoke`` returns the result or raises ``HubException``
for an error Completion, the stream is an async iterator, ``client_stream`` waits for the
upload's result, and a connection that ends fails every pending call with ``ConnectionClosed``
(or the transport's exception). Whatever it raises to the application is printed as
``error TYPE: TEXT`` and the exit status is 1; a ``Sum`` result other than the sum is printed
as ``error WrongResult: ...``. When ``stop()`` (in the ``finally``) fails after an earlier error,
the earlier error is the one printed.

Quirk: a server's Close message ends the connection and fails the pending calls, but its error
text is dropped: the application gets ``ConnectionClosed("Connection closed.")`` (or, when its
next call is already on its way, the WebSocket's own ``ConnectionClosedOK``), not the reason the
server gave.

Every wait is bounded: if an awaited call never finishes within :data:`WAIT` seconds, the
application would wait forever; the driver prints ``hung <what never came>`` (the kit's verdict: HANG) and
exits 1 instead (the kit's ``--budget`` is the outer bound). ``stop()`` is bounded too.
"""
import asyncio
import sys

from aiosignalr.client import HubConnection

#: Seconds any one step may take before the driver gives up on the library.
WAIT = 20
#: Seconds ``stop()`` may take.
STOP_WAIT = 5


class Timeout(Exception):
    """A step the library never finished (the driver's bound, not the library's error)."""


class WrongResult(Exception):
    """The library handed over a result other than the hub's (the driver's check)."""


async def bounded(awaitable, what: str, seconds: float = WAIT):
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except TimeoutError:
        raise Timeout(f"{what} never came within {seconds} s") from None


def shown(value) -> str:
    """A result as one word (the kit reads ``received ID``)."""
    return value if isinstance(value, str) and value.isprintable() and " " not in value else f"(other:{value!r})"


async def workload(url: str, count: int) -> None:
    connection = HubConnection(protocol="json")
    await bounded(connection.start(url), "the connection (negotiate, WebSocket, handshake)")
    failed = True
    try:
        for i in range(count):
            result = await bounded(connection.invoke("Echo", f"msg-{i}"), f"the result of Echo(msg-{i})")
            print(f"received {shown(result)}", flush=True)

        stream = await bounded(connection.stream("Counter", count, 0), "the start of the Counter stream")
        n = 0
        while True:
            try:
                item = await bounded(anext(stream), f"Counter item {n} or the stream's end")
            except StopAsyncIteration:
                break
            print(f"received item-{item}" if isinstance(item, int) else f"received (other:{item!r})", flush=True)
            n += 1

        async def upload():
            async with connection.client_stream("Sum") as stream_up:
                for value in range(count):
                    await stream_up.send_item(value)
            return stream_up.result

        total = await bounded(upload(), "the result of the Sum upload")
        if total != sum(range(count)):
            raise WrongResult(f"Sum answered {total!r}, not {sum(range(count))}")
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
    except Exception as exc:          # noqa: BLE001 - what aiosignalr raised to its application
        print(f"error {type(exc).__name__}: {exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
