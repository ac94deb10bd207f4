"""A receive buffer that stays O(N) whatever the chunking.

One ``bytearray`` plus a read offset. Consuming a frame moves the offset; the consumed prefix
is dropped only when it is both large and more than half of the buffer, so each byte is moved
at most a constant number of times on average (1-byte feeds included). ``peek`` never
consumes, which lets a decoder check a declared length against its limit *before* it waits for
(or buffers) the body.
"""
from __future__ import annotations

import struct

#: Drop the consumed prefix only past this many bytes (and past half the buffer).
COMPACT_THRESHOLD = 64 * 1024


class FrameBuffer:
    __slots__ = ("_buf", "_pos", "_base")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0          # read offset into _buf
        self._base = 0         # absolute stream offset of _buf[0]

    def feed(self, data: bytes | bytearray | memoryview) -> int:
        """Buffer ``data``; returns the bytes buffered and not yet consumed (``len``)."""
        self._buf += data
        return len(self._buf) - self._pos

    def __len__(self) -> int:
        """Bytes buffered and not yet consumed."""
        return len(self._buf) - self._pos

    @property
    def offset(self) -> int:
        """Absolute stream offset of the next unconsumed byte."""
        return self._base + self._pos

    def peek(self, n: int) -> bytes | None:
        """The next ``n`` bytes without consuming them, or None if fewer are buffered."""
        if len(self._buf) - self._pos < n:
            return None
        return bytes(self._buf[self._pos:self._pos + n])

    def byte(self, skip: int = 0) -> int | None:
        """The byte ``skip`` bytes past the read offset, or None if not buffered yet (a flags
        or type byte: no ``bytes`` object built, as ``peek(1)[0]`` would)."""
        at = self._pos + skip
        return self._buf[at] if at < len(self._buf) else None

    def window(self) -> tuple[bytearray, int, int]:
        """``(buffer, read offset into it, absolute stream offset of that byte)``, for a
        decoder that reads a header's fields in place (``st.unpack_from(buffer, pos + k)``,
        ``buffer[pos + k]``) after checking ``len(buffer) - pos``: one call per frame instead
        of one per field (the fuzzers trace every call). Read-only, and valid only until the
        next ``feed``, ``take`` or ``skip``."""
        return self._buf, self._pos, self._base + self._pos

    def unpack(self, st: struct.Struct, skip: int = 0) -> tuple | None:
        """``st`` unpacked at ``skip`` bytes past the read offset, or None if not buffered yet."""
        start = self._pos + skip
        if len(self._buf) - start < st.size:
            return None
        return st.unpack_from(self._buf, start)

    def take(self, n: int, skip: int = 0) -> bytes:
        """Consume ``skip + n`` bytes and return the last ``n`` (a header already read with
        :meth:`unpack` is skipped in the same call); the caller has checked they are there."""
        buf = self._buf
        start = self._pos + skip
        end = start + n
        if end > len(buf):
            raise IndexError("FrameBuffer.take past the end")
        with memoryview(buf) as view:           # one copy; the view is released before compacting
            data = bytes(view[start:end])
        if end == len(buf):
            # All consumed (the usual case once a read's frames are taken): _maybe_compact's
            # first case inline, as a decoder takes every frame through here.
            self._base += end
            buf.clear()
            self._pos = 0
        else:
            self._pos = end
            self._maybe_compact()
        return data

    def skip(self, n: int) -> None:
        self._pos = min(len(self._buf), self._pos + n)
        self._maybe_compact()

    def take_all(self) -> bytes:
        return self.take(len(self))

    def _maybe_compact(self) -> None:
        pos = self._pos
        if pos == len(self._buf):
            self._base += pos
            self._buf.clear()
            self._pos = 0
        elif pos > COMPACT_THRESHOLD and pos * 2 > len(self._buf):
            del self._buf[:pos]
            self._base += pos
            self._pos = 0
