"""Capture files, read and written without scapy: the TCP segments of a pcap or pcapng file, one
at a time (never the whole file in memory), and a writer of synthetic TCP conversations.

Reading covers what loopback and LAN captures hold, plain or gzip-compressed: classic pcap (either byte order,
microsecond or nanosecond timestamps) and pcapng (section header, interface description,
enhanced and simple packet blocks; per-interface link type and timestamp resolution); link
types Ethernet (with 802.1Q tags), BSD loopback (NULL and LOOP), raw IP, Linux cooked v1 and
v2; IPv4 and IPv6 (extension headers skipped); TCP. Anything else (ARP, UDP, IP fragments,
truncated records) is skipped, and counted in :attr:`PcapReader.skipped`.

Writing makes what ``wirecheck serve --capture`` and the corpus recorder need: a classic pcap
(Ethernet with zero addresses, as Linux's ``lo``) where each connection gets a SYN, SYN-ACK,
ACK handshake, data segments of at most :data:`MAX_SEGMENT` bytes with the right sequence and
acknowledgement numbers and checksums, and FIN or RST at the end. No root and no interface
are needed: the bytes are the ones the program itself sent and received.

Layouts: the pcap file format and pcapng (IETF draft-ietf-opsawg-pcap, -pcapng), RFC 791
(IPv4), RFC 8200 (IPv6), RFC 9293 (TCP), IEEE 802.1Q, and the tcpdump.org link-type list.
"""
from __future__ import annotations

import gzip
import ipaddress
import struct
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator

__all__ = ["Segment", "PcapReader", "PcapWriter", "TcpConversation", "CaptureFormatError",
           "segments", "tcp_packet", "MAX_SEGMENT"]


class CaptureFormatError(ValueError):
    """The file is not a pcap or pcapng capture, or its structure is broken."""


@dataclass(frozen=True, slots=True)
class Segment:
    """One TCP segment. ``flags`` as letters (``"S"``, ``"SA"``, ``"PA"``, ``"FA"``, ``"R"``...)."""
    time: float
    src: tuple[str, int]
    dst: tuple[str, int]
    seq: int
    ack: int
    flags: str
    data: bytes


# -- reading -----------------------------------------------------------------------------------

_PCAP_MAGIC = {b"\xd4\xc3\xb2\xa1": ("<", 1e-6), b"\xa1\xb2\xc3\xd4": (">", 1e-6),
               b"\x4d\x3c\xb2\xa1": ("<", 1e-9), b"\xa1\xb2\x3c\x4d": (">", 1e-9)}
_PCAPNG_SHB = 0x0A0D0D0A
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
#: Largest record accepted (loopback segments with offloads can exceed 64 KiB).
MAX_RECORD = 16 * 1024 * 1024
#: Largest pcapng block accepted.
MAX_BLOCK = MAX_RECORD + 4096

LINK_NULL, LINK_ETHERNET, LINK_RAW, LINK_RAW_ALT, LINK_LOOP = 0, 1, 101, 12, 108
LINK_SLL, LINK_IPV4, LINK_IPV6, LINK_SLL2 = 113, 228, 229, 276
_TCP_FLAGS = "FSRPAUECN"
#: The flag letters of each (flags byte, NS bit): built once, not per segment.
_FLAG_LETTERS = {(flags, ns): "".join(c for i, c in enumerate(_TCP_FLAGS) if flags >> i & 1 or (i == 8 and ns))
                 for flags in range(256) for ns in (0, 1)}
#: Addresses as text, remembered (a capture has few hosts and millions of segments); bounded.
_ADDRESSES: dict[bytes, str] = {}
_ADDRESSES_MAX = 1 << 16


def _address(raw: bytes) -> str:
    text = _ADDRESSES.get(raw)
    if text is None:
        text = str(ipaddress.IPv4Address(raw) if len(raw) == 4 else ipaddress.IPv6Address(raw))
        if len(_ADDRESSES) >= _ADDRESSES_MAX:
            _ADDRESSES.clear()
        _ADDRESSES[raw] = text
    return text


