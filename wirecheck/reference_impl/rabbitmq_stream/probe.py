"""The bytes a client sends to learn whether a RabbitMQ Stream server is alive: the first
request of every connection, PeerProperties, which the server answers before anything else
(rabbitmq-stream-protocol.md "PeerProperties"). Used by the network fuzzer and byte-file
replay."""
from .codec import PeerProperties, encode

PROBE_ID = 0x11FE


def liveness_probe(profile: str | None = None) -> bytes:
    return encode(PeerProperties(PROBE_ID, {"product": "wirecheck-liveness"}))
