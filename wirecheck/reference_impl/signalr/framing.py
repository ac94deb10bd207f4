"""Cutting a byte stream into SignalR records.

Two framings share one stream (the handshake is always JSON, the hub protocol may be binary):

- text: each record ends with the record separator 0x1E ("JSON Payload Encoding"). The scan
  remembers how far it has already searched, so a record arriving one byte at a time costs
  O(n), and a record longer than the limit is refused as soon as that many bytes have come
  without a separator;
- binary: each record is ``[VarInt length][body]`` ("Binary encoding"): 7-bit groups, least
  significant first, at most 5 bytes, at most 0x7FFFFFFF (the 5th byte is at most 0x07). The
  length is checked against the limit before any body is buffered. The document does not
  require minimal encodings (and real servers accept ``0x80 0x00``); with ``strict_varint`` a
  non-minimal length is refused (STYLE: reject what a careful peer never sends).

Framing errors are sticky: once the stream cannot be cut, nothing after is trusted.
"""
from __future__ import annotations

import base64
import binascii
from typing import Optional

from ..core.errors import Category, FrameError, LengthError, PayloadError
from .constants import MAX_PAYLOAD, MAX_VARINT_BYTES, PROTOCOL, RECORD_SEPARATOR, RS

#: Drop the consumed prefix only past this many bytes (and past half the buffer).
_COMPACT = 64 * 1024

TEXT = "text"
BINARY = "binary"


