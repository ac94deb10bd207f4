"""Deprecated name of ``python -m wirecheck.conformance.clients.drivers.vibemq`` (docs/deprecations.md)."""
from wirecheck.conformance.moved import run_moved

if __name__ == "__main__":
    run_moved(__spec__.name)
