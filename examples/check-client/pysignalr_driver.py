"""A ``wirecheck check-client`` driver for pysignalr (PyPI): SignalR's standard workload
(docs/start/clients.md, "The client suite").

    wirecheck check-client --protocol signalr \
        --client-command "python examples/check-client/pysignalr_driver.py {url} {count}"

Negotiate and the WebSocket to the hub at URL (the JSON hub protocol), COUNT invocations of
``Echo("msg-N")`` printing ``received msg-N`` for each result, a ``Counter(COUNT, 0)`` server
stream printing ``received item-N`` for each item, an upload of ``0 .. COUNT-1`` to ``Sum``
(client-to-server stream), then stop. What pysignalr reports as an error is printed as
``error TYPE: TEXT`` and the exit status is 1.

How pysignalr is used, and its quirks:

- it is driven as its README shows: ``client.run()`` (negotiate, connect, the receive loop,
  reconnects) runs beside the application's work, as in ``asyncio.gather(client.run(), work)``.
  So an exception that ends ``run()`` (a server Close with an error is raised as
  ``ServerError``; an error inside its receive loop) reaches the application: each step below
  waits for its own callback *or* the end of ``run()``, whichever comes first;
- results come through callbacks: ``send(method, args, on_invocation)`` calls
  ``on_invocation(CompletionMessage)`` (with ``.error`` set for an error Completion, which also
  goes to the ``on_error`` callback the README registers: registered here too, it only notes
  the error); ``stream(...)`` calls ``on_next(item)``, then ``on_complete(message)`` or
  ``on_error(message)``;
- the ``{url}`` is given as is: pysignalr negotiates at ``http://.../hub/negotiate`` and turns
  the URL into ``ws://.../hub?id=...`` itself;
- ``client_stream`` sends its Invocation without an invocationId (legal: no result is
  wanted), so the hub's answer to ``Sum`` can never reach the application; the upload is sent
  and not checked;
- its JSON reader builds each message class from the message's keys, so a property it does
  not know (legal in v1) raises ``TypeError`` inside its receive loop: ``run()`` ends with it,
  the call waiting for that message never completes, and the application gets the
  ``TypeError`` (it is printed like any error);
- when a call fails only because ``run()`` had already ended (the connection is gone), the
  application of ``gather(client.run(), work)`` gets ``run()``'s error, so that is the one
  printed;
- it has no stop API: cancelling ``run()`` is its stop (a WebSocket close 1011, no SignalR
  Close);
- its ``on_close`` callback fires when the socket ends, and ``run()`` then reconnects on its
  own; calls pending at that moment are neither failed nor resent. The driver does not turn
  ``on_close`` into an error for them (that would be the application doing what the library
  does not): it notes it on a ``note`` line, which the kit ignores.

Every wait is bounded: if a callback never comes within :data:`WAIT` seconds (and ``run()``
did not end), the application would wait forever; the driver prints
``hung <what never came>`` (the kit's verdict: HANG) and exits 1 instead (the kit's ``--budget`` is the outer
bound).
"""
import asyncio
import contextlib
import sys

from pysignalr.client import SignalRClient

#: Seconds any one step may take before the driver gives up on the library.
WAIT = 20
#: Seconds the cancelled ``run()`` may take to end.
STOP_WAIT = 5


class Timeout(Exception):
    """A step the library never finished (the driver's bound, not the library's error)."""


class LibraryError(Exception):
    """An error pysignalr handed to a callback (an error Completion)."""


def note(text: str) -> None:
    print(f"note {text}", flush=True)


def shown(value) -> str:
    """A result as one word (the kit reads ``received ID``)."""
    return value if isinstance(value, str) and value.isprintable() and " " not in value else f"(other:{value!r})"


async def workload(url: str, count: int) -> None:
    loop = asyncio.get_running_loop()
    client = SignalRClient(url)
    opened = loop.create_future()

    async def on_open() -> None:
        if not opened.done():
            opened.set_result(None)

    async def on_close() -> None:
        note("on_close: the connection ended (pysignalr reconnects on its own; pending calls stay pending)")

    async def on_error(message) -> None:
        note(f"on_error: {message.error}")

    client.on_open(on_open)
    client.on_close(on_close)
    client.on_error(on_error)
    runner = loop.create_task(client.run())

    async def until(future, what: str):
        """``future``'s value; or what ended ``run()``; or a Timeout after WAIT seconds."""
        done, _ = await asyncio.wait({future, runner}, timeout=WAIT, return_when=asyncio.FIRST_COMPLETED)
        if future in done:
            return future.result()
        if runner in done:
            runner.result()                        # raises what ended run()
            raise LibraryError(f"run() returned while waiting for {what}")
        raise Timeout(f"{what} never came within {WAIT} s")

    try:
        await until(opened, "the connection (negotiate, WebSocket, handshake)")
        for i in range(count):
            answered = loop.create_future()

            async def on_completion(message, answered=answered) -> None:
                if not answered.done():
                    answered.set_result(message)

            await client.send("Echo", [f"msg-{i}"], on_completion)
            message = await until(answered, f"the Completion of Echo(msg-{i})")
            if message.error:
                raise LibraryError(f"Echo(msg-{i}): {message.error}")
            print(f"received {shown(message.result)}", flush=True)

        ended = loop.create_future()

        async def on_next(item) -> None:
            print(f"received item-{item}" if isinstance(item, int) else f"received (other:{item!r})", flush=True)

        async def on_complete(message) -> None:
            if not ended.done():
                ended.set_result(None)

        async def on_stream_error(message) -> None:
            if not ended.done():
                ended.set_exception(LibraryError(f"Counter: {getattr(message, 'error', message)}"))

        await client.stream("Counter", [count, 0], on_next, on_complete, on_stream_error)
        await until(ended, "the end of the Counter stream")

        async with client.client_stream("Sum") as upload:
            for value in range(count):
                await upload.send(value)
    except Exception:
        # As under asyncio.gather(client.run(), work): when run() had already ended with an
        # error, that error is the one the application gets (a send then fails only because
        # the connection is gone).
        if runner.done() and not runner.cancelled() and runner.exception() is not None:
            raise runner.exception() from None
        raise
    finally:
        runner.cancel()                            # pysignalr's only stop
        # what run() ended with was reported above, or is the cancellation itself
        with contextlib.suppress(asyncio.CancelledError, TimeoutError, Exception):
            await asyncio.wait_for(runner, STOP_WAIT)


def main() -> int:
    url, count = sys.argv[1], int(sys.argv[2])
    try:
        asyncio.run(workload(url, count))
    except Timeout as exc:
        print(f"hung {exc}", flush=True)     # the library never returned: a HANG
        return 1
    except Exception as exc:          # noqa: BLE001 - what pysignalr raised to its application
        print(f"error {type(exc).__name__}: {exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
