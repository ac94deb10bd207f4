"""The VibeMQ reference broker: asyncio I/O around :class:`~.session.VibeSession`, in memory.

One :class:`~.state.BrokerState` shared by every connection; each connection's timer is armed
from its session's ``next_deadline()`` (redelivery and TTL deadlines of the shared state), so
nothing polls. ``createdAt`` of QueueInfo is wall-clock time: the state gets the offset
between ``time.time()`` and the broker's monotonic clock.

Credentials: ``api_keys`` are accepted ``authPassword`` values, or ``user:password`` pairs
(``authUsername`` + ``authPassword``, as the real ConnectHandler reads them). Without any, the
development password :data:`~.session.DEFAULT_PASSWORD` (``"vibemq"``) is accepted;
``require_auth=False`` accepts every Connect (the real server without authentication).

Short timings for tests and the black-box suite: ``ack_timeout``, ``retry_base_delay``,
``retry_max_delay`` (seconds); limits: ``max_connections``, ``max_messages_per_second``,
``max_queues``, ``max_inflight``, ``max_subscriptions``, ``max_frame_size``; hostile clients
(:class:`~reference_impl.core.limits.ConnectionLimits`): ``handshake_timeout`` (Connect must
succeed within it), ``idle_timeout`` (Ping is the document's keep-alive), ``max_handshake_bytes``,
``max_write_buffer``. ``max_connections`` is enforced by the state, which answers
CONNECTION_LIMIT as the real server does, so the glue's own cap is off.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

from ..core.limits import (DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
                           DEFAULT_MAX_HANDSHAKE_BYTES, DEFAULT_MAX_WRITE_BUFFER, ConnectionLimits)
from ..core.options import check_options
from ..core.server import SessionBroker, SessionServer
from .codec import VibeLimits
from .constants import COMPRESSION_BY_NAME, DEFAULT_MAX_BODY, DEFAULT_MAX_DECOMPRESSED, DEFAULT_PORT
from .session import DEFAULT_PASSWORD, Credentials, SessionConfig, VibeSession
from .state import BrokerState, StateConfig

__all__ = ["BrokerConfig", "VibeBroker", "make_broker", "DEFAULT_PORT", "DEFAULT_PASSWORD"]

#: Seconds without a byte from a connected client before it is closed (the document names no
#: interval for its Ping keep-alive, so this is generous).
DEFAULT_IDLE_TIMEOUT = 300.0


@dataclass
class BrokerConfig:
    profile: str = "document"
    api_keys: tuple[str, ...] = (DEFAULT_PASSWORD,)
    require_auth: bool = True
    #: Names the server accepts, e.g. ("brotli", "gzip"); () disables compression.
    compressions: tuple[str, ...] = ("brotli", "gzip")
    compression_threshold: int = 1024
    ack_timeout: float = 30.0
    retry_base_delay: float = 2.0
    retry_max_delay: float = 120.0
    auto_create: bool = True
    #: The real server's MaxConnections is 1,000; the kit's load and slowloris runs need more.
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_messages_per_second: Optional[int] = 1000
    max_queues: int = 10_000
    max_inflight: int = 10_000
    max_subscriptions: int = 1024
    max_frame_size: int = DEFAULT_MAX_BODY
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
    data_dir: Optional[str] = None          # accepted for the registry's signature; unused
    handshake_timeout: Optional[float] = DEFAULT_HANDSHAKE_TIMEOUT
    idle_timeout: Optional[float] = DEFAULT_IDLE_TIMEOUT
    max_handshake_bytes: Optional[int] = DEFAULT_MAX_HANDSHAKE_BYTES
    max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER

    def session_config(self) -> SessionConfig:
        credentials = Credentials.from_api_keys(self.api_keys) if self.require_auth else Credentials(frozenset())
        flags = tuple(COMPRESSION_BY_NAME[n.strip().lower()] for n in self.compressions)
        return SessionConfig(
            profile=self.profile, credentials=credentials, compressions=flags,
            compression_threshold=self.compression_threshold,
            max_messages_per_second=self.max_messages_per_second,
            max_subscriptions=self.max_subscriptions,
            limits=VibeLimits(max_frame_size=self.max_frame_size,
                              max_decompressed=self.max_decompressed))

    def state_config(self) -> StateConfig:
        return StateConfig(ack_timeout=self.ack_timeout, retry_base_delay=self.retry_base_delay,
                           retry_max_delay=self.retry_max_delay, auto_create=self.auto_create,
                           max_queues=self.max_queues, max_connections=self.max_connections,
                           max_inflight=self.max_inflight)


class VibeBroker(SessionBroker):
    def __init__(self, config: Optional[BrokerConfig] = None, host: str = "127.0.0.1",
                 port: int = 0, clock=time.monotonic) -> None:
        self.config = cfg = config or BrokerConfig()
        self.state = BrokerState(cfg.state_config(), wall_offset=time.time() - clock())
        self.session_config = cfg.session_config()
        self.server = SessionServer(lambda: VibeSession(self.state, self.session_config),
                                    host, port, clock,
                                    limits=ConnectionLimits.from_config(cfg, max_connections=None))


def make_broker(host: str = "127.0.0.1", port: int = 0, *, data_dir: Optional[str] = None,
                api_keys: Optional[tuple[str, ...]] = None, profile: Optional[str] = None,
                **options) -> VibeBroker:
    """Registry factory (``wirecheck serve``, the embedded default target). The broker keeps
    everything in memory (``data_dir`` is accepted and ignored). ``profile``: ``document``
    (default), ``vibemq-1.8`` or ``vibemq-1.0``."""
    check_options("vibemq", options, BrokerConfig)
    cfg = BrokerConfig(data_dir=data_dir, **options)
    if profile:
        cfg.profile = profile
    if api_keys:
        cfg.api_keys = tuple(api_keys)
    if cfg.profile == "vibemq-1.0":
        cfg.compressions = ()
    return VibeBroker(cfg, host, port)
