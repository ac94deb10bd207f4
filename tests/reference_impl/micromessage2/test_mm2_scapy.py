"""The Micromessage2 scapy layers against the codec (STYLE.md 12): a client's bytes from the
first one (offer, final handshake, frames) and a server's (reply, frames), generated, are cut
and dissected by scapy and read by the codec, and must agree unit by unit; scapy's builds are
the codec's bytes; an ERROR in place of a handshake is a frame; ``tcp_reassemble`` returns
nothing until a whole handshake or frame is there and keeps the rest, for a whole session cut
at every byte and fed a byte at a time; scapy's ``TCPSession`` reads a capture from its first
byte, as ``wirecheck decode --pcap`` does."""
from __future__ import annotations

import io
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

from wirecheck.conformance.captures.decode import decode_pcap  # noqa: E402
from wirecheck.conformance.strategies import micromessage2 as S  # noqa: E402
from wirecheck.reference_impl.core.errors import FrameError  # noqa: E402
from wirecheck.reference_impl.micromessage2 import SPEC, codec, syntax  # noqa: E402
from wirecheck.reference_impl.micromessage2.codec import (Command, Error, ExtensionFrame,  # noqa: E402
                                                Handshake, Message)
from wirecheck.reference_impl.micromessage2.scapy_layer import (MM2, MM2Handshake, MM2Offer, bind_mm2,  # noqa: E402
                                                      cut, frames)
from wirecheck.reference_impl.micromessage2.syntax import parse_extensions  # noqa: E402

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HANDSHAKES = {"client": 2, "server": 1}
ENTRY = {"client": MM2Offer, "server": MM2Handshake}


def _all(pkt):
    layer = pkt
    while not isinstance(layer, NoPayload):
        yield layer
        layer = layer.payload


def _own(layer) -> bytes:
    """The bytes of this unit alone (the layers after it up to the next unit are its body)."""
    nxt = next((x for x in _all(layer.payload) if isinstance(x, (MM2, MM2Handshake))), None)
    whole = bytes(layer)
    return whole if nxt is None else whole[:len(whole) - len(bytes(nxt))]


def _type(unit) -> str:
    return codec.frame_to_dict(unit)["type"]


def _codec_units(data: bytes, origin: str) -> list:
    """The codec's reading of one direction: frames, or ("error", category) for a unit it
    refuses; a framing error ends it."""
    decoder = codec.make_decoder(origin=origin)
    decoder.receive(data)
    out = []
    while True:
        try:
            frame = decoder.next_frame()
        except FrameError as exc:
            out.append(("error", exc.category))
            if decoder._error is not None:
                return out
            continue
        if frame is None:
            return out
        out.append(frame)


def _scapy_units(layers) -> list:
    out = []
    for layer in layers:
        try:
            out.append(layer.frame())
        except FrameError as exc:
            out.append(("error", exc.category))
    return out


@st.composite
def handshakes(draw):
    """A handshake whose first byte is a major version, not an ERROR frame's flags (those are
    drawn on their own below)."""
    h = draw(S.handshakes())
    return Handshake(h.identity, h.required, h.optional, draw(st.sampled_from((0, 1, 2, 255))),
                     h.minor, h.flags)


@st.composite
def directions(draw, origin: str):
    units = [draw(handshakes()) for _ in range(HANDSHAKES[origin])]
    return units + draw(S.valid_streams(max_size=5))


def _wire(units) -> bytes:
    return b"".join(codec.encode(u) for u in units)


# -- scapy <-> codec ---------------------------------------------------------------------------

