"""The SignalR reference hub server: asyncio I/O around :class:`~.session.HubSession`.

One broker serves the same hub two ways (SPEC_NOTES.md, SignalR, "Transport used by real
clients"):

- HTTP + WebSocket on ``port`` (aiohttp), as today's clients expect:
  ``POST {hub}/negotiate[?negotiateVersion=N]`` answers version 1 (``connectionToken`` +
  ``connectionId``) when the client asks for 1 or more, version 0 (``connectionId`` only, which
  is then the id) otherwise; ``GET {hub}?id=<token>`` upgrades to the WebSocket of that
  negotiation (a token is used once, and expires when no WebSocket claims it in time);
  ``GET {hub}`` without ``id`` is a skip-negotiation connection (signalrcore adds
  ``?connectionId=<random>`` there, which is accepted as the same thing). Each WebSocket message
  is fed to the session as bytes; each record the session answers goes out as its own message,
  binary once the handshake chose MessagePack, text before and for JSON;
- raw TCP on ``raw_port`` through :class:`~reference_impl.core.server.SessionServer`: the
  document's hub protocol on a plain stream (handshake, then 0x1E- or VarInt-framed records).

The request shapes the HTTP side tolerates (no Content-Type, ``application/octet-stream``,
``application/json``, a Host without port, ``Connection: close``) are those of
signalr-real-clients.md. Time comes from ``clock`` (monotonic seconds); each WebSocket has one
timer, armed at the session's ``next_deadline()``.

Hostile clients: ``max_connections`` bounds each listener (HTTP and raw TCP); a connection past
it is closed at once. An HTTP connection that has not sent a whole request within
``http_idle_timeout`` seconds (slowloris), or idles that long between requests, is closed
(aiohttp's keep-alive timer, which also runs before the first request). Once upgraded, and on
the raw port, the session's handshake timeout (15 s) and client timeout (30 s) apply; the raw
port's glue adds ``max_handshake_bytes`` and ``max_write_buffer``
(:class:`~reference_impl.core.limits.ConnectionLimits`).
"""
from __future__ import annotations

import asyncio
import collections
import logging
import secrets
import time
from dataclasses import dataclass, fields
from typing import Callable, Optional

from aiohttp import WSMsgType, web

from ..core.limits import (DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_HANDSHAKE_BYTES,
                           DEFAULT_MAX_WRITE_BUFFER, ConnectionLimits)
from ..core.options import check_options
from ..core.server import LISTEN_BACKLOG, SessionServer
from .hub import HubState
from .session import HubConfig, HubSession

log = logging.getLogger("wirecheck.signalr")

DEFAULT_HUB_PATH = "/hub"
#: A negotiated connection whose WebSocket does not arrive within this many seconds is dropped
#: (ASP.NET Core keeps an unclaimed connection for a few seconds; the kit is more patient).
NEGOTIATE_TTL = 30.0
#: At most this many negotiations wait for their WebSocket; past it, negotiate answers 503.
MAX_PENDING_NEGOTIATIONS = 10_000
#: A WebSocket whose unsent output exceeds this stops being read (its own answers) ...
WRITE_HIGH_WATER = 1024 * 1024
#: ... and is closed when output caused by other connections piles up past this.
WRITE_HARD_LIMIT = 4 * WRITE_HIGH_WATER
#: Lower bound of the largest WebSocket message accepted (see ``_websocket``).
WS_MAX_MESSAGE = 1024 * 1024
#: How many ended WebSocket sessions ``HubBroker.finished`` keeps.
FINISHED_HISTORY = 64
#: How long stop() lets open WebSockets finish their close handshake.
SHUTDOWN_TIMEOUT = 2.0
#: A WebSocket send that cannot complete in this many seconds (the peer stopped reading)
#: aborts the connection.
WRITE_TIMEOUT = 30.0
#: WebSocket close code of a peer that does not read (RFC 6455 1008, policy violation).
_CLOSE_SLOW_READER = 1008
#: Seconds an HTTP connection may take to send a request (and may idle between requests):
#: today's servers' handshake timeout (SPEC_NOTES, SignalR: 15 s).
HTTP_IDLE_TIMEOUT = 15.0


