"""SignalR's HTTP + WebSocket transport read from captured bytes: one direction of one TCP
connection, as ``wirecheck decode --pcap`` and replay see today's clients.

Real clients (signalr-real-clients.md; SPEC_NOTES.md, SignalR, "Transport used by real
clients") do not speak the raw transport. They ``POST {hub}/negotiate`` (plain HTTP/1.1,
possibly several exchanges on one keep-alive connection), then open another connection with
``GET {hub}?id=<token>`` and ``Upgrade: websocket``, get ``101 Switching Protocols``, and from
there exchange RFC 6455 frames whose data messages carry the hub protocol's bytes: the same
bytes as the raw transport (the JSON handshake, then 0x1E- or VarInt-framed records).

:class:`TransportDecoder` reads one direction of such a connection:

- HTTP/1.1 messages (RFC 9112): start line, header fields, then the body by ``Content-Length``,
  by ``Transfer-Encoding: chunked`` (trailer fields are checked, then dropped), or, for a
  response with neither that may have one (not 1xx, 204 or 304), up to the end of the stream:
  :meth:`~TransportDecoder.eof` returns that last response. Each message is one
  :class:`HttpRequest` or :class:`HttpResponse`;
- after a request with ``Upgrade: websocket`` (client) or a ``101`` response (server), the rest
  of the stream is WebSocket frames (RFC 6455 section 5.2). Ping, pong and close frames become
  :class:`WebSocketPing`, :class:`WebSocketPong` and :class:`WebSocketClose`; the payload of
  each text or binary data frame goes, as soon as that frame is whole, to an inner hub decoder
  (:func:`.codec.make_decoder`, told the direction), and its messages come out in order. A
  record may span frames and messages, and a message may hold several records: the inner
  decoder sees one byte stream. Forwarding per frame rather than per reassembled message gives
  the same hub messages and holds at most one frame, never a whole message.

:func:`make_capture_decoder` chooses between this and the raw transport from the first bytes.

Decisions where the documents leave room:

- direction: ``origin`` when given, else the kind of the first start line; a request in the
  server's direction (or a response in the client's) is an error;
- masking (RFC 6455 5.1): an unmasked client frame, or a masked server frame, is refused
  (BAD_VALUE). The receiving side must close the connection on it, so nothing a capture shows
  after it is meaningful;
- extensions: no RSV bit is understood, so a compressed (permessage-deflate) frame is refused;
  real servers do not enable compression by default (signalr-real-clients.md);
- a response to HEAD would have no body, but one direction cannot see the other's method;
  SignalR never sends HEAD. A client whose upgrade is refused sends nothing more in practice,
  so the client side switches to frames right after the upgrade request.

Errors: only :class:`~reference_impl.core.errors.FrameError`, offsets counted from the first
byte of the stream. LENGTH_TOO_LARGE: a header block, field count, body, chunk, frame or
message over :class:`TransportLimits`, a control frame over 125 bytes. LENGTH_TOO_SMALL: a
close body of one byte. BAD_ENCODING: not HTTP/1.1 syntax (start line, field line, chunk line,
bare CR), a non-minimal frame length, a text message or close reason that is not UTF-8.
BAD_VALUE: wrong direction or masking, RSV bits, a fragmented control frame, a continuation
outside a message, an invalid close code, a bad Content-Length or Transfer-Encoding.
CONFLICTING_FIELDS: both Content-Length and Transfer-Encoding (RFC 9112 6.2). UNKNOWN_TYPE: a
reserved opcode. TRAILING_BYTES: bytes after a close frame. TRUNCATED: the stream ended inside
a message, a frame, a fragmented message or a hub record. Transport errors are sticky; a bad
hub message is not (the inner decoder's rule: the records around it are intact).
"""
from __future__ import annotations

import codecs
from collections import deque
from typing import Optional

from ..core.decoding import IncrementalDecoder
from ..core.errors import Category, FrameError, LengthError, PayloadError, UnknownTypeError
from ..core.framebuffer import FrameBuffer
from . import codec
from .constants import PROTOCOL

