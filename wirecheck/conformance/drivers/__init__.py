"""Deprecated: the reference drivers moved to :mod:`wirecheck.conformance.clients.drivers`
with the rest of client checking. ``python -m wirecheck.conformance.drivers.<module> ...``
still runs the driver there (a one-line notice on stderr, which check-client keeps apart from
the driver's lines) and will be removed in a later release (docs/start/clients.md,
"Deprecated names")."""
from __future__ import annotations

import runpy
import sys

NEW = "wirecheck.conformance.clients.drivers"


def forward(module: str) -> None:
    """Run the moved driver ``module`` as ``__main__`` with this process's arguments."""
    print(f"wirecheck: `python -m wirecheck.conformance.drivers.{module}` is deprecated; "
          f"use `python -m {NEW}.{module}`", file=sys.stderr, flush=True)
    runpy.run_module(f"{NEW}.{module}", run_name="__main__", alter_sys=True)
