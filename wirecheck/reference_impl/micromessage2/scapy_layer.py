"""scapy layers for Micromessage2 (micromessage2.md "Handshake", "Frames").

A direction of a connection starts with handshakes (no flags byte) and goes on with frames:
the client sends its offer and, once the server has answered, its final handshake; the server
sends one handshake, its reply. Three layers:

- :class:`MM2Offer`: the client's first handshake; what follows it is its final handshake;
- :class:`MM2Handshake`: one handshake (the server's reply, or the client's final one); what
  follows it is frames. Fields: ``major``, ``minor``, ``flags`` (reserved), ``identity_len``,
  ``identity``, ``required_len``, ``required``, ``optional_len``, ``optional`` (the lengths
  computed on build);
- :class:`MM2`: one frame: the ``flags`` byte (COMMAND, EXTENSION, ERROR, LARGE_PAYLOAD,
  CONTINUED) and the rest of the frame as Raw; several frames follow each other as layers.

So a client's bytes from the first one dissect as ``MM2Offer(data)``, a server's as
``MM2Handshake(data)``, frames alone (a capture that starts after the handshake) as
``MM2(data)``. In place of a handshake, a first byte the codec reads as an ERROR frame (the peer
refuses, "Handshake") is that frame: the handshake layers then dissect as :class:`MM2`.
``frame(profile)`` reads a layer with the codec; :func:`frames` lists a packet's handshake and
frame layers in order.

Extents are not length prefixes (a MESSAGE has three lengths; a CONTINUED message is several
frames, one layer here): units are cut by the codec's own decoder in one pass (:func:`cut`).
A partial unit at the end of a buffer dissects as Raw; after an unknown flag or a length over
the limit the stream cannot be cut, and the rest stays Raw.

TCP: :meth:`MM2.tcp_reassemble`, scapy ``TCPSession``'s hook, returns nothing until a whole
handshake or frame is there, keeps the rest as Padding, and tracks each direction's handshake
phase in the session dict: the first direction to send is the client's (the handshake "should
be initiated by the client"), with two handshakes; the other direction is the server's, with
one. A capture that starts mid-connection is read from the wrong phase. Only this module
imports scapy.
"""
from __future__ import annotations

from dataclasses import dataclass

from scapy.config import conf
from scapy.fields import ByteField, FieldLenField, FlagsField, StrLenField, XByteField
from scapy.packet import Packet

from ..core.errors import FrameError
from ..core.scapy_frames import frames_of, last_layer
from . import codec
from .constants import DEFAULT_PORT, DOCUMENT_MINOR, MAJOR_VERSION

__all__ = ["MM2", "MM2Handshake", "MM2Offer", "Cut", "cut", "frame_size", "frames", "bind_mm2", "bind_micromessage2"]

#: TCPSession's per-connection dict: a direction whose framing is lost ((key, ident) -> True),
#: the handshakes a direction still has ((key, ident) -> n), the direction that spoke first,
#: and the direction of the last call (TCPSession calls again with the rest of a segment, after
#: clearing the direction's metadata, ident included).
_BROKEN = "mm2_unframed"
_HANDSHAKES = "mm2_handshakes"
_CLIENT = "mm2_client"
_LAST = "mm2_last_ident"


@dataclass(frozen=True)
class Cut:
    """``sizes``: bytes of each whole unit (handshake, or frame: all pieces of a CONTINUED
    message) at the start of the data; ``handshakes``: how many the direction still has after
    them; ``broken``: the next unit can never be cut (a framing error)."""
    sizes: tuple[int, ...]
    handshakes: int
    broken: bool = False

    @property
    def end(self) -> int:
        return sum(self.sizes)


def cut(data: bytes, handshakes: int = 0, max_units: int | None = None) -> Cut:
    """Cut ``data`` into whole units as the codec reads them, ``handshakes`` handshakes first."""
    decoder = codec.Decoder(handshakes=handshakes, strict=False)
    decoder.receive(data)
    sizes: list[int] = []
    end = 0
    while max_units is None or len(sizes) < max_units:
        before = decoder.handshakes
        try:
            unit = decoder.next_frame()
        except FrameError:
            if decoder._error is not None:         # sticky: the unit's extent is unknown
                return Cut(tuple(sizes), before, True)
            unit = True                            # a bad field inside a well-cut unit
        if unit is None:
            return Cut(tuple(sizes), before)
        consumed = len(data) - decoder.buffered
        sizes.append(consumed - end)
        end = consumed
    return Cut(tuple(sizes), decoder.handshakes)


def frame_size(data: bytes, pos: int = 0) -> int | None | bool:
    """Bytes of the frame at ``data[pos]`` (all pieces of a CONTINUED message); None when it is
    not all there yet; False when the stream cannot be cut (a framing error)."""
    got = cut(data[pos:], 0, max_units=1)
    if got.sizes:
        return got.sizes[0]
    return False if got.broken else None


def _read(data: bytes, handshakes: int, profile: str):
    """The codec's reading of one unit (FrameError if it is malformed)."""
    decoder = codec.make_decoder(profile=profile, handshakes=handshakes)
    frames = decoder.feed(data)
    decoder.eof()
    return frames[0]


def _starts_with_error(data: bytes) -> bool:
    """Whether the codec, expecting a handshake, reads the first byte as an ERROR frame's flags
    (the peer refuses instead of answering)."""
    return data[0] in codec.HANDSHAKE_ERROR_FLAGS


