"""RabbitMQ Stream frames: encode, and an incremental decoder.

Wire ("Frame Structure"): ``[u32 size][u16 key][u16 version][body]``; ``size`` counts key,
version and body. Bit 15 of the key marks a response. Requests carry a u32 correlation id
first; responses carry the correlation id then a u16 response code.

The frame classes are requests.py's and responses.py's (where the real server differs from the
document, they follow the server), over wire.py's field types ("Types"). This module puts them
together: the registry of (wire key, version) -> class, envelopes and encoding, the decoder and
the JSON views. It re-exports the frame classes (``codec.Publish`` & co. are the names the kit
uses): ``__all__`` lists them with the codec's own names.

Decoding is two-stage. :class:`Decoder` cuts the stream into :class:`RawFrame` envelopes: a
declared size above the limit breaks the stream (sticky, raised as soon as the 4-byte prefix
is there, nothing buffered). Every other error is about one well-delimited frame (a size
below 4, an unknown key or version, a malformed body): that frame is consumed and reported,
and decoding can go on (the session answers with Close 13, as the real server does).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from ..core.fieldnames import field_names
from ..core.decoding import InPlaceDecoder
from ..core.decoding import decode_all as _decode_all
from ..core.errors import Category, FrameError, LengthError, PayloadError, UnknownTypeError
from ..core.limits import Limits
from . import chunk as osiris
from . import requests, responses
from .chunk import Chunk, SubBatchEntry
from .constants import DEFAULT_FRAME_MAX, MIN_FRAME_SIZE, PROTOCOL, RESPONSE_BIT, Key, code_name
from .requests import (Close, ConsumerUpdate, Create, CreateSuperStream, Credit,
                       DeclarePublisher, Delete, DeletePublisher, DeleteSuperStream, Deliver,
                       ExchangeCommandVersions, Heartbeat, Metadata, MetadataUpdate, Open,
                       Partitions, PeerProperties, Publish, PublishConfirm, PublishError,
                       PublishedMessage, QueryOffset, QueryPublisherSequence, Route,
                       SaslAuthenticate, SaslHandshake, StoreOffset, StreamStats, Subscribe,
                       Tune, Unsubscribe)
from .responses import (BrokerInfo, CloseResponse, ConsumerUpdateResponse, CreateResponse,
                        CreateSuperStreamResponse, CreditResponse, DeclarePublisherResponse,
                        DeletePublisherResponse, DeleteResponse, DeleteSuperStreamResponse,
                        ExchangeCommandVersionsResponse, MetadataResponse, OpenResponse,
                        PartitionsResponse, PeerPropertiesResponse, QueryOffsetResponse,
                        QueryPublisherSequenceResponse, RouteResponse, SaslAuthenticateResponse,
                        SaslHandshakeResponse, StreamMetadata, StreamStatsResponse,
                        SubscribeResponse, TuneResponse, UnsubscribeResponse)
from .wire import CODE, CORR, _err, _Frame, _Reader

__all__ = [
    # the codec
    "StreamConfig", "Frame", "FRAME_CLASSES", "WIRE_KEYS", "REQUESTS_WITH_CORRELATION",
    "has_correlation", "RawFrame", "encode_raw", "encode", "encode_many", "key_name",
    "parse_frame", "Decoder", "decode_all", "frame_to_dict", "CORR", "CODE", "code_name",
    # the frame classes and their parts (requests.py, responses.py), re-exported
    "Close", "ConsumerUpdate", "Create", "CreateSuperStream", "Credit", "DeclarePublisher",
    "Delete", "DeletePublisher", "DeleteSuperStream", "Deliver", "ExchangeCommandVersions",
    "Heartbeat", "Metadata", "MetadataUpdate", "Open", "Partitions", "PeerProperties",
    "Publish", "PublishConfirm", "PublishError", "PublishedMessage", "QueryOffset",
    "QueryPublisherSequence", "Route", "SaslAuthenticate", "SaslHandshake", "StoreOffset",
    "StreamStats", "Subscribe", "Tune", "Unsubscribe",
    "BrokerInfo", "CloseResponse", "ConsumerUpdateResponse", "CreateResponse",
    "CreateSuperStreamResponse", "CreditResponse", "DeclarePublisherResponse",
    "DeletePublisherResponse", "DeleteResponse", "DeleteSuperStreamResponse",
    "ExchangeCommandVersionsResponse", "MetadataResponse", "OpenResponse", "PartitionsResponse",
    "PeerPropertiesResponse", "QueryOffsetResponse", "QueryPublisherSequenceResponse",
    "RouteResponse", "SaslAuthenticateResponse", "SaslHandshakeResponse", "StreamMetadata",
    "StreamStatsResponse", "SubscribeResponse", "TuneResponse", "UnsubscribeResponse",
]

_HEAD = struct.Struct(">IHH")       # size, key, version
_LEN = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class StreamConfig(Limits):
    """Limits of the codec. ``max_frame_size`` bounds the size field (the value after Tune's
    frame_max, 0 = no limit is mapped to the hard ceiling by the session)."""
    max_frame_size: int = DEFAULT_FRAME_MAX
    max_uncompressed: int = osiris.DEFAULT_MAX_UNCOMPRESSED


_DEFAULT_LIMITS = StreamConfig()     # frozen: one instance serves every decoder


# --- the registry -----------------------------------------------------------------------------

Frame = Any   # any frame class of requests.py and responses.py


def _frame_classes(module) -> list:
    """The frame classes ``module`` defines, in the order it defines them."""
    return [obj for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, _Frame) and obj.__module__ == module.__name__]


_ALL = _frame_classes(requests) + _frame_classes(responses)
#: (wire key, version) -> frame class. Versions: 1 everywhere; Publish and Deliver also 2.
FRAME_CLASSES: dict[tuple[int, int], type] = {}
for _cls in _ALL:
    _wk = _cls.key | (RESPONSE_BIT if _cls.response else 0)
    FRAME_CLASSES[(_wk, 1)] = _cls
    if _cls in (Publish, Deliver):
        FRAME_CLASSES[(_wk, 2)] = _cls
WIRE_KEYS = frozenset(k for k, _ in FRAME_CLASSES)
#: A client's answer to Tune may come as key 0x0014 (a Tune) too.
REQUESTS_WITH_CORRELATION = frozenset(c.key for c in _ALL
                                      if not c.response and c.FIELDS[:1] == (CORR,))
REQUESTS_WITH_CORRELATION |= {Key.SUBSCRIBE}


def has_correlation(frame) -> bool:
    return hasattr(frame, "correlation_id")


# --- envelopes and encoding -------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RawFrame:
    """A frame whose body has not been parsed. ``offset`` is the stream offset of its size
    field; ``key`` includes the response bit. A size below 4 leaves key and version None."""
    key: Optional[int]
    version: Optional[int]
    body: bytes
    offset: int = field(default=0, compare=False)

    @property
    def command(self) -> Optional[int]:
        return None if self.key is None else self.key & ~RESPONSE_BIT

    @property
    def is_response(self) -> bool:
        return self.key is not None and bool(self.key & RESPONSE_BIT)

    @property
    def size(self) -> int:
        return len(self.body) + (4 if self.key is not None else 0)


def encode_raw(key: int, version: int = 1, body: bytes = b"") -> bytes:
    """Any frame, valid or not in its body (the suite and the fuzzers need both)."""
    return _HEAD.pack(4 + len(body), key, version) + body


def encode(frame) -> bytes:
    """The frame's bytes; ValueError if a field is out of its wire range."""
    try:
        body = frame.encode_body()
    except (struct.error, OverflowError) as exc:
        raise ValueError(f"{type(frame).__name__}: field out of range: {exc}") from None
    except UnicodeEncodeError as exc:
        raise ValueError(f"{type(frame).__name__}: {exc}") from None
    return _HEAD.pack(4 + len(body), frame.wire_key, frame.version) + body


