"""VibeMQ decoding benchmarks: frames uncompressed, GZip and Brotli ("Compression"), small and
large messages.

Timing as in :mod:`benchmarks.bench_blipmq_decode` (best of a few rounds, garbage collector
off, inputs built before timing). Kinds, each a stream of many frames as a server sends them:

- ``small``: the document's Publish example (``{"title":"Hello","body":"World"}`` to
  ``notifications``, three headers), about 150 bytes of body;
- ``large``: a Deliver whose payload is a list of 200 small objects, about 12 KB of body;

each ``plain`` (flags 0), ``gzip`` and ``brotli`` (the codec's own compression settings; a
real writer compresses only from 1,024 bytes on, so ``gzip.small``/``brotli.small`` show the
per-frame cost of compression at its worst). Every run turns every frame into a message
(decompressed, fields read, the payload parsed as JSON) with ``Decoder().feed(stream)``.
Results give frames/s and MB/s of wire bytes. No other Python implementation of VibeMQ
exists to compare with, so no ``peer``.
"""
from __future__ import annotations

from typing import Callable

from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import CommandType, Compression

from benchmarks.bench_blipmq_decode import MB, best_time, result

SIZES = {False: {"reps": 5, "small": 50_000, "large": 2_000},
         True: {"reps": 3, "small": 3_000, "large": 150}}
FLAGS = {"plain": Compression.NONE, "gzip": Compression.GZIP, "brotli": Compression.BROTLI}


def _small(i: int) -> Message:
    return Message(CommandType.PUBLISH, f"msg_{i}", "notifications",
                   {"title": "Hello", "body": "World"},
                   {"priority": "high", "correlationId": f"corr_{i}",
                    "timestamp": "2026-02-18T10:30:00Z"})


def _large(i: int) -> Message:
    return Message(CommandType.DELIVER, f"msg_{i}", "notifications",
                   [{"id": n, "name": f"item-{n}", "price": n * 1.25, "tags": ["a", "b"]}
                    for n in range(200)],
                   {"priority": "high", "deliveryAttempts": "1"})


MESSAGES: dict[str, Callable[[int], Message]] = {"small": _small, "large": _large}


def stream(size: str, flag: int, count: int) -> bytes:
    make = MESSAGES[size]
    return b"".join(codec.encode(make(i), compression=flag) for i in range(count))


def codec_run(data: bytes) -> Callable[[], int]:
    def run() -> int:
        return len(codec.Decoder().feed(data))
    return run


def run(quick: bool = False) -> list[dict]:
    sz = SIZES[quick]
    out = []
    for name, flag in FLAGS.items():
        for size in MESSAGES:
            count = sz[size]
            data = stream(size, flag, count)
            elapsed = best_time(codec_run(data), sz["reps"], count)
            kind = f"{name}.{size}"
            out.append(result(f"vibemq.decode.{kind}.whole", count / elapsed, "frames/s"))
            out.append(result(f"vibemq.decode.{kind}.whole.mbps", len(data) / elapsed / MB, "MB/s"))
    return out
