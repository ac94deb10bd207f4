"""Scripted server behaviours a client must cope with (``wirecheck serve --check-clients
--scenario NAME``): what happens to the reference broker's bytes on their way to the client.

Each scenario is a *shaper*: the checking relay (conformance/captures/relay.py) hands it every chunk
the broker wrote and the broker's half-close, and the shaper delivers them to the client
(``relay.deliver``/``relay.deliver_eof``, which also record them) as its behaviour says. The
broker itself is unchanged, so what the client is judged on is the reference behaviour, only
cut, joined, delayed or ended differently. These work for every protocol, over any transport
(SignalR's WebSocket bytes included), because they act below the frames:

- ``none``: passed on as they come;
- ``split``: every byte in its own write (1-byte TCP segments: the client's decoder must
  reassemble frames from any split, as the documents' length-prefixed framing requires);
- ``coalesce``: writes held for a short window and sent as one (several frames, and frame
  ends, in one read);
- ``delay``: each write sent late (a slow server; a client's timeouts must not fire early);
- ``close``: the server ends the connection (FIN) a while after its first answer, or right
  after its Nth write (option ``writes``), as a server may at any time (shutdown, idle
  timeout); the client must notice, not hang.

Each scenario says whether it acted on a connection (``acted``): one that never did tried
nothing, and ``wirecheck check-client`` reports it NOT-RUN rather than a pass. And each says
what a client's workload should come to under it (``client_outcome``, conformance/clients/suite.py):
``success`` where the scenario changes nothing the client may notice (``none``, ``split``,
``coalesce``, ``delay``), ``either`` where the client may surface the error or recover
(``close``), ``error`` where a request fails and the client must say so.
"""
from __future__ import annotations

import asyncio
import time
from collections import deque

#: Bytes a shaper may hold before the server's side of the relay stops being read.
HOLD_LIMIT = 1024 * 1024
#: ``split``: bytes of one write sent one at a time; the rest of a larger write goes in writes
#: of :data:`SPLIT_TAIL` (a 16 MiB frame byte by byte would take minutes and fill the capture).
SPLIT_BYTES = 16 * 1024
SPLIT_TAIL = 4096


class Passthrough:
    """``none``: the server's bytes as they come."""

    name = "none"
    client_outcome = "success"

    def __init__(self, relay, options: dict) -> None:
        self.relay = relay
        self.options = options
        #: the server's bytes have come through this scenario
        self.moved = False

    @property
    def acted(self) -> bool:
        return self.moved

    def data(self, data: bytes) -> None:
        self.moved = True
        self.relay.deliver("s2c", data)

    def eof(self) -> None:
        self.relay.deliver_eof("s2c")


class _Queued(Passthrough):
    """Holds the server's writes in order and sends them from one task (:meth:`send` says how)."""

    def __init__(self, relay, options: dict) -> None:
        super().__init__(relay, options)
        self.items: deque = deque()        # (arrival time, bytes), or (time, None) for the EOF
        self.held = 0
        self.paused = False
        self.task: asyncio.Task | None = None

    def data(self, data: bytes) -> None:
        self.moved = True
        self.items.append((time.monotonic(), data))
        self.held += len(data)
        if self.held > HOLD_LIMIT and not self.paused:
            self.paused = True
            self.relay.pause("c2s")        # stops reading the server (captures/relay.py: pause)
        self._kick()

    def eof(self) -> None:
        self.items.append((time.monotonic(), None))
        self._kick()

    @property
    def holding(self) -> bool:
        """Whether server bytes (or its EOF) are still to go out."""
        return bool(self.items) or self.task is not None

    def reset(self, finish) -> None:
        """The server reset its side: ``finish()`` (pass the reset on) once what it wrote
        before has gone out."""
        self.items.append((time.monotonic(), finish))
        self._kick()

    def _kick(self) -> None:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._pump())

    async def _pump(self) -> None:
        try:
            while self.items and not self.relay.finished:
                await self.send()
                if self.paused and self.held <= HOLD_LIMIT // 2:
                    self.paused = False
                    self.relay.resume("c2s")
        finally:
            self.task = None

    def _take(self) -> tuple[float, bytes | None]:
        arrived, item = self.items.popleft()
        if isinstance(item, bytes):
            self.held -= len(item)
        return arrived, item

    def _out(self, item) -> None:
        if item is None:
            self.relay.deliver_eof("s2c")
        elif callable(item):                 # the server's reset (reset()), after its bytes
            item()
        else:
            self.relay.deliver("s2c", item)

    async def send(self) -> None:
        raise NotImplementedError