def _ip_payload(link: int, pkt: bytes) -> tuple[int, int] | None:
    """(IP version, offset of the IP header) in a link-layer frame, or None."""
    if link == LINK_ETHERNET:
        off, etype = 14, pkt[12:14]
        while etype in (b"\x81\x00", b"\x88\xa8") and len(pkt) >= off + 4:   # 802.1Q / QinQ
            etype, off = pkt[off + 2:off + 4], off + 4
        return {b"\x08\x00": (4, off), b"\x86\xdd": (6, off)}.get(etype)
    if link in (LINK_NULL, LINK_LOOP):
        if len(pkt) < 4:
            return None
        family = struct.unpack("<I" if link == LINK_NULL and pkt[0] else ">I", pkt[:4])[0]
        if family == 2:
            return 4, 4
        return (6, 4) if family in (10, 24, 28, 30) else None
    if link in (LINK_RAW, LINK_RAW_ALT, LINK_IPV4, LINK_IPV6):
        return (pkt[0] >> 4, 0) if pkt else None
    if link in (LINK_SLL, LINK_SLL2):
        at, off = (14, 16) if link == LINK_SLL else (0, 20)
        return {b"\x08\x00": (4, off), b"\x86\xdd": (6, off)}.get(pkt[at:at + 2])
    return None


def _tcp_segment(link: int, pkt: bytes, time: float) -> Segment | None:
    where = _ip_payload(link, pkt)
    if where is None:
        return None
    version, off = where
    if version == 4:
        if len(pkt) < off + 20 or pkt[off] >> 4 != 4:
            return None
        ihl = (pkt[off] & 0x0F) * 4
        total, frag, proto = struct.unpack_from(">H2xH1xB", pkt, off + 2)
        if proto != 6 or frag & 0x3FFF or ihl < 20:          # not TCP, or a fragment
            return None
        src = _address(pkt[off + 12:off + 16])
        dst = _address(pkt[off + 16:off + 20])
        end = off + total if total else len(pkt)      # total 0: segmentation offload
        off += ihl
    elif version == 6:
        if len(pkt) < off + 40:
            return None
        plen, nxt = struct.unpack_from(">HB", pkt, off + 4)
        src = _address(pkt[off + 8:off + 24])
        dst = _address(pkt[off + 24:off + 40])
        end = off + 40 + plen if plen else len(pkt)
        off += 40
        while nxt in (0, 43, 60):                      # hop-by-hop, routing, destination options
            if len(pkt) < off + 2:
                return None
            nxt, off = pkt[off], off + 8 + pkt[off + 1] * 8
        if nxt != 6:                                   # not TCP (or a fragment: 44)
            return None
    else:
        return None
    if end > len(pkt) or len(pkt) < off + 20 or end < off + 20:
        return None                                    # truncated by the snap length
    sport, dport, seq, ack, doff, flags = struct.unpack_from(">HHIIBB", pkt, off)
    hdr = (doff >> 4) * 4
    if hdr < 20 or off + hdr > end:
        return None
    return Segment(time, (src, sport), (dst, dport), seq, ack, _FLAG_LETTERS[flags, doff & 1], pkt[off + hdr:end])


