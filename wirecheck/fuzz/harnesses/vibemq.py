"""Shared bodies of the VibeMQ atheris targets (STYLE.md point 8), over fuzz/harnesses/base.py's read
sizes and the invariant functions of conformance/strategies/invariants.py.

A stream seed (fuzz/corpora/vibemq/) is frames as the document frames them (u32 length, flags
byte, body); a message seed (fuzz/corpora/vibemq-message/) is one binary message. Each helper
raises AssertionError when two ways of doing the same thing disagree; :class:`FrameError` is
the only exception the codec may raise (turned into a result by the invariant functions);
anything else propagates, and the fuzzer reports it as a crash.
"""
from __future__ import annotations

import zlib

import brotli

from wirecheck.conformance.strategies.invariants import DecodeResult, assert_same, decode_whole
from wirecheck.conformance.strategies.vibemq import DecoderSpec, frame_of
from wirecheck.fuzz.harnesses.base import NOTHING, decode_in_reads, read_sizes
from wirecheck.fuzz.harnesses.base import decoder_one_input as harness_decoder_one_input
from wirecheck.reference_impl.core.errors import Category, FrameError
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq import compression as comp
from wirecheck.reference_impl.vibemq.codec import VibeLimits
from wirecheck.reference_impl.vibemq.constants import PROFILES, Compression

#: Bound on inflated bodies while fuzzing (the codec's default is 64 MiB): a seed or mutation
#: that inflates further is refused quickly (LENGTH_TOO_LARGE) instead of slowly.
MAX_DECOMPRESSED = 64 * 1024
LIMITS = VibeLimits(max_decompressed=MAX_DECOMPRESSED)
SPECS = {p: DecoderSpec(p, LIMITS) for p in PROFILES}
#: Re-encoded frames are read without a practical frame bound: JSON written back may be longer
#: than the text it was read from ("1e5" becomes "100000.0").
_UNBOUNDED = {p: DecoderSpec(p, VibeLimits(max_frame_size=1 << 31, max_decompressed=1 << 31))
              for p in PROFILES}
#: The first profile of each framing. codec.Decoder's profile picks the framing only
#: ("Framing": a flags byte since protocol 1.1, none in ``vibemq-1.0``; ``Decoder.flags``) and
#: every profile reads bodies alike (codec.py), so decoding the same bytes in ``document`` and
#: ``vibemq-1.8`` ran the same code twice: a third of the target's time for nothing.
FRAMINGS = tuple({codec.Decoder(profile=p).flags: p for p in reversed(PROFILES)}.values())[::-1]


def _reframe(message, profile: str) -> bytes:
    """``message`` as a frame of ``profile`` with every field it holds (the document's body,
    which every profile reads) and the compression it came with."""
    body = codec.encode_body(message, "document")
    flag = Compression.NONE if profile == "vibemq-1.0" else message.compression
    return frame_of(comp.compress(body, flag), flag, profile)


def split_agrees(data: bytes, spec) -> DecodeResult:
    whole = decode_whole(data, spec)
    assert_same(whole, decode_in_reads(data, spec), "chunked")
    return whole


def framing_of(data: bytes) -> str:
    """The framing (:data:`FRAMINGS`) ``data`` is read in, by its length's parity: even, the
    document's (flags byte); odd, ``vibemq-1.0``'s. Reading every input in both framings
    doubled the target's work; one per input halves it, and the fuzzer still reaches both
    with any bytes (a byte inserted or removed, among its most frequent mutations, switches
    the framing and leaves the rest as it was). The length rather than a byte's value: a
    framing chosen by a byte would never meet the other values of that byte (a flags byte,
    a type, a length). The seeds (fuzz/corpora/vibemq/: all in the document's framing, as
    the corpus test requires) have both parities, 22 even and 28 odd, so each framing starts
    from real streams."""
    return FRAMINGS[len(data) % len(FRAMINGS)]


def decoder_one_input(data: bytes, untraced=NOTHING) -> None:
    """``data`` as a stream in the framing :func:`framing_of` picks: whole and chunked
    decoding agree, the whole reading in ``untraced`` (fuzz/harnesses/base.py ``decoder_one_input``;
    the re-framing is :func:`roundtrip_one_input`'s)."""
    harness_decoder_one_input(SPECS[framing_of(data)], data, untraced)


def roundtrip_one_input(data: bytes) -> None:
    """``data`` as a stream in the framing :func:`framing_of` picks, decoded whole: every
    message survives re-framing (same fields, same compression). One decoder reads every
    re-framed message in turn: after a whole frame it holds nothing and no error (checked),
    the state a fresh one starts in."""
    profile = framing_of(data)
    messages = decode_whole(data, SPECS[profile]).frames
    if not messages:
        return
    decoder = _UNBOUNDED[profile].make_decoder()
    for message in messages:
        codec.frame_to_dict(message)
        wire = _reframe(message, profile)
        try:
            again = decoder.feed(wire)
        except FrameError:
            again = None
        if again != [message] or decoder.buffered:
            again = decode_whole(wire, _UNBOUNDED[profile])     # a fresh decoder's reading
            assert again == ([message], None, None), f"{message} does not survive: {again}"
            raise AssertionError(f"{message} survives alone, not after the messages before it")
        assert again[0].compression == (message.compression if profile != "vibemq-1.0" else 0)


