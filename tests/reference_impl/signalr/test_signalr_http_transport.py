"""SignalR's HTTP + WebSocket transport decoder (wirecheck/reference_impl/signalr/http_transport.py): both
directions of negotiate (keep-alive, chunked) and of the WebSocket connection (upgrade, 101,
masked client frames, unmasked server frames, JSON and MessagePack hub records, fragments,
ping/pong/close), the request shapes of the real clients (signalr-real-clients.md), a session
recorded byte for byte from the reference hub through a relay, the choice between the HTTP and
raw transports, each error with its category and stream offset, and arbitrary bytes. Every
decode is done whole, one byte at a time and in seeded random chunks, and the three agree.
"""
from __future__ import annotations

import json
import random
import socket
import struct
import threading

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from wirecheck.conformance.target.websocket import FrameReader, encode_frame, negotiate, open_socket
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import Category, FrameError
from wirecheck.reference_impl.core.server import ThreadedServer
from wirecheck.reference_impl.signalr import codec, http_transport
from wirecheck.reference_impl.signalr.broker import make_broker
from wirecheck.reference_impl.signalr.http_transport import (CaptureDecoder, HttpRequest, HttpResponse,
                                                   TransportDecoder, TransportLimits,
                                                   WebSocketClose, WebSocketPing, WebSocketPong,
                                                   frame_to_dict, header_values, sniff)
from wirecheck.reference_impl.signalr.messages import (Close, Completion, HandshakeRequest,
                                             HandshakeResponse, Invocation, Ping, StreamItem)

STEP = 5.0                    # every socket read in this file times out after this
MASK = b"\x37\xfa\x21\x3d"    # RFC 6455 5.7's example key: deterministic client frames
TEXT, BINARY, CONT, CLOSE, PING, PONG = 0x1, 0x2, 0x0, 0x8, 0x9, 0xA


# --- helpers ------------------------------------------------------------------------------------

def _pieces(data: bytes, rng: random.Random, most: int) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        n = rng.randint(1, most)
        out.append(data[pos:pos + n])
        pos += n
    return out


def _feed(dec, pieces: list[bytes]):
    """(frames, (category, offset) or None) of ``pieces`` fed in turn, then ``eof()``; only
    the documented error escapes."""
    frames, error = [], None
    try:
        for piece in pieces:
            frames += dec.feed(piece)
        frames += dec.eof()
    except FrameError as exc:
        assert type(exc).__module__ == "wirecheck.reference_impl.core.errors"
        assert exc.protocol == "signalr"
        frames += exc.frames
        error = (exc.category, exc.offset)
    return frames, error


def decode(data: bytes, origin: str | None = "client", profile: str | None = None, limits=None,
           seed: int = 0, factory=http_transport.make_capture_decoder):
    """(frames, (category, offset) or None): the same whole, byte by byte and in two seeded
    random chunkings; the frames ``eof()`` returns are included."""
    rng = random.Random(seed)
    ways = [[data], [data[i:i + 1] for i in range(len(data))],
            _pieces(data, rng, 17), _pieces(data, rng, 997)]
    results = [_feed(factory(limits=limits, origin=origin, profile=profile), pieces) for pieces in ways]
    for other in results[1:]:
        assert other == results[0]
    return results[0]


def ok(data: bytes, **options) -> list:
    frames, error = decode(data, **options)
    assert error is None, error
    return frames


def refused(data: bytes, **options):
    """(category, offset, frames before the error)."""
    frames, error = decode(data, **options)
    assert error is not None, frames
    return error[0], error[1], frames


def client(opcode: int, payload: bytes, fin: bool = True) -> bytes:
    return encode_frame(opcode, payload, fin=fin, mask=MASK)


def server(opcode: int, payload: bytes, fin: bool = True, length_bytes: int | None = None) -> bytes:
    """An unmasked frame; ``length_bytes`` 2 or 8 forces a 16- or 64-bit length."""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    if length_bytes == 8 or (length_bytes is None and n >= 1 << 16):
        head += bytes([127]) + struct.pack("!Q", n)
    elif length_bytes == 2 or (length_bytes is None and n >= 126):
        head += bytes([126]) + struct.pack("!H", n)
    else:
        head += bytes([n])
    return head + payload


def http(start: str, headers: list[tuple[str, str]], body: bytes = b"") -> bytes:
    lines = [start] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def hub_only(frames: list) -> list:
    return [f for f in frames if not isinstance(f, http_transport.TRANSPORT_FRAMES)]


# --- the real clients' shapes (signalr-real-clients.md) -------------------------------------------
# The document lists the clients' request lines and headers (tables "Negotiate", "Handshake
# frame") and their hub messages; these streams put those into whole requests.