class PcapReader:
    """Iterates the TCP segments of a capture file (path or binary file object). ``position``
    is the byte offset read so far (for progress); ``skipped`` counts records that are not TCP.

    ``tolerant``: a file broken past its header (cut inside a record, as a killed tcpdump leaves
    it; a corrupt block) ends the iteration instead of raising, after every segment before the
    break, and :attr:`damage` says where and what ("file ends inside a record at byte N"). A
    file that is not a capture at all still raises :class:`CaptureFormatError` at once."""

    def __init__(self, source: str | BinaryIO, tolerant: bool = False) -> None:
        self.tolerant = tolerant
        #: Why a tolerant iteration ended before the file's end (None: it read all of it).
        self.damage: str | None = None
        self._own = isinstance(source, str)
        self._fh: BinaryIO = open(source, "rb") if self._own else source
        self._raw = self._fh
        if self._own and self._fh.read(2) == b"\x1f\x8b":     # a gzip-compressed capture
            self._fh.seek(0)
            self._fh = gzip.GzipFile(fileobj=self._raw, mode="rb")
        elif self._own:
            self._fh.seek(0)
        self.position = 0
        self.skipped = 0
        self.records = 0
        try:
            self._read_header()
        except CaptureFormatError:
            self.close()            # a file opened here is not left open
            raise

    def _read_header(self) -> None:
        head = self._read(4, eof_ok=True)
        if len(head) < 4:
            raise CaptureFormatError("empty file: not a pcap or pcapng capture")
        if head in _PCAP_MAGIC:
            self._kind = "pcap"
            self._order, self._unit = _PCAP_MAGIC[head]
            rest = self._read(20)
            self._link = struct.unpack(self._order + "HHiIII", rest)[5] & 0xFFFF
        elif struct.unpack("<I", head)[0] == _PCAPNG_SHB:
            self._kind = "pcapng"
            self._order = "<"
            self._interfaces: list[tuple[int, float]] = []
            self._pending_head = head
        else:
            raise CaptureFormatError(f"not a pcap or pcapng capture (magic {head.hex()})")

    def _read(self, n: int, eof_ok: bool = False) -> bytes:
        try:
            data = self._fh.read(n)
        except (OSError, EOFError, zlib.error) as exc:      # a broken .gz
            raise CaptureFormatError(f"cannot read the capture at byte {self.position}: {exc}") from None
        self.position += len(data)
        if len(data) < n and not eof_ok:
            raise CaptureFormatError(f"file ends inside a record at byte {self.position}")
        return data

    @property
    def file_position(self) -> int:
        """Bytes of the file read so far (compressed bytes for a .gz capture): for progress."""
        try:
            return self._raw.tell()
        except (OSError, ValueError):
            return self.position

    def close(self) -> None:
        if self._own:
            self._fh.close()
            self._raw.close()

    def __enter__(self) -> "PcapReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self) -> Iterator[Segment]:
        packets = self._pcap_packets() if self._kind == "pcap" else self._pcapng_packets()
        while True:
            try:
                link, time, pkt = next(packets)
            except StopIteration:
                return
            except CaptureFormatError as exc:
                if not self.tolerant:
                    raise
                self.damage = str(exc)
                return
            self.records += 1
            seg = _tcp_segment(link, pkt, time)
            if seg is None:
                self.skipped += 1
            else:
                yield seg

    def _pcap_packets(self):
        fmt = self._order + "IIII"
        while True:
            hdr = self._read(16, eof_ok=True)
            if not hdr:
                return
            if len(hdr) < 16:
                raise CaptureFormatError(f"file ends inside a record header at byte {self.position}")
            sec, frac, incl, _orig = struct.unpack(fmt, hdr)
            if incl > MAX_RECORD:
                raise CaptureFormatError(f"record of {incl} bytes at byte {self.position} (limit {MAX_RECORD})")
            yield self._link, sec + frac * self._unit, self._read(incl)

    def _pcapng_packets(self):
        head = self._pending_head
        while True:
            if head is None:
                head = self._read(4, eof_ok=True)
                if not head:
                    return
                if len(head) < 4:
                    raise CaptureFormatError(f"file ends inside a block at byte {self.position}")
            btype = struct.unpack(self._order + "I", head)[0]
            if btype == _PCAPNG_SHB:
                length_raw = self._read(4)
                magic = self._read(4)
                self._order = "<" if struct.unpack("<I", magic)[0] == _BYTE_ORDER_MAGIC else ">"
                if struct.unpack(self._order + "I", magic)[0] != _BYTE_ORDER_MAGIC:
                    raise CaptureFormatError("pcapng section header with a bad byte-order magic")
                length = struct.unpack(self._order + "I", length_raw)[0]
                self._check_block(length, 12)
                self._read(length - 12)
                self._interfaces = []       # interface ids are per section
                head = None
                continue
            length = struct.unpack(self._order + "I", self._read(4))[0]
            self._check_block(length, 12)
            body = self._read(length - 12)
            self._read(4)                   # trailing length
            head = None
            if btype == 1:                  # interface description
                if len(body) < 8:           # link type, reserved, snap length
                    raise CaptureFormatError(f"interface description block of {len(body)} bytes "
                                             f"at byte {self.position}")
                link = struct.unpack_from(self._order + "H", body, 0)[0]
                self._interfaces.append((link, self._tsresol(body[8:])))
            elif btype == 6 and len(body) >= 20:     # enhanced packet
                iface, hi, lo, caplen = struct.unpack_from(self._order + "IIII", body, 0)
                if iface >= len(self._interfaces) or caplen > len(body) - 20:
                    raise CaptureFormatError(f"bad enhanced packet block at byte {self.position}")
                link, unit = self._interfaces[iface]
                yield link, ((hi << 32) | lo) * unit, body[20:20 + caplen]
            elif btype == 3 and len(body) >= 4 and self._interfaces:   # simple packet
                link, _ = self._interfaces[0]
                yield link, 0.0, body[4:]
            # other blocks (name resolution, statistics, custom...) carry no packets

    def _check_block(self, length: int, minimum: int) -> None:
        if length < minimum or length % 4 or length > MAX_BLOCK:
            raise CaptureFormatError(f"pcapng block of length {length} at byte {self.position}")

    def _tsresol(self, options: bytes) -> float:
        """The if_tsresol option (code 9): 10^-n, or 2^-n when the top bit is set."""
        pos = 0
        while pos + 4 <= len(options):
            code, olen = struct.unpack_from(self._order + "HH", options, pos)
            if code == 0:
                break
            if pos + 4 + olen > len(options):
                raise CaptureFormatError(f"interface description option {code} of {olen} bytes "
                                         f"runs past its block at byte {self.position}")
            if code == 9 and olen >= 1:
                v = options[pos + 4]
                return 2.0 ** -(v & 0x7F) if v & 0x80 else 10.0 ** -v
            pos += 4 + (olen + 3) // 4 * 4
        return 1e-6


