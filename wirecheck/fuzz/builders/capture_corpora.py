"""Write the seed corpus of the capture reader and TCP reassembly: ``python -m wirecheck.fuzz.builders.capture_corpora``
(deterministic).

Each seed is a small capture file. The first ones are the start of every capture of the
corpus (captures/*/*.pcap.gz and the real RabbitMQ ones: the records that fit in
:data:`MAX_SEED` bytes, as recorded). The others are one short conversation written by
conformance/captures/pcapfile.py's writer, then re-spelt in every layout the reader documents: pcap in
either byte order with micro- or nanosecond stamps, gzip, pcapng (either byte order, ``if_tsresol``,
simple packet blocks, two sections, blocks it skips), and each link type (raw IP, BSD loopback
NULL and LOOP, Linux cooked v1 and v2, 802.1Q), IPv6 with an extension header, and the TCP
cases reassembly handles (out of order, retransmitted, reset, no SYN, skipped records).
"""
from __future__ import annotations

import gzip
import io
import struct
from pathlib import Path

from wirecheck.conformance.captures.pcapfile import PcapWriter, TcpConversation, tcp_packet
from wirecheck.fuzz.builders.corpus_files import CORPORA, write_corpus
from wirecheck.fuzz.harnesses.capture import read_capture

#: The checkout: these tools read its captures/ and write the corpora beside this file.
ROOT = Path(__file__).resolve().parents[3]
MAX_SEED = 4096
CLIENT, SERVER = ("10.0.0.1", 40000), ("10.0.0.2", 5555)
CLIENT6, SERVER6 = ("fd00::1", 40001), ("fd00::2", 5555)


def _records(raw: bytes) -> tuple[bytes, list[bytes]]:
    """A classic little-endian pcap's file header and its records (header + bytes each)."""
    head, pos, out = raw[:24], 24, []
    while pos + 16 <= len(raw):
        incl = struct.unpack_from("<I", raw, pos + 8)[0]
        out.append(raw[pos:pos + 16 + incl])
        pos += 16 + incl
    return head, out


def corpus_seeds() -> dict[str, bytes]:
    """The first records of each capture in captures/, as many as fit in MAX_SEED bytes."""
    seeds = {}
    paths = sorted((ROOT / "captures").glob("*/*.pcap.gz")) + sorted((ROOT / "captures").glob("*/real/*.pcap"))
    for path in paths:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as fh:
            raw = fh.read(1 << 20)
        if raw[:4] != b"\xd4\xc3\xb2\xa1":
            continue
        head, records = _records(raw)
        out = bytearray(head)
        for record in records:
            if len(out) + len(record) > MAX_SEED:
                break
            out += record
        name = f"{path.parent.name if path.parent.name != 'real' else 'rabbitmq-real'}-{path.name.split('.')[0]}"
        seeds[name] = bytes(out)
    return seeds


def conversation(client=CLIENT, server=SERVER) -> list[tuple[float, bytes]]:
    """(time, Ethernet frame) of a short conversation: handshake, data both ways, FIN, FIN."""
    buf = io.BytesIO()
    writer = PcapWriter(buf)
    conv = TcpConversation(writer, client, server, 1.25)
    conv.data("c2s", b"\x00\x00\x00\x09\x05\x00\x00\x00\x00\x00\x00\x00\x01", 1.5)
    conv.data("s2c", b"\x00\x00\x00\x09\x06\x00\x00\x00\x00\x00\x00\x00\x01", 1.75)
    conv.data("c2s", b"hello", 2.0)
    conv.close("c2s", 2.5)
    conv.close("s2c", 2.5)
    _, records = _records(buf.getvalue())
    out = []
    for record in records:
        sec, usec = struct.unpack_from("<II", record)
        out.append((sec + usec / 1e6, record[16:]))
    return out


def pcap(packets, *, order: str = "<", nano: bool = False, link: int = 1) -> bytes:
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = bytearray(struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 262144, link))
    for time, frame in packets:
        sec = int(time)
        frac = round((time - sec) * (1e9 if nano else 1e6))
        out += struct.pack(order + "IIII", sec, frac, len(frame), len(frame)) + frame
    return bytes(out)


def _block(order: str, btype: int, body: bytes) -> bytes:
    body += b"\x00" * (-len(body) % 4)
    length = 12 + len(body)
    return struct.pack(order + "II", btype, length) + body + struct.pack(order + "I", length)


def _shb(order: str) -> bytes:
    return _block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))


def _idb(order: str, link: int = 1, tsresol: int | None = None) -> bytes:
    options = b""
    if tsresol is not None:
        options = struct.pack(order + "HHB3x", 9, 1, tsresol) + struct.pack(order + "HH", 0, 0)
    return _block(order, 1, struct.pack(order + "HHI", link, 0, 262144) + options)


def _epb(order: str, time: float, frame: bytes, units: float = 1e6, iface: int = 0) -> bytes:
    stamp = round(time * units)
    return _block(order, 6, struct.pack(order + "IIIII", iface, stamp >> 32, stamp & 0xFFFFFFFF,
                                        len(frame), len(frame)) + frame)


