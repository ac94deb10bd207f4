"""The VibeMQ codec: frames ("Framing") around binary messages ("Message Format").

Frame: ``[u32 body length][u8 compression flags][body]`` (protocol 1.1; 1.0 had no flags
byte: profile ``vibemq-1.0``). The length is checked against the bounds (at least 2, at most
``max_frame_size``, on the compressed length) as soon as the 4 bytes are there, before any
body is buffered; an unknown flag is an error (the real server drops the connection). Framing
errors are sticky.

Message: version (u8), type (u8), id (u16 length + UTF-8), queue (u16 + UTF-8), payload (u32 +
UTF-8 JSON), headers (u16 count, then u16-length key and value strings), errorCode and
errorMessage (u16 + UTF-8). Big Endian; length 0 = absent (null and "" both read as None).
The real codec (profile ``vibemq-1.8``) writes the two error fields only in Error (type 99)
and every reader here accepts a body that ends after the headers. A bad message (unknown
type, bad UTF-8 or JSON, truncated field, bytes left over, empty id) raises without breaking
the stream: the frames around it are intact. A payload is refused as well when it could not be
written back (NaN, Infinity, 1e400, a lone surrogate escape) or nests deeper than
``MAX_JSON_DEPTH``; an error inside a compressed body is reported at the body's first byte.

Errors: :class:`wirecheck.reference_impl.core.errors.FrameError` subclasses only.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Optional

from ..core import strict_json
from ..core.decoding import IncrementalDecoder, decode_all as _decode_all
from ..core.errors import Category, FrameError, LengthError, PayloadError, UnknownTypeError
from ..core.framebuffer import FrameBuffer
from ..core.limits import Limits
from . import compression as comp
from .constants import (DEFAULT_MAX_BODY, DEFAULT_MAX_DECOMPRESSED, MIN_BODY, PROTOCOL,
                        PROTOCOL_VERSION, TYPE_BY_NAME, TYPE_NAMES, CommandType, Compression)

_U32 = struct.Struct(">I")
_HEAD = struct.Struct(">IB")
_U16 = struct.Struct(">H")
_VT = struct.Struct(">BB")
_KNOWN_TYPES = frozenset(int(t) for t in CommandType)
_FLAGS = frozenset(int(c) for c in Compression)


@dataclass(frozen=True, slots=True)
class VibeLimits(Limits):
    """``max_frame_size``: the largest body length (compressed) a frame may declare;
    ``max_decompressed``: the largest body a compressed one may inflate to."""
    max_frame_size: int = DEFAULT_MAX_BODY
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED


_DEFAULT_LIMITS = VibeLimits()       # frozen: one instance serves every decoder
_ABSENT = object()


@dataclass(slots=True)
class Message:
    """One protocol message. ``payload`` is the JSON value (None: absent); ``compression`` is
    the flag of the frame it came in (or goes out in), not part of the message's value."""
    type: int
    id: Optional[str] = None
    queue: Optional[str] = None
    payload: Any = None
    headers: Optional[dict] = None
    error_code: Optional[str] = None
    error_message: Optional[str] = None
    version: int = PROTOCOL_VERSION
    compression: int = field(default=Compression.NONE, compare=False)

    @property
    def type_name(self) -> str:
        return TYPE_NAMES.get(self.type, str(self.type))

    def header(self, name: str, default: Optional[str] = None) -> Optional[str]:
        return (self.headers or {}).get(name, default)


def _err(cls, message: str, category: Category, offset: int, part: str = "") -> FrameError:
    """``part`` (FrameError.part): what is wrong where the category does not say: "command-type",
    "id", "payload" (not UTF-8 or not JSON), "json-depth", "json-surrogate"; compression.py
    adds "compression-flag", "bomb" and "compressed-body"."""
    return cls(message, category=category, protocol=PROTOCOL, offset=offset, part=part)


# --- the binary message ---------------------------------------------------------------------

def _truncated(what: str, offset: int) -> FrameError:
    return _err(PayloadError, f"message ends inside {what}", Category.TRUNCATED, offset)


