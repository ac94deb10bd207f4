"""The network fuzzer over HTTP + WebSocket (SignalR's usual transport: most SignalR servers
speak nothing else). A case and a liveness probe each start as a client does: ``POST
{hub}/negotiate?negotiateVersion=1``, then a WebSocket to ``{hub}?id=<connectionToken>``
(signalr-hub-protocol.md, "Transport"; SPEC_NOTES.md). The case's bytes go as WebSocket
messages, one per write of the case (text, or binary for a MessagePack session), so a record
split across messages is one of the framings tried; the answers are the payloads of the data
messages, decoded with the reference codec as over raw TCP. Statuses as conformance/target/liveness.py.
"""
from __future__ import annotations

import select
import socket
import time

from wirecheck.conformance.target import liveness

from wirecheck.conformance.target import websocket
from wirecheck.fuzz.live.io import read_answers, send_pieces
from wirecheck.reference_impl.core.errors import FrameError


def _connect(url: str, timeout: float) -> tuple[socket.socket, bytes]:
    """negotiate, then the WebSocket; OSError (refused, reset) or WebSocketError."""
    answer = websocket.negotiate(url, timeout)
    token = answer.get("connectionToken") or answer.get("connectionId") or ""
    ws_url = ("ws" + url[4:] if url.startswith("http") else url) + (f"?id={token}" if token else "")
    return websocket.open_socket(ws_url, timeout)


def _binary(data: bytes) -> bool:
    return b'"messagepack"' in data[:256]


class _Reader:
    """The data payloads of a WebSocket, pings answered, a close frame an end."""

    def __init__(self, sock: socket.socket, pending: bytes) -> None:
        self.sock, self.pending = sock, pending
        self.frames = websocket.FrameReader()
        self.closed = False

    def read(self, wait: float) -> bytes | None:
        """Payload bytes, None when nothing came within ``wait``, b"" once the peer closed."""
        if self.closed:
            return b""
        if self.pending:
            raw, self.pending = self.pending, b""
        else:
            if not select.select([self.sock], [], [], wait)[0]:
                return None
            raw = self.sock.recv(65536)
            if not raw:
                self.closed = True
                return b""
        data = bytearray()
        for opcode, _fin, payload in self.frames.feed(raw):
            if opcode in (websocket.OP_TEXT, websocket.OP_BINARY, websocket.OP_CONT):
                data += payload
            elif opcode == websocket.OP_PING:
                self.sock.sendall(websocket.encode_frame(websocket.OP_PONG, payload))
            elif opcode == websocket.OP_CLOSE:
                self.closed = True
                break
        return bytes(data) if data or self.closed else None


def send_and_read(spec, url: str, data: bytes, writes: list[int], profile: str | None,
                  quiet: float, timeout: float, max_bytes: int, out):
    """fuzz/live/fuzzer.py's ``send_and_read`` over negotiate + WebSocket, into ``out`` (a fresh
    live.Outcome: passed in, so that this module does not import the one that uses it)."""
    try:
        sock, pending = _connect(url, timeout)
    except ConnectionRefusedError as exc:
        out.send_error, out.ended = f"cannot connect: {exc.strerror or exc}", "refused"
        return out
    except (OSError, websocket.WebSocketError) as exc:
        out.send_error, out.ended = f"negotiate or upgrade failed: {exc}", "rst"
        return out
    opcode = websocket.OP_BINARY if _binary(data) else websocket.OP_TEXT
    reader = _Reader(sock, pending)
    try:
        send_pieces(out, data, writes, lambda piece: sock.sendall(websocket.encode_frame(opcode, piece)))
        read_answers(out, spec.make_decoder(origin="server", profile=profile), reader.read, quiet, timeout,
                     max_bytes, broken=(websocket.WebSocketError,))
    finally:
        sock.close()
    return out


def probe(spec, url: str, profile: str | None = None, timeout: float = 2.0) -> liveness.ProbeResult:
    """conformance/target/liveness.py's probe over negotiate + WebSocket: the protocol's liveness probe
    (the SignalR handshake and an Invocation) must get a frame back."""
    deadline = time.monotonic() + timeout
    try:
        sock, pending = _connect(url, timeout)
    except ConnectionRefusedError as exc:
        return liveness.ProbeResult(liveness.REFUSED, f"cannot connect to {url}: {exc.strerror or exc}")
    except socket.timeout:
        return liveness.ProbeResult(liveness.SILENT, f"no negotiate or upgrade answer within {timeout:g} s")
    except (OSError, websocket.WebSocketError) as exc:
        if "within" in str(exc):
            return liveness.ProbeResult(liveness.SILENT, f"{url}: {exc}")
        return liveness.ProbeResult(liveness.CLOSED, f"{url}: negotiate or upgrade failed: {exc}")
    decoder = spec.make_decoder(origin="server", profile=profile)
    reader = _Reader(sock, pending)
    try:
        request = spec.liveness_probe(profile)
        sock.sendall(websocket.encode_frame(websocket.OP_BINARY if _binary(request) else websocket.OP_TEXT,
                                            request))
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return liveness.ProbeResult(liveness.SILENT, f"no answer to the liveness probe within {timeout:g} s")
            try:
                chunk = reader.read(left)
            except (OSError, websocket.WebSocketError) as exc:
                return liveness.ProbeResult(liveness.CLOSED, f"the probe's WebSocket failed: {exc}")
            if chunk:
                try:
                    frames = decoder.feed(chunk)
                except FrameError as exc:
                    return liveness.ProbeResult(liveness.GARBAGE, f"undecodable probe answer: {exc}")
                if frames:
                    return liveness.ProbeResult(liveness.OK, frames=frames)
            if reader.closed:
                return liveness.ProbeResult(liveness.CLOSED, "the probe's WebSocket was closed without an answer")
    finally:
        sock.close()


def settled_probe(spec, url: str, profile: str | None = None, timeout: float = 2.0,
                  pause: float = 0.2) -> liveness.ProbeResult:
    """As liveness.settled_probe: a second look after a first without an answer."""
    result = probe(spec, url, profile, timeout)
    if result.status in (liveness.SILENT, liveness.CLOSED):
        time.sleep(pause)
        result = probe(spec, url, profile, timeout)
    return result
