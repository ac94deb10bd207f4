"""scapy layers for SignalR over raw TCP (signalr-hub-protocol.md "JSON Payload Encoding",
"Binary encoding"; SPEC_NOTES.md "SignalR": the handshake is always JSON).

A stream is a sequence of records, each one layer:

- :class:`SignalRHandshake`: the JSON handshake record (``{"protocol":...,"version":1}`` from a
  client, ``{}`` or ``{"error":...}`` from a server) then its separator 0x1E;
- :class:`SignalRJSON`: one JSON hub message then 0x1E;
- :class:`SignalRMsgPack`: ``length`` (VarInt: 7-bit groups, least significant first, at most 5
  bytes, at most 0x7FFFFFFF) then that many ``body`` bytes (one MessagePack array).

:class:`SignalR` is what TCP is bound to; it picks the record's layer from its first bytes as the
codec does for a server it has not heard name a protocol: JSON text is whitespace then ``{``
then a quote, ``}`` or whitespace; anything else is a VarInt-prefixed record. A text record
without ``"type"`` is a handshake. ``message(profile)`` parses a record with the codec; the
dissector itself cuts records on its own (the VarInt is read here, not by the codec), so the
two can be checked against each other. Several records in one buffer or TCP segment dissect as
consecutive layers; :func:`frames` lists them. Reassembly of captures goes through scapy's
``TCPSession`` and :meth:`SignalR.tcp_reassemble` (nothing until a whole record is there).
Only this module imports scapy; the registry imports it lazily.
"""
from __future__ import annotations

import json

from scapy.config import conf
from scapy.fields import Field, StrField, StrLenField, XByteField
from scapy.layers.inet import TCP
from scapy.packet import Packet, bind_layers

from ..core.scapy_frames import PrefixedFrame, frames_of
from . import codec
from .constants import DEFAULT_PORT, MAX_PAYLOAD, MAX_VARINT_BYTES, RECORD_SEPARATOR
from .framing import encode_varint

__all__ = ["SignalR", "SignalRHandshake", "SignalRJSON", "SignalRMsgPack", "frames",
           "bind_signalr", "RAW_TCP_PORT"]

#: The reference hub serves HTTP + WebSocket on DEFAULT_PORT and raw TCP on the next port.
RAW_TCP_PORT = DEFAULT_PORT + 1
#: Largest record the dissector cuts (the document's ceiling, "Binary encoding").
MAX_RECORD = MAX_PAYLOAD
_WS = b" \t\r\n"
_BROKEN = "signalr_unframed"


