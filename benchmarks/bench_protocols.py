"""Decoding figures every protocol gets alike: split-read and input-size scaling, scapy
dissection of the same frames, and Micromessage2's throughput (the other protocols' throughput
is measured against their peers in their own modules: BlipMQ's in bench_blipmq_decode.py,
which this module follows for the four other protocols).

Timing as in :mod:`benchmarks.bench_blipmq_decode` (interleaved rounds, garbage collector off,
inputs and read lists built before timing, every run's frame count checked). Per protocol
(:data:`PROTOCOLS`: ``mm2``, ``rmqs``, ``signalr.json``, ``signalr.msgpack``, ``vibemq``):

- ``<p>.split.whole|1byte|random``: a stream of small frames fed whole, in 1-byte reads and in
  random reads of 1..1,500 bytes (seeded); MB/s, with the whole feed as ``peer`` and the
  time ratio to it (a figure: a read costs a call whatever the protocol; what DESIGN.md
  "Decoding" promises, O(N) whatever the cutting, is the next figure's).
- ``<p>.linear.whole|1byte.4x``: the same feeding on 1x and 4x the input; the median of the
  per-round time ratios, goal <= 4.5.
- ``<p>.scapy.dissect.<kind>``: the kit's scapy layer (``wirecheck/reference_impl/<p>/scapy_layer.py``)
  dissecting each frame of a kind alone, frames/s, with the codec's frames/s (whole feed of the
  same frames) as ``peer`` and the codec's speed-up as ``ratio`` (goal >= 50x, as for BlipMQ).
  RabbitMQ Stream's are in bench_rmqs_decode.py. Like with like as far as the layers go: the
  VibeMQ layer reads the envelope and every message field, the SignalR layers cut the record
  and keep its text or body, the Micromessage2 layer cuts the frame and keeps the flags
  byte; the codec decodes every field (and SignalR's JSON or MessagePack) in every case.
- ``mm2.decode.<kind>``: frames/s and MB/s of ``Decoder().feed(stream)`` for a SEND with a
  32-byte payload, a 64 KiB LARGE_PAYLOAD SEND and a COMMAND. No other Python implementation
  of Micromessage2 exists to compare with.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Callable, Optional

from wirecheck.reference_impl.micromessage2 import codec as mm2
from wirecheck.reference_impl.rabbitmq_stream import codec as rmqs
from wirecheck.reference_impl.signalr import codec as signalr
from wirecheck.reference_impl.vibemq import codec as vibemq

from benchmarks import (bench_blipmq_decode, bench_rmqs_decode, bench_signalr_decode,
                        bench_vibemq_decode)
from benchmarks.bench_blipmq_decode import (MB, best_time, best_times, measure, one_byte_chunks,
                                            random_chunks, result)

SIZES = {
    False: {"reps": 5, "split": 4_000, "linear_whole": 20_000, "linear_1byte": 1_000,
            "linear_reps": 9, "throughput": 100_000, "throughput_large": 256, "scapy": 2_000,
            "scapy_large": 100},
    True: {"reps": 3, "split": 300, "linear_whole": 2_000, "linear_1byte": 100,
           "linear_reps": 3, "throughput": 5_000, "throughput_large": 16, "scapy": 200,
           "scapy_large": 10},
}


@dataclass
class Protocol:
    """What the figures need of a protocol: a fresh decoder whose ``feed(bytes)`` returns the
    whole frames (after the handshake: frames alone), the wire bytes of frame ``i`` of each
    kind (``small`` is the one the split and linear figures use), and how its scapy layer
    dissects one frame (None: figures elsewhere)."""
    decoder: Callable[[], object]
    kinds: dict[str, Callable[[int], bytes]]
    scapy: Optional[Callable[[], Callable[[bytes], object]]] = None
    throughput: tuple[str, ...] = field(default=())


def _mm2_scapy():
    from wirecheck.reference_impl.micromessage2.scapy_layer import MM2
    return lambda piece: MM2(piece).flags


def _vibemq_scapy():
    from wirecheck.reference_impl.vibemq.scapy_layer import VibeMQ, VibeMQMessage
    return lambda piece: VibeMQ(piece)[VibeMQMessage].message_id


def _signalr_scapy(body: str):
    """The record's ``body`` field (the layer SignalR picks: SignalRJSON's ``text``,
    SignalRMsgPack's ``body``)."""
    def make():
        from wirecheck.reference_impl.signalr.scapy_layer import SignalR
        return lambda piece: getattr(SignalR(piece), body)
    return make


def _signalr(protocol: str, body: str) -> Protocol:
    return Protocol(lambda: signalr.Decoder(protocol=protocol, handshake=False),
                    {"small": lambda i: signalr.encode(bench_signalr_decode._small(i), protocol),
                     "large": lambda i: signalr.encode(bench_signalr_decode._large(i), protocol)},
                    _signalr_scapy(body))


