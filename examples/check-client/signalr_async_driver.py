"""A ``wirecheck check-client`` driver for signalr-async (PyPI, 3.0.0; module ``signalr_async``,
its ASP.NET Core client ``signalr_async.netcore``): SignalR's standard workload
(docs/start/clients.md, "The client suite"), as far as this library can run it.

    wirecheck check-client --protocol signalr \
        --client-command "python examples/check-client/signalr_async_driver.py {url} {count}"

Negotiate and the WebSocket to the hub at URL (the JSON hub protocol), COUNT invocations of
``Echo("msg-N")`` printing ``received msg-N`` for each result, a ``Counter(COUNT, 0)`` server
stream printing ``received item-N`` for each item, then ``stop()``. The upload to ``Sum`` is
left out: signalr-async has no client-to-server streams (its messages always carry an empty
``streamIds``, and no API takes a stream argument).

How signalr-async is used, and its quirks:

- the client takes a base URL and a hub object and connects to ``base/hub.name``: the ``{url}``
  is split at its last ``/`` (``http://host:port`` and hub ``hub``);
- ``start()`` negotiates (``negotiateVersion=1``), opens the WebSocket, sends the handshake and
  starts four tasks (consumer, producer, timeout, keep-alive). Its ``wait()`` is the public way to
  learn that one of them ended: it re-raises what ended it. Each step below waits for its own
  result *or* for ``wait()``, whichever comes first (an exception inside the consumer, e.g. a
  message it cannot parse, ends that task and would otherwise leave the call pending). Once the
  client has stopped itself (a server Close), ``wait()`` has no task left and raises
  ``ValueError`` at once; the step then waits for its own result alone;
- ``hub.invoke`` returns the result, or raises ``ServerInvocationException`` with the error of an
  error Completion; ``hub.stream`` is an async generator ending at the Completion;
- a connection that ends is reconnected (``reconnect_policy`` defaults to True, as the README
  uses it); pending calls are failed with ``ServerInvocationException("Client disconnected")``;
- the JSON reader builds each message class from the message's keys, so a property it does not
  know raises ``TypeError`` in the consumer task (seen through ``wait()``).

Every wait is bounded: a step that neither finishes nor ends a task within :data:`WAIT` seconds
is what an application would wait on for ever; the driver prints ``hung <what never came>``
(the kit's verdict: HANG) and exits 1 (the kit's ``--budget`` is the outer bound).
"""
import asyncio
import sys

from signalr_async.netcore import Client, Hub
from signalr_async.netcore.protocols import JsonProtocol

#: Seconds any one step may take before the driver gives up on the library.
WAIT = 20
#: Seconds ``stop()`` may take.
STOP_WAIT = 5


class Timeout(Exception):
    """A step the library never finished (the driver's bound, not the library's error)."""


def shown(value) -> str:
    """A result as one word (the kit reads ``received ID``)."""
    return value if isinstance(value, str) and value.isprintable() and " " not in value else f"(other:{value!r})"


async def workload(url: str, count: int) -> None:
    base, _, hub_name = url.rstrip("/").rpartition("/")
    hub = Hub(hub_name)
    client = Client(base, hub, connection_options={"protocol": JsonProtocol()})

    async def step(awaitable, what: str):
        """``awaitable``'s value; or what ended one of the client's tasks; or a Timeout."""
        work = asyncio.ensure_future(awaitable)
        watch = asyncio.ensure_future(client.wait())
        deadline = asyncio.get_running_loop().time() + WAIT
        try:
            while True:
                left = deadline - asyncio.get_running_loop().time()
                done, _ = await asyncio.wait({work, watch} - {None}, timeout=max(left, 0),
                                             return_when=asyncio.FIRST_COMPLETED)
                if work in done:
                    return work.result()
                if watch is not None and watch in done:
                    if isinstance(watch.exception(), ValueError):
                        # wait() over no task at all: the client stopped itself (a server
                        # Close); what it did to the pending call is what counts
                        watch = None
                        continue
                    work.cancel()
                    watch.result()                 # raises what ended the task
                    raise RuntimeError(f"a client task ended while waiting for {what}")
                work.cancel()
                raise Timeout(f"{what} never came within {WAIT} s")
        finally:
            if watch is not None:
                watch.cancel()

    try:
        await asyncio.wait_for(client.start(), WAIT)
    except TimeoutError:
        raise Timeout(f"the connection (negotiate, WebSocket, handshake) never came within {WAIT} s") from None
    failed = True
    try:
        for i in range(count):
            result = await step(hub.invoke("Echo", f"msg-{i}"), f"the result of Echo(msg-{i})")
            print(f"received {shown(result)}", flush=True)

        stream = hub.stream("Counter", count, 0)
        n = 0
        while True:
            try:
                item = await step(anext(stream), f"Counter item {n} or the stream's end")
            except StopAsyncIteration:
                break
            print(f"received item-{item}" if isinstance(item, int) else f"received (other:{item!r})", flush=True)
            n += 1
        failed = False
    finally:
        try:
            await asyncio.wait_for(client.stop(), STOP_WAIT)
        except TimeoutError:
            if not failed:
                raise Timeout(f"the end of stop() never came within {STOP_WAIT} s") from None
        except Exception:
            if not failed:                # a failing stop() matters only when nothing failed before
                raise


def main() -> int:
    url, count = sys.argv[1], int(sys.argv[2])
    try:
        asyncio.run(workload(url, count))
    except Timeout as exc:
        print(f"hung {exc}", flush=True)     # the library never returned: a HANG
        return 1
    except Exception as exc:          # noqa: BLE001 - what signalr-async raised to its application
        print(f"error {type(exc).__name__}: {exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