from .transport_frames import (  # noqa: F401  (names other modules read here)
    OP_BINARY, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT,
    Headers, HttpRequest, HttpResponse, MAX_BODY, MAX_CHUNK_LINE, MAX_HEADER_BLOCK,
    MAX_HEADER_FIELDS, MAX_MESSAGE, MAX_METHOD, SNIFF_LIMIT, TRANSPORT_FRAMES, TransportLimits,
    WebSocketClose, WebSocketPing, WebSocketPong, _CHUNK_SIZE, _FIELD_NAME, _FIELD_VALUE_BAD,
    _FRAME_HEAD, _LENGTH16, _LENGTH64, _MASK_KEY, _MAX_CONTROL, _REQUEST_LINE,
    _STATUS_LINE, _TOKEN, _VIEWS, _headers, _text_or_hex, _tokens,
    _unmask, _valid_close_code, frame_to_dict, header_values, transport_limits)

# --- receive buffer -----------------------------------------------------------------------------

class _Buffer(FrameBuffer):
    """The kit's receive buffer (STYLE 2) plus what line-based HTTP needs: a search and a byte
    at an index, both relative to the read offset."""

    __slots__ = ()

    def find(self, sub: bytes, start: int = 0) -> int:
        i = self._buf.find(sub, self._pos + start)
        return -1 if i < 0 else i - self._pos

    def at(self, i: int) -> int:
        return self._buf[self._pos + i]


# --- decoder ------------------------------------------------------------------------------------

# States: between HTTP messages, inside a body (by length, chunk line, chunk data, trailer,
# to the end of the stream), WebSocket frames, and after a close frame.
HEAD, BODY, CHUNK_SIZE, CHUNK_DATA, TRAILER, TO_EOF, FRAMES, CLOSED = (
    "head", "body", "chunk-size", "chunk-data", "trailer", "to-eof", "frames", "closed")
_HTTP_STATES = (HEAD, BODY, CHUNK_SIZE, CHUNK_DATA, TRAILER, TO_EOF)


