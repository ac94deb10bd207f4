"""BlipMQ decoding benchmarks: throughput, split-read and input-size scaling, and scapy.

Every figure is the best of a few repetitions, timed with ``time.perf_counter`` with the
garbage collector off (as ``timeit`` does), so one run's allocations do not bill the next.
Figures that are compared (whole vs chunked, 1x vs 4x) are measured in interleaved rounds.
Inputs are built before timing; chunk lists for split reads too, so only ``feed`` is timed.

- Throughput: one ``Decoder().feed(whole_buffer)`` per repetition, for PING (13 bytes),
  PUBLISH with a 32-byte message, and PUBLISH with a 64 KiB message.
- Split reads: one stream fed whole, in 1-byte chunks, and in random chunks (1..1500
  bytes, seeded). DESIGN.md "Decoding" promises O(N) whatever the chunking.
- Linear scaling: the same feeding on 1x and 4x the input; time ratio, goal <= 4.5
  (median times, and the median of the per-round ratios: see :func:`bench_linear`).
- scapy: ``BlipMQ(frame_bytes)`` for each frame of the same kinds, against the codec's
  frames/s (whole feed); goal codec >= 50x scapy.
"""
from __future__ import annotations

import gc
import random
import statistics
import time
from typing import Callable

from wirecheck.reference_impl.blipmq import codec

MB = 1_000_000
TOPIC = "bench/topic"

#: Workload sizes: full run / --quick.
SIZES = {
    False: {"reps": 5, "ping": 200_000, "pub32": 100_000, "pub64k": 256, "split": 4_000,
            "linear_whole": 40_000, "linear_1byte": 1_000, "linear_reps": 9, "scapy": 4_000,
            "scapy64k": 200},
    True: {"reps": 3, "ping": 20_000, "pub32": 10_000, "pub64k": 32, "split": 400,
           "linear_whole": 5_000, "linear_1byte": 150, "linear_reps": 3, "scapy": 500,
           "scapy64k": 30},
}

KINDS = {
    "ping": lambda i: codec.Ping(i),
    "publish32": lambda i: codec.Publish(i, 1, TOPIC, bytes(32)),
    "publish64k": lambda i: codec.Publish(i, 1, TOPIC, bytes(64 * 1024)),
}


def stream(kind: str, count: int) -> bytes:
    return b"".join(codec.encode(KINDS[kind](i)) for i in range(count))


def measure(runs: list[tuple[Callable[[], int], int]], reps: int) -> list[list[float]]:
    """Wall times of each ``(fn, expected_frames)`` in each of ``reps`` rounds. Rounds
    interleave the runs, so runs compared with each other see the same machine load."""
    times: list[list[float]] = [[] for _ in runs]
    enabled = gc.isenabled()
    try:
        for _ in range(reps):
            for i, (fn, expect) in enumerate(runs):
                gc.collect()
                gc.disable()
                start = time.perf_counter()
                got = fn()
                elapsed = time.perf_counter() - start
                gc.enable()
                if got != expect:
                    raise AssertionError(f"decoded {got} frames, expected {expect}")
                times[i].append(elapsed)
    finally:
        (gc.enable if enabled else gc.disable)()
    return times


def best_times(runs: list[tuple[Callable[[], int], int]], reps: int) -> list[float]:
    return [min(t) for t in measure(runs, reps)]


def best_time(fn: Callable[[], int], reps: int, expect: int) -> float:
    return best_times([(fn, expect)], reps)[0]


def feed_whole(data: bytes, make: Callable = codec.Decoder) -> Callable[[], int]:
    """Decode ``data`` in one ``feed`` of a fresh ``make()`` decoder (BlipMQ's by default)."""
    return lambda: len(make().feed(data))


def feed_chunks(chunks: list[bytes], make: Callable = codec.Decoder) -> Callable[[], int]:
    """Decode ``chunks``, one ``feed`` each, with a fresh ``make()`` decoder."""
    def run() -> int:
        feed = make().feed
        n = 0
        for chunk in chunks:
            n += len(feed(chunk))
        return n
    return run