def read_varint(data: bytes, pos: int) -> tuple[int, int] | None | bool:
    """(value, width) of the VarInt at ``data[pos]``; None if it is incomplete; False if it
    is malformed (more than 5 bytes, or past 0x7FFFFFFF)."""
    value = 0
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= len(data):
            return None
        byte = data[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return (value, i + 1) if value <= MAX_RECORD else False
    return False


def is_text(data: bytes, pos: int = 0) -> bool | None:
    """Whether the record at ``data[pos]`` is JSON text (None: too few bytes to tell)."""
    head = data[pos:pos + 2]
    if not head:
        return None
    if head[:1] not in b"{" + _WS:
        return False
    if len(head) < 2:
        return None
    follow = b'"}' + _WS if head[:1] == b"{" else b"{" + _WS
    return head[1:2] in follow


class VarIntField(Field):
    """The binary record's length ("Binary encoding"); None on build: computed by post_build."""
    __slots__ = ()

    def __init__(self, name: str, default) -> None:
        Field.__init__(self, name, default, fmt="B")

    def addfield(self, pkt, s: bytes, val) -> bytes:
        return s if val is None else s + encode_varint(val)

    def getfield(self, pkt, s: bytes):
        got = read_varint(s, 0)
        if not got:
            raise ValueError("incomplete or malformed VarInt")   # the layer falls back to Raw
        value, width = got
        return s[width:], value

    def i2len(self, pkt, x) -> int:
        return len(encode_varint(x or 0))


class RecordTextField(StrField):
    """A text record's bytes up to (not including) its separator."""
    __slots__ = ()

    def getfield(self, pkt, s: bytes):
        end = s.find(RECORD_SEPARATOR)
        if end < 0:
            raise ValueError("no record separator")
        return s[end:], s[:end]


class SignalR(PrefixedFrame, Packet):
    """A record of either kind; dissecting picks :class:`SignalRJSON`, :class:`SignalRHandshake`
    or :class:`SignalRMsgPack` from the bytes (see the module docstring)."""

    name = "SignalR"
    fields_desc = [StrField("load", b"")]
    HEADER_SIZE = 1                 # a record needs a byte to be told apart
    match_subclass = True           # ``SignalR in pkt`` and ``pkt[SignalR]`` find any record
    BROKEN_KEY = _BROKEN

    dispatch_hook = classmethod(lambda cls, _pkt=None, *args, **kargs: _record_layer(cls, _pkt))

    # -- cutting (overrides the u32 envelope of PrefixedFrame) --------------------------------

    @classmethod
    def record_size(cls, data: bytes, pos: int) -> int | None | bool:
        """Bytes of the record at ``data[pos]`` (framing included); None until it can be whole
        (or known to be too long); False if the stream cannot be cut there."""
        text = is_text(data, pos)
        if text is None:
            return None
        if text:
            end = data.find(RECORD_SEPARATOR, pos)
            if end < 0:
                return False if len(data) - pos > MAX_RECORD else None
            return end + 1 - pos
        got = read_varint(data, pos)
        if not got:
            return got
        value, width = got
        return width + value

    @classmethod
    def frame_size(cls, data: bytes, pos: int) -> int | None:
        size = cls.record_size(data, pos)
        return size if size and len(data) - pos >= size else None

    def _declared_body(self) -> int | None:
        return 0                    # a record's fields hold all of it: the rest is the next ones

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        return pkt + pay

    @classmethod
    def tcp_reassemble(cls, data: bytes, metadata: dict, session: dict):
        """scapy ``TCPSession`` hook: None until a whole record is there, else every whole
        record as consecutive layers, the incomplete rest as Padding (kept by TCPSession)."""
        broken = (cls.BROKEN_KEY, metadata.get("ident"))
        if session.get(broken):
            return conf.raw_layer(data)
        end = 0
        while (size := cls.record_size(data, end)) and len(data) - end >= size:
            end += size
        if end == 0:
            if cls.record_size(data, 0) is False:
                session[broken] = True          # the peer would close: Raw from now on
                return conf.raw_layer(data)
            return None
        pkt = SignalR(data[:end])
        if end < len(data):
            pkt.add_payload(conf.padding_layer(data[end:]))
        return pkt

    def message(self, profile: str = "v1"):
        raise NotImplementedError


def _record_layer(cls, data: bytes | None):
    """The layer of the record ``data`` starts with (scapy asks each class: ``dispatch_hook``
    is looked up in the class's own namespace, so every record class has it)."""
    if not data:
        return cls
    text = is_text(data)
    if text is None or (text and RECORD_SEPARATOR not in data):
        return conf.raw_layer
    if not text:                            # a VarInt that is cut or malformed: Raw
        return SignalRMsgPack if read_varint(data, 0) else conf.raw_layer
    return SignalRJSON if _has_type(data[:data.find(RECORD_SEPARATOR)]) else SignalRHandshake


def _has_type(text: bytes) -> bool:
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return True                         # not a handshake; the codec says what is wrong
    return not isinstance(obj, dict) or "type" in obj


class SignalRHandshake(SignalR):
    dispatch_hook = SignalR.__dict__["dispatch_hook"]
    """The handshake record: JSON text then 0x1E (always JSON, "Overview")."""
    name = "SignalR Handshake"
    fields_desc = [RecordTextField("text", b"{}"), XByteField("separator", RECORD_SEPARATOR)]

    def message(self, profile: str = "v1"):
        wire = bytes(self.text) + b"\x1e"
        origin = "client" if b'"protocol"' in self.text else "server"
        return codec.decode_all(wire, origin=origin, profile=profile)[0]

    def mysummary(self) -> str:
        return self.sprintf("SignalR Handshake %text%")


class SignalRJSON(SignalR):
    dispatch_hook = SignalR.__dict__["dispatch_hook"]
    """A JSON hub message then 0x1E ("JSON Payload Encoding")."""
    name = "SignalR JSON"
    fields_desc = [RecordTextField("text", b'{"type":6}'), XByteField("separator", RECORD_SEPARATOR)]

    def message(self, profile: str = "v1"):
        return codec.parse_record(bytes(self.text), "json", profile)

    @property
    def hub_type(self) -> int | None:
        try:
            kind = json.loads(self.text).get("type")
        except (ValueError, AttributeError, RecursionError):
            return None
        return kind if type(kind) is int else None


class SignalRMsgPack(SignalR):
    dispatch_hook = SignalR.__dict__["dispatch_hook"]
    """``[VarInt length][body]`` ("Binary encoding"); ``length`` computed on build."""
    name = "SignalR MessagePack"
    fields_desc = [VarIntField("length", None),
                   StrLenField("body", b"\x91\x06", length_from=lambda p: p.length)]

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        if self.length is None:
            pkt = encode_varint(len(pkt)) + pkt
        return pkt + pay

    def message(self, profile: str = "v1"):
        return codec.parse_record(bytes(self.body), "messagepack", profile)

    @property
    def hub_type(self) -> int | None:
        """The message type: the first item of a fixarray, when it is a positive fixint."""
        body = bytes(self.body)
        if len(body) >= 2 and 0x91 <= body[0] <= 0x9F and body[1] < 0x80:
            return body[1]
        return None


def frames(pkt: Packet) -> list:
    """Every SignalR record layer of ``pkt``, in order."""
    return frames_of(pkt, SignalR)


def bind_signalr(port: int) -> None:
    """Dissect TCP traffic to or from ``port`` as SignalR records. ``dport`` is bound last, so
    ``TCP() / SignalR...()`` builds a client-to-server segment."""
    bind_layers(TCP, SignalR, sport=port)
    bind_layers(TCP, SignalR, dport=port)


bind_signalr(RAW_TCP_PORT)          # 5101, the reference hub's raw TCP port
