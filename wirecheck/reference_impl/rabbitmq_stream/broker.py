"""The RabbitMQ Stream reference broker: asyncio I/O around :class:`~.session.StreamSession`.

Streams live in a :class:`~.store.StreamStore`: segment files of Osiris chunks under
``DATA_DIR/streams/`` when a data directory is given (recovered at start-up; a confirm is sent
only after the chunk is written and synced per the fsync policy), in memory otherwise.

Hostile clients: the session closes a connection that has not sent Open within
``handshake_timeout`` (RabbitMQ: 10 s) and, once open, one silent for three heartbeat periods;
the glue (:class:`~reference_impl.core.limits.ConnectionLimits`) adds ``max_connections``,
``max_handshake_bytes`` and ``max_write_buffer``.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from ..core.durability import FsyncPolicy
from ..core.limits import (DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_HANDSHAKE_BYTES,
                           DEFAULT_MAX_WRITE_BUFFER, ConnectionLimits)
from ..core.options import check_options
from ..core.server import SessionBroker, SessionServer
from .codec import StreamConfig
from .constants import DEFAULT_FRAME_MAX, DEFAULT_HEARTBEAT
from .session import SessionConfig, StreamSession
from .state import DEFAULT_USERS, BrokerState
from .store import StreamStore

log = logging.getLogger("wirecheck.rabbitmq_stream")

#: How often heartbeats and timeouts are checked.
TICK_INTERVAL = 0.2


@dataclass
class BrokerConfig:
    users: dict = field(default_factory=lambda: dict(DEFAULT_USERS))
    data_dir: str | None = None
    fsync: str = "always"
    frame_max: int = DEFAULT_FRAME_MAX
    heartbeat: int = DEFAULT_HEARTBEAT
    profile: str = "current"
    handshake_timeout: float = 10.0
    advertised_host: str | None = None
    advertised_port: int | None = None
    max_connections: int | None = DEFAULT_MAX_CONNECTIONS
    max_handshake_bytes: int | None = DEFAULT_MAX_HANDSHAKE_BYTES
    max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER


class StreamBroker(SessionBroker):
    def __init__(self, config: BrokerConfig | None = None, host: str = "127.0.0.1",
                 port: int = 0, clock=time.monotonic) -> None:
        self.config = cfg = config or BrokerConfig()
        self.store = StreamStore(cfg.data_dir, FsyncPolicy.parse(cfg.fsync))
        if cfg.data_dir:
            log.info("recovered %d stream(s) from %s", len(self.store.streams), cfg.data_dir)
        self.state = BrokerState(self.store, users=cfg.users,
                                 advertised_host=cfg.advertised_host or host)
        limits = StreamConfig(max_frame_size=cfg.frame_max or StreamConfig().max_frame_size)
        self.session_config = SessionConfig(frame_max=cfg.frame_max, heartbeat=cfg.heartbeat,
                                            profile=cfg.profile, limits=limits,
                                            handshake_timeout=cfg.handshake_timeout)
        # The session runs the handshake timeout itself (tick), so the glue's is off.
        limits = ConnectionLimits.from_config(cfg, handshake_timeout=None)
        self.server = SessionServer(lambda: StreamSession(self.state, self.session_config),
                                    host, port, clock, tick_interval=TICK_INTERVAL, limits=limits)

    def started(self) -> None:
        self.state.advertised_port = self.config.advertised_port or self.server.port

    def advertise(self, host: str, port: int) -> None:
        """Where clients are told to connect (Open's properties, Metadata's brokers), when that
        is not the listening address (``serve --capture``: the recording relay in front)."""
        self.state.advertised_host, self.state.advertised_port = host, port

    def close_storage(self) -> None:
        self.store.close()


def make_broker(host: str = "127.0.0.1", port: int = 0, *, data_dir: str | None = None,
                api_keys: tuple[str, ...] | None = None, **options) -> StreamBroker:
    """Registry factory. ``api_keys`` are ``user:password`` pairs (a bare name means the
    password equals the name)."""
    if options.get("profile") is None:
        options.pop("profile", None)
    check_options("rabbitmq-stream", options, BrokerConfig)
    cfg = BrokerConfig(data_dir=data_dir, **options)
    if api_keys:
        cfg.users = {}
        for item in api_keys:
            user, sep, password = item.partition(":")
            cfg.users[user] = password if sep else user
    return StreamBroker(cfg, host, port)
