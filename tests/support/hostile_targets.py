"""Hostile targets: test servers that each misbehave in one way, for any registered protocol,
to prove the kit ends, with a verdict per case, whatever a target does (the hardening issue,
item 1). Each listens on a free loopback port in a daemon thread of this process.

    black-hole      accepts, reads and discards, never answers, never closes
    trickle         answers plausibly (valid frames of the protocol) at one byte per second
    rst-on-connect  resets each connection right after accepting it (SO_LINGER 0 close)
    rst-mid-frame   answers the first request with half a valid frame, then resets
    garbage         random bytes in bursts, forever
    huge-length     a frame header declaring ~4 GiB, then its body at one byte per second
    endless         valid frames, as fast as the socket takes them
    never-close     the reference broker behind a relay that never closes a client connection,
                    even where the protocol says the server must (it reads and discards)

Valid frames come from the reference codecs (:func:`play`). SignalR is reached either as raw
TCP (``--target HOST:PORT``) or through HTTP + WebSocket (``--target http://HOST:PORT/hub``:
negotiate, then the upgrade); with ``transport="ws"`` a server answers negotiate and the
upgrade properly and misbehaves inside the WebSocket (its frames are WebSocket frames; the
4 GiB header is a WebSocket frame's 64-bit length), except never-close, which relays the
reference broker's HTTP port.
"""
from __future__ import annotations

import base64
import hashlib
import json
import random
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Callable

from wirecheck.conformance.target.websocket import encode_server_frame, frame_header, unmask
from wirecheck.reference_impl.core import registry

KINDS = ("black-hole", "trickle", "rst-on-connect", "rst-mid-frame", "garbage", "huge-length",
         "endless", "never-close")
HUB_PATH = "/hub"
#: How long a server waits for the client's first bytes before it starts anyway.
FIRST_WAIT = 3.0
#: ~4 GiB: the largest u32 a length field holds, give or take the header.
HUGE = 0xFFFFFFF0
_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"        # RFC 6455 section 1.3


# -- what each protocol's frames look like -------------------------------------------------

@dataclass(frozen=True)
class Play:
    """The bytes a hostile server needs for one protocol. ``greeting(first request)`` is what a
    server sends before any frame (SignalR: the handshake answer; Micromessage2: the server's
    handshake) and the encoding the client chose; ``frame(encoding)`` one valid server frame;
    ``huge(encoding)`` a header declaring ~4 GiB (sent after the greeting when
    ``huge_after_greeting``)."""
    protocol: str
    greeting: Callable[[bytes], tuple[bytes, str]]
    frame: Callable[[str], bytes]
    huge: Callable[[str], bytes]
    huge_after_greeting: bool = False


def _nothing(first: bytes) -> tuple[bytes, str]:
    return b"", ""


def _u32_prefix(_encoding: str) -> bytes:
    # BlipMQ, VibeMQ and RabbitMQ Stream frames start with a u32 big-endian length.
    return struct.pack(">I", HUGE)


def _blipmq() -> Play:
    from wirecheck.reference_impl.blipmq.codec import Pong, encode
    pong = encode(Pong(7))
    return Play("blipmq", _nothing, lambda _e: pong, _u32_prefix)


def _vibemq() -> Play:
    from wirecheck.reference_impl.vibemq.codec import Message, encode
    from wirecheck.reference_impl.vibemq.constants import CommandType
    pong = encode(Message(CommandType.PONG, "hostile"))
    return Play("vibemq", _nothing, lambda _e: pong, _u32_prefix)


def _rabbitmq_stream() -> Play:
    from wirecheck.reference_impl.rabbitmq_stream.codec import Heartbeat, encode
    heartbeat = encode(Heartbeat())
    return Play("rabbitmq-stream", _nothing, lambda _e: heartbeat, _u32_prefix)


