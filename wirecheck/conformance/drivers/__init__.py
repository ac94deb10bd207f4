"""Deprecated: the reference drivers moved to :mod:`wirecheck.conformance.clients.drivers`
with the rest of client checking; ``python -m wirecheck.conformance.drivers.<module> ...``
still runs them (conformance/moved.py, docs/deprecations.md)."""