def segments(path: str) -> Iterator[Segment]:
    """The TCP segments of the capture at ``path``, in file order."""
    with PcapReader(path) as reader:
        yield from reader


# -- writing -----------------------------------------------------------------------------------

#: Payload bytes per written segment: an IPv4 packet's total length is 16 bits.
MAX_SEGMENT = 65535 - 20 - 20 - 8
_ETH_ZERO = b"\x00" * 12


def _checksum(data: bytes) -> int:
    """RFC 1071 one's-complement sum, as the 16-bit checksum field."""
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


class PcapWriter:
    """A classic pcap (microsecond timestamps, Ethernet link type) written record by record;
    each record is flushed so that a capture killed mid-run keeps every whole record."""

    def __init__(self, target: str | BinaryIO) -> None:
        self._own = isinstance(target, str)
        self._fh: BinaryIO = open(target, "wb") if self._own else target
        self._fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, LINK_ETHERNET))
        self._fh.flush()
        self.packets = 0

    def write(self, time: float, frame: bytes) -> None:
        sec = int(time)
        usec = min(999_999, int(round((time - sec) * 1e6)))
        self._fh.write(struct.pack("<IIII", sec, usec, len(frame), len(frame)) + frame)
        self._fh.flush()
        self.packets += 1

    def close(self) -> None:
        if self._own and not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> "PcapWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def tcp_packet(src: tuple[str, int], dst: tuple[str, int], seq: int, ack: int, flags: str,
               payload: bytes) -> bytes:
    """One TCP segment as an Ethernet frame (zero addresses, as Linux's ``lo``) over IPv4 or
    IPv6, with its checksums; ``flags`` as letters (``"PA"``)."""
    (vs, s), (vd, d) = _ip_bytes(src[0]), _ip_bytes(dst[0])
    if vs != vd:
        raise ValueError("source and destination addresses of different IP versions")
    bits = sum(1 << _TCP_FLAGS.index(c) for c in flags)
    tcp = struct.pack(">HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4,
                      bits, 65535, 0, 0)
    length = len(tcp) + len(payload)
    if vs == 4:
        pseudo = s + d + struct.pack(">BBH", 0, 6, length)
    else:
        pseudo = s + d + struct.pack(">IxxxB", length, 6)
    csum = _checksum(pseudo + tcp + payload)
    tcp = tcp[:16] + struct.pack(">H", csum) + tcp[18:]
    if vs == 4:
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + length, 0, 0x4000, 64, 6, 0, s, d)
        ip = ip[:10] + struct.pack(">H", _checksum(ip)) + ip[12:]
        eth = _ETH_ZERO + b"\x08\x00"
    else:
        ip = struct.pack(">IHBB16s16s", 6 << 28, length, 6, 64, s, d)
        eth = _ETH_ZERO + b"\x86\xdd"
    return eth + ip + tcp + payload


