"""What SignalR's HTTP/1.1 + WebSocket transport is made of, for the capture decoder
(http_transport.py): the bounds it keeps, the transport's frames (an HTTP request or
response, a WebSocket close, ping or pong) and their JSON views, header lookups and
WebSocket unmasking."""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, fields
from typing import Optional

from . import codec
from .codec import SignalRLimits

#: Bounds (STYLE 7), far above what real clients send (a negotiate head is under 1 KiB, its
#: answer a few hundred bytes; the reference hub takes WebSocket messages up to 1 MiB).
MAX_HEADER_BLOCK = 64 * 1024
MAX_HEADER_FIELDS = 100
MAX_BODY = 1024 * 1024
MAX_MESSAGE = 16 * 1024 * 1024
#: A chunk-size line with its extensions (RFC 9112 7.1.1).
MAX_CHUNK_LINE = 4096
#: Bytes of a stream's start looked at before deciding it is not HTTP.
SNIFF_LIMIT = 64
MAX_METHOD = 20

# RFC 6455 5.2: opcodes, and the 2-byte head, 16/64-bit extended lengths, masking key.
OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_FRAME_HEAD = struct.Struct("!BB")
_LENGTH16 = struct.Struct("!H")
_LENGTH64 = struct.Struct("!Q")
_MASK_KEY = struct.Struct("4s")
_MAX_CONTROL = 125

# RFC 9112 3, 4, 5 and RFC 9110 5.6.2 (token).
_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_REQUEST_LINE = re.compile(rf"({_TOKEN}) ([\x21-\x7e]+) (HTTP/(\d)\.\d)")
_STATUS_LINE = re.compile(r"(HTTP/(\d)\.\d) (\d{3})(?: ([\t\x20-\x7e\x80-\xff]*))?")
_FIELD_NAME = re.compile(_TOKEN)
_FIELD_VALUE_BAD = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_CHUNK_SIZE = re.compile(r"([0-9A-Fa-f]+)[ \t]*(?:;[\t\x20-\x7e\x80-\xff]*)?")

Headers = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class TransportLimits(SignalRLimits):
    """The hub's limits (``max_frame_size``: one hub record; ``strict_varint``) and the
    transport's: ``max_header_block`` (start line and fields, or a chunked body's trailer),
    ``max_header_fields``, ``max_body`` (one HTTP body) and ``max_message`` (one WebSocket
    message, all its fragments; also bounds the one frame held)."""
    max_header_block: int = MAX_HEADER_BLOCK
    max_header_fields: int = MAX_HEADER_FIELDS
    max_body: int = MAX_BODY
    max_message: int = MAX_MESSAGE


def transport_limits(limits) -> TransportLimits:
    """``limits`` as :class:`TransportLimits` (hub limits alone get the transport defaults)."""
    if limits is None:
        return TransportLimits()
    if isinstance(limits, TransportLimits):
        return limits
    return TransportLimits(**{fl.name: getattr(limits, fl.name) for fl in fields(limits)})


# --- frames -------------------------------------------------------------------------------------

def header_values(headers: Headers, name: str) -> list[str]:
    """Every value of the field ``name`` (case-insensitive), in order."""
    name = name.lower()
    return [value for key, value in headers if key.lower() == name]


def _tokens(headers: Headers, name: str) -> list[str]:
    """The comma-separated elements of every ``name`` field, lower-cased."""
    return [item.strip().lower() for value in header_values(headers, name)
            for item in value.split(",") if item.strip()]


@dataclass(frozen=True, slots=True)
class HttpRequest:
    method: str
    target: str
    version: str
    headers: Headers
    body: bytes


@dataclass(frozen=True, slots=True)
class HttpResponse:
    version: str
    status: int
    reason: str
    headers: Headers
    body: bytes


@dataclass(frozen=True, slots=True)
class WebSocketClose:
    """``code`` None: an empty close body (RFC 6455 5.5.1)."""
    code: Optional[int]
    reason: str


@dataclass(frozen=True, slots=True)
class WebSocketPing:
    payload: bytes


@dataclass(frozen=True, slots=True)
class WebSocketPong:
    payload: bytes


TRANSPORT_FRAMES = (HttpRequest, HttpResponse, WebSocketClose, WebSocketPing, WebSocketPong)


def _valid_close_code(code: int) -> bool:
    """RFC 6455 7.4.1-7.4.2 and the IANA registry: 1004-1006 and 1015 are never sent."""
    return 1000 <= code <= 1003 or 1007 <= code <= 1014 or 3000 <= code <= 4999


def _unmask(data: bytes, key: bytes) -> bytes:
    """RFC 6455 5.3: byte i XOR key[i % 4], done on two whole integers rather than per byte."""
    n = len(data)
    whole, rest = divmod(n, 4)
    stream = key * whole + key[:rest]
    return (int.from_bytes(data, "little") ^ int.from_bytes(stream, "little")).to_bytes(n, "little")


# --- views --------------------------------------------------------------------------------------

def _text_or_hex(data: bytes):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": data.hex()}


def _headers(headers: Headers) -> list[list[str]]:
    return [[name, value] for name, value in headers]


_VIEWS = {
    HttpRequest: lambda f: {"method": f.method, "target": f.target, "version": f.version,
                            "headers": _headers(f.headers), "body": _text_or_hex(f.body)},
    HttpResponse: lambda f: {"version": f.version, "status": f.status, "reason": f.reason,
                             "headers": _headers(f.headers), "body": _text_or_hex(f.body)},
    WebSocketClose: lambda f: {"code": f.code, "reason": f.reason},
    WebSocketPing: lambda f: {"payload": _text_or_hex(f.payload)},
    WebSocketPong: lambda f: {"payload": _text_or_hex(f.payload)},
}


def frame_to_dict(frame) -> dict:
    """JSON-friendly view of a transport frame (headers as ``[name, value]`` pairs, in order;
    bodies and payloads as text when UTF-8, else ``{"hex": ...}``) or of a hub message
    (:func:`.codec.frame_to_dict`)."""
    view = _VIEWS.get(type(frame))
    if view is None:
        return codec.frame_to_dict(frame)
    return {"type": type(frame).__name__, **view(frame)}