class TransportDecoder(IncrementalDecoder):
    """One direction of an HTTP/1.1 connection that may turn into a WebSocket carrying hub
    messages. ``feed(data) -> list`` of transport frames and hub messages; ``eof() -> list``
    (the response whose body ended with the stream, if any). ``origin``: "client", "server" or
    None (from the first start line); ``profile``: the hub decoder's (None = v1)."""

    protocol = PROTOCOL

    def __init__(self, limits=None, *, origin: Optional[str] = None,
                 profile: Optional[str] = None) -> None:
        if origin not in (None, "client", "server"):
            raise ValueError(f"origin must be 'client', 'server' or None, not {origin!r}")
        self.limits = transport_limits(limits)
        self.origin = origin
        self.profile = profile
        self.direction = origin
        self.hub = None                      # the inner hub decoder, once the WebSocket is up
        self._buf = _Buffer()
        self._state = HEAD
        self._error: Optional[FrameError] = None         # sticky
        self._raise_next: Optional[FrameError] = None    # raised after the frames queued
        self._out: deque = deque()
        self._line_start = 0                 # line scan: start of the current line ...
        self._scanned = 0                    # ... and how far the scan has looked
        # The HTTP message being read.
        self._message_at = 0
        self._head: Optional[tuple] = None   # (frame class, start-line parts, headers)
        self._upgrade = False
        self._need = 0
        self._body = bytearray()
        # The WebSocket data message being read (its opcode while unfinished).
        self._message: Optional[int] = None
        self._message_at_ws = 0
        self._message_size = 0
        self._utf8 = None
        # Hub bytes fed so far, and where runs of them sit in the stream (error offsets).
        self._fed = 0
        self._pieces: deque = deque()        # (hub offset, stream offset, length)
        self._hub_dirty = False              # a hub error left records to read

    # -- interface -------------------------------------------------------------------------

    @property
    def broken(self) -> bool:
        return self._error is not None

    @property
    def buffered(self) -> int:
        return len(self._buf) + len(self._body) + (self.hub.buffered if self.hub is not None else 0)

    @property
    def websocket(self) -> bool:
        """Whether the stream has switched to WebSocket frames."""
        return self._state in (FRAMES, CLOSED)

    def receive(self, data) -> None:
        if self._error is None:
            self._buf.feed(data)

    def next_frame(self):
        while True:
            if self._out:
                return self._out.popleft()
            if self._raise_next is not None:
                error, self._raise_next = self._raise_next, None
                raise error
            if self._error is not None:
                raise self._error
            if self._hub_dirty:
                self._hub_dirty = False
                self._feed_hub(b"")
                continue
            try:
                if not self._READERS[self._state](self):
                    return None
            except FrameError as exc:
                if not self._out:
                    raise
                self._raise_next = exc           # the frames queued before it go out first

    def eof(self) -> list:
        """The stream ended: frames still buffered come out; an unfinished HTTP message,
        frame, fragmented message or hub record raises TRUNCATED (with ``frames``)."""
        if self._error is not None:
            return []
        frames = self.feed(b"")
        try:
            frames += self._at_eof()
        except FrameError as exc:
            exc.frames = frames + exc.frames
            raise
        return frames

    def _at_eof(self) -> list:
        buf, state = self._buf, self._state
        if state == TO_EOF:
            self._state = HEAD
            return [self._finish(bytes(self._body))]
        if state in _HTTP_STATES:
            if state == HEAD and not len(buf):
                return []
            at = buf.offset if state == HEAD else self._message_at
            self._fail("stream ended inside an HTTP message", Category.TRUNCATED, at)
        if len(buf):
            self._fail(f"stream ended inside a WebSocket frame ({len(buf)} bytes left)",
                       Category.TRUNCATED, buf.offset)
        if self._message is not None:
            self._fail("stream ended inside a fragmented WebSocket message", Category.TRUNCATED,
                       self._message_at_ws)
        if self.hub is not None:
            try:
                more = self.hub.eof()
            except FrameError as exc:
                raise self._relay(exc) from None
            return list(more or [])
        return []

    # -- errors ----------------------------------------------------------------------------

    def _fail(self, message: str, category: Category, offset: int, cls=PayloadError):
        """An error of the HTTP/WebSocket layer (marked ``transport``: the observer gives it no
        catalogue rule); the hub's own errors come through :meth:`_relay`."""
        error = cls(message, category=category, protocol=PROTOCOL, offset=offset)
        error.transport = True
        self._error = error
        raise error

    # -- HTTP ------------------------------------------------------------------------------

    def _block_end(self) -> Optional[int]:
        """Length of the buffered lines up to and including the first empty one, or None.
        Lines end with LF, optionally after CR (RFC 9112 2.2); the scan resumes where it
        stopped, so a block arriving byte by byte costs O(n)."""
        buf, limit = self._buf, self.limits.max_header_block
        while True:
            lf = buf.find(b"\n", self._scanned)
            if lf < 0 or lf >= limit:
                self._scanned = len(buf)
                if len(buf) > limit or lf >= limit:
                    self._fail(f"header block longer than {limit} bytes", Category.LENGTH_TOO_LARGE,
                               buf.offset, LengthError)
                return None
            size = lf - self._line_start
            if size == 0 or (size == 1 and buf.at(self._line_start) == 0x0D):
                self._line_start = self._scanned = 0
                return lf + 1
            self._line_start = self._scanned = lf + 1

    def _lines(self, block: bytes, at: int) -> list[tuple[int, str]]:
        """(stream offset, text) of each line of a block, without the empty last one."""
        out, pos = [], at
        for raw in block.split(b"\n")[:-2]:
            line = raw[:-1] if raw.endswith(b"\r") else raw
            if b"\r" in line:
                self._fail("bare CR in a header line", Category.BAD_ENCODING,
                           pos + line.index(b"\r"))
            out.append((pos, line.decode("latin-1")))
            pos += len(raw) + 1
        return out

    def _fields(self, lines: list[tuple[int, str]]) -> tuple[Headers, dict[str, int]]:
        """Parsed field lines, and the offset of each field's first line (lower-case names)."""
        if len(lines) > self.limits.max_header_fields:
            self._fail(f"more than {self.limits.max_header_fields} header fields",
                       Category.LENGTH_TOO_LARGE, lines[0][0], LengthError)
        headers, where = [], {}
        for at, line in lines:
            name, colon, value = line.partition(":")
            if not colon or not _FIELD_NAME.fullmatch(name):
                what = "obsolete line folding" if line[:1] in (" ", "\t") else "not a header field"
                self._fail(f"{what}: {line[:60]!r}", Category.BAD_ENCODING, at)
            value = value.strip(" \t")
            if _FIELD_VALUE_BAD.search(value):
                self._fail(f"control character in the value of {name}", Category.BAD_ENCODING, at)
            headers.append((name, value))
            where.setdefault(name.lower(), at)
        return tuple(headers), where

    def _read_head(self) -> bool:
        buf = self._buf
        # RFC 9112 2.2: empty lines before a start line are ignored.
        while self._scanned == 0 and len(buf) and buf.at(0) in (0x0D, 0x0A):
            buf.skip(1)
        end = self._block_end()
        if end is None:
            return False
        at = buf.offset
        lines = self._lines(buf.take(end), at)
        (line_at, start), rest = lines[0], lines[1:]
        headers, where = self._fields(rest)
        if start.startswith("HTTP/"):
            kind, match = "server", _STATUS_LINE.fullmatch(start)
        else:
            kind, match = "client", _REQUEST_LINE.fullmatch(start)
        if match is None:
            self._fail(f"not an HTTP/1.1 start line: {start[:60]!r}", Category.BAD_ENCODING, line_at)
        if self.direction is not None and kind != self.direction:
            what = "a response" if kind == "server" else "a request"
            self._fail(f"{what} in the {self.direction}'s direction", Category.BAD_VALUE, line_at)
        self.direction = kind
        self._message_at = at
        if kind == "client":
            method, target, version, major = match.groups()
            status = None
            self._head = (HttpRequest, (method, target, version), headers)
            self._upgrade = "websocket" in _tokens(headers, "upgrade")
        else:
            version, major, code, reason = match.groups()
            status = int(code)
            if not 100 <= status <= 599:
                self._fail(f"status code {status} outside 100-599", Category.BAD_VALUE, line_at)
            self._head = (HttpResponse, (version, status, reason or ""), headers)
            self._upgrade = status == 101
            if status == 101 and "websocket" not in _tokens(headers, "upgrade"):
                self._fail("101 Switching Protocols to something other than websocket",
                           Category.BAD_VALUE, line_at)
        if major != "1":
            self._fail(f"{version} is not HTTP/1.x", Category.BAD_VALUE, line_at)
        self._body = bytearray()
        self._start_body(headers, where, status)
        return True

    def _start_body(self, headers: Headers, where: dict[str, int], status: Optional[int]) -> None:
        """RFC 9112 6.3: how the body of this message is delimited."""
        if status is not None and (status < 200 or status in (204, 304)):
            self._emit(b"")
            return
        codings = _tokens(headers, "transfer-encoding")
        lengths = [item.strip() for value in header_values(headers, "content-length")
                   for item in value.split(",")]
        if codings:
            if lengths:
                self._fail("both Content-Length and Transfer-Encoding (RFC 9112 6.2)",
                           Category.CONFLICTING_FIELDS, where["content-length"])
            if codings[-1] == "chunked" and codings.count("chunked") == 1:
                self._state, self._scanned = CHUNK_SIZE, 0
            elif status is None or "chunked" in codings:
                self._fail(f"Transfer-Encoding {', '.join(codings)} does not end with one chunked",
                           Category.BAD_VALUE, where["transfer-encoding"])
            else:
                self._state = TO_EOF
            return
        if not lengths:
            if status is None:
                self._emit(b"")
            else:
                self._state = TO_EOF
            return
        at = where["content-length"]
        if any(not text.isdigit() or not text.isascii() for text in lengths):
            self._fail(f"Content-Length {', '.join(lengths)!r} is not a number", Category.BAD_ENCODING, at)
        values = {text.lstrip("0") or "0" for text in lengths}
        if len(values) > 1:
            self._fail(f"different Content-Length values {', '.join(lengths)}", Category.BAD_VALUE, at)
        text = values.pop()
        if len(text) > 18 or int(text) > self.limits.max_body:
            self._fail(f"Content-Length {text[:24]} exceeds the limit of {self.limits.max_body}",
                       Category.LENGTH_TOO_LARGE, at, LengthError)
        self._need = int(text)
        if self._need:
            self._state = BODY
        else:
            self._emit(b"")

    def _finish(self, body: bytes):
        cls, parts, headers = self._head
        self._head = None
        self._body = bytearray()
        return cls(*parts, headers, body)

    def _emit(self, body: bytes) -> None:
        """The message is whole: queue it, then read the next one or the WebSocket."""
        self._out.append(self._finish(body))
        if self._upgrade:
            self._state = FRAMES
            self.hub = codec.make_decoder(limits=self.limits, origin=self.direction,
                                          profile=self.profile)
        else:
            self._state = HEAD

    def _read_body(self) -> bool:
        if len(self._buf) < self._need:
            return False
        self._emit(self._buf.take(self._need))
        return True

    def _read_chunk_size(self) -> bool:
        buf = self._buf
        lf = buf.find(b"\n", self._scanned)
        if lf < 0 or lf >= MAX_CHUNK_LINE:
            self._scanned = len(buf)
            if len(buf) > MAX_CHUNK_LINE or lf >= MAX_CHUNK_LINE:
                self._fail(f"chunk-size line longer than {MAX_CHUNK_LINE} bytes",
                           Category.LENGTH_TOO_LARGE, buf.offset, LengthError)
            return False
        at = buf.offset
        raw = buf.take(lf + 1)[:-1]
        line = (raw[:-1] if raw.endswith(b"\r") else raw).decode("latin-1")
        self._scanned = 0
        match = _CHUNK_SIZE.fullmatch(line)
        if match is None:
            self._fail(f"not a chunk-size line: {line[:40]!r}", Category.BAD_ENCODING, at)
        digits = match.group(1).lstrip("0") or "0"
        if len(digits) > 15 or len(self._body) + int(digits, 16) > self.limits.max_body:
            self._fail(f"chunked body longer than {self.limits.max_body} bytes",
                       Category.LENGTH_TOO_LARGE, at, LengthError)
        self._need = int(digits, 16)
        self._state = CHUNK_DATA if self._need else TRAILER
        return True

    def _read_chunk_data(self) -> bool:
        buf, need = self._buf, self._need
        if len(buf) < need + 1:
            return False
        ending = buf.at(need)
        if ending == 0x0D:
            if len(buf) < need + 2:
                return False
            ending = buf.at(need + 1)
            width = 2
        else:
            width = 1
        if ending != 0x0A:
            self._fail("chunk data not followed by CRLF", Category.BAD_ENCODING, buf.offset + need)
        self._body += buf.take(need)
        buf.skip(width)
        self._state, self._scanned = CHUNK_SIZE, 0
        return True

    def _read_trailer(self) -> bool:
        end = self._block_end()
        if end is None:
            return False
        at = self._buf.offset
        self._fields(self._lines(self._buf.take(end), at))     # checked, then dropped
        self._emit(bytes(self._body))
        return True

    def _read_to_eof(self) -> bool:
        buf = self._buf
        if len(self._body) + len(buf) > self.limits.max_body:
            self._fail(f"response body longer than {self.limits.max_body} bytes",
                       Category.LENGTH_TOO_LARGE, self._message_at, LengthError)
        if len(buf):
            self._body += buf.take(len(buf))
        return False

    # -- WebSocket -------------------------------------------------------------------------

    def _read_frame(self) -> bool:
        buf = self._buf
        head = buf.unpack(_FRAME_HEAD)
        if head is None:
            return False
        first, second = head
        at = buf.offset
        fin, opcode, masked, size = bool(first & 0x80), first & 0x0F, bool(second & 0x80), second & 0x7F
        if first & 0x70:
            self._fail("RSV bits set: no extension is decoded (permessage-deflate included)",
                       Category.BAD_VALUE, at)
        handler = self._ON_OPCODE.get(opcode)
        if handler is None:
            self._fail(f"reserved opcode 0x{opcode:x}", Category.UNKNOWN_TYPE, at, UnknownTypeError)
        if masked != (self.direction == "client"):
            what = "unmasked client frame" if self.direction == "client" else "masked server frame"
            self._fail(f"{what} (RFC 6455 5.1)", Category.BAD_VALUE, at)
        if opcode >= OP_CLOSE:
            if not fin:
                self._fail("fragmented control frame (RFC 6455 5.5)", Category.BAD_VALUE, at)
            if size > _MAX_CONTROL:
                self._fail(f"control frame payload over {_MAX_CONTROL} bytes",
                           Category.LENGTH_TOO_LARGE, at, LengthError)
        elif opcode == OP_CONTINUATION and self._message is None:
            self._fail("continuation frame outside a message", Category.BAD_VALUE, at)
        elif opcode != OP_CONTINUATION and self._message is not None:
            self._fail("data frame inside an unfinished fragmented message", Category.BAD_VALUE, at)
        width = 2
        if size == 126:
            got = buf.unpack(_LENGTH16, 2)
            if got is None:
                return False
            size, width = got[0], 4
            if size < 126:
                self._fail(f"length {size} in 16 bits (RFC 6455 5.2: minimal)", Category.BAD_ENCODING, at)
        elif size == 127:
            got = buf.unpack(_LENGTH64, 2)
            if got is None:
                return False
            size, width = got[0], 10
            if size >> 63:
                self._fail("64-bit length with its top bit set", Category.BAD_VALUE, at)
            if size <= 0xFFFF:
                self._fail(f"length {size} in 64 bits (RFC 6455 5.2: minimal)", Category.BAD_ENCODING, at)
        if opcode < OP_CLOSE:
            so_far = self._message_size if opcode == OP_CONTINUATION else 0
            if so_far + size > self.limits.max_message:
                self._fail(f"WebSocket message longer than {self.limits.max_message} bytes",
                           Category.LENGTH_TOO_LARGE, at, LengthError)
        if masked:
            width += 4
        if len(buf) < width + size:
            return False
        key = buf.unpack(_MASK_KEY, width - 4)[0] if masked else None
        payload = buf.take(size, skip=width)
        if key is not None and size:
            payload = _unmask(payload, key)
        handler(self, opcode, fin, payload, at, at + width)
        return True

    def _on_data(self, opcode: int, fin: bool, payload: bytes, at: int, payload_at: int) -> None:
        if opcode != OP_CONTINUATION:
            self._message, self._message_at_ws, self._message_size = opcode, at, 0
            self._utf8 = codecs.getincrementaldecoder("utf-8")() if opcode == OP_TEXT else None
        self._message_size += len(payload)
        if self._utf8 is not None:
            try:
                self._utf8.decode(payload, final=fin)      # RFC 6455 8.1: text is UTF-8
            except UnicodeDecodeError:
                self._fail("text message is not UTF-8", Category.BAD_ENCODING, payload_at)
        if fin:
            self._message = self._utf8 = None
        if payload:
            self._pieces.append((self._fed, payload_at, len(payload)))
            self._fed += len(payload)
            self._feed_hub(payload)

    def _on_close(self, opcode: int, fin: bool, payload: bytes, at: int, payload_at: int) -> None:
        code, reason = None, ""
        if len(payload) == 1:
            self._fail("close body of one byte (RFC 6455 5.5.1)", Category.LENGTH_TOO_SMALL,
                       payload_at, LengthError)
        if payload:
            code = _LENGTH16.unpack_from(payload)[0]
            if not _valid_close_code(code):
                self._fail(f"close code {code} may not be sent (RFC 6455 7.4)", Category.BAD_VALUE,
                           payload_at)
            try:
                reason = payload[2:].decode("utf-8")
            except UnicodeDecodeError:
                self._fail("close reason is not UTF-8", Category.BAD_ENCODING, payload_at + 2)
        self._message = self._utf8 = None          # an unfinished message is abandoned
        self._out.append(WebSocketClose(code, reason))
        self._state = CLOSED

    def _on_ping_pong(self, opcode: int, fin: bool, payload: bytes, at: int, payload_at: int) -> None:
        self._out.append((WebSocketPing if opcode == OP_PING else WebSocketPong)(payload))

    def _read_closed(self) -> bool:
        if len(self._buf):
            self._fail(f"{len(self._buf)} bytes after the close frame (RFC 6455 5.5.1)",
                       Category.TRAILING_BYTES, self._buf.offset)
        return False

    # -- the hub decoder -------------------------------------------------------------------

    def _feed_hub(self, data: bytes) -> None:
        """Queue the hub messages ``data`` completes; a hub error is raised after them (and
        stays, if it broke the hub's framing)."""
        hub = self.hub
        try:
            messages = hub.feed(data)
        except FrameError as exc:
            self._out.extend(exc.frames)
            error = self._relay(exc)
            if hub.broken:
                self._error = error
            else:
                self._hub_dirty = True
            self._raise_next = error
            return
        self._out.extend(messages)
        consumed, pieces = self._fed - hub.buffered, self._pieces
        while pieces and pieces[0][0] + pieces[0][2] <= consumed:
            pieces.popleft()

    def _relay(self, exc: FrameError) -> FrameError:
        """The hub's error with its offset moved from the hub's byte stream to this one."""
        offset = self._buf.offset
        for hub_at, stream_at, _ in reversed(self._pieces):
            if exc.offset >= hub_at:
                offset = stream_at + exc.offset - hub_at
                break
        return type(exc)(exc.message, category=exc.category, protocol=exc.protocol or PROTOCOL,
                         offset=offset)

    _READERS = {HEAD: _read_head, BODY: _read_body, CHUNK_SIZE: _read_chunk_size,
                CHUNK_DATA: _read_chunk_data, TRAILER: _read_trailer, TO_EOF: _read_to_eof,
                FRAMES: _read_frame, CLOSED: _read_closed}
    _ON_OPCODE = {OP_CONTINUATION: _on_data, OP_TEXT: _on_data, OP_BINARY: _on_data,
                  OP_CLOSE: _on_close, OP_PING: _on_ping_pong, OP_PONG: _on_ping_pong}


