"""Recording sessions as a pcap without root: a relay that sits in front of a server, passes
every byte both ways unchanged, and writes each connection into the capture as a synthetic TCP
conversation (conformance/captures/pcapfile.py).

``wirecheck serve --capture FILE.pcap`` puts one in front of each port of the reference
broker; ``wirecheck record --listen HOST:PORT --upstream HOST:PORT --capture FILE.pcap`` puts one
in front of any server (a real broker, say). The capture shows the client's real address and
the relay's listening address, as the client saw the conversation; the server behind the relay
is not in it.

End of a direction: a half-close (EOF) is relayed as a half-close and written as a FIN; a reset
or abort is relayed as an abort and written as an RST. Writes are flow-controlled both ways (a
side that is not reading stops the other side's reads), so a relay holds at most the transports'
high-water marks per connection.
"""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Callable

from wirecheck.conformance.captures.pcapfile import PcapWriter, TcpConversation

#: Bytes a relay buffers towards one side before it stops reading the other.
HIGH_WATER = 1024 * 1024


class CaptureFile:
    """A pcap shared by every relay of one process; each connection a :class:`TcpConversation`."""

    def __init__(self, path: str, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self._writer = PcapWriter(path)
        self._lock = threading.Lock()
        self.connections = 0
        self.closed = False

    def conversation(self, client: tuple[str, int], server: tuple[str, int]) -> "_Recorder":
        with self._lock:
            self.connections += 1
            n = self.connections
            # distinct initial sequence numbers per connection, as a real stack would choose
            isn = ((n * 0x01000193) & 0xFFFFFFFF, (n * 0x9E3779B1) & 0xFFFFFFFF)
            conv = TcpConversation(self._writer, client, server, self.clock(), isn)
        return _Recorder(self, conv)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            self._writer.close()


class _Recorder:
    def __init__(self, capture: CaptureFile, conv: TcpConversation) -> None:
        self.capture = capture
        self.conv = conv
        self.reset_written = False

    def data(self, direction: str, data: bytes) -> None:
        with self.capture._lock:
            if not self.capture.closed and not self.reset_written:
                self.conv.data(direction, data, self.capture.clock())

    def fin(self, direction: str) -> None:
        with self.capture._lock:
            if not self.capture.closed and not self.reset_written:
                self.conv.close(direction, self.capture.clock())

    def rst(self, direction: str) -> None:
        with self.capture._lock:
            if not self.capture.closed and not self.reset_written:
                self.reset_written = True
                self.conv.reset(direction, self.capture.clock())


def _addr(sockname) -> tuple[str, int]:
    return str(sockname[0]), int(sockname[1])


class _Half(asyncio.Protocol):
    """One socket of a relayed connection; ``direction`` names the bytes it receives."""

    def __init__(self, relay: "_Relay", direction: str) -> None:
        self.relay = relay
        self.direction = direction
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.set_write_buffer_limits(high=HIGH_WATER)

    def data_received(self, data: bytes) -> None:
        self.relay.forward(self.direction, data)

    def eof_received(self) -> bool:
        self.relay.eof(self.direction)
        return True               # keep the socket open for the other direction

    def pause_writing(self) -> None:
        self.relay.pause(self.direction)

    def resume_writing(self) -> None:
        self.relay.resume(self.direction)

    def connection_lost(self, exc) -> None:
        self.relay.lost(self.direction, exc)


class _Relay:
    """One client connection relayed to the upstream server and recorded."""

    def __init__(self, proxy: "CaptureProxy") -> None:
        self.proxy = proxy
        self.client = _Half(self, "c2s")        # receives the client's bytes
        self.upstream: _Half | None = None      # receives the server's bytes
        self.recorder: _Recorder | None = None
        self.early: list[bytes] = []            # client bytes before upstream is connected
        self.early_eof = False
        self.eof_seen: set[str] = set()
        self.finished = False
        #: what the server's bytes go through on their way to the client (a scenario of
        #: conformance/clients/serve_check.py), or None: passed on as they come
        self.shaper = proxy.make_shaper(self) if proxy.make_shaper is not None else None

    def _sender(self, direction: str) -> _Half | None:
        return self.client if direction == "c2s" else self.upstream

    def _receiver(self, direction: str) -> _Half | None:
        return self.upstream if direction == "c2s" else self.client

    async def connect(self) -> None:
        loop = asyncio.get_running_loop()
        tr = self.client.transport
        tr.pause_reading()
        client_addr = _addr(tr.get_extra_info("peername"))
        listen_addr = self.proxy.record_as or _addr(tr.get_extra_info("sockname"))
        self.recorder = self.proxy.capture.conversation(client_addr, listen_addr)
        try:
            half = _Half(self, "s2c")
            await asyncio.wait_for(loop.create_connection(lambda: half, *self.proxy.upstream),
                                   self.proxy.connect_timeout)
        except (OSError, asyncio.TimeoutError):
            self.recorder.rst("s2c")              # as the client saw it: the server refused
            self.finished = True
            tr.abort()
            return
        self.upstream = half
        if self.finished:                         # the client went away meanwhile
            half.transport.abort()
            return
        for chunk in self.early:
            half.transport.write(chunk)
        self.early.clear()
        if self.early_eof and half.transport.can_write_eof():
            half.transport.write_eof()
        if not tr.is_closing():
            tr.resume_reading()

    def forward(self, direction: str, data: bytes) -> None:
        if direction == "s2c" and self.shaper is not None:
            self.shaper.data(data)                # it calls deliver() as its scenario says
        elif direction == "c2s" and getattr(self.shaper, "client_data", None) is not None:
            self.shaper.client_data(data)         # a scripted scenario reads the client's frames
        else:
            self.deliver(direction, data)

    def deliver(self, direction: str, data: bytes, *, onward: bool = True) -> None:
        """Record ``data`` and pass it on (``forward`` without the shaper). ``onward=False``:
        recorded as sent, not passed on (a client's answer to a frame a scripted scenario
        injected: the broker never asked, so it must not see it)."""
        if self.proxy.tap is not None:
            self.proxy.tap(self, direction, data)
        if self.recorder is not None:
            self.recorder.data(direction, data)
        if not onward:
            return
        receiver = self._receiver(direction)
        if receiver is None or receiver.transport is None:
            self.early.append(data)
        elif not receiver.transport.is_closing():
            receiver.transport.write(data)

    def eof(self, direction: str) -> None:
        if direction == "s2c" and self.shaper is not None:
            self.shaper.eof()                     # after the bytes it still holds
        elif direction == "c2s" and getattr(self.shaper, "client_eof", None) is not None:
            self.shaper.client_eof()
        else:
            self.deliver_eof(direction)

    def deliver_eof(self, direction: str) -> None:
        self.eof_seen.add(direction)
        if self.proxy.tap is not None:
            self.proxy.tap(self, direction, None)
        if self.recorder is not None:
            self.recorder.fin(direction)
        receiver = self._receiver(direction)
        if receiver is None or receiver.transport is None:
            self.early_eof = True
        elif not receiver.transport.is_closing() and receiver.transport.can_write_eof():
            try:
                receiver.transport.write_eof()
            except OSError:
                pass        # that socket is already gone (ENOTCONN): its loss is reported by lost()
        if self.eof_seen == {"c2s", "s2c"}:
            self._close_both()

    def pause(self, receiving: str) -> None:
        """The socket receiving ``receiving`` bytes has too much to write: stop the other one."""
        other = self._sender("s2c" if receiving == "c2s" else "c2s")
        if other is not None and other.transport is not None and not other.transport.is_closing():
            other.transport.pause_reading()

    def resume(self, receiving: str) -> None:
        other = self._sender("s2c" if receiving == "c2s" else "c2s")
        if other is not None and other.transport is not None and not other.transport.is_closing():
            other.transport.resume_reading()

    def lost(self, direction: str, exc) -> None:
        """The socket receiving ``direction`` bytes is gone. After a half-close from that side
        this is the relay's own close; otherwise the peer reset or aborted."""
        if self.finished:
            return
        if direction == "s2c" and getattr(self.shaper, "holding", False):
            # The server reset its side (it closed with bytes of the client's unread: a refusal
            # mid-frame). What it wrote before still goes to the client first, as a direct
            # connection would have carried it; then the reset.
            self.shaper.reset(lambda: self._lost_now(direction, exc))
            return
        self._lost_now(direction, exc)

    def _lost_now(self, direction: str, exc) -> None:
        if self.finished:
            return
        client = self.client.transport
        if direction == "s2c" and "s2c" in self.eof_seen and "c2s" not in self.eof_seen \
                and client is not None and not client.is_closing():
            # The server's side had already ended towards the client (its FIN was passed on,
            # or a scenario's server_close). The broker's socket going now (a reset on bytes
            # the client still sent) is not cut through to the client: the client has the
            # FIN, and how it ends its own side stays its doing, recorded as such. What it
            # still sends goes nowhere (deliver skips a closed receiver).
            return
        self.finished = True
        if self.proxy.tap is not None:
            self.proxy.tap(self, direction, exc if exc is not None else False)
        if self.recorder is not None and not (exc is None and direction in self.eof_seen):
            self.recorder.rst(direction)
        other = self._receiver(direction)
        if other is not None and other.transport is not None:
            other.transport.abort()
        self.proxy.relays.discard(self)

    def _close_both(self) -> None:
        if self.finished:
            return
        self.finished = True
        for half in (self.client, self.upstream):
            if half is not None and half.transport is not None:
                half.transport.close()
        self.proxy.relays.discard(self)

    def server_close(self) -> None:
        """End the connection from the server's side, as a server may at any time: a FIN to
        the client (recorded as the server's). The client's side stays open until the client
        closes it (the relay then closes both), so a client that never notices shows as such."""
        self.closed_by_script = True
        self.deliver_eof("s2c")

    def abort(self) -> None:
        self.finished = True
        for half in (self.client, self.upstream):
            if half is not None and half.transport is not None:
                half.transport.abort()


class CaptureProxy:
    """Listens on ``host:port`` and relays every connection to ``upstream``, recording it in
    ``capture``. ``start()``/``stop()`` as the brokers (ThreadedServer can run it)."""

    def __init__(self, capture: CaptureFile, upstream: tuple[str, int], host: str = "127.0.0.1",
                 port: int = 0, connect_timeout: float = 5.0,
                 record_as: tuple[str, int] | None = None, make_shaper=None, tap=None) -> None:
        self.capture = capture
        #: ``make_shaper(relay)``: an object with ``data(bytes)`` and ``eof()`` that the
        #: server's bytes go through (it calls ``relay.deliver``/``relay.deliver_eof``)
        self.make_shaper = make_shaper
        #: ``tap(relay, direction, data)``: called with every byte delivered, ``None`` at a
        #: half-close, and the exception (or False) when a side went away
        self.tap = tap
        #: the server address written into the capture, when not the listening one (the
        #: corpus is recorded on free ports but shows the protocol's own, so that decode and
        #: replay find it without --port)
        self.record_as = record_as
        self.upstream = upstream
        self.host = host
        self.port = port
        self.connect_timeout = connect_timeout
        self.relays: set[_Relay] = set()
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task] = set()

    def _accept(self) -> _Half:
        relay = _Relay(self)
        self.relays.add(relay)
        original = relay.client.connection_made

        def made(transport) -> None:
            original(transport)
            task = asyncio.get_running_loop().create_task(relay.connect())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        relay.client.connection_made = made
        return relay.client

    async def start(self) -> "CaptureProxy":
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._accept, self.host, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for relay in list(self.relays):
                relay.abort()
            await self._server.wait_closed()
            self._server = None
        for task in list(self._tasks):
            task.cancel()


async def relay_broker(capture: CaptureFile, broker, host: str = "127.0.0.1",
                       ports: tuple[int, ...] = (0, 0),
                       record_as: tuple[int, ...] | None = None, **hooks) -> list[CaptureProxy]:
    """Started relays in front of a running broker: its port, and its raw TCP port if it has
    one (SignalR), on ``host:ports[i]`` (0: a free port), written into the capture as
    ``record_as[i]`` when given; ``hooks``: CaptureProxy's ``make_shaper`` and ``tap``. A broker that tells clients where to connect (RabbitMQ
    Stream's ``advertise``) is told the first relay, so that clients come back through it."""
    upstreams = [broker.port]
    if getattr(broker, "raw_port", None) is not None:
        upstreams.append(broker.raw_port)
    relays: list[CaptureProxy] = []
    try:
        for i, upstream in enumerate(upstreams):
            shown = (host, record_as[i]) if record_as else None
            relays.append(await CaptureProxy(capture, (broker.host, upstream), host, ports[i],
                                             record_as=shown, **hooks).start())
    except OSError:
        for relay in relays:
            await relay.stop()
        raise
    if hasattr(broker, "advertise"):
        broker.advertise(host, relays[0].port)
    return relays
