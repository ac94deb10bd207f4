"""Hostile clients against the reference brokers (hardening issue, item 2).

For each protocol, ``wirecheck serve`` runs as a child process and gets:

1. a crowd of hostile connections at once: idle after connect, a partial handshake, the
   handshake trickled one byte every few seconds, idle after a completed handshake, and a
   4 GiB length prefix. Goals: the broker's peak RSS stays under 200 MB; a normal client
   completes round trips (publish + consume, or an Invoke for SignalR) within a bound while
   they are open; the handshake timeout closes every connection that never finishes its
   handshake (trickling ones included), the idle timeout (SignalR: client timeout) every
   silent established one, and the 4 GiB prefix is refused at once;
2. the 4 GiB prefix alone, a few times: closed with the document's answer (BlipMQ, VibeMQ,
   RabbitMQ Stream before Open: none; Micromessage2: an ERROR frame; SignalR: a Close
   message) and the RSS does not move;
3. commands before authentication / the handshake, answered with the document's error;
4. VibeMQ only: gzip and brotli bombs refused with INVALID_MESSAGE, peak RSS below the
   decompression limit;
5. the connection limit (a second broker with a small ``max_connections``): connection N+1 is
   closed cleanly (VibeMQ: Error CONNECTION_LIMIT first), an open client still works, and a
   slot freed is usable again.

``run(quick)`` returns the JSON result (parameters, facts, goals with ``met``, ``ok``);
``python -m soak.hostile_clients [--quick] [--out PATH]`` writes it and exits non-zero when a
goal is not met. Every network operation has a timeout; everything is on loopback.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import time
import zlib
from dataclasses import asdict, dataclass

from wirecheck.reference_impl.core.server import raise_open_file_limit
from soak.common import HighWater, rss_mb, write_result
from tests.support.blipmq_proc import BrokerProcess

NAME = "hostile_clients"
HOST = "127.0.0.1"
PROTOCOLS = ("blipmq", "vibemq", "micromessage2", "rabbitmq-stream", "signalr")
RSS_LIMIT_MB = 200.0
#: A refused 4 GiB prefix may not grow the broker by more than this (one read buffer).
HUGE_RSS_JUMP_MB = 16.0
FOUR_GIB = 0xFFFFFFFF
IO_TIMEOUT = 10.0


@dataclass(frozen=True)
class Params:
    connections: int            # hostile connections per protocol, open at once
    handshake_timeout: float    # the broker's, set with --option
    idle_timeout: float
    trickle_interval: float     # seconds between the trickled bytes
    round_trips: int
    round_trip_bound: float     # seconds for one round trip while the crowd is connected
    limit: int                  # max_connections of the connection-limit broker
    slack: float                # how late a timeout may close a connection (a busy machine)


QUICK = Params(connections=120, handshake_timeout=2.0, idle_timeout=3.0, trickle_interval=0.5,
               round_trips=2, round_trip_bound=5.0, limit=12, slack=4.0)
FULL = Params(connections=1000, handshake_timeout=10.0, idle_timeout=20.0, trickle_interval=2.0,
              round_trips=5, round_trip_bound=5.0, limit=64, slack=8.0)


# -- what each protocol sends --------------------------------------------------------------

async def _read_frames(reader, decoder, count: int) -> list:
    frames: list = []
    while len(frames) < count:
        data = await asyncio.wait_for(reader.read(65536), IO_TIMEOUT)
        if not data:
            raise ConnectionError(f"closed after {len(frames)} frame(s)")
        frames += decoder.feed(data)
    return frames


async def _read_to_eof(reader, limit: float) -> tuple[bytes, bool]:
    """Everything the server sends until it closes (True), or until ``limit`` seconds (False)."""
    got = b""
    deadline = time.monotonic() + limit
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return got, False
            data = await asyncio.wait_for(reader.read(65536), left)
            if not data:
                return got, True
            got += data
    except asyncio.TimeoutError:          # first: it is an OSError since Python 3.11
        return got, False
    except (ConnectionError, OSError):
        return got, True


class Target:
    """One protocol's hostile bytes, handshake, document answers and normal round trip."""
    protocol = ""
    has_auth = True

    def serve_options(self, p: Params) -> list[str]:
        return ["--option", f"handshake_timeout={p.handshake_timeout}",
                "--option", f"idle_timeout={p.idle_timeout}"]

    def first_bytes(self) -> bytes:
        from wirecheck.reference_impl.core import registry
        return registry.get(self.protocol).liveness_probe()

    async def establish(self, reader, writer) -> bool:
        """Complete the handshake on a raw connection; False where not done (no idle check)."""
        return False

    async def huge(self, reader, writer) -> None:
        raise NotImplementedError

    def huge_answer_ok(self, data: bytes) -> bool:
        return data == b""            # closed without an answer

    async def pre_auth(self, port: int) -> tuple[bool, str]:
        raise NotImplementedError

    async def round_trip(self, port: int, n: int) -> None:
        raise NotImplementedError

    def ports(self, broker: BrokerProcess) -> dict:
        return {"main": broker.port}


