"""The real captures (captures/rabbitmq-stream/real/: rstream 1.1.1 <-> RabbitMQ 3.10.8) decode
frame by frame with no error and no byte left over, per connection and direction exactly as
their manifests count them, the same whole, byte by byte and in random reads; and the codec
re-encodes every real frame to the bytes the real peers sent."""
from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("scapy")

from wirecheck.conformance.captures.decode import decode_pcap  # noqa: E402
from wirecheck.reference_impl.core import registry  # noqa: E402
from wirecheck.reference_impl.rabbitmq_stream import codec  # noqa: E402

from tests.helpers import decode_three_ways  # noqa: E402

REAL = Path(__file__).resolve().parents[3] / "captures" / "rabbitmq-stream" / "real"
CAPTURES = ["rabbitmq-stream-rstream.pcap", "rabbitmq-stream-rstream-probe-unknown-cmds.pcap"]
SPEC = registry.get("rabbitmq-stream")
PORT = SPEC.default_port


def manifest(name: str) -> dict:
    return json.loads((REAL / f"{name}.json").read_text())["frames"]


def connections(items, client_of) -> list[dict]:
    """``items`` (anything with a client endpoint, via ``client_of``) grouped per connection,
    connections in the order they first appear."""
    out: dict = {}
    for item in items:
        out.setdefault(client_of(item), []).append(item)
    return list(out.values())


def tcp_streams(path: Path) -> list[dict[str, bytes]]:
    """Per connection, in order: {"c2s": bytes, "s2c": bytes}, the segments' payloads as
    captured (loopback: in order, no loss)."""
    from scapy.layers.inet import TCP
    from scapy.utils import PcapReader

    flows: dict = {}
    with PcapReader(str(path)) as reader:
        while True:
            try:
                pkt = reader.read_packet(stop_dissection_after=TCP)
            except EOFError:
                break
            if TCP not in pkt:
                continue
            tcp = pkt[TCP]
            client = tcp.sport if tcp.dport == PORT else tcp.dport
            per = flows.setdefault(client, {"c2s": bytearray(), "s2c": bytearray()})
            per["c2s" if tcp.dport == PORT else "s2c"] += bytes(tcp.payload)
    return [{k: bytes(v) for k, v in per.items()} for per in flows.values()]


@pytest.mark.parametrize("name", CAPTURES)
def test_decode_pcap_matches_the_manifest(name):
    out = io.StringIO()
    assert decode_pcap(SPEC, str(REAL / name), out=out) == 0, out.getvalue()[-2000:]
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert not [line for line in lines if "error" in line]
    expected = manifest(name)
    conns = connections(lines, lambda line: line["flow"].split("->")[line["direction"] == "s2c"])
    assert len(conns) == expected["tcp_connections"] == len(expected["connections"])
    for i, conn in enumerate(conns):
        for direction in ("c2s", "s2c"):
            want = expected["connections"][str(i)][direction]
            got = Counter(line["type"] for line in conn if line["direction"] == direction)
            assert got == Counter(want["commands"]), f"connection {i} {direction}"
            assert sum(got.values()) == want["frames"]


@pytest.mark.parametrize("name", CAPTURES)
def test_every_direction_decodes_three_ways_and_re_encodes_byte_for_byte(name):
    expected = manifest(name)["connections"]
    streams = tcp_streams(REAL / name)
    assert len(streams) == len(expected)
    for i, conn in enumerate(streams):
        for direction, data in conn.items():
            want = expected[str(i)][direction]
            assert len(data) == want["bytes"], f"connection {i} {direction}"
            origin = "client" if direction == "c2s" else "server"
            frames, error = decode_three_ways(lambda: SPEC.make_decoder(origin=origin), data, seed=i)
            assert error is None and len(frames) == want["frames"], f"connection {i} {direction}"
            assert codec.encode_many(frames) == data, f"connection {i} {direction}"
            for frame in frames:
                if isinstance(frame, codec.Deliver):
                    assert len(frame.chunk.messages()) == frame.chunk.num_records
