"""What every incremental decoder does on top of its own ``next_frame()``: iterate, feed a
batch (keeping the frames decoded before an error on the error), and check the end of the
stream."""
from __future__ import annotations

from typing import Iterator

from .errors import Category, FrameError, PayloadError


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