PROTOCOLS: dict[str, Protocol] = {
    "mm2": Protocol(
        lambda: mm2.Decoder(),
        {"small": lambda i: mm2.encode(mm2.Message(i & 0xFFFF, "bench/topic", bytes(32))),
         "large": lambda i: mm2.encode(mm2.Message(i & 0xFFFF, "bench/topic", bytes(64 * 1024),
                                                   large=True)),
         "command": lambda i: mm2.encode(mm2.Command("subscribe", (("destination", f"q{i}"),)))},
        _mm2_scapy, ("small", "large", "command")),
    "rmqs": Protocol(
        lambda: rmqs.Decoder(),
        {"small": lambda i: rmqs.encode(bench_rmqs_decode.KINDS["deliver1x16"][0](i))}),
    "signalr.json": _signalr("json", "text"),
    "signalr.msgpack": _signalr("messagepack", "body"),
    "vibemq": Protocol(
        lambda: vibemq.Decoder(),
        {"small": lambda i: vibemq.encode(bench_vibemq_decode._small(i)),
         "large": lambda i: vibemq.encode(bench_vibemq_decode._large(i))},
        _vibemq_scapy),
}


def frames(proto: Protocol, kind: str, count: int) -> list[bytes]:
    make = proto.kinds[kind]
    return [make(i) for i in range(count)]


def feed_whole(proto: Protocol, data: bytes) -> Callable[[], int]:
    return bench_blipmq_decode.feed_whole(data, proto.decoder)


def feed_chunks(proto: Protocol, chunks: list[bytes]) -> Callable[[], int]:
    return bench_blipmq_decode.feed_chunks(chunks, proto.decoder)


def bench_split(name: str, proto: Protocol, sz: dict) -> list[dict]:
    n = sz["split"]
    data = b"".join(frames(proto, "small", n))
    t_whole, t_one, t_rand = best_times([(feed_whole(proto, data), n),
                                         (feed_chunks(proto, one_byte_chunks(data)), n),
                                         (feed_chunks(proto, random_chunks(data)), n)], sz["reps"])
    whole = len(data) / t_whole / MB
    return [result(f"{name}.split.whole", whole, "MB/s"),
            result(f"{name}.split.1byte", len(data) / t_one / MB, "MB/s", whole, t_one / t_whole),
            result(f"{name}.split.random", len(data) / t_rand / MB, "MB/s", whole, t_rand / t_whole)]


def bench_linear(name: str, proto: Protocol, sz: dict) -> list[dict]:
    out = []
    for how, count, make in (("whole", sz["linear_whole"], lambda d: feed_whole(proto, d)),
                             ("1byte", sz["linear_1byte"],
                              lambda d: feed_chunks(proto, one_byte_chunks(d)))):
        small = b"".join(frames(proto, "small", count))
        large = b"".join(frames(proto, "small", 4 * count))
        t1, t4 = measure([(make(small), count), (make(large), 4 * count)], sz["linear_reps"])
        ratio = statistics.median(b / a for a, b in zip(t1, t4))
        out.append(result(f"{name}.linear.{how}.4x", statistics.median(t4), "s",
                          statistics.median(t1), ratio, "<= 4.5"))
    return out


def _count(sz: dict, kind: str, key: str) -> int:
    return sz[key + "_large"] if kind == "large" else sz[key]


def bench_throughput(name: str, proto: Protocol, sz: dict) -> list[dict]:
    out = []
    for kind in proto.throughput:
        count = _count(sz, kind, "throughput")
        data = b"".join(frames(proto, kind, count))
        t = best_time(feed_whole(proto, data), sz["reps"], count)
        out.append(result(f"{name}.decode.{kind}", count / t, "frames/s"))
        out.append(result(f"{name}.decode.{kind}.mbps", len(data) / t / MB, "MB/s"))
    return out


def bench_scapy(name: str, proto: Protocol, sz: dict) -> list[dict]:
    if proto.scapy is None:
        return []
    dissect = proto.scapy()
    out = []
    for kind in proto.kinds:
        count = _count(sz, kind, "scapy")
        pieces = frames(proto, kind, count)

        def run() -> int:
            n = 0
            for piece in pieces:
                n += dissect(piece) is not None
            return n

        t_codec, t_scapy = best_times([(feed_whole(proto, b"".join(pieces)), count),
                                       (run, count)], sz["reps"])
        codec_fps, fps = count / t_codec, count / t_scapy
        out.append(result(f"{name}.scapy.dissect.{kind}", fps, "frames/s", codec_fps,
                          codec_fps / fps, ">= 50"))
    return out


def run(quick: bool = False, names: tuple[str, ...] = tuple(PROTOCOLS)) -> list[dict]:
    sz = SIZES[quick]
    out: list[dict] = []
    for name in names:
        proto = PROTOCOLS[name]
        out += bench_throughput(name, proto, sz)
        out += bench_split(name, proto, sz)
        out += bench_linear(name, proto, sz)
        out += bench_scapy(name, proto, sz)
    return out


if __name__ == "__main__":
    import json
    import sys
    for figure in run(quick="--quick" in sys.argv):
        print(json.dumps(figure))
