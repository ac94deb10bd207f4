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

    def __iter__(self) -> Iterator:
        while (frame := self.next_frame()) is not None:
            yield frame

    def feed(self, data: bytes) -> list:
        """Buffer ``data`` and return every whole frame; on error, the frames decoded before
        it are on the exception's ``frames``."""
        self.receive(data)
        out: list = []
        try:
            for frame in self:
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
