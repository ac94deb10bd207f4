"""TCP reassembly of captured segments into connections, each with two ordered byte streams.

Used by ``wirecheck decode --pcap`` (conformance/captures/decode.py) and ``wirecheck replay``
(conformance/captures/replay.py). A connection is told apart from an earlier one on the same four
addresses by its SYN's sequence number. Each direction is put back in sequence order
(RFC 9293 section 3.4, modular sequence arithmetic): bytes already delivered (retransmissions,
overlaps) are dropped, segments that arrive early wait in a bounded heap, and in-order bytes go
to the sink as they become contiguous. Nothing is held beyond the early segments, so a capture
of any size streams through.

The client of a connection is the sender of its SYN; for a connection whose start is not in
the capture, the side whose destination port is one of the protocol's ports.

The sink gets:

- ``opened(conn, time)`` when a connection is first seen;
- ``data(stream, data, time)`` for each run of in-order bytes;
- ``ended(stream, time, how, missing)`` once per direction: ``how`` is ``"fin"``, ``"rst"``,
  ``"reused"`` (a new connection took the same addresses) or ``"end"`` (end of capture, or too
  many early bytes held); ``missing`` is ``(offset, next_offset)`` when the capture lacks bytes
  of this direction (the rest cannot be framed), else None.

A sink may set ``stream.done`` to stop receiving a direction's bytes (after a decode error).
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Iterable, Protocol

from wirecheck.conformance.captures.pcapfile import Segment

#: Early (out-of-order) bytes held per direction while waiting for a missing segment.
MAX_PENDING_BYTES = 8 * 1024 * 1024
_SEQ_MOD = 1 << 32


def seq_diff(a: int, b: int) -> int:
    """``a - b`` in TCP sequence space, as a signed number."""
    return (a - b + (1 << 31)) % _SEQ_MOD - (1 << 31)


def endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(eq=False)
class Stream:
    """One direction of one connection."""
    conn: "Connection"
    direction: str                   # "c2s" or "s2c"
    src: tuple[str, int]
    dst: tuple[str, int]
    base: int | None = None          # sequence number of stream offset 0
    pos: int = 0                     # stream offset of the next byte expected
    end: int | None = None           # stream offset of FIN/RST
    how: str = "fin"
    pending: list = field(default_factory=list)   # heap of (offset, n, data, time)
    pending_bytes: int = 0
    done: bool = False               # set by the sink: deliver nothing more
    ended: bool = False

    @property
    def name(self) -> str:
        return f"{endpoint(*self.src)}->{endpoint(*self.dst)}"


@dataclass(eq=False)
class Connection:
    index: int                       # order of appearance in the capture, from 0
    client: tuple[str, int]
    server: tuple[str, int]
    streams: dict = field(default_factory=dict)   # direction -> Stream
    user: dict = field(default_factory=dict)      # the sink's own state
    mid_stream: bool = False                      # the capture lacks its SYN

    @property
    def name(self) -> str:
        return f"{endpoint(*self.client)}->{endpoint(*self.server)}"


class Sink(Protocol):
    def opened(self, conn: Connection, time: float) -> None: ...
    def data(self, stream: Stream, data: bytes, time: float) -> None: ...
    def ended(self, stream: Stream, time: float, how: str, missing: tuple[int, int] | None) -> None: ...


class TcpReassembler:
    def __init__(self, sink: Sink, ports: Iterable[int] = ()) -> None:
        self.sink = sink
        self.ports = set(ports)
        self._conns: dict[frozenset, Connection] = {}
        self._syn_from: dict[frozenset, tuple[str, int]] = {}
        self._count = itertools.count()
        self._tiebreak = itertools.count()
        self.connections = 0

    def _new_connection(self, pair: frozenset, src, dst, time: float, syn: bool) -> Connection:
        client = self._syn_from.get(pair)
        if client is None:
            client = src if dst[1] in self.ports or src[1] not in self.ports else dst
        server = dst if client == src else src
        conn = Connection(next(self._count), client, server, mid_stream=not syn)
        conn.streams["c2s"] = Stream(conn, "c2s", client, server)
        conn.streams["s2c"] = Stream(conn, "s2c", server, client)
        self._conns[pair] = conn
        self.connections += 1
        self.sink.opened(conn, time)
        return conn

    def _finish(self, s: Stream, time: float) -> None:
        if s.ended:
            return
        s.ended = True
        missing = (s.pos, s.pending[0][0]) if s.pending else None
        s.pending.clear()
        s.pending_bytes = 0
        self.sink.ended(s, time, s.how, missing)

    def _deliver(self, s: Stream, data: bytes, time: float) -> None:
        s.pos += len(data)
        if not s.done:
            self.sink.data(s, data, time)

    def _drain(self, s: Stream) -> None:
        while s.pending and s.pending[0][0] <= s.pos:
            offset, _, data, time = heapq.heappop(s.pending)
            s.pending_bytes -= len(data)
            skip = s.pos - offset
            if skip < len(data):
                self._deliver(s, data[skip:], time)

    def segment(self, seg: Segment) -> None:
        src, dst, flags = seg.src, seg.dst, seg.flags
        if self.ports and src[1] not in self.ports and dst[1] not in self.ports:
            return
        pair = frozenset((src, dst))
        syn = "S" in flags
        conn = self._conns.get(pair)
        if syn and "A" not in flags:
            self._syn_from[pair] = src
            if conn is not None:
                c2s = conn.streams["c2s"] if conn.client == src else None
                if c2s is None or c2s.base is None or seq_diff(seg.seq + 1, c2s.base) != 0:
                    for s in conn.streams.values():     # the addresses are reused
                        s.how = "reused" if not s.ended and s.end is None else s.how
                        self._finish(s, seg.time)
                    conn = None
        if conn is None:
            conn = self._new_connection(pair, src, dst, seg.time, syn)
        s = conn.streams["c2s" if src == conn.client else "s2c"]
        if s.ended:
            return
        seq = seg.seq
        if syn:
            seq = (seq + 1) % _SEQ_MOD    # SYN takes one sequence number; data follows it
            s.base = seq if s.base is None else s.base
        elif s.base is None:
            s.base = seq                  # the capture starts mid-connection
        offset = s.pos + seq_diff(seq, (s.base + s.pos) % _SEQ_MOD)
        data = seg.data
        if data and not s.done:
            if offset <= s.pos:
                if offset + len(data) > s.pos:    # drop what was already delivered
                    self._deliver(s, data[s.pos - offset:], seg.time)
                    self._drain(s)
            else:
                heapq.heappush(s.pending, (offset, next(self._tiebreak), data, seg.time))
                s.pending_bytes += len(data)
                if s.pending_bytes > MAX_PENDING_BYTES:
                    s.how = "end"
                    self._finish(s, seg.time)
                    return
        if "F" in flags or "R" in flags:
            stop = offset + len(data)
            if s.end is None or stop < s.end:
                s.end, s.how = stop, "rst" if "R" in flags else "fin"
        if s.end is not None and s.pos >= s.end:
            self._finish(s, seg.time)

    def close(self, time: float) -> None:
        """End of capture: directions still open end here."""
        for conn in list(self._conns.values()):
            for s in conn.streams.values():
                if not s.ended:
                    s.how = "end" if s.end is None else s.how
                    self._finish(s, time)
