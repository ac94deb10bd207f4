"""What identifies the client behind a connection, read from its first frames, so that
``serve --check-clients`` credits a reconnect to the client that was cut and not to whatever
connects next (an application's other connection, another program on the same machine).

Per protocol, what a client says about itself in its opening frames:

- RabbitMQ Stream: PeerProperties, the client's properties (product, version, platform,
  connection_name, ...) as a whole;
- VibeMQ: the Connect headers but the password (clientVersion, supported-compression, ...);
- Micromessage2: the handshake's identity field;
- BlipMQ: the AUTH API key (shown only as a digest: it is a secret);
- SignalR: nothing a client sends tells two of its connections apart from another client's,
  so reconnects are credited by order, as before.

The identity is None where the protocol has none or the client never sent the frame; then the
checker falls back to order. It only ever narrows the choice: two connections with different
identities are never one client's reconnect.
"""
from __future__ import annotations

import hashlib

from wirecheck.conformance.captures.decode import feed_items
from wirecheck.reference_impl.core.errors import FrameError

#: Client frames read at most, looking for the one that names the client.
FIRST_FRAMES = 8


def _rmqs(frame):
    from wirecheck.reference_impl.rabbitmq_stream.requests import PeerProperties
    if isinstance(frame, PeerProperties):
        return "properties " + ", ".join(f"{k}={v}" for k, v in sorted(frame.properties.items()))
    return None


def _vibemq(frame):
    from wirecheck.reference_impl.vibemq.constants import CommandType
    if getattr(frame, "type", None) == CommandType.CONNECT:
        headers = {k: v for k, v in (frame.headers or {}).items() if k != "authPassword"}
        return "connect headers " + ", ".join(f"{k}={v}" for k, v in sorted(headers.items()))
    return None


def _mm2(frame):
    from wirecheck.reference_impl.micromessage2.codec import Handshake
    if isinstance(frame, Handshake):
        return f"identity {frame.identity!r}"
    return None


def _blipmq(frame):
    from wirecheck.reference_impl.blipmq.codec import Auth
    if isinstance(frame, Auth):
        return "api key sha256:" + hashlib.sha256(frame.api_key.encode()).hexdigest()[:12]
    return None


_NAMERS = {"rabbitmq-stream": _rmqs, "vibemq": _vibemq, "micromessage2": _mm2, "blipmq": _blipmq}


def client_identity(spec, client_bytes: bytes, profile=None) -> str | None:
    """The identity of the client that sent ``client_bytes`` (the start of its side of the
    connection), or None."""
    namer = _NAMERS.get(spec.id)
    if namer is None or not client_bytes:
        return None
    try:
        decoder = spec.capture_decoder(origin="client", profile=profile)
        items, _ = feed_items(decoder, client_bytes)
    except FrameError:
        return None
    for item in items[:FIRST_FRAMES]:
        if isinstance(item, FrameError):
            continue
        name = namer(item)
        if name is not None:
            return name
    return None