TOKEN = "hD2pQ0XR3hQm9H1Vh1qFJw"
HOST = "127.0.0.1:5100"
JS_UA = "Microsoft SignalR/10.0 (10.0.11; Linux; NodeJS; 20.20.2)"
JS_NEGOTIATE = http("POST /hub/negotiate?negotiateVersion=1 HTTP/1.1", [
    ("X-Requested-With", "XMLHttpRequest"), ("User-Agent", JS_UA), ("accept", "*/*"),
    ("accept-language", "*"), ("sec-fetch-mode", "cors"), ("cache-control", "max-age=0"),
    ("content-length", "0"), ("Host", HOST), ("Connection", "keep-alive")])
PYSIGNALR_NEGOTIATE = http("POST /hub/negotiate HTTP/1.1", [
    ("Host", HOST), ("Content-Type", "application/octet-stream"), ("Content-Length", "0"),
    ("User-Agent", "Python/3.11 aiohttp/3.14.5")])
SIGNALRCORE_NEGOTIATE = http("POST /hub/negotiate HTTP/1.1", [
    ("Host", HOST), ("Content-Type", "application/json"), ("Content-Length", "0"),
    ("User-Agent", "Python-urllib/3.11"), ("Connection", "close")])
NEGOTIATE_BODY = json.dumps({"negotiateVersion": 1, "connectionToken": TOKEN, "connectionId": "c1",
                             "availableTransports": [{"transport": "WebSockets",
                                                      "transferFormats": ["Text", "Binary"]}]}).encode()


def negotiate_response(body: bytes = NEGOTIATE_BODY) -> bytes:
    return http("HTTP/1.1 200 OK", [("Content-Type", "application/json; charset=utf-8"),
                                    ("Content-Length", str(len(body))),
                                    ("Server", "Python/3.11 aiohttp/3.14.5")], body)


def upgrade(target: str = f"/hub?id={TOKEN}", extra=(("User-Agent", JS_UA),
            ("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits")),
            host: str = HOST) -> bytes:
    return http(f"GET {target} HTTP/1.1", [
        ("Sec-WebSocket-Version", "13"), ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("Connection", "Upgrade"), ("Upgrade", "websocket"), *extra, ("Host", host)])


SWITCHING = http("HTTP/1.1 101 Switching Protocols", [
    ("Upgrade", "websocket"), ("Connection", "upgrade"),
    ("Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")])

JS_ECHO = b'{"target":"Echo","arguments":["\xe2\x9c\x93"],"invocationId":"0","type":1}\x1e'
JS_STREAM = b'{"target":"Counter","arguments":[5,10],"invocationId":"1","type":4}\x1e'


# --- negotiate ----------------------------------------------------------------------------------

def test_negotiate_requests_on_one_keep_alive_connection():
    chunked = http("POST /hub/negotiate?negotiateVersion=1 HTTP/1.1",
                   [("Host", HOST), ("Transfer-Encoding", "chunked")],
                   b"4\r\n{\"a\"\r\n3;ext=1\r\n:1}\r\n0\r\nX-Trailer: t\r\n\r\n")
    frames = ok(JS_NEGOTIATE + PYSIGNALR_NEGOTIATE + chunked + SIGNALRCORE_NEGOTIATE)
    assert [type(f) for f in frames] == [HttpRequest] * 4
    js = frames[0]
    assert (js.method, js.target, js.version, js.body) == (
        "POST", "/hub/negotiate?negotiateVersion=1", "HTTP/1.1", b"")
    assert header_values(js.headers, "user-agent") == [JS_UA]
    assert ("X-Requested-With", "XMLHttpRequest") in js.headers        # order and case kept
    assert frames[1].target == "/hub/negotiate"
    assert frames[2].body == b'{"a":1}'                                 # chunks joined, trailer dropped
    assert header_values(frames[2].headers, "x-trailer") == []
    assert header_values(frames[3].headers, "connection") == ["close"]


def test_negotiate_responses_by_length_chunked_and_to_the_end():
    version0 = json.dumps({"negotiateVersion": 0, "connectionId": "c2"}).encode()
    chunked = http("HTTP/1.1 200 OK", [("Transfer-Encoding", "chunked")],
                   b"%x\r\n%s\r\n0\r\n\r\n" % (len(version0), version0))
    continue_ = http("HTTP/1.1 100 Continue", [])
    no_content = http("HTTP/1.1 204 No Content", [("Content-Length", "7")])   # 204: no body
    to_eof = b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n\r\nbusy\xff"
    frames = ok(negotiate_response() + chunked + continue_ + no_content + to_eof, origin="server")
    assert [(f.status, f.reason) for f in frames] == [(200, "OK"), (200, "OK"), (100, "Continue"),
                                                      (204, "No Content"),
                                                      (503, "Service Unavailable")]
    assert json.loads(frames[0].body)["connectionToken"] == TOKEN
    assert json.loads(frames[1].body) == {"negotiateVersion": 0, "connectionId": "c2"}
    assert frames[3].body == b"" and frames[4].body == b"busy\xff"     # the last one from eof()
    assert frames[4].version == "HTTP/1.0"


