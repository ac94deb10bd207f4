"""The bytes a client sends to learn whether a BlipMQ server is alive: one PING, which a
server answers in every state (PONG once authenticated, NACK 401 before; blipmq-protocol.md
"Frame Types", SPEC_NOTES.md). Used by the network fuzzer and byte-file replay."""
from .codec import Ping, encode

PROBE_ID = 0x11FE_11FE


def liveness_probe(profile: str | None = None) -> bytes:
    return encode(Ping(PROBE_ID))
