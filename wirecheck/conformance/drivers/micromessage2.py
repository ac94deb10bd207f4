"""Deprecated name of ``python -m wirecheck.conformance.clients.drivers.micromessage2`` (see the package)."""
from wirecheck.conformance.drivers import forward

if __name__ == "__main__":
    forward("micromessage2")