def test_bare_lf_lines_and_empty_lines_before_a_request():
    frames = ok(b"\r\n\nPOST /hub/negotiate HTTP/1.1\nHost: h\nContent-Length: 2\n\nok")
    assert frames == [HttpRequest("POST", "/hub/negotiate", "HTTP/1.1",
                                  (("Host", "h"), ("Content-Length", "2")), b"ok")]


# --- the WebSocket connection: JSON ---------------------------------------------------------------

JS_CLIENT_JSON = (upgrade()
                  + client(TEXT, b'{"protocol":"json","version":1}\x1e')
                  + client(TEXT, b'{"type":6}\x1e')                       # the JS client's first Ping
                  + client(TEXT, JS_ECHO + JS_STREAM)                     # two records, one message
                  + client(TEXT, b'{"target":"Remem', fin=False)          # one record in 3 fragments
                  + client(PING, b"p1")                                   # a ping between fragments
                  + client(CONT, b'ber","arguments":[1],"type":1}', fin=False)
                  + client(CONT, b"\x1e{\"type\":7}")                     # ... and half of the next
                  + client(TEXT, b"\x1e")
                  + client(PONG, b"")
                  + client(CLOSE, b""))                                   # JS stop(): an empty close


def test_js_client_json_session():
    frames = ok(JS_CLIENT_JSON)
    assert frames == [
        frames[0], HandshakeRequest("json", 1), Ping(),
        Invocation("Echo", ["\u2713"], "0"), frames[4], WebSocketPing(b"p1"),
        Invocation("Remember", [1]), Close(), WebSocketPong(b""), WebSocketClose(None, "")]
    assert frames[0].method == "GET" and frames[0].target == f"/hub?id={TOKEN}"
    assert type(frames[4]).__name__ == "StreamInvocation"


def test_server_json_session():
    stream = (SWITCHING
              + server(TEXT, b"{}\x1e")
              + server(TEXT, b'{"type":3,"invocationId":"0","result":"\xe2\x9c\x93"}\x1e')
              + server(TEXT, b'{"type":2,"invocationId":"1","item":0}\x1e'
                             b'{"type":2,"invocationId":"1","item":1}\x1e')
              + server(PING, b"") + server(TEXT, b'{"type":6}\x1e')
              + server(TEXT, b'{"type":7,"error":"bye"}\x1e')
              + server(CLOSE, struct.pack("!H", 1000) + b"done"))
    frames = ok(stream, origin="server")
    assert isinstance(frames[0], HttpResponse) and frames[0].status == 101
    assert frames[1:] == [HandshakeResponse(), Completion("0", "\u2713", has_result=True),
                          StreamItem("1", 0), StreamItem("1", 1), WebSocketPing(b""), Ping(),
                          Close("bye"), WebSocketClose(1000, "done")]


def test_hub_messages_equal_the_raw_decoding_of_the_payloads():
    payloads = [b'{"protocol":"json","version":1}\x1e', JS_ECHO + JS_STREAM, b'{"type":6}\x1e']
    raw = codec.decode_all(b"".join(payloads), origin="client")
    frames = ok(upgrade() + b"".join(client(TEXT, p) for p in payloads))
    assert hub_only(frames) == raw


# --- the WebSocket connection: MessagePack ----------------------------------------------------------

def _msgpack(*messages) -> bytes:
    return b"".join(codec.encode(m, "messagepack") for m in messages)


def test_js_client_messagepack_session():
    """JS: the handshake in a text frame, then binary frames (signalr-real-clients.md)."""
    records = _msgpack(Invocation("Echo", ["hi"], "0"), Invocation("Remember", [1]))
    stream = (upgrade()
              + client(TEXT, b'{"protocol":"messagepack","version":1}\x1e')
              + client(BINARY, b"\x02\x91\x06")                     # Ping, as the JS client sends it
              + client(BINARY, records[:5], fin=False) + client(CONT, records[5:])
              + client(BINARY, b"\x03\x92\x07\xc0")                 # Close [7, nil]
              + client(CLOSE, struct.pack("!H", 1000)))
    frames = ok(stream)
    assert frames[1:] == [HandshakeRequest("messagepack", 1), Ping(), Invocation("Echo", ["hi"], "0"),
                          Invocation("Remember", [1]), Close(), WebSocketClose(1000, "")]


# signalr-real-clients.md, "Handshake frame": each client's first message, its frame type and size.
REAL_HANDSHAKES = [
    ("@microsoft/signalr", TEXT, b'{"protocol":"json","version":1}\x1e', 32),
    ("@microsoft/signalr", TEXT, b'{"protocol":"messagepack","version":1}\x1e', 39),
    ("pysignalr", TEXT, b'{"protocol": "json", "version": 1}\x1e', 35),
    ("pysignalr", BINARY, b'{"protocol":"messagepack","version":1}\x1e', 39),
    ("signalrcore", TEXT, b'{"protocol": "json", "version": 1}\x1e', 35),
    ("signalrcore", BINARY, b'{"protocol": "messagepack", "version": 1}\x1e', 42),
]


