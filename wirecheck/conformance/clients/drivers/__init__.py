"""Ready drivers for ``wirecheck check-client`` (conformance/clients/suite.py): each protocol's
standard workload with the kit's reference client, as an implementer's driver does it with
theirs (docs/start/clients.md, "The client suite"). ``python -m
wirecheck.conformance.clients.drivers.<module> HOST PORT COUNT``.
"""
from __future__ import annotations

import asyncio
import sys

#: Seconds the reference client waits for each answer.
TIMEOUT = 5.0


def run(workload, argv: list[str] | None = None) -> int:
    """``workload(host, port, count, emit)``; every error its library raises becomes an
    ``error`` line and exit 1 (anything else escapes, as an uncaught error would)."""
    from wirecheck.reference_impl.core.client import ConnectionClosed
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: HOST PORT COUNT", file=sys.stderr)
        return 2
    host, port, count = args[0], int(args[1]), int(args[2])

    def emit(line: str) -> None:
        print(line, flush=True)

    try:
        asyncio.run(workload(host, port, count, emit))
    except (ConnectionClosed, ConnectionError, asyncio.TimeoutError, OSError) as exc:
        emit(f"error {type(exc).__name__}: {exc}")
        return 1
    except LibraryError as exc:
        emit(f"error {exc}")
        return 1
    return 0


class LibraryError(Exception):
    """An error the reference client reported (a refusal the protocol defines)."""


def message_id(body: bytes) -> str:
    """How a delivered body is printed: the workload's ID as it was published, else its size."""
    text = body.decode("ascii", "replace")
    return text if text.isprintable() and text and " " not in text and len(text) < 64 else f"({len(body)}-bytes)"
