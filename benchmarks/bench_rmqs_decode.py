"""RabbitMQ Stream decoding benchmarks: the codec against rstream's own decoding of the same
bytes, and against scapy dissection.

Timing as in :mod:`benchmarks.bench_blipmq_decode` (best of a few interleaved rounds, garbage
collector off, inputs built before timing). Kinds of frames, each a stream of many:

- ``deliver100x100``: Deliver (version 1) of a chunk of 100 simple entries of 100 bytes;
- ``deliver100xvar``: the same with sizes from 50 to 150 bytes (no one-size fast path);
- ``deliver1x16``: Deliver of a chunk of one 16-byte message (a small frame);
- ``confirm``: PublishConfirm of one publishing id (what a publisher receives most).

Like with like, every run decodes every frame and extracts every message body, the chunk's CRC
checked, and holds one frame at a time, as a consumer does (it handles a Deliver and drops it):
the codec iterating ``Decoder()`` over the stream and calling each Deliver's
``chunk.messages()``; rstream 1.1.1 cutting the stream by its size fields as its connection
does (u32 size, then that many bytes) and calling ``rstream.encoding.decode_frame`` on each
frame and ``Deliver.get_messages()`` (its ``Deliver`` checks the CRC when built); scapy with
``RabbitMQStream(frame_bytes)`` per frame, chunk entries dissected. Results give the codec's
frames/s and MB/s, then rstream's and scapy's frames/s with the codec's as ``peer`` and the
codec's speed-up as ``ratio`` (goals: codec >= 50x scapy as for BlipMQ; >= 1.5x rstream on Deliver).

``rmqs.decode.<kind>.feedlist`` is the codec again through ``Decoder().feed(stream)``, which
returns every frame of the stream in one list: its ``ratio`` is how much slower that is than
streaming. On 100-message Delivers it is about 1.5x slower (~7 us a frame), none of it in the
decoder: 20 MB of frames kept alive at once are fresh pages the allocator must fault in.
Until this was measured apart, the rstream comparison used ``feed`` on one side and one frame
at a time on the other, and billed that to the codec.
"""
from __future__ import annotations

from typing import Callable

from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.chunk import SimpleEntry, build_chunk

from benchmarks.bench_blipmq_decode import MB, best_time, best_times, result

SIZES = {
    False: {"reps": 5, "deliver100x100": 2_000, "deliver100xvar": 2_000, "deliver1x16": 50_000,
            "confirm": 100_000,
            "scapy": {"deliver100x100": 100, "deliver1x16": 2_000, "confirm": 4_000}},
    True: {"reps": 3, "deliver100x100": 200, "deliver100xvar": 200, "deliver1x16": 3_000,
           "confirm": 5_000,
           "scapy": {"deliver100x100": 10, "deliver1x16": 200, "confirm": 400}},
}
TIMESTAMP = 1_700_000_000_000


def _deliver(i: int, records: int, size: int, vary: int = 0) -> codec.Deliver:
    """``vary``: sizes spread over size ± vary (no two neighbours alike), so the codec's
    one-size fast path does not apply."""
    entries = [SimpleEntry(bytes([(i + r) & 0xFF]) * (size + (r * 37) % (2 * vary + 1) - vary
                                                       if vary else size))
               for r in range(records)]
    return codec.Deliver(1, build_chunk(entries, first_offset=i * records, timestamp=TIMESTAMP))


#: kind -> (frame i, messages per frame)
KINDS: dict[str, tuple[Callable[[int], object], int]] = {
    "deliver100x100": (lambda i: _deliver(i, 100, 100), 100),
    "deliver100xvar": (lambda i: _deliver(i, 100, 100, vary=50), 100),
    "deliver1x16": (lambda i: _deliver(i, 1, 16), 1),
    "confirm": (lambda i: codec.PublishConfirm(1, (i,)), 0),
}


def frames_of(kind: str, count: int) -> list[bytes]:
    make = KINDS[kind][0]
    return [codec.encode(make(i)) for i in range(count)]


def codec_run(data: bytes, messages: int) -> Callable[[], int]:
    """Decode ``data`` one frame at a time and extract every message; returns the frame count
    (checked)."""
    def run() -> int:
        decoder = codec.Decoder()
        decoder.receive(data)
        n = got = 0
        for frame in decoder:
            n += 1
            if type(frame) is codec.Deliver:
                got += len(frame.chunk.messages())
        if got != messages * n or decoder.buffered:
            raise AssertionError(f"{got} messages from {n} frames, {decoder.buffered} bytes left")
        return n
    return run


def codec_feedlist_run(data: bytes, messages: int) -> Callable[[], int]:
    """The same through ``feed``: every frame of the stream returned in one list."""
    def run() -> int:
        frames = codec.Decoder().feed(data)
        got = 0
        for frame in frames:
            if type(frame) is codec.Deliver:
                got += len(frame.chunk.messages())
        if got != messages * len(frames):
            raise AssertionError(f"{got} messages from {len(frames)} frames")
        return len(frames)
    return run


def rstream_run(data: bytes, messages: int) -> Callable[[], int]:
    from rstream import schema
    from rstream.encoding import decode_frame

    def run() -> int:
        n = got = pos = 0
        end = len(data)
        while pos < end:
            size = int.from_bytes(data[pos:pos + 4], "big")
            frame = decode_frame(data[pos + 4:pos + 4 + size])
            pos += 4 + size
            n += 1
            if type(frame) is schema.Deliver:
                got += len(frame.get_messages())
        if got != messages * n:
            raise AssertionError(f"rstream: {got} messages from {n} frames")
        return n
    return run


def bench_codec_vs_rstream(sz: dict) -> tuple[list[dict], dict[str, float]]:
    out, fps = [], {}
    for kind, (_, messages) in KINDS.items():
        count = sz[kind]
        data = b"".join(frames_of(kind, count))
        t_codec, t_rstream, t_list = best_times([(codec_run(data, messages), count),
                                                 (rstream_run(data, messages), count),
                                                 (codec_feedlist_run(data, messages), count)],
                                                sz["reps"])
        fps[kind] = count / t_codec
        out.append(result(f"rmqs.decode.{kind}.whole", count / t_codec, "frames/s"))
        out.append(result(f"rmqs.decode.{kind}.whole.mbps", len(data) / t_codec / MB, "MB/s"))
        out.append(result(f"rmqs.decode.{kind}.feedlist", count / t_list, "frames/s",
                          fps[kind], t_list / t_codec))
        # The goal (codec >= 1.5x rstream) concerns Deliver chunks.
        out.append(result(f"rmqs.rstream.decode.{kind}", count / t_rstream, "frames/s",
                          fps[kind], t_rstream / t_codec,
                          ">= 1.5" if kind.startswith("deliver") else None))
    return out, fps


def bench_scapy(sz: dict, codec_fps: dict[str, float]) -> list[dict]:
    from wirecheck.reference_impl.rabbitmq_stream.scapy_layer import RabbitMQStream

    out = []
    for kind, count in sz["scapy"].items():
        pieces = frames_of(kind, count)

        def run() -> int:
            n = 0
            for piece in pieces:
                n += RabbitMQStream(piece).size is not None
            return n

        fps = count / best_time(run, sz["reps"], count)
        out.append(result(f"rmqs.scapy.dissect.{kind}", fps, "frames/s", codec_fps[kind],
                          codec_fps[kind] / fps, ">= 50"))
    return out


def run(quick: bool = False) -> list[dict]:
    sz = SIZES[quick]
    results, fps = bench_codec_vs_rstream(sz)
    results += bench_scapy(sz, fps)
    return results
