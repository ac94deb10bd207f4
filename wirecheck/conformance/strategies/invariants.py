"""Plain invariant functions over any registered protocol's decoder (no hypothesis here).

Shared by the property tests and the atheris targets (STYLE.md points 9 and 10): decode a byte
string whole, one byte at a time, or in given read sizes, and get the same
:class:`DecodeResult` ``(frames, error category or None, error offset or None)`` every time.
Only :class:`FrameError` is caught; any other exception escaping a decoder is a bug and
propagates to the caller (the test or the fuzzer reports it).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import Category, FrameError


class DecodeResult(NamedTuple):
    frames: list
    category: Category | None
    offset: int | None

    @property
    def ok(self) -> bool:
        return self.category is None


def resolve(spec) -> registry.ProtocolSpec:
    """A :class:`ProtocolSpec`, given one or a protocol id."""
    return registry.get(spec) if isinstance(spec, str) else spec


def _pieces(data: bytes, sizes: Iterable[int]) -> list[bytes]:
    """``data`` cut at ``sizes`` (zeros allowed: empty reads); a remainder is the last piece."""
    out, pos = [], 0
    for size in sizes:
        if size < 0:
            raise ValueError(f"negative read size {size}")
        out.append(data[pos:pos + size])
        pos += size
    if pos < len(data):
        out.append(data[pos:])
    return out


def decode_pieces(pieces: Iterable[bytes], spec="blipmq", *, eof: bool = True) -> DecodeResult:
    """Feed ``pieces`` to a fresh decoder, stopping at the first error; with ``eof``, tell the
    decoder the stream ended (a partial frame left is then an error)."""
    decoder = resolve(spec).make_decoder()
    frames: list = []
    try:
        for piece in pieces:
            frames.extend(decoder.feed(piece))
        if eof:
            decoder.eof()
    except FrameError as exc:
        frames.extend(exc.frames)
        return DecodeResult(frames, exc.category, exc.offset)
    return DecodeResult(frames, None, None)


def decode_whole(data: bytes, spec="blipmq") -> DecodeResult:
    return decode_pieces([data], spec)


def decode_bytewise(data: bytes, spec="blipmq") -> DecodeResult:
    return decode_pieces([data[i:i + 1] for i in range(len(data))], spec)


def decode_chunked(data: bytes, sizes: Iterable[int], spec="blipmq") -> DecodeResult:
    return decode_pieces(_pieces(data, sizes), spec)


def _describe(result: DecodeResult) -> str:
    err = "no error" if result.ok else f"{result.category} at {result.offset}"
    return f"{len(result.frames)} frames, {err}"


def assert_same(expected: DecodeResult, got: DecodeResult, how: str) -> None:
    if got != expected:
        first = next((i for i, (a, b) in enumerate(zip(expected.frames, got.frames)) if a != b),
                     min(len(expected.frames), len(got.frames)))
        raise AssertionError(f"{how} decoding disagrees with whole decoding: "
                             f"{_describe(got)} vs {_describe(expected)} (frames differ from #{first})")


def assert_split_invariant(data: bytes, sizes: Iterable[int], spec="blipmq") -> DecodeResult:
    """Whole, 1-byte and ``sizes``-chunked decoding give the same frames, and the same error
    (category and offset) after the same frames. Returns the common result."""
    spec = resolve(spec)
    whole = decode_whole(data, spec)
    assert_same(whole, decode_bytewise(data, spec), "1-byte")
    assert_same(whole, decode_chunked(data, list(sizes), spec), "chunked")
    return whole


def assert_extension_invariant(data: bytes, extra: bytes, spec="blipmq") -> DecodeResult:
    """Bytes appended after ``data`` never change what ``data`` decoded to: its frames stay a
    prefix, an error inside ``data`` stays (same category, offset, frames), and a new error
    cannot sit before the end of ``data``'s last whole frame. Returns the longer result."""
    spec = resolve(spec)
    short = decode_pieces([data], spec, eof=False)
    longer = decode_whole(data + extra, spec)
    if not short.ok:
        assert_same(short, longer, f"with {len(extra)} bytes appended,")
        return longer
    n = len(short.frames)
    if longer.frames[:n] != short.frames:
        raise AssertionError(f"appending {len(extra)} bytes changed the first {n} frames")
    if not longer.ok and longer.offset < _consumed(data, spec):
        raise AssertionError(f"appending {len(extra)} bytes moved an error to offset "
                             f"{longer.offset}, inside frames already decoded whole")
    return longer


def _consumed(data: bytes, spec) -> int:
    """Bytes of ``data`` taken by whole frames (what is left is a partial frame); uses the
    decoder's ``buffered`` count, as :class:`wirecheck.conformance.target.connection.Connection` does."""
    decoder = resolve(spec).make_decoder()
    decoder.feed(data)
    return len(data) - decoder.buffered
