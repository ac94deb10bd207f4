"""A scapy layer for Micromessage2 frames after the handshake (micromessage2.md "Frames").

:class:`MM2` is one frame: the ``flags`` byte (COMMAND, EXTENSION, ERROR, LARGE_PAYLOAD,
CONTINUED) and the rest of the frame as its payload; ``frame()`` reads it with the codec. The
frame's extent is not a length prefix (it depends on the flags: a MESSAGE has three lengths),
so frames are cut by the codec's own decoder (:func:`frame_size`); a CONTINUED message's
pieces are one layer. Several frames in a buffer dissect as consecutive layers, a partial one
as Padding (:meth:`MM2.tcp_reassemble`); after an unknown flag or a length over the limit a
direction is left unframed (Raw). Handshakes are not dissected: a capture's first bytes in
each direction are the handshake, which this layer does not tell from frames (see README,
"Status"). Only this module imports scapy.
"""
from __future__ import annotations

from scapy.config import conf
from scapy.fields import FlagsField
from scapy.packet import Packet

from ..core.errors import FrameError
from ..core.scapy_frames import PrefixedFrame, last_layer
from . import codec
from .constants import DEFAULT_PORT

__all__ = ["MM2", "frame_size", "bind_mm2"]

_BROKEN = "mm2_unframed"


def frame_size(data: bytes, pos: int = 0) -> int | None | bool:
    """Bytes of the frame at ``data[pos]`` (all pieces of a CONTINUED message); None when it is
    not all there yet; False when the stream cannot be cut (a framing error)."""
    decoder = codec.Decoder(handshakes=0, strict=False)
    decoder.receive(data[pos:])
    try:
        frame = decoder.next_frame()
    except FrameError:
        if decoder._error is not None:          # sticky: the frame's extent is unknown
            return False
        frame = True                            # a bad field inside a well-cut frame
    if frame is None:
        return None
    return len(data) - pos - decoder.buffered


class MM2(PrefixedFrame, Packet):
    name = "Micromessage2"
    HEADER_SIZE = 1
    BROKEN_KEY = _BROKEN
    fields_desc = [FlagsField("flags", 0, 8, ["COMMAND", "EXTENSION", "ERROR", "LARGE_PAYLOAD",
                                              "CONTINUED", "bit5", "bit6", "bit7"])]

    @classmethod
    def frame_size(cls, data: bytes, pos: int) -> int | None:
        size = frame_size(data, pos)
        return size if isinstance(size, int) and not isinstance(size, bool) else None

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        return pkt + pay

    def _declared_body(self):
        return None

    def frame(self, profile: str = "document"):
        """This frame read by the codec (FrameError if it is malformed)."""
        body = self.payload.load if isinstance(self.payload, conf.raw_layer) else b""
        return codec.decode_all(bytes((int(self.flags),)) + body, profile=profile)[0]

    def dissect(self, s: bytes) -> None:
        s = self.post_dissect(self.do_dissect(self.pre_dissect(s)))
        size = frame_size(bytes((int(self.flags),)) + s, 0)
        if not isinstance(size, int) or isinstance(size, bool):
            self.add_payload(conf.raw_layer(s, _internal=1, _underlayer=self))
            return
        body, rest = s[:size - 1], s[size - 1:]
        if body:
            self.add_payload(conf.raw_layer(body, _internal=1, _underlayer=self))
        pos, tail = 0, self
        while pos < len(rest):
            n = frame_size(rest, pos)
            n = n if isinstance(n, int) and not isinstance(n, bool) else len(rest) - pos
            tail = last_layer(tail)
            tail.add_payload(MM2(rest[pos:pos + n], _internal=1, _underlayer=tail))
            pos += n

    @classmethod
    def tcp_reassemble(cls, data: bytes, metadata: dict, session: dict):
        """scapy ``TCPSession`` hook: None until a whole frame is there; whole frames as
        consecutive layers, the partial rest as Padding; a framing error leaves the
        direction unframed (the frame as it is now, Raw afterwards)."""
        broken = (_BROKEN, metadata.get("ident"))
        if session.get(broken):
            return conf.raw_layer(data)
        end = 0
        while end < len(data):
            size = frame_size(data, end)
            if size is None:
                break
            if size is False:
                if end == 0:
                    session[broken] = True
                    return cls(data)
                break
            end += size
        if end == 0:
            return None
        pkt = cls(data[:end])
        if end < len(data):
            pkt.add_payload(conf.padding_layer(data[end:]))
        return pkt


def bind_mm2(port: int = DEFAULT_PORT) -> None:
    from scapy.layers.inet import TCP
    from scapy.packet import bind_layers
    bind_layers(TCP, MM2, dport=port)
    bind_layers(TCP, MM2, sport=port)