# --- choosing the transport of a captured stream ------------------------------------------------

_SPACE = frozenset(b" \t\r\n")
_METHOD_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ-_")


def sniff(head: bytes, final: bool = False) -> Optional[str]:
    """``"http"`` when ``head`` starts (after whitespace) with ``HTTP/`` or a method and a
    space, ``"raw"`` for anything else (the raw transport starts with the JSON handshake ``{``),
    None while the bytes so far could still be either (``final``: the stream has ended)."""
    i, n = 0, len(head)
    while i < n and head[i] in _SPACE:
        i += 1
    j = i
    while j < n and j - i <= MAX_METHOD and head[j] in _METHOD_CHARS:
        j += 1
    if j < n and j - i <= MAX_METHOD:
        word, follow = head[i:j], head[j]
        if (word and follow == 0x20) or (word == b"HTTP" and follow == 0x2F):
            return "http"
        return "raw"
    if final or n >= SNIFF_LIMIT or j - i > MAX_METHOD:
        return "raw"
    return None


class CaptureDecoder:
    """One direction of a captured SignalR connection, either transport: buffers the first
    bytes until :func:`sniff` decides, then hands everything to a :class:`TransportDecoder`
    (HTTP + WebSocket) or to the raw transport's :class:`.codec.Decoder`."""

    def __init__(self, limits=None, *, origin: Optional[str] = None,
                 profile: Optional[str] = None) -> None:
        self.limits, self.origin, self.profile = limits, origin, profile
        self.decoder = None
        self._head = bytearray()

    @property
    def transport(self) -> Optional[str]:
        """"http", "raw", or None while undecided."""
        if self.decoder is None:
            return None
        return "http" if isinstance(self.decoder, TransportDecoder) else "raw"

    @property
    def broken(self) -> bool:
        return self.decoder is not None and self.decoder.broken

    @property
    def buffered(self) -> int:
        return len(self._head) if self.decoder is None else self.decoder.buffered

    def feed(self, data) -> list:
        if self.decoder is not None:
            return self.decoder.feed(data)
        self._head += data
        kind = sniff(self._head)
        return [] if kind is None else self._start(kind)

    def _start(self, kind: str) -> list:
        if kind == "http":
            self.decoder = TransportDecoder(self.limits, origin=self.origin, profile=self.profile)
        else:
            self.decoder = codec.make_decoder(limits=self.limits, origin=self.origin,
                                              profile=self.profile)
        head, self._head = bytes(self._head), bytearray()
        return self.decoder.feed(head)

    def eof(self) -> list:
        """End of the stream: any last frames (an HTTP response read to the end), or
        TRUNCATED with ``frames``."""
        if self.decoder is None:
            if not self._head:
                return []
            frames = self._start(sniff(self._head, final=True))
        else:
            frames = []
        try:
            more = self.decoder.eof()
        except FrameError as exc:
            exc.frames = frames + exc.frames
            raise
        return frames + list(more or [])


def make_capture_decoder(limits=None, origin=None, profile=None) -> CaptureDecoder:
    """Registry factory (``ProtocolSpec.make_capture_decoder``)."""
    return CaptureDecoder(limits, origin=origin, profile=profile)
