"""A connection to the target under test: send frames, expect frames, keep a transcript.

Every receive has a timeout; a silent, closed or garbage-speaking target turns into an
:class:`AssertionError` subclass with a reason, so a test FAILs and never hangs. Every byte
sent and received is kept in a :class:`Transcript` (hex + decoded) that the plugin attaches
to the report of a test that does not pass.

Per-receive timeouts alone do not bound a test: a loop that skips keep-alives reads an endless
stream of them forever, and hypothesis shrinks a failure by running it again, one timeout per
run. So each test also has a :class:`Budget`: a wall-clock limit on its I/O, and a number of
receives the target may leave unanswered; past either, :class:`BudgetSpent` ends the test
(verdict TIMEOUT). Transcripts are bounded too (:class:`TranscriptLimits`): a flooding target
gets the start of the conversation, its last entry and a note of what was cut. A suite that
reads past frames it did not ask for (keep-alives) bounds how many, then drops the connection
(:meth:`Connection.drop`, :class:`TargetFlooded`) rather than read a flood until the budget ends.
"""
from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Callable

from wirecheck.reference_impl.core.errors import FrameError

DEFAULT_TIMEOUT = 2.0
#: Receives a test may see time out before it is stopped (the first is the test's failure; the
#: others let hypothesis try a few smaller examples before the run ends).
DEFAULT_MAX_TIMEOUTS = 3
#: Connections a test may open: more than any test needs against a sound target. A state
#: machine opens a few per example and may reconnect at any step: at most examples x (steps +
#: slots), about 1,020 for VibeMQ's (30 x (30 + 4)); 256 was exceeded by a sound run. Hypothesis
#: shrinking a failure against a target that fails every connection at once would open tens of
#: thousands; these fail fast, so 2,048 of them take seconds.
DEFAULT_MAX_CONNECTIONS = 2048


class BudgetSpent(BaseException):
    """The test used up its :class:`Budget`. A ``BaseException`` on purpose: nothing in a test
    or its helpers (``except Exception``/``AssertionError``), nor hypothesis (which would shrink
    it, repeating every timeout), may catch it; the plugin reports it as TIMEOUT."""


def spent_in(exc: BaseException | None) -> "BudgetSpent | None":
    """The :class:`BudgetSpent` that ``exc`` is or that it was raised while handling (hypothesis,
    stopped in the middle of an example, raises an error of its own about it), or None."""
    return raised_in(exc, BudgetSpent)


def raised_in(exc: BaseException | None, kind: type):
    """The exception of class ``kind`` that ``exc`` is, or that it was raised while handling
    (its causes and contexts, followed once each), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


class RunAllowance:
    """The whole run's time allowance, spent by the tests that do not pass. A sound target
    costs it nothing however slow its link (no verdict may depend on how fast bytes travel);
    a hostile one (a flood, answers that never end, silence) spends it with every test it
    fails, and once it is gone every test still to run stops at its first I/O. A test running
    counts its time so far against what is left (Budget.left), and gives it back if it passes."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.spent = 0.0
        self._started: float | None = None

    def begin_test(self) -> None:
        self._started = time.monotonic()

    def end_test(self, passed: bool) -> None:
        if self._started is not None and not passed:
            self.spent += time.monotonic() - self._started
        self._started = None

    def left(self, now: float) -> float:
        return self.seconds - self.spent - (now - self._started if self._started is not None else 0.0)


