"""Write the seed corpus of SignalR's HTTP + WebSocket capture decoder (and of the suite's
WebSocket frame reader): ``python -m wirecheck.fuzz.builders.transport_corpora`` (deterministic).

A seed is one direction of one TCP connection. Most come from the capture corpus
(captures/signalr/*.pcap.gz, put back in order by conformance/captures/tcpflows.py): every direction of
the real clients' captures (@microsoft/signalr, pysignalr, signalrcore; negotiate, then the
WebSocket), the reference client's, and the suite's whose shapes differ (cut at the last whole
frame before :data:`MAX_SEED`). The rest are written here for what no capture shows: chunked
and read-to-the-end responses, keep-alive, 1xx/204/304, trailers, bare LF, fragmented and
control frames, 16-bit lengths, the raw transport.
"""
from __future__ import annotations

import os
from pathlib import Path

from wirecheck.conformance.captures.pcapfile import PcapReader
from wirecheck.conformance.captures.tcpflows import TcpReassembler
from wirecheck.fuzz.builders.corpus_files import CORPORA, write_corpus
from wirecheck.fuzz.harnesses.transport import capture_events
from wirecheck.reference_impl.signalr import codec
from wirecheck.reference_impl.signalr.messages import Close, Completion, Invocation, Ping, StreamItem

#: The checkout: these tools read its captures/ and write the corpora beside this file.
ROOT = Path(__file__).resolve().parents[3]
CAPTURES = ROOT / "captures" / "signalr"
#: Longest seed: libFuzzer's inputs stay around this size.
MAX_SEED = 4096
#: Suite connections kept (those of a shape not seen yet, in capture order).
SUITE_SEEDS = 24
MASK = b"\x37\xfa\x21\x3d"


class _Streams:
    """A reassembly sink keeping each direction's bytes."""

    def __init__(self) -> None:
        self.streams: dict[tuple[int, str], bytearray] = {}

    def opened(self, conn, time) -> None:
        pass

    def data(self, stream, data, time) -> None:
        self.streams.setdefault((stream.conn.index, stream.direction), bytearray()).extend(data)

    def ended(self, stream, time, how, missing) -> None:
        pass


def capture_streams(path: Path) -> dict[tuple[int, str], bytes]:
    sink = _Streams()
    reassembler = TcpReassembler(sink)
    with PcapReader(str(path)) as reader:
        for seg in reader:
            reassembler.segment(seg)
    reassembler.close(0.0)
    return {key: bytes(value) for key, value in sorted(sink.streams.items())}


def clean(data: bytes) -> bool:
    """Decodes to the end: no transport error, nothing truncated (a bad hub message may sit in
    the middle: signalrcore's MessagePack stream has two, SPEC_NOTES.md)."""
    events, decoder = capture_events([data])
    return bool(events) and not decoder.broken and not isinstance(events[-1], tuple)


def cut(data: bytes) -> bytes | None:
    """``data`` itself, or its longest prefix of at most MAX_SEED bytes that decodes cleanly
    to the end (a whole HTTP message or frame last); None if there is none."""
    if len(data) <= MAX_SEED:
        return data if clean(data) else None
    for n in range(MAX_SEED, 0, -1):
        if clean(data[:n]):
            return data[:n]
    return None


def shape(data: bytes) -> tuple:
    return tuple(type(item).__name__ for item in capture_events([data])[0])


def capture_seeds() -> dict[str, bytes]:
    seeds: dict[str, bytes] = {}
    shapes: set[tuple] = set()
    kept = 0
    for path in sorted(CAPTURES.glob("*.pcap.gz")):
        stem = path.name.removesuffix(".pcap.gz")
        suite = stem == "suite"
        for (index, direction), data in capture_streams(path).items():
            if suite and kept >= SUITE_SEEDS:
                break
            seed = cut(data)
            if seed is None:
                continue
            if suite:
                key = (direction, shape(seed))
                if key in shapes:
                    continue
                shapes.add(key)
                kept += 1
            seeds[f"{stem}-{index:03d}-{direction}"] = seed
    return seeds


def ws(opcode: int, payload: bytes, fin: bool = True, mask: bytes | None = MASK) -> bytes:
    """A frame, masked (a client's) unless ``mask`` is None."""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    bit = 0x80 if mask is not None else 0
    if n < 126:
        head += bytes([bit | n])
    else:
        head += bytes([bit | 126]) + n.to_bytes(2, "big")
    if mask is None:
        return head + payload
    return head + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(payload))


