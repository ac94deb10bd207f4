"""Hub messages as values, the same for both encodings and both profiles.

They are treated as immutable but not declared ``frozen``: a frozen dataclass sets each field
through ``object.__setattr__``, which made building a message the largest cost of decoding a
small one (3x slower; benchmarks/bench_signalr_decode.py).

A field a profile does not have keeps its default (``headers`` None, ``stream_ids`` None,
``nonblocking`` False); the encoders refuse a message the profile cannot express. ``None``
means "absent on the wire", which is not the same as a JSON ``null`` value: a Completion's
result is carried with ``has_result`` for that reason (``result=None, has_result=True`` is
``"result": null``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


@dataclass(slots=True)
class HandshakeRequest:
    """The first message from the client, always JSON ("Overview"; SPEC_NOTES: ``version``)."""
    protocol: str
    version: Optional[int] = 1


@dataclass(slots=True)
class HandshakeResponse:
    """``{}`` on success, ``{"error": "..."}`` before the server closes (SPEC_NOTES)."""
    error: Optional[str] = None


@dataclass(slots=True)
class Invocation:
    """Type 1. ``invocation_id`` None: non-blocking (v1); the draft marks it with
    ``nonblocking`` and always carries an id."""
    target: str
    arguments: list
    invocation_id: Optional[str] = None
    headers: Optional[dict] = None
    stream_ids: Optional[list] = None
    nonblocking: bool = False


@dataclass(slots=True)
class StreamItem:
    """Type 2."""
    invocation_id: str
    item: Any
    headers: Optional[dict] = None


@dataclass(slots=True)
class Completion:
    """Type 3: ``error`` set, or a result (``has_result``), or neither (void)."""
    invocation_id: str
    result: Any = None
    error: Optional[str] = None
    has_result: bool = False
    headers: Optional[dict] = None

    @classmethod
    def with_result(cls, invocation_id: str, result: Any, headers: Optional[dict] = None) -> "Completion":
        return cls(invocation_id, result, None, True, headers)

    @classmethod
    def with_error(cls, invocation_id: str, error: str, headers: Optional[dict] = None) -> "Completion":
        return cls(invocation_id, None, error, False, headers)


@dataclass(slots=True)
class StreamInvocation:
    """Type 4 in v1: a call whose results come as StreamItems, then a Completion."""
    invocation_id: str
    target: str
    arguments: list
    headers: Optional[dict] = None
    stream_ids: Optional[list] = None


@dataclass(slots=True)
class StreamCompletion:
    """Type 4 in the draft only: the end of a stream, with an optional error."""
    invocation_id: str
    error: Optional[str] = None


@dataclass(slots=True)
class CancelInvocation:
    """Type 5."""
    invocation_id: str
    headers: Optional[dict] = None


@dataclass(slots=True)
class Ping:
    """Type 6 (v1): keep-alive."""


@dataclass(slots=True)
class Close:
    """Type 7 (v1). ``allow_reconnect`` None: absent."""
    error: Optional[str] = None
    allow_reconnect: Optional[bool] = None


@dataclass(slots=True)
class Ack:
    """Type 8 (v1, stateful reconnect)."""
    sequence_id: int


@dataclass(slots=True)
class Sequence:
    """Type 9 (v1, stateful reconnect)."""
    sequence_id: int


HUB_MESSAGES = (Invocation, StreamItem, Completion, StreamInvocation, StreamCompletion,
                CancelInvocation, Ping, Close, Ack, Sequence)
HANDSHAKE_MESSAGES = (HandshakeRequest, HandshakeResponse)

#: Messages a profile can express.
PROFILE_MESSAGES = {
    "v1": (Invocation, StreamItem, Completion, StreamInvocation, CancelInvocation, Ping, Close,
           Ack, Sequence),
    "draft": (Invocation, StreamItem, Completion, StreamCompletion, CancelInvocation),
}


def invocation_id_of(message) -> Optional[str]:
    return getattr(message, "invocation_id", None)