class Budget:
    """One test's limits across all its connections: ``seconds`` of wall-clock time from its
    start for I/O (None: no limit), ``max_timeouts`` receives left unanswered, and
    ``max_connections`` connections opened. ``run``: the whole run's :class:`RunAllowance`,
    which no test's I/O goes past either."""

    def __init__(self, seconds: float | None = None, max_timeouts: int = DEFAULT_MAX_TIMEOUTS,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS, run: RunAllowance | None = None) -> None:
        self.seconds = seconds
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.run = run
        self.max_timeouts = max_timeouts
        self.max_connections = max_connections
        self.timeouts = 0
        self.connections = 0
        self.first = ""

    def opened(self) -> None:
        """Count one connection; raises BudgetSpent past ``max_connections``."""
        self.connections += 1
        if self.connections > self.max_connections:
            raise BudgetSpent(f"the test opened {self.max_connections} connections (hypothesis keeps "
                              f"retrying a failure); the kit stops it here"
                              + (f". First timeout: {self.first}" if self.first else ""))

    def left(self) -> float:
        """Seconds of I/O left (inf without a wall-clock limit); raises BudgetSpent at 0."""
        now = time.monotonic()
        run_left = float("inf") if self.run is None else self.run.left(now)
        if run_left <= 0:
            raise BudgetSpent(f"the run's time allowance of {self.run.seconds:g} s (cases x timeout "
                              f"+ slack, spent by the tests that did not pass) is spent: the target "
                              f"kept the kit waiting; the remaining tests stop at their first I/O"
                              + (f"; first timeout: {self.first}" if self.first else ""))
        if self.deadline is None:
            return run_left
        left = self.deadline - now
        if left <= 0:
            raise BudgetSpent(f"the test's I/O budget of {self.seconds:g} s is spent (the target kept "
                              f"the kit busy: a flood, or a loop of answers that never ends)"
                              + (f"; first timeout: {self.first}" if self.first else ""))
        return min(left, run_left)

    def timed_out(self, reason: str) -> None:
        """Count one receive left unanswered; raises BudgetSpent when it is one too many."""
        self.timeouts += 1
        self.first = self.first or reason
        if self.timeouts >= self.max_timeouts:
            raise BudgetSpent(f"{self.timeouts} receives timed out in this test; the kit stops it "
                              f"here. First: {self.first}")


@dataclass(frozen=True)
class TranscriptLimits:
    """What a transcript keeps: the first ``entries`` entries of each connection (then only its
    last one), at most ``entry_bytes`` of each entry's bytes, and ``total_bytes`` of bytes over
    all the test's connections (then lengths only). The full lengths are always counted."""
    entries: int = 1000
    entry_bytes: int = 4096
    total_bytes: int = 8 << 20


class _TranscriptBytes:
    """The byte allowance the transcripts of one test share."""

    def __init__(self, limit: int) -> None:
        self.left = limit


class TargetError(AssertionError):
    """The target did not behave: the test fails with this reason. ``expected`` (the outcomes
    the test accepts) and ``actual`` (what came), when given, reach the report as data.
    ``requirements``: the rules this failure breaks when it knows them (a malformed frame, by
    the decoder's error: :attr:`Connection.breach_of`), whatever the test checks: the test is
    then charged with those (verdicts.broken_ids), not with its own."""

    requirements: tuple[str, ...] = ()

    def __init__(self, message: str = "", expected: list[str] | None = None, actual: str | None = None) -> None:
        super().__init__(message)
        self.expected, self.actual = expected, actual


@dataclass(frozen=True)
class Outcome:
    """One acceptable outcome of a step: a frame ``match`` accepts, or (``match`` None) the
    target closing the connection."""
    label: str
    match: Callable[[object], bool] | None = None


#: The outcome "the target closes the connection".
CLOSE = Outcome("the connection closes")


class TargetTimeout(TargetError):
    """Nothing (or not enough) arrived within the timeout."""


class TargetClosed(TargetError):
    """The target closed the connection when a frame was expected."""


class TargetMalformed(TargetError):
    """The target sent bytes the reference decoder rejects."""


class TargetFlooded(TargetError):
    """The target sent more frames unasked than a suite reads past while it waits for an
    answer (a flood, e.g. an endless stream of keep-alives): the suite dropped the connection
    (:meth:`Connection.drop`) rather than read on until the test's budget ends."""


@dataclass
class TranscriptEntry:
    time: float
    direction: str        # "->" sent by the kit, "<-" received, "--" event
    data: bytes           # at most TranscriptLimits.entry_bytes of them
    note: str
    length: int = -1      # the full length (-1: len(data))

    def __post_init__(self) -> None:
        if self.length < 0:
            self.length = len(self.data)


