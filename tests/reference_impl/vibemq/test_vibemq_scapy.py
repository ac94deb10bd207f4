"""The VibeMQ scapy layer against the codec (STYLE.md 12): generated frames (plain, GZip,
Brotli; the document's and the real codec's body forms) are dissected by scapy and decoded by
the codec, and must agree field by field; scapy's builds must be the codec's bytes; pipelined
frames are consecutive layers; ``tcp_reassemble`` (the shared mixin's, with VibeMQ's 5-byte
header whose length leaves the flags byte out) and scapy's ``TCPSession`` put frames split
across segments back together."""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("scapy")

from scapy.layers.inet import TCP  # noqa: E402
from scapy.packet import NoPayload, Padding, Raw  # noqa: E402
from scapy.sendrecv import sniff  # noqa: E402
from scapy.sessions import TCPSession  # noqa: E402
from scapy.utils import wrpcap  # noqa: E402
from tests.helpers import tcp_conversation  # noqa: E402

from wirecheck.conformance.strategies import vibemq as vs  # noqa: E402
from wirecheck.reference_impl.core.errors import FrameError  # noqa: E402
from wirecheck.reference_impl.vibemq import codec  # noqa: E402
from wirecheck.reference_impl.vibemq.codec import Message  # noqa: E402
from wirecheck.reference_impl.vibemq.constants import CommandType, Compression  # noqa: E402
from wirecheck.reference_impl.vibemq.scapy_layer import (HEADER_SIZE, VibeMQ, VibeMQHeader,  # noqa: E402
                                               VibeMQMessage, bind_vibemq, frames, message)

SETTINGS = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
PING_VECTOR = bytes.fromhex("00 00 00 0E 00 01 0A 00 02 70 31 00 00 00 00 00 00 00 00")


def _text(value):
    return None if not value else value.decode("utf-8")


def to_message(layer: VibeMQ) -> Message:
    """The codec message a dissected plain frame stands for, from scapy's fields alone."""
    body = layer.payload
    assert type(body) is VibeMQMessage, type(body).__name__
    assert not isinstance(body.payload, Raw), "body left bytes undissected"
    assert body.id_len == len(body.message_id) and body.queue_len == len(body.queue)
    assert body.payload_len == len(body.json_payload) and body.header_count == len(body.headers)
    payload = json.loads(body.json_payload) if body.json_payload else None
    headers = {h.header_name.decode(): _text(h.value) for h in body.headers} or None
    return Message(body.type, _text(body.message_id), _text(body.queue), payload, headers,
                   _text(body.error_code), _text(body.error_message), body.version)


def to_scapy(m: Message, profile: str = "document") -> VibeMQ:
    """A scapy packet for ``m`` (uncompressed); lengths and counts are left to scapy."""
    enc = lambda s: (s or "").encode()  # noqa: E731
    errors = profile == "document" or m.type == CommandType.ERROR
    payload = b"" if m.payload is None else \
        json.dumps(m.payload, separators=(",", ":"), ensure_ascii=False).encode()
    return VibeMQ() / VibeMQMessage(
        version=m.version, type=m.type, message_id=enc(m.id), queue=enc(m.queue), json_payload=payload,
        headers=[VibeMQHeader(header_name=enc(k), value=enc(v)) for k, v in (m.headers or {}).items()],
        error_code=enc(m.error_code) if errors else None,
        error_message=enc(m.error_message) if errors else None)


def check_dissection(m: Message, profile: str, flag: int) -> None:
    data = codec.encode(m, profile, flag)
    pkt = VibeMQ(data)
    (decoded,) = codec.decode_all(data)
    assert pkt.length == len(data) - HEADER_SIZE and pkt.flags == flag
    assert message(pkt) == decoded == m and message(pkt).compression == flag
    if flag == Compression.NONE:
        assert to_message(pkt) == m
        tail = (pkt.payload.error_code, pkt.payload.error_message)
        if profile == "document" or m.type == CommandType.ERROR:
            assert None not in tail
        else:
            assert tail == (None, None)            # the real codec's body ends after headers
    else:
        assert type(pkt.payload) is Raw and pkt.payload.load == data[HEADER_SIZE:]
    assert bytes(pkt) == data                      # a dissected packet rebuilds as it was


# -- scapy <-> codec -------------------------------------------------------------------------

@pytest.mark.parametrize("profile", ["document", "vibemq-1.8"])
@settings(SETTINGS)
@given(data=st.data())
def test_dissection_matches_codec(profile, data):
    flag = data.draw(vs.compressions(profile))
    check_dissection(data.draw(vs.messages(profile)), profile, flag)


@pytest.mark.parametrize("profile", ["document", "vibemq-1.8"])
@settings(SETTINGS)
@given(data=st.data())
def test_scapy_build_matches_codec(profile, data):
    m = data.draw(vs.messages(profile))
    assert bytes(to_scapy(m, profile)) == codec.encode(m, profile)


@pytest.mark.parametrize("kind", list(CommandType), ids=lambda k: k.name)
def test_every_command_type(kind):
    m = Message(kind, "id-1", "q", {"a": [1]}, {"h": "v"})
    for flag in Compression:
        check_dissection(m, "document", flag)


def test_real_ping_vector_dissects():
    pkt = VibeMQ(PING_VECTOR)
    assert (pkt.length, pkt.flags) == (14, 0)
    body = pkt[VibeMQMessage]
    assert (body.version, body.type, body.message_id) == (1, CommandType.PING, b"p1")
    assert body.error_code is None and body.error_message is None
    assert bytes(VibeMQ() / VibeMQMessage(type="PING", message_id=b"p1")) == PING_VECTOR
    assert bytes(pkt) == PING_VECTOR


