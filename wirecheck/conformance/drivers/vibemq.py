"""Deprecated name of ``python -m wirecheck.conformance.clients.drivers.vibemq`` (see the package)."""
from wirecheck.conformance.drivers import forward

if __name__ == "__main__":
    forward("vibemq")
