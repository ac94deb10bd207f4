"""Seeds of the network fuzzer: recorded client sessions, cut into their frames.

A seed is the list of a client's frames on one connection, each the exact bytes it sent, taken
from the capture corpus (``captures/<protocol>/*.pcap*``: suite and client sessions, real
clients) and from the atheris seed corpora (``fuzz/corpora/``: the documents' samples and
strategy-generated streams). Frame boundaries come from the reference decoder fed one byte at
a time (a frame comes out when its last byte goes in), so no frame is re-encoded: a seed keeps
whatever the client really wrote. Only the bytes up to the first decode error are kept (the
suite sends malformed frames on purpose; the mutator makes its own), and only connections that
start with a frame the reference decoder accepts as a client's. The network fuzzer speaks the
raw transport; a SignalR connection recorded over HTTP + WebSocket gives the hub bytes its
WebSocket messages carried (the same bytes as the raw transport, http_transport.py).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from wirecheck.conformance.captures.pcapfile import CaptureFormatError, PcapReader
from wirecheck.conformance.captures.decode import capture_ports
from wirecheck.conformance.captures.tcpflows import TcpReassembler
from wirecheck.reference_impl.core.errors import FrameError

FUZZ = Path(__file__).resolve().parents[1]
#: The capture corpus of a checkout of the kit (captures/<protocol>/), when there is one: an
#: installed kit seeds from its corpora alone.
CAPTURES = FUZZ.parent.parent / "captures"
#: Bytes of one connection's client side read for a seed, and seeds kept per protocol: the
#: suite capture has hundreds of short connections, a client session a few long ones.
MAX_SEED_BYTES = 64 * 1024
MAX_SEEDS = 600


@dataclass(frozen=True)
class Seed:
    name: str                    # where it came from: "suite.pcap.gz#12", "corpora/blipmq/ping"
    frames: tuple[bytes, ...]

    @property
    def size(self) -> int:
        return sum(map(len, self.frames))


def split_frames(spec, data: bytes, profile: str | None = None) -> list[bytes]:
    """``data`` (a client's bytes) cut into the frames the reference decoder reads, up to the
    first error or the last whole frame."""
    decoder = spec.make_decoder(origin="client", profile=profile)
    frames, start = [], 0
    try:
        for i in range(len(data)):
            got = decoder.feed(data[i:i + 1])
            if got:
                frames.append(data[start:i + 1])
                start = i + 1
    except FrameError:
        pass
    return frames


class _ClientBytes:
    """A reassembly sink keeping each connection's first client bytes."""

    def __init__(self) -> None:
        self.streams: dict[int, bytearray] = {}

    def opened(self, conn, time) -> None:
        self.streams[conn.index] = bytearray()

    def data(self, stream, data, time) -> None:
        if stream.direction == "c2s":
            buf = self.streams[stream.conn.index]
            buf += data[:MAX_SEED_BYTES - len(buf)]
            if len(buf) >= MAX_SEED_BYTES:
                stream.done = True

    def ended(self, stream, time, how, missing) -> None:
        pass


def _websocket_hub_bytes(data: bytes) -> bytes:
    """The hub protocol bytes a client's HTTP + WebSocket stream carried (SignalR), or b"".
    The transport decoder hands them to its inner hub decoder (``_feed_hub``); a subclass
    keeps a copy."""
    from wirecheck.reference_impl.signalr.http_transport import TransportDecoder

    class HubBytes(TransportDecoder):
        def _feed_hub(self, chunk: bytes) -> None:
            kept.extend(chunk)
            super()._feed_hub(chunk)

    kept = bytearray()
    try:
        HubBytes(origin="client").feed(data)
    except FrameError:
        pass
    return bytes(kept)


def _client_frames(spec, data: bytes, profile: str | None) -> list[bytes]:
    frames = split_frames(spec, data, profile)
    if not frames and spec.make_capture_decoder is not None and data[:4] in (b"GET ", b"POST"):
        frames = split_frames(spec, _websocket_hub_bytes(data), profile)
    return frames


def capture_seeds(spec, path: str | os.PathLike, profile: str | None = None,
                  damage: list[str] | None = None) -> list[Seed]:
    """The client streams of a capture as seeds; a capture cut short or corrupt gives what
    precedes the break, and a line in ``damage`` says where and what was lost."""
    sink = _ClientBytes()
    reassembler = TcpReassembler(sink, capture_ports(spec))
    last = 0.0
    try:
        with PcapReader(str(path), tolerant=True) as reader:
            for seg in reader:
                last = seg.time
                reassembler.segment(seg)
    except (CaptureFormatError, OSError) as exc:
        if damage is not None:
            damage.append(f"{path}: {getattr(exc, 'strerror', None) or exc}: not read")
        return []
    if reader.damage is not None and damage is not None:
        damage.append(f"{path}: {reader.damage}: seeds taken up to there, the rest is lost")
    reassembler.close(last)
    seeds = []
    for index, data in sorted(sink.streams.items()):
        frames = _client_frames(spec, bytes(data), profile)
        if frames:
            seeds.append(Seed(f"{Path(path).name}#{index}", tuple(frames)))
    return seeds


def corpus_seeds(spec, folder: Path, profile: str | None = None) -> list[Seed]:
    seeds = []
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        frames = split_frames(spec, path.read_bytes()[:MAX_SEED_BYTES], profile)
        if frames:
            seeds.append(Seed(f"corpora/{folder.name}/{path.name}", tuple(frames)))
    return seeds


def load_seeds(spec, profile: str | None = None, extra: list[str] = (),
               limit: int = MAX_SEEDS, damage: list[str] | None = None) -> list[Seed]:
    """Seeds for ``spec``: its captures, its atheris corpora and ``extra`` captures or byte
    files; duplicates dropped, at most ``limit`` (spread over the sources). What of them could
    not be read whole is said in ``damage``, one line each."""
    from wirecheck.fuzz.targets import of_protocol
    found: list[Seed] = []
    folder = CAPTURES / spec.id
    for path in sorted(folder.glob("*.pcap*")) if folder.is_dir() else ():
        found += capture_seeds(spec, path, profile, damage)
    for corpus in sorted({t.corpus for t in of_protocol(spec.id)}):
        found += corpus_seeds(spec, FUZZ / "corpora" / corpus, profile)
    for item in extra:
        p = Path(item)
        if p.is_dir():
            found += corpus_seeds(spec, p, profile)
        elif p.is_file():
            from wirecheck.conformance.captures.pcapfile import is_capture
            if is_capture(str(p)):
                found += capture_seeds(spec, p, profile, damage)
                continue
            try:
                frames = split_frames(spec, p.read_bytes()[:MAX_SEED_BYTES], profile)
            except OSError as exc:
                frames = []
                if damage is not None:
                    damage.append(f"{p}: {exc.strerror or exc}: not read")
            found += [Seed(p.name, tuple(frames))] if frames else []
        elif damage is not None:
            damage.append(f"{p}: no such file or directory: not read")
    unique: dict[tuple, Seed] = {}
    for seed in found:
        unique.setdefault(seed.frames, seed)
    seeds = list(unique.values())
    if len(seeds) > limit:                 # keep every k-th, so each source stays represented
        step = len(seeds) / limit
        seeds = [seeds[int(i * step)] for i in range(limit)]
    return seeds
