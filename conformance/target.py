"""A connection to the target under test: send frames, expect frames, keep a transcript.

Every receive has a timeout; a silent, closed or garbage-speaking target turns into an
:class:`AssertionError` subclass with a reason, so a test FAILs and never hangs. Every byte
sent and received is kept in a :class:`Transcript` (hex + decoded) that the plugin attaches
to the report of a test that does not pass.
"""
from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Callable

from reference_impl.core.errors import FrameError

DEFAULT_TIMEOUT = 2.0


class TargetError(AssertionError):
    """The target did not behave: the test fails with this reason. ``expected`` (the outcomes
    the test accepts) and ``actual`` (what came), when given, reach the report as data."""

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


@dataclass
class TranscriptEntry:
    time: float
    direction: str        # "->" sent by the kit, "<-" received, "--" event
    data: bytes
    note: str


@dataclass
class Transcript:
    name: str = ""
    entries: list[TranscriptEntry] = field(default_factory=list)
    start: float = field(default_factory=time.monotonic)

    def add(self, direction: str, data: bytes, note: str = "") -> None:
        self.entries.append(TranscriptEntry(time.monotonic() - self.start, direction, bytes(data), note))

    def to_json(self, max_bytes: int = 4096) -> dict:
        """The transcript as data (the report's wire log): per entry the time in seconds, the
        direction, the bytes in hex (at most ``max_bytes`` of them), the decoded note and the
        full length."""
        return {"name": self.name,
                "entries": [[round(e.time, 6), e.direction, e.data[:max_bytes].hex(), e.note, len(e.data)]
                            for e in self.entries]}

    def render(self, max_bytes: int = 256) -> str:
        lines = [f"transcript {self.name}".rstrip()]
        for e in self.entries:
            hexed = e.data[:max_bytes].hex(" ")
            if len(e.data) > max_bytes:
                hexed += f" ... ({len(e.data)} bytes)"
            lines.append(f"{e.time:8.3f}s {e.direction} {e.note}")
            if e.data:
                lines.append(f"           {hexed}")
        return "\n".join(lines)


class Connection:
    """One TCP connection to the target, speaking ``spec``'s codec."""

    def __init__(self, sock: socket.socket, spec, timeout: float, transcript: Transcript,
                 decoder=None, encode=None) -> None:
        self.sock = sock
        self.spec = spec
        self.timeout = timeout
        self.transcript = transcript
        # It reads what the target sends; a protocol whose decoding depends on the session
        # (SignalR's negotiated hub protocol) passes its own decoder and encoder.
        self.decoder = decoder if decoder is not None else spec.make_decoder(origin="server")
        self.encode = encode or spec.encode
        self._frames: list = []
        self.closed_by_peer = False

    # -- sending -------------------------------------------------------------------------------

    def send(self, *items, chunks: int | list[int] | None = None) -> None:
        """Send frames (encoded with the reference codec) and/or raw bytes, as one write or
        split into ``chunks`` (a chunk size, or a list of sizes)."""
        data = b"".join(i if isinstance(i, (bytes, bytearray)) else self.encode(i) for i in items)
        self.transcript.add("->", data, self._describe(items))
        pieces = _split(data, chunks)
        self.sock.settimeout(self.timeout)
        try:
            for piece in pieces:
                self._write(piece)
        except socket.timeout:
            self.transcript.add("--", b"", "send timed out: the target is not reading")
            raise TargetTimeout(f"target stopped reading: could not send {len(data)} bytes within "
                                f"{self.timeout:g} s") from None
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

    def recv(self, timeout: float | None = None, expecting: str = "a frame"):
        """The next frame; raises :class:`TargetTimeout`/:class:`TargetClosed`/:class:`TargetMalformed`."""
        if self._frames:
            return self._frames.pop(0)
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self._frames:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.transcript.add("--", b"", f"timeout waiting for {expecting}")
                raise TargetTimeout(f"no answer within {self.timeout if timeout is None else timeout:g} s "
                                    f"(expected {expecting})")
            if self.closed_by_peer:
                raise TargetClosed(f"target closed the connection (expected {expecting})")
            data = self._read(remaining)
            if data is None:
                continue
            if not data:
                self.closed_by_peer = True
                self.transcript.add("<-", b"", "connection closed by target")
                raise TargetClosed(f"target closed the connection (expected {expecting})")
            try:
                frames = self.decoder.feed(data)
            except FrameError as exc:
                self.transcript.add("<-", data, f"undecodable: {exc.category}: {exc.message}")
                raise TargetMalformed(f"target sent a malformed frame: {exc.category} at byte "
                                      f"{exc.offset}: {exc.message}") from None
            self.transcript.add("<-", data, "; ".join(_short(self.spec.frame_to_dict(f)) for f in frames)
                                or f"partial ({self.decoder.buffered} bytes buffered)")
            self._frames.extend(frames)
        return self._frames.pop(0)

    def _read(self, timeout: float) -> bytes | None:
        self.sock.settimeout(max(timeout, 0.001))
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
        frame = self.recv(timeout, expecting=want)
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

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


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
    """A connection whose bytes travel as WebSocket messages (conformance/websocket.py): each
    ``send`` piece is one message (text, or binary when ``binary``), and what comes back is the
    concatenated payload of the data messages. Pings are answered; a close frame is a close."""

    def __init__(self, sock: socket.socket, spec, timeout: float, transcript: Transcript,
                 decoder=None, encode=None, binary: bool = False, pending: bytes = b"") -> None:
        from conformance import websocket
        super().__init__(sock, spec, timeout, transcript, decoder, encode)
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
        return b"" if self._peer_closed else None

    def close(self) -> None:
        try:
            self.sock.sendall(self._ws.encode_frame(self._ws.OP_CLOSE, (1000).to_bytes(2, "big")))
        except OSError:
            pass
        super().close()