class Blip(Target):
    protocol = "blipmq"

    async def establish(self, reader, writer) -> bool:
        from wirecheck.reference_impl.blipmq import codec
        writer.write(codec.encode(codec.Hello(1)) + codec.encode(codec.Auth(2, "dev-key")))
        frames = await _read_frames(reader, codec.Decoder(), 2)
        return all(isinstance(f, codec.Ack) for f in frames)

    async def huge(self, reader, writer) -> None:
        writer.write(FOUR_GIB.to_bytes(4, "big") + b"\x03" + bytes(8) + b"\x00" * 64)

    async def pre_auth(self, port: int) -> tuple[bool, str]:
        from wirecheck.reference_impl.blipmq import codec
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), IO_TIMEOUT)
        try:
            writer.write(codec.encode(codec.Hello(1)) + codec.encode(codec.Subscribe(2, "t", 0))
                         + codec.encode(codec.Publish(3, 0, "t", b"x")) + codec.encode(codec.Poll(4, 1))
                         + codec.encode(codec.Auth(5, "wrong-key")) + codec.encode(codec.Ping(6)))
            frames = await _read_frames(reader, codec.Decoder(), 6)
        finally:
            writer.close()
        want = [(2, 401, "unauthenticated"), (3, 401, "unauthenticated"), (4, 401, "unauthenticated"),
                (5, 401, "invalid API key"), (6, 401, "unauthenticated")]
        got = [(f.correlation_id, f.code, f.message) for f in frames[1:] if isinstance(f, codec.Nack)]
        return got == want, f"NACKs {got}"

    async def round_trip(self, port: int, n: int) -> None:
        from wirecheck.reference_impl.blipmq.client import BlipClient
        client = await BlipClient.connect(HOST, port, timeout=IO_TIMEOUT)
        try:
            sub = await client.subscribe(f"rt{n}", qos=1)
            await client.publish(f"rt{n}", b"hello", qos=1)
            msg = await client.poll(sub)
            if msg is None or msg.message != b"hello":
                raise AssertionError(f"poll returned {msg}")
        finally:
            await client.close()


