"""``wirecheck decode --protocol P --pcap FILE``: every frame of every TCP conversation of a
capture, one JSON line each (DESIGN.md "Command line").

The capture is read packet by packet with scapy's ``PcapReader`` (pcap or pcapng, never
loaded whole). Each direction of each TCP connection (``src:port -> dst:port``) is put back
in sequence order: bytes already delivered (retransmissions, overlaps) are dropped, segments
that arrive early wait in a bounded heap, and the in-order bytes go to that direction's own
``spec.make_decoder()``. Lines::

    {"flow": "10.0.0.1:40000->10.0.0.2:5555", "direction": "c2s", "time": 1.5, **frame_to_dict}
    {"flow": ..., "direction": ..., "time": ..., "error": ..., "category": ..., "protocol": ...,
     "offset": ...}

``time`` is the capture timestamp of the segment that completed the frame; ``offset`` counts
from the first byte of that direction. A ``FrameError`` ends the decoding of its direction
only. Two conditions that are not frame errors get categories of their own:
``CAPTURE_GAP`` (bytes missing from the capture: the rest of that direction cannot be framed)
and the decoder's ``TRUNCATED`` when a direction ends (FIN, RST, end of capture) inside a frame.
Exit status: 1 if any error line was printed, else 0.
"""
from __future__ import annotations

import heapq
import itertools
import json
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, TextIO

from reference_impl.core.errors import FrameError

EXIT_OK, EXIT_ERRORS, EXIT_HARNESS = 0, 1, 2
GAP = "CAPTURE_GAP"
#: Early (out-of-order) bytes held per direction while waiting for a missing segment.
MAX_PENDING_BYTES = 8 * 1024 * 1024
#: Largest record read from the capture (loopback segments can exceed 64 KiB with headers).
SNAPLEN = 256 * 1024
_SEQ_MOD = 1 << 32


def _seq_diff(a: int, b: int) -> int:
    """``a - b`` in TCP sequence space (RFC 793 modular arithmetic), as a signed number."""
    return (a - b + (1 << 31)) % _SEQ_MOD - (1 << 31)


def _endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass
class _Direction:
    """One direction of one connection: sequence tracking, pending segments, decoder."""
    flow: str
    src: tuple[str, int]
    dst: tuple[str, int]
    decoder: Any
    base: int | None = None          # sequence number of stream offset 0
    pos: int = 0                     # stream offset of the next byte expected
    end: int | None = None           # stream offset of FIN/RST
    pending: list = field(default_factory=list)   # heap of (offset, n, data, time)
    pending_bytes: int = 0
    done: bool = False