@pytest.mark.parametrize("name, opcode, handshake, size", REAL_HANDSHAKES)
def test_each_real_clients_handshake_frame(name, opcode, handshake, size):
    assert len(handshake) == size
    protocol = json.loads(handshake[:-1])["protocol"]
    call = Invocation("Echo", ["x"], "a")
    if name == "signalrcore":      # its upgrade: Host without port, Content-Type, no extensions
        head = upgrade(extra=(("Content-Type", "application/json"),), host="127.0.0.1")
    else:
        head = upgrade()
    record = codec.encode(call, protocol)
    stream = head + client(opcode, handshake) + client(TEXT if protocol == "json" else BINARY, record)
    frames = ok(stream)
    assert frames[1:] == [HandshakeRequest(protocol, 1), call]
    if name == "signalrcore":
        assert header_values(frames[0].headers, "host") == ["127.0.0.1"]


def test_python_clients_json_messages_and_pysignalr_close():
    pysignalr = (b'{"target": "Echo", "arguments": ["\\u2713"], "type": 1, '
                 b'"invocationId": "6b0e9c1e-5d1b-4a53-9f5e-3b7c2a1d0e4f", "headers": {}}\x1e')
    signalrcore = (b'{"type": 4, "headers": {"Content-Type": "application/json"}, "target": "Counter", '
                   b'"arguments": [3, 10], "invocationId": "0c7f", "streamIds": []}\x1e')
    stream = (upgrade() + client(TEXT, b'{"protocol": "json", "version": 1}\x1e')
              + client(TEXT, pysignalr) + client(TEXT, signalrcore)
              + client(CLOSE, struct.pack("!H", 1011)))      # pysignalr cancelled: 1011, no hub Close
    frames = ok(stream)
    assert (frames[2].target, frames[2].arguments, frames[2].invocation_id) == (
        "Echo", ["\u2713"], "6b0e9c1e-5d1b-4a53-9f5e-3b7c2a1d0e4f")
    assert frames[3].headers == {"Content-Type": "application/json"} and frames[3].stream_ids == []
    assert frames[4] == WebSocketClose(1011, "")
    assert hub_only(frames) == codec.decode_all(
        b'{"protocol": "json", "version": 1}\x1e' + pysignalr + signalrcore, origin="client")


def test_server_messagepack_records_with_16_and_64_bit_lengths():
    items = [StreamItem("7", "x" * 200), StreamItem("7", "y" * 70_000), Completion("7")]
    records = _msgpack(*items)
    first = len(codec.encode(items[0], "messagepack"))
    stream = (SWITCHING + server(TEXT, b"{}\x1e") + server(BINARY, records[:first])        # 16-bit
              + server(BINARY, records[first:]) + server(CLOSE, b""))                     # 64-bit
    frames = ok(stream, origin="server")
    assert frames[1:] == [HandshakeResponse(), *items, WebSocketClose(None, "")]


def test_records_of_any_size_split_anywhere_across_messages():
    rng = random.Random(7)
    records = _msgpack(*[Invocation("Echo", ["z" * rng.randint(0, 300)], str(i)) for i in range(20)])
    cuts = sorted(rng.sample(range(1, len(records)), 12))
    parts = [records[a:b] for a, b in zip([0, *cuts], [*cuts, len(records)])]
    stream = upgrade() + client(TEXT, b'{"protocol":"messagepack","version":1}\x1e') \
        + b"".join(client(BINARY, p) for p in parts)
    frames = ok(stream, seed=3)
    assert [f.invocation_id for f in frames[2:]] == [str(i) for i in range(20)]


# --- choosing the transport -----------------------------------------------------------------------

@pytest.mark.parametrize("head, kind", [
    (b"GET / HTTP/1.1", "http"), (b"POST ", "http"), (b"HTTP/1.1 200", "http"),
    (b"\r\nGET ", "http"), (b"M-SEARCH ", "http"),
    (b'{"protocol":"json"', "raw"), (b'  {"type":1}', "raw"), (b"\x0e\x95\x01", "raw"),
    (b"GET/", "raw"), (b"get ", "raw"), (b"A" * 30, "raw"), (b" " * 64, "raw")])
def test_sniff(head, kind):
    # Byte by byte: undecided, then the same answer for good.
    answers = [sniff(head[:i]) for i in range(len(head) + 1)]
    decided = [a for a in answers if a is not None]
    assert decided and set(decided) == {kind}
    assert answers[answers.index(kind):] == [kind] * len(decided)


def test_sniff_waits_for_a_decision():
    assert sniff(b"") is None and sniff(b"GE") is None and sniff(b"HTTP") is None
    assert sniff(b"GE", final=True) == "raw"


