"""The BlipMQ scapy layer against the codec (STYLE.md 12): generated frames of every type are
dissected by scapy and decoded by the codec, and must agree field by field; scapy's builds
must be the codec's bytes; pipelined frames are consecutive layers; ``tcp_reassemble`` and
scapy's ``TCPSession`` put frames split across segments back together."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("scapy")

from scapy.layers.inet import TCP  # noqa: E402
from scapy.packet import NoPayload, Padding, Raw  # noqa: E402
from scapy.sendrecv import sniff  # noqa: E402
from scapy.sessions import TCPSession  # noqa: E402
from scapy.utils import wrpcap  # noqa: E402
from tests.helpers import tcp_conversation  # noqa: E402

from wirecheck.reference_impl.blipmq import codec  # noqa: E402
from wirecheck.reference_impl.blipmq.codec import FrameType  # noqa: E402
from wirecheck.reference_impl.blipmq.scapy_layer import (BlipAck, BlipAuth, BlipHello, BlipMQ,  # noqa: E402
                                               BlipNack, BlipPoll, BlipPublish, BlipSubscribe,
                                               frames)

# -- strategies (codec frames with random field values) --------------------------------------

u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)
u64 = st.integers(0, 2**64 - 1)
text = st.text(max_size=40)          # no surrogates: always encodable as UTF-8
blob = st.binary(max_size=300)

FRAME_STRATEGIES = {
    FrameType.HELLO: st.builds(codec.Hello, u64, u16),
    FrameType.AUTH: st.builds(codec.Auth, u64, text),
    FrameType.PUBLISH: st.builds(codec.Publish, u64, u8, text, blob),
    FrameType.SUBSCRIBE: st.builds(codec.Subscribe, u64, text, u8),
    FrameType.ACK: st.builds(codec.Ack, u64, u64),
    FrameType.NACK: st.builds(codec.Nack, u64, u16, text),
    FrameType.PING: st.builds(codec.Ping, u64),
    FrameType.PONG: st.builds(codec.Pong, u64),
    FrameType.POLL: st.builds(codec.Poll, u64, u64),
}
any_frame = st.one_of(*FRAME_STRATEGIES.values())

# One fixed frame per type, so every type is checked whatever hypothesis draws.
SAMPLES = [codec.Hello(1), codec.Auth(2, "dev-key"), codec.Publish(4, 1, "demo", b"hi"),
           codec.Subscribe(3, "demo", 1), codec.Ack(3, 42), codec.Nack(9, 426, "unsupported"),
           codec.Ping(7), codec.Pong(7), codec.Poll(8, 42)]


# -- scapy <-> codec -------------------------------------------------------------------------

def to_frame(layer: BlipMQ):
    """The codec frame a dissected BlipMQ layer stands for; also checks that the payload
    layer consumed the whole payload (no Raw left over) and the length fields."""
    t = FrameType(layer.frame_type)
    cid, body = layer.correlation_id, layer.payload
    if t in (FrameType.PING, FrameType.PONG):
        assert isinstance(body, (NoPayload, BlipMQ)), "PING/PONG carry no payload"
        return codec.FRAME_TYPES[t](cid)
    assert not isinstance(body.payload, Raw), "payload layer left bytes undissected"
    if t is FrameType.HELLO:
        return codec.Hello(cid, body.protocol_version)
    if t is FrameType.AUTH:
        assert body.key_len == len(body.key)
        return codec.Auth(cid, body.key.decode())
    if t is FrameType.PUBLISH:
        assert body.topic_len == len(body.topic)
        return codec.Publish(cid, body.qos, body.topic.decode(), body.message)
    if t is FrameType.SUBSCRIBE:
        assert body.topic_len == len(body.topic)
        return codec.Subscribe(cid, body.topic.decode(), body.qos)
    if t is FrameType.ACK:
        return codec.Ack(cid, body.subscription_id)
    if t is FrameType.POLL:
        return codec.Poll(cid, body.subscription_id)
    assert t is FrameType.NACK and body.message_len == len(body.message)
    return codec.Nack(cid, body.code, body.message.decode())


def to_scapy(frame) -> BlipMQ:
    """A scapy packet for ``frame``; length, *_len and frame_type are left to scapy."""
    head = BlipMQ(correlation_id=frame.correlation_id)
    t = frame.type
    if t is FrameType.HELLO:
        return head / BlipHello(protocol_version=frame.protocol_version)
    if t is FrameType.AUTH:
        return head / BlipAuth(key=frame.api_key.encode())
    if t is FrameType.PUBLISH:
        return head / BlipPublish(qos=frame.qos, topic=frame.topic.encode(), message=frame.message)
    if t is FrameType.SUBSCRIBE:
        return head / BlipSubscribe(topic=frame.topic.encode(), qos=frame.qos)
    if t is FrameType.ACK:
        return head / BlipAck(subscription_id=frame.subscription_id)
    if t is FrameType.POLL:
        return head / BlipPoll(subscription_id=frame.subscription_id)
    if t is FrameType.NACK:
        return head / BlipNack(code=frame.code, message=frame.message.encode())
    return BlipMQ(frame_type=int(t), correlation_id=frame.correlation_id)


def check_dissection(frame) -> None:
    data = codec.encode(frame)
    pkt = BlipMQ(data)
    (decoded,) = codec.decode_all(data)
    assert pkt.length == len(data) - 4
    assert FrameType(pkt.frame_type) is decoded.type
    assert to_frame(pkt) == decoded == frame
    assert bytes(pkt) == data                       # a dissected packet rebuilds as it was


# -- tests -----------------------------------------------------------------------------------

@pytest.mark.parametrize("frame", SAMPLES, ids=lambda f: f.type.name)
def test_every_type_dissects_and_builds_like_the_codec(frame):
    check_dissection(frame)
    assert bytes(to_scapy(frame)) == codec.encode(frame)


def test_document_sample_frames():
    # "Hex-Encoded Sample Frames" of blipmq-protocol.md, built with scapy.
    assert bytes(BlipMQ(correlation_id=1) / BlipHello()) == bytes.fromhex(
        "0000000b 01 0000000000000001 0001")
    assert bytes(BlipMQ(correlation_id=3) / BlipAck(subscription_id=42)) == bytes.fromhex(
        "00000011 05 0000000000000003 000000000000002a")


@settings(deadline=None, max_examples=300)
@given(any_frame)
def test_dissection_matches_codec(frame):
    check_dissection(frame)


@settings(deadline=None, max_examples=300)
@given(any_frame)
def test_scapy_build_matches_codec(frame):
    assert bytes(to_scapy(frame)) == codec.encode(frame)


@settings(deadline=None)
@given(st.lists(any_frame, min_size=2, max_size=12))
def test_pipelined_frames_are_consecutive_layers(batch):
    data = b"".join(codec.encode(f) for f in batch)
    layers = frames(BlipMQ(data))
    assert [to_frame(layer) for layer in layers] == codec.decode_all(data) == batch
    assert not any(isinstance(x, Padding) for x in _all_layers(BlipMQ(data)))


@settings(deadline=None)
@given(st.lists(any_frame, min_size=1, max_size=6))
def test_scapy_built_chain_matches_codec_stream(batch):
    chain = to_scapy(batch[0])
    for frame in batch[1:]:
        chain = chain / to_scapy(frame)
    assert bytes(chain) == b"".join(codec.encode(f) for f in batch)


def _all_layers(pkt):
    layer = pkt
    while not isinstance(layer, NoPayload):
        yield layer
        layer = layer.payload


def test_malformed_frames_keep_their_bytes():
    # ACK with 9 payload bytes: the extra byte is Raw, the next frame still follows.
    data = codec.encode_raw(FrameType.ACK, 1, bytes(9)) + codec.encode(codec.Ping(2))
    pkt = BlipMQ(data)
    assert isinstance(pkt[BlipAck].payload, Raw) and pkt[BlipAck].payload.load == b"\x00"
    assert [f.correlation_id for f in frames(pkt)] == [1, 2]
    assert bytes(pkt) == data
    # Length below 9: the stream cannot be cut; the rest stays Raw under that frame.
    bad = b"\x00\x00\x00\x03" + bytes(9) + codec.encode(codec.Ping(3))
    pkt = BlipMQ(bad)
    assert len(frames(pkt)) == 1 and pkt[Raw].load == codec.encode(codec.Ping(3))
    # Unknown type: payload as Raw.
    pkt = BlipMQ(codec.encode_raw(0x42, 5, b"abc"))
    assert pkt.frame_type == 0x42 and pkt[Raw].load == b"abc"


def test_sniff_tcpsession_reassembles_split_frames(tmp_path):
    rng = random.Random(5555)
    c2s_frames = [codec.Hello(1), codec.Auth(2, "dev-key"), codec.Subscribe(3, "demo", 1),
                  codec.Publish(4, 1, "demo", rng.randbytes(4000)), codec.Poll(5, 42),
                  *(codec.Ping(10 + i) for i in range(20)), codec.Ack(6, 42)]
    s2c_frames = [codec.Ack(1), codec.Ack(2), codec.Ack(3, 42),
                  codec.Publish(77, 1, "demo", rng.randbytes(2500)),
                  *(codec.Pong(10 + i) for i in range(20)), codec.Nack(6, 404, "unknown")]
    c2s = b"".join(codec.encode(f) for f in c2s_frames)
    s2c = b"".join(codec.encode(f) for f in s2c_frames)
    # Cuts inside length prefixes, inside headers, inside bodies, and several frames per cut.
    c_cuts = sorted({2, 7, 15, 20, 60, 1500, 2900, 4100, 4140, 4200, 4300} | {
        rng.randrange(1, len(c2s)) for _ in range(10)})
    s_cuts = sorted({1, 14, 30, 47, 1400, 2800, 2900} | {rng.randrange(1, len(s2c)) for _ in range(8)})
    pkts = tcp_conversation(5555, c2s, s2c, c_cuts, s_cuts)
    path = tmp_path / "blipmq.pcap"
    wrpcap(str(path), pkts)

    got = {5555: [], 40000: []}
    for pkt in sniff(offline=str(path), session=TCPSession):
        if BlipMQ in pkt:
            got[pkt[TCP].dport].extend(to_frame(x) for x in frames(pkt[BlipMQ]))
    assert got[5555] == codec.decode_all(c2s) == c2s_frames
    assert got[40000] == codec.decode_all(s2c) == s2c_frames