def _ip_bytes(host: str) -> tuple[int, bytes]:
    addr = ipaddress.ip_address(host)
    return addr.version, addr.packed


class TcpConversation:
    """One TCP connection written into a :class:`PcapWriter`: ``client`` and ``server`` are
    (host, port); ``data``/``close``/``reset`` take the sender, "c2s" or "s2c"."""

    def __init__(self, writer: PcapWriter, client: tuple[str, int], server: tuple[str, int],
                 time: float, isn: tuple[int, int] = (0x1000_0000, 0x2000_0000)) -> None:
        self.writer = writer
        self.ends = {"c2s": (client, server), "s2c": (server, client)}
        if _ip_bytes(client[0])[0] != _ip_bytes(server[0])[0]:
            raise ValueError("client and server addresses of different IP versions")
        self.next_seq = {"c2s": isn[0], "s2c": isn[1]}
        self.finished = {"c2s": False, "s2c": False}
        self._packet("c2s", time, "S", b"", ack=False)
        self.next_seq["c2s"] += 1
        self._packet("s2c", time, "SA", b"")
        self.next_seq["s2c"] += 1
        self._packet("c2s", time, "A", b"")

    def _packet(self, direction: str, time: float, flags: str, payload: bytes, ack: bool = True) -> None:
        src, dst = self.ends[direction]
        other = "s2c" if direction == "c2s" else "c2s"
        acknum = self.next_seq[other] if ack else 0
        self.writer.write(time, tcp_packet(src, dst, self.next_seq[direction], acknum, flags, payload))

    def data(self, direction: str, payload: bytes, time: float) -> None:
        view = memoryview(payload)
        for start in range(0, len(payload), MAX_SEGMENT):
            piece = bytes(view[start:start + MAX_SEGMENT])
            self._packet(direction, time, "PA", piece)
            self.next_seq[direction] += len(piece)

    def close(self, direction: str, time: float) -> None:
        """``direction``'s sender closes its side (FIN)."""
        if not self.finished[direction]:
            self.finished[direction] = True
            self._packet(direction, time, "FA", b"")
            self.next_seq[direction] += 1

    def reset(self, direction: str, time: float) -> None:
        self._packet(direction, time, "RA", b"")
        self.finished = {"c2s": True, "s2c": True}


def is_capture(path: str) -> bool:
    """True when the file (gzip-compressed or not) starts as a pcap or pcapng capture does."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as fh:
                head = fh.read(4)
        except (OSError, EOFError):
            return False
    return head in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d",
                    b"\x0a\x0d\x0d\x0a")
