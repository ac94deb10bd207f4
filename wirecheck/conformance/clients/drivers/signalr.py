"""SignalR's standard workload with the reference client (``wirecheck check-client --protocol
signalr``): negotiate and the WebSocket to the test hub (``{url}``), the JSON hub protocol, then
``count`` invocations of ``Echo("msg-N")`` (each result printed as ``received msg-N``), a
``Counter(count)`` stream (each item printed as ``received item-N``) and an upload to ``Sum``,
then Close. ``python -m wirecheck.conformance.clients.drivers.signalr URL COUNT [json|messagepack]``."""
from __future__ import annotations

import asyncio
import sys

from wirecheck.conformance.clients.drivers import TIMEOUT, LibraryError


async def workload(url: str, count: int, protocol: str, emit) -> None:
    from wirecheck.reference_impl.signalr.client import HubClient, HubError
    client = await HubClient.connect(url, protocol, timeout=TIMEOUT)
    try:
        for i in range(count):
            result = await client.invoke("Echo", f"msg-{i}")
            emit(f"received {result if isinstance(result, str) and result.isprintable() and ' ' not in result else '(other)'}")
        stream = await client.stream("Counter", count, 0)
        async for item in stream:
            emit(f"received item-{item}")
        total = await client.invoke("Sum", streams=[list(range(count))])
        if total != sum(range(count)):
            raise LibraryError(f"Sum answered {total!r}")
    except HubError as exc:
        raise LibraryError(f"HubError: {exc}") from None
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> int:
    from wirecheck.reference_impl.core.client import ConnectionClosed
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3):
        print("usage: URL COUNT [json|messagepack]", file=sys.stderr)
        return 2

    def emit(line: str) -> None:
        print(line, flush=True)

    try:
        asyncio.run(workload(args[0], int(args[1]), args[2] if len(args) > 2 else "json", emit))
    except (LibraryError, ConnectionClosed, ConnectionError, asyncio.TimeoutError, OSError) as exc:
        emit(f"error {type(exc).__name__}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
