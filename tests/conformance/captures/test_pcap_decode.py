"""``wirecheck decode --protocol blipmq --pcap FILE``: captures written with scapy, decoded by
the command line in a subprocess (and by ``decode_pcap`` in-process for the options the
command line does not expose)."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("scapy")

from scapy.layers.inet import IP, TCP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402
from scapy.utils import wrpcap, wrpcapng  # noqa: E402

from wirecheck.conformance.captures.decode import decode_pcap  # noqa: E402
from wirecheck.reference_impl.blipmq import SPEC, codec  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
CLIENT, SERVER = ("127.0.0.1", 40000), ("127.0.0.1", 5555)
FLOW_C2S = "127.0.0.1:40000->127.0.0.1:5555"
FLOW_S2C = "127.0.0.1:5555->127.0.0.1:40000"
C_ISN, S_ISN = 4_294_967_000, 77_000       # the client's sequence numbers wrap around 2**32


def wirecheck(*args: str) -> subprocess.CompletedProcess:
    exe = ROOT / ".venv" / "bin" / "wirecheck"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "wirecheck"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


class Conversation:
    """Builds the packets of one TCP connection; every packet gets the next timestamp."""

    def __init__(self, client=CLIENT, server=SERVER, c_isn=C_ISN, s_isn=S_ISN, t0=1000.0):
        self.ends = {"c2s": (client, server), "s2c": (server, client)}
        self.next = {"c2s": (c_isn + 1) % 2**32, "s2c": (s_isn + 1) % 2**32}
        self.time = t0
        self.packets = []
        self._add("c2s", c_isn, "S", b"")
        self._add("s2c", s_isn, "SA", b"")
        self._add("c2s", self.next["c2s"], "A", b"")

    def _add(self, direction: str, seq: int, flags: str, data: bytes):
        (src, sport), (dst, dport) = self.ends[direction]
        pkt = Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport, seq=seq % 2**32,
                                                   flags=flags)
        if data:
            pkt = pkt / data
        self.time += 0.25
        pkt.time = self.time
        self.packets.append(pkt)
        return pkt

    def send(self, direction: str, data: bytes, flags: str = "PA") -> float:
        """One segment with the next bytes of ``direction``; returns its timestamp."""
        self._add(direction, self.next[direction], flags, data)
        self.next[direction] = (self.next[direction] + len(data)) % 2**32
        return self.time

    def resend_overlapping(self, direction: str, back: int, data: bytes) -> float:
        """A segment starting ``back`` bytes before the next byte (its first ``back`` bytes
        were already sent), as a retransmission that coalesced old and new data."""
        self._add(direction, self.next[direction] - back, "PA", data)
        self.next[direction] = (self.next[direction] + len(data) - back) % 2**32
        return self.time

    def retransmit(self, index: int) -> None:
        pkt = self.packets[index].copy()
        self.time += 0.25
        pkt.time = self.time
        self.packets.append(pkt)

    def close(self) -> None:
        self.send("c2s", b"", "FA")
        self.send("s2c", b"", "FA")


def enc(*frames) -> bytes:
    return b"".join(codec.encode(f) for f in frames)


def expected(direction: str, flow: str, time: float, *frames) -> list[dict]:
    return [{"flow": flow, "direction": direction, "time": time, **codec.frame_to_dict(f)}
            for f in frames]


def test_handshake_and_traffic_split_across_segments(tmp_path):
    hello, auth, sub = codec.Hello(1), codec.Auth(2, "dev-key"), codec.Subscribe(3, "demo", 1)
    pub, poll, ack = codec.Publish(4, 1, "demo", b"hi\xff"), codec.Poll(5, 42), codec.Ack(90, 42)
    ping = codec.Ping(6)
    delivery = codec.Publish(90, 1, "demo", b"hi\xff")
    c = Conversation()
    want: list[dict] = []

    data = enc(hello)
    c.send("c2s", data[:3])                                     # inside the length prefix
    t = c.send("c2s", data[3:])
    want += expected("c2s", FLOW_C2S, t, hello)
    t = c.send("s2c", enc(codec.Ack(1)))
    want += expected("s2c", FLOW_S2C, t, codec.Ack(1))

    data = enc(auth)
    c.send("c2s", data[:10])                                    # inside the header
    c.retransmit(-1)                                            # the same segment again
    t = c.send("c2s", data[10:])
    want += expected("c2s", FLOW_C2S, t, auth)
    data = enc(codec.Ack(2))
    c.send("s2c", data[:5])
    t = c.send("s2c", data[5:])
    want += expected("s2c", FLOW_S2C, t, codec.Ack(2))

    # SUBSCRIBE and PUBLISH in one segment; POLL split with an overlapping retransmission.
    data = enc(sub, pub, poll)
    first_cut = len(enc(sub, pub)) + 6
    t = c.send("c2s", data[:first_cut])
    want += expected("c2s", FLOW_C2S, t, sub, pub)
    t = c.resend_overlapping("c2s", 4, data[first_cut - 4:])
    want += expected("c2s", FLOW_C2S, t, poll)

    t = c.send("s2c", enc(codec.Ack(3, 42), delivery))
    want += expected("s2c", FLOW_S2C, t, codec.Ack(3, 42), delivery)
    t = c.send("c2s", enc(ack, ping))
    want += expected("c2s", FLOW_C2S, t, ack, ping)
    t = c.send("s2c", enc(codec.Pong(6)))
    want += expected("s2c", FLOW_S2C, t, codec.Pong(6))
    c.close()

    # Unrelated traffic on another port is not decoded.
    other = Conversation(client=("127.0.0.1", 40001), server=("127.0.0.1", 8080), t0=2000.0)
    other.send("c2s", b"GET / HTTP/1.0\r\n\r\n")

    path = tmp_path / "session.pcap"
    wrpcap(str(path), c.packets + other.packets)
    proc = wirecheck("decode", "--protocol", "blipmq", "--pcap", str(path))
    assert proc.returncode == 0, proc.stderr
    got = lines(proc.stdout)
    assert got == want
    # The capture's own story, for the reader: the handshake first, in both directions.
    assert [g["type"] for g in got[:4]] == ["HELLO", "ACK", "AUTH", "ACK"]
    assert got[-1]["type"] == "PONG" and got[-1]["direction"] == "s2c"


def test_bad_length_is_reported_and_other_flows_continue(tmp_path):
    c = Conversation()
    c.send("c2s", enc(codec.Hello(1)))
    t_bad = c.send("c2s", b"\x7f\xff\xff\xff\x03" + bytes(8))   # length > 16 MiB
    c.send("c2s", enc(codec.Ping(2)))                          # not decoded: stream broken
    t_ack = c.send("s2c", enc(codec.Ack(1)))                   # the other direction goes on
    second = Conversation(client=("127.0.0.1", 40002), t0=3000.0)
    t_ping = second.send("c2s", enc(codec.Ping(9)))
    path = tmp_path / "bad.pcap"
    wrpcap(str(path), c.packets + second.packets)

    proc = wirecheck("decode", "--protocol", "blipmq", "--pcap", str(path))
    assert proc.returncode == 1, proc.stderr
    got = lines(proc.stdout)
    errors = [g for g in got if "error" in g]
    assert len(errors) == 1
    err = errors[0]
    assert err["flow"] == FLOW_C2S and err["direction"] == "c2s" and err["time"] == t_bad
    assert err["category"] == "LENGTH_TOO_LARGE" and err["offset"] == len(enc(codec.Hello(1)))
    frames = [(g["flow"], g["type"], g["time"]) for g in got if "error" not in g]
    assert frames == [(FLOW_C2S, "HELLO", pytest.approx(1001.0)), (FLOW_S2C, "ACK", t_ack),
                      ("127.0.0.1:40002->127.0.0.1:5555", "PING", t_ping)]


def test_pcapng_out_of_order_and_truncated_end(tmp_path):
    c = Conversation()
    data = enc(codec.Publish(1, 0, "t", bytes(3000)), codec.Ping(2))
    c.send("c2s", data[:1000])
    c.send("c2s", data[1000:2000])
    c.send("c2s", data[2000:])
    c.packets[-2], c.packets[-1] = c.packets[-1], c.packets[-2]   # later bytes captured first
    c.send("c2s", enc(codec.Ping(3))[:6])                       # the capture ends mid-frame
    path = tmp_path / "session.pcapng"
    wrpcapng(str(path), c.packets)
    proc = wirecheck("decode", "--protocol", "blipmq", "--pcap", str(path))
    assert proc.returncode == 1, proc.stderr
    got = lines(proc.stdout)
    assert [g.get("type") for g in got] == ["PUBLISH", "PING", None]
    assert got[0]["message_hex"] == "00" * 3000
    assert got[2]["category"] == "TRUNCATED" and got[2]["offset"] == len(data)


def test_capture_gap_and_extra_ports_in_process(tmp_path):
    c = Conversation(server=("10.1.1.1", 6000))
    data = enc(codec.Ping(1), codec.Ping(2), codec.Ping(3))
    c.send("c2s", data[:13])
    c.next["c2s"] += 13                                         # segment lost from capture
    c.send("c2s", data[26:])
    path = tmp_path / "gap.pcap"
    wrpcap(str(path), c.packets)

    out = io.StringIO()
    assert decode_pcap(SPEC, str(path), out=out) == 0           # port 6000 is not BlipMQ's
    assert out.getvalue() == ""
    out = io.StringIO()
    assert decode_pcap(SPEC, str(path), ports=[6000], out=out) == 1
    got = lines(out.getvalue())
    assert got[0]["type"] == "PING" and got[0]["direction"] == "c2s"
    assert got[1]["category"] == "CAPTURE_GAP" and got[1]["offset"] == 13


def test_unreadable_capture(tmp_path):
    path = tmp_path / "not.pcap"
    path.write_bytes(b"this is not a capture")
    proc = wirecheck("decode", "--protocol", "blipmq", "--pcap", str(path))
    assert proc.returncode == 2 and "cannot read" in proc.stderr


# --- feed_sized: feed_items frame by frame, with each frame's size ------------------------------

_SIZED = {"blipmq": "blipmq", "rabbitmq-stream": "rabbitmq-stream", "micromessage2": "micromessage2",
          "vibemq": "vibemq"}


@pytest.mark.parametrize("protocol", sorted(_SIZED))
def test_feed_sized_reads_what_feed_items_reads(protocol):
    """On every input of the protocol's fuzz corpus (frames, errors the decoder goes on after,
    broken streams), cut in reads: the same items and ends as feed_items, and sizes that add up
    to what the frames and errors consumed."""
    import random

    from wirecheck.conformance.captures.decode import feed_items, feed_sized
    from wirecheck.reference_impl.core import registry
    spec = registry.get(protocol)
    corpus = Path(__file__).resolve().parents[3] / "wirecheck" / "fuzz" / "corpora" / _SIZED[protocol]
    rng = random.Random(3)
    checked = 0
    for path in sorted(corpus.iterdir()):
        data = path.read_bytes()
        cuts = sorted(rng.sample(range(1, len(data)), min(3, len(data) - 1))) if len(data) > 1 else []
        reads = [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]
        plain, sized = spec.capture_decoder(), spec.capture_decoder()
        fed = total = mark = 0
        for chunk in reads:
            items, ended = feed_items(plain, chunk)
            got, sizes, got_ended, mark = feed_sized(sized, chunk, mark)
            assert [_item(i) for i in got] == [_item(i) for i in items] and got_ended == ended, path.name
            assert len(sizes) == len(got) and all(s >= 0 for s in sizes)
            fed, total = fed + len(chunk), total + sum(sizes)
            if ended:
                break
            # every byte read so far went to an item, or waits for the item it is part of
            assert total == mark <= sized.consumed == fed - sized.buffered, path.name
        checked += 1
    assert checked >= 5


def _item(item):
    if isinstance(item, Exception):
        return ("error", str(item.category), item.offset)
    return ("frame", repr(item))