@pytest.mark.parametrize("origin", ["client", None])
def test_the_raw_transport_goes_to_the_codec(origin):
    stream = b'{"protocol":"json","version":1}\x1e' + JS_ECHO + b'{"type":6}\x1e'
    frames = ok(stream, origin=origin)
    assert frames == codec.decode_all(stream, origin=origin)
    dec = http_transport.make_capture_decoder(origin=origin)
    dec.feed(stream[:1])
    assert dec.transport == "raw" and isinstance(dec.decoder, codec.Decoder)


def test_a_draft_server_stream_without_handshake_is_raw():
    stream = codec.encode(Completion("1", 3, has_result=True), "messagepack", profile="draft")
    assert ok(stream, origin="server", profile="draft") == [Completion("1", 3, has_result=True)]


def test_registry_slots():
    spec = registry.get("signalr")
    dec = spec.capture_decoder(origin="client", profile=None)
    assert isinstance(dec, CaptureDecoder)
    frames = dec.feed(JS_CLIENT_JSON) + dec.eof()
    views = [spec.frame_to_dict(f) for f in frames]
    json.dumps(views)                                             # JSON-friendly throughout
    assert views[0]["type"] == "HttpRequest" and ["Upgrade", "websocket"] in views[0]["headers"]
    assert views[1] == codec.frame_to_dict(HandshakeRequest("json", 1))
    assert views[3] == codec.frame_to_dict(frames[3])             # hub messages unchanged
    assert views[-1] == {"type": "WebSocketClose", "code": None, "reason": ""}
    assert spec.make_decoder is codec.make_decoder                 # the raw transport's, as before


def test_frame_to_dict_bodies_and_payloads():
    assert frame_to_dict(HttpResponse("HTTP/1.1", 200, "OK", (("A", "1"), ("A", "2")), b"\xff")) == {
        "type": "HttpResponse", "version": "HTTP/1.1", "status": 200, "reason": "OK",
        "headers": [["A", "1"], ["A", "2"]], "body": {"hex": "ff"}}
    assert frame_to_dict(WebSocketPing(b"hi")) == {"type": "WebSocketPing", "payload": "hi"}
    assert frame_to_dict(WebSocketPong(b"\x80")) == {"type": "WebSocketPong", "payload": {"hex": "80"}}


# --- a session recorded from the reference hub ----------------------------------------------------

class Relay:
    """A TCP relay on a free port that forwards every connection to ``upstream`` and records
    the bytes of each direction (a capture without the capture)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        self.connections: list[dict[str, bytearray]] = []
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._stop = threading.Event()
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                down, _ = self.listener.accept()
            except (socket.timeout, OSError):
                continue
            up = socket.create_connection(self.upstream, timeout=STEP)
            down.settimeout(STEP)
            record = {"c2s": bytearray(), "s2c": bytearray()}
            self.connections.append(record)
            self._sockets += [down, up]
            for src, dst, key in ((down, up, "c2s"), (up, down, "s2c")):
                t = threading.Thread(target=self._pump, args=(src, dst, record[key]), daemon=True)
                t.start()
                self._threads.append(t)

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, record: bytearray) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:                    # a timeout included
                break
            if not data:
                break
            record += data
            try:
                dst.sendall(data)
            except OSError:
                break
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def finish(self) -> list[dict[str, bytes]]:
        """Wait for every connection to end in both directions; their recordings."""
        for t in list(self._threads):
            t.join(STEP)
        assert not any(t.is_alive() for t in self._threads), "a relayed connection never ended"
        self.close()
        return [{k: bytes(v) for k, v in rec.items()} for rec in self.connections]

    def close(self) -> None:
        self._stop.set()
        self._acceptor.join(STEP)
        self.listener.close()
        for s in self._sockets:
            s.close()


def _receive(sock: socket.socket, reader: FrameReader, pending: list, count: int) -> list:
    """``count`` server frames (opcode, fin, payload), every read with the socket's timeout."""
    while len(pending) < count:
        data = sock.recv(65536)
        assert data, "the hub closed the connection early"
        pending += reader.feed(data)
    out, pending[:] = pending[:count], pending[count:]
    return out


