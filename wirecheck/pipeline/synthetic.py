"""Capture sets of any size made from recorded conversations, for the pipeline's tests and
benchmark: each conversation of the source captures (reassembled, both directions, with its
timing) is written again and again with new client addresses, file after file, until the
set has the size asked for.

    python -m wirecheck.pipeline.synthetic OUT_DIR --mb 500 [--files 20] [SOURCES...]
"""
from __future__ import annotations

import argparse
import itertools
import os
import random
import sys
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

from wirecheck.conformance.captures.pcapfile import PcapReader, PcapWriter, TcpConversation
from wirecheck.conformance.captures.tcpflows import TcpReassembler

DEFAULT_SOURCES = ("captures",)
#: Conversations larger than this are left out: a few suite connections carry one 16 MiB
#: frame each, and a set made of those would measure memcpy, not frame decoding.
MAX_CONVERSATION = 1 << 20


@dataclass
class Conversation:
    server: tuple[str, int]
    start: float
    events: list = field(default_factory=list)     # (direction, seconds after start, bytes)
    ends: dict = field(default_factory=dict)       # direction -> seconds after start (FIN)

    @property
    def size(self) -> int:
        return sum(len(data) for _, _, data in self.events)


class _Recorder:
    def __init__(self) -> None:
        self.done: list[Conversation] = []

    def opened(self, conn, time: float) -> None:
        conn.user["c"] = Conversation(conn.server, time)

    def data(self, s, data: bytes, time: float) -> None:
        c = s.conn.user["c"]
        c.events.append((s.direction, time - c.start, bytes(data)))

    def ended(self, s, time: float, how: str, missing) -> None:
        c = s.conn.user["c"]
        if how in ("fin", "rst"):
            c.ends[s.direction] = time - c.start
        if all(x.ended for x in s.conn.streams.values()) and c.events:
            self.done.append(c)


def conversations(paths: Iterable[str], ports: Iterable[int]) -> list[Conversation]:
    """The conversations (on ``ports``) of the captures at ``paths``."""
    recorder = _Recorder()
    for path in paths:
        reassembler = TcpReassembler(recorder, ports)
        last = 0.0
        with PcapReader(path) as reader:
            for seg in reader:
                last = seg.time
                reassembler.segment(seg)
        reassembler.close(last)
    return recorder.done


def _client(n: int) -> tuple[str, int]:
    return f"10.{(n >> 16) & 0xFF}.{(n >> 8) & 0xFF}.{n & 0xFF or 1}", 20000 + n % 40000


def write_conversations(path: str, convs: Iterator[Conversation], first: int, t0: float,
                        limit: int) -> tuple[int, int]:
    """Write conversations taken from ``convs`` into ``path`` until it holds ``limit`` bytes
    of payload; returns (conversations written, payload bytes)."""
    n = written = 0
    with PcapWriter(path) as w:
        while written < limit:
            c = next(convs)
            conv = TcpConversation(w, _client(first + n), c.server, t0)
            for direction, dt, data in c.events:
                conv.data(direction, data, t0 + dt)
            for direction in ("c2s", "s2c"):
                conv.close(direction, t0 + c.ends.get(direction, c.events[-1][1]))
            t0 += max(c.events[-1][1], 0.001)
            n += 1
            written += c.size
    return n, written


def write_set(out_dir: str, total_bytes: int, files: int, sources: Iterable[str] = DEFAULT_SOURCES,
              ports: Optional[Iterable[int]] = None, max_conversation: int = MAX_CONVERSATION, seed: int = 0) -> list[str]:
    """``files`` capture files in ``out_dir`` holding about ``total_bytes`` of TCP payload in
    all, from the conversations of ``sources`` (those up to ``max_conversation`` bytes)."""
    from wirecheck.pipeline.inputs import capture_files, protocols
    if ports is None:
        ports = {p for spec in protocols() for p in (spec.default_port, *spec.extra_ports)}
    convs = [c for c in conversations(capture_files(list(sources)), ports) if c.size <= max_conversation]
    if not convs:
        raise ValueError("no conversations in the sources")
    # Every protocol's conversations mixed (seeded: the same set every time), cycled over.
    random.Random(seed).shuffle(convs)
    stream = itertools.cycle(convs)
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    per_file = max(total_bytes // files, 1)
    first = 0
    for k in range(files):
        path = os.path.join(out_dir, f"set-{k:03d}.pcap")
        n, _ = write_conversations(path, stream, first, 1_800_000_000.0 + k * 3600, per_file)
        first += n
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m wirecheck.pipeline.synthetic", description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("sources", nargs="*", default=list(DEFAULT_SOURCES))
    p.add_argument("--mb", type=float, default=100.0, help="TCP payload in all, in MB")
    p.add_argument("--files", type=int, default=10)
    args = p.parse_args(argv)
    paths = write_set(args.out, int(args.mb * 1e6), args.files, args.sources)
    print(f"{len(paths)} files, {sum(os.path.getsize(x) for x in paths)} bytes in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
