"""One case's bytes out and its answers in, whatever carries them (fuzz/live/fuzzer.py over raw TCP,
fuzz/live/websocket.py over WebSocket): the writes of the case, then the answers read until the
target closes, stays quiet, or a time or size limit is reached."""
from __future__ import annotations

import time

from wirecheck.reference_impl.core.errors import FrameError


def send_pieces(out, data: bytes, writes: list[int], write) -> None:
    """``write`` each piece of ``data`` (``writes``: their sizes); a write refused by a target
    that closed on an early frame ends the sending, noted in ``out.send_error``."""
    pos = 0
    for size in writes:
        try:
            write(data[pos:pos + size])
        except OSError as exc:
            out.send_error = f"write failed after {pos} bytes: {exc.strerror or exc}"
            return
        pos += size


def read_answers(out, decoder, read, quiet: float, timeout: float, max_bytes: int,
                 broken: tuple = ()) -> None:
    """Fill ``out`` (live.Outcome) from ``read(wait)``: bytes, None when nothing came within
    ``wait`` (quiet: the connection stays open), b"" at the end. A reset ends as "rst"; an
    exception of ``broken`` (a transport's own framing broken) is a violation."""
    deadline, total = time.monotonic() + timeout, 0
    while True:
        left = min(quiet, deadline - time.monotonic())
        if left <= 0:
            out.ended = "limit"
            return
        try:
            chunk = read(left)
        except ConnectionResetError:
            out.ended = "rst"
            return
        except broken as exc:
            out.violation = f"transport: {exc}"
            return
        if chunk is None:
            return
        if not chunk:
            out.ended = "fin"
            return
        total += len(chunk)
        if not out.violation:
            try:
                out.answers.extend(decoder.feed(chunk))
            except FrameError as exc:
                out.answers.extend(exc.frames)
                out.violation = f"{exc.category}: {exc}"
        if total >= max_bytes:
            out.ended = "limit"
            return
