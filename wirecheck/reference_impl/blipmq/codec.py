"""BlipMQ frames: encode, and an incremental decoder (blipmq-protocol.md, "Frame Layout").

Wire: ``[u32 length BE][u8 frame_type][u64 correlation_id BE][payload]`` where ``length``
counts type + correlation id + payload, so 9 <= length <= 16 MiB (inclusive, as the real
codec's ``len > MAX`` check). Decoding is two-stage, because the two stages fail differently:

1. :class:`Decoder` cuts the stream into :class:`RawFrame` envelopes. A bad length or an
   unknown type breaks the stream ("the connection is closed by the server"); the error is
   sticky, and the length is checked as soon as the 4-byte prefix is there, before any body
   is buffered.
2. :func:`parse_payload` turns an envelope into a typed frame. A bad payload is a per-request
   error (the session answers ``NACK(400, "invalid <TYPE> payload")``), not a stream error.

Strictness follows the real codec (SPEC_NOTES.md, BlipMQ): HELLO payload exactly 2 bytes; AUTH
``key_len`` equal to the rest; ACK and POLL exactly 8 bytes; PUBLISH at least 3 bytes (empty
message allowed); SUBSCRIBE ignores bytes after the qos byte; topics, keys and NACK messages
must be UTF-8. Semantic checks (empty topic, QoS range) belong to the session, so a frame with
qos 7 still decodes: the kit must be able to send and show it.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import ClassVar, Union

from ..core.fieldnames import field_names
from ..core.errors import Category, FrameError, LengthError, PayloadError, UnknownTypeError
from ..core.decoding import InPlaceDecoder
from ..core.decoding import decode_all as _decode_all
from ..core.limits import Limits

PROTOCOL = "blipmq"
PROTOCOL_VERSION = 1
MAX_FRAME_SIZE = 16 * 1024 * 1024        # "Frame Layout": length <= 16 MiB
MIN_FRAME_LENGTH = 1 + 8                 # type + correlation id
HEADER_SIZE = 4 + MIN_FRAME_LENGTH       # bytes before the payload

_LEN = struct.Struct(">I")
_HEADER = struct.Struct(">IBQ")          # length, frame_type, correlation_id
_U16 = struct.Struct(">H")
_U64 = struct.Struct(">Q")
_NACK = struct.Struct(">HH")             # code, message_len
_PUBLISH_HEAD = struct.Struct(">BH")     # qos, topic_len


class FrameType(IntEnum):
    """"Frame Types" table."""
    HELLO = 0x01
    AUTH = 0x02
    PUBLISH = 0x03
    SUBSCRIBE = 0x04
    ACK = 0x05
    NACK = 0x06
    PING = 0x07
    PONG = 0x08
    POLL = 0x09


class NackCode(IntEnum):
    """"Error Codes" table."""
    BAD_REQUEST = 400
    UNAUTHORIZED = 401
    NOT_FOUND = 404
    UPGRADE_REQUIRED = 426
    INTERNAL = 500

    @classmethod
    def _missing_(cls, value):  # unknown codes still decode: keep the number
        return None


@dataclass(frozen=True, slots=True)
class BlipConfig(Limits):
    """Limits of the BlipMQ codec; defaults are the document's."""
    max_frame_size: int = MAX_FRAME_SIZE


_DEFAULT_LIMITS = BlipConfig()       # frozen: one instance serves every decoder

# --- frames ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Hello:
    correlation_id: int
    protocol_version: int = PROTOCOL_VERSION
    type: ClassVar[FrameType] = FrameType.HELLO


@dataclass(frozen=True, slots=True)
class Auth:
    correlation_id: int
    api_key: str
    type: ClassVar[FrameType] = FrameType.AUTH


@dataclass(frozen=True, slots=True)
class Publish:
    """A publish (client -> server) or a delivery (server -> client, answer to POLL)."""
    correlation_id: int
    qos: int
    topic: str
    message: bytes = b""
    type: ClassVar[FrameType] = FrameType.PUBLISH


@dataclass(frozen=True, slots=True)
class Subscribe:
    correlation_id: int
    topic: str
    qos: int
    type: ClassVar[FrameType] = FrameType.SUBSCRIBE


@dataclass(frozen=True, slots=True)
class Ack:
    """Handshake ACK (subscription_id 0), SUBSCRIBE result, or a QoS1 delivery ACK whose
    correlation id is the delivery tag."""
    correlation_id: int
    subscription_id: int = 0
    type: ClassVar[FrameType] = FrameType.ACK