def test_error_tail_present_but_empty_is_kept():
    # The document's form writes two empty error strings: b"", not None, so it rebuilds.
    data = codec.encode(Message(CommandType.PING, "p1"))
    pkt = VibeMQ(data)
    assert (pkt.payload.error_code, pkt.payload.error_message) == (b"", b"")
    assert bytes(pkt) == data


@settings(SETTINGS, max_examples=50)
@given(st.lists(vs.frames(), min_size=2, max_size=8))
def test_pipelined_frames_are_consecutive_layers(batch):
    data = vs.stream_bytes(batch)
    layers = frames(VibeMQ(data))
    assert [message(layer) for layer in layers] == codec.decode_all(data) == batch
    assert [layer.flags for layer in layers] == [m.compression for m in batch]
    assert not any(isinstance(x, Padding) for x in _all_layers(VibeMQ(data)))
    assert bytes(VibeMQ(data)) == data


@settings(SETTINGS, max_examples=50)
@given(st.lists(vs.messages(), min_size=1, max_size=6))
def test_scapy_built_chain_matches_codec_stream(batch):
    chain = to_scapy(batch[0])
    for m in batch[1:]:
        chain = chain / to_scapy(m)
    assert bytes(chain) == vs.stream_bytes(batch)


def _all_layers(pkt):
    layer = pkt
    while not isinstance(layer, NoPayload):
        yield layer
        layer = layer.payload


def test_malformed_frames_keep_their_bytes():
    ping = codec.encode(Message(CommandType.PING, "p1"))
    # A body with a trailing byte: the extra byte is Raw, the next frame still follows; the
    # codec refuses the body (TRAILING_BYTES) through message().
    body = vs.raw_body() + b"\x00"
    data = vs.frame_of(body) + ping
    pkt = VibeMQ(data)
    assert len(frames(pkt)) == 2 and bytes(pkt) == data
    with pytest.raises(FrameError):
        message(frames(pkt)[0])
    # A length below 2: the stream cannot be cut; the rest stays under that frame.
    bad = b"\x00\x00\x00\x01\x00" + ping
    pkt = VibeMQ(bad)
    assert len(frames(pkt)) == 1 and bytes(pkt) == bad
    # A truncated header list: Raw.
    cut = vs.frame_of(vs.raw_body(header_pairs=[(b"a", b"b")])[:-6])
    assert Raw in VibeMQ(cut)


# -- reassembly ------------------------------------------------------------------------------

def test_tcp_reassemble_five_byte_header():
    first = codec.encode(Message(CommandType.PUBLISH, "m1", "q", {"x": "y" * 40}))
    second = codec.encode(Message(CommandType.PING, "p1"))
    data = first + second
    for n in (0, 1, 3, 4, 5, 6, len(first) - 1):
        metadata: dict = {}
        assert VibeMQ.tcp_reassemble(data[:n], metadata, {}) is None
        # The whole frame's size once the length is there; at least the header before.
        assert metadata["tcp_min_len"] == (len(first) if n >= 4 else HEADER_SIZE)
    pkt = VibeMQ.tcp_reassemble(data + first[:7], {}, {})
    assert [message(f) for f in frames(pkt)] == codec.decode_all(data)
    assert pkt[Padding].load == first[:7]
    session: dict = {}
    assert isinstance(VibeMQ.tcp_reassemble(b"\xff\xff\xff\xff\x00\x00", {"ident": 1}, session), VibeMQ)
    assert type(VibeMQ.tcp_reassemble(second, {"ident": 1}, session)) is Raw
    assert isinstance(VibeMQ.tcp_reassemble(second, {"ident": 2}, session), VibeMQ)


@pytest.mark.parametrize("port", [2925, 7001])
def test_sniff_tcpsession_reassembles_split_frames(tmp_path, port):
    rng = random.Random(port)
    if port != 2925:
        bind_vibemq(port)
    c2s_frames = [codec.from_json({"id": "conn_001", "type": "connect",
                                   "headers": {"supported-compression": "brotli,gzip"}}),
                  *(Message(CommandType.PUBLISH, f"m{i}", "q", {"blob": rng.randbytes(300).hex()},
                            compression=i % 3) for i in range(8)),
                  *(Message(CommandType.PING, f"p{i}") for i in range(10))]
    s2c_frames = [Message(CommandType.CONNECT_ACK, "conn_001",
                          headers={"negotiated-compression": "brotli"}),
                  *(Message(CommandType.PUBLISH_ACK, f"m{i}") for i in range(8)),
                  Message(CommandType.DELIVER, "m0", "q", ["x" * 2000], compression=2),
                  *(Message(CommandType.PONG, f"p{i}") for i in range(10))]
    c2s, s2c = vs.stream_bytes(c2s_frames), vs.stream_bytes(s2c_frames)
    # Cuts inside length fields, at the flags byte, inside bodies, several frames per cut.
    c_cuts = sorted({2, 4, 5, 9, 60, 700, 1500, 2900} | {rng.randrange(1, len(c2s)) for _ in range(10)})
    s_cuts = sorted({1, 4, 5, 30, 300} | {rng.randrange(1, len(s2c)) for _ in range(8)})
    pkts = tcp_conversation(port, c2s, s2c, c_cuts, s_cuts)
    path = tmp_path / "vibemq.pcap"
    wrpcap(str(path), pkts)
    got: dict[str, list] = {"c2s": [], "s2c": []}
    for pkt in sniff(offline=str(path), session=TCPSession):
        if VibeMQ in pkt:
            key = "c2s" if pkt[TCP].dport == port else "s2c"
            got[key].extend(message(f) for f in frames(pkt[VibeMQ]))
    assert got["c2s"] == codec.decode_all(c2s) == c2s_frames
    assert got["s2c"] == codec.decode_all(s2c) == s2c_frames