@pytest.mark.parametrize("protocol", ["json", "messagepack"])
def test_session_recorded_from_the_reference_hub(protocol):
    calls = [Invocation("Echo", ["hi \u2713"], "1"), Invocation("Add", [2, 3], "2")]
    if protocol == "json":
        records = [codec.encode(m, "json") for m in calls]
    else:
        records = [codec.encode(m, "messagepack") for m in calls]
    with ThreadedServer(make_broker()) as server_thread:
        hub = server_thread.server
        relay = Relay((hub.host, hub.port))
        try:
            url = f"http://127.0.0.1:{relay.port}/hub"
            token = negotiate(url, STEP)["connectionToken"]
            sock, rest = open_socket(f"{url}?id={token}", STEP)
            try:
                reader, pending = FrameReader(), []
                pending += reader.feed(rest)
                handshake = json.dumps({"protocol": protocol, "version": 1}).encode() + b"\x1e"
                sock.sendall(encode_frame(TEXT, handshake))
                # Text, or binary once the handshake chose MessagePack (broker.py).
                assert [p for _, _, p in _receive(sock, reader, pending, 1)] == [b"{}\x1e"]
                opcode = TEXT if protocol == "json" else BINARY
                sock.sendall(encode_frame(opcode, records[0]))
                sock.sendall(encode_frame(opcode, records[1][:3], fin=False)
                             + encode_frame(PING, b"are you there")
                             + encode_frame(CONT, records[1][3:]))
                got = _receive(sock, reader, pending, 3)
                assert (PONG, True, b"are you there") in got
                sock.sendall(encode_frame(CLOSE, struct.pack("!H", 1000) + b"bye"))
                assert _receive(sock, reader, pending, 1)[0][0] == CLOSE
            finally:
                sock.close()
            recordings = relay.finish()
        finally:
            relay.close()
    assert len(recordings) == 2
    negotiation, websocket = recordings
    spec = registry.get("signalr")

    request = ok(negotiation["c2s"])
    response = ok(negotiation["s2c"], origin="server")
    assert [(f.method, f.target) for f in request] == [("POST", "/hub/negotiate?negotiateVersion=1")]
    assert [f.status for f in response] == [200]
    assert json.loads(response[0].body)["connectionToken"] == token

    up = ok(websocket["c2s"])
    assert up[0].target == f"/hub?id={token}" and header_values(up[0].headers, "upgrade") == ["websocket"]
    # The ping came between the fragments of the second call, so before its record completed.
    assert up[1:] == [HandshakeRequest(protocol, 1), calls[0], WebSocketPing(b"are you there"),
                      calls[1], WebSocketClose(1000, "bye")]
    down = ok(websocket["s2c"], origin="server")
    assert down[0].status == 101
    results = [m for m in down if isinstance(m, Completion)]
    assert [(c.invocation_id, c.result) for c in results] == [("1", "hi \u2713"), ("2", 5)]
    assert down[1] == HandshakeResponse()
    assert WebSocketPong(b"are you there") in down and isinstance(down[-1], WebSocketClose)
    # Without being told the direction, the same frames.
    assert ok(websocket["s2c"], origin=None) == down
    for frame in up + down:
        json.dumps(spec.frame_to_dict(frame))


# --- errors -------------------------------------------------------------------------------------

WS_CLIENT = upgrade()
WS_SERVER = SWITCHING
HS = client(TEXT, b'{"protocol":"json","version":1}\x1e')


@pytest.mark.parametrize("stream, origin, offset", [
    (JS_NEGOTIATE[:40], "client", 0),                                        # inside the head
    (JS_NEGOTIATE + b"POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", "client", len(JS_NEGOTIATE)),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "server", 0),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: 1\r\n", "server", 0),
    (WS_CLIENT + HS[:5], "client", len(WS_CLIENT)),                          # inside a frame
    (WS_CLIENT + client(TEXT, b'{"protocol":"json",', fin=False), "client", len(WS_CLIENT)),
    (WS_CLIENT + HS + client(TEXT, b'{"type":6}'), "client", len(WS_CLIENT + HS) + 6),   # a record
])
def test_truncated(stream, origin, offset):
    category, at, _ = refused(stream, origin=origin)
    assert (category, at) == (Category.TRUNCATED, offset)


@pytest.mark.parametrize("body, category", [
    (b"zz\r\nab\r\n0\r\n\r\n", Category.BAD_ENCODING),
    (b"-1\r\n", Category.BAD_ENCODING),
    (b"\r\n", Category.BAD_ENCODING),
    (b"2\r\nabX\r\n", Category.BAD_ENCODING),                                  # no CRLF after the data
    (b"1" * 17 + b"\r\n", Category.LENGTH_TOO_LARGE),
    (b"100001\r\n", Category.LENGTH_TOO_LARGE),                               # over max_body
    (b"1;" + b"e" * 5000, Category.LENGTH_TOO_LARGE),                         # endless chunk line
    (b"0\r\nnot a field\r\n\r\n", Category.BAD_ENCODING),                     # bad trailer
])
def test_bad_chunks(body, category):
    head = b"POST /hub/negotiate HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    got, offset, frames = refused(head + body, limits=TransportLimits(max_body=1 << 20))
    assert got == category and offset >= len(head) and frames == []


