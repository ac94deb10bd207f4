"""scapy layers for VibeMQ (vibemq-protocol.rst "Framing", "Compression Flags Byte", "Binary
Protocol Structure"; SPEC_NOTES.md "VibeMQ").

``VibeMQ`` is the frame: ``length`` (u32, the body's bytes: the flags byte is *not* counted) and
``flags`` (compression). An uncompressed body is a :class:`VibeMQMessage` layer: ``version``,
``type``, ``message_id``, ``queue``, ``json_payload`` (the JSON text, as bytes), ``headers``
(a list of :class:`VibeMQHeader` name/value layers) and the two error strings, None when the
body ends before them (the real codec writes them only in Error; SPEC_NOTES.md) and ``b""``
when present but empty. A compressed body (GZip, Brotli) stays Raw: :func:`message` inflates
and reads it with the codec. Field names are the codec's but ``message_id`` and
``json_payload``: scapy reserves ``id`` and ``payload``. Several frames in one buffer or TCP
segment dissect as consecutive layers (``VibeMQ / VibeMQMessage / VibeMQ / Raw / ...``);
:func:`frames` lists them.

Build::

    VibeMQ() / VibeMQMessage(type="PUBLISH", message_id=b"m1", queue=b"q", json_payload=b'{"a":1}')

``length`` and every length and count are computed on build. Protocol 1.0 framing (no flags
byte) is not dissected: captures of it need the codec with profile ``vibemq-1.0``.

TCP reassembly goes through scapy's ``TCPSession`` and :meth:`VibeMQ.tcp_reassemble`, the
shared :class:`PrefixedFrame` mixin's; its hooks are adapted for a 5-byte header whose length
leaves the flags byte out (:meth:`VibeMQ.frame_size`). Only this module imports scapy; the
registry imports it lazily.
"""
from __future__ import annotations

import struct

from scapy.fields import (ByteEnumField, ByteField, FieldLenField, IntField, PacketListField,
                          StrLenField)
from scapy.layers.inet import TCP
from scapy.packet import Packet, bind_layers

from ..core.scapy_frames import PrefixedFrame, frames_of
from . import codec
from . import compression as comp
from .constants import DEFAULT_MAX_BODY, DEFAULT_PORT, HEADER_SIZE, MIN_BODY, CommandType, Compression

__all__ = ["VibeMQ", "VibeMQMessage", "VibeMQHeader", "frames", "message", "bind_vibemq",
           "HEADER_SIZE"]

_TYPES = {int(t): t.name for t in CommandType}
_FLAGS = {int(c): c.name for c in Compression}
_LEN = struct.Struct(">I")
#: Key in TCPSession's per-connection dict marking a direction whose framing is lost.
_BROKEN = "vibemq_unframed"


class VibeMQ(PrefixedFrame, Packet):
    """The frame: ``[u32 body length][u8 compression flags][body]`` ("Frame Format")."""
    name = "VibeMQ"
    LENGTH_FIELD = "length"
    MIN_LENGTH, MAX_LENGTH = MIN_BODY, DEFAULT_MAX_BODY
    HEADER_SIZE = HEADER_SIZE
    BROKEN_KEY = _BROKEN
    fields_desc = [IntField("length", None), ByteEnumField("flags", 0, _FLAGS)]

    # -- the mixin's hooks, for a length that leaves the flags byte out -----------------------

    @classmethod
    def frame_size(cls, data: bytes, pos: int) -> int | None:
        """Bytes of the frame at ``data[pos]``: the 5-byte header and ``length`` body bytes;
        None for a length out of bounds. Before the 4 length bytes are there, the header size:
        a lower bound (no frame is shorter), so TCPSession waits for at least the header."""
        if len(data) - pos < _LEN.size:
            return cls.HEADER_SIZE
        (length,) = _LEN.unpack_from(data, pos)
        if not cls.MIN_LENGTH <= length <= cls.MAX_LENGTH:
            return None
        return cls.HEADER_SIZE + length

    def _declared_body(self) -> int | None:
        length = self.length
        if length is None or not self.MIN_LENGTH <= length <= self.MAX_LENGTH:
            return None
        return length

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        if self.length is None:
            pkt = _LEN.pack(len(pkt) - self.HEADER_SIZE + self._body_len()) + pkt[_LEN.size:]
        return pkt + pay

    # -- display -------------------------------------------------------------------------------

    def mysummary(self) -> str:
        return self.sprintf("VibeMQ %flags% len=%length%")