@dataclass(frozen=True, slots=True)
class Nack:
    correlation_id: int
    code: int
    message: str = ""
    type: ClassVar[FrameType] = FrameType.NACK


@dataclass(frozen=True, slots=True)
class Ping:
    correlation_id: int
    type: ClassVar[FrameType] = FrameType.PING


@dataclass(frozen=True, slots=True)
class Pong:
    correlation_id: int
    type: ClassVar[FrameType] = FrameType.PONG


@dataclass(frozen=True, slots=True)
class Poll:
    correlation_id: int
    subscription_id: int
    type: ClassVar[FrameType] = FrameType.POLL


Frame = Union[Hello, Auth, Publish, Subscribe, Ack, Nack, Ping, Pong, Poll]
_TYPES: dict[int, FrameType] = {int(t): t for t in FrameType}
FRAME_TYPES: dict[FrameType, type] = {cls.type: cls for cls in
                                      (Hello, Auth, Publish, Subscribe, Ack, Nack, Ping, Pong, Poll)}


@dataclass(frozen=True, slots=True)
class RawFrame:
    """An envelope whose payload has not been interpreted yet. ``offset`` is the stream offset
    of its length prefix."""
    type: FrameType
    correlation_id: int
    payload: bytes
    offset: int = field(default=0, compare=False)


# --- encoding -------------------------------------------------------------------------------

def _utf8(text: str) -> bytes:
    return text.encode("utf-8")


def encode_payload(frame: Frame) -> bytes:
    t = frame.type
    if t is FrameType.HELLO:
        return _U16.pack(frame.protocol_version)
    if t is FrameType.AUTH:
        key = _utf8(frame.api_key)
        return _U16.pack(len(key)) + key
    if t is FrameType.PUBLISH:
        topic = _utf8(frame.topic)
        return _PUBLISH_HEAD.pack(frame.qos, len(topic)) + topic + bytes(frame.message)
    if t is FrameType.SUBSCRIBE:
        topic = _utf8(frame.topic)
        return _U16.pack(len(topic)) + topic + bytes((frame.qos,))
    if t in (FrameType.ACK,):
        return _U64.pack(frame.subscription_id)
    if t is FrameType.POLL:
        return _U64.pack(frame.subscription_id)
    if t is FrameType.NACK:
        msg = _utf8(frame.message)
        return _NACK.pack(frame.code, len(msg)) + msg
    return b""  # PING, PONG


def encode_raw(frame_type: int, correlation_id: int, payload: bytes = b"") -> bytes:
    """Any envelope, valid or not in its payload (the suite and fuzzers need both)."""
    return _HEADER.pack(MIN_FRAME_LENGTH + len(payload), frame_type, correlation_id) + payload


def encode(frame: Frame) -> bytes:
    """The frame's bytes; ValueError if a field is out of its wire range."""
    try:
        payload = encode_payload(frame)
        if MIN_FRAME_LENGTH + len(payload) <= MAX_FRAME_SIZE:
            return encode_raw(frame.type, frame.correlation_id, payload)
    except struct.error as exc:
        raise ValueError(f"{type(frame).__name__}: field out of range: {exc}") from None
    raise ValueError(f"frame of {MIN_FRAME_LENGTH + len(payload)} bytes exceeds MAX_FRAME_SIZE")


# --- payload decoding -----------------------------------------------------------------------

def _err(cls, message: str, category: Category, offset: int) -> FrameError:
    return cls(message, category=category, protocol=PROTOCOL, offset=offset)