class Vibe(Target):
    protocol = "vibemq"

    async def establish(self, reader, writer) -> bool:
        from wirecheck.reference_impl.vibemq import codec
        from wirecheck.reference_impl.vibemq.constants import CommandType
        writer.write(codec.encode(codec.Message(CommandType.CONNECT, "c", headers={"authPassword": "vibemq"})))
        frames = await _read_frames(reader, codec.Decoder(), 1)
        return frames[0].type == CommandType.CONNECT_ACK

    async def huge(self, reader, writer) -> None:
        writer.write(FOUR_GIB.to_bytes(4, "big") + b"\x00" + b"\x01" * 64)

    async def pre_auth(self, port: int) -> tuple[bool, str]:
        from wirecheck.reference_impl.vibemq import codec
        from wirecheck.reference_impl.vibemq.constants import CommandType as T
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), IO_TIMEOUT)
        try:
            writer.write(b"".join(codec.encode(m) for m in (
                codec.Message(T.PUBLISH, "p1", "q", {"a": 1}), codec.Message(T.SUBSCRIBE, "s1", "q"),
                codec.Message(T.LIST_QUEUES, "l1"),
                codec.Message(T.CONNECT, "c1", headers={"authPassword": "wrong"}))))
            frames = await _read_frames(reader, codec.Decoder(), 4)
        finally:
            writer.close()
        codes = [f.error_code for f in frames]
        want = ["NOT_AUTHENTICATED"] * 3 + ["AUTH_FAILED"]
        return codes == want and all(f.type == T.ERROR for f in frames), f"errors {codes}"

    async def round_trip(self, port: int, n: int) -> None:
        from wirecheck.reference_impl.vibemq.client import VibeClient
        client = await VibeClient.connect(HOST, port, timeout=IO_TIMEOUT)
        try:
            await client.subscribe(f"rt{n}")
            await client.publish(f"rt{n}", {"n": n})
            got = await client.next_delivery(IO_TIMEOUT)
            if got.payload != {"n": n}:
                raise AssertionError(f"delivered {got}")
        finally:
            await client.close()


class MM2(Target):
    protocol = "micromessage2"
    has_auth = False

    async def establish(self, reader, writer) -> bool:
        from wirecheck.reference_impl.micromessage2 import codec
        from wirecheck.reference_impl.micromessage2.client import final_handshake
        offer = codec.Handshake("hostile")
        writer.write(codec.encode(offer))
        reply = (await _read_frames(reader, codec.make_decoder(origin="server"), 1))[0]
        if not isinstance(reply, codec.Handshake):
            return False
        writer.write(codec.encode(final_handshake(offer, reply)))
        return True

    async def huge(self, reader, writer) -> None:
        from wirecheck.reference_impl.micromessage2 import codec
        if not await self.establish(reader, writer):
            raise ConnectionError("handshake refused")
        # A SEND with LARGE_PAYLOAD: its 4-byte payload length, the last field of the head,
        # declares 4 GiB (micromessage2.md "MESSAGE frame").
        body = b"z" * 300
        frame = codec.encode(codec.Message(1, "q", body))
        head = frame[:frame.index(body)]
        writer.write(head[:-4] + FOUR_GIB.to_bytes(4, "big") + b"z" * 64)

    def huge_answer_ok(self, data: bytes) -> bool:
        from wirecheck.reference_impl.core.errors import FrameError
        from wirecheck.reference_impl.micromessage2 import codec
        try:
            frames = codec.make_decoder().feed(data)
        except FrameError:
            return False
        return len(frames) == 1 and isinstance(frames[0], codec.Error)

    async def pre_auth(self, port: int) -> tuple[bool, str]:
        # No authentication in the document. A frame before the handshake reads as the start
        # of a handshake, so it is never served: the handshake timeout ends the connection,
        # with no answer. An offer requiring an extension the server lacks gets an ERROR
        # frame and a disconnect ("Handshake").
        from wirecheck.reference_impl.micromessage2 import codec
        from wirecheck.reference_impl.micromessage2.syntax import Extension
        results = []
        for first in (codec.encode(codec.Command("subscribe", (("destination", "q"),))),
                      codec.encode(codec.Handshake("x", required=(Extension("no-such-extension"),)))):
            reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), IO_TIMEOUT)
            try:
                writer.write(first)
                results.append(await _read_to_eof(reader, 3 * IO_TIMEOUT))
            finally:
                writer.close()
        (early, early_closed), (refused, refused_closed) = results
        ok = early_closed and early == b"" and refused_closed and self.huge_answer_ok(refused)
        return ok, (f"frame first: closed={early_closed} answer={early[:40]!r}; unknown required "
                    f"extension: closed={refused_closed} answer={refused[:60]!r}")

    async def round_trip(self, port: int, n: int) -> None:
        from wirecheck.reference_impl.micromessage2.client import MM2Client
        client = await MM2Client.connect(HOST, port, required=("pubsub",), timeout=IO_TIMEOUT)
        try:
            await client.subscribe(f"topic/rt{n}")
            await client.send(f"topic/rt{n}", b"hello")
            got = await client.next_message(IO_TIMEOUT)
            if got.payload != b"hello":
                raise AssertionError(f"delivered {got}")
        finally:
            await client.close()