class Target:
    """Where the suite connects: host and port, plus what it needs to speak to it. ``url``:
    a ``ws://``/``http://`` address when the target is reached through HTTP + WebSocket."""

    def __init__(self, host: str, port: int, spec, profile, timeout: float = DEFAULT_TIMEOUT,
                 embedded: bool = False, url: str | None = None) -> None:
        self.host, self.port, self.spec, self.profile = host, port, spec, profile
        self.url = url
        self.timeout = timeout
        self.embedded = embedded
        self.connections: list[Connection] = []
        self.transcripts: list[Transcript] = []

    def connect(self, name: str = "", *, decoder=None, encode=None) -> Connection:
        transcript = self._transcript(name)
        transcript.add("--", b"", f"connect {self.host}:{self.port}")
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except OSError as exc:
            transcript.add("--", b"", f"connect failed: {exc}")
            raise TargetClosed(f"cannot connect to {self.host}:{self.port}: {exc}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = Connection(sock, self.spec, self.timeout, transcript, decoder, encode)
        self.connections.append(conn)
        return conn

    def connect_websocket(self, url: str, name: str = "", *, decoder=None, encode=None,
                          binary: bool = False, headers: dict | None = None) -> WebSocketConnection:
        """A WebSocket to ``url`` (ws:// or http:// spelling)."""
        from conformance import websocket
        transcript = self._transcript(name)
        transcript.add("--", b"", f"websocket {url}")
        ws_url = "ws" + url[4:] if url.startswith("http") else url
        try:
            sock, pending = websocket.open_socket(ws_url, self.timeout, headers)
        except (OSError, websocket.WebSocketError) as exc:
            transcript.add("--", b"", f"websocket failed: {exc}")
            raise TargetClosed(f"cannot open a WebSocket to {url}: {exc}") from None
        conn = WebSocketConnection(sock, self.spec, self.timeout, transcript, decoder, encode,
                                   binary, pending)
        self.connections.append(conn)
        return conn

    def _transcript(self, name: str) -> Transcript:
        transcript = Transcript(name or f"connection {len(self.transcripts) + 1}")
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
