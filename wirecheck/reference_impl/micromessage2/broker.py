"""The Micromessage2 reference broker: asyncio I/O around :class:`~.session.MM2Session`, in
memory, one :class:`~.state.BrokerState` shared by every connection. Each connection's timer is
armed from its session's ``next_deadline()`` (the receiver's delayed ack), so nothing polls.

Hostile clients (:class:`~reference_impl.core.limits.ConnectionLimits`, ``wirecheck serve
--option KEY=VALUE``): ``max_connections``, ``handshake_timeout`` (the 3-step handshake must
complete within it), ``max_handshake_bytes``, ``max_write_buffer``; ``idle_timeout`` is off by
default, because the document has no keep-alive frame: a subscriber without an ack extension
legitimately sends nothing after subscribing. Queues: ``max_queue_length`` messages per queue,
``max_pending`` messages waiting for a slow subscriber."""
from __future__ import annotations

import time
from typing import Optional

from ..core.limits import ConnectionLimits
from ..core.options import check_options
from ..core.server import SessionBroker, SessionServer
from .constants import DEFAULT_PORT
from .session import MM2Session, SessionConfig
from .state import BrokerState

__all__ = ["MM2Broker", "make_broker", "DEFAULT_PORT"]


class MM2Broker(SessionBroker):
    def __init__(self, config: Optional[SessionConfig] = None, host: str = "127.0.0.1",
                 port: int = 0, clock=time.monotonic, max_queue_length: int = 100_000,
                 limits: Optional[ConnectionLimits] = None) -> None:
        self.config = config or SessionConfig()
        self.state = BrokerState(max_queue_length)
        self.server = SessionServer(lambda: MM2Session(self.state, self.config), host, port, clock,
                                    limits=limits)


def make_broker(host: str = "127.0.0.1", port: int = 0, *, data_dir: Optional[str] = None,
                api_keys=None, profile: Optional[str] = None, ack_delay: float = 0.2,
                max_queue_length: int = 100_000, max_pending: int = SessionConfig.max_pending,
                first_sequence: int = SessionConfig.first_sequence, **options) -> MM2Broker:
    """Registry factory (``wirecheck serve``, the embedded default target). In memory:
    ``data_dir`` is accepted and ignored; the protocol has no credentials (``api_keys``
    ignored). ``profile``: ``document`` (default) or ``sharpmessaging``; other options are
    :class:`ConnectionLimits` fields."""
    # The settings taken by name above are known too: a misspelt one is matched to them.
    check_options("micromessage2", options, ConnectionLimits,
                  ("profile", "ack_delay", "max_queue_length", "max_pending", "first_sequence"))
    # first_sequence: where each connection's MESSAGE count starts (1; near 65535 to reach the
    # wrap soon, or to play a server that starts elsewhere, which the document allows)
    config = SessionConfig.for_profile(profile or "document", ack_delay=ack_delay,
                                       max_pending=max_pending, first_sequence=int(first_sequence))
    return MM2Broker(config, host, port, max_queue_length=max_queue_length,
                     limits=ConnectionLimits(**options))