def _micromessage2() -> Play:
    from wirecheck.reference_impl.micromessage2.codec import Handshake, Message, encode, encode_handshake
    handshake = encode_handshake(Handshake("hostile"))
    message = encode(Message(1, "hostile", b"x"))
    # In the handshake's place, an ERROR frame with LARGE_PAYLOAD: a u32 length (codec.py).
    return Play("micromessage2", lambda _first: (handshake, ""), lambda _e: message,
                lambda _e: bytes([12]) + struct.pack(">I", HUGE))


def _signalr() -> Play:
    from wirecheck.reference_impl.signalr.codec import encode
    from wirecheck.reference_impl.signalr.framing import encode_varint
    from wirecheck.reference_impl.signalr.messages import Ping
    pings = {"json": encode(Ping(), "json"), "messagepack": encode(Ping(), "messagepack")}

    def greeting(first: bytes) -> tuple[bytes, str]:
        # The handshake answer is JSON whatever the hub protocol (signalr-hub-protocol.md).
        return b"{}\x1e", "messagepack" if b"messagepack" in first else "json"

    def huge(encoding: str) -> bytes:
        # MessagePack records carry a VarInt length; a JSON record has none, so the longest
        # record is one whose separator never comes.
        return encode_varint(HUGE) if encoding == "messagepack" else b'{"type":1,"target":"'
    return Play("signalr", greeting, lambda e: pings[e or "json"], huge, huge_after_greeting=True)


_PLAYS = {"blipmq": _blipmq, "vibemq": _vibemq, "rabbitmq-stream": _rabbitmq_stream,
          "micromessage2": _micromessage2, "signalr": _signalr}


def play(protocol: str) -> Play:
    return _PLAYS[protocol]()


# -- one client connection, raw or inside a WebSocket ----------------------------------------