@dataclass
class Transcript:
    name: str = ""
    entries: list[TranscriptEntry] = field(default_factory=list)
    start: float = field(default_factory=time.monotonic)
    limits: TranscriptLimits = field(default_factory=TranscriptLimits)
    #: Entries not kept (past ``limits.entries``) and the bytes they carried.
    cut_entries: int = 0
    cut_bytes: int = 0
    #: The newest entry once entries are cut (the end of the conversation: the failure).
    last: TranscriptEntry | None = None
    _budget: _TranscriptBytes | None = field(default=None, repr=False)

    def add(self, direction: str, data: bytes, note: str = "") -> None:
        if self._budget is None:
            self._budget = _TranscriptBytes(self.limits.total_bytes)
        keep = min(len(data), self.limits.entry_bytes, max(self._budget.left, 0))
        self._budget.left -= keep
        entry = TranscriptEntry(time.monotonic() - self.start, direction, bytes(data[:keep]), note, len(data))
        if len(self.entries) < self.limits.entries:
            self.entries.append(entry)
            return
        if self.last is not None:
            self.cut_entries += 1
            self.cut_bytes += self.last.length
        self.last = entry

    def _cut_note(self) -> TranscriptEntry | None:
        if self.last is None:
            return None
        return TranscriptEntry(self.last.time, "--", b"",
                               f"transcript cut: {self.cut_entries} entries ({self.cut_bytes} bytes) "
                               f"not kept; the last one follows")

    def _shown(self) -> list[TranscriptEntry]:
        cut = self._cut_note()
        return self.entries + ([cut, self.last] if cut is not None else [])

    def to_json(self, max_bytes: int = 4096) -> dict:
        """The transcript as data (the report's wire log): per entry the time in seconds, the
        direction, the bytes in hex (at most ``max_bytes`` of them), the decoded note and the
        full length."""
        return {"name": self.name,
                "entries": [[round(e.time, 6), e.direction, e.data[:max_bytes].hex(), e.note, e.length]
                            for e in self._shown()]}

    def render(self, max_bytes: int = 256) -> str:
        lines = [f"transcript {self.name}".rstrip()]
        for e in self._shown():
            hexed = e.data[:max_bytes].hex(" ")
            if e.length > min(max_bytes, len(e.data)):
                hexed += f" ... ({e.length} bytes)"
            lines.append(f"{e.time:8.3f}s {e.direction} {e.note}")
            if e.data:
                lines.append(f"           {hexed}")
            elif e.length:
                lines.append(f"           ({e.length} bytes, not kept: the transcript's byte limit)")
        return "\n".join(lines)