def pcapng(packets, *, order: str = "<", tsresol: int | None = None, simple: bool = False) -> bytes:
    units = 1e6 if tsresol is None else (2.0 ** (tsresol & 0x7F) if tsresol & 0x80 else 10.0 ** tsresol)
    out = _shb(order) + _idb(order, tsresol=tsresol)
    for time, frame in packets:
        if simple:
            out += _block(order, 3, struct.pack(order + "I", len(frame)) + frame)
        else:
            out += _epb(order, time, frame, units)
    return out


def _relink(packets, prefix: bytes, strip: int = 14) -> list[tuple[float, bytes]]:
    return [(t, prefix + f[strip:]) for t, f in packets]


def _sll(frame: bytes, version: int) -> bytes:
    proto = frame[12:14]
    if version == 1:
        return struct.pack(">HHH8s", 0, 772, 0, b"") + proto + frame[14:]
    return proto + b"\x00\x00" + struct.pack(">IHBB8s", 1, 772, 0, 0, b"") + frame[14:]


def _vlan(frame: bytes) -> bytes:
    return frame[:12] + b"\x81\x00\x00\x64" + frame[12:]


def _hop_by_hop(frame: bytes) -> bytes:
    """The IPv6 packet with a hop-by-hop options header (8 bytes, PadN) before TCP."""
    ip = bytearray(frame[14:])
    plen = struct.unpack_from(">H", ip, 4)[0]
    struct.pack_into(">HB", ip, 4, plen + 8, 0)
    return frame[:14] + bytes(ip[:40]) + bytes([6, 0, 1, 4, 0, 0, 0, 0]) + bytes(ip[40:])


def layout_seeds() -> dict[str, bytes]:
    conv = conversation()
    conv6 = conversation(CLIENT6, SERVER6)
    data = [p for p in conv if len(p[1]) > 54]
    syn = conv[:3]
    udp = (3.0, b"\x00" * 12 + b"\x08\x00" + bytes.fromhex("4500001c000040004011000a0000010a000002") + b"\x00" * 9)
    frag = (3.0, conv[3][1][:20] + b"\x20" + conv[3][1][21:])     # IPv4 "more fragments"
    two_sections = pcapng(conv[:4]) + pcapng(conv[4:], order=">")
    skipped_blocks = (_shb("<") + _block("<", 4, b"\x00\x00\x00\x00") + _idb("<")
                      + _block("<", 5, b"\x00" * 8) + _epb("<", 1.0, conv[3][1])
                      + _block("<", 0xBAD, b"custom"))
    rst = tcp_packet(SERVER, CLIENT, 0x2000_0001, 0x1000_0001, "RA", b"")
    return {
        "pcap-le-usec": pcap(conv),
        "pcap-be-usec": pcap(conv, order=">"),
        "pcap-le-nsec": pcap(conv, nano=True),
        "pcap-be-nsec": pcap(conv, order=">", nano=True),
        "pcap-gzip": gzip.compress(pcap(conv), mtime=0),
        "pcapng-le": pcapng(conv),
        "pcapng-be": pcapng(conv, order=">"),
        "pcapng-tsresol-nsec": pcapng(conv, tsresol=9),
        "pcapng-tsresol-pow2": pcapng(conv, tsresol=0x94),
        "pcapng-simple": pcapng(conv, simple=True),
        "pcapng-two-sections": two_sections,
        "pcapng-skipped-blocks": skipped_blocks,
        "pcapng-gzip": gzip.compress(pcapng(conv), mtime=0),
        "link-raw": pcap(_relink(conv, b""), link=101),
        "link-raw-alt": pcap(_relink(conv, b""), link=12),
        "link-ipv4": pcap(_relink(conv, b""), link=228),
        "link-null": pcap(_relink(conv, struct.pack("<I", 2)), link=0),
        "link-loop": pcap(_relink(conv, struct.pack(">I", 2)), link=108),
        "link-loop-ipv6": pcap(_relink(conv6, struct.pack(">I", 30)), link=108),
        "link-sll": pcap([(t, _sll(f, 1)) for t, f in conv], link=113),
        "link-sll2": pcap([(t, _sll(f, 2)) for t, f in conv], link=276),
        "link-vlan": pcap([(t, _vlan(f)) for t, f in conv]),
        "ipv6": pcap(conv6),
        "ipv6-hop-by-hop": pcap([(t, _hop_by_hop(f)) for t, f in conv6]),
        "link-ipv6-raw": pcap(_relink(conv6, b""), link=229),
        "tcp-out-of-order": pcap(syn + data[::-1]),
        "tcp-retransmitted": pcap(syn + data[:1] + data[:2] + data),
        "tcp-no-syn": pcap(data),
        "tcp-reset": pcap(conv[:5] + [(3.0, rst)]),
        "tcp-reused-addresses": pcap(conv + conv),
        "skipped-udp-fragment": pcap(conv[:4] + [udp, frag] + conv[4:]),
        "skipped-unknown-link": pcap(conv[:2], link=147),
    }


def seeds() -> dict[str, bytes]:
    return {**corpus_seeds(), **layout_seeds()}


def main() -> None:
    out = seeds()
    for name, data in out.items():
        segments, error, _ = read_capture(io.BytesIO(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data))
        if error is not None or (not segments and name != "skipped-unknown-link"):
            raise SystemExit(f"seed {name} does not read: {error or 'no segments'}")
    write_corpus(CORPORA / "pcap", out)
    print(f"{len(out)} seeds in fuzz/corpora/pcap")


if __name__ == "__main__":
    main()