class Stream(Target):
    protocol = "rabbitmq-stream"

    def serve_options(self, p: Params) -> list[str]:
        # The session runs the handshake timeout; once open, silence is the heartbeat's job
        # (three periods), checked by the RabbitMQ Stream session tests.
        return ["--option", f"handshake_timeout={p.handshake_timeout}"]

    async def huge(self, reader, writer) -> None:
        writer.write(FOUR_GIB.to_bytes(4, "big") + b"\x00\x11\x00\x01" + b"\x00" * 64)

    async def pre_auth(self, port: int) -> tuple[bool, str]:
        # Before Open, any command but the handshake's ends the connection without a word
        # (session.py; RabbitMQ 3.10 does the same). A wrong password gets code 8, then the end.
        from wirecheck.reference_impl.rabbitmq_stream import codec
        details, ok = [], True
        for frame in (codec.Create(1, "s"), codec.Open(1, "/")):
            reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), IO_TIMEOUT)
            try:
                writer.write(codec.encode(codec.PeerProperties(0, {})) + codec.encode(frame))
                data, closed = await _read_to_eof(reader, IO_TIMEOUT)
            finally:
                writer.close()
            answers = codec.Decoder(origin="server").feed(data)
            ok &= closed and [type(a).__name__ for a in answers] == ["PeerPropertiesResponse"]
            details.append(f"{type(frame).__name__}: closed={closed} answers={[type(a).__name__ for a in answers]}")
        from wirecheck.reference_impl.rabbitmq_stream.client import StreamClient
        try:
            client = await StreamClient.connect(HOST, port, password="wrong", timeout=IO_TIMEOUT)
            await client.close()
            ok = False
            details.append("a wrong password was accepted")
        except Exception as exc:           # the client reports the refusal its own way
            refused = "8" in str(exc) or "authentication" in str(exc).lower()
            ok &= refused
            details.append(f"wrong password: {exc}")
        return ok, "; ".join(details)

    async def round_trip(self, port: int, n: int) -> None:
        from wirecheck.reference_impl.rabbitmq_stream.client import StreamClient
        client = await StreamClient.connect(HOST, port, timeout=IO_TIMEOUT)
        try:
            stream = f"rt{n}-{time.monotonic_ns()}"
            assert (await client.create(stream)).code == 1
            assert (await client.declare_publisher(1, stream)).code == 1
            client.publish(1, [(1, b"hello")])
            assert set((await client.wait_confirms(1, [1])).values()) == {1}
            assert (await client.subscribe(1, stream, credit=1)).code == 1
            delivery = await client.next_delivery(1, IO_TIMEOUT)
            assert b"hello" in [bytes(m) for m in delivery.chunk.messages()], delivery
        finally:
            await client.close()