def one_byte_chunks(data: bytes) -> list[bytes]:
    return [data[i:i + 1] for i in range(len(data))]


def random_chunks(data: bytes, seed: int = 5555) -> list[bytes]:
    rng, out, pos = random.Random(seed), [], 0
    while pos < len(data):
        step = rng.randint(1, 1500)
        out.append(data[pos:pos + step])
        pos += step
    return out


def result(name: str, value: float, unit: str, peer: float | None = None,
           ratio: float | None = None, goal: str | None = None) -> dict:
    met = None
    if goal is not None and ratio is not None:
        op, bound = goal.split()
        met = ratio <= float(bound) if op == "<=" else ratio >= float(bound)
    return {"name": name, "value": value, "unit": unit, "peer": peer, "ratio": ratio,
            "goal": goal, "met": met}


def bench_throughput(sz: dict) -> tuple[list[dict], dict[str, float]]:
    out, fps = [], {}
    for kind, count in (("ping", sz["ping"]), ("publish32", sz["pub32"]),
                        ("publish64k", sz["pub64k"])):
        data = stream(kind, count)
        t = best_time(feed_whole(data), sz["reps"], count)
        fps[kind] = count / t
        out.append(result(f"blipmq.decode.{kind}.whole", count / t, "frames/s"))
        out.append(result(f"blipmq.decode.{kind}.whole.mbps", len(data) / t / MB, "MB/s"))
    return out, fps


def bench_split(sz: dict) -> list[dict]:
    data = stream("publish32", sz["split"])
    n, reps = sz["split"], sz["reps"]
    t_whole, t_one, t_rand = best_times([(feed_whole(data), n),
                                         (feed_chunks(one_byte_chunks(data)), n),
                                         (feed_chunks(random_chunks(data)), n)], reps)
    whole = len(data) / t_whole / MB
    return [
        result("blipmq.split.whole", whole, "MB/s"),
        result("blipmq.split.1byte", len(data) / t_one / MB, "MB/s", whole, t_one / t_whole),
        result("blipmq.split.random", len(data) / t_rand / MB, "MB/s", whole, t_rand / t_whole),
    ]


def bench_linear(sz: dict) -> list[dict]:
    out = []
    for name, count, make in (("whole", sz["linear_whole"], lambda d: feed_whole(d)),
                              ("1byte", sz["linear_1byte"],
                               lambda d: feed_chunks(one_byte_chunks(d)))):
        small, large = stream("publish32", count), stream("publish32", 4 * count)
        t1, t4 = measure([(make(small), count), (make(large), 4 * count)], sz["linear_reps"])
        # Medians, and the median of the per-round ratios: on a shared machine the best of a
        # short run is luckier than the best of a long one, which skews a best/best ratio.
        ratio = statistics.median(b / a for a, b in zip(t1, t4))
        out.append(result(f"blipmq.linear.{name}.4x", statistics.median(t4), "s",
                          statistics.median(t1), ratio, "<= 4.5"))
    return out


def bench_scapy(sz: dict, codec_fps: dict[str, float]) -> list[dict]:
    from wirecheck.reference_impl.blipmq.scapy_layer import BlipMQ

    out = []
    for kind, count in (("ping", sz["scapy"]), ("publish32", sz["scapy"]),
                        ("publish64k", sz["scapy64k"])):
        pieces = [codec.encode(KINDS[kind](i)) for i in range(count)]

        def run() -> int:
            n = 0
            for piece in pieces:
                n += BlipMQ(piece).length is not None
            return n

        t = best_time(run, sz["reps"], count)
        fps = count / t
        out.append(result(f"scapy.dissect.{kind}", fps, "frames/s", codec_fps[kind],
                          codec_fps[kind] / fps, ">= 50"))
    return out


def run(quick: bool = False) -> list[dict]:
    sz = SIZES[quick]
    results, fps = bench_throughput(sz)
    results += bench_split(sz)
    results += bench_linear(sz)
    results += bench_scapy(sz, fps)
    return results
