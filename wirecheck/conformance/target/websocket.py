"""The suite's WebSocket client (RFC 6455), small and synchronous, so a test keeps the same
send/expect/transcript vocabulary over a WebSocket as over raw TCP.

Only what a conformance client needs: the opening handshake (with ``Sec-WebSocket-Accept``
checked), masked client frames, text or binary data messages (fragmented ones reassembled),
answers to pings, and the closing handshake. Every read has the caller's timeout. The
transcript records the messages' payloads (the protocol under test), not the WebSocket
framing around them.

Also here: ``negotiate`` (SignalR's ``POST {hub}/negotiate``) over ``http.client``.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import socket
import struct
import threading
import time
from typing import Optional
from urllib.parse import urlsplit

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"       # RFC 6455 section 1.3
OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
#: Largest message the suite accepts from a target (a bound, not a protocol limit).
MAX_MESSAGE = 64 * 1024 * 1024
MAX_HEADERS = 64 * 1024


class WebSocketError(Exception):
    """The peer broke RFC 6455 or refused the upgrade. From :meth:`FrameReader.feed`,
    ``frames`` holds the frames read whole before the offending one (as FrameError's does)."""

    def __init__(self, message: str, frames: Optional[list] = None) -> None:
        super().__init__(message)
        self.frames = frames if frames is not None else []


class WebSocketTimeout(WebSocketError):
    """The peer did not finish its answer (upgrade, negotiate) in time: silence, not a refusal."""


def accept_key(key: str) -> str:
    return base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()


def encode_frame(opcode: int, payload: bytes, fin: bool = True, mask: Optional[bytes] = None) -> bytes:
    """A client frame (always masked, RFC 6455 section 5.3)."""
    mask = mask if mask is not None else os.urandom(4)
    head = bytearray([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126:
        head.append(0x80 | n)
    elif n < 1 << 16:
        head.append(0x80 | 126)
        head += struct.pack("!H", n)
    else:
        head.append(0x80 | 127)
        head += struct.pack("!Q", n)
    head += mask
    return bytes(head) + unmask(payload, mask)


def encode_server_frame(opcode: int, payload: bytes) -> bytes:
    """A server frame: whole and unmasked (RFC 6455 section 5.1)."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return head + payload


def unmask(payload: bytes, mask: bytes) -> bytes:
    """``payload`` XOR the 4-byte ``mask`` repeated (masking and unmasking are the same,
    RFC 6455 section 5.3)."""
    n = len(payload)
    if n < 64:
        return bytes(b ^ mask[i & 3] for i, b in enumerate(payload))
    key = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
    return (int.from_bytes(payload, "big") ^ key).to_bytes(n, "big")


def frame_header(buf, start: int = 0) -> tuple[bool, int, bool, int, int] | None:
    """``(fin, opcode, masked, payload length, payload offset)`` of the frame at ``start``
    (the offset is past the mask key, if any), or None while its header is incomplete
    (RFC 6455 section 5.2)."""
    if len(buf) - start < 2:
        return None
    first, second = buf[start], buf[start + 1]
    n, at = second & 0x7F, start + 2
    if n == 126:
        if len(buf) - start < 4:
            return None
        n, at = struct.unpack_from("!H", buf, start + 2)[0], start + 4
    elif n == 127:
        if len(buf) - start < 10:
            return None
        n, at = struct.unpack_from("!Q", buf, start + 2)[0], start + 10
    masked = bool(second & 0x80)
    return bool(first & 0x80), first & 0x0F, masked, n, at + (4 if masked else 0)


class FrameReader:
    """Incremental reader of server frames (unmasked). ``feed`` returns (opcode, fin, payload)
    for each complete frame; a frame it refuses raises WebSocketError with the frames of the
    same ``feed`` before it on ``frames`` (so what comes out does not depend on how the bytes
    were split into reads), and again on every later ``feed``."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._error: Optional[str] = None       # sticky: nothing is buffered after it

    @property
    def buffered(self) -> int:
        """Bytes of a frame not yet whole."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[tuple[int, bool, bytes]]:
        if self._error is not None:
            raise WebSocketError(self._error)
        self._buf += data
        out: list[tuple[int, bool, bytes]] = []
        start = 0
        try:
            start = self._read(out)
        except WebSocketError as exc:
            self._error, self._buf = str(exc), bytearray()
            exc.frames = out
            raise
        del self._buf[:start]          # once per feed: many small frames stay linear
        return out

    def _read(self, out: list) -> int:
        """Appends the whole frames from the buffer's start; returns where the rest begins."""
        buf, start = self._buf, 0
        while True:
            if len(buf) - start >= 2 and buf[start + 1] & 0x80:
                raise WebSocketError("server frame is masked (RFC 6455 5.1)")
            header = frame_header(buf, start)
            if header is None:
                return start
            fin, opcode, _, n, pos = header
            if n > MAX_MESSAGE:
                raise WebSocketError(f"frame of {n} bytes exceeds the suite's limit")
            if len(buf) < pos + n:
                return start
            out.append((opcode, fin, bytes(buf[pos:pos + n])))
            start = pos + n


def open_socket(url: str, timeout: float, headers: Optional[dict] = None) -> tuple[socket.socket, bytes]:
    """Connect and upgrade; returns the socket and any bytes read past the response headers.
    ``timeout`` bounds the whole upgrade, not each read: a server trickling its response a byte
    at a time must not keep the kit waiting ``MAX_HEADERS`` times over."""
    deadline = time.monotonic() + timeout
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Upgrade: websocket",
             "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    try:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        response = bytearray()
        while b"\r\n\r\n" not in response:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout
            sock.settimeout(left)
            chunk = sock.recv(4096)
            if not chunk:
                raise WebSocketError("connection closed during the WebSocket upgrade")
            response += chunk
            if len(response) > MAX_HEADERS:
                raise WebSocketError("upgrade response headers too long")
        sock.settimeout(timeout)
    except socket.timeout:
        sock.close()
        raise WebSocketTimeout(f"no upgrade response within {timeout:g} s") from None
    except (OSError, WebSocketError):
        sock.close()
        raise
    head, _, rest = bytes(response).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    fields = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    status = status_line.split(" ", 2)
    if len(status) < 2 or status[1] != "101":
        sock.close()
        raise WebSocketError(f"upgrade refused: {status_line!r}")
    if fields.get("sec-websocket-accept") != accept_key(key):
        sock.close()
        raise WebSocketError("wrong Sec-WebSocket-Accept")
    return sock, rest


def negotiate(url: str, timeout: float, version: Optional[int] = 1) -> dict:
    """SignalR negotiate (SPEC_NOTES: ``POST {hub}/negotiate?negotiateVersion=1``, empty body).
    ``timeout`` bounds the whole exchange: http.client's timeout is per read, and a server that
    trickles its status line would otherwise hold the kit for 64 KiB of seconds. A malformed
    answer (http.client.HTTPException) is a WebSocketError like any other refusal."""
    parts = urlsplit(url)
    conn_class = http.client.HTTPSConnection if parts.scheme in ("https", "wss") else http.client.HTTPConnection
    conn = conn_class(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    path = parts.path.rstrip("/") + "/negotiate" + ("" if version is None else f"?negotiateVersion={version}")
    expired = threading.Event()

    def cut() -> None:                 # unblocks the read in progress: it sees the end of input
        expired.set()
        if conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
    watchdog = threading.Timer(timeout, cut)
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.request("POST", path, body=b"", headers={"Content-Length": "0"})
        response = conn.getresponse()
        body = response.read(MAX_HEADERS)
    except (http.client.HTTPException, OSError) as exc:
        if expired.is_set():
            raise WebSocketTimeout(f"no complete negotiate answer within {timeout:g} s") from None
        if isinstance(exc, OSError):
            raise
        raise WebSocketError(f"negotiate answer is not HTTP: {exc!r}") from None
    finally:
        watchdog.cancel()
        conn.close()
    if expired.is_set():
        raise WebSocketTimeout(f"no complete negotiate answer within {timeout:g} s")
    if response.status != 200:
        raise WebSocketError(f"negotiate answered HTTP {response.status}")
    try:
        return json.loads(body)
    except ValueError:
        raise WebSocketError(f"negotiate answer is not JSON: {body[:80]!r}") from None
