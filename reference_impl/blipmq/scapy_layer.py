"""scapy layers for BlipMQ (blipmq-protocol.md, "Frame Layout" and "Payload Formats").

``BlipMQ`` is the envelope (``length``, ``frame_type``, ``correlation_id``); the payload is one
``Blip*`` layer chosen by ``frame_type`` (PING and PONG have none). Several frames in one
buffer or TCP segment (pipelining, "Backpressure & Batching Behavior") dissect as consecutive
layers: ``BlipMQ / BlipPublish / BlipMQ / BlipAck / ...``; :func:`frames` lists them.

Build::

    BlipMQ(correlation_id=4) / BlipPublish(qos=1, topic=b"demo", message=b"hi")

``length`` and the ``*_len`` fields are computed on build; ``frame_type`` follows the payload
layer. Reassembly of captures goes through scapy's ``TCPSession`` and
:meth:`BlipMQ.tcp_reassemble`. Only this module imports scapy; the registry imports it lazily.
"""
from __future__ import annotations

import struct

from scapy.config import conf
from scapy.fields import (ByteEnumField, ByteField, FieldLenField, IntField, LongField,
                          ShortEnumField, ShortField, StrField, StrLenField)
from scapy.layers.inet import TCP
from scapy.packet import NoPayload, Packet, bind_layers

from .broker import DEFAULT_PORT
from .codec import HEADER_SIZE, MAX_FRAME_SIZE, MIN_FRAME_LENGTH, FrameType, NackCode

__all__ = ["BlipMQ", "BlipHello", "BlipAuth", "BlipPublish", "BlipSubscribe", "BlipAck",
           "BlipNack", "BlipPoll", "frames", "bind_blipmq"]

_LEN = struct.Struct(">I")
_FRAME_TYPES = {int(t): t.name for t in FrameType}
_NACK_CODES = {int(c): c.name for c in NackCode}
#: Key in TCPSession's per-connection dict marking a direction whose framing is lost.
_BROKEN = "blipmq_unframed"


def _frame_size(data: bytes, pos: int) -> int | None:
    """Size of the frame starting at ``data[pos]`` (prefix included), or None if its length
    prefix is missing or out of the document's bounds (the stream cannot be cut further)."""
    if len(data) - pos < _LEN.size:
        return None
    (length,) = _LEN.unpack_from(data, pos)
    if not MIN_FRAME_LENGTH <= length <= MAX_FRAME_SIZE:
        return None
    return _LEN.size + length


def _last_layer(layer: Packet) -> Packet:
    while not isinstance(layer.payload, NoPayload):
        layer = layer.payload
    return layer