class Connection:
    """One TCP connection to the target, speaking ``spec``'s codec."""

    def __init__(self, sock: socket.socket, spec, timeout: float, transcript: Transcript,
                 decoder=None, encode=None, budget: Budget | None = None) -> None:
        self.sock = sock
        self.spec = spec
        self.timeout = timeout
        self.transcript = transcript
        self.budget = budget if budget is not None else Budget()
        # It reads what the target sends; a protocol whose decoding depends on the session
        # (SignalR's negotiated hub protocol) passes its own decoder and encoder.
        self.decoder = decoder if decoder is not None else spec.make_decoder(origin="server")
        self.encode = encode or spec.encode
        self._frames: list = []
        self.closed_by_peer = False
        #: Why the kit dropped the connection (:meth:`drop`); None while it is open.
        self.dropped: str | None = None
        #: Frame classes the target may send at any moment (RabbitMQ Stream's Heartbeat):
        #: :meth:`recv` passes over them unless asked to keep them, as :meth:`expect` of one does.
        self.unsolicited: tuple = ()
        #: What they are called, and how many in one receive make a flood (a sound server
        #: sends one per keep-alive interval): the connection is then dropped.
        self.unsolicited_what = "frames the target may send at any moment"
        self.unsolicited_limit = 1000
        #: Bytes arrived below the frames (a WebSocket frame not yet whole): not silence.
        self._progress = False
        #: The rules a frame from the target that does not decode breaks (FrameError ->
        #: (requirement IDs, what the frame means when more than its decoder error, or "")); the
        #: suite of the protocol sets it. Unset, a malformed frame fails the test on its own
        #: requirements.
        self.breach_of: Callable[[FrameError], tuple[tuple[str, ...], str]] | None = None
        #: Called with each frame :meth:`recv` hands to the test; it may raise (a frame that
        #: breaks a rule whatever the test expects: verdicts.Breach). Set by the suite.
        self.check_frame: Callable[[object], None] | None = None
        #: Called with the bytes of each :meth:`send` (encoded frames and raw bytes alike): what
        #: the suite follows of its own side of the conversation.
        self.on_send: Callable[[bytes], None] | None = None

    # -- sending -------------------------------------------------------------------------------

    def send(self, *items, chunks: int | list[int] | None = None) -> None:
        """Send frames (encoded with the reference codec) and/or raw bytes, as one write or
        split into ``chunks`` (a chunk size, or a list of sizes)."""
        if self.dropped is not None:
            raise TargetFlooded(self.dropped)
        data = b"".join(i if isinstance(i, (bytes, bytearray)) else self.encode(i) for i in items)
        self.transcript.add("->", data, self._describe(items))
        if self.on_send is not None:
            self.on_send(data)
        pieces = _split(data, chunks)
        self.sock.settimeout(min(self.timeout, self.budget.left()))
        try:
            for i, piece in enumerate(pieces):
                if i:
                    time.sleep(SPLIT_PAUSE)
                self._write(piece)
        except socket.timeout:
            self.transcript.add("--", b"", "send timed out: the target is not reading")
            self.budget.left()                   # the wall-clock budget, if that is what ran out
            reason = f"target stopped reading: could not send {len(data)} bytes within {self.timeout:g} s"
            self.budget.timed_out(reason)
            raise TargetTimeout(reason) from None
        except OSError as exc:
            self.transcript.add("--", b"", f"send failed: {exc}")
            raise TargetClosed(f"target closed the connection while the kit was sending: {exc}") from None

    def _write(self, piece: bytes) -> None:
        self.sock.sendall(piece)

    def _describe(self, items) -> str:
        parts = []
        for i in items:
            if isinstance(i, (bytes, bytearray)):
                parts.append(f"raw {len(i)} bytes")
            else:
                d = self.spec.frame_to_dict(i)
                parts.append(_short(d))
        return "; ".join(parts)

    # -- receiving -----------------------------------------------------------------------------

    def expect_one_of(self, *outcomes: Outcome, reason: str = "", timeout: float | None = None):
        """The next frame, or the close, must be one of ``outcomes`` (a test that accepts
        several answers says so here, and the report lists them). Returns (the outcome, the
        frame or None for a close)."""
        labels = [o.label for o in outcomes]
        wanted = " or ".join(labels) + (f" ({reason})" if reason else "")
        try:
            frame = self.recv(timeout, expecting=wanted)
        except TargetClosed:
            for o in outcomes:
                if o.match is None:
                    return o, None
            raise TargetClosed(f"target closed the connection (expected {wanted})", labels,
                               "the connection closed") from None
        except TargetError as exc:
            exc.expected = labels
            raise
        for o in outcomes:
            if o.match is not None and o.match(frame):
                return o, frame
        got = _short(self.spec.frame_to_dict(frame))
        raise TargetError(f"expected {wanted}, got {got}", labels, got)

    def recv(self, timeout: float | None = None, expecting: str = "a frame", keep: bool = False):
        """The next frame; raises :class:`TargetTimeout`/:class:`TargetClosed`/:class:`TargetMalformed`
        (:class:`TargetFlooded` once the kit dropped the connection). Frames of the classes in
        :attr:`unsolicited` (those the target may send at any moment, such as heartbeats) are
        passed over unless ``keep``; they stay in the transcript, and do not reset the wait."""
        if self.dropped is not None and not self._frames:
            raise TargetFlooded(self.dropped)
        # The timeout measures silence, not total time: while the bytes of a frame keep
        # arriving (a slow link, a long frame in small writes) the wait goes on, bounded by
        # the test's budget (Budget.left, in _read).
        wait = self.timeout if timeout is None else timeout
        started = time.monotonic()
        deadline = started + wait
        skipped = 0
        while True:
            if self._frames:
                if keep or not self.unsolicited:
                    return self._checked(self._frames.pop(0))
                # Past the unsolicited frames at the head, in one cut (a flood brings thousands)
                first = next((i for i, f in enumerate(self._frames) if not isinstance(f, self.unsolicited)),
                             len(self._frames))
                skipped += first
                del self._frames[:first]
                if skipped > self.unsolicited_limit:
                    raise self.drop(f"more than {self.unsolicited_limit} {self.unsolicited_what} in "
                                    f"{time.monotonic() - started:.3g} s and nothing else (expected "
                                    f"{expecting}): a flood; the suite dropped the connection")
                if self._frames:
                    return self._checked(self._frames.pop(0))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.transcript.add("--", b"", f"timeout waiting for {expecting}")
                partial = self.decoder.buffered
                reason = (f"no more bytes within {wait:g} s with {partial} bytes of a frame received "
                          f"(expected {expecting})" if partial else
                          f"only {self.unsolicited_what} for {wait:g} s ({skipped}; expected {expecting})"
                          if skipped else f"no answer within {wait:g} s (expected {expecting})")
                self.budget.timed_out(reason)
                raise TargetTimeout(reason)
            if self.closed_by_peer:
                raise TargetClosed(f"target closed the connection (expected {expecting})")
            data = self._read(remaining)
            if data is None:
                if self._progress:           # bytes of a WebSocket frame still incomplete
                    self._progress = False
                    deadline = time.monotonic() + wait
                continue
            if not data:
                self.closed_by_peer = True
                self.transcript.add("<-", b"", "connection closed by target")
                raise TargetClosed(f"target closed the connection (expected {expecting})")
            try:
                frames = self.decoder.feed(data)
            except FrameError as exc:
                self.transcript.add("<-", data, f"undecodable: {exc.category}: {exc.message}")
                broken, meaning = self.breach_of(exc) if self.breach_of is not None else ((), "")
                detail = f"target sent a malformed frame: {exc.category} at byte {exc.offset}: {exc.message}"
                # what it means first (the line a summary shows, the same in every encoding)
                error = TargetMalformed(f"{meaning}\n{detail}" if meaning else
                                        detail + (f" (breaks {', '.join(broken)})" if broken else ""))
                error.requirements = tuple(broken)
                raise error from None
            self.transcript.add("<-", data, self._received(frames))
            self._frames.extend(frames)
            if not frames:                  # part of a frame: the target is not silent
                deadline = time.monotonic() + wait

    def _checked(self, frame):
        if self.check_frame is not None:
            self.check_frame(frame)
        return frame

    #: Frames of one read described in the transcript (a flood brings thousands per read).
    DESCRIBED_FRAMES = 16

    def _received(self, frames: list) -> str:
        if not frames:
            return f"partial ({self.decoder.buffered} bytes buffered)"
        shown = "; ".join(_short(self.spec.frame_to_dict(f)) for f in frames[:self.DESCRIBED_FRAMES])
        more = len(frames) - self.DESCRIBED_FRAMES
        return shown + (f"; ... and {more} more frames" if more > 0 else "")

    def _read(self, timeout: float) -> bytes | None:
        self.sock.settimeout(max(min(timeout, self.budget.left()), 0.001))
        try:
            return self.sock.recv(65536)
        except socket.timeout:
            return None
        except ConnectionResetError:
            return b""
        except OSError:
            return b""

    def expect(self, frame_class, timeout: float | None = None, **fields):
        """The next frame must be a ``frame_class`` whose attributes equal ``fields``."""
        want = frame_class.__name__ + (f"({_kv(fields)})" if fields else "")
        frame = self.recv(timeout, expecting=want, keep=issubclass(frame_class, self.unsolicited))
        if not isinstance(frame, frame_class):
            raise TargetError(f"expected {want}, got {_short(self.spec.frame_to_dict(frame))}")
        wrong = {k: getattr(frame, k) for k, v in fields.items() if getattr(frame, k) != v}
        if wrong:
            raise TargetError(f"expected {want}, got {_short(self.spec.frame_to_dict(frame))} "
                              f"(wrong: {_kv(wrong)})")
        return frame

    def expect_closed(self, timeout: float | None = None, reason: str = "") -> None:
        """The target must close the connection (FIN or RST) without sending any frame."""
        limit = self.timeout if timeout is None else timeout
        try:
            frame = self.recv(limit, expecting="the connection to be closed")
        except TargetClosed:
            return
        except TargetTimeout:
            raise TargetTimeout(f"target kept the connection open {limit:g} s; it must close it"
                                + (f" ({reason})" if reason else "")) from None
        raise TargetError(f"expected the connection to be closed, got "
                          f"{_short(self.spec.frame_to_dict(frame))}" + (f" ({reason})" if reason else ""))

    def drop(self, reason: str) -> TargetFlooded:
        """Stop reading a flooding target: note it in the transcript, close the connection
        (unread frames and bytes discarded) and return the failure to raise; any later
        receive on this connection raises it again."""
        self.transcript.add("--", b"", f"the kit dropped the connection: {reason}")
        self.dropped = reason
        self.close()
        return TargetFlooded(reason)

    def close(self) -> None:
        self._frames = []              # a flood's unread frames: a test may open hundreds of connections
        try:
            self.sock.close()
        except OSError:
            pass


