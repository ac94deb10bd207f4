"""The SignalR scapy layers against the codec (STYLE.md 12): generated client and server streams
(JSON handshake, then JSON or VarInt-prefixed MessagePack records) are cut into records by
scapy on its own and decoded by the codec, and must agree record by record; scapy's builds are
the codec's bytes; ``tcp_reassemble`` returns nothing until a whole record is there, and
scapy's ``TCPSession`` puts records split across segments back together."""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("scapy")

from scapy.layers.inet import TCP  # noqa: E402
from scapy.packet import Padding, Raw  # noqa: E402
from scapy.sendrecv import sniff  # noqa: E402
from scapy.sessions import TCPSession  # noqa: E402
from scapy.utils import wrpcap  # noqa: E402
from tests.helpers import tcp_conversation  # noqa: E402

from wirecheck.conformance.strategies import signalr as S  # noqa: E402
from wirecheck.reference_impl.signalr import codec  # noqa: E402
from wirecheck.reference_impl.signalr.messages import (HandshakeRequest, HandshakeResponse,  # noqa: E402
                                             Invocation, Ping, StreamItem)
from wirecheck.reference_impl.signalr.scapy_layer import (RAW_TCP_PORT, SignalR,  # noqa: E402
                                                SignalRHandshake, SignalRJSON, SignalRMsgPack,
                                                bind_signalr, frames)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MSGTYPE = {"Invocation": 1, "StreamItem": 2, "Completion": 3, "StreamInvocation": 4,
           "CancelInvocation": 5, "Ping": 6, "Close": 7, "Ack": 8, "Sequence": 9}


def _decoder(protocol: str, origin: str):
    if origin == "client":
        return codec.Decoder(origin="client")
    return codec.Decoder(origin="server", protocol=protocol)


@pytest.mark.parametrize("origin", ["client", "server"])
@pytest.mark.parametrize("protocol", ["json", "messagepack"])
@FAST
@given(data=st.data())
def test_dissection_matches_codec(protocol, origin, data):
    stream = data.draw(S.streams(protocol, "v1", origin, max_size=5))
    wire = S.stream_bytes(stream, protocol)
    assert _decoder(protocol, origin).feed(wire) == stream
    records = frames(SignalR(wire))
    assert len(records) == len(stream)
    assert b"".join(_own(r) for r in records) == wire
    assert isinstance(records[0], SignalRHandshake)
    assert records[0].message() == stream[0]
    layer = SignalRJSON if protocol == "json" else SignalRMsgPack
    for record, message in zip(records[1:], stream[1:]):
        assert type(record) is layer
        assert record.message() == message
        assert record.hub_type == MSGTYPE[type(message).__name__]
        assert _own(record) == codec.encode(message, protocol)


def _own(record) -> bytes:
    """The record's bytes without the records after it."""
    return record.self_build()


@FAST
@given(message=S.messages("v1", "messagepack"))
def test_scapy_build_matches_codec(message):
    body = codec.msgpack_protocol.encode_body(message)
    assert bytes(SignalRMsgPack(body=body)) == codec.encode(message, "messagepack")
    text = codec.encode(message, "json") if _json_safe(message) else None
    if text is not None:
        assert bytes(SignalRJSON(text=text[:-1])) == text


def _json_safe(message) -> bool:
    try:
        codec.encode(message, "json")
    except ValueError:
        return False
    return True


def test_handshakes_and_pipelined_mixed_records():
    wire = (b'{"protocol": "messagepack", "version": 1}\x1e' + bytes.fromhex("029106")
            + codec.encode(StreamItem("1", bytes(300)), "messagepack") + bytes.fromhex("039207c0"))
    pkt = SignalR(wire)
    kinds = [type(r) for r in frames(pkt)]
    assert kinds == [SignalRHandshake, SignalRMsgPack, SignalRMsgPack, SignalRMsgPack]
    assert frames(pkt)[2].length == len(codec.msgpack_protocol.encode_body(StreamItem("1", bytes(300))))
    assert [r.message() for r in frames(pkt)] == codec.decode_all(wire)
    server = b'{}\x1e{"type":6}\x1e{"error":"x"}\x1e'
    assert [type(r) for r in frames(SignalR(server))] == [SignalRHandshake, SignalRJSON, SignalRHandshake]
    assert frames(SignalR(server))[0].message() == HandshakeResponse()


