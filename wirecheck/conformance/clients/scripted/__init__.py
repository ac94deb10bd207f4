"""Protocol-level scripted server behaviours (``wirecheck serve --check-clients --scenario
NAME``): frames a server may send, or answers it may give, that an ordinary session with the
reference broker seldom or never shows, and that a client must cope with.

The byte-level scenarios (conformance/clients/scenarios.py) act below the frames. These act on
whole frames: a :class:`FrameShaper` cuts both directions of a relayed connection into frames
with the protocol's :class:`Splitter`, passes them on, and, as its scenario says, adds frames
(a heartbeat, a metadata update), rewrites one (a valid request answered with an error, a frame
with fields the client does not know) or holds back the client's answer to a frame the broker
never sent (the broker must not see answers to questions it did not ask; the answer is still
recorded, so the observer judges it). Every frame sent is encoded with the reference codec and
is legal server behaviour by the protocol's document: the client is judged, as in every
scenario, on the conversation it really had.

Each protocol's module here (``rabbitmq_stream``, ``signalr``, ...) exports ``SCENARIOS``: name
-> FrameShaper subclass. :func:`scenarios_for` lists them; ``client_scenarios.shaper_factory``
builds them.
"""
from __future__ import annotations

import asyncio
import importlib
import logging
import time

log = logging.getLogger(__name__)

#: A declared frame larger than this is not held whole: the splitter gives up and the rest of
#: the connection passes through as it comes (a reference broker never sends one; bounded
#: memory whatever arrives).
MAX_HELD_FRAME = 64 * 1024 * 1024
#: The same for the client's frames: the scenarios read only small ones (requests, answers),
#: and a large frame held whole would delay the broker's own answer to it (a frame-size limit
#: enforced as the header arrives).
CLIENT_HELD_FRAME = 1024 * 1024

#: protocol id -> module of conformance/clients/scripted with its SCENARIOS
_MODULES = {
    "blipmq": "blipmq",
    "vibemq": "vibemq",
    "micromessage2": "micromessage2",
    "rabbitmq-stream": "rabbitmq_stream",
    "signalr": "signalr",
}


def scenarios_for(protocol: str) -> dict:
    """``{name: FrameShaper subclass}`` of ``protocol`` (empty when it has none yet)."""
    module = _MODULES.get(protocol)
    if module is None:
        return {}
    try:
        mod = importlib.import_module(f"wirecheck.conformance.clients.scripted.{module}")
    except ModuleNotFoundError as exc:
        if exc.name == f"wirecheck.conformance.clients.scripted.{module}":
            return {}
        raise
    return dict(mod.SCENARIOS)