def _field(body: bytes, pos: int, base: int, what: str, index: int = 0) -> tuple[Optional[str], int]:
    """The u16-length UTF-8 string at ``pos`` ("Message Format": length 0 = absent) and the
    position after it. ``what`` names it in errors, ``{}`` standing for ``index`` (a header's
    number): formatted only for an error."""
    try:
        (n,) = _U16.unpack_from(body, pos)
    except struct.error:
        raise _truncated("the length of " + what.format(index), base + len(body)) from None
    if n == 0:
        return None, pos + 2
    start = pos + 2
    end = start + n
    if end > len(body):
        raise _truncated(what.format(index), base + len(body))
    try:
        return body[start:end].decode("utf-8"), end
    except UnicodeDecodeError:
        raise _err(PayloadError, f"{what.format(index)} is not UTF-8", Category.BAD_ENCODING,
                   base + start) from None


MAX_JSON_DEPTH = strict_json.MAX_DEPTH
#: ``_absent(s, s)``: None for "" (a field of length 0), else ``s``; a lookup, not a branch.
_absent = {"": None}.get
_json_encode = strict_json.dumps


def parse_message(body: bytes, base: int = 0) -> Message:
    """One (decompressed) body.

    A well-formed body, the usual case, is read with one bounds test, at the end: the reads
    only move forward, so if the last one ends at the body's end, each lay inside it. Any
    other body (a read past the end, bad UTF-8 or JSON, an unknown type, an empty id or
    header name, bytes left over) is read again by :func:`_parse_checked`, which tests each
    field as it reads it and raises the error. A field costs a slice and a decode here, not
    a call and two tests: the fuzzers trace every call and branch."""
    try:
        version, kind = _VT.unpack_from(body, 0)
        pos = 4 + _U16.unpack_from(body, 2)[0]
        mid = body[4:pos].decode("utf-8")
        if kind in _KNOWN_TYPES and mid:
            start = pos + 2
            pos = start + _U16.unpack_from(body, pos)[0]
            queue = body[start:pos].decode("utf-8")
            (n,) = _U32.unpack_from(body, pos)
            start = pos + 4
            pos = start + n
            payload = None
            if n and pos <= len(body):               # past the end: the next read fails
                payload = strict_json.loads(body[start:pos].decode("utf-8"))
            (count,) = _U16.unpack_from(body, pos)
            pos += 2
            headers = None
            if count:
                headers = {}
                for _ in range(count):
                    start = pos + 2
                    pos = start + _U16.unpack_from(body, pos)[0]
                    key = body[start:pos].decode("utf-8")
                    start = pos + 2
                    pos = start + _U16.unpack_from(body, pos)[0]
                    value = body[start:pos].decode("utf-8")
                    headers[key] = _absent(value, value)
                if "" in headers:
                    return _parse_checked(body, base)
            error_code = error_message = ""
            if pos < len(body):
                start = pos + 2
                pos = start + _U16.unpack_from(body, pos)[0]
                error_code = body[start:pos].decode("utf-8")
                start = pos + 2
                pos = start + _U16.unpack_from(body, pos)[0]
                error_message = body[start:pos].decode("utf-8")
            if pos == len(body):
                return Message(kind, mid, _absent(queue, queue), payload, headers,
                               _absent(error_code, error_code), _absent(error_message, error_message),
                               version)
    except (struct.error, ValueError):       # a read past the end; bad UTF-8 or JSON
        pass
    return _parse_checked(body, base)


