"""What every length-prefixed envelope layer does in scapy (imported only by scapy layers).

An envelope starts with a u32 length field whose value is bounded; the bytes after one frame
are the next frames (pipelining), not padding. :class:`PrefixedFrame` is a mixin for the
protocol's envelope ``Packet``: it computes the length on build, cuts a buffer into consecutive
frames on dissection (in a loop, so a segment full of frames does not recurse), and reassembles
TCP streams for scapy's ``TCPSession`` (nothing until a whole frame is there; the rest kept).
"""
from __future__ import annotations

import struct

from scapy.config import conf
from scapy.packet import NoPayload, Packet

_LEN = struct.Struct(">I")


class PrefixedFrame:
    """Mixin placed before ``Packet``. The subclass sets the class attributes below."""

    LENGTH_FIELD = "length"     # name of the u32 length field (first field of fields_desc)
    MIN_LENGTH = 0              # bounds of the length field's value (the document's)
    MAX_LENGTH = 0
    HEADER_SIZE = 4             # bytes of the envelope, length field included
    BROKEN_KEY = "unframed"     # TCPSession per-connection key: this direction lost its framing

    # -- cutting ---------------------------------------------------------------------------

    @classmethod
    def frame_size(cls, data: bytes, pos: int) -> int | None:
        """Size of the frame at ``data[pos]`` (prefix included), or None if its length prefix
        is missing or out of bounds (the stream cannot be cut further)."""
        if len(data) - pos < _LEN.size:
            return None
        (length,) = _LEN.unpack_from(data, pos)
        if not cls.MIN_LENGTH <= length <= cls.MAX_LENGTH:
            return None
        return _LEN.size + length

    def _length(self) -> int | None:
        return getattr(self, self.LENGTH_FIELD)

    # -- building --------------------------------------------------------------------------

    def _body_len(self) -> int:
        """Bytes of this frame's body: the layers up to the next frame, built alone (the
        ``pay`` handed to post_build also holds every following frame)."""
        size = 0
        layer = self.payload
        while not isinstance(layer, (NoPayload, PrefixedFrame)):
            size += len(layer.self_build())
            layer = layer.payload
        return size

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        if self._length() is None:
            pkt = _LEN.pack(len(pkt) - _LEN.size + self._body_len()) + pkt[_LEN.size:]
        return pkt + pay

    # -- dissecting ------------------------------------------------------------------------

    def _declared_body(self) -> int | None:
        length = self._length()
        if length is None or not self.MIN_LENGTH <= length <= self.MAX_LENGTH:
            return None
        return length - (self.HEADER_SIZE - _LEN.size)

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        """This frame's body, and what follows it (the next frames). With a length out of
        bounds the stream cannot be cut: everything left stays with this frame, as Raw."""
        n = self._declared_body()
        if n is None:
            return s, b""
        return s[:n], s[n:]

    def guess_payload_class(self, payload: bytes):
        if self._declared_body() is None:
            return conf.raw_layer
        return super().guess_payload_class(payload)

    def dissect(self, s: bytes) -> None:
        # Packet.dissect, except that the bytes after this frame are the next frames.
        s = self.post_dissect(self.do_dissect(self.pre_dissect(s)))
        body, rest = self.extract_padding(s)
        self.do_dissect_payload(body)
        tail, pos = self, 0
        cls = type(self)
        while pos < len(rest):
            piece = rest[pos:pos + (cls.frame_size(rest, pos) or len(rest))]
            tail = last_layer(tail)
            # A piece shorter than a header cannot be dissected as a frame: Raw (as a failed
            # dissection of a payload would be).
            layer = cls if len(piece) >= cls.HEADER_SIZE else conf.raw_layer
            tail.add_payload(layer(piece, _internal=1, _underlayer=tail))
            pos += len(piece)

    @classmethod
    def tcp_reassemble(cls, data: bytes, metadata: dict, session: dict):
        """scapy ``TCPSession`` hook (scapy/sessions.py): ``data`` is the direction's
        unconsumed bytes. Returns None until a whole frame is there, else every whole frame
        as consecutive layers, with the incomplete rest as Padding, which TCPSession keeps
        and hands back with the next segment."""
        broken = (cls.BROKEN_KEY, metadata.get("ident"))
        if session.get(broken):
            return conf.raw_layer(data)
        end = 0
        while (size := cls.frame_size(data, end)) is not None and len(data) - end >= size:
            end += size
        if end == 0:
            bad_length = len(data) >= _LEN.size and cls.frame_size(data, 0) is None
            if bad_length and len(data) >= cls.HEADER_SIZE:
                # The peer closes the connection on a bad length: show the frame as it is,
                # and from now on everything in this direction as Raw.
                session[broken] = True
                return cls(data)
            # Need more: tell TCPSession not to call again before the frame (or, after a
            # bad length, its header) can be whole.
            metadata["tcp_min_len"] = cls.HEADER_SIZE if bad_length else (
                cls.frame_size(data, 0) or _LEN.size)
            return None
        pkt = cls(data[:end])
        if end < len(data):
            pkt.add_payload(conf.padding_layer(data[end:]))
        return pkt


def last_layer(layer: Packet) -> Packet:
    while not isinstance(layer.payload, NoPayload):
        layer = layer.payload
    return layer


def frames_of(pkt: Packet, envelope: type) -> list:
    """Every ``envelope`` layer of ``pkt``, in order (iterative: chains can be long)."""
    out, layer = [], pkt
    while not isinstance(layer, NoPayload):
        if isinstance(layer, envelope):
            out.append(layer)
        layer = layer.payload
    return out