@pytest.mark.parametrize("origin", ["client", "server"])
@FAST
@given(data=st.data())
def test_direction_from_its_first_byte_matches_codec(origin, data):
    units = data.draw(directions(origin))
    wire = _wire(units)
    assert codec.decode_all(wire, origin=origin) == units
    pkt = ENTRY[origin](wire)
    layers = frames(pkt)
    assert [type(x) for x in layers[:HANDSHAKES[origin]]] == \
        [MM2Offer, MM2Handshake][2 - HANDSHAKES[origin]:]
    assert all(type(x) is MM2 for x in layers[HANDSHAKES[origin]:])
    assert [x.frame() for x in layers] == units
    assert [_own(x) for x in layers] == [codec.encode(u) for u in units]
    assert bytes(pkt) == wire
    assert not any(isinstance(x, (Raw, Padding)) and not isinstance(x.underlayer, MM2)
                   for x in _all(pkt))


@pytest.mark.parametrize("origin", ["client", "server"])
@FAST
@given(data=st.data())
def test_any_bytes_are_cut_as_the_codec_reads_them(origin, data):
    """Generated units, some handshakes replaced by ERROR frames, then arbitrary trailing
    bytes: scapy cuts where the codec reads, and stops where it stops."""
    units = data.draw(directions(origin))
    for i in range(HANDSHAKES[origin]):
        if data.draw(st.booleans()):
            units[i] = data.draw(S.errors())
    wire = _wire(units) + data.draw(st.binary(max_size=12))
    layers = frames(ENTRY[origin](wire))
    want = _codec_units(wire, origin)
    got = _scapy_units(layers)
    assert got[:len(want)] == want
    # Beyond what the codec reads: one more layer holding what cannot be cut (Raw inside).
    assert len(got) <= len(want) + 1


@FAST
@given(S.handshakes())
def test_scapy_build_matches_codec(h):
    fields = dict(major=h.major, minor=h.minor, flags=h.flags, identity=h.identity.encode(),
                  required=syntax.format_extensions(h.required).encode(),
                  optional=syntax.format_extensions(h.optional).encode())
    wire = codec.encode_handshake(h)
    assert bytes(MM2Handshake(**fields)) == wire
    assert bytes(MM2Offer(**fields) / MM2Handshake(**fields)) == wire + wire


def test_document_examples():
    # "Handshake": the three examples (erratum 1: "json;dotnet" is 11 bytes), then a batch-ack
    # frame (erratum 2: flag 2, id, length 2, the sequence number).
    offer = bytes([1, 0, 0, 4]) + b"hulk" + bytes([0, 11]) + b"json;dotnet" + bytes([0, 0])
    reply = bytes([1, 0, 0, 5]) + b"srver" + bytes([0, 0, 0, 9]) + b"batch-ack"
    final = bytes([1, 0, 0, 4]) + b"hulk" + bytes([0, 11]) + b"json;dotnet" + bytes([0, 9]) + b"batch-ack"
    ack = bytes.fromhex("02 03 02 00 04")
    client = MM2Offer(offer + final + ack)
    assert (client.identity, client.required, client.optional_len) == (b"hulk", b"json;dotnet", 0)
    assert frames(client)[1].optional == b"batch-ack"
    assert [type(x) for x in frames(client)] == [MM2Offer, MM2Handshake, MM2]
    assert frames(client)[2].frame() == ExtensionFrame(3, b"\x00\x04")
    server = MM2Handshake(reply)
    assert server.frame() == Handshake("srver", (), parse_extensions("batch-ack"))
    built = MM2Offer(identity=b"hulk", required=b"json;dotnet") / MM2Handshake(
        identity=b"hulk", required=b"json;dotnet", optional=b"batch-ack")
    assert bytes(built) == offer + final


@pytest.mark.parametrize("text", ["nope!", "x" * 300])
def test_error_in_place_of_a_handshake(text):
    """"Handshake": a peer that refuses sends an ERROR frame (and disconnects): the server in
    place of its reply, the client in place of its final handshake."""
    error = codec.encode(Error(text))
    server = MM2Handshake(error)
    assert _scapy_units(frames(server)) == _codec_units(error, "server")
    offer = codec.encode(Handshake("t", parse_extensions("x-unknown")))
    client = MM2Offer(offer + error)
    assert _scapy_units(frames(client)) == _codec_units(offer + error, "client")
    if len(text) <= 255:
        assert type(server) is MM2 and server.flags == 4 and server.frame() == Error(text)
        assert [type(x) for x in frames(client)] == [MM2Offer, MM2]