@dataclass
class BrokerConfig:
    """Server options; the session's own (timers, limits, profile) are in ``session``."""
    session: HubConfig
    hub_path: str = DEFAULT_HUB_PATH
    negotiate_ttl: float = NEGOTIATE_TTL
    max_pending: int = MAX_PENDING_NEGOTIATIONS
    write_high_water: int = WRITE_HIGH_WATER
    write_hard_limit: int = WRITE_HARD_LIMIT
    write_timeout: float = WRITE_TIMEOUT
    #: Each listener (HTTP and raw TCP) serves at most this many connections.
    max_connections: Optional[int] = DEFAULT_MAX_CONNECTIONS
    http_idle_timeout: float = HTTP_IDLE_TIMEOUT
    #: Raw TCP: bytes before the handshake completes, and unread output, per connection.
    max_handshake_bytes: Optional[int] = DEFAULT_MAX_HANDSHAKE_BYTES
    max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER
    #: How a WebSocket for a token the server never issued (or already used) is refused:
    #: "http" (404 before the upgrade, as ASP.NET Core does) or "close" (the upgrade accepted,
    #: then the WebSocket closed with 4404, as some other servers do). Both are refusals.
    refuse_unknown_id: str = "http"


def _new_id() -> str:
    """22 URL-safe characters, the length ASP.NET Core uses for ids and tokens."""
    return secrets.token_urlsafe(16)


class Negotiations:
    """Tokens handed out by negotiate and not yet claimed by a WebSocket: single use, with an
    expiry, and bounded in number. Expired entries are purged whenever the table is touched,
    so no timer is needed."""

    def __init__(self, ttl: float, limit: int, clock: Callable[[], float]) -> None:
        self.ttl, self.limit, self.clock = ttl, limit, clock
        self._pending: "collections.OrderedDict[str, tuple[str, float]]" = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._pending)

    def _purge(self, now: float) -> None:
        while self._pending:
            token, (_, expires) = next(iter(self._pending.items()))
            if expires > now:
                break
            del self._pending[token]

    def add(self, token: str, connection_id: str) -> bool:
        now = self.clock()
        self._purge(now)
        if len(self._pending) >= self.limit:
            return False
        self._pending[token] = (connection_id, now + self.ttl)
        return True

    def claim(self, token: str) -> Optional[str]:
        """The connection id of ``token``, or None (unknown, used or expired)."""
        self._purge(self.clock())
        entry = self._pending.pop(token, None)
        return None if entry is None else entry[0]


class _Refused(asyncio.Protocol):
    """A connection past ``max_connections`` on the HTTP port: closed before any handler."""

    def connection_made(self, transport) -> None:
        transport.close()


