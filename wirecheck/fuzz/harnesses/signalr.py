"""Shared bodies of the SignalR atheris targets (STYLE.md point 8), over fuzz/harnesses/base.py's read
sizes and the invariant functions of conformance/strategies/invariants.py.

A seed is a whole stream as a client sends it: the JSON handshake record, then hub messages in
the protocol it names (fuzz/corpora/signalr-json/, fuzz/corpora/signalr-msgpack/). Each helper
decodes the input whole and in reads chosen by its first bytes with several decoders (the
registry's default one, which reads the handshake and guesses who sent it; and the hub protocol
alone in both profiles, from either side), asserts they agree, and that every message decoded
survives encode/decode. :class:`FrameError` is the only exception a decoder may raise (turned
into a result by the invariant functions); anything else propagates as a crash.
"""
from __future__ import annotations

from wirecheck.conformance.strategies.invariants import DecodeResult, assert_same, decode_whole
from wirecheck.conformance.strategies.signalr import DecoderSpec
from wirecheck.fuzz.harnesses.base import NOTHING, decode_in_reads
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.signalr import codec
from wirecheck.reference_impl.signalr.constants import HUB_PROTOCOLS, JSON, RECORD_SEPARATOR
from wirecheck.reference_impl.signalr.messages import HANDSHAKE_MESSAGES, HandshakeRequest

PROFILES = ("v1", "draft")


DEFAULT = DecoderSpec()
#: The hub protocol alone, in each profile, from either side (built once: per input they cost).
BODY_SPECS = {protocol: [DecoderSpec(protocol=protocol, profile=profile, origin=origin, handshake=False)
                         for profile in PROFILES for origin in ("client", "server")]
              for protocol in HUB_PROTOCOLS}


def _decode_whole(data: bytes, spec):
    """``decode_whole(data, spec)`` and the decoder it used (which hub protocol it read)."""
    decoder = spec.make_decoder()
    frames: list = []
    try:
        frames += decoder.feed(data)
        decoder.eof()
    except FrameError as exc:
        return DecodeResult(frames + exc.frames, exc.category, exc.offset), decoder
    return DecodeResult(frames, None, None), decoder


def split_agrees(data: bytes, spec, whole: DecodeResult | None = None, untraced=NOTHING) -> list:
    """Whole and chunked decoding agree; returns the messages decoded whole (``whole``, if
    given, else read in ``untraced``). Equal, or else equal by ``repr``: a MessagePack NaN
    decodes twice to two floats that are not equal (and ``repr`` of every message, for every
    input, would cost more than the decoding)."""
    if whole is None:
        with untraced:
            whole = decode_whole(data, spec)
    chunked = decode_in_reads(data, spec)
    if chunked != whole and repr(chunked) != repr(whole):
        assert_same(whole, chunked, "chunked")
    return whole.frames


def after_handshake(data: bytes) -> bytes:
    """What follows the first record separator (the hub messages of a seed)."""
    end = data.find(RECORD_SEPARATOR)
    return data[end + 1:] if end >= 0 else data


#: The decoders that read a message back (built once).
_AGAIN = {**{(p, "request"): DecoderSpec(origin="client", profile=p) for p in PROFILES},
          (None, "response"): DecoderSpec(origin="server"),
          **{(p, hub): DecoderSpec(protocol=hub, profile=p, handshake=False)
             for p in PROFILES for hub in HUB_PROTOCOLS}}


def _survives(message, protocol: str, profile: str) -> None:
    """``message`` re-encodes, and its bytes decode to a message that encodes to the same bytes
    (bytes, not equality: a MessagePack NaN is a value but never equal to itself)."""
    codec.frame_to_dict(message)
    wire = codec.encode(message, protocol, profile)
    if isinstance(message, HandshakeRequest):        # the draft's may lack the version
        again = decode_whole(wire, _AGAIN[profile, "request"])
    elif isinstance(message, HANDSHAKE_MESSAGES):    # a response: only v1 has one
        again = decode_whole(wire, _AGAIN[None, "response"])
    else:
        again = decode_whole(wire, _AGAIN[profile, protocol])
    assert again.ok and len(again.frames) == 1, f"{message} does not survive encode/decode: {again}"
    assert codec.encode(again.frames[0], protocol, profile) == wire, f"{message} re-encodes differently"


def _hub_survives(message, protocol: str, profile: str, decoder) -> None:
    """:func:`_survives` for a hub message, read back by ``decoder`` (the hub protocol alone,
    ``_AGAIN[profile, protocol]``), shared by a stream's messages: after a whole record it
    holds nothing (checked) and no error, and reading hub messages changes nothing else in it
    (codec.Decoder: the handshake and the protocol guess are behind it), so this is the check
    of a fresh decoder per message without building one each time. Anything else and the
    fresh decoder's reading decides (and names the message)."""
    codec.frame_to_dict(message)
    wire = codec.encode(message, protocol, profile)
    try:
        again = decoder.feed(wire)
    except FrameError:
        again = None
    if again is None or len(again) != 1 or decoder.buffered \
            or codec.encode(again[0], protocol, profile) != wire:
        _survives(message, protocol, profile)
        raise AssertionError(f"{message} survives encode/decode alone, not after the messages before it")


def messages_survive(messages: list, protocol: str, profile: str) -> None:
    """Every message of a stream decoded whole survives encode/decode in ``protocol`` (the hub
    protocol the decoder read it in: the one the handshake named, or it guessed)."""
    again = None
    for message in messages:
        if isinstance(message, HANDSHAKE_MESSAGES):
            _survives(message, protocol, profile)
            continue
        if again is None:
            again = _AGAIN[profile, protocol].make_decoder()
        _hub_survives(message, protocol, profile, again)


def check_stream(data: bytes, spec: DecoderSpec) -> None:
    """Whole and chunked decoding agree, and every message decoded survives encode/decode in
    the hub protocol the decoder read it in (the one the handshake named, or it guessed)."""
    whole, decoder = _decode_whole(data, spec)
    split_agrees(data, spec, whole)
    messages_survive(whole.frames, decoder.hub_protocol or JSON, spec.profile)


def stream_one_input(data: bytes, protocol: str, untraced=NOTHING) -> None:
    """``data`` as a stream with its handshake (the registry's default decoder), whole vs
    chunked reads only (the frame-decoder targets): the re-encoding of its messages is
    :func:`stream_roundtrip_one_input`'s, and the hub messages alone in each profile and from
    either side are :func:`body_one_input`'s (same corpora). The whole reading runs in
    ``untraced``."""
    split_agrees(data, DEFAULT, untraced=untraced)


def stream_roundtrip_one_input(data: bytes, protocol: str) -> None:
    """Every message of ``data`` decoded whole as a stream with its handshake (the registry's
    default decoder) survives encode/decode in the hub protocol the decoder read it in."""
    whole, decoder = _decode_whole(data, DEFAULT)
    messages_survive(whole.frames, decoder.hub_protocol or JSON, DEFAULT.profile)


def body_one_input(data: bytes, protocol: str) -> None:
    """The hub messages of ``data`` (what follows its handshake) alone in ``protocol``, in both
    profiles, as sent by a client and by a server."""
    body = after_handshake(data)
    for spec in BODY_SPECS[protocol]:
        check_stream(body, spec)


def handshake_one_input(data: bytes) -> None:
    """``data`` from its first byte, read as a client's, a server's, or either's (guessed), in
    both profiles (a draft server sends no handshake: codec.py)."""
    for profile in PROFILES:
        for origin in ("client", "server", None):
            check_stream(data, DecoderSpec(profile=profile, origin=origin))
