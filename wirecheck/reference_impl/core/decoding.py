"""What every incremental decoder does on top of its own ``next_frame()``: iterate, feed a
batch (keeping the frames decoded before an error on the error), and check the end of the
stream."""
from __future__ import annotations

from typing import Iterator

from .errors import Category, FrameError, PayloadError
from .framebuffer import COMPACT_THRESHOLD


class IncrementalDecoder:
    """Mixin. The subclass sets ``protocol`` and has ``_buf`` (a FrameBuffer), ``_error`` (the
    sticky stream error or None), ``receive(data)`` and ``next_frame()``."""

    protocol: str = ""
    #: Bytes the frame in hand needs before ``next_frame`` can yield or refuse anything; a
    #: decoder that tracks it (its checks so far read bytes that stay buffered) lets ``feed``
    #: answer a short read at once. 0: not tracked. A decoder that tracks it has the plain
    #: ``receive`` (``_buf.feed(data)`` unless the stream is broken), which ``feed`` then does
    #: itself: with reads of a byte or two, every call saved counts (the fuzzers trace them).
    _frame_need: int = 0

    def __iter__(self) -> Iterator:
        while (frame := self.next_frame()) is not None:
            yield frame

    def feed(self, data: bytes) -> list:
        """Buffer ``data`` and return every whole frame; on error, the frames decoded before
        it are on the exception's ``frames``."""
        need = self._frame_need
        if need and self._error is None:
            if self._buf.feed(data) < need:
                return []              # next_frame would answer None without looking
        else:
            self.receive(data)
        return self._whole_frames()

    def _whole_frames(self) -> list:
        """Every whole frame buffered; on error, the frames before it are on the exception's
        ``frames``."""
        out: list = []
        next_frame = self.next_frame
        try:
            # A plain loop, not ``for frame in self``: a generator per call costs more than the
            # call itself when reads are a byte or two (split-read tests, the fuzzers).
            while (frame := next_frame()) is not None:
                out.append(frame)
        except FrameError as exc:
            exc.frames = out
            raise
        return out

    def eof(self) -> None:
        """The stream ended: leftover bytes are a truncated frame."""
        if self._error is None and len(self._buf):
            raise PayloadError(f"stream ended inside a frame ({len(self._buf)} bytes left)",
                               category=Category.TRUNCATED, protocol=self.protocol,
                               offset=self._buf.offset)


class InPlaceDecoder(IncrementalDecoder):
    """An incremental decoder that keeps its receive buffer itself, as FrameBuffer does (a
    ``bytearray`` ``_data``, a read offset ``_pos`` into it, the stream offset ``_base`` of its
    first byte), so its ``next_frame`` reads each frame in place and consumes it by moving
    ``_pos``: no call into a buffer object per field or frame, which was much of the fuzzers'
    time (they trace every call and branch). The bytes read are dropped on the next
    ``receive``, as FrameBuffer drops them. The subclass calls :meth:`_init_buffer`, keeps
    ``_frame_need`` (at least 1) and ``_error``, and defines ``next_frame``."""

    _error = None
    _frame_need = 1
    #: False: ``next_frame`` yields envelopes, their payloads unparsed (a decoder that has both).
    parse = True

    def _init_buffer(self) -> None:
        self._data = bytearray()
        self._pos = 0           # read offset into _data
        self._base = 0          # stream offset of _data[0]

    @property
    def buffered(self) -> int:
        return len(self._data) - self._pos

    @property
    def consumed(self) -> int:
        """Stream offset just past the bytes read so far: a frame ``next_frame`` returned took
        exactly the bytes this moved by (a Micromessage2 message its CONTINUED pieces too)."""
        return self._base + self._pos

    def receive(self, data: bytes) -> bool:
        """Buffer ``data`` (nothing once the stream is broken); whether ``next_frame`` may now
        yield or raise anything. False: the frame in hand still lacks bytes, and next_frame
        would answer None without looking, so a caller feeding a byte or two at a time (the
        fuzzers) can skip the call."""
        if self._error is None:
            if self._pos:
                self._drop_read()
            buf = self._data
            buf += data
            return len(buf) - self._pos >= self._frame_need
        return True

    def feed(self, data: bytes) -> list:
        """Buffer ``data`` and return every whole frame; on error, the frames decoded before
        it are on the exception's ``frames`` (:meth:`IncrementalDecoder.feed`, over this
        buffer)."""
        if self._error is None:
            if self._pos:
                self._drop_read()
            buf = self._data
            buf += data
            if len(buf) - self._pos < self._frame_need:
                return []              # next_frame would answer None without looking
        return self._whole_frames()

    def next_raw(self):
        """The next whole envelope, None if more bytes are needed: ``next_frame`` of a decoder
        made with ``parse=False`` (a session's, which parses each envelope itself)."""
        if self.parse:
            raise TypeError("next_raw is for a decoder made with parse=False")
        return self.next_frame()

    def eof(self) -> None:
        """The stream ended: leftover bytes are a truncated frame."""
        if self._error is None:
            left = len(self._data) - self._pos
            if left:
                raise PayloadError(f"stream ended inside a frame ({left} bytes left)",
                                   category=Category.TRUNCATED, protocol=self.protocol,
                                   offset=self._base + self._pos)

    def _drop_read(self) -> None:
        """Drop the bytes read, as FrameBuffer does: all of them when nothing else is
        buffered, else only a large prefix that is more than half of the buffer (so each byte
        moves a constant number of times on average, however the stream is cut)."""
        pos, data = self._pos, self._data
        if pos == len(data):
            self._base += pos
            data.clear()
            self._pos = 0
        elif pos > COMPACT_THRESHOLD and pos * 2 > len(data):
            del data[:pos]
            self._base += pos
            self._pos = 0


def decode_all(decoder: IncrementalDecoder, data: bytes) -> list:
    """Every frame of a complete byte string; the first error (a trailing partial frame
    included) raises with ``frames``."""
    frames = decoder.feed(data)
    try:
        decoder.eof()
    except FrameError as exc:
        exc.frames = frames
        raise
    return frames