class Hub(Target):
    protocol = "signalr"
    has_auth = False

    def serve_options(self, p: Params) -> list[str]:
        return ["--option", f"handshake_timeout={p.handshake_timeout}",
                "--option", f"client_timeout={p.idle_timeout}",
                "--option", f"http_idle_timeout={p.handshake_timeout}"]

    def ports(self, broker: BrokerProcess) -> dict:
        import re
        deadline = time.monotonic() + IO_TIMEOUT
        while time.monotonic() < deadline:
            for line in list(broker.output):
                m = re.search(r"raw TCP on [\d.]+:(\d+)", line)
                if m:
                    return {"main": broker.port, "raw": int(m.group(1))}
            time.sleep(0.05)
        raise RuntimeError("the SignalR broker did not print its raw port")

    def first_bytes(self) -> bytes:
        return b'{"protocol":"json","version":1}\x1e'

    async def establish(self, reader, writer) -> bool:
        writer.write(self.first_bytes())
        data = await asyncio.wait_for(reader.readuntil(b"\x1e"), IO_TIMEOUT)
        return data == b"{}\x1e"

    async def huge(self, reader, writer) -> None:
        # MessagePack records are VarInt-prefixed: 5 bytes declaring 4 GiB - 1.
        writer.write(b'{"protocol":"messagepack","version":1}\x1e' + b"\xff\xff\xff\xff\x0f" + b"\x00" * 64)

    def huge_answer_ok(self, data: bytes) -> bool:
        from wirecheck.reference_impl.signalr import codec
        from wirecheck.reference_impl.signalr.messages import Close
        if not data.startswith(b"{}\x1e"):
            return False
        messages = codec.make_decoder(origin="server", protocol="messagepack",
                                      handshake=False).feed(data[3:])
        return len(messages) == 1 and isinstance(messages[0], Close) and bool(messages[0].error)

    async def pre_auth(self, port: int) -> tuple[bool, str]:
        # Anything before the handshake: {"error": ...} and the end ("Overview"; v1).
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), IO_TIMEOUT)
        try:
            writer.write(b'{"type":1,"target":"Echo","arguments":["x"],"invocationId":"1"}\x1e')
            data, closed = await _read_to_eof(reader, IO_TIMEOUT)
        finally:
            writer.close()
        ok = closed and data.endswith(b"\x1e") and b'"error"' in data
        return ok, f"closed={closed} answer={data[:120]!r}"

    async def round_trip(self, port: int, n: int) -> None:
        from wirecheck.reference_impl.signalr.client import HubClient
        client = await HubClient.connect(f"http://{HOST}:{port}/hub", timeout=IO_TIMEOUT)
        try:
            got = await client.invoke("Echo", f"hello{n}", timeout=IO_TIMEOUT)
            if got != f"hello{n}":
                raise AssertionError(f"Echo returned {got!r}")
        finally:
            await client.close()


TARGETS: dict[str, Target] = {t.protocol: t for t in (Blip(), Vibe(), MM2(), Stream(), Hub())}


# -- the crowd -------------------------------------------------------------------------------

#: Shares of the crowd; "established" falls back to "idle" where a target cannot hold one.
KINDS = (("idle", 3), ("partial", 2), ("trickle", 2), ("established", 2), ("huge", 1))


def crowd_kinds(n: int) -> list[str]:
    wheel = [kind for kind, share in KINDS for _ in range(share)]
    return [wheel[i % len(wheel)] for i in range(n)]


