"""Deprecated name of ``python -m wirecheck.conformance.clients.drivers.rabbitmq_stream`` (see the package)."""
from wirecheck.conformance.drivers import forward

if __name__ == "__main__":
    forward("rabbitmq_stream")
