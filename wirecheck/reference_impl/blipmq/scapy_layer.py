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

from scapy.fields import (ByteEnumField, ByteField, FieldLenField, IntField, LongField,
                          ShortEnumField, ShortField, StrField, StrLenField)
from scapy.layers.inet import TCP
from scapy.packet import Packet, bind_layers

from ..core.scapy_frames import PrefixedFrame, frames_of

from .broker import DEFAULT_PORT
from .codec import HEADER_SIZE, MAX_FRAME_SIZE, MIN_FRAME_LENGTH, FrameType, NackCode

__all__ = ["BlipMQ", "BlipHello", "BlipAuth", "BlipPublish", "BlipSubscribe", "BlipAck",
           "BlipNack", "BlipPoll", "frames", "bind_blipmq"]

_FRAME_TYPES = {int(t): t.name for t in FrameType}
_NACK_CODES = {int(c): c.name for c in NackCode}
#: Key in TCPSession's per-connection dict marking a direction whose framing is lost.
_BROKEN = "blipmq_unframed"


class BlipMQ(PrefixedFrame, Packet):
    """The envelope: ``[u32 length][u8 frame_type][u64 correlation_id]`` ("Frame Layout")."""
    name = "BlipMQ"
    LENGTH_FIELD = "length"
    MIN_LENGTH, MAX_LENGTH = MIN_FRAME_LENGTH, MAX_FRAME_SIZE
    HEADER_SIZE = HEADER_SIZE
    BROKEN_KEY = _BROKEN
    fields_desc = [
        IntField("length", None),                       # type + correlation id + payload
        ByteEnumField("frame_type", FrameType.PING.value, _FRAME_TYPES),
        LongField("correlation_id", 0),
    ]

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
    """Every BlipMQ layer of ``pkt``, in order."""
    return frames_of(pkt, BlipMQ)


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