#: Seconds between the pieces of a split write (``send(..., chunks=...)``). The socket has no
#: Nagle delay, so each piece leaves at once; the pause lets the target read it before the next
#: arrives. Written back to back, the pieces of a handshake sent byte by byte arrived as one read
#: on an idle machine, and a server that never reassembles one passed there and failed only
#: when the machine was busy: the split must be one on both.
SPLIT_PAUSE = 0.005


def _split(data: bytes, chunks) -> list[bytes]:
    if chunks is None:
        return [data]
    if isinstance(chunks, int):
        return [data[i:i + chunks] for i in range(0, len(data), chunks)] or [b""]
    out, pos = [], 0
    for size in chunks:
        out.append(data[pos:pos + size])
        pos += size
    if pos < len(data):
        out.append(data[pos:])
    return [p for p in out if p]


def _kv(d: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in d.items())


def _short(d: dict) -> str:
    kind = d.get("type", "?")
    rest = {k: (v if not isinstance(v, str) or len(v) < 60 else v[:57] + "...")
            for k, v in d.items() if k != "type" and not k.endswith("_hex")}
    return f"{kind}({_kv(rest)})"


def pace(seconds: float) -> None:
    """Let a timer *on the target* run (e.g. a redelivery backoff) between two requests.

    Never use it to prove that nothing comes back: that is what a barrier request is for.
    """
    time.sleep(seconds)


