"""The BlipMQ reference broker: asyncio I/O around :class:`~.session.BlipSession`.

With a data directory, QoS1 publishes (and subscriptions and settlements) go to the WAL in
``DATA_DIR/blipmq.wal`` and are recovered at start-up; without one, everything is in memory
("If QoS1 and WAL configured", blipmq-protocol.md "PUBLISH").
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

from ..core.limits import (DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
                           DEFAULT_MAX_HANDSHAKE_BYTES, DEFAULT_MAX_WRITE_BUFFER, ConnectionLimits)
from ..core.options import check_options
from ..core.server import SessionBroker, SessionServer
from .codec import BlipConfig
from .session import DEFAULT_API_KEY, BlipSession, SessionConfig
from .state import BrokerState
from .wal import FsyncPolicy, WriteAheadLog

log = logging.getLogger("wirecheck.blipmq")

DEFAULT_PORT = 5555   # the real daemon's default (SPEC_NOTES.md)
WAL_NAME = "blipmq.wal"
#: Seconds without a byte from an authenticated client before it is closed. PING is the
#: document's keep-alive ("PING / PONG"); it names no interval, so this is generous.
DEFAULT_IDLE_TIMEOUT = 300.0


@dataclass
class BrokerConfig:
    api_keys: tuple[str, ...] = (DEFAULT_API_KEY,)
    data_dir: str | None = None
    fsync: str = "always"
    retry_backoff: float = 0.1
    max_retries: int = 3
    max_queue: int = 1024
    #: Subscriptions outlive their connection (POLL names them by id), so they are bounded
    #: broker-wide; past it SUBSCRIBE gets NACK 400.
    max_subscriptions: int = 10_000
    limits: BlipConfig = field(default_factory=BlipConfig)
    # Hostile clients (core.limits.ConnectionLimits; wirecheck serve --option KEY=VALUE).
    max_connections: int | None = DEFAULT_MAX_CONNECTIONS
    handshake_timeout: float | None = DEFAULT_HANDSHAKE_TIMEOUT
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT
    max_handshake_bytes: int | None = DEFAULT_MAX_HANDSHAKE_BYTES
    max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER


class BlipBroker(SessionBroker):
    def __init__(self, config: BrokerConfig | None = None, host: str = "127.0.0.1",
                 port: int = 0, clock=time.monotonic) -> None:
        self.config = cfg = config or BrokerConfig()
        self.wal: WriteAheadLog | None = None
        if cfg.data_dir:
            os.makedirs(cfg.data_dir, exist_ok=True)
            FsyncPolicy.parse(cfg.fsync)   # fail early on a bad policy
            self.wal = WriteAheadLog(os.path.join(cfg.data_dir, WAL_NAME), cfg.fsync, clock)
        self.state = BrokerState(self.wal, retry_backoff=cfg.retry_backoff,
                                 max_retries=cfg.max_retries, max_queue=cfg.max_queue,
                                 max_subscriptions=cfg.max_subscriptions)
        self.recovery: dict = {}
        if self.wal is not None:
            self.recovery = self.wal.recover(self.state)
            log.info("recovered %s", self.recovery)
        session_config = SessionConfig(frozenset(cfg.api_keys), cfg.limits)
        self.server = SessionServer(lambda: BlipSession(self.state, session_config),
                                    host, port, clock, limits=ConnectionLimits.from_config(cfg))

    def close_storage(self) -> None:
        if self.wal is not None:
            self.wal.close()


def make_broker(host: str = "127.0.0.1", port: int = 0, *, data_dir: str | None = None,
                api_keys: tuple[str, ...] | None = None, **options) -> BlipBroker:
    """Registry factory (``wirecheck serve``, the embedded default target). BlipMQ's profiles
    share one wire format, so ``profile`` does not change the broker."""
    options.pop("profile", None)
    check_options("blipmq", options, BrokerConfig)
    cfg = BrokerConfig(data_dir=data_dir, **options)
    if api_keys:
        cfg.api_keys = tuple(api_keys)
    return BlipBroker(cfg, host, port)