def test_cut_handshake_is_raw_and_continued_message_is_one_frame():
    offer = codec.encode(Handshake("hulk", parse_extensions("json;dotnet")))
    for n in range(1, len(offer)):
        assert type(MM2Offer(offer[:n])) is Raw
        assert cut(offer[:n], 2).sizes == ()
    assert type(MM2Offer(offer)) is MM2Offer
    # "MESSAGE": pieces with CONTINUED on all but the last make one payload: one layer.
    pieces = codec.encode_message(Message(7, "q", bytes(range(20))), piece_size=6)
    data = pieces + codec.encode(Command("subscribe", (("destination", "q"),)))
    layers = frames(MM2(data))
    assert len(layers) == 2 and layers[0].flags.CONTINUED
    assert layers[0].frame() == Message(7, "q", bytes(range(20))) and layers[0].frame().pieces == 4
    assert cut(data).sizes == (len(pieces), len(data) - len(pieces))


# -- reassembly ----------------------------------------------------------------------------------

def _session_units():
    """A whole conversation: the client's offer, final handshake and frames; the server's
    reply and frames (deliveries, acks, an ERROR; CONTINUED pieces and LARGE_PAYLOAD)."""
    offer = Handshake("hulk", parse_extensions("pubsub;batch-ack:max-count=3"))
    reply = Handshake("wirecheck", (), parse_extensions("json"))
    final = Handshake("hulk", parse_extensions("pubsub;batch-ack:max-count=3"))
    client = [offer, final, Command("subscribe", (("destination", "topic/a"),)),
              Message(65535, "topic/a", b"a" * 300, (("n", "N1"),)), Message(1, "q", b"b"),
              ExtensionFrame(2, b"\x00\x01"), Command("x-wirecheck-barrier")]
    server = [reply, Message(65535, "topic/a", b"a" * 300, (("n", "N1"),)),
              ExtensionFrame(2, b"\x00\x01"), Error("unknown command 'x-wirecheck-barrier'")]
    c2s = _wire(client[:3]) + codec.encode_message(client[3], piece_size=120) + _wire(client[4:])
    return client, server, c2s, _wire(server)


def _feed(chunk: bytes, buf: bytes, ident, session) -> tuple[list, bytes]:
    """What TCPSession does with a segment of one direction: the call gets the direction's
    unconsumed bytes; a returned packet's Padding is kept for the next segment, after one more
    call at once with it and without the direction's metadata (scapy/sessions.py)."""
    buf += chunk
    pkt = MM2.tcp_reassemble(buf, {"ident": ident}, session)
    if pkt is None:
        return [], buf
    pad = pkt.getlayer(Padding)
    rest = b""
    if pad is not None:
        rest = pad.load
        del pad.underlayer.payload
        assert MM2.tcp_reassemble(rest, {}, session) is None       # the rest is never whole
    return frames(pkt), rest


def _ends(data: bytes, handshakes: int) -> list:
    """Where each unit of a direction ends (the codec's cut)."""
    ends, total = [], 0
    for size in cut(data, handshakes).sizes:
        total += size
        ends.append(total)
    return ends


@pytest.mark.parametrize("origin", ["client", "server"])
def test_session_cut_at_every_byte(origin):
    client, server, c2s, s2c = _session_units()
    units, data = (client, c2s) if origin == "client" else (server, s2c)
    ends = _ends(data, HANDSHAKES[origin])
    assert ends[-1] == len(data) and len(ends) == len(units)
    for k in range(1, len(data)):
        session: dict = {}
        if origin == "server":
            _feed(c2s[:1], b"", b"c", session)                  # the client speaks first
        first, buf = _feed(data[:k], b"", b"d", session)
        # Nothing before a unit is whole; every unit that is, and the rest kept.
        assert [x.frame() for x in first] == units[:sum(e <= k for e in ends)], k
        assert buf == data[max([0] + [e for e in ends if e <= k]):k]
        second, buf = _feed(data[k:], buf, b"d", session)
        assert [x.frame() for x in first + second] == units and buf == b"", k