def encode_many(frames) -> bytes:
    return b"".join(encode(f) for f in frames)


def key_name(key: Optional[int]) -> str:
    if key is None:
        return "(none)"
    cmd = key & ~RESPONSE_BIT
    try:
        name = Key(cmd).name
    except ValueError:
        name = f"0x{cmd:04x}"
    return name + ("_RESPONSE" if key & RESPONSE_BIT else "")


#: RabbitMQ 3.10 answers Route and Partitions under the request key (no response bit); a
#: decoder told that its bytes come from a server reads those keys as the responses.
_FROM_SERVER = {Key.ROUTE: RouteResponse, Key.PARTITIONS: PartitionsResponse}


def parse_frame(raw: RawFrame, limits: StreamConfig | None = None, origin: Optional[str] = None):
    """The typed frame of an envelope; raises :class:`FrameError`. ``origin="server"`` says
    the bytes were sent by a server (the only case where the 3.10 Route/Partitions quirk
    can be told apart from a request)."""
    base = raw.offset + 8
    if raw.key is None:
        raise _err(LengthError, f"frame size {len(raw.body)} < {MIN_FRAME_SIZE}",
                   Category.LENGTH_TOO_SMALL, raw.offset)
    if origin == "server" and raw.key in _FROM_SERVER and raw.version == 1:
        cls = _FROM_SERVER[raw.key]
        r = _Reader(raw.body, base)
        frame = cls.parse_body(r, 1)
        r.done(cls.__name__)
        return replace(frame, response_bit=False)
    cls = FRAME_CLASSES.get((raw.key, raw.version))
    if cls is None:
        if raw.key in WIRE_KEYS:
            raise _err(UnknownTypeError, f"{key_name(raw.key)} version {raw.version} is not defined",
                       Category.UNKNOWN_TYPE, raw.offset + 6, part="version")
        raise _err(UnknownTypeError, f"unknown command key 0x{raw.key:04x}",
                   Category.UNKNOWN_TYPE, raw.offset + 4)
    r = _Reader(raw.body, base)
    try:
        frame = cls.parse_body(r, raw.version)
    except (struct.error, IndexError) as exc:     # a count/size check missed: still a FrameError
        raise _err(PayloadError, f"{cls.__name__}: {exc}", Category.TRUNCATED, base + r.end) from None
    r.done(cls.__name__)
    return frame