class VibeMQHeader(Packet):
    """One header: u16 length + name, u16 length + value ("Binary Protocol Structure")."""
    name = "VibeMQ header"
    fields_desc = [FieldLenField("name_len", None, length_of="header_name", fmt="H"),
                   StrLenField("header_name", b"", length_from=lambda p: p.name_len),
                   FieldLenField("value_len", None, length_of="value", fmt="H"),
                   StrLenField("value", b"", length_from=lambda p: p.value_len)]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class _TailString(StrLenField):
    """errorCode / errorMessage: u16 length + UTF-8, or nothing at all when the body ends
    first (None). On build, None writes nothing and bytes (``b""`` too) write the string."""
    __slots__ = ()

    def __init__(self, name: str) -> None:
        StrLenField.__init__(self, name, None)

    def getfield(self, pkt, s):
        if not s:
            return s, None
        if len(s) < 2:
            raise ValueError(f"{self.name}: 2 length bytes needed, {len(s)} left")
        (n,) = struct.unpack_from(">H", s)
        if len(s) < 2 + n:
            raise ValueError(f"{self.name}: {n} bytes needed, {len(s) - 2} left")
        return s[2 + n:], bytes(s[2:2 + n])

    def addfield(self, pkt, s, val):
        if val is None:
            return s
        val = val.encode() if isinstance(val, str) else bytes(val)
        return s + struct.pack(">H", len(val)) + val

    def i2len(self, pkt, x):
        return 0 if x is None else 2 + len(x)


class VibeMQMessage(Packet):
    """An uncompressed body, field by field."""
    name = "VibeMQ message"
    fields_desc = [
        ByteField("version", 1),
        ByteEnumField("type", int(CommandType.PING), _TYPES),
        FieldLenField("id_len", None, length_of="message_id", fmt="H"),
        StrLenField("message_id", b"", length_from=lambda p: p.id_len),
        FieldLenField("queue_len", None, length_of="queue", fmt="H"),
        StrLenField("queue", b"", length_from=lambda p: p.queue_len),
        FieldLenField("payload_len", None, length_of="json_payload", fmt="I"),
        StrLenField("json_payload", b"", length_from=lambda p: p.payload_len),
        FieldLenField("header_count", None, count_of="headers", fmt="H"),
        PacketListField("headers", [], VibeMQHeader, count_from=lambda p: p.header_count,
                        max_count=0x10000),
        _TailString("error_code"),
        _TailString("error_message"),
    ]

    def mysummary(self) -> str:
        return self.sprintf("VibeMQ %type% id=%message_id%")

    def hashret(self) -> bytes:
        return bytes(self.message_id or b"")

    def answers(self, other) -> bool:
        # A reply echoes its request's id in the document's examples: ConnectAck, Pong,
        # PublishAck... are the next number up; QueueInfo and ListQueues answer in kind; an
        # Error may answer anything.
        if not isinstance(other, VibeMQMessage) or self.message_id != other.message_id:
            return False
        return (self.type == other.type + 1 or self.type == CommandType.ERROR
                or self.type == other.type in (CommandType.QUEUE_INFO, CommandType.LIST_QUEUES))


def frames(pkt: Packet) -> list[VibeMQ]:
    """Every VibeMQ layer of ``pkt``, in order."""
    return frames_of(pkt, VibeMQ)


def message(frame: VibeMQ, limits: codec.VibeLimits | None = None) -> codec.Message:
    """The codec's reading of one dissected frame's body (inflated first when compressed);
    raises :class:`FrameError` as the codec does."""
    raw = bytes(frame)[HEADER_SIZE:HEADER_SIZE + frame.length]     # the next frames follow
    limits = limits or codec.VibeLimits()
    data = comp.decompress(raw, frame.flags, limits.max_decompressed, HEADER_SIZE)
    result = codec.parse_message(data, HEADER_SIZE)
    result.compression = frame.flags
    return result


# -- bindings --------------------------------------------------------------------------------

bind_layers(VibeMQ, VibeMQMessage, flags=int(Compression.NONE))


def bind_vibemq(port: int) -> None:
    """Dissect TCP traffic to or from ``port`` as VibeMQ. ``dport`` is bound last, so
    ``TCP() / VibeMQ()`` builds a client-to-server segment."""
    bind_layers(TCP, VibeMQ, sport=port)
    bind_layers(TCP, VibeMQ, dport=port)


bind_layers(TCP, VibeMQ, sport=DEFAULT_PORT)    # 2925, the real server's port
bind_layers(TCP, VibeMQ, dport=DEFAULT_PORT)