def test_session_fed_a_byte_at_a_time_both_directions_interleaved():
    client, server, c2s, s2c = _session_units()
    session: dict = {}
    state = {b"c": (c2s, set(_ends(c2s, 2)), [], b""), b"s": (s2c, set(_ends(s2c, 1)), [], b"")}
    for i in range(max(len(c2s), len(s2c))):
        for ident in (b"c", b"s"):                               # the client's byte first
            data, ends, got, buf = state[ident]
            if i >= len(data):
                continue
            new, buf = _feed(data[i:i + 1], buf, ident, session)
            assert len(new) == (i + 1 in ends), (ident, i)
            assert not new or buf == b""                          # whole at this byte: no rest
            state[ident] = (data, ends, got + new, buf)
    assert [x.frame() for x in state[b"c"][2]] == client and state[b"c"][3] == b""
    assert [x.frame() for x in state[b"s"][2]] == server and state[b"s"][3] == b""


def test_framing_error_leaves_the_direction_unframed():
    client, _, c2s, _ = _session_units()
    bad = bytes([0x21, 0x01, 0x61])                     # an unknown flag bit (32)
    session: dict = {}
    good = _wire(client[:3])
    pkt = MM2.tcp_reassemble(good + bad, {"ident": b"c"}, session)
    assert [x.frame() for x in frames(pkt)] == client[:3] and pkt[Padding].load == bad
    broken = MM2.tcp_reassemble(bad, {}, session)       # TCPSession's call with the rest
    assert type(broken) is MM2 and broken.flags == 0x21 and broken[Raw].load == bad[1:]
    assert type(MM2.tcp_reassemble(c2s, {"ident": b"c"}, session)) is Raw
    assert type(MM2.tcp_reassemble(_wire(client[:1]), {"ident": b"s"}, session)) is MM2Handshake


@pytest.mark.parametrize("port", [8334, 7334])
def test_sniff_tcpsession_reads_a_capture_from_its_first_byte(tmp_path, port):
    rng = random.Random(port)
    client, server, c2s, s2c = _session_units()
    if port != 8334:
        bind_mm2(port)
    c_cuts = sorted({1, 3, 5, 9, 20, 40, 41} | {rng.randrange(1, len(c2s)) for _ in range(12)})
    s_cuts = sorted({2, 6, 15} | {rng.randrange(1, len(s2c)) for _ in range(6)})
    pkts = tcp_conversation(port, c2s, s2c, c_cuts, s_cuts)      # the client's first segment first
    for i, p in enumerate(pkts):
        p.time = 1000 + i * 0.25
    path = tmp_path / "mm2.pcap"
    wrpcap(str(path), pkts)
    got: dict[str, list] = {"c2s": [], "s2c": []}
    for pkt in sniff(offline=str(path), session=TCPSession):
        if TCP in pkt:
            key = "c2s" if pkt[TCP].dport == port else "s2c"
            got[key].extend(x.frame() for x in frames(pkt))
    assert got["c2s"] == client and got["s2c"] == server
    # ``wirecheck decode --pcap`` (the codec, directions told by the SYN) reads the same.
    text = io.StringIO()
    assert decode_pcap(SPEC, str(path), ports=[port], out=text) == 0
    lines = [json.loads(x) for x in text.getvalue().splitlines()]
    assert [x["type"] for x in lines if x["direction"] == "c2s"] == [_type(u) for u in client]
    assert [x["type"] for x in lines if x["direction"] == "s2c"] == [_type(u) for u in server]


