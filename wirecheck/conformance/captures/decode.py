"""``wirecheck decode --protocol P --pcap FILE``: every frame of every TCP conversation of a
capture, one JSON line each (DESIGN.md "Command line").

The capture is read segment by segment (conformance/captures/pcapfile.py: pcap or pcapng, never
loaded whole). Each direction of each TCP connection (``src:port -> dst:port``) is put back
in sequence order by conformance/captures/tcpflows.py, and the in-order bytes go to that direction's
own ``spec.capture_decoder()``. Lines::

    {"flow": "10.0.0.1:40000->10.0.0.2:5555", "direction": "c2s", "time": 1.5, **frame_to_dict}
    {"flow": ..., "direction": ..., "time": ..., "error": ..., "category": ..., "protocol": ...,
     "offset": ...}

``time`` is the capture timestamp of the segment that completed the frame; ``offset`` counts
from the first byte of that direction. A ``FrameError`` ends the decoding of its direction
when the decoder cannot go past it (a stream error: a bad length, a broken
envelope); after a payload error (a whole frame whose content is wrong) decoding goes on with
the next frame. Two conditions that are not frame errors get categories of their own:
``CAPTURE_GAP`` (bytes missing from the capture: the rest of that direction cannot be framed)
and the decoder's ``TRUNCATED`` when a direction ends (FIN, RST, end of capture) inside a frame.
Exit status: 1 if any error line was printed, else 0.
"""
from __future__ import annotations

import json
import sys
from typing import Iterable, TextIO

from wirecheck.conformance.captures.pcapfile import CaptureFormatError, PcapReader
from wirecheck.conformance.captures.tcpflows import Connection, Stream, TcpReassembler
from wirecheck.reference_impl.core.errors import FrameError

EXIT_OK, EXIT_ERRORS, EXIT_HARNESS = 0, 1, 2
GAP = "CAPTURE_GAP"


def is_broken(decoder) -> bool:
    """The decoder's stream error is sticky: nothing more of this direction can be framed."""
    broken = getattr(decoder, "broken", None)
    if broken is not None:
        return bool(broken)
    return getattr(decoder, "_error", None) is not None


def feed_items(decoder, data: bytes) -> tuple[list, bool]:
    """Feed ``data``: its frames and :class:`FrameError` objects in stream order, and whether the
    direction has ended (a stream error, or an error the decoder does not get past). A
    payload error (a frame cut out whole whose content is wrong: the two-stage decoders'
    per-request errors, an unknown SignalR message type) leaves the decoder able to go on, so
    the frames after it are decoded too."""
    items: list = []
    while True:
        before = decoder.buffered
        try:
            items += decoder.feed(data)
            return items, False
        except FrameError as exc:
            items += exc.frames
            items.append(exc)
            if is_broken(decoder) or (not data and decoder.buffered >= before):
                return items, True
            data = b""


def feed_sized(decoder, data: bytes, start: int) -> tuple[list, list[int], bool, int]:
    """:func:`feed_items` frame by frame, for a decoder with ``consumed`` (the stream offset
    past what it read: core/decoding.py): also each item's size, the bytes it took from the
    stream, whichever reads they came in. ``start``: where the item before ended (0 at first);
    bytes read without an item yet (a Micromessage2 message's CONTINUED pieces) count for the
    item that completes them. An error's size is what it consumed (often 0). Returns the
    items, their sizes, whether the direction ended, and where the last item ended (the next
    call's ``start``)."""
    items: list = []
    sizes: list[int] = []
    decoder.receive(data)
    next_frame = decoder.next_frame
    while True:
        before = decoder.consumed
        try:
            frame = next_frame()
        except FrameError as exc:
            items.append(exc)
            sizes.append(decoder.consumed - start)
            start = decoder.consumed
            if is_broken(decoder) or decoder.consumed == before:
                return items, sizes, True, start
            continue
        if frame is None:
            return items, sizes, False, start
        items.append(frame)
        sizes.append(decoder.consumed - start)
        start = decoder.consumed


def capture_ports(spec, ports: Iterable[int] = ()) -> set[int]:
    """The ports whose TCP conversations are ``spec``'s: its well-known ones plus ``ports``."""
    return {spec.default_port, *spec.extra_ports, *ports}


class PcapDecoder:
    """A reassembly sink that decodes each direction and writes JSON lines to ``out``."""

    def __init__(self, spec, ports: Iterable[int] = (), out: TextIO | None = None,
                 profile: str | None = None) -> None:
        self.spec = spec
        self.profile = profile
        self.out = out if out is not None else sys.stdout
        self.errors = 0
        self.reassembler = TcpReassembler(self, capture_ports(spec, ports))

    def _emit(self, s: Stream, time: float, body: dict) -> None:
        line = {"flow": s.name, "direction": s.direction, "time": time, **body}
        self.out.write(json.dumps(line) + "\n")

    def _error(self, s: Stream, time: float, body: dict) -> None:
        self._emit(s, time, body)
        self.errors += 1
        s.done = True

    # -- reassembly sink --------------------------------------------------------------------

    def opened(self, conn: Connection, time: float) -> None:
        for direction, s in conn.streams.items():
            origin = "client" if direction == "c2s" else "server"
            conn.user[direction] = self.spec.capture_decoder(origin=origin, profile=self.profile)

    def data(self, s: Stream, data: bytes, time: float) -> None:
        items, ended = feed_items(s.conn.user[s.direction], data)
        for item in items:
            if isinstance(item, FrameError):
                self._emit(s, time, item.as_dict())
                self.errors += 1
            else:
                self._emit(s, time, self.spec.frame_to_dict(item))
        if ended:
            s.done = True

    def ended(self, s: Stream, time: float, how: str, missing) -> None:
        if s.done:
            return
        if missing is not None:
            self._error(s, time, {"error": f"capture lacks bytes {missing[0]}..{missing[1]} of "
                                           "this direction", "category": GAP,
                                  "protocol": self.spec.id, "offset": missing[0]})
            return
        try:
            # a decoder may complete a last frame at the end (an HTTP response read to EOF)
            frames = s.conn.user[s.direction].eof() or []
        except FrameError as exc:
            self._error(s, time, exc.as_dict())
            return
        for frame in frames:
            self._emit(s, time, self.spec.frame_to_dict(frame))
        s.done = True

    # -- input ------------------------------------------------------------------------------

    def segment(self, seg) -> None:
        self.reassembler.segment(seg)

    def close(self, time: float) -> int:
        """End of capture: directions still open end here."""
        self.reassembler.close(time)
        self.out.flush()
        return EXIT_ERRORS if self.errors else EXIT_OK


def decode_pcap(spec, path: str, ports: Iterable[int] = (), out: TextIO | None = None,
                profile: str | None = None) -> int:
    """Decode every ``spec`` conversation of the capture at ``path`` (TCP to or from
    ``spec.default_port`` or one of ``ports``); JSON lines on ``out``; exit status."""
    decoder = PcapDecoder(spec, ports, out, profile)
    last_time = 0.0
    try:
        reader = PcapReader(path, tolerant=True)
    except (OSError, CaptureFormatError) as exc:
        print(f"wirecheck decode: cannot read {path}: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    with reader:
        for seg in reader:
            last_time = seg.time
            decoder.segment(seg)
    if reader.damage:
        # what came before the break is decoded (a capture cut by a killed tcpdump)
        print(f"wirecheck decode: {path}: {reader.damage}: read up to there, the rest is lost",
              file=sys.stderr)
    return decoder.close(last_time)