def _parse_checked(body: bytes, base: int) -> Message:
    """:func:`parse_message` field by field, each checked as it is read."""
    if len(body) < 2:
        raise _truncated("the version and type", base + len(body))
    version, kind = _VT.unpack_from(body, 0)
    if kind not in _KNOWN_TYPES:
        raise _err(UnknownTypeError, f"unknown command type {kind}", Category.UNKNOWN_TYPE, base + 1,
                   "command-type")
    mid, pos = _field(body, 2, base, "the id")
    if mid is None:
        raise _err(PayloadError, "the id is empty (it must be non-empty)", Category.BAD_VALUE, base + 2,
                   "id")
    queue, pos = _field(body, pos, base, "the queue")
    try:
        (plen,) = _U32.unpack_from(body, pos)
    except struct.error:
        raise _truncated("the payload length", base + len(body)) from None
    pos += 4
    payload = None
    if plen:
        at = pos
        pos += plen
        if pos > len(body):
            raise _truncated("the payload", base + len(body))
        try:
            text = body[at:pos].decode("utf-8")
        except UnicodeDecodeError:
            raise _err(PayloadError, "the payload is not UTF-8", Category.BAD_ENCODING, base + at,
                       "payload") from None
        try:
            payload = strict_json.loads(text)
        except strict_json.JSONProblem as exc:
            category = Category.BAD_VALUE if exc.kind == strict_json.DEPTH else Category.BAD_ENCODING
            detail = f"the payload {exc.message}" if exc.kind in (strict_json.DEPTH, strict_json.SURROGATE) \
                else f"the payload is not JSON: {exc.message}"
            part = {strict_json.DEPTH: "json-depth", strict_json.SURROGATE: "json-surrogate"}.get(exc.kind, "payload")
            raise _err(PayloadError, detail, category, base + at, part) from None
    try:
        (count,) = _U16.unpack_from(body, pos)
    except struct.error:
        raise _truncated("the header count", base + len(body)) from None
    pos += 2
    headers = None
    if count:
        headers = {}
        for i in range(count):
            key, pos = _field(body, pos, base, "header {}'s name", i)
            value, pos = _field(body, pos, base, "header {}'s value", i)
            if key is None:
                raise _err(PayloadError, f"header {i} has an empty name", Category.BAD_VALUE,
                           base + pos)
            headers[key] = value
    error_code = error_message = None
    if pos < len(body):                # the real codec stops after the headers (SPEC_NOTES)
        error_code, pos = _field(body, pos, base, "the errorCode")
        error_message, pos = _field(body, pos, base, "the errorMessage")
        if pos != len(body):
            raise _err(PayloadError, f"{len(body) - pos} bytes after the message",
                       Category.TRAILING_BYTES, base + pos)
    return Message(kind, mid, queue, payload, headers, error_code, error_message, version)


def _string(value: Optional[str], what: str) -> bytes:
    raw = (value or "").encode("utf-8")
    if len(raw) > 0xFFFF:
        raise ValueError(f"{what} is longer than 65,535 bytes")
    return _U16.pack(len(raw)) + raw


def encode_body(message: Message, profile: str = "document") -> bytes:
    """The binary message. ``document`` writes errorCode/errorMessage always; the real codec
    (``vibemq-1.8``, ``vibemq-1.0``) only in Error."""
    if not message.id:
        raise ValueError("a message needs a non-empty id")
    out = bytearray(_VT.pack(message.version, message.type))
    out += _string(message.id, "the id")
    out += _string(message.queue, "the queue")
    if message.payload is None:
        out += _U32.pack(0)
    else:
        raw = _json_encode(message.payload).encode("utf-8")
        out += _U32.pack(len(raw)) + raw
    headers = message.headers or {}
    if len(headers) > 0xFFFF:
        raise ValueError("more than 65,535 headers")
    out += _U16.pack(len(headers))
    for key, value in headers.items():
        if not key:
            raise ValueError("a header needs a name")
        out += _string(key, "a header name") + _string(value, "a header value")
    if profile == "document" or message.type == CommandType.ERROR:
        out += _string(message.error_code, "the errorCode") + _string(message.error_message, "the errorMessage")
    return bytes(out)


def encode(message: Message, profile: str = "document", compression: Optional[int] = None) -> bytes:
    """One frame. ``compression``: the flag to write (default: the message's own)."""
    flag = message.compression if compression is None else compression
    body = comp.compress(encode_body(message, profile), flag)
    if profile == "vibemq-1.0":
        if flag != Compression.NONE:
            raise ValueError("protocol 1.0 frames have no compression")
        return _U32.pack(len(body)) + body
    return _HEAD.pack(len(body), flag) + body


# --- frames ---------------------------------------------------------------------------------