async def hostile(target: Target, kind: str, port: int, p: Params, limit: float,
                  http: bool = False) -> dict:
    """One hostile connection; how long until the broker closed it (None: it did not)."""
    out = {"kind": kind, "closed_after": None, "error": None, "answer_ok": None}
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), IO_TIMEOUT)
    except (OSError, asyncio.TimeoutError) as exc:
        out["error"] = f"connect: {exc!r}"
        return out
    first = (b"GET /hub HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n" if http
             else target.first_bytes())
    trickler = None
    try:
        if kind == "established":
            if not await target.establish(reader, writer):
                raise ConnectionError("handshake refused")
        elif kind == "huge":
            await target.huge(reader, writer)
        elif kind == "partial":
            writer.write(first[:max(1, len(first) // 2)])
        elif kind == "trickle":
            async def trickle() -> None:
                for byte in itertools.cycle(first):
                    writer.write(bytes([byte]))
                    await asyncio.sleep(p.trickle_interval)
            trickler = asyncio.ensure_future(trickle())
        start = time.monotonic()
        data, closed = await _read_to_eof(reader, limit)
        if closed:
            out["closed_after"] = round(time.monotonic() - start, 3)
        if kind == "huge":
            out["answer_ok"] = target.huge_answer_ok(data)
    except (OSError, ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError) as exc:
        out["error"] = repr(exc)
    finally:
        if trickler is not None:
            trickler.cancel()
        writer.close()
    return out


async def _round_trips(target: Target, port: int, p: Params) -> list[float]:
    """Seconds per round trip (``inf`` for one that failed or took longer than the bound)."""
    times = []
    for n in range(p.round_trips):
        start = time.monotonic()
        try:
            await asyncio.wait_for(target.round_trip(port, n), p.round_trip_bound)
            times.append(round(time.monotonic() - start, 3))
        except Exception as exc:            # any failure is a missed goal, recorded as such
            times.append(float("inf"))
            print(f"{target.protocol}: round trip {n} failed: {exc!r}", file=sys.stderr)
        await asyncio.sleep(0.2)
    return times


async def crowd(target: Target, ports: dict, p: Params) -> dict:
    kinds = crowd_kinds(p.connections)
    sem = asyncio.Semaphore(200)             # connect in waves the listen backlog can take
    # No connection outlives both timeouts by more than this.
    limit = p.handshake_timeout + p.idle_timeout + 3 * p.slack

    async def one(i: int, kind: str) -> dict:
        port, http = ports["main"], False
        if "raw" in ports:                  # SignalR: HTTP for half the handshake-stage ones
            http = kind in ("idle", "partial", "trickle") and i % 2 == 1
            port = ports["main"] if http else ports["raw"]
        if kind == "established" and not target.establish.__qualname__.startswith(type(target).__name__):
            kind = "idle"
        async with sem:
            task = asyncio.ensure_future(hostile(target, kind, port, p, limit, http))
            await asyncio.sleep(0)
        return await task

    tasks = [asyncio.ensure_future(one(i, k)) for i, k in enumerate(kinds)]
    await asyncio.sleep(min(2.0, p.handshake_timeout / 2))    # the crowd is in
    times = await _round_trips(target, ports["main"], p)
    results = await asyncio.gather(*tasks)
    return {"results": results, "round_trips": times}


def _summarise(results: list[dict], p: Params) -> dict:
    by_kind: dict[str, dict] = {}
    for r in results:
        k = by_kind.setdefault(r["kind"], {"count": 0, "closed": 0, "max_closed_after": 0.0,
                                           "errors": 0, "answer_ok": 0})
        k["count"] += 1
        if r["closed_after"] is not None:
            k["closed"] += 1
            k["max_closed_after"] = max(k["max_closed_after"], r["closed_after"])
        k["errors"] += r["error"] is not None
        k["answer_ok"] += bool(r["answer_ok"])
    return by_kind


# -- the single checks -----------------------------------------------------------------------

async def huge_alone(target: Target, port: int, pid: int, tries: int = 3) -> dict:
    before = rss_mb(pid)
    outs = [await hostile(target, "huge", port, QUICK, IO_TIMEOUT) for _ in range(tries)]
    jump = rss_mb(pid) - before
    return {"tries": tries, "closed": sum(o["closed_after"] is not None for o in outs),
            "answers_ok": sum(bool(o["answer_ok"]) for o in outs),
            "max_closed_after": max((o["closed_after"] or IO_TIMEOUT) for o in outs),
            "rss_jump_mb": round(jump, 1)}


def _gzip_bomb(inflated: int) -> bytes:
    deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    return b"".join(deflater.compress(block) for _ in range(inflated >> 20)) + deflater.flush()


def _brotli_bomb(inflated: int) -> bytes:
    import brotli
    compressor = brotli.Compressor(quality=5)
    block = bytes(1 << 20)
    return b"".join(compressor.process(block) for _ in range(inflated >> 20)) + compressor.finish()


async def vibemq_bombs(port: int, pid: int) -> dict:
    """gzip and brotli bodies inflating to 100 MiB, past the 64 MiB default limit."""
    from wirecheck.reference_impl.vibemq import codec
    from wirecheck.reference_impl.vibemq.constants import DEFAULT_MAX_DECOMPRESSED, CommandType as T
    out = {}
    for name, flag, bomb in (("gzip", 1, _gzip_bomb(100 << 20)), ("brotli", 2, _brotli_bomb(100 << 20))):
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), IO_TIMEOUT)
        try:
            writer.write(codec.encode(codec.Message(T.CONNECT, "c", headers={"authPassword": "vibemq"})))
            await _read_frames(reader, codec.Decoder(), 1)
            hw = HighWater(pid)
            before = rss_mb(pid)
            writer.write(len(bomb).to_bytes(4, "big") + bytes([flag]) + bomb)
            data, closed = await _read_to_eof(reader, 30.0)
            hw.stop()
        finally:
            writer.close()
        answers = codec.decode_all(data) if data else []
        out[name] = {"frame_bytes": len(bomb), "closed": closed,
                     "errors": [m.error_code for m in answers],
                     "peak_growth_mb": round(max(0.0, hw.mb - before), 1),
                     "limit_mb": DEFAULT_MAX_DECOMPRESSED >> 20}
    return out


async def connection_limit(target: Target, p: Params) -> dict:
    """A broker with ``max_connections=p.limit``: one client, limit - 1 idle sockets, then one
    more connection, which must be closed cleanly while the client keeps working."""
    broker = BrokerProcess("--option", f"max_connections={p.limit}",
                           "--option", "handshake_timeout=60", protocol=target.protocol).start()
    socks = []
    try:
        ports = target.ports(broker)
        port = ports.get("raw", ports["main"])
        for _ in range(p.limit):
            socks.append(await asyncio.wait_for(asyncio.open_connection(HOST, port), IO_TIMEOUT))
        await asyncio.sleep(0.3)
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), IO_TIMEOUT)
        data, closed = await _read_to_eof(reader, IO_TIMEOUT)
        writer.close()
        extra_ok = closed
        if target.protocol == "vibemq":
            from wirecheck.reference_impl.vibemq import codec
            extra_ok &= [m.error_code for m in codec.decode_all(data)] == ["CONNECTION_LIMIT"]
        else:
            extra_ok &= data == b""
        # The ones inside the limit are unharmed: still open.
        unharmed = 0
        for reader_i, _ in socks:
            _, gone = await _read_to_eof(reader_i, 0.02)
            unharmed += not gone
        # A slot freed is usable again (SignalR: the limited raw port, by its handshake).
        socks.pop()[1].close()
        await asyncio.sleep(0.5)
        try:
            if "raw" in ports:
                r2, w2 = await asyncio.wait_for(asyncio.open_connection(HOST, port), IO_TIMEOUT)
                reuse_ok = await target.establish(r2, w2)
                w2.close()
            else:
                await asyncio.wait_for(target.round_trip(port, 99), p.round_trip_bound)
                reuse_ok = True
        except Exception as exc:              # any failure is a missed goal
            reuse_ok = False
            print(f"{target.protocol}: serving after the limit failed: {exc!r}", file=sys.stderr)
        return {"limit": p.limit, "extra_closed_cleanly": extra_ok, "extra_answer": data[:80].hex(),
                "unharmed": unharmed, "checked": p.limit, "freed_slot_serves": reuse_ok}
    finally:
        for _, w in socks:
            w.close()
        broker.kill()