class PcapDecoder:
    """Feeds segments in; writes JSON lines to ``out``. Usable without a file (tests, replay)."""

    def __init__(self, spec, ports: Iterable[int] = (), out: TextIO | None = None,
                 profile: str | None = None) -> None:
        self.spec = spec
        self.profile = profile
        self.ports = {spec.default_port, *spec.extra_ports, *ports}
        self.out = out if out is not None else sys.stdout
        self.errors = 0
        self._dirs: dict[tuple, _Direction] = {}
        self._clients: dict[frozenset, tuple[str, int]] = {}   # connection -> SYN sender
        self._tiebreak = itertools.count()

    # -- output --------------------------------------------------------------------------

    def _direction_name(self, d: _Direction) -> str:
        client = self._clients.get(frozenset((d.src, d.dst)))
        if client is not None:
            return "c2s" if d.src == client else "s2c"
        return "c2s" if d.dst[1] in self.ports else "s2c"

    def _emit(self, d: _Direction, time: float, body: dict) -> None:
        line = {"flow": d.flow, "direction": self._direction_name(d), "time": time, **body}
        self.out.write(json.dumps(line) + "\n")

    def _error(self, d: _Direction, time: float, body: dict) -> None:
        self._emit(d, time, body)
        self.errors += 1
        d.done = True
        d.pending.clear()

    # -- per direction -------------------------------------------------------------------

    def _deliver(self, d: _Direction, data: bytes, time: float) -> None:
        d.pos += len(data)
        if d.done:
            return
        try:
            frames = d.decoder.feed(data)
        except FrameError as exc:
            for frame in exc.frames:
                self._emit(d, time, self.spec.frame_to_dict(frame))
            self._error(d, time, exc.as_dict())
            return
        for frame in frames:
            self._emit(d, time, self.spec.frame_to_dict(frame))

    def _drain(self, d: _Direction) -> None:
        """Deliver pending segments that have become in order."""
        while d.pending and d.pending[0][0] <= d.pos:
            offset, _, data, time = heapq.heappop(d.pending)
            d.pending_bytes -= len(data)
            skip = d.pos - offset
            if skip < len(data):
                self._deliver(d, data[skip:], time)

    def _finish(self, d: _Direction, time: float) -> None:
        if d.done:
            return
        if d.pending:
            self._error(d, time, {"error": f"capture lacks bytes {d.pos}..{d.pending[0][0]} of "
                                           "this direction", "category": GAP,
                                  "protocol": self.spec.id, "offset": d.pos})
            return
        try:
            d.decoder.eof()
        except FrameError as exc:
            self._error(d, time, exc.as_dict())
            return
        d.done = True

    def segment(self, src: tuple[str, int], dst: tuple[str, int], seq: int, flags: str,
                data: bytes, time: float) -> None:
        """One TCP segment: ``flags`` as scapy prints them ("S", "SA", "PA", "FA", "R"...)."""
        if src[1] not in self.ports and dst[1] not in self.ports:
            return
        key = (src, dst)
        d = self._dirs.get(key)
        syn = "S" in flags
        if syn and "A" not in flags:
            self._clients[frozenset((src, dst))] = src
        if syn and d is not None and d.base is not None and _seq_diff(seq + 1, d.base) != 0:
            self._finish(d, time)         # the 4-tuple is reused by a new connection
            d = None
        if d is None:
            client = self._clients.get(frozenset((src, dst)))
            if client is not None:
                origin = "client" if src == client else "server"
            else:
                origin = "client" if dst[1] in self.ports else "server"
            d = self._dirs[key] = _Direction(f"{_endpoint(*src)}->{_endpoint(*dst)}", src, dst,
                                             self.spec.make_decoder(origin=origin, profile=self.profile))
        if syn:
            seq = (seq + 1) % _SEQ_MOD    # SYN takes one sequence number; data follows it
            d.base = seq if d.base is None else d.base
        elif d.base is None:
            d.base = seq                  # the capture starts mid-connection
        offset = d.pos + _seq_diff(seq, (d.base + d.pos) % _SEQ_MOD)
        if data and not d.done:
            if offset <= d.pos:
                if offset + len(data) > d.pos:    # drop what was already delivered
                    self._deliver(d, data[d.pos - offset:], time)
                    self._drain(d)
            else:
                heapq.heappush(d.pending, (offset, next(self._tiebreak), data, time))
                d.pending_bytes += len(data)
                if d.pending_bytes > MAX_PENDING_BYTES:
                    self._finish(d, time)
        if "F" in flags or "R" in flags:
            d.end = offset + len(data) if d.end is None else min(d.end, offset + len(data))
        if d.end is not None and d.pos >= d.end:
            self._finish(d, time)

    def close(self, time: float) -> int:
        """End of capture: directions still open end here."""
        for d in self._dirs.values():
            self._finish(d, time)
        self.out.flush()
        return EXIT_ERRORS if self.errors else EXIT_OK


def _tcp_fields(pkt):
    """(src, dst, seq, flags, payload) of a TCP/IP packet, or None."""
    from scapy.config import conf
    from scapy.layers.inet import TCP
    from scapy.packet import NoPayload

    tcp = pkt.getlayer(TCP)
    if tcp is None or tcp.underlayer is None or not hasattr(tcp.underlayer, "src"):
        return None
    ip = tcp.underlayer
    pay = tcp.payload
    if isinstance(pay, (NoPayload, conf.padding_layer)):
        data = b""
    elif type(pay) is conf.raw_layer:
        data = pay.load
    else:   # dissected further by some bound layer: its bytes minus link-layer padding
        data = bytes(pay)
        pad = tcp.getlayer(conf.padding_layer)
        if pad is not None:
            data = data[:len(data) - len(pad.load)]
    return (ip.src, tcp.sport), (ip.dst, tcp.dport), tcp.seq, str(tcp.flags), data


def decode_pcap(spec, path: str, ports: Iterable[int] = (), out: TextIO | None = None,
                profile: str | None = None) -> int:
    """Decode every ``spec`` conversation of the capture at ``path`` (TCP to or from
    ``spec.default_port`` or one of ``ports``); JSON lines on ``out``; exit status."""
    from scapy.error import Scapy_Exception
    from scapy.layers import inet, inet6, l2  # noqa: F401  (link types for PcapReader)
    from scapy.utils import PcapReader

    decoder = PcapDecoder(spec, ports, out, profile)
    last_time = 0.0
    try:
        reader = PcapReader(path)
    except (OSError, Scapy_Exception) as exc:
        print(f"wirecheck decode: cannot read {path}: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    with reader:
        while True:
            try:
                # Stop at TCP: the payload is decoded by the spec's decoder, not by scapy.
                pkt = reader.read_packet(size=SNAPLEN, stop_dissection_after=inet.TCP)
            except EOFError:
                break
            last_time = float(pkt.time)
            fields = _tcp_fields(pkt)
            if fields is not None:
                decoder.segment(*fields, time=last_time)
    return decoder.close(last_time)