class Decoder(IncrementalDecoder):
    """Incremental frame decoder. ``profile`` picks the framing (``vibemq-1.0``: no flags
    byte); message bodies are read tolerantly in every profile."""

    protocol = PROTOCOL

    def __init__(self, limits: Optional[VibeLimits] = None, *, profile: Optional[str] = None,
                 origin: Optional[str] = None) -> None:
        self.limits = limits or _DEFAULT_LIMITS
        self.profile = profile or "document"
        self.origin = origin
        self.flags = self.profile != "vibemq-1.0"
        self._head = 4 + self.flags
        self._buf = FrameBuffer()
        self._error: Optional[FrameError] = None
        # Bytes the frame in hand needs before reading it again can change anything (the
        # checks so far, "Framing": length bounds, then the flags byte, read bytes that stay
        # buffered): with fewer, next_frame answers None at once, so reads of a byte or two
        # cost one comparison. More than the header: the header was checked, and its flag
        # is ``_flag``.
        self._frame_need = 4
        self._flag = Compression.NONE

    @property
    def buffered(self) -> int:
        return len(self._buf)

    @property
    def consumed(self) -> int:
        """Stream offset just past the frames read so far (core/decoding.py
        ``InPlaceDecoder.consumed``): one frame per ``next_frame``."""
        return self._buf.offset

    def receive(self, data) -> None:
        if self._error is None:
            self._buf.feed(data)

    def _fail(self, error: FrameError) -> FrameError:
        self._error = error
        return error

    def next_frame(self) -> Optional[Message]:
        if self._error is not None:
            raise self._error
        data, pos, start = self._buf.window()    # one call, not one per header field
        available = len(data) - pos
        need = self._frame_need
        if available < need:
            return None
        head = self._head
        if need > head:
            # The header was checked when it came (need = head + its length; the limits are
            # the decoder's for life): the frame is whole now, checking again would repeat.
            size, flag = need - head, self._flag
        else:
            (size,) = _U32.unpack_from(data, pos)
            if size < MIN_BODY:
                raise self._fail(_err(LengthError, f"body length {size} < {MIN_BODY}",
                                      Category.LENGTH_TOO_SMALL, start))
            if size > self.limits.max_frame_size:
                raise self._fail(_err(LengthError, f"body length {size} > {self.limits.max_frame_size}",
                                      Category.LENGTH_TOO_LARGE, start))
            flag = Compression.NONE
            if self.flags:
                if available < head:             # the length only, so far
                    self._frame_need = head
                    return None
                flag = data[pos + 4]
                if flag not in _FLAGS:
                    raise self._fail(_err(UnknownTypeError, f"unknown compression flag 0x{flag:02x}",
                                          Category.UNKNOWN_TYPE, start + 4, "compression-flag"))
            if available < head + size:
                self._frame_need = head + size
                self._flag = flag
                return None
        self._frame_need = 4
        body = self._buf.take(size, skip=head)
        at = start + head
        if flag == Compression.NONE:
            message = parse_message(body, at)
        else:
            body = comp.decompress(body, flag, self.limits.max_decompressed, at)
            try:
                message = parse_message(body, at)
            except FrameError as exc:
                # A position inside the inflated bytes is no position in the stream: the
                # error is reported at the compressed body's first byte.
                exc.offset = at
                raise
        message.compression = flag
        return message


def decode_all(data: bytes, limits: Optional[VibeLimits] = None, **options) -> list:
    return _decode_all(Decoder(limits, **options), data)


def make_decoder(limits=None, origin=None, profile=None) -> Decoder:
    return Decoder(limits, profile=profile, origin=origin)


# --- the document's JSON view ---------------------------------------------------------------

def from_json(obj: dict) -> Message:
    """A message from the document's logical JSON form ("Logical Structure")."""
    kind = obj["type"]
    kind = TYPE_BY_NAME[kind] if isinstance(kind, str) else CommandType(kind)
    return Message(int(kind), obj.get("id"), obj.get("queue"), obj.get("payload"),
                   obj.get("headers"), obj.get("errorCode"), obj.get("errorMessage"),
                   obj.get("version", PROTOCOL_VERSION))


def to_json(message: Message) -> dict:
    out: dict = {"version": message.version, "id": message.id, "type": message.type_name}
    for key, name in (("queue", "queue"), ("payload", "payload"), ("headers", "headers"),
                      ("error_code", "errorCode"), ("error_message", "errorMessage")):
        value = getattr(message, key)
        if value is not None:
            out[name] = value
    return out


def frame_to_dict(message: Message) -> dict:
    """JSON-friendly view for the CLI and transcripts."""
    out = {"type": message.type_name}
    out.update({k: v for k, v in to_json(message).items() if k != "type"})
    if message.compression:
        out["compression"] = int(message.compression)
    return out