# -- one protocol, and the whole run ---------------------------------------------------------

def _goal(figure, bound, met: bool) -> dict:
    return {"figure": figure, "bound": bound, "met": bool(met)}


async def run_protocol(protocol: str, p: Params) -> dict:
    target = TARGETS[protocol]
    broker = BrokerProcess(*target.serve_options(p), protocol=protocol).start()
    hw = HighWater(broker.proc.pid)
    try:
        ports = target.ports(broker)
        start = time.monotonic()
        got = await crowd(target, ports, p)
        crowd_seconds = round(time.monotonic() - start, 1)
        peak = hw.mb
        huge = await huge_alone(target, ports.get("raw", ports["main"]), broker.proc.pid)
        pre_ok, pre_detail = await target.pre_auth(ports.get("raw", ports["main"]))
        bombs = await vibemq_bombs(ports["main"], broker.proc.pid) if protocol == "vibemq" else None
        alive = broker.proc.poll() is None
    finally:
        hw.stop()
        broker.kill()
    limit = await connection_limit(target, p)

    kinds = _summarise(got["results"], p)
    goals = {"rss_peak_mb": _goal(round(peak, 1), RSS_LIMIT_MB, 0 < peak < RSS_LIMIT_MB)}
    worst = max(got["round_trips"])
    goals["round_trip_s"] = _goal(worst, p.round_trip_bound, worst <= p.round_trip_bound)
    for kind, k in kinds.items():
        bound = {"huge": p.slack, "established": p.idle_timeout + p.slack}.get(
            kind, p.handshake_timeout + p.slack)
        met = k["closed"] == k["count"] and k["errors"] == 0 and k["max_closed_after"] <= bound
        if kind == "huge":
            met &= k["answer_ok"] == k["count"]
        goals[f"{kind}_closed"] = _goal(f"{k['closed']}/{k['count']} within {k['max_closed_after']} s",
                                        f"all within {bound:g} s", met)
    goals["huge_prefix_refused"] = _goal(
        f"{huge['closed']}/{huge['tries']} closed, {huge['answers_ok']} with the document's answer, "
        f"RSS +{huge['rss_jump_mb']} MB", f"all, RSS +<{HUGE_RSS_JUMP_MB:g} MB",
        huge["closed"] == huge["answers_ok"] == huge["tries"] and huge["rss_jump_mb"] < HUGE_RSS_JUMP_MB)
    goals["pre_auth_rejected"] = _goal(pre_detail, "the document's error", pre_ok)
    if bombs is not None:
        for name, b in bombs.items():
            goals[f"{name}_bomb_refused"] = _goal(
                f"{b['errors']}, closed={b['closed']}, peak +{b['peak_growth_mb']} MB",
                f"INVALID_MESSAGE, peak +<{b['limit_mb'] + 32} MB",
                b["closed"] and b["errors"] in (["INVALID_MESSAGE"], []) and
                b["peak_growth_mb"] < b["limit_mb"] + 32)
    goals["connection_limit"] = _goal(
        f"extra closed cleanly={limit['extra_closed_cleanly']}, {limit['unharmed']}/{limit['checked']} "
        f"others open, freed slot serves={limit['freed_slot_serves']}", "all",
        limit["extra_closed_cleanly"] and limit["unharmed"] == limit["checked"] and limit["freed_slot_serves"])
    goals["broker_alive"] = _goal(alive, True, alive)
    return {"facts": {"kinds": kinds, "round_trips_s": got["round_trips"], "crowd_seconds": crowd_seconds,
                      "huge_alone": huge, "bombs": bombs, "connection_limit": limit},
            "goals": goals, "ok": all(g["met"] for g in goals.values())}