class MM2(Packet):
    """One frame ("Frames"); the frames after it are the next layers."""
    name = "Micromessage2"
    fields_desc = [FlagsField("flags", 0, 8, ["COMMAND", "EXTENSION", "ERROR", "LARGE_PAYLOAD",
                                              "CONTINUED", "bit5", "bit6", "bit7"])]

    def frame(self, profile: str = "document"):
        """This frame read by the codec (FrameError if it is malformed)."""
        body = self.payload.load if isinstance(self.payload, conf.raw_layer) else b""
        return _read(bytes((int(self.flags),)) + body, 0, profile)

    def dissect(self, s: bytes) -> None:
        s = self.post_dissect(self.do_dissect(self.pre_dissect(s)))
        data = bytes((int(self.flags),)) + s
        got = cut(data)
        if not got.sizes:                          # cut short, or never cut: Raw
            if s:
                self.add_payload(conf.raw_layer(s, _internal=1, _underlayer=self))
            return
        first = got.sizes[0]
        if first > 1:
            self.add_payload(conf.raw_layer(s[:first - 1], _internal=1, _underlayer=self))
        # The next frames as layers, in a loop (a segment full of frames must not recurse);
        # each dissects its own bytes only. What cannot be cut is one more layer, Raw inside.
        pos, tail = first, self
        for size in got.sizes[1:] + ((len(data) - got.end,) if got.end < len(data) else ()):
            tail = last_layer(tail)
            tail.add_payload(MM2(data[pos:pos + size], _internal=1, _underlayer=tail))
            pos += size

    def mysummary(self) -> str:
        return self.sprintf("Micromessage2 %flags%")

    @classmethod
    def tcp_reassemble(cls, data: bytes, metadata: dict, session: dict):
        """scapy ``TCPSession`` hook (``data``: the direction's unconsumed bytes): None until a
        whole handshake or frame is there; else every whole unit as consecutive layers (from
        the direction's handshake phase on), the incomplete rest as Padding, which
        TCPSession keeps and hands back with the next segment. A framing error leaves the
        direction unframed (the unit as it is now, Raw afterwards)."""
        ident = metadata.get("ident", session.get(_LAST))
        session[_LAST] = ident
        broken = (_BROKEN, ident)
        if session.get(broken):
            return conf.raw_layer(data)
        phase = (_HANDSHAKES, ident)
        left = session.get(phase)
        if left is None:
            # "The handshake should be initiated by the client": the first direction to send
            # is the client's (its offer, then its final handshake), the other the server's.
            left = session[phase] = 2 if session.setdefault(_CLIENT, ident) == ident else 1
        got = cut(data, left)
        if not got.sizes:
            if got.broken:
                session[broken] = True
                return _LAYERS[left](data)
            return None
        session[phase] = got.handshakes
        pkt = _LAYERS[left](data[:got.end])
        if got.end < len(data):
            pkt.add_payload(conf.padding_layer(data[got.end:]))
        return pkt


class MM2Handshake(Packet):
    """One handshake ("Handshake": the server's reply, or the client's final one); frames
    follow it. In place of it, an ERROR frame dissects as :class:`MM2`; a cut one as Raw."""
    name = "Micromessage2 Handshake"
    fields_desc = [
        ByteField("major", MAJOR_VERSION),
        ByteField("minor", DOCUMENT_MINOR),
        XByteField("flags", 0),
        FieldLenField("identity_len", None, length_of="identity", fmt="B"),
        StrLenField("identity", b"", length_from=lambda p: p.identity_len),
        FieldLenField("required_len", None, length_of="required", fmt="H"),
        StrLenField("required", b"", length_from=lambda p: p.required_len),
        FieldLenField("optional_len", None, length_of="optional", fmt="H"),
        StrLenField("optional", b"", length_from=lambda p: p.optional_len),
    ]
    #: Handshakes still to come in this direction after this one (none: frames follow).
    FOLLOWING = 0
    match_subclass = True           # ``MM2Handshake in pkt`` finds an offer too

    @classmethod
    def dispatch_hook(cls, _pkt: bytes | None = None, *args, **kargs):
        # scapy looks dispatch_hook up in each class's own namespace: MM2Offer repeats it.
        if not _pkt:
            return cls
        if _starts_with_error(_pkt):
            return MM2
        return cls if cut(_pkt, 1, max_units=1).sizes else conf.raw_layer

    def guess_payload_class(self, payload: bytes):
        return MM2Handshake if self.FOLLOWING else MM2

    def frame(self, profile: str = "document") -> codec.Handshake:
        """This handshake read by the codec (FrameError if a field is malformed)."""
        return _read(self.self_build(), 1, profile)

    def mysummary(self) -> str:
        return self.sprintf("Micromessage2 Handshake %major%.%minor% %identity% "
                            "required=%required% optional=%optional%")


class MM2Offer(MM2Handshake):
    """The client's first handshake ("Handshake"); its final handshake follows it."""
    name = "Micromessage2 Offer"
    FOLLOWING = 1
    dispatch_hook = MM2Handshake.__dict__["dispatch_hook"]


#: The layer a direction's bytes start with, by the handshakes it still has.
_LAYERS = {2: MM2Offer, 1: MM2Handshake, 0: MM2}


def frames(pkt: Packet) -> list:
    """Every handshake and frame layer of ``pkt``, in order."""
    return frames_of(pkt, (MM2Handshake, MM2))


def bind_mm2(port: int = DEFAULT_PORT) -> None:
    from scapy.layers.inet import TCP
    from scapy.packet import bind_layers
    bind_layers(TCP, MM2, dport=port)
    bind_layers(TCP, MM2, sport=port)


#: the name every other protocol's layer follows (``bind_<protocol id>``)
bind_micromessage2 = bind_mm2

bind_mm2()                          # 8334, the reference broker's port (the document names none)
