"""The bytes a client sends to learn whether a Micromessage2 server is alive: a handshake
offer with no extensions, which a server answers with its own handshake or an ERROR
(micromessage2 document "Handshake"). Used by the network fuzzer and byte-file replay."""
from .codec import Handshake, encode


def liveness_probe(profile: str | None = None) -> bytes:
    return encode(Handshake("wirecheck-liveness"))
