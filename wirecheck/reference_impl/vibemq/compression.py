"""Frame-level compression ("Compression"): GZip and Brotli, decompression bounded.

A body is inflated to at most ``limit`` bytes: an output that would grow past it is refused
(a decompression bomb is an error, not an allocation). A stream that is corrupt, truncated or
followed by extra bytes is refused too. Errors are :class:`PayloadError` (BAD_ENCODING for a
corrupt stream, LENGTH_TOO_LARGE for a bomb).
"""
from __future__ import annotations

import gzip
import zlib

import brotli

from ..core.errors import Category, PayloadError
from .constants import Compression, PROTOCOL

#: gzip wrapper for zlib (RFC 1952 header and trailer).
_GZIP_WBITS = 31


def _err(message: str, category: Category, offset: int, part: str = "compressed-body") -> PayloadError:
    """A body that cannot be decompressed (FrameError.part "compressed-body"), one that
    inflates past the limit ("bomb") or an unknown flag ("compression-flag")."""
    return PayloadError(message, category=category, protocol=PROTOCOL, offset=offset, part=part)


def compress(data: bytes, algorithm: int) -> bytes:
    if algorithm == Compression.GZIP:
        return gzip.compress(data, compresslevel=6, mtime=0)
    if algorithm == Compression.BROTLI:
        return brotli.compress(data, quality=5)
    if algorithm == Compression.NONE:
        return data
    raise ValueError(f"unknown compression {algorithm}")


def decompress(data: bytes, algorithm: int, limit: int, offset: int = 0) -> bytes:
    """``data`` inflated; at most ``limit`` bytes of output are ever held."""
    if algorithm == Compression.NONE:
        return data
    if algorithm == Compression.GZIP:
        return _gunzip(data, limit, offset)
    if algorithm == Compression.BROTLI:
        return _unbrotli(data, limit, offset)
    raise _err(f"unknown compression flag 0x{algorithm:02x}", Category.UNKNOWN_TYPE, offset,
               "compression-flag")


#: Inflate in steps of this size, into one buffer: memory stays near the output's size (a
#: single ``decompress(data, limit)`` call may hold twice the limit while it grows).
_STEP = 1 << 20


def _gunzip(data: bytes, limit: int, offset: int) -> bytes:
    inflater = zlib.decompressobj(_GZIP_WBITS)
    out = bytearray()
    tail = data
    try:
        while True:
            piece = inflater.decompress(tail, min(_STEP, limit + 1 - len(out)))
            out += piece
            tail = inflater.unconsumed_tail
            if len(out) > limit:
                raise _err(f"gzip body inflates past {limit} bytes", Category.LENGTH_TOO_LARGE, offset,
                           "bomb")
            if inflater.eof or (not piece and not tail):
                break
    except zlib.error as exc:
        raise _err(f"corrupt gzip body: {exc}", Category.BAD_ENCODING, offset) from None
    if not inflater.eof:
        raise _err("gzip body ends before its stream does", Category.BAD_ENCODING, offset)
    if inflater.unused_data:
        raise _err(f"{len(inflater.unused_data)} bytes after the gzip stream", Category.TRAILING_BYTES, offset)
    return bytes(out) if len(out) < _STEP else out     # large: no second copy


def _unbrotli(data: bytes, limit: int, offset: int) -> bytes:
    inflater = brotli.Decompressor()
    out = bytearray()
    try:
        # In steps, as _gunzip: one call with the whole limit grows its buffer by doubling and
        # holds about 2.5 times the limit at the end. Calls with empty input go on yielding
        # what the previous step held back.
        out += inflater.process(data, output_buffer_limit=min(_STEP, limit + 1))
        while len(out) <= limit and not inflater.is_finished():
            piece = inflater.process(b"", output_buffer_limit=min(_STEP, limit + 1 - len(out)))
            if not piece:
                break
            out += piece
    except brotli.error as exc:
        raise _err(f"corrupt brotli body: {exc}", Category.BAD_ENCODING, offset) from None
    if len(out) > limit:
        raise _err(f"brotli body inflates past {limit} bytes", Category.LENGTH_TOO_LARGE, offset, "bomb")
    if not inflater.is_finished():
        raise _err("brotli body ends before its stream does (or has bytes after it)",
                   Category.BAD_ENCODING, offset)
    return bytes(out) if len(out) < _STEP else out     # large: no second copy