def run(quick: bool, protocols=PROTOCOLS) -> dict:
    p = QUICK if quick else FULL
    # Thousands of sockets in this process too: lift the soft descriptor limit to the hard one.
    nofile = raise_open_file_limit()
    started = time.monotonic()
    results = {}
    for protocol in protocols:
        results[protocol] = asyncio.run(run_protocol(protocol, p))
    return {"name": NAME, "quick": quick, "params": asdict(p), "rss_limit_mb": RSS_LIMIT_MB,
            "open_file_limit": nofile, "seconds": round(time.monotonic() - started, 1),
            "protocols": results, "ok": all(r["ok"] for r in results.values())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m soak.{NAME}", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small crowd and short timeouts")
    parser.add_argument("--out", default=f"reports/soak/{NAME}.json")
    parser.add_argument("--protocol", action="append", choices=PROTOCOLS,
                        help="only this protocol (repeatable; default: all)")
    args = parser.parse_args(argv)
    result = run(args.quick, tuple(args.protocol or PROTOCOLS))
    write_result(args.out, result)
    for protocol, r in result["protocols"].items():
        failed = [name for name, g in r["goals"].items() if not g["met"]]
        print(f"{protocol:<16} {'ok' if r['ok'] else 'FAILED: ' + ', '.join(failed)}")
    print(f"{args.out}: {'ok' if result['ok'] else 'goals not met'} ({result['seconds']} s)")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
