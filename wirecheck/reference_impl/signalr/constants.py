"""Numbers of the SignalR Hub Protocol.

The document (signalr-hub-protocol.md) is an early draft; today's clients speak the current
protocol (SPEC_NOTES.md, SignalR). The kit names the two readings as profiles:

- ``draft``: the document as written: types 1 Invocation, 2 StreamItem, 3 Completion,
  4 StreamCompletion, 5 CancelInvocation; ``nonblocking`` on Invocation; no headers;
- ``v1``: the current protocol: types 1-9, ``headers``, ``streamIds``, Ping, Close with
  ``allowReconnect``, Ack/Sequence; StreamCompletion is gone (a stream ends with Completion).
"""
from __future__ import annotations

from enum import IntEnum

PROTOCOL = "signalr"

#: HTTP + WebSocket port of the reference hub; raw TCP is served on DEFAULT_PORT + 1.
DEFAULT_PORT = 5100

PROFILES = ("v1", "draft")
DEFAULT_PROFILE = "v1"

#: "JSON Encoding": every JSON message (and the handshake) ends with the record separator.
RECORD_SEPARATOR = 0x1E
RS = b"\x1e"

#: "Binary encoding": the VarInt length prefix is 1-5 bytes; payloads are at most 2 GB.
MAX_VARINT_BYTES = 5
MAX_PAYLOAD = 0x7FFFFFFF

#: Hub protocol names of the handshake (SPEC_NOTES: "json" | "messagepack").
JSON = "json"
MESSAGEPACK = "messagepack"
HUB_PROTOCOLS = (JSON, MESSAGEPACK)
#: The version of both hub protocols today's clients ask for.
PROTOCOL_VERSION = 1

#: Timers of today's servers (SPEC_NOTES: keep-alive 15 s, server timeout 30 s, handshake 15 s).
KEEP_ALIVE_INTERVAL = 15.0
CLIENT_TIMEOUT = 30.0
HANDSHAKE_TIMEOUT = 15.0

#: ASP.NET Core's default MaximumReceiveMessageSize: what the reference hub accepts.
DEFAULT_MAX_RECEIVE = 32 * 1024


class MessageType(IntEnum):
    """Type numbers of the ``v1`` profile (SPEC_NOTES.md)."""
    INVOCATION = 1
    STREAM_ITEM = 2
    COMPLETION = 3
    STREAM_INVOCATION = 4
    CANCEL_INVOCATION = 5
    PING = 6
    CLOSE = 7
    ACK = 8
    SEQUENCE = 9


class DraftMessageType(IntEnum):
    """Type numbers of the document ("JSON Encoding", "MessagePack encoding")."""
    INVOCATION = 1
    STREAM_ITEM = 2
    COMPLETION = 3
    STREAM_COMPLETION = 4
    CANCEL_INVOCATION = 5


class ResultKind(IntEnum):
    """MessagePack Completion "ResultKind". The document's descriptions of 2 and 3 are swapped
    (SPEC_NOTES erratum); its examples, and every implementation, use 2 = void, 3 = result."""
    ERROR = 1
    VOID = 2
    NON_VOID = 3


def type_numbers(profile: str) -> type[IntEnum]:
    return DraftMessageType if profile == "draft" else MessageType