# --- stream decoding --------------------------------------------------------------------------

class Decoder(InPlaceDecoder):
    """Incremental decoder: ``feed(data) -> list[frame]``.

    ``parse=False`` yields :class:`RawFrame` envelopes. A size above ``max_frame_size`` is a
    sticky stream error; other errors concern one frame, which is consumed: call ``feed(b"")``
    (or iterate again) to go on past it. ``max_frame_size`` may be changed between calls (the
    session applies the tuned frame_max). Frames are read in place in the decoder's own buffer
    (core/decoding.py :class:`InPlaceDecoder`).
    """

    protocol = PROTOCOL

    def __init__(self, limits: StreamConfig | None = None, *, parse: bool = True,
                 origin: Optional[str] = None) -> None:
        self.limits = limits or _DEFAULT_LIMITS
        self.origin = origin           # "server", "client" or None (unknown)
        self.parse = parse
        self._init_buffer()
        self._error: FrameError | None = None
        # Bytes the frame in hand needs before reading it again can change anything (the size
        # check read bytes that stay buffered): with fewer, next_frame answers None at once, so
        # reads of a byte or two cost one comparison. A new max_frame_size resets it.
        self._frame_need = 4
        self.max_frame_size = self.limits.max_frame_size

    @property
    def max_frame_size(self) -> int:
        return self._max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, value: int) -> None:
        self._max_frame_size = value
        self._frame_need = 4               # the size of a frame in hand is checked against it anew

    @property
    def broken(self) -> bool:
        return self._error is not None

    def next_frame(self):
        """The next whole frame (an envelope with ``parse=False``), None if more bytes are
        needed: the header read in place, one copy of the body."""
        if self._error is not None:
            raise self._error
        data, pos = self._data, self._pos
        available = len(data) - pos
        if available < self._frame_need:
            return None
        if available >= 8:
            size, key, version = _HEAD.unpack_from(data, pos)
        else:
            (size,) = _LEN.unpack_from(data, pos)
            key = version = None
        limit = self._max_frame_size
        if limit and size > limit:
            self._error = _err(LengthError, f"frame size {size} > frame_max {limit}",
                               Category.LENGTH_TOO_LARGE, self._base + pos)
            raise self._error
        end = pos + 4 + size
        if len(data) < end:
            self._frame_need = 4 + size
            return None
        self._frame_need = 4
        self._pos = end                          # consumed, whatever its body turns out to be
        if size < MIN_FRAME_SIZE:
            raw = RawFrame(None, None, bytes(data[pos + 4:end]), self._base + pos)
        else:
            raw = RawFrame(key, version, bytes(data[pos + 8:end]), self._base + pos)
        if not self.parse:
            return raw
        return parse_frame(raw, self.limits, self.origin)


def decode_all(data: bytes, limits: StreamConfig | None = None, origin: Optional[str] = None) -> list:
    """Every frame of a complete byte string; the first error raises (with ``frames``)."""
    return _decode_all(Decoder(limits, origin=origin), data)


# --- views ------------------------------------------------------------------------------------

#: Values _jsonable returns as they are, by exact type (most of a frame's fields): one test
#: instead of the seven below (the fuzzers call frame_to_dict on every frame they decode).
_PLAIN = frozenset((int, str, bool, float, type(None)))


def _jsonable(value):
    if type(value) in _PLAIN:
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return {"text": raw.decode("utf-8"), "hex": raw.hex()}
        except UnicodeDecodeError:
            return {"hex": raw.hex()}
    if isinstance(value, Chunk):
        out = {name: _jsonable(getattr(value, name)) for name in field_names(value)
               if name not in ("data", "trailer", "bloom", "bodies", "announced_trailer")}
        out["data_length"] = len(value.data)
        out["trailer_length"] = value.trailer_length
        try:
            out["messages"] = [_jsonable(m) for m in value.messages()]
        except FrameError as exc:
            out["messages_error"] = exc.as_dict()
        return out
    if isinstance(value, SubBatchEntry):
        return {"sub_batch": {"compression": value.compression, "count": value.count,
                              "uncompressed_size": value.uncompressed_size,
                              "body_hex": value.body.hex()}}
    if hasattr(value, "__dataclass_fields__"):
        return {name: _jsonable(getattr(value, name)) for name in field_names(value)}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return value


def frame_to_dict(frame) -> dict:
    """JSON-friendly view for the CLI and transcripts; codes also by name."""
    if isinstance(frame, RawFrame):
        return {"type": key_name(frame.key), "version": frame.version, "body_hex": frame.body.hex()}
    out: dict = {"type": type(frame).__name__, "key": f"0x{frame.wire_key:04x}"}
    for name in field_names(frame):
        value = getattr(frame, name)
        out[name] = value if type(value) in _PLAIN else _jsonable(value)
    if "code" in out and isinstance(out["code"], int):
        out["code_name"] = code_name(out["code"])
    return out