class WebSocketConnection(Connection):
    """A connection whose bytes travel as WebSocket messages (conformance/target/websocket.py): each
    ``send`` piece is one message (text, or binary when ``binary``), and what comes back is the
    concatenated payload of the data messages. Pings are answered; a close frame is a close."""

    def __init__(self, sock: socket.socket, spec, timeout: float, transcript: Transcript,
                 decoder=None, encode=None, binary: bool = False, pending: bytes = b"",
                 budget: Budget | None = None) -> None:
        from wirecheck.conformance.target import websocket
        super().__init__(sock, spec, timeout, transcript, decoder, encode, budget)
        self._ws = websocket
        self.binary = binary
        self.frames = websocket.FrameReader()
        self._pending = pending
        self._peer_closed = False
        self.close_code: int | None = None
        self.data_opcodes: list[int] = []       # text or binary, per message received

    def _write(self, piece: bytes) -> None:
        opcode = self._ws.OP_BINARY if self.binary else self._ws.OP_TEXT
        self.sock.sendall(self._ws.encode_frame(opcode, piece))

    def _read(self, timeout: float) -> bytes | None:
        if self._peer_closed:
            return b""
        if self._pending:
            raw, self._pending = self._pending, b""
        else:
            raw = super()._read(timeout)
        if not raw:
            return raw
        try:
            frames = self.frames.feed(raw)
        except self._ws.WebSocketError as exc:
            raise TargetMalformed(f"target broke the WebSocket framing: {exc}") from None
        data = bytearray()
        for opcode, _fin, payload in frames:
            if opcode in (self._ws.OP_TEXT, self._ws.OP_BINARY, self._ws.OP_CONT):
                data += payload
                if opcode != self._ws.OP_CONT:
                    self.data_opcodes.append(opcode)
            elif opcode == self._ws.OP_PING:
                self.sock.sendall(self._ws.encode_frame(self._ws.OP_PONG, payload))
            elif opcode == self._ws.OP_CLOSE:
                # The data before the close frame is delivered first; the next read is the end.
                self.close_code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else None
                self._peer_closed = True
                break
        if data:
            return bytes(data)
        # Part of a frame (a data frame's bytes still coming): not silence. Whole control
        # frames (pings) are, as far as the test's answer is concerned.
        self._progress = self.frames.buffered > 0 or bool(frames and frames[-1][0] == self._ws.OP_CONT)
        return b"" if self._peer_closed else None

    def close(self) -> None:
        try:
            self.sock.sendall(self._ws.encode_frame(self._ws.OP_CLOSE, (1000).to_bytes(2, "big")))
        except OSError:
            pass
        super().close()


