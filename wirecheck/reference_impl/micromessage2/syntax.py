"""The text syntaxes of Micromessage2: FIELD names, URL-encoded values, extension lists
(``name:key=value,key=value;name``), COMMAND payloads (``name;key=value,...``) and MESSAGE
properties (``key:value;key:value;``).

Every parser raises :class:`~reference_impl.core.errors.PayloadError` (``BAD_VALUE`` for
syntax, ``BAD_ENCODING`` for bad percent-escapes or UTF-8) with ``offset`` relative to the
start of the text; callers add where the text starts in the stream.

``strict`` applies the document's FIELD rule ("7-bit lower case ASCII. letters, digits and
hyphen") to names and keys. The real implementation writes ``MessagesPerAck``, and the
document's own property example uses ``first_name``, so the lenient reading (``strict=False``,
profile ``sharpmessaging``) allows ASCII letters of either case, digits, ``-`` and ``_``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core.errors import Category, PayloadError
from .constants import PROTOCOL

_FIELD = re.compile(r"[a-z0-9-]+\Z")
_LENIENT_FIELD = re.compile(r"[A-Za-z0-9_-]+\Z")
_HEX = frozenset(b"0123456789abcdefABCDEF")
#: Bytes written as they are by :func:`url_encode` (RFC 3986 unreserved characters).
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _bad(message: str, offset: int, category: Category = Category.BAD_VALUE, part: str = "") -> PayloadError:
    return PayloadError(message, category=category, protocol=PROTOCOL, offset=offset, part=part)


def is_field(name: str, strict: bool = True) -> bool:
    return bool((_FIELD if strict else _LENIENT_FIELD).match(name))


def check_field(name: str, what: str, offset: int, strict: bool) -> str:
    if not name:
        raise _bad(f"{what} is empty", offset)
    if not is_field(name, strict):
        rule = "lower-case ASCII letters, digits and '-'" if strict else "ASCII letters, digits, '-' and '_'"
        raise _bad(f"{what} {name!r} is not a FIELD ({rule})", offset)
    return name


def url_encode(text: str) -> str:
    """Percent-encode everything but the unreserved characters (so ``;``, ``,``, ``=``, ``:``
    and ``%`` inside a value can never be read as syntax)."""
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in text.encode("utf-8"))


def url_decode(text: str, offset: int = 0) -> str:
    """Strict percent-decoding: ``%`` must start two hex digits; the bytes must be UTF-8."""
    if "%" not in text:
        return text
    raw = text.encode("utf-8")
    # Split at every '%' rather than walk byte by byte (a fuzzer traces every pass of a loop):
    # each piece after the first starts with the two hex digits of its escape, and a valid
    # escape holds no '%', so the pieces are exactly the escapes' spans. ``i``: where the '%'
    # of the piece is in ``raw``.
    first, *rest = raw.split(b"%")
    out = bytearray(first)
    i = len(first)
    for piece in rest:
        pair = piece[:2]
        if len(pair) != 2 or pair[0] not in _HEX or pair[1] not in _HEX:
            raise _bad(f"bad percent-escape at {i}", offset + i, Category.BAD_ENCODING)
        out.append(int(pair, 16))
        out += piece[2:]
        i += 1 + len(piece)
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad("percent-escapes do not decode as UTF-8", offset, Category.BAD_ENCODING) from None


def lookup(pairs, key: str, default: str | None = None) -> str | None:
    """The value of the first ``(key, value)`` pair named ``key`` (pairs or a dict)."""
    items = pairs.items() if isinstance(pairs, dict) else pairs
    return next((v for k, v in items if k == key), default)


# --- extension lists ("Handshake") ------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Extension:
    """One entry of RequiredExtensions/OptionalExtensions: a name and its properties (values
    already URL-decoded), in the order written."""
    name: str
    properties: tuple[tuple[str, str], ...] = field(default=())

    def get(self, key: str, default: str | None = None) -> str | None:
        return lookup(self.properties, key, default)

    def __str__(self) -> str:
        return format_extensions((self,))


def parse_extensions(text: str, strict: bool = True, offset: int = 0) -> tuple[Extension, ...]:
    """``name[:key=value,...](;name...)``; a trailing ``;`` is allowed (the document writes
    both ``json;xml;protobuf`` and ``json;xml;protobuf;``). Empty text: no extensions.

    Erratum 3 (SPEC_NOTES): the document also writes ``batch-ack:max-count:100``; a property
    without ``=`` whose key and value are joined by ``:`` is read as ``key=value``."""
    out: list[Extension] = []
    if not text:
        return ()
    pos = 0
    entries = text.split(";")
    if entries[-1] == "":
        entries.pop()
    names: set[str] = set()
    for entry in entries:
        at = offset + pos
        pos += len(entry) + 1
        name, colon, props = entry.partition(":")
        check_field(name, "extension name", at, strict)
        if name in names:
            raise _bad(f"extension {name!r} listed twice", at)
        names.add(name)
        properties: list[tuple[str, str]] = []
        if colon:
            if not props:
                raise _bad(f"extension {name!r} has ':' but no properties", at)
            ppos = at + len(name) + 1
            for prop in props.split(","):
                key, eq, value = prop.partition("=")
                if not eq:
                    key, eq, value = prop.partition(":")     # erratum 3: max-count:100
                if not eq:
                    raise _bad(f"property {prop!r} of {name!r} has no value", ppos)
                check_field(key, f"property name of {name!r}", ppos, strict)
                properties.append((key, url_decode(value, ppos + len(key) + 1)))
                ppos += len(prop) + 1
        out.append(Extension(name, tuple(properties)))
    return tuple(out)


def format_extensions(extensions) -> str:
    """The wire text: entries joined by ``;`` (no trailing one), values URL-encoded."""
    parts = []
    for ext in extensions:
        if ext.properties:
            parts.append(ext.name + ":" + ",".join(f"{k}={url_encode(v)}" for k, v in ext.properties))
        else:
            parts.append(ext.name)
    return ";".join(parts)


# --- COMMAND payloads ("COMMAND") -------------------------------------------------------------

def parse_command(text: str, strict: bool = True, offset: int = 0) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``name`` or ``name;key=value,key=value`` (values URL-decoded). Its errors have
    FrameError.part "command"."""
    try:
        name, semi, rest = text.partition(";")
        check_field(name, "command name", offset, strict)
        args: list[tuple[str, str]] = []
        if semi and rest:
            pos = offset + len(name) + 1
            for pair in rest.split(","):
                key, eq, value = pair.partition("=")
                if not eq:
                    raise _bad(f"command argument {pair!r} has no '='", pos)
                check_field(key, "command argument name", pos, strict)
                args.append((key, url_decode(value, pos + len(key) + 1)))
                pos += len(pair) + 1
        return name, tuple(args)
    except PayloadError as exc:
        exc.part = "command"
        raise


def format_command(name: str, args=()) -> str:
    items = args.items() if isinstance(args, dict) else args
    text = ",".join(f"{k}={url_encode(v)}" for k, v in items)
    return f"{name};{text}" if text else name


# --- MESSAGE properties ("MESSAGE", "FILTER_VALUE") -------------------------------------------

def parse_properties(text: str, offset: int = 0) -> tuple[tuple[str, str], ...]:
    """``key:value;key:value;`` (the trailing ``;`` optional). Values stay as written (a typed
    FILTER_VALUE such as ``N1`` or ``THello%20x`` is read by :mod:`.filters`). Keys must be
    non-empty and free of ``:``; FIELD strictness of keys is the session's business."""
    if not text:
        return ()
    entries = text.split(";")
    if entries[-1] == "":
        entries.pop()
    out: list[tuple[str, str]] = []
    pos = offset
    for entry in entries:
        key, colon, value = entry.partition(":")
        if not colon or not key:
            raise _bad(f"property {entry!r} is not key:value", pos, part="properties")
        out.append((key, value))
        pos += len(entry) + 1
    return tuple(out)


def format_properties(properties) -> str:
    items = properties.items() if isinstance(properties, dict) else properties
    return "".join(f"{k}:{v};" for k, v in items)