@pytest.mark.parametrize("stream, category", [
    (b"GET /hub HTTP/1.1\r\nContent-Length: 99999999999999999999999999999999\r\n\r\n",
     Category.LENGTH_TOO_LARGE),
    (b"GET /hub HTTP/1.1\r\nContent-Length: 1048577\r\n\r\n", Category.LENGTH_TOO_LARGE),
    (b"GET /hub HTTP/1.1\r\nContent-Length: 3, 4\r\n\r\n", Category.BAD_VALUE),
    (b"GET /hub HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", Category.BAD_ENCODING),
    (b"GET /hub HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
     Category.CONFLICTING_FIELDS),
    (b"GET /hub HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", Category.BAD_VALUE),
    (b"GET /hub HTTP/2.0\r\n\r\n", Category.BAD_VALUE),
    (b"GET /hub\r\n\r\n", Category.BAD_ENCODING),
    (b"GET /hub HTTP/1.1\r\nHost : x\r\n\r\n", Category.BAD_ENCODING),
    (b"GET /hub HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", Category.BAD_ENCODING),
    (b"GET /hub HTTP/1.1\r\nHost: a\rb\r\n\r\n", Category.BAD_ENCODING),
    (b"HTTP/1.1 200 OK\r\n\r\n", Category.BAD_VALUE),                       # a response from the client
    (b"GET /hub HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n", Category.LENGTH_TOO_LARGE),
])
def test_bad_http(stream, category):
    got, offset, _ = refused(stream)
    assert got == category


def test_a_huge_header_block_fails_at_the_limit_without_its_end():
    dec = TransportDecoder(TransportLimits(max_header_block=4096), origin="client")
    dec.feed(b"GET /hub HTTP/1.1\r\nX: " + b"a" * 4000)
    with pytest.raises(FrameError) as info:
        dec.feed(b"a" * 200)
    assert (info.value.category, info.value.offset) == (Category.LENGTH_TOO_LARGE, 0)
    assert dec.buffered < 5000
    with pytest.raises(FrameError):                         # sticky
        dec.feed(b"\r\n\r\n")
    assert dec.eof() == []


def test_a_huge_content_length_or_frame_length_allocates_nothing():
    dec = TransportDecoder(origin="client")
    with pytest.raises(FrameError) as info:
        dec.feed(b"POST /hub/negotiate HTTP/1.1\r\nContent-Length: 4000000000\r\n\r\n")
    assert info.value.category == Category.LENGTH_TOO_LARGE and info.value.offset == 30
    dec = TransportDecoder(origin="server")
    dec.feed(SWITCHING)
    with pytest.raises(FrameError) as info:
        dec.feed(b"\x82\x7f" + struct.pack("!Q", 1 << 62))
    assert (info.value.category, info.value.offset) == (Category.LENGTH_TOO_LARGE, len(SWITCHING))


def _frames_error(frames: bytes, origin: str = "client", **options):
    prefix = WS_CLIENT if origin == "client" else WS_SERVER
    category, offset, decoded = refused(prefix + frames, origin=origin, **options)
    return category, offset - len(prefix), decoded[1:]


@pytest.mark.parametrize("frames, origin, category, offset", [
    (server(TEXT, b"{}"), "client", Category.BAD_VALUE, 0),                  # an unmasked client frame
    (client(TEXT, b"{}\x1e"), "server", Category.BAD_VALUE, 0),              # a masked server frame
    (b"\x83\x80" + MASK, "client", Category.UNKNOWN_TYPE, 0),                # reserved opcode 3
    (b"\xc1\x80" + MASK, "client", Category.BAD_VALUE, 0),                   # RSV1 (compressed)
    (client(CONT, b"x"), "client", Category.BAD_VALUE, 0),                  # continuation first
    (HS + client(TEXT, b"{", fin=False) + client(TEXT, b"}"), "client", Category.BAD_VALUE, len(HS) + 7),
    (client(PING, b"x", fin=False), "client", Category.BAD_VALUE, 0),        # fragmented control
    (client(PING, b"x" * 126), "client", Category.LENGTH_TOO_LARGE, 0),
    (server(BINARY, b"x" * 10, length_bytes=2), "server", Category.BAD_ENCODING, 0),    # non-minimal
    (server(BINARY, b"x" * 200, length_bytes=8), "server", Category.BAD_ENCODING, 0),
    (b"\x82\x7f" + struct.pack("!Q", 1 << 63), "server", Category.BAD_VALUE, 0),
    (server(CLOSE, b"\x03"), "server", Category.LENGTH_TOO_SMALL, 2),
    (server(CLOSE, struct.pack("!H", 1005)), "server", Category.BAD_VALUE, 2),
    (server(CLOSE, struct.pack("!H", 1000) + b"\xff"), "server", Category.BAD_ENCODING, 4),
    (server(CLOSE, b"") + server(PING, b""), "server", Category.TRAILING_BYTES, 2),
    (server(TEXT, b"{}\xff\x1e"), "server", Category.BAD_ENCODING, 2),       # text that is not UTF-8
    (server(TEXT, b"\xe2\x9c", fin=False) + server(CONT, b""), "server", Category.BAD_ENCODING, 6),
])
def test_bad_frames(frames, origin, category, offset):
    assert _frames_error(frames, origin)[:2] == (category, offset)


