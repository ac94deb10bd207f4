"""The bytes a client sends to learn whether a VibeMQ server is alive: a Connect without
credentials, which a server answers with ConnectAck or an Error (vibemq-protocol.rst
"Connect"). Used by the network fuzzer and byte-file replay."""
from .codec import CommandType, Message, encode


def liveness_probe(profile: str | None = None) -> bytes:
    return encode(Message(CommandType.CONNECT, "wirecheck-liveness"), profile or "document")