class WebSocketConnection:
    """One hub connection over a WebSocket: feeds the session, writes its records, arms its
    timer. Writes go through a bounded queue drained by one writer task (aiohttp's sends are
    coroutines, while ``push`` from another connection is a plain call)."""

    def __init__(self, ws: web.WebSocketResponse, session: HubSession, clock: Callable[[], float],
                 config: BrokerConfig, abort: Callable[[], None]) -> None:
        self.ws, self.session, self.clock, self.config = ws, session, clock, config
        self._abort = abort
        self.loop = asyncio.get_running_loop()
        self._queue: collections.deque = collections.deque()
        self._queued = 0
        self._wake = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self._closing = False
        self._close_code = 1000
        self._timer: Optional[asyncio.TimerHandle] = None
        self._tick_deferred = False
        self._writer = self.loop.create_task(self._write_loop())
        session.attach(self.push, self.close)

    # -- output ------------------------------------------------------------------------------

    def _enqueue(self, records: list[bytes]) -> None:
        binary = bool(self.session.binary)
        for record in records:
            self._queue.append((record, binary))
            self._queued += len(record)
        if records:
            self._drained.clear()
            self._wake.set()

    def push(self, records: list[bytes]) -> None:
        """Output caused by another connection (session.attach)."""
        if self._closing:
            return
        self._enqueue(records)
        if self._queued > self.config.write_hard_limit:
            log.warning("closing a WebSocket that does not read (%d bytes queued)", self._queued)
            self._queue.clear()
            self._queued = 0
            self._close_code = _CLOSE_SLOW_READER
            self.close()
            return
        self._after_session()

    def close(self) -> None:
        """Close once what is queued has been written."""
        self._closing = True
        self._wake.set()

    async def _write_loop(self) -> None:
        ws = self.ws
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                while self._queue:
                    record, binary = self._queue.popleft()
                    self._queued -= len(record)
                    send = ws.send_bytes(record) if binary else ws.send_str(record.decode("utf-8"))
                    try:
                        await asyncio.wait_for(send, self.config.write_timeout)
                    except asyncio.TimeoutError:
                        log.warning("aborting a WebSocket that stopped reading")
                        self._closing = True
                        self._abort()
                        return
                    if self._tick_deferred and self._queued <= self.config.write_high_water:
                        self._tick_deferred = False
                        self._on_timer()
                self._drained.set()
                if self._closing:
                    await ws.close(code=self._close_code)
                    return
        except (ConnectionError, RuntimeError, asyncio.CancelledError):
            # The peer went away (aiohttp raises ConnectionResetError/RuntimeError on a closing
            # socket); the read loop sees the end and cleans up.
            self._drained.set()
            if not ws.closed:
                self.loop.create_task(ws.close(code=1011))

    # -- input -------------------------------------------------------------------------------

    async def run(self) -> None:
        self._after_session()                    # arm the handshake timeout
        try:
            async for msg in self.ws:
                if msg.type == WSMsgType.TEXT:
                    data = msg.data.encode("utf-8")
                elif msg.type == WSMsgType.BINARY:
                    data = msg.data
                else:                            # ERROR; CLOSE/CLOSING end the iteration
                    break
                if self._closing:
                    continue
                self._enqueue(self.session.receive(data, self.clock()))
                self._after_session()
                if self._closing:
                    # The session ended on this message (the client's Close, or an error). Stop
                    # reading here so that the writer's ws.close() reads up to the client's close
                    # frame itself: called while this loop waits in receive(), aiohttp closes
                    # the socket without waiting for it, and a close frame that arrives a moment
                    # later makes the kernel answer with a reset (RFC 6455 7.1.1 wants the
                    # handshake finished before the TCP close).
                    break
                if self._queued > self.config.write_high_water:
                    await self._drained.wait()   # backpressure: stop reading a slow reader
        finally:
            self._cancel_timer()
            self.session.connection_lost()
            if not self._closing:
                self._closing = True
                self._wake.set()
            try:
                await asyncio.wait_for(asyncio.shield(self._writer), 5.0)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._writer.cancel()

    # -- timers ------------------------------------------------------------------------------

    def _after_session(self) -> None:
        if self.session.closed:
            self._cancel_timer()
            self.close()
            return
        self._arm()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self) -> None:
        self._cancel_timer()
        deadline = self.session.next_deadline()
        if deadline is None or self._closing:
            return
        self._timer = self.loop.call_later(max(0.0, deadline - self.clock()), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._closing:
            return
        if self._queued > self.config.write_high_water:
            # The peer is not reading: stream items (and Pings) wait until the queue drains
            # below the high-water mark (the writer ticks again then), so it stays bounded.
            self._tick_deferred = True
            return
        self._enqueue(self.session.tick(self.clock()))
        self._after_session()


class HubBroker:
    """HTTP/WebSocket on ``port`` plus raw TCP on ``raw_port``; ``start()``/``stop()`` as any
    broker (:class:`~reference_impl.core.server.ThreadedServer` runs it in a thread)."""

    def __init__(self, config: BrokerConfig, host: str = "127.0.0.1", port: int = 0,
                 raw_port: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.host = host
        self.port = port
        self.clock = clock
        self.state = HubState()
        self.negotiations = Negotiations(config.negotiate_ttl, config.max_pending, clock)
        # The session runs its own handshake and client timeouts.
        limits = ConnectionLimits.from_config(config, handshake_timeout=None)
        self.server = SessionServer(
            lambda: HubSession(config.session, transport="tcp", state=self.state),
            host, raw_port, clock, limits=limits)
        self._http: Optional[asyncio.AbstractServer] = None
        self.websockets: set[WebSocketConnection] = set()
        #: The sessions of the last WebSocket connections that ended (their ``errors`` say why
        #: the hub closed them): for tests and for ``serve`` diagnostics.
        self.finished: collections.deque[HubSession] = collections.deque(maxlen=FINISHED_HISTORY)
        self._runner: Optional[web.AppRunner] = None
        path = "/" + config.hub_path.strip("/")
        self.hub_path = path
        app = web.Application()
        app.router.add_post(path + "/negotiate", self._negotiate)
        app.router.add_get(path, self._websocket)
        self.app = app

    @property
    def raw_port(self) -> int:
        return self.server.port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{self.hub_path}"

    async def start(self) -> "HubBroker":
        await self.server.start()
        runner = None
        try:
            runner = web.AppRunner(self.app, access_log=None, handle_signals=False,
                                   shutdown_timeout=SHUTDOWN_TIMEOUT,
                                   keepalive_timeout=self.config.http_idle_timeout)
            await runner.setup()
            # The listener is ours rather than a TCPSite's, so that a connection past the
            # limit never reaches aiohttp.
            self._http = await asyncio.get_running_loop().create_server(
                lambda: self._http_protocol(runner.server), self.host, self.port,
                reuse_address=True, backlog=LISTEN_BACKLOG)
        except BaseException:
            await self.server.stop()
            if runner is not None:
                await runner.cleanup()
            raise
        self._runner = runner
        self.port = self._http.sockets[0].getsockname()[1]
        return self

    def _http_protocol(self, server: web.Server) -> asyncio.BaseProtocol:
        cap = self.config.max_connections
        if cap is not None and len(server.connections) >= cap:
            log.warning("refusing an HTTP connection: %d open (max_connections)", cap)
            return _Refused()
        return server()

    async def stop(self) -> None:
        await self.server.stop()
        if self._http is not None:
            self._http.close()
            self._http = None
        for conn in list(self.websockets):
            conn.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- HTTP --------------------------------------------------------------------------------

    async def _negotiate(self, request: web.Request) -> web.Response:
        """``POST {hub}/negotiate``: the body is ignored (every real client sends none, each
        with a different Content-Type). ``negotiateVersion`` absent or 0 -> version 0."""
        raw = request.query.get("negotiateVersion", "0")
        try:
            version = int(raw)
        except ValueError:
            return web.json_response({"error": f"Invalid negotiateVersion {raw!r}"}, status=400)
        connection_id = _new_id()
        token = _new_id() if version >= 1 else connection_id
        if not self.negotiations.add(token, connection_id):
            return web.json_response({"error": "Too many pending connections"}, status=503)
        body = {"connectionId": connection_id,
                "availableTransports": [{"transport": "WebSockets",
                                         "transferFormats": ["Text", "Binary"]}]}
        if version >= 1:
            body = {"negotiateVersion": 1, "connectionToken": token, **body}
        else:
            body = {"negotiateVersion": 0, **body}
        return web.json_response(body)

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        """``GET {hub}?id=<token>`` (negotiated) or ``GET {hub}`` (skipNegotiation)."""
        # The session's receive limit is the one that counts (it answers Close with an error);
        # the WebSocket's own limit only bounds memory, well above it (a message may hold
        # several records).
        ws = web.WebSocketResponse(compress=False, autoping=True,
                                   max_msg_size=max(4 * self.config.session.max_receive, WS_MAX_MESSAGE))
        if not ws.can_prepare(request).ok:
            return web.Response(status=400, text="WebSocket upgrade required")
        token = request.query.get("id")
        if token is not None:
            if self.negotiations.claim(token) is None:
                if self.config.refuse_unknown_id != "close":
                    return web.Response(status=404, text="No Connection with that ID")
                await ws.prepare(request)
                await ws.close(code=4404, message=b"No Connection with that ID")
                return ws
        # Without ``id`` (skipNegotiation; signalrcore's ``connectionId`` is its own invention
        # and names nothing here) the connection is new and gets no negotiate state.
        await ws.prepare(request)
        session = HubSession(self.config.session, transport="websocket", state=self.state)
        transport = request.transport
        conn = WebSocketConnection(ws, session, self.clock, self.config,
                                   abort=lambda: transport is not None and transport.abort())
        self.websockets.add(conn)
        try:
            await conn.run()
        finally:
            self.websockets.discard(conn)
            self.finished.append(session)
        return ws


_BROKER_OPTIONS = {fl.name for fl in fields(BrokerConfig)} - {"session"}


def make_broker(host: str = "127.0.0.1", port: int = 0, *, data_dir: Optional[str] = None,
                api_keys: Optional[tuple[str, ...]] = None, profile: Optional[str] = None,
                raw_port: Optional[int] = None, **options) -> HubBroker:
    """Registry factory. ``raw_port`` None: ``port + 1``, or a free port when ``port`` is 0.
    ``data_dir``/``api_keys`` do not apply (the test hub keeps nothing and has no auth).
    Other options go to :class:`BrokerConfig` or :class:`~.session.HubConfig` by name."""
    del data_dir, api_keys
    if raw_port is None:
        raw_port = port + 1 if port else 0
    check_options("signalr", options, _BROKER_OPTIONS, HubConfig)
    broker_opts = {k: options.pop(k) for k in list(options) if k in _BROKER_OPTIONS}
    if profile is not None:
        options["profile"] = profile
    return HubBroker(BrokerConfig(HubConfig(**options), **broker_opts), host, port, raw_port)