def test_a_message_over_the_limit_fails_on_the_fragment_that_crosses_it():
    limits = TransportLimits(max_message=100)
    frames = client(TEXT, b" " * 60, fin=False) + client(CONT, b" " * 41)
    assert _frames_error(frames, limits=limits)[:2] == (Category.LENGTH_TOO_LARGE, 66)
    fits = client(TEXT, b" " * 60, fin=False) \
        + client(CONT, b" " * 8 + b'{"protocol":"json","version":1}\x1e')
    assert ok(WS_CLIENT + fits, limits=limits)[1:] == [HandshakeRequest("json", 1)]


def test_hub_errors_keep_the_messages_before_them_and_point_into_the_stream():
    bad = b'{"type":1,"target":5,"arguments":[]}\x1e'
    frames = HS + client(TEXT, b'{"type":6}\x1e' + bad[:10]) + client(TEXT, bad[10:] + b'{"type":6}\x1e')
    category, offset, decoded = _frames_error(frames)
    # The record starts 11 bytes into the second message's payload (after the 6-byte header).
    assert offset == len(HS) + 6 + 11 and category != Category.TRUNCATED
    assert decoded == [HandshakeRequest("json", 1), Ping()]


def test_the_transport_marks_its_own_errors_and_not_the_hubs():
    """FrameError.transport: set on what the HTTP/WebSocket reader refuses (the observer gives
    those no catalogue rule), not on a hub message's error, whatever it says."""
    dec = TransportDecoder(origin="client")
    with pytest.raises(FrameError) as info:
        dec.feed(WS_CLIENT + server(TEXT, b"{}"))           # an unmasked client frame
    assert info.value.transport
    dec = TransportDecoder(origin="client")
    dec.feed(WS_CLIENT + HS)
    with pytest.raises(FrameError) as info:
        dec.feed(client(TEXT, b'{"type":1,"target":"x","arguments":[],"headers":5}\x1e'))
    assert "headers" in info.value.message and not info.value.transport


def test_a_bad_hub_message_is_not_sticky():
    dec = TransportDecoder(origin="client")
    dec.feed(WS_CLIENT + HS)
    with pytest.raises(FrameError) as info:
        dec.feed(client(TEXT, b'{"type":1,"target":5}\x1e{"type":6}\x1e'))
    assert info.value.frames == [] and not dec.broken
    assert dec.feed(b"") == [Ping()]                     # the record after it was kept
    assert dec.feed(client(TEXT, b'{"type":6}\x1e')) == [Ping()]


def test_a_record_over_the_hub_limit_breaks_the_stream():
    limits = TransportLimits(max_frame_size=40)     # the handshake fits, the call (42) does not
    frames = HS + client(TEXT, b'{"type":1,"target":"Echo","arguments":[]}\x1e')
    category, offset, decoded = _frames_error(frames, limits=limits)
    assert (category, offset) == (Category.LENGTH_TOO_LARGE, len(HS) + 6)
    assert decoded == [HandshakeRequest("json", 1)]


def test_hub_limits_alone_are_accepted():
    dec = http_transport.make_capture_decoder(limits=codec.SignalRLimits(max_frame_size=8), origin="client")
    dec.feed(WS_CLIENT)
    assert dec.decoder.limits.max_frame_size == 8 and dec.decoder.limits.max_body == http_transport.MAX_BODY


@pytest.mark.parametrize("garbage", [b"\x00\xff\x10garbage", b"GET \x00 HTTP/1.1\r\n\r\n",
                                     b"HTTP/1.1 2000 OK\r\n\r\n", b"POST  /x HTTP/1.1\r\n\r\n"])
@pytest.mark.parametrize("origin", ["client", "server", None])
def test_garbage(garbage, origin):
    frames, error = decode(garbage, origin=origin)
    assert error is not None and frames == []


# --- arbitrary bytes ----------------------------------------------------------------------------

_PREFIXES = [b"", JS_NEGOTIATE, WS_CLIENT, WS_CLIENT + HS, SWITCHING, SWITCHING + server(TEXT, b"{}\x1e"),
             b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prefix=st.sampled_from(_PREFIXES), data=st.binary(max_size=200),
       origin=st.sampled_from(["client", "server", None]), seed=st.integers(0, 1000))
def test_arbitrary_bytes_raise_nothing_but_frame_errors(prefix, data, origin, seed):
    stream = prefix + data
    limits = TransportLimits(max_body=64, max_message=128, max_header_block=256, max_frame_size=64)
    rng = random.Random(seed)
    results = [_feed(http_transport.make_capture_decoder(limits=limits, origin=origin), pieces)
               for pieces in ([stream], _pieces(stream, rng, 9))]
    for frames, _ in results:
        for frame in frames:
            json.dumps(frame_to_dict(frame))
    assert results[0] == results[1]
