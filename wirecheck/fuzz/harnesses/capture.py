"""Shared body of the atheris target over the kit's capture reading: the pcap/pcapng reader
(conformance/captures/pcapfile.py, plain and gzip-compressed) and TCP reassembly (conformance/captures/tcpflows.py),
which ``wirecheck decode --pcap``, replay, the Spark job and the network fuzzer's seeds run on
capture files from anywhere.

A seed is a whole small capture file (fuzz/corpora/pcap/). The input is read three ways: from a
file object, from a file by path, and gzip-compressed from a file by path; the three must give
the same segments and the same error. :class:`CaptureFormatError` is the only exception the
reader documents; anything else propagates, and the fuzzer reports it as a crash. The segments
then go through a reassembler whose sink checks what it is told (each direction opened once,
in-order bytes that add up to its position, ended exactly once, nothing after that).
"""
from __future__ import annotations

import atexit
import gzip
import io
import os
import shutil
import tempfile

from wirecheck.conformance.captures.pcapfile import CaptureFormatError, PcapReader, Segment
from wirecheck.conformance.captures.tcpflows import MAX_PENDING_BYTES, TcpReassembler

_FLAGS = set("FSRPAUECN")
_ENDINGS = {"fin", "rst", "reused", "end"}
_DIR: list[str] = []


def scratch_path(name: str) -> str:
    """A file in this process's own temporary directory (removed at exit): the targets that
    read a file by its path (this one, fuzz/harnesses/inputs.py) write their input there."""
    if not _DIR:
        _DIR.append(tempfile.mkdtemp(prefix="wirecheck-fuzz-pcap-"))
        atexit.register(shutil.rmtree, _DIR[0], True)
    return os.path.join(_DIR[0], name)


def read_capture(source) -> tuple[list[Segment], str | None, tuple[int, int]]:
    """The segments of a capture, the CaptureFormatError that stopped it (message) or None,
    and (records, skipped)."""
    segments: list[Segment] = []
    try:
        with PcapReader(source) as reader:
            for seg in reader:
                segments.append(seg)
            assert reader.records - reader.skipped == len(segments), "records do not add up"
            return segments, None, (reader.records, reader.skipped)
    except CaptureFormatError as exc:
        return segments, str(exc), (-1, -1)


def _check_segment(seg: Segment) -> None:
    assert isinstance(seg.data, bytes) and set(seg.flags) <= _FLAGS, seg
    for host, port in (seg.src, seg.dst):
        assert isinstance(host, str) and 0 <= port <= 0xFFFF, seg
    assert 0 <= seg.seq < 1 << 32 and 0 <= seg.ack < 1 << 32, seg


class CheckingSink:
    """A reassembly sink asserting the contract of conformance/captures/tcpflows.py's docstring."""

    def __init__(self) -> None:
        self.opened_conns: set[int] = set()
        self.delivered: dict[tuple, int] = {}    # (connection, direction) -> bytes delivered
        self.ended_streams: set[tuple] = set()

    def opened(self, conn, time) -> None:
        assert conn.index not in self.opened_conns, f"connection {conn.index} opened twice"
        assert conn.index == len(self.opened_conns), "connections not numbered in order"
        self.opened_conns.add(conn.index)

    def data(self, stream, data, time) -> None:
        key = (stream.conn.index, stream.direction)
        assert data, "empty data delivered"
        assert key not in self.ended_streams, f"data after {stream.name} ended"
        assert not stream.done, "data delivered to a stream the sink closed"
        assert stream.conn.index in self.opened_conns, "data before the connection opened"
        self.delivered[key] = self.delivered.get(key, 0) + len(data)
        assert self.delivered[key] == stream.pos, f"{stream.name}: delivered bytes do not add up"
        if len(data) % 7 == 3:                   # a sink may stop a direction (decode error)
            stream.done = True

    def ended(self, stream, time, how, missing) -> None:
        key = (stream.conn.index, stream.direction)
        assert key not in self.ended_streams, f"{stream.name} ended twice"
        assert how in _ENDINGS, how
        assert stream.pending_bytes == 0 and not stream.pending, "early bytes kept after the end"
        if missing is not None:
            assert missing[0] == stream.pos < missing[1], f"missing {missing} at {stream.pos}"
        self.ended_streams.add(key)


def reassemble(segments: list[Segment], ports=()) -> None:
    sink = CheckingSink()
    reassembler = TcpReassembler(sink, ports)
    last = 0.0
    for seg in segments:
        _check_segment(seg)
        reassembler.segment(seg)
        last = seg.time
        for conn in reassembler._conns.values():
            for s in conn.streams.values():
                assert s.pending_bytes <= MAX_PENDING_BYTES and s.pending_bytes >= 0, s.name
    reassembler.close(last)
    for conn in reassembler._conns.values():
        for s in conn.streams.values():
            assert (conn.index, s.direction) in sink.ended_streams, f"{s.name} never ended"


def pcap_one_input(data: bytes) -> None:
    """``data`` as a capture file: read from a file object, by path, and gzip-compressed by
    path, all alike (a gzip input is also read decompressed in memory, when it inflates within
    a bound); its segments reassembled, with and without a port filter."""
    whole = read_capture(io.BytesIO(data))
    path = scratch_path("input")
    with open(path, "wb") as fh:
        fh.write(data)
    by_path = read_capture(path)
    if data[:2] != b"\x1f\x8b":
        assert by_path == whole, f"by path: {by_path[1]!r}, from a file object: {whole[1]!r}"
        with open(path, "wb") as fh:
            fh.write(gzip.compress(data, compresslevel=1, mtime=0))
        assert read_capture(path) == whole, "the gzip-compressed capture reads differently"
    else:
        inflated = _inflate(data)
        if inflated is not None:
            plain = read_capture(io.BytesIO(inflated))
            assert plain[0] == by_path[0], "a gzip capture's segments differ from its inflated bytes'"
            if plain[1] is None:
                assert by_path[1] is None, f"reading the gzip capture: {by_path[1]}"
    segments = whole[0] if data[:2] != b"\x1f\x8b" else by_path[0]
    reassemble(segments)
    reassemble(segments, ports=(5555, 80))


#: Largest inflated size compared (a gzip bomb is read by the reader, bounded per record).
_INFLATE_LIMIT = 1 << 22


def _inflate(data: bytes) -> bytes | None:
    """The bytes of every gzip member of ``data``, or None if it is broken or inflates past
    the limit."""
    import zlib
    out, rest = bytearray(), data
    try:
        while rest:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out += d.decompress(rest, _INFLATE_LIMIT - len(out))
            if d.unconsumed_tail or not d.eof or len(out) >= _INFLATE_LIMIT:
                return None
            rest = d.unused_data
            if rest and rest[:2] != b"\x1f\x8b":
                return None                # trailing garbage: the reader refuses it
    except zlib.error:
        return None
    return bytes(out)