def encode_varint(value: int) -> bytes:
    if not 0 <= value <= MAX_PAYLOAD:
        raise ValueError(f"length {value} outside 0..{MAX_PAYLOAD}")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def frame_binary(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


def frame_text(body: bytes) -> bytes:
    return body + RS


class RecordReader:
    """Incremental record cutter; ``mode`` may change between records (after the handshake)."""

    __slots__ = ("_buf", "_pos", "_base", "_scanned", "_want", "mode", "max_size", "strict_varint",
                 "error")

    def __init__(self, max_size: int = MAX_PAYLOAD, strict_varint: bool = False,
                 mode: str = TEXT) -> None:
        self._buf = bytearray()
        self._pos = 0            # read offset into _buf
        self._base = 0           # stream offset of _buf[0]
        self._scanned = 0        # bytes past _pos already searched for 0x1E (text mode)
        self._want = 0           # len(_buf) that makes the record at _pos whole (binary), or 0
        self.mode = mode
        self.max_size = max_size
        self.strict_varint = strict_varint
        self.error: Optional[FrameError] = None

    def __len__(self) -> int:
        return len(self._buf) - self._pos

    @property
    def offset(self) -> int:
        return self._base + self._pos

    def peek(self, n: int) -> bytes:
        """Up to ``n`` unconsumed bytes, without consuming them."""
        return bytes(self._buf[self._pos:self._pos + n])

    def feed(self, data) -> None:
        if self.error is None:
            self._buf += data

    def feed_partial(self, data) -> bool:
        """Buffer ``data`` and return True if the record in hand stays partial with it: no
        separator in the bytes already searched nor in ``data``, and the limit not passed
        (text); fewer bytes than the length read before says (binary). Then :meth:`take_records`
        and :meth:`next_record` would find nothing and refuse nothing, so the caller may skip
        them. Otherwise buffer nothing and return False."""
        if self.error is None:
            if self.mode == TEXT:
                scanned = len(self._buf) - self._pos
                if RECORD_SEPARATOR not in data and self._scanned == scanned \
                        and scanned + len(data) <= self.max_size:
                    self._buf += data
                    self._scanned = scanned + len(data)   # what _next_text would have searched
                    return True
            elif len(self._buf) + len(data) < self._want:
                self._buf += data
                return True
        return False

    def next_record(self) -> Optional[tuple[int, bytes]]:
        """(stream offset of the record, its body) or None until a whole record is there."""
        if self.error is not None:
            raise self.error
        if self._pos == len(self._buf):
            return None
        return self._next_text() if self.mode == TEXT else self._next_binary()

    def take_records(self) -> tuple[int, list[bytes] | bytes, list[int] | None]:
        """Every whole record buffered, cut in one pass: (stream offset of the first, bodies,
        offsets of each). Binary mode: a list of bodies and their offsets. Text mode: one
        ``bytes`` block, the records joined by 0x1E (the last one's separator dropped), and
        None (offsets follow from the lengths): a JSON reader takes the block whole. Stops
        before a record :meth:`next_record` would refuse (too long, a bad VarInt), so that
        call raises it; empty when no whole record is there."""
        if self.error is not None:
            raise self.error
        if self._pos == len(self._buf):
            return self.offset, [], None
        return self._take_text() if self.mode == TEXT else self._take_binary()

    def _take_text(self):
        buf, pos = self._buf, self._pos
        last = buf.rfind(RECORD_SEPARATOR, pos + self._scanned)
        start = self._base + pos                 # self.offset, without the call
        if last <= pos:                      # none whole, or one empty record: read it singly
            return start, b"", None
        with memoryview(buf) as view:
            block = bytes(view[pos:last])
        stop = last + 1
        if last - pos > self.max_size:
            limit, at = self.max_size, 0
            for body in block.split(RS):
                if len(body) > limit:                 # the records before it, then the error
                    block = block[:max(at - 1, 0)]
                    stop = pos + at
                    break
                at += len(body) + 1
            if stop == pos:
                return start, b"", None
        self._consume(stop)
        return start, block, None

    def _take_binary(self):
        buf, pos = self._buf, self._pos
        end, limit = len(buf), self.max_size
        bodies: list[bytes] = []
        offsets: list[int] = []
        base = self._base
        # A one-byte length (< 0x80) within the limit is at most this: with the body all here,
        # the usual record passes one test (the fuzzers trace every test of this loop).
        small = min(limit, 0x7F)
        with memoryview(buf) as view:
            while pos < end:
                first = buf[pos]
                if first <= min(small, end - pos - 1):
                    offsets.append(base + pos)
                    bodies.append(bytes(view[pos + 1:pos + 1 + first]))
                    pos += 1 + first
                    continue
                if first < 0x80:                  # over the limit, or the body not all here
                    break
                size = width = 0
                for i in range(MAX_VARINT_BYTES):       # a careful read decides anything odd
                    if pos + i >= end:
                        break
                    byte = buf[pos + i]
                    size |= (byte & 0x7F) << (7 * i)
                    if not byte & 0x80:
                        width = i + 1
                        break
                if not width or size > MAX_PAYLOAD or (self.strict_varint and byte == 0):
                    break
                stop = pos + width + size
                if size > limit or stop > end:
                    break
                offsets.append(base + pos)
                bodies.append(bytes(view[pos + width:stop]))
                pos = stop
        if bodies:
            self._consume(pos)
        return (offsets[0] if offsets else self.offset), bodies, offsets

    # -- text ------------------------------------------------------------------------------

    def _next_text(self):
        buf, pos = self._buf, self._pos
        end = buf.find(RECORD_SEPARATOR, pos + self._scanned)
        if end < 0:
            self._scanned = len(buf) - pos
            if self._scanned > self.max_size:
                self._fail(LengthError(
                    f"{self._scanned} bytes without a record separator exceed the limit of "
                    f"{self.max_size}", category=Category.LENGTH_TOO_LARGE, protocol=PROTOCOL,
                    offset=self.offset))
            return None
        if end - pos > self.max_size:
            self._fail(LengthError(f"record of {end - pos} bytes exceeds the limit of {self.max_size}",
                                   category=Category.LENGTH_TOO_LARGE, protocol=PROTOCOL,
                                   offset=self.offset))
        start = self._base + pos
        body = bytes(buf[pos:end])
        self._consume(end + 1)
        return start, body

    # -- binary ----------------------------------------------------------------------------

    def _next_binary(self):
        buf, pos = self._buf, self._pos
        first = buf[pos]
        if first < 0x80:                                   # one-byte length: the usual case
            size, width = first, 1
        else:
            got = self._varint(buf, pos)
            if got is None:
                return None
            size, width = got
        if size > self.max_size:
            self._fail(LengthError(f"record length {size} exceeds the limit of {self.max_size}",
                                   category=Category.LENGTH_TOO_LARGE, protocol=PROTOCOL,
                                   offset=self.offset))
        stop = pos + width + size
        if stop > len(buf):
            self._want = stop                  # feed_partial's bound until it is reached
            return None
        start = self._base + pos
        body = bytes(buf[pos + width:stop])
        self._consume(stop)
        return start, body

    def _varint(self, buf, pos) -> Optional[tuple[int, int]]:
        value = shift = 0
        end = len(buf)
        for i in range(MAX_VARINT_BYTES):
            if pos + i >= end:
                return None
            byte = buf[pos + i]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if i == MAX_VARINT_BYTES - 1 and byte > 0x07:
                    self._fail(LengthError(
                        f"VarInt length above {MAX_PAYLOAD} (5th byte 0x{byte:02x})",
                        category=Category.LENGTH_TOO_LARGE, protocol=PROTOCOL, offset=self.offset))
                if self.strict_varint and i > 0 and byte == 0:
                    self._fail(PayloadError(
                        f"non-minimal VarInt length ({i + 1} bytes for {value})",
                        category=Category.BAD_ENCODING, protocol=PROTOCOL, offset=self.offset))
                return value, i + 1
            shift += 7
        self._fail(LengthError(f"VarInt length longer than {MAX_VARINT_BYTES} bytes",
                               category=Category.LENGTH_TOO_LARGE, protocol=PROTOCOL,
                               offset=self.offset))

    # -- buffer ----------------------------------------------------------------------------

    def _consume(self, stop: int) -> None:
        self._pos = stop
        self._scanned = self._want = 0
        if stop == len(self._buf):
            self._base += stop
            self._buf.clear()
            self._pos = 0
        elif stop > _COMPACT and stop * 2 > len(self._buf):
            del self._buf[:stop]
            self._base += stop
            self._pos = 0

    def _fail(self, error: FrameError) -> None:
        self.error = error
        raise error


# --- "Binary encoding over text protocols" ----------------------------------------------------

def encode_text_binary(records: bytes) -> str:
    """Binary records (VarInt-prefixed) as ``Length:Base64;`` for a text-only transport."""
    text = base64.b64encode(records).decode("ascii")
    return f"{len(text)}:{text};"


def decode_text_binary(text: str) -> bytes:
    """The bytes of every ``Length:Base64;`` group of ``text`` (Length counts Base64 characters)."""
    out = bytearray()
    pos = 0
    while pos < len(text):
        colon = text.find(":", pos)
        if colon < 0 or not text[pos:colon].isdigit():
            raise PayloadError("expected a decimal length and ':'", category=Category.BAD_ENCODING,
                               protocol=PROTOCOL, offset=pos)
        size = int(text[pos:colon])
        body_end = colon + 1 + size
        if text[body_end:body_end + 1] != ";":
            raise PayloadError(f"expected {size} Base64 characters then ';'",
                               category=Category.TRUNCATED, protocol=PROTOCOL, offset=colon + 1)
        try:
            out += base64.b64decode(text[colon + 1:body_end], validate=True)
        except (binascii.Error, ValueError):
            raise PayloadError("invalid Base64", category=Category.BAD_ENCODING,
                               protocol=PROTOCOL, offset=colon + 1) from None
        pos = body_end + 1
    return bytes(out)