class Split(_Queued):
    """``split``: one byte per write; each write goes out before the next is made. Option
    ``bytes``: how many bytes of each of the server's writes go one at a time (default
    :data:`SPLIT_BYTES`; the rest in writes of :data:`SPLIT_TAIL`)."""

    name = "split"

    async def send(self) -> None:
        _, item = self._take()
        if not isinstance(item, bytes):      # the EOF, or the server's reset
            self._out(item)
            return
        first = int(self.options.get("bytes", SPLIT_BYTES))
        head, tail = item[:first], item[first:]
        for i in range(len(head)):
            if self.relay.finished:
                return
            self._out(head[i:i + 1])
            await asyncio.sleep(0)         # the write leaves (TCP_NODELAY) before the next
        for i in range(0, len(tail), SPLIT_TAIL):
            self._out(tail[i:i + SPLIT_TAIL])
            await asyncio.sleep(0)


class Coalesce(_Queued):
    """``coalesce``: everything written within ``window`` seconds (default 0.05) as one write."""

    name = "coalesce"

    async def send(self) -> None:
        await asyncio.sleep(float(self.options.get("window", 0.05)))
        joined, end = [], False
        while self.items:
            _, item = self._take()
            if not isinstance(item, bytes):  # the EOF, or the server's reset: after the bytes
                end = True
                break
            joined.append(item)
        if joined:
            self._out(b"".join(joined))
        if end:
            self._out(item)


class Delay(_Queued):
    """``delay``: each write sent ``delay`` seconds (default 0.5) after the server made it."""

    name = "delay"

    async def send(self) -> None:
        arrived, _ = self.items[0]
        wait = arrived + float(self.options.get("delay", 0.5)) - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        self._out(self._take()[1])


class Close(Passthrough):
    """``close``: ``after`` seconds (default 1.0) after the server's first bytes, or right after
    the server's ``writes``-th write when that option is given (a point in the conversation,
    whatever the timing), the connection is ended from the server's side: a FIN to the client
    (captures/relay.py: ``server_close``). The broker's own connection stays open until the client
    closes its side (the relay then closes both); whatever the broker writes after the FIN is
    dropped, as a closed server sends nothing more."""

    name = "close"
    client_outcome = "either"

    def __init__(self, relay, options: dict) -> None:
        super().__init__(relay, options)
        self.timer: asyncio.TimerHandle | None = None
        self.ended = False
        #: the scenario itself ended the connection
        self.closed = False
        self.writes = int(options.get("writes", 0))
        if self.writes < 0:
            raise ValueError("writes must be at least 1")
        self.after = float(options.get("after", 1.0))
        self.seen = 0

    @property
    def acted(self) -> bool:
        return self.closed

    def data(self, data: bytes) -> None:
        if self.ended:
            return                         # after its FIN the server sends nothing more
        super().data(data)
        self.seen += 1
        if self.writes:
            if self.seen >= self.writes:
                self._close()
        elif self.timer is None:
            self.timer = asyncio.get_running_loop().call_later(self.after, self._close)

    def eof(self) -> None:
        if not self.ended:
            self.ended = True
            super().eof()

    def _close(self) -> None:
        if not self.relay.finished and not self.ended:
            self.ended = True
            self.closed = True
            self.relay.server_close()


SCENARIOS = {cls.name: cls for cls in (Passthrough, Split, Coalesce, Delay, Close)}


def scenarios(protocol: str | None = None) -> dict:
    """Every scenario ``protocol`` has: the byte-level ones above, then its protocol-level
    ones (conformance/clients/scripted)."""
    from wirecheck.conformance.clients.scripted import scenarios_for
    return {**SCENARIOS, **(scenarios_for(protocol) if protocol else {})}


def shaper_factory(name: str, options: dict | None = None, protocol: str | None = None):
    """``make_shaper(relay)`` for scenario ``name`` of ``protocol``; ValueError names the known
    ones."""
    known = scenarios(protocol)
    try:
        cls = known[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(known)}") from None
    opts = dict(options or {})
    try:
        cls(None, opts)            # options read at construction are checked now, not per connection
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"scenario {name!r}: bad option ({type(exc).__name__}: {exc})") from None
    return lambda relay: cls(relay, opts)