def _breach_by(rule_of: Callable[[FrameError], str]) -> Callable[[FrameError], tuple[tuple[str, ...], str]]:
    def breach_of(error: FrameError) -> tuple[tuple[str, ...], str]:
        rule = rule_of(error)
        return ((rule,) if rule else ()), ""
    return breach_of


class Target:
    """Where the suite connects: host and port, plus what it needs to speak to it. ``url``:
    a ``ws://``/``http://`` address when the target is reached through HTTP + WebSocket."""

    def __init__(self, host: str, port: int, spec, profile, timeout: float = DEFAULT_TIMEOUT,
                 embedded: bool = False, url: str | None = None, budget: Budget | None = None,
                 transcript_limits: TranscriptLimits | None = None) -> None:
        self.host, self.port, self.spec, self.profile = host, port, spec, profile
        self.url = url
        self.timeout = timeout
        self.embedded = embedded
        self.budget = budget if budget is not None else Budget()
        self.transcript_limits = transcript_limits or TranscriptLimits()
        self._transcript_bytes = _TranscriptBytes(self.transcript_limits.total_bytes)
        self.connections: list[Connection] = []
        self.transcripts: list[Transcript] = []

    def connect(self, name: str = "", *, decoder=None, encode=None) -> Connection:
        transcript = self._transcript(name)
        transcript.add("--", b"", f"connect {self.host}:{self.port}")
        self.budget.opened()
        try:
            sock = socket.create_connection((self.host, self.port), timeout=min(self.timeout, self.budget.left()))
        except TimeoutError:
            transcript.add("--", b"", "connect timed out")
            raise TargetTimeout(f"no answer to a connection to {self.host}:{self.port} within "
                                f"{min(self.timeout, self.budget.left()):g} s") from None
        except OSError as exc:
            transcript.add("--", b"", f"connect failed: {exc}")
            raise TargetClosed(f"cannot connect to {self.host}:{self.port}: {exc}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = Connection(sock, self.spec, self.timeout, transcript, decoder, encode, self.budget)
        rules = getattr(self.spec, "server_frame_rules", "")
        if rules:
            conn.breach_of = _breach_by(self.spec.load("server_frame_rules"))
        self.connections.append(conn)
        return conn

    def connect_websocket(self, url: str, name: str = "", *, decoder=None, encode=None,
                          binary: bool = False, headers: dict | None = None) -> WebSocketConnection:
        """A WebSocket to ``url`` (ws:// or http:// spelling)."""
        from wirecheck.conformance.target import websocket
        transcript = self._transcript(name)
        transcript.add("--", b"", f"websocket {url}")
        self.budget.opened()
        ws_url = "ws" + url[4:] if url.startswith("http") else url
        try:
            sock, pending = websocket.open_socket(ws_url, min(self.timeout, self.budget.left()), headers)
        except (TimeoutError, websocket.WebSocketTimeout) as exc:
            transcript.add("--", b"", f"websocket timed out: {exc}")
            raise TargetTimeout(f"cannot open a WebSocket to {url}: {exc or 'timed out'}") from None
        except (OSError, websocket.WebSocketError) as exc:
            transcript.add("--", b"", f"websocket failed: {exc}")
            raise TargetClosed(f"cannot open a WebSocket to {url}: {exc}") from None
        conn = WebSocketConnection(sock, self.spec, self.timeout, transcript, decoder, encode,
                                   binary, pending, self.budget)
        self.connections.append(conn)
        return conn

    def _transcript(self, name: str) -> Transcript:
        transcript = Transcript(name or f"connection {len(self.transcripts) + 1}",
                                limits=self.transcript_limits, _budget=self._transcript_bytes)
        self.transcripts.append(transcript)
        return transcript

    def close_all(self) -> None:
        for conn in self.connections:
            conn.close()
        self.connections.clear()

    def transcripts_json(self) -> list[dict]:
        return [t.to_json() for t in self.transcripts]

    def render_transcripts(self) -> str:
        return "\n\n".join(t.render() for t in self.transcripts)