def message_one_input(data: bytes) -> None:
    """``data`` as one binary message: parse_message and a decoder reading it as a frame's
    body (plain, gzip, brotli) agree; a message read writes back (both forms) to bytes that
    read the same."""
    try:
        message = codec.parse_message(data, 5)
    except FrameError as exc:
        expected = (exc.category, exc.offset)
        message = None
    else:
        expected = None
        for profile in ("document", "vibemq-1.8"):
            body = codec.encode_body(message, profile)
            again = codec.parse_message(body)
            if profile == "document" or message.type == 99:
                assert again == message, f"{message} reads back as {again}"
            else:
                assert (again.error_code, again.error_message) == (None, None)
                again.error_code, again.error_message = message.error_code, message.error_message
                assert again == message, f"{message} reads back as {again}"
    if not 2 <= len(data) <= LIMITS.max_frame_size:
        return                                     # the framing refuses such a body first
    for flag in Compression:
        body = comp.compress(data, flag)
        if len(body) > LIMITS.max_frame_size:
            continue
        result = split_agrees(frame_of(body, flag), SPECS["document"])
        if message is not None:
            assert result == ([message], None, None), f"flag {flag}: {result}"
        elif flag == Compression.NONE:
            assert (result.category, result.offset) == expected, f"{result} vs {expected}"
        else:                                      # inside compression: at the body's start
            assert (result.category, result.offset) == (expected[0], 5), f"{result} vs {expected}"


def _first_body(data: bytes) -> tuple[int, bytes]:
    """The algorithm and compressed body of a seed's first frame: its flags byte (any other
    value picks an algorithm by parity) and the bytes its length covers (or all that follow,
    if the length runs past the end)."""
    flag = data[4]
    if flag not in (Compression.GZIP, Compression.BROTLI):
        flag = Compression.GZIP if flag & 1 else Compression.BROTLI
    length = int.from_bytes(data[:4], "big")
    end = 5 + length if 5 + length <= len(data) else len(data)
    return flag, data[5:end]


def _inflate_in_pieces(flag: int, body: bytes, sizes: list[int]):
    """A second decompression, fed in pieces with the output bounded per piece: the bytes
    (at most MAX_DECOMPRESSED), or the category the codec should give."""
    out, pos = bytearray(), 0
    if flag == Compression.GZIP:
        inflater = zlib.decompressobj(31)
        try:
            for size in sizes:
                out += inflater.decompress(body[pos:pos + size], MAX_DECOMPRESSED + 1 - len(out))
                pos += size
                if len(out) > MAX_DECOMPRESSED:
                    return Category.LENGTH_TOO_LARGE
        except zlib.error:
            return Category.BAD_ENCODING
        if not inflater.eof:
            return Category.BAD_ENCODING
        return Category.TRAILING_BYTES if inflater.unused_data else bytes(out)
    inflater = brotli.Decompressor()
    try:
        for size in sizes:
            out += inflater.process(body[pos:pos + size],
                                    output_buffer_limit=MAX_DECOMPRESSED + 1 - len(out))
            pos += size
            if len(out) > MAX_DECOMPRESSED:
                return Category.LENGTH_TOO_LARGE
    except brotli.error:
        return Category.BAD_ENCODING
    return bytes(out) if inflater.is_finished() else Category.BAD_ENCODING


def decompress_one_input(data: bytes) -> None:
    """The first frame's body of ``data`` through the bounded decompression: it agrees with
    a decompression fed in pieces (both accept the same bytes, or both refuse; for one stream
    cut off near the bound, one may see the bound and the other the corruption past it), never
    holds more than the bound, and the decoder reads the frame as decompress + parse_message."""
    if len(data) < 5:
        return
    flag, body = _first_body(data)
    try:
        out = comp.decompress(body, flag, MAX_DECOMPRESSED, 5)
    except FrameError as exc:
        out, category = None, exc.category
        assert exc.offset == 5
    else:
        assert len(out) <= MAX_DECOMPRESSED
    other = _inflate_in_pieces(flag, body, read_sizes(data, len(body)))
    if out is not None:
        assert other == out, f"in pieces: {other if isinstance(other, Category) else len(other)}"
    else:
        assert isinstance(other, Category), "accepted in pieces, refused whole"
        assert other == category or {other, category} == {Category.LENGTH_TOO_LARGE,
                                                           Category.BAD_ENCODING}, (other, category)
    if len(body) < 2:
        return                                     # the framing refuses it first
    result = split_agrees(frame_of(body, flag), SPECS["document"])
    if out is None:
        assert (result.category, result.offset) == (category, 5), result
        return
    try:
        message = codec.parse_message(out, 5)
    except FrameError as exc:
        assert (result.category, result.offset) == (exc.category, 5), result
    else:
        assert result == ([message], None, None), result
