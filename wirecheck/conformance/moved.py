"""Names that moved when the package was laid out by role, and what keeps the old ones working
for a while (docs/deprecations.md lists them; tests/project/test_deprecations.py runs each).

An old ``python -m`` name runs the module under its new name as ``__main__`` with the same
arguments, after a one-line notice on stderr; an old import name gives the new module's names
with a ``DeprecationWarning``."""
from __future__ import annotations

import runpy
import sys
import warnings

#: old module name -> new module name.
MOVED = {
    "wirecheck.conformance.drivers.blipmq": "wirecheck.conformance.clients.drivers.blipmq",
    "wirecheck.conformance.drivers.micromessage2": "wirecheck.conformance.clients.drivers.micromessage2",
    "wirecheck.conformance.drivers.rabbitmq_stream": "wirecheck.conformance.clients.drivers.rabbitmq_stream",
    "wirecheck.conformance.drivers.signalr": "wirecheck.conformance.clients.drivers.signalr",
    "wirecheck.conformance.drivers.vibemq": "wirecheck.conformance.clients.drivers.vibemq",
    "wirecheck.fuzz.make_input_corpora": "wirecheck.fuzz.builders.input_corpora",
    "wirecheck.fuzz.make_transport_corpora": "wirecheck.fuzz.builders.transport_corpora",
    "wirecheck.conformance.verdicts": "wirecheck.conformance.report.verdicts",
}


def run_moved(old: str) -> None:
    """``python -m OLD ...``: say where it went, then run the new module as ``__main__``."""
    new = MOVED[old]
    print(f"wirecheck: `python -m {old}` is deprecated; use `python -m {new}`", file=sys.stderr, flush=True)
    runpy.run_module(new, run_name="__main__", alter_sys=True)


def warn_moved(old: str) -> None:
    """An import of OLD: a DeprecationWarning naming the new module (pointing at the importer)."""
    warnings.warn(f"{old} is deprecated; import {MOVED[old]}", DeprecationWarning, stacklevel=3)
