"""The Micromessage2 reference broker: asyncio I/O around :class:`~.session.MM2Session`, in
memory, one :class:`~.state.BrokerState` shared by every connection. Each connection's timer is
armed from its session's ``next_deadline()`` (the receiver's delayed ack), so nothing polls."""
from __future__ import annotations

import time
from typing import Optional

from ..core.server import SessionBroker, SessionServer
from .constants import DEFAULT_PORT
from .session import MM2Session, SessionConfig
from .state import BrokerState

__all__ = ["MM2Broker", "make_broker", "DEFAULT_PORT"]


class MM2Broker(SessionBroker):
    def __init__(self, config: Optional[SessionConfig] = None, host: str = "127.0.0.1",
                 port: int = 0, clock=time.monotonic, max_queue_length: int = 100_000) -> None:
        self.config = config or SessionConfig()
        self.state = BrokerState(max_queue_length)
        self.server = SessionServer(lambda: MM2Session(self.state, self.config), host, port, clock)


def make_broker(host: str = "127.0.0.1", port: int = 0, *, data_dir: Optional[str] = None,
                api_keys=None, profile: Optional[str] = None, ack_delay: float = 0.2,
                **options) -> MM2Broker:
    """Registry factory (``wirecheck serve``, the embedded default target). In memory:
    ``data_dir`` is accepted and ignored; the protocol has no credentials (``api_keys``
    ignored). ``profile``: ``document`` (default) or ``sharpmessaging``."""
    if options:
        raise ValueError(f"micromessage2 broker: unknown option(s) {', '.join(sorted(options))}")
    config = SessionConfig.for_profile(profile or "document", ack_delay=ack_delay)
    return MM2Broker(config, host, port)