class BlipMQ(Packet):
    """The envelope: ``[u32 length][u8 frame_type][u64 correlation_id]`` ("Frame Layout")."""
    name = "BlipMQ"
    fields_desc = [
        IntField("length", None),                       # type + correlation id + payload
        ByteEnumField("frame_type", FrameType.PING.value, _FRAME_TYPES),
        LongField("correlation_id", 0),
    ]

    # -- building --------------------------------------------------------------------------

    def _body_len(self) -> int:
        """Bytes of this frame's payload: the layers up to the next frame, built alone (the
        ``pay`` handed to post_build also holds every following frame)."""
        size = 0
        layer = self.payload
        while not isinstance(layer, (NoPayload, BlipMQ)):
            size += len(layer.self_build())
            layer = layer.payload
        return size

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        if self.length is None:
            pkt = _LEN.pack(len(pkt) - _LEN.size + self._body_len()) + pkt[_LEN.size:]
        return pkt + pay

    # -- dissecting ------------------------------------------------------------------------

    def _declared_body(self) -> int | None:
        if self.length is None or not MIN_FRAME_LENGTH <= self.length <= MAX_FRAME_SIZE:
            return None
        return self.length - MIN_FRAME_LENGTH

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        """This frame's payload, and what follows it (the next frames). With a length out of
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
        # Packet.dissect, except that the bytes after this frame are the next frames, not
        # padding. They are cut by their length prefixes here, in a loop, so each following
        # BlipMQ dissects exactly one frame and a segment full of frames does not recurse.
        s = self.post_dissect(self.do_dissect(self.pre_dissect(s)))
        body, rest = self.extract_padding(s)
        self.do_dissect_payload(body)
        tail, pos = self, 0
        while pos < len(rest):
            piece = rest[pos:pos + (_frame_size(rest, pos) or len(rest))]
            tail = _last_layer(tail)
            # A piece shorter than a header cannot be dissected as a frame: Raw (as a failed
            # dissection of a payload would be).
            cls = BlipMQ if len(piece) >= HEADER_SIZE else conf.raw_layer
            tail.add_payload(cls(piece, _internal=1, _underlayer=tail))
            pos += len(piece)

    @classmethod
    def tcp_reassemble(cls, data: bytes, metadata: dict, session: dict):
        """scapy ``TCPSession`` hook (scapy/sessions.py): ``data`` is the direction's
        unconsumed bytes. Returns None until a whole frame is there, else every whole frame
        as consecutive layers, with the incomplete rest as Padding, which TCPSession keeps
        and hands back with the next segment."""
        broken = (_BROKEN, metadata.get("ident"))
        if session.get(broken):
            return conf.raw_layer(data)
        end = 0
        while (size := _frame_size(data, end)) is not None and len(data) - end >= size:
            end += size
        if end == 0:
            bad_length = len(data) >= _LEN.size and _frame_size(data, 0) is None
            if bad_length and len(data) >= HEADER_SIZE:
                # The server closes the connection ("Frame Layout"): show the frame as it
                # is, and from now on everything in this direction as Raw.
                session[broken] = True
                return cls(data)
            # Need more: tell TCPSession not to call again before the frame (or, after a
            # bad length, its header) can be whole.
            metadata["tcp_min_len"] = HEADER_SIZE if bad_length else (
                _frame_size(data, 0) or _LEN.size)
            return None
        pkt = cls(data[:end])
        if end < len(data):
            pkt.add_payload(conf.padding_layer(data[end:]))
        return pkt

    # -- display and matching --------------------------------------------------------------

    def mysummary(self) -> str:
        return self.sprintf("BlipMQ %frame_type% cid=%correlation_id%")

    def hashret(self) -> bytes:
        return struct.pack(">Q", self.correlation_id or 0)

    def answers(self, other) -> bool:
        # Responses echo the request's correlation id ("Frame Layout").
        return (isinstance(other, BlipMQ) and other.correlation_id == self.correlation_id
                and self.frame_type in (FrameType.ACK, FrameType.NACK, FrameType.PONG,
                                        FrameType.PUBLISH))


def frames(pkt: Packet) -> list[BlipMQ]:
    """Every BlipMQ layer of ``pkt``, in order (iterative: chains can be long)."""
    out, layer = [], pkt
    while not isinstance(layer, NoPayload):
        if isinstance(layer, BlipMQ):
            out.append(layer)
        layer = layer.payload
    return out


# -- payloads ("Payload Formats"; field names as in the codec) -------------------------------

class BlipHello(Packet):
    name = "BlipMQ HELLO"
    fields_desc = [ShortField("protocol_version", 1)]


class BlipAuth(Packet):
    name = "BlipMQ AUTH"
    fields_desc = [
        FieldLenField("key_len", None, length_of="key", fmt="H"),
        StrLenField("key", b"", length_from=lambda p: p.key_len),
    ]


class BlipPublish(Packet):
    name = "BlipMQ PUBLISH"
    fields_desc = [
        ByteField("qos", 0),
        FieldLenField("topic_len", None, length_of="topic", fmt="H"),
        StrLenField("topic", b"", length_from=lambda p: p.topic_len),
        StrField("message", b""),                       # the rest of the frame
    ]


class BlipSubscribe(Packet):
    name = "BlipMQ SUBSCRIBE"
    fields_desc = [
        FieldLenField("topic_len", None, length_of="topic", fmt="H"),
        StrLenField("topic", b"", length_from=lambda p: p.topic_len),
        ByteField("qos", 0),
    ]


class BlipAck(Packet):
    name = "BlipMQ ACK"
    fields_desc = [LongField("subscription_id", 0)]


class BlipPoll(Packet):
    name = "BlipMQ POLL"
    fields_desc = [LongField("subscription_id", 0)]


class BlipNack(Packet):
    name = "BlipMQ NACK"
    fields_desc = [
        ShortEnumField("code", NackCode.BAD_REQUEST.value, _NACK_CODES),
        FieldLenField("message_len", None, length_of="message", fmt="H"),
        StrLenField("message", b"", length_from=lambda p: p.message_len),
    ]


# -- bindings --------------------------------------------------------------------------------

for _type, _layer in ((FrameType.HELLO, BlipHello), (FrameType.AUTH, BlipAuth),
                      (FrameType.PUBLISH, BlipPublish), (FrameType.SUBSCRIBE, BlipSubscribe),
                      (FrameType.ACK, BlipAck), (FrameType.NACK, BlipNack),
                      (FrameType.POLL, BlipPoll)):
    bind_layers(BlipMQ, _layer, frame_type=int(_type))


def bind_blipmq(port: int) -> None:
    """Dissect TCP traffic to or from ``port`` as BlipMQ. ``dport`` is bound last, so
    ``TCP() / BlipMQ()`` builds a client-to-server segment."""
    bind_layers(TCP, BlipMQ, sport=port)
    bind_layers(TCP, BlipMQ, dport=port)


bind_layers(TCP, BlipMQ, sport=DEFAULT_PORT)    # 5555, the daemon's default port
bind_layers(TCP, BlipMQ, dport=DEFAULT_PORT)
