"""Properties of the SignalR codec (signalr-hub-protocol.md as the ``draft`` profile, SPEC_NOTES.md
"SignalR" as ``v1``): round trip of every message in both encodings and both profiles,
split-read invariance of whole streams (handshake included) in both encodings, VarInt
boundaries among them, the category and offset of every near-valid invalid record whatever the
reads, framing limits checked before buffering, and nothing but FrameError from arbitrary bytes
after each kind of handshake. The registry-wide properties (tests/reference_impl/core/test_codec_properties.py) run
here against a stand-in spec until SignalR is registered."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from wirecheck.conformance.strategies import signalr as S
from wirecheck.conformance.strategies.signalr import DecoderSpec
from wirecheck.conformance.strategies.invariants import assert_split_invariant, decode_whole
from wirecheck.reference_impl.core.errors import Category, FrameError
from wirecheck.reference_impl.signalr import codec
from wirecheck.reference_impl.signalr.codec import SignalRLimits
from wirecheck.reference_impl.signalr.constants import JSON, MESSAGEPACK
from wirecheck.reference_impl.signalr.framing import encode_varint, frame_binary
from wirecheck.reference_impl.signalr.messages import (HandshakeRequest, HandshakeResponse, Invocation,
                                             PROFILE_MESSAGES, StreamItem)

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SMALL = settings(FAST, max_examples=30)
PROTOCOLS = (JSON, MESSAGEPACK)
PROFILES = ("v1", "draft")


#: The registry's default: a handshake first, origin guessed, v1.
DEFAULT = DecoderSpec()


def hub_spec(protocol: str, profile: str = "v1", origin: str | None = None) -> DecoderSpec:
    return DecoderSpec(protocol=protocol, profile=profile, origin=origin, handshake=False)


def stream_spec(protocol: str, profile: str, origin: str) -> DecoderSpec:
    """A decoder of a whole stream: a client's names its protocol in the handshake; a v1
    server's ``{}`` does not, so that one guesses (JSON) or is told (MessagePack); a draft
    server sends no handshake (codec.py) and is told."""
    if origin == "client":
        return DecoderSpec(profile=profile, origin="client")
    if profile == "v1" and protocol == JSON:
        return DecoderSpec(profile=profile)
    return DecoderSpec(profile=profile, origin="server", protocol=protocol)


# --- round trip ---------------------------------------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("cls", sorted({c for p in PROFILES for c in PROFILE_MESSAGES[p]},
                                       key=lambda c: c.__name__), ids=lambda c: c.__name__)
@SMALL
@given(data=st.data())
def test_round_trip(cls, protocol, profile, data):
    if cls not in PROFILE_MESSAGES[profile]:
        with pytest.raises(ValueError):
            codec.encode(data.draw(S.messages("draft" if profile == "v1" else "v1", protocol, [cls])),
                         protocol, profile)
        return
    message = data.draw(S.messages(profile, protocol, [cls]))
    wire = codec.encode(message, protocol, profile)
    if protocol == JSON:
        assert wire.endswith(b"\x1e") and wire.count(b"\x1e") == 1
        body = wire[:-1]
    else:
        body = codec.msgpack_protocol.encode_body(message, profile)
        assert wire == encode_varint(len(body)) + body
    assert codec.parse_record(body, protocol, profile) == message
    result = assert_split_invariant(wire, data.draw(S.chunkings(wire)), hub_spec(protocol, profile))
    assert result == ([message], None, None)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@SMALL
@given(value=st.sampled_from([b"\x00", bytearray(b"ab"), {1, 2}, float("nan"), float("inf")]))
def test_json_refuses_what_it_cannot_carry(protocol, profile, value):
    message = StreamItem("1", value)
    if protocol == MESSAGEPACK and type(value) in (bytes, bytearray, float):
        codec.encode(message, protocol, profile)          # binary and IEEE floats are MessagePack
        return
    with pytest.raises(ValueError):
        codec.encode(message, protocol, profile)


# --- whole streams, any split ---------------------------------------------------------------------

@pytest.mark.parametrize("origin", ["client", "server"])
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@FAST
@given(data=st.data())
def test_stream_any_split(protocol, profile, origin, data):
    stream = data.draw(S.streams(protocol, profile, origin))
    wire = S.stream_bytes(stream, protocol, profile)
    spec = stream_spec(protocol, profile, origin)
    result = assert_split_invariant(wire, data.draw(S.chunkings(wire)), spec)
    assert result == (stream, None, None)


@SMALL
@given(data=st.data(), sizes=st.lists(st.sampled_from([0, 1, 126, 127, 128, 129, 16383, 16384,
                                                        16385, 70_000]), min_size=1, max_size=4))
def test_msgpack_varint_boundaries_any_split(data, sizes):
    # Records whose VarInt is 1, 2 or 3 bytes, and bodies at each boundary (the body is the
    # item's bytes plus a 9-byte envelope, so sizes move the length across 127 / 16383).
    stream = [HandshakeRequest(MESSAGEPACK, 1)]
    for size in sizes:
        stream.append(StreamItem("abc", bytes(size)))
    wire = S.stream_bytes(stream, MESSAGEPACK)
    widths = {len(encode_varint(len(codec.msgpack_protocol.encode_body(m)))) for m in stream[1:]}
    assert widths <= {1, 2, 3}
    cuts = data.draw(S.chunkings(wire, max_chunks=300))
    result = assert_split_invariant(wire, cuts, DEFAULT)
    assert result == (stream, None, None)


@SMALL
@given(data=st.data(), length=st.sampled_from([9, 10, 13, 32, 123]))
def test_server_msgpack_guessed_whatever_the_first_length(data, length):
    # A server's ``{}`` does not name the protocol: the decoder looks at the next bytes. A record
    # length that is a JSON whitespace or '{' byte must not make it read JSON.
    item = bytes(max(0, length - 12))
    message = StreamItem("ab", item)
    while len(codec.msgpack_protocol.encode_body(message)) < length:
        item += b"\x00"
        message = StreamItem("ab", item)
    assert len(codec.msgpack_protocol.encode_body(message)) == length
    stream = [HandshakeResponse(), message, *data.draw(st.lists(S.messages("v1", MESSAGEPACK), max_size=2))]
    wire = S.stream_bytes(stream, MESSAGEPACK)
    assert assert_split_invariant(wire, data.draw(S.chunkings(wire)), DEFAULT) == (stream, None, None)


# --- errors: category, offset and frames before, whatever the reads --------------------------------

def _invalid(protocol: str, profile: str):
    return (S.invalid_json_records(profile) if protocol == JSON
            else S.invalid_msgpack_records(profile))


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@FAST
@given(data=st.data())
def test_invalid_record_category_any_split(protocol, profile, data):
    before = data.draw(S.streams(protocol, profile, "client", max_size=3))
    body, category = data.draw(_invalid(protocol, profile))
    bad = body + b"\x1e" if protocol == JSON else frame_binary(body)
    after = data.draw(st.lists(S.messages(profile, protocol), max_size=2))
    head = S.stream_bytes(before, protocol, profile)
    wire = head + bad + S.stream_bytes(after, protocol, profile)
    result = assert_split_invariant(wire, data.draw(S.chunkings(wire)),
                                    stream_spec(protocol, profile, "client"))
    assert result.frames == before
    assert result.category == category
    assert len(head) <= result.offset <= len(head) + len(bad)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@SMALL
@given(data=st.data())
def test_bad_record_does_not_break_the_stream(protocol, profile, data):
    # A bad message is not sticky (codec.py): the records around it are intact.
    body, category = data.draw(_invalid(protocol, profile))
    bad = body + b"\x1e" if protocol == JSON else frame_binary(body)
    after = data.draw(st.lists(S.messages(profile, protocol), min_size=1, max_size=3))
    decoder = codec.Decoder(protocol=protocol, profile=profile, handshake=False)
    with pytest.raises(FrameError) as err:
        decoder.feed(bad)
    assert err.value.category == category and not decoder.broken
    assert decoder.feed(S.stream_bytes(after, protocol, profile)) == after


@FAST
@given(data=st.data(), extra=st.integers(0, 4096))
def test_bad_varint_refused_at_the_prefix(data, extra):
    good = data.draw(st.lists(S.messages("v1", MESSAGEPACK), max_size=2))
    head = S.stream_bytes(good, MESSAGEPACK)
    limit = max([len(codec.msgpack_protocol.encode_body(m)) for m in good] + [0]) + extra
    prefix, category = data.draw(S.bad_varints(limit))
    # Nothing of a body is needed to refuse the length: fed a byte at a time, the error comes
    # at the prefix's last byte, with nothing after it buffered.
    for wire in (head + prefix, head + prefix + data.draw(st.binary(max_size=64))):
        decoder = codec.Decoder(SignalRLimits(max_frame_size=limit), protocol=MESSAGEPACK,
                                handshake=False)
        frames, fed = [], 0
        with pytest.raises(FrameError) as err:
            for i in range(len(wire)):
                fed = i + 1
                frames += decoder.feed(wire[i:i + 1])
        frames += err.value.frames
        assert err.value.category == category and err.value.offset == len(head)
        assert frames == good and fed <= len(head) + len(prefix)
        assert decoder.broken


@FAST
@given(data=st.data(), value=st.integers(1, 0x7FFFFFF))
def test_non_minimal_varint_only_with_strict(data, value):
    prefix = data.draw(S.non_minimal_varint(value))
    minimal = encode_varint(value)
    lax = codec.Decoder(SignalRLimits(max_frame_size=0x7FFFFFF), protocol=MESSAGEPACK, handshake=False)
    strict = codec.Decoder(SignalRLimits(max_frame_size=0x7FFFFFF, strict_varint=True),
                           protocol=MESSAGEPACK, handshake=False)
    assert lax.feed(prefix) == [] and lax.buffered == len(prefix)
    if prefix == minimal:
        assert strict.feed(prefix) == []
        return
    with pytest.raises(FrameError) as err:
        strict.feed(prefix)
    assert err.value.category is Category.BAD_ENCODING and err.value.offset == 0


@FAST
@given(data=st.data(), limit=st.integers(1, 256))
def test_json_record_without_separator_fails_at_the_limit(data, limit):
    head = S.stream_bytes(data.draw(st.lists(S.messages("v1", JSON), max_size=2)))
    decoder = codec.Decoder(SignalRLimits(max_frame_size=max(limit, len(head))), protocol=JSON,
                            handshake=False)
    limit = decoder.limits.max_frame_size
    decoder.feed(head)
    fed = 0
    with pytest.raises(FrameError) as err:
        while fed <= limit:                                  # bounded: the limit plus one byte
            decoder.feed(b"x")
            fed += 1
    assert fed == limit and err.value.category is Category.LENGTH_TOO_LARGE
    assert err.value.offset == len(head) and decoder.buffered <= limit + 1


# --- arbitrary bytes ---------------------------------------------------------------------------------

#: The stream heads a decoder meets: each kind of handshake, from each side, in each profile.
HEADS = {
    "client-json": (b'{"protocol":"json","version":1}\x1e', {}),
    "client-msgpack": (b'{"protocol":"messagepack","version":1}\x1e', {}),
    "client-unknown": (b'{"protocol":"protobuf","version":1}\x1e', {}),
    "server-ok": (b"{}\x1e", {}),
    "server-msgpack": (b"{}\x1e", {"origin": "server", "protocol": MESSAGEPACK}),
    "server-error": (b'{"error":"no"}\x1e', {}),
    "draft-json": (b'{"protocol":"json"}\x1e', {"profile": "draft"}),
    "draft-msgpack": (b'{"protocol":"messagepack"}\x1e', {"profile": "draft"}),
    "none": (b"", {}),
}


@pytest.mark.parametrize("head", sorted(HEADS))
@FAST
@given(data=st.data(), blob=st.binary(max_size=512))
@example(data=None, blob=b"\xff\xff\xff\xff\x7f")
@example(data=None, blob=b"\x80\x80\x80\x80\x80\x01")
@example(data=None, blob=b'{"type":1,"target":"x","arguments":[1e999]}\x1e')
@example(data=None, blob=b'{"type":2,"invocationId":"1","item":"\\udfff"}\x1e')
@example(data=None, blob=b"\x02\x91\x06\x03\x92\x07\xc0\x1e")
def test_arbitrary_bytes_after_handshake_only_frame_error(head, data, blob):
    prefix, options = HEADS[head]
    wire = prefix + blob
    sizes = data.draw(S.chunkings(wire)) if data is not None else [1]
    result = assert_split_invariant(wire, sizes, DecoderSpec(**options))
    if prefix:
        assert result.frames, result                        # the handshake itself decoded


# --- the registry's default decoder ---------------------------------------------------------

def test_default_decoder_reads_the_generic_streams():
    stream = [HandshakeRequest(JSON, 1), Invocation("Echo", [1, "x"], "0")]
    assert decode_whole(S.stream_bytes(stream), DEFAULT) == (stream, None, None)