def test_bad_and_partial_records_keep_their_bytes():
    # A VarInt too wide or too large, a JSON record without its separator: Raw.
    for data in (b"\x80\x80\x80\x80\x80\x01", b"\xff\xff\xff\xff\x08", b'{"type":6}', b"\x85"):
        pkt = SignalR(data)
        assert type(pkt) is Raw and bytes(pkt) == data
    # A body shorter than its length: the record with what there is (as scapy does).
    pkt = SignalR(b"\x05\x91")
    assert type(pkt) is SignalRMsgPack and pkt.length == 5 and pkt.body == b"\x91"
    assert bytes(pkt) == b"\x05\x91"
    # After a whole record, a bad one stays Raw under it.
    pkt = SignalR(b"\x02\x91\x06\x80\x80\x80\x80\x80\x01")
    assert type(pkt) is SignalRMsgPack and pkt[Raw].load == b"\x80\x80\x80\x80\x80\x01"


def test_tcp_reassemble_waits_for_a_whole_record():
    wire = codec.encode(HandshakeRequest("messagepack", 1)) + codec.encode(
        Invocation("Echo", ["x" * 200], "0"), "messagepack")
    hs = len(codec.encode(HandshakeRequest("messagepack", 1)))
    for cut in range(1, hs):
        assert SignalR.tcp_reassemble(wire[:cut], {}, {}) is None
    pkt = SignalR.tcp_reassemble(wire[:hs + 1], {}, {})          # the handshake + a VarInt byte
    assert isinstance(pkt, SignalRHandshake) and pkt[Padding].load == wire[hs:hs + 1]
    for cut in range(hs + 1, len(wire)):
        rest = SignalR.tcp_reassemble(wire[hs:cut], {}, {})
        assert rest is None
    whole = SignalR.tcp_reassemble(wire, {}, {})
    assert [r.message() for r in frames(whole)] == codec.decode_all(wire)
    session: dict = {}
    assert isinstance(SignalR.tcp_reassemble(b"\x80\x80\x80\x80\x80\x01", {"ident": 1}, session), Raw)
    assert isinstance(SignalR.tcp_reassemble(wire, {"ident": 1}, session), Raw)    # stays broken


@pytest.mark.parametrize("port", [RAW_TCP_PORT, 5998])
def test_sniff_tcpsession_reassembles_split_records(tmp_path, port):
    rng = random.Random(port)
    if port != RAW_TCP_PORT:
        bind_signalr(port)
    c2s_msgs = [HandshakeRequest("messagepack", 1), Ping(),
                *(Invocation("Echo", [rng.randbytes(rng.randrange(0, 400))], str(i)) for i in range(15))]
    s2c_msgs = [HandshakeResponse(), *(StreamItem(str(i), "y" * rng.randrange(0, 300)) for i in range(15))]
    c2s = b"".join(codec.encode(m, "messagepack") for m in c2s_msgs)
    s2c = b"".join(codec.encode(m, "json") for m in s2c_msgs)
    c_cuts = sorted({1, 20, 40, 41, 42, 43} | {rng.randrange(1, len(c2s)) for _ in range(12)})
    s_cuts = sorted({1, 2, 3, 4} | {rng.randrange(1, len(s2c)) for _ in range(12)})
    pkts = tcp_conversation(port, c2s, s2c, c_cuts, s_cuts)
    path = tmp_path / "signalr.pcap"
    wrpcap(str(path), pkts)
    got: dict[int, list] = {}
    for pkt in sniff(offline=str(path), session=TCPSession):
        if SignalR in pkt:
            key = pkt[TCP].dport if pkt[TCP].dport != port else -pkt[TCP].sport
            got.setdefault(key, []).extend(r.message() for r in frames(pkt[SignalR]))
    assert got[-40000] == codec.decode_all(c2s) == c2s_msgs
    assert got[40000] == codec.decode_all(s2c, origin="server") == s2c_msgs