class Splitter:
    """Cuts one direction's byte stream into whole frames, as they complete. After a frame it
    cannot size (:meth:`size` raised ValueError, or a size over ``limit``), it stops cutting: the
    rest of the stream comes out as it arrives (``raw`` is then True)."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.raw = False
        self.limit = MAX_HELD_FRAME

    def size(self, buf: bytearray) -> int | None:
        """Bytes of the next whole frame at the start of ``buf``, or None if ``buf`` does not
        yet say; ValueError when it never will (not this protocol's framing)."""
        raise NotImplementedError

    def feed(self, data: bytes) -> list[bytes]:
        if self.raw:
            return [bytes(data)] if data else []
        self.buf += data
        out: list[bytes] = []
        while self.buf:
            try:
                n = self.size(self.buf)
            except ValueError:
                n = -1
            if n is not None and (n <= 0 or n > self.limit):
                self.raw = True
                out.append(bytes(self.buf))
                self.buf.clear()
                break
            if n is None or len(self.buf) < n:
                break
            out.append(bytes(self.buf[:n]))
            del self.buf[:n]
        return out

    def rest(self) -> bytes:
        """What is held (an incomplete frame at the end of the stream), emptied."""
        data = bytes(self.buf)
        self.buf.clear()
        return data


class LengthPrefixed(Splitter):
    """Frames that start with a fixed header saying the frame's size: ``header`` bytes, then
    :meth:`total` of those bytes gives the whole frame's size."""

    header = 4

    def size(self, buf: bytearray) -> int | None:
        if len(buf) < self.header:
            return None
        return self.total(bytes(buf[:self.header]))

    def total(self, header: bytes) -> int:
        raise NotImplementedError


class FrameShaper:
    """A scripted scenario: sees every whole frame of both directions (:meth:`server_frame`,
    :meth:`client_frame`) and decides what the other side gets. The default passes each on.

    Subclasses set ``name``, ``summary`` (one line for ``--help`` and the report) and
    ``make_splitter(direction)``; they :meth:`send` frames of their own, :meth:`every` for timed
    ones, and :meth:`hold` a client answer the broker must not see."""

    name = ""
    summary = ""
    #: what a client's workload should come to under the scenario (conformance/clients/suite.py):
    #: "success", "error" (a request fails and the client must say so) or "either"
    client_outcome = "either"

    def __init__(self, relay, options: dict) -> None:
        self.relay = relay
        self.options = options
        self.down = self.make_splitter("s2c")
        self.up = self.make_splitter("c2s")
        self.up.limit = CLIENT_HELD_FRAME
        self.timers: list[asyncio.TimerHandle] = []
        self.ended = False
        #: what the scenario did on this connection, for tests and logs: (time, what)
        self.log: list[tuple[float, str]] = []
        #: how many of those notes were the scenario acting (not a remark that it could not)
        self.actions = 0

    def make_splitter(self, direction: str) -> Splitter:
        raise NotImplementedError

    # -- the relay's side ----------------------------------------------------------------------

    def data(self, data: bytes) -> None:
        raw = self.down.raw
        for frame in self.down.feed(data):
            if raw or self.down.raw:
                self.send(frame)
            else:
                self._guarded(self.server_frame, self.send, frame)

    def eof(self) -> None:
        rest = self.down.rest()
        if rest:
            self.send(rest)
        self.ended = True
        self.cancel()
        self.relay.deliver_eof("s2c")

    def client_data(self, data: bytes) -> None:
        raw = self.up.raw
        for frame in self.up.feed(data):
            if raw or self.up.raw:
                self.pass_on(frame)
            else:
                self._guarded(self.client_frame, self.pass_on, frame)

    def client_eof(self) -> None:
        rest = self.up.rest()
        if rest:
            self.pass_on(rest)
        self.relay.deliver_eof("c2s")

    def _guarded(self, handle, fallback, frame: bytes) -> None:
        """``handle(frame)``; should the scenario fail on a frame (a kit bug), the frame goes on
        unchanged and the failure is logged and noted: the connection must not die of it."""
        try:
            handle(frame)
        except Exception as exc:                     # noqa: BLE001 - see the docstring
            log.exception("scenario %s failed on a frame; passed on unchanged", self.name)
            self.note(f"scenario error: {type(exc).__name__}: {exc}", acted=False)
            fallback(frame)

    # -- what subclasses use -------------------------------------------------------------------

    def server_frame(self, frame: bytes) -> None:
        """A whole frame from the broker; the default sends it on."""
        self.send(frame)

    def client_frame(self, frame: bytes) -> None:
        """A whole frame from the client; the default passes it to the broker."""
        self.pass_on(frame)

    def send(self, frame: bytes) -> None:
        """To the client (recorded as the server's)."""
        if not self.ended and not self.relay.finished:
            self.relay.deliver("s2c", frame)

    def pass_on(self, frame: bytes) -> None:
        """To the broker (recorded as the client's)."""
        self.relay.deliver("c2s", frame)

    def hold(self, frame: bytes) -> None:
        """Recorded as the client's, not passed to the broker."""
        self.relay.deliver("c2s", frame, onward=False)

    def note(self, what: str, acted: bool = True) -> None:
        """Log what the scenario did; ``acted=False`` for a remark (it could not act, or what
        the client did in return), which does not count as the scenario having acted."""
        self.log.append((time.monotonic(), what))
        if acted:
            self.actions += 1

    @property
    def acted(self) -> bool:
        """Whether the scenario did its thing on this connection (a scenario that never did
        tried nothing: ``check-client`` reports it NOT-RUN)."""
        return self.actions > 0

    def every(self, interval: float, action, first: float | None = None) -> None:
        """``action()`` every ``interval`` seconds (first after ``first``) while the
        connection lasts and the server has not ended it."""
        def tick() -> None:
            action()
            self.later(interval, tick)
        self.later(interval if first is None else first, tick)

    def later(self, delay: float, action) -> None:
        """``action()`` once, ``delay`` seconds from now, if the connection still lasts."""
        handle: asyncio.TimerHandle | None = None

        def run() -> None:
            self.timers.remove(handle)
            if not self.ended and not self.relay.finished:
                action()
        handle = asyncio.get_running_loop().call_later(delay, run)
        self.timers.append(handle)

    def cancel(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()
