"""Bounds on everything a peer controls. Each protocol subclasses :class:`Limits` with its
document's values as defaults; profiles and the CLI can override them."""
from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True, slots=True)
class Limits:
    #: Largest value the frame's length prefix may declare.
    max_frame_size: int = 16 * 1024 * 1024

    def override(self, **values: int) -> "Limits":
        known = {f.name for f in fields(self)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown limit(s): {', '.join(sorted(unknown))}")
        return replace(self, **values)


#: Connections a reference broker serves at once. The hardening runs open 1,000 slowloris
#: connections next to 500 load clients, so the default leaves room for both.
DEFAULT_MAX_CONNECTIONS = 4096
#: Seconds a connection may take to finish its protocol's handshake (HELLO+AUTH, Connect, the
#: 3-step MM2 handshake). RabbitMQ uses 10 s; SignalR's servers 15 s.
DEFAULT_HANDSHAKE_TIMEOUT = 10.0
#: Bytes a client may send before its handshake completes: every handshake of the five
#: documents fits (a BlipMQ AUTH is at most 65,546 bytes), and an unauthenticated peer cannot
#: make the broker buffer a 16 MiB frame.
DEFAULT_MAX_HANDSHAKE_BYTES = 256 * 1024
#: Stop reading from a client whose unsent answers exceed this (it is not reading them) ...
DEFAULT_WRITE_HIGH_WATER = 4 * 1024 * 1024
#: ... and drop it when output caused by other connections (deliveries) piles up past this.
DEFAULT_MAX_WRITE_BUFFER = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """What one listener allows each peer, enforced by the asyncio glue
    (:class:`wirecheck.reference_impl.core.server.SessionServer`) for every protocol alike. ``None``
    switches a bound off (a protocol whose session runs the same timer itself, or whose state
    answers the connection limit with the document's error)."""
    max_connections: int | None = DEFAULT_MAX_CONNECTIONS
    #: Applies to sessions that say when they are past their handshake (``established``).
    handshake_timeout: float | None = DEFAULT_HANDSHAKE_TIMEOUT
    max_handshake_bytes: int | None = DEFAULT_MAX_HANDSHAKE_BYTES
    #: Close a connection that sent nothing for this long (protocols with a keep-alive frame).
    idle_timeout: float | None = None
    write_high_water: int = DEFAULT_WRITE_HIGH_WATER
    max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER

    def override(self, **values) -> "ConnectionLimits":
        known = {f.name for f in fields(self)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown connection limit(s): {', '.join(sorted(unknown))}")
        return replace(self, **values)

    @classmethod
    def from_config(cls, config, **fixed) -> "ConnectionLimits":
        """The limits a broker's config names (fields of the same name, which ``wirecheck serve
        --option KEY=VALUE`` sets), the defaults for the others; ``fixed`` wins over both."""
        values = {f.name: getattr(config, f.name) for f in fields(cls) if hasattr(config, f.name)}
        return cls(**{**values, **fixed})
