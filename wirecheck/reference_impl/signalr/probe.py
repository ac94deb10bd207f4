"""The bytes a client sends to learn whether a SignalR server (raw transport) is alive: the
JSON handshake and an Invocation with an id of a method no hub has. A v1 server answers the
handshake; a draft one answers nothing to it ("Overview") but must complete the invocation
with an error (signalr-hub-protocol.md "Invocation", "Completion"). Used by the network
fuzzer and byte-file replay."""
from .codec import encode
from .constants import JSON
from .messages import HandshakeRequest, Invocation


def liveness_probe(profile: str | None = None) -> bytes:
    profile = profile or "v1"
    return (encode(HandshakeRequest(JSON, 1))
            + encode(Invocation("wirecheck-liveness", [], "wirecheck-liveness"), JSON, profile))
