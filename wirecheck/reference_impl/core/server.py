"""asyncio glue around sans-IO sessions, shared by every protocol's broker.

A session object needs ``receive(data, now) -> list[bytes]`` and ``closed``; optionally
``connection_lost()``, ``attach(push, close)`` (for bytes caused by other connections, such as
a delivery after someone else's publish) and ``tick(now) -> list[bytes]`` (heartbeats and
timeouts, called every ``tick_interval`` seconds, or, when the session has
``next_deadline() -> float | None``, at the time it names: one timer per connection and no
polling of idle ones). The glue feeds it, writes what it returns, and closes the transport
when the session says so. It also runs a server in a background thread for the pytest
fixture and the CLI's ``run``.

Bounds on hostile peers (:class:`~reference_impl.core.limits.ConnectionLimits`, the same for
every protocol): a connection past ``max_connections`` is closed before any session exists;
a session with an ``established`` property must reach it within ``handshake_timeout`` seconds
and ``max_handshake_bytes`` bytes (slowloris: silence, or one byte every few seconds); with
``idle_timeout`` a connection that sends nothing for that long is closed; a peer that does not
read its answers stops being read (``write_high_water``) and is dropped when deliveries pushed
by other connections pile up past ``max_write_buffer``. One timer per connection for the
handshake and one for idleness, re-armed lazily: nothing polls idle connections.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Callable

from .limits import DEFAULT_WRITE_HIGH_WATER, ConnectionLimits

log = logging.getLogger("wirecheck.server")

#: Stop reading from a client whose unsent answers exceed this (it is not reading them).
WRITE_HIGH_WATER = DEFAULT_WRITE_HIGH_WATER
#: Pending connections the kernel queues for accept() (asyncio's default of 100 makes a burst
#: of a thousand clients wait for SYN retransmissions).
LISTEN_BACKLOG = 1024


class SessionProtocol(asyncio.Protocol):
    def __init__(self, make_session: Callable[[], object], clock: Callable[[], float],
                 connections: set, limits: ConnectionLimits | None = None) -> None:
        self._make_session = make_session
        self._clock = clock
        self._connections = connections
        self.limits = limits or ConnectionLimits()
        self.transport: asyncio.Transport | None = None
        self.session = None
        #: Why the glue (not the session) ended the connection, for logs and tests.
        self.close_reason: str | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._guards: list[asyncio.TimerHandle] = []
        self._received = 0
        self._last_received = 0.0

    def connection_made(self, transport) -> None:
        self.transport = transport
        limits = self.limits
        cap = limits.max_connections
        if cap is not None and len(self._connections) >= cap:
            # Refused before any session or buffer exists: a clean close (FIN), the others
            # are not touched.
            self.close_reason = "connection limit"
            log.warning("refusing a connection: %d connections open (max_connections)", cap)
            transport.close()
            return
        transport.set_write_buffer_limits(high=limits.write_high_water)
        self.session = self._make_session()
        self._connections.add(self)
        attach = getattr(self.session, "attach", None)
        if attach is not None:
            attach(self._push, transport.close)
        self._last_received = self._clock()
        loop = asyncio.get_running_loop()
        if limits.handshake_timeout is not None and hasattr(self.session, "established"):
            self._guards.append(loop.call_later(limits.handshake_timeout, self._handshake_due))
        if limits.idle_timeout is not None:
            self._guards.append(loop.call_later(limits.idle_timeout, self._idle_due))
        self._schedule()

    # -- guards (ConnectionLimits) -------------------------------------------------------------

    def _end(self, reason: str) -> None:
        """Close a connection the session did not close itself."""
        if self.transport is None or self.transport.is_closing():
            return
        self.close_reason = reason
        log.info("closing a connection: %s", reason)
        if self.transport.get_write_buffer_size() > self.limits.write_high_water:
            self.transport.abort()             # it is not reading: do not wait to flush
        else:
            self.transport.close()

    def _handshake_due(self) -> None:
        if not self.session.established:
            self._end(f"no handshake within {self.limits.handshake_timeout:g} s")

    def _idle_due(self) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        left = self._last_received + self.limits.idle_timeout - self._clock()
        if left > 0:                           # something came meanwhile: look again later
            self._guards.append(asyncio.get_running_loop().call_later(left, self._idle_due))
            return
        self._end(f"nothing received for {self.limits.idle_timeout:g} s")

    def _check_handshake_bytes(self, size: int) -> bool:
        """False (and the connection closed) when a peer still in its handshake has sent more
        than ``max_handshake_bytes``."""
        cap = self.limits.max_handshake_bytes
        if cap is None or not hasattr(self.session, "established") or self.session.established:
            return True
        self._received += size
        if self._received <= cap:
            return True
        self._end(f"more than {cap} bytes before the handshake completed")
        return False

    def _check_write_buffer(self) -> None:
        if self.transport.get_write_buffer_size() > self.limits.max_write_buffer:
            self._end(f"more than {self.limits.max_write_buffer} bytes unread by the peer")

    def _schedule(self) -> None:
        """Arm this connection's timer for the session's next deadline (if it has one)."""
        next_deadline = getattr(self.session, "next_deadline", None)
        if next_deadline is None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        when = next_deadline()
        if when is None or self.transport is None or self.transport.is_closing():
            return
        self._timer = asyncio.get_running_loop().call_later(max(0.0, when - self._clock()), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.tick()

    def _push(self, out: list[bytes]) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(out))
            self._check_write_buffer()
            self._schedule()          # output counts for the session's timers (keep-alive)

    def tick(self) -> None:
        tick = getattr(self.session, "tick", None)
        if tick is None or self.transport is None or self.transport.is_closing():
            return
        out = tick(self._clock())
        if out:
            self.transport.write(b"".join(out))
            self._check_write_buffer()
        if self.session.closed:
            self.transport.close()
        else:
            self._schedule()

    def data_received(self, data: bytes) -> None:
        if self.session is None or self.transport.is_closing():
            return                    # refused, or closed by a guard: nothing more is read
        now = self._last_received = self._clock()
        if not self._check_handshake_bytes(len(data)):
            return
        out = self.session.receive(data, now)
        if out:
            self.transport.write(b"".join(out))
        if self.session.closed:
            self.transport.close()
        else:
            self._schedule()

    def pause_writing(self) -> None:
        self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.transport.resume_reading()

    def connection_lost(self, exc) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for guard in self._guards:
            guard.cancel()
        self._guards.clear()
        if self.session is None:      # refused at the connection limit
            return
        self._connections.discard(self)
        hook = getattr(self.session, "connection_lost", None)
        if hook is not None:
            hook()


class SessionServer:
    """A TCP server whose connections each get a session from ``make_session``."""

    def __init__(self, make_session: Callable[[], object], host: str = "127.0.0.1",
                 port: int = 0, clock: Callable[[], float] = time.monotonic,
                 tick_interval: float | None = None,
                 limits: ConnectionLimits | None = None) -> None:
        self.make_session = make_session
        self.tick_interval = tick_interval
        self.limits = limits or ConnectionLimits()
        self._ticker: asyncio.Task | None = None
        self.host = host
        self.port = port
        self.clock = clock
        self.connections: set[SessionProtocol] = set()
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> "SessionServer":
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: SessionProtocol(self.make_session, self.clock, self.connections, self.limits),
            self.host, self.port, reuse_address=True, backlog=LISTEN_BACKLOG)
        self.port = self._server.sockets[0].getsockname()[1]
        if self.tick_interval:
            self._ticker = loop.create_task(self._tick_forever())
        return self

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(self.tick_interval)
            for conn in list(self.connections):
                conn.tick()

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self._server is not None:
            self._server.close()
            for conn in list(self.connections):
                conn.transport.abort()
            await self._server.wait_closed()

    async def serve_forever(self) -> None:
        await self._server.serve_forever()


class SessionBroker:
    """Base of the reference brokers: a :class:`SessionServer` in ``self.server`` plus storage
    closed after the server stops (``close_storage``)."""

    server: SessionServer

    async def start(self):
        await self.server.start()
        self.started()
        return self

    def started(self) -> None:
        """Hook: the listening port is known."""

    async def stop(self) -> None:
        await self.server.stop()
        self.close_storage()

    def close_storage(self) -> None:
        """Hook: flush and close what the broker persists."""

    @property
    def host(self) -> str:
        return self.server.host

    @property
    def port(self) -> int:
        return self.server.port


class ThreadedServer:
    """Runs a server (anything with async ``start()``/``stop()`` and ``host``/``port``, such as
    :class:`SessionServer` or a protocol's broker) on its own event loop in a daemon thread."""

    def __init__(self, server) -> None:
        self.server = server
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                        name=f"wirecheck-server-{id(server):x}")

    def start(self, timeout: float = 10.0) -> "ThreadedServer":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(timeout)
        return self

    @property
    def address(self) -> tuple[str, int]:
        return self.server.host, self.server.port

    def stop(self, timeout: float = 10.0) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(timeout)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)

    def __enter__(self) -> "ThreadedServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def raise_open_file_limit() -> int:
    """Raise this process's soft RLIMIT_NOFILE to its hard limit and return it: a broker that
    serves thousands of connections (``max_connections``) needs a descriptor for each, and the
    soft limit is often 1,024. A platform without ``resource`` keeps its limit (returns 0)."""
    try:
        import resource
    except ImportError:
        return 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft
