"""SignalR decoding benchmarks: the codec against pysignalr's own protocol parsing of the same
bytes.

Timing as in :mod:`benchmarks.bench_blipmq_decode` (best of a few interleaved rounds, garbage
collector off, inputs built before timing). Kinds, each a stream of many hub messages as a
server sends them after the handshake:

- ``json.small``: Invocation ``{"type":1,"target":"Echo","arguments":["hello"],"invocationId":"N"}``;
- ``json.large``: Completion whose result is a list of 100 small objects (about 3 KB);
- ``msgpack.small`` and ``msgpack.large``: the same messages in MessagePack (VarInt-prefixed).

Like with like, every run turns every message into an object: the codec with
``Decoder(protocol=..., handshake=False).feed(stream)``; pysignalr 1.3.3 with its
``JSONProtocol().decode(stream)`` (split at 0x1E, ``orjson.loads``, ``parse_message``) and
``MessagepackProtocol().decode(stream)`` (VarInt, ``msgpack.unpackb``, ``parse_message``), the
calls its transport makes on each WebSocket message. Results give the codec's messages/s and
MB/s, then pysignalr's messages/s with the codec's as ``peer`` and the codec's speed-up as
``ratio`` (goal >= 1.5).
"""
from __future__ import annotations

from typing import Callable

from wirecheck.reference_impl.signalr import codec
from wirecheck.reference_impl.signalr.messages import Completion, Invocation

from benchmarks.bench_blipmq_decode import MB, best_times, result

SIZES = {False: {"reps": 5, "small": 50_000, "large": 2_000},
         True: {"reps": 3, "small": 3_000, "large": 150}}


def _small(i: int):
    return Invocation("Echo", ["hello"], str(i))


def _large(i: int):
    return Completion.with_result(str(i), [{"id": n, "name": f"item-{n}", "price": n * 1.25,
                                            "tags": ["a", "b"]} for n in range(100)])


KINDS: dict[str, tuple[str, Callable[[int], object], str]] = {
    "json.small": ("json", _small, "small"), "json.large": ("json", _large, "large"),
    "msgpack.small": ("messagepack", _small, "small"), "msgpack.large": ("messagepack", _large, "large"),
}


def stream(protocol: str, make: Callable[[int], object], count: int) -> bytes:
    return b"".join(codec.encode(make(i), protocol) for i in range(count))


def codec_run(data: bytes, protocol: str) -> Callable[[], int]:
    def run() -> int:
        return len(codec.Decoder(protocol=protocol, handshake=False).feed(data))
    return run


def pysignalr_run(data: bytes, protocol: str) -> Callable[[], int]:
    from pysignalr.protocol.json import JSONProtocol
    from pysignalr.protocol.messagepack import MessagepackProtocol

    decoder = JSONProtocol() if protocol == "json" else MessagepackProtocol()

    def run() -> int:
        return len(decoder.decode(data))
    return run


def run(quick: bool = False) -> list[dict]:
    sz = SIZES[quick]
    out = []
    for kind, (protocol, make, size) in KINDS.items():
        count = sz[size]
        data = stream(protocol, make, count)
        t_codec, t_peer = best_times([(codec_run(data, protocol), count),
                                      (pysignalr_run(data, protocol), count)], sz["reps"])
        fps = count / t_codec
        out.append(result(f"signalr.decode.{kind}.whole", fps, "messages/s"))
        out.append(result(f"signalr.decode.{kind}.whole.mbps", len(data) / t_codec / MB, "MB/s"))
        out.append(result(f"signalr.pysignalr.decode.{kind}", count / t_peer, "messages/s", fps,
                          t_peer / t_codec, ">= 1.5"))
    return out


if __name__ == "__main__":
    for row in run(quick=False):
        print(row)
