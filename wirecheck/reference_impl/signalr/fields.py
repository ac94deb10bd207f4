"""Checks of message field values, shared by the JSON and MessagePack protocols.

Each check returns the value (normalised) or raises :class:`PayloadError` with the category a
session can answer on: a wrong type is BAD_VALUE; a missing field MISSING_FIELD; a field the
message type does not have UNKNOWN_FIELD; result and error together CONFLICTING_FIELDS
("Completion Message Encoding": "It is a protocol error to include both").
"""
from __future__ import annotations

from ..core.errors import Category, PayloadError
from .constants import PROTOCOL

#: 64-bit signed range of sequence ids (Ack/Sequence carry a C# long).
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def bad(message: str, category: Category, offset: int, part: str = "") -> PayloadError:
    """``part``: the field at fault, by its name in the document (FrameError.part), so that a
    reader maps it to the rule it breaks (an id-less Completion: conformance/suites/signalr)."""
    return PayloadError(message, category=category, protocol=PROTOCOL, offset=offset, part=part)


def missing(kind: str, name: str, offset: int) -> PayloadError:
    return bad(f"{kind} has no '{name}'", Category.MISSING_FIELD, offset, name)


def string(value, name: str, offset: int) -> str:
    if type(value) is not str:
        raise bad(f"'{name}' must be a string, not {_kind(value)}", Category.BAD_VALUE, offset, name)
    return value


def array(value, name: str, offset: int) -> list:
    if type(value) is not list:
        raise bad(f"'{name}' must be an array, not {_kind(value)}", Category.BAD_VALUE, offset, name)
    return value


def boolean(value, name: str, offset: int) -> bool:
    if type(value) is not bool:
        raise bad(f"'{name}' must be a boolean, not {_kind(value)}", Category.BAD_VALUE, offset, name)
    return value


def integer(value, name: str, offset: int) -> int:
    if type(value) is not int:
        raise bad(f"'{name}' must be an integer, not {_kind(value)}", Category.BAD_VALUE, offset, name)
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise bad(f"'{name}' {value} is outside the 64-bit range", Category.BAD_VALUE, offset, name)
    return value


def headers(value, name: str, offset: int):
    """A map of strings to strings; an empty map reads as absent (None), so a message decodes
    the same whether a client writes ``"headers": {}`` or leaves the field out."""
    if type(value) is not dict:
        raise bad(f"'{name}' must be a map, not {_kind(value)}", Category.BAD_VALUE, offset, name)
    for k, v in value.items():
        if type(k) is not str or type(v) is not str:
            raise bad(f"'{name}' must map strings to strings", Category.BAD_VALUE, offset, name)
    return value or None


def stream_ids(value, name: str, offset: int) -> list:
    if type(value) is not list or any(type(v) is not str for v in value):
        raise bad(f"'{name}' must be an array of strings", Category.BAD_VALUE, offset, name)
    return value


def message_type(value, offset: int) -> int:
    if type(value) is not int:
        raise bad(f"message type must be an integer, not {_kind(value)}", Category.BAD_VALUE, offset)
    return value


def _kind(value) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "a map", bytes: "binary"}.get(type(value), type(value).__name__)