UPGRADE = (b"GET /hub?id=abc HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
SWITCHED = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
NEGOTIATE = b"POST /hub/negotiate?negotiateVersion=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
ANSWER = (b'{"negotiateVersion":1,"connectionId":"c","connectionToken":"t",'
          b'"availableTransports":[{"transport":"WebSockets","transferFormats":["Text","Binary"]}]}')
JS_JSON = b'{"protocol":"json","version":1}\x1e'
JS_MSGPACK = b'{"protocol":"messagepack","version":1}\x1e'


def _response(head: bytes, body: bytes = b"") -> bytes:
    return b"HTTP/1.1 " + head + b"\r\n\r\n" + body


def _chunked(body: bytes, size: int) -> bytes:
    out = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size])
                   for i in range(0, len(body), size))
    return out + b"0\r\n"


def written_seeds() -> dict[str, bytes]:
    echo = codec.encode(Invocation("Echo", ["hi"], "0"))
    pack_echo = codec.encode(Invocation("Echo", ["hi"], "0"), "messagepack")
    result = codec.encode(Completion.with_result("0", "hi"))
    return {
        "client-keepalive-two-negotiates": NEGOTIATE + NEGOTIATE.replace(b"Version=1", b"Version=0"),
        "client-post-body": b"POST /hub/negotiate HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}",
        "client-post-chunked-trailer": b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        + _chunked(b"hello world", 4) + b"X-Trailer: 1\r\n\r\n",
        "client-bare-lf": NEGOTIATE.replace(b"\r\n", b"\n"),
        "client-upgrade-json": UPGRADE + ws(1, JS_JSON) + ws(1, echo) + ws(9, b"p") + ws(8, b"\x03\xe8"),
        "client-upgrade-fragmented": UPGRADE + ws(1, JS_JSON + echo[:5], fin=False) + ws(10, b"")
        + ws(0, echo[5:-1], fin=False) + ws(0, echo[-1:]) + ws(8, b""),
        "client-upgrade-msgpack": UPGRADE + ws(1, JS_MSGPACK) + ws(2, pack_echo + pack_echo[:3])
        + ws(2, pack_echo[3:]) + ws(8, b"\x03\xe9bye"),
        "client-upgrade-16bit": UPGRADE + ws(1, JS_JSON)
        + ws(1, codec.encode(StreamItem("1", "x" * 200))),
        "server-negotiate-length": _response(b"200 OK\r\nContent-Type: application/json\r\n"
                                             b"Content-Length: %d" % len(ANSWER), ANSWER),
        "server-negotiate-chunked": _response(b"200 OK\r\nTransfer-Encoding: chunked", _chunked(ANSWER, 40))
        + b"\r\n",
        "server-to-eof": _response(b"200 OK\r\nConnection: close", ANSWER),
        "server-100-204-304": _response(b"100 Continue") + _response(b"204 No Content")
        + _response(b"304 Not Modified") + _response(b"200 OK\r\nContent-Length: 0"),
        "server-404-then-ok": _response(b"404 Not Found\r\nContent-Length: 9", b"not found")
        + _response(b"200 OK\r\nContent-Length: 2", b"{}"),
        "server-switched-json": SWITCHED + ws(1, b"{}\x1e" + result, mask=None) + ws(9, b"", mask=None)
        + ws(1, codec.encode(Ping()) + codec.encode(Close("bye", True)), mask=None)
        + ws(8, b"\x03\xe8", mask=None),
        "server-switched-fragmented": SWITCHED + ws(1, b"{}\x1e" + result[:4], fin=False, mask=None)
        + ws(0, result[4:], mask=None) + ws(10, b"pong", mask=None),
        "server-switched-msgpack": SWITCHED + ws(1, b"{}\x1e", mask=None) + ws(
            2, codec.encode(Completion.with_result("0", "hi"), "messagepack"), mask=None),
        "raw-json": JS_JSON + echo + codec.encode(Ping()),
        "raw-server": b"{}\x1e" + result,
    }


def seeds() -> dict[str, bytes]:
    return {**capture_seeds(), **written_seeds()}


def main() -> None:
    out = seeds()
    bad = [name for name, data in out.items() if not clean(data)]
    if bad:
        raise SystemExit(f"seeds that do not decode cleanly: {', '.join(bad)}")
    write_corpus(CORPORA / "signalr-http", out)
    print(f"{len(out)} seeds in {os.path.relpath(CORPORA / 'signalr-http')}")


if __name__ == "__main__":
    main()