def _decode_utf8(data: bytes, what: str, offset: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _err(PayloadError, f"{what} is not valid UTF-8", Category.BAD_ENCODING,
                   offset + exc.start) from None


def _exact(p: bytes, size: int, name: str, base: int) -> None:
    n = len(p)
    if n < size:
        raise _err(PayloadError, f"{name} payload must be {size} bytes, got {n}",
                   Category.TRUNCATED, base + n)
    if n > size:
        raise _err(PayloadError, f"{name} payload must be {size} bytes, got {n}",
                   Category.TRAILING_BYTES, base + size)


def _parse_hello(cid: int, p: bytes, base: int) -> Hello:
    _exact(p, 2, "HELLO", base)
    return Hello(cid, _U16.unpack(p)[0])


def _parse_auth(cid: int, p: bytes, base: int) -> Auth:
    if len(p) < 2:
        raise _err(PayloadError, "AUTH payload shorter than key_len", Category.TRUNCATED, base + len(p))
    (key_len,) = _U16.unpack_from(p)
    rest = len(p) - 2
    if rest < key_len:
        raise _err(PayloadError, f"AUTH key_len {key_len} but {rest} bytes follow",
                   Category.TRUNCATED, base + len(p))
    if rest > key_len:
        raise _err(PayloadError, f"AUTH key_len {key_len} but {rest} bytes follow",
                   Category.TRAILING_BYTES, base + 2 + key_len)
    return Auth(cid, _decode_utf8(p[2:], "AUTH key", base + 2))


def _parse_publish(cid: int, p: bytes, base: int) -> Publish:
    if len(p) < 3:
        raise _err(PayloadError, "PUBLISH payload shorter than 3 bytes", Category.TRUNCATED, base + len(p))
    qos, topic_len = _PUBLISH_HEAD.unpack_from(p)
    if len(p) - 3 < topic_len:
        raise _err(PayloadError, f"PUBLISH topic_len {topic_len} exceeds payload",
                   Category.TRUNCATED, base + len(p))
    topic = _decode_utf8(p[3:3 + topic_len], "PUBLISH topic", base + 3)
    return Publish(cid, qos, topic, p[3 + topic_len:])


def _parse_subscribe(cid: int, p: bytes, base: int) -> Subscribe:
    if len(p) < 3:
        raise _err(PayloadError, "SUBSCRIBE payload shorter than 3 bytes", Category.TRUNCATED, base + len(p))
    (topic_len,) = _U16.unpack_from(p)
    if len(p) - 2 < topic_len + 1:
        raise _err(PayloadError, f"SUBSCRIBE topic_len {topic_len} leaves no qos byte",
                   Category.TRUNCATED, base + len(p))
    topic = _decode_utf8(p[2:2 + topic_len], "SUBSCRIBE topic", base + 2)
    # Bytes after the qos byte are ignored, as the real codec does (SPEC_NOTES.md).
    return Subscribe(cid, topic, p[2 + topic_len])


def _parse_ack(cid: int, p: bytes, base: int) -> Ack:
    _exact(p, 8, "ACK", base)
    return Ack(cid, _U64.unpack(p)[0])


def _parse_poll(cid: int, p: bytes, base: int) -> Poll:
    _exact(p, 8, "POLL", base)
    return Poll(cid, _U64.unpack(p)[0])


def _parse_nack(cid: int, p: bytes, base: int) -> Nack:
    if len(p) < 4:
        raise _err(PayloadError, "NACK payload shorter than 4 bytes", Category.TRUNCATED, base + len(p))
    code, msg_len = _NACK.unpack_from(p)
    if len(p) - 4 < msg_len:
        raise _err(PayloadError, f"NACK message_len {msg_len} exceeds payload", Category.TRUNCATED, base + len(p))
    if len(p) - 4 > msg_len:
        raise _err(PayloadError, f"NACK has {len(p) - 4 - msg_len} trailing bytes",
                   Category.TRAILING_BYTES, base + 4 + msg_len)
    return Nack(cid, code, _decode_utf8(p[4:], "NACK message", base + 4))


def _parse_empty(cls):
    def parse(cid: int, p: bytes, base: int):
        # PING/PONG payloads are empty ("PING / PONG"). The codec is strict; the session never
        # parses a PING's payload (the real server ignores it), so a PING with bytes still
        # gets its PONG, while a PONG with bytes is reported by the suite's decoder.
        if p:
            raise _err(PayloadError, f"{cls.__name__.upper()} payload must be empty, got "
                       f"{len(p)} bytes", Category.TRAILING_BYTES, base)
        return cls(cid)
    return parse


_PARSERS = {
    FrameType.HELLO: _parse_hello,
    FrameType.AUTH: _parse_auth,
    FrameType.PUBLISH: _parse_publish,
    FrameType.SUBSCRIBE: _parse_subscribe,
    FrameType.ACK: _parse_ack,
    FrameType.NACK: _parse_nack,
    FrameType.PING: _parse_empty(Ping),
    FrameType.PONG: _parse_empty(Pong),
    FrameType.POLL: _parse_poll,
}


def parse_payload(raw: RawFrame) -> Frame:
    """The typed frame of an envelope; raises :class:`FrameError` (payload categories)."""
    return _PARSERS[raw.type](raw.correlation_id, raw.payload, raw.offset + HEADER_SIZE)


# --- stream decoding ------------------------------------------------------------------------

class Decoder(InPlaceDecoder):
    """Incremental decoder: ``feed(data) -> list[frame]``.

    With ``parse=True`` (default) frames are typed and a bad payload raises; with
    ``parse=False`` it yields :class:`RawFrame` envelopes and only stream errors raise.
    Stream errors are sticky: once the stream is broken every later call raises the same error.
    Frames are read in place in the decoder's own buffer (core/decoding.py
    :class:`InPlaceDecoder`).
    """

    protocol = PROTOCOL

    def __init__(self, limits: BlipConfig | None = None, *, parse: bool = True) -> None:
        self.limits = limits or _DEFAULT_LIMITS
        self.parse = parse
        self._init_buffer()
        self._error: FrameError | None = None
        # Bytes the envelope in hand needs before reading it again can change anything (the
        # checks so far read bytes that stay buffered): with fewer, next_frame answers None at
        # once, so reads of a byte or two cost one comparison ("Frame Layout": the length first,
        # then the type byte, then the body).
        self._frame_need = 4

    def next_frame(self):
        """The next whole frame (an envelope with ``parse=False``), None if more bytes are
        needed. One call per frame: the header read in place, the payload parsed inline."""
        if self._error is not None:
            raise self._error
        data, pos = self._data, self._pos
        available = len(data) - pos
        # No test of _frame_need here: feed made it before its first call, and after a frame it
        # is back to the header's 4 bytes, which the next test covers. A caller of next_frame
        # alone that comes too early has the header read again: the same answer, a little later.
        if available < HEADER_SIZE:              # partial header: check what is there
            if available < 4:
                return None
            start = self._base + pos
            (length,) = _LEN.unpack_from(data, pos)
            type_byte = data[pos + 4] if available > 4 else None
            self._check(length, type_byte, start)
            self._frame_need = HEADER_SIZE if type_byte is not None else 5
            return None
        start = self._base + pos                 # the header, read in place
        length, type_byte, correlation_id = _HEADER.unpack_from(data, pos)
        if not MIN_FRAME_LENGTH <= length <= self.limits.max_frame_size or type_byte not in _TYPES:
            self._check(length, type_byte, start)     # raises, with the reason
        end = pos + 4 + length
        if len(data) < end:
            self._frame_need = 4 + length
            return None
        self._frame_need = 4
        self._pos = end                          # consumed, whatever its payload turns out to be
        payload = bytes(data[pos + HEADER_SIZE:end])
        if self.parse:                           # parse_payload, inline, without the envelope
            return _PARSERS[type_byte](correlation_id, payload, start + HEADER_SIZE)
        return RawFrame(_TYPES[type_byte], correlation_id, payload, start)

    def _check(self, length: int, type_byte: int | None, start: int) -> None:
        """Length bounds from the prefix alone, then the type byte once it is there."""
        if length < MIN_FRAME_LENGTH:
            self._error = _err(LengthError, f"length {length} < {MIN_FRAME_LENGTH}",
                               Category.LENGTH_TOO_SMALL, start)
        elif length > self.limits.max_frame_size:
            self._error = _err(LengthError, f"length {length} > {self.limits.max_frame_size}",
                               Category.LENGTH_TOO_LARGE, start)
        elif type_byte is not None and type_byte not in _TYPES:
            self._error = _err(UnknownTypeError, f"unknown frame type 0x{type_byte:02x}",
                               Category.UNKNOWN_TYPE, start + 4)
        if self._error is not None:
            raise self._error


def decode_all(data: bytes, limits: BlipConfig | None = None) -> list[Frame]:
    """Every frame of a complete byte string; trailing partial frame -> TRUNCATED."""
    return _decode_all(Decoder(limits), data)


def frame_to_dict(frame) -> dict:
    """JSON-friendly view used by the CLI and transcripts: bytes fields appear as text when
    they are UTF-8, and always as ``<name>_hex``."""
    out: dict = {"type": frame.type.name}
    for name in field_names(frame):
        if name == "offset":
            continue
        value = getattr(frame, name)
        if isinstance(value, (bytes, bytearray)):
            try:
                out[name] = bytes(value).decode("utf-8")
            except UnicodeDecodeError:
                out[name] = None
            out[name + "_hex"] = bytes(value).hex()
        else:
            out[name] = int(value) if isinstance(value, IntEnum) else value
    return out