class Link:
    """The server's end of one connection: ``send`` writes protocol bytes (in a WebSocket
    binary frame when the connection was upgraded), ``first`` is what the client sent first
    (unmasked when upgraded)."""

    def __init__(self, sock: socket.socket, ws: bool) -> None:
        self.sock = sock
        self.ws = ws
        self.first = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(encode_server_frame(0x2, data) if self.ws else data)   # binary

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_first(self, wait: float = FIRST_WAIT) -> None:
        """Wait (bounded) for the client's first bytes; in a WebSocket, its first message."""
        self.sock.settimeout(wait)
        buf = b""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                buf += chunk
                data = _ws_payload(buf) if self.ws else buf
                if data is not None and (not self.ws or data):
                    self.first = data
                    break
        except socket.timeout:
            pass
        finally:
            self.sock.settimeout(None)

    def drain(self) -> None:
        """Read and discard until the client goes."""
        while self.sock.recv(65536):
            pass

    def reset(self) -> None:
        """Close with a TCP RST (SO_LINGER on, 0 s)."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


def _ws_payload(buf: bytes) -> bytes | None:
    """The unmasked payload of the first (client, masked) frame in ``buf``; None if incomplete."""
    header = frame_header(buf)
    if header is None or len(buf) < header[4] + header[3]:
        return None
    _, _, _, n, at = header
    return unmask(buf[at:at + n], buf[at - 4:at])


def _http_front_door(sock: socket.socket) -> bool:
    """Answer one HTTP request properly: SignalR's negotiate (then close) or the WebSocket
    upgrade. True when the connection is now a WebSocket."""
    sock.settimeout(FIRST_WAIT)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk or len(head) > 65536:
            return False
        head += chunk
    sock.settimeout(None)
    request, *lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    fields = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines)}
    if request.startswith("POST ") and "/negotiate" in request:
        body = json.dumps({"negotiateVersion": 1, "connectionId": "hostile", "connectionToken": "hostile",
                           "availableTransports": [{"transport": "WebSockets",
                                                    "transferFormats": ["Text", "Binary"]}]}).encode()
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        return False
    key = fields.get("sec-websocket-key", "")
    accept = base64.b64encode(hashlib.sha1((key + _WS_GUID).encode()).digest()).decode()
    sock.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
    return True


# -- the servers ---------------------------------------------------------------------------

class HostileServer:
    """Base: a listening socket and a thread per accepted connection running :meth:`handle`.
    ``target`` is what ``wirecheck check --target`` gets."""

    kind = ""

    def __init__(self, protocol: str, transport: str = "tcp", *, interval: float = 1.0,
                 seed: int = 0) -> None:
        self.protocol = protocol
        self.play = play(protocol)
        self.ws = transport == "ws"
        self.interval = interval                 # trickle pace (seconds per byte)
        self.seed = seed
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name=f"hostile-{self.kind}").start()

    @property
    def target(self) -> str:
        if self.ws:
            return f"http://127.0.0.1:{self.port}{HUB_PATH}"
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            with self._lock:
                self._conns.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.ws and not _http_front_door(conn):
                return
            self.handle(Link(conn, self.ws))
        except (OSError, ValueError):          # the client went away (or we closed it)
            pass
        finally:
            with self._lock:
                self._conns.discard(conn)
            try:
                conn.close()
            except OSError:
                pass

    def handle(self, link: Link) -> None:
        raise NotImplementedError

    def greet(self, link: Link) -> tuple[bytes, str]:
        """The client's first bytes read; the protocol's greeting for them and the encoding."""
        link.read_first()
        return self.play.greeting(link.first)

    def pause(self, seconds: float) -> bool:
        """Sleep unless the server is stopping; False when it is."""
        return not self._stop.wait(seconds)

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> "HostileServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class BlackHole(HostileServer):
    kind = "black-hole"

    def handle(self, link: Link) -> None:
        link.drain()


class Trickle(HostileServer):
    """Valid frames (after the greeting), one byte per ``interval``."""
    kind = "trickle"

    def handle(self, link: Link) -> None:
        greeting, encoding = self.greet(link)
        data = greeting + self.play.frame(encoding) * 64
        for i in range(len(data)):
            link.send(data[i:i + 1])
            if not self.pause(self.interval):
                return


class RstOnConnect(HostileServer):
    kind = "rst-on-connect"

    def handle(self, link: Link) -> None:
        link.reset()


class RstMidFrame(HostileServer):
    """Half a valid frame (the greeting and the frame's first half), then a reset."""
    kind = "rst-mid-frame"

    def handle(self, link: Link) -> None:
        greeting, encoding = self.greet(link)
        frame = self.play.frame(encoding)
        link.send(greeting + frame[:max(1, len(frame) // 2)])
        time.sleep(0.05)                      # let the half frame leave before the reset
        link.reset()


class Garbage(HostileServer):
    """Seeded random bytes in bursts of up to 16 KiB, every few milliseconds, forever."""
    kind = "garbage"

    def handle(self, link: Link) -> None:
        rng = random.Random(self.seed + self.accepted)
        while self.pause(0.005):
            link.send(rng.randbytes(rng.randint(1, 16384)))


class HugeLength(HostileServer):
    """A header declaring ~4 GiB, then the body at one byte per ``interval``."""
    kind = "huge-length"

    def handle(self, link: Link) -> None:
        greeting, encoding = self.greet(link)
        if self.ws:
            # The WebSocket frame itself declares ~4 GiB (a 64-bit length, RFC 6455 5.2).
            link.send_raw(struct.pack("!BBQ", 0x82, 127, HUGE))
            send = link.send_raw
        else:
            link.send((greeting if self.play.huge_after_greeting else b"") + self.play.huge(encoding))
            send = link.send
        while self.pause(self.interval):
            send(b"x")


class Endless(HostileServer):
    """The greeting, then valid frames as fast as the socket takes them."""
    kind = "endless"

    def handle(self, link: Link) -> None:
        greeting, encoding = self.greet(link)
        frame = self.play.frame(encoding)
        burst = frame * max(1, 32768 // len(frame))
        if greeting:
            link.send(greeting)
        while not self._stop.is_set():
            link.send(burst)


class NeverClose(HostileServer):
    """The reference broker behind a relay: every byte is passed on both ways, but when the
    broker closes a connection the client's stays open (read and discarded) until the client
    closes it."""
    kind = "never-close"

    def __init__(self, protocol: str, transport: str = "tcp", **kwargs) -> None:
        from wirecheck.reference_impl.core.server import ThreadedServer
        spec = registry.get(protocol)
        self.broker = ThreadedServer(spec.make_broker("127.0.0.1", 0, **spec.embedded_timing)).start()
        server = self.broker.server
        if protocol == "signalr" and transport != "ws":
            self.upstream = ("127.0.0.1", server.raw_port)
        else:
            self.upstream = ("127.0.0.1", server.port)
        self.hub_path = getattr(server, "hub_path", HUB_PATH)
        super().__init__(protocol, transport, **kwargs)
        self.ws = False                 # the broker's own HTTP answers pass through the relay
        self._url = transport == "ws"

    @property
    def target(self) -> str:
        if self._url:
            return f"http://127.0.0.1:{self.port}{self.hub_path}"
        return f"127.0.0.1:{self.port}"

    def handle(self, link: Link) -> None:
        up = socket.create_connection(self.upstream, timeout=5)
        up.settimeout(None)
        pump = self._pump_websocket if self._url else self._pump
        threading.Thread(target=pump, args=(up, link.sock), daemon=True).start()
        try:
            while True:                  # client -> broker, then discard once the broker is gone
                data = link.sock.recv(65536)
                if not data:
                    break
                try:
                    up.sendall(data)
                except OSError:
                    pass
        finally:
            up.close()

    @staticmethod
    def _pump(up: socket.socket, client: socket.socket) -> None:
        """Broker -> client; the broker's close is not passed on."""
        try:
            while data := up.recv(65536):
                client.sendall(data)
        except OSError:
            pass

    @staticmethod
    def _pump_websocket(up: socket.socket, client: socket.socket) -> None:
        """Broker -> client over HTTP: the responses pass as they are; after an upgrade, the
        WebSocket frames do too, except the broker's close frame (opcode 8, RFC 6455 section
        5.5.1) and anything after it. Plain HTTP answers (negotiate) keep their connection's
        end, as a never-closing WebSocket is what this server is about."""
        buf, upgraded = b"", False
        try:
            while data := up.recv(65536):
                buf += data
                if not upgraded:
                    end = buf.find(b"\r\n\r\n")
                    if end < 0:
                        continue
                    head, buf = buf[:end + 4], buf[end + 4:]
                    client.sendall(head)
                    if not head.startswith(b"HTTP/1.1 101"):
                        client.sendall(buf)            # negotiate's body: relayed, then its close
                        while more := up.recv(65536):
                            client.sendall(more)
                        client.close()
                        return
                    upgraded = True
                while (size := _ws_frame_size(buf)) is not None:
                    frame, buf = buf[:size], buf[size:]
                    if frame[0] & 0x0F == 0x8:
                        return                          # the close frame is never passed on
                    client.sendall(frame)
        except OSError:
            pass

    def close(self) -> None:
        super().close()
        self.broker.stop()


def _ws_frame_size(buf: bytes):
    """The size of the whole WebSocket frame at the start of ``buf``, or None while it is
    incomplete (RFC 6455 section 5.2)."""
    header = frame_header(buf)
    if header is None:
        return None
    size = header[4] + header[3]
    return size if len(buf) >= size else None


SERVERS: dict[str, type[HostileServer]] = {
    cls.kind: cls for cls in (BlackHole, Trickle, RstOnConnect, RstMidFrame, Garbage, HugeLength,
                              Endless, NeverClose)}


def start(kind: str, protocol: str, transport: str = "tcp", **kwargs) -> HostileServer:
    """A running hostile server of ``kind`` for ``protocol`` (``transport="ws"``: SignalR over
    HTTP + WebSocket)."""
    return SERVERS[kind](protocol, transport, **kwargs)
