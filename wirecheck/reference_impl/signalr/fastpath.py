"""The common case of v1 decoding, fast: well-formed messages of today's clients and servers.

Each function takes one record's body and returns the message, or None when anything is
unusual (an error, a rare field, a value the fast parser reads differently); the caller then
runs the careful parser (:mod:`.json_protocol`, :mod:`.msgpack_protocol`), which is the
definition: it decides every error and its category. The fast path may only ever answer what
the careful one would, which tests/reference_impl/signalr/test_signalr_fastpath.py checks on generated and hostile
records.

Why it is faster: ``orjson`` for JSON (the stdlib ``json`` is the careful reader), direct
field reads per message type instead of the generic field tables, and no checks repeated for
fields that are absent. ``orjson`` differs from ``json`` in one way that matters: it reads an
integer beyond 64 bits as a float, so a record with a run of 19 or more digits goes the
careful way.
"""
from __future__ import annotations

import msgpack
import orjson

from .json_protocol import MAX_DEPTH, too_deep
from .messages import (Ack, CancelInvocation, Close, Completion, Invocation, Ping, Sequence,
                       StreamInvocation, StreamItem)

_loads = orjson.loads
_JSONError = orjson.JSONDecodeError
_unpackb = msgpack.unpackb
#: Digits mapped to "0", so that a run of 19 digits is a plain substring search (C speed;
#: a regular expression costs ~20 ns per byte here).
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_NINETEEN = b"0" * 19


def _long_digits(record: bytes) -> bool:
    return _NINETEEN in record.translate(_DIGITS_TO_ZERO)
_ABSENT = object()
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _ok_headers(value) -> bool:
    return all(type(k) is str and type(v) is str for k, v in value.items())


def _ok_ids(value) -> bool:
    return all(type(v) is str for v in value)


# --- JSON -------------------------------------------------------------------------------------

def _json_invocation(obj: dict, cls):
    target, args = obj.get("target"), obj.get("arguments")
    iid = obj.get("invocationId")
    if type(target) is not str or type(args) is not list:
        return None
    sids, headers = obj.get("streamIds"), obj.get("headers")
    if sids is not None and (type(sids) is not list or not _ok_ids(sids)):
        return None
    if headers is not None and (type(headers) is not dict or not _ok_headers(headers)):
        return None
    if cls is Invocation:
        if iid is not None and type(iid) is not str:
            return None
        return Invocation(target, args, iid or None, headers or None, sids)
    if type(iid) is not str:
        return None
    return StreamInvocation(iid, target, args, headers or None, sids)


def _json_item(obj: dict, cls):
    iid, item, headers = obj.get("invocationId"), obj.get("item", _ABSENT), obj.get("headers")
    if type(iid) is not str or item is _ABSENT or (headers is not None and (
            type(headers) is not dict or not _ok_headers(headers))):
        return None
    return StreamItem(iid, item, headers or None)


def _json_completion(obj: dict, cls):
    iid, headers = obj.get("invocationId"), obj.get("headers")
    if type(iid) is not str or (headers is not None and (
            type(headers) is not dict or not _ok_headers(headers))):
        return None
    error, result = obj.get("error"), obj.get("result", _ABSENT)
    if error is not None:
        if type(error) is not str or result is not _ABSENT:
            return None
        return Completion(iid, None, error, False, headers or None)
    if result is _ABSENT:
        return Completion(iid, None, None, False, headers or None)
    return Completion(iid, result, None, True, headers or None)


def _json_cancel(obj: dict, cls):
    iid, headers = obj.get("invocationId"), obj.get("headers")
    if type(iid) is not str or (headers is not None and (
            type(headers) is not dict or not _ok_headers(headers))):
        return None
    return CancelInvocation(iid, headers or None)


def _json_close(obj: dict, cls):
    error, allow = obj.get("error"), obj.get("allowReconnect")
    if (error is not None and type(error) is not str) or (allow is not None and type(allow) is not bool):
        return None
    return Close(error, allow)


def _json_sequence(obj: dict, cls):
    seq = obj.get("sequenceId")
    if type(seq) is not int or not _LONG_MIN <= seq <= _LONG_MAX:
        return None
    return cls(seq)


_JSON_V1 = {1: (_json_invocation, Invocation), 2: (_json_item, StreamItem),
            3: (_json_completion, Completion), 4: (_json_invocation, StreamInvocation),
            5: (_json_cancel, CancelInvocation), 6: (lambda obj, cls: Ping(), Ping),
            7: (_json_close, Close), 8: (_json_sequence, Ack), 9: (_json_sequence, Sequence)}


def json_v1(record: bytes):
    try:
        obj = _loads(record)
    except _JSONError:
        return None
    if type(obj) is not dict or too_deep(record):
        return None
    kind = obj.get("type")
    handler = _JSON_V1.get(kind) if type(kind) is int else None
    if handler is None or _long_digits(record):
        return None
    return handler[0](obj, handler[1])


# --- MessagePack ------------------------------------------------------------------------------

def _mp_headers(value):
    """Headers as the careful parser reads them, or _ABSENT if unusual."""
    if type(value) is not dict:
        return _ABSENT
    if not value:
        return None
    return value if _ok_headers(value) else _ABSENT


def msgpack_v1(body: bytes):
    if not body:
        return None
    try:
        items = _unpackb(body, raw=False, strict_map_key=False)
    except (ValueError, TypeError, OverflowError, RecursionError):
        return None
    return _msgpack_items(items)


def _msgpack_items(items):
    if type(items) is not list or not items:
        return None
    kind, n = items[0], len(items)
    if type(kind) is not int:
        return None
    if kind == 6:
        return Ping()
    if kind == 7:
        if n < 2:
            return None
        error = items[1]
        allow = items[2] if n > 2 else None
        if (error is not None and type(error) is not str) or (n > 2 and type(allow) is not bool):
            return None
        return Close(error, allow)
    if kind in (8, 9):
        if n < 2 or type(items[1]) is not int or not _LONG_MIN <= items[1] <= _LONG_MAX:
            return None
        return Ack(items[1]) if kind == 8 else Sequence(items[1])
    if n < 3 or not 1 <= kind <= 5:
        return None
    headers = _mp_headers(items[1])
    if headers is _ABSENT:
        return None
    iid = items[2]
    if kind == 1 or kind == 4:
        if n < 5:
            return None
        target, args = items[3], items[4]
        sids = items[5] if n > 5 else None
        if type(target) is not str or type(args) is not list or (
                n > 5 and (type(sids) is not list or not _ok_ids(sids))):
            return None
        if kind == 1:
            if iid is not None and type(iid) is not str:
                return None
            return Invocation(target, args, iid or None, headers, sids)
        if type(iid) is not str:
            return None
        return StreamInvocation(iid, target, args, headers, sids)
    if type(iid) is not str:
        return None
    if kind == 2:
        return StreamItem(iid, items[3], headers) if n > 3 else None
    if kind == 3:
        if n < 4 or type(items[3]) is not int:
            return None
        result_kind = items[3]
        if result_kind == 2:
            return Completion(iid, None, None, False, headers)
        if n < 5:
            return None
        if result_kind == 3:
            return Completion(iid, items[4], None, True, headers)
        if result_kind == 1 and type(items[4]) is str:
            return Completion(iid, None, items[4], False, headers)
        return None
    return CancelInvocation(iid, headers)


# --- batches: one call per batch of records, the common types inline -------------------------

def json_v1_batch(block: bytes, lazy: bool = False) -> list:
    """``json_v1`` of each record of ``block`` (records joined by 0x1E; None where the careful
    parser must decide). ``lazy``: only up to the first None. A record's answer depends on that
    record alone, so a decoder may ask for the rest later, or never: a stream whose error is
    that record's is not read further for nothing (the fuzzers' inputs, mostly)."""
    check_digits = _NINETEEN in block.translate(_DIGITS_TO_ZERO)
    try:
        # orjson reads a str (already checked UTF-8) faster than bytes it must check itself.
        texts = block.decode("utf-8").split("\x1e")
    except UnicodeDecodeError:
        texts = block.split(b"\x1e")               # some record is not UTF-8: each on its own
    out = _json_records(texts, check_digits)
    while not lazy and len(out) < len(texts):
        out += _json_records(texts[len(out):], check_digits)
    return out


def _json_records(texts: list, check_digits: bool) -> list:
    """json_v1_batch's answers, up to the first None (``check_digits``: whether the block
    has a run of 19 digits at all; with none, no record has)."""
    loads, error, handlers = _loads, _JSONError, _JSON_V1
    out = []
    append = out.append
    for text in texts:
        try:
            obj = loads(text)
        except error:
            append(None)
            break
        # too_deep counts brackets in a str as in bytes: no re-encoding of every long record.
        if type(obj) is not dict or (check_digits and _long_digits(_encoded(text))) or (
                len(text) > MAX_DEPTH and too_deep(text)):
            append(None)
            break
        kind = obj.get("type")
        if kind == 1 and type(kind) is int:
            # Invocation, inline: the message a server reads most.
            target, args, iid = obj.get("target"), obj.get("arguments"), obj.get("invocationId")
            if (type(target) is str and type(args) is list and (iid is None or type(iid) is str)
                    and "streamIds" not in obj and "headers" not in obj):
                append(Invocation(target, args, iid or None))
                continue
        handler = handlers.get(kind) if type(kind) is int else None
        message = None if handler is None else handler[0](obj, handler[1])
        append(message)
        if message is None:
            break
    return out


def _encoded(text) -> bytes:
    return text if type(text) is bytes else text.encode("utf-8")


def msgpack_v1_batch(bodies: list[bytes], lazy: bool = False) -> list:
    """``msgpack_v1`` of each record; Invocation without headers or streams inline. ``lazy``:
    only up to the first None (as json_v1_batch)."""
    out = _msgpack_records(bodies)
    while not lazy and len(out) < len(bodies):
        out += _msgpack_records(bodies[len(out):])
    return out


def _msgpack_records(bodies: list[bytes]) -> list:
    """msgpack_v1_batch's answers, up to the first None."""
    unpackb, single = _unpackb, _msgpack_items
    out = []
    append = out.append
    for body in bodies:
        try:
            items = unpackb(body, raw=False, strict_map_key=False)
        except (ValueError, TypeError, OverflowError, RecursionError):
            append(None)
            break
        if type(items) is list and len(items) == 5 and items[0] == 1 and type(items[0]) is int \
                and items[1] == {} and type(items[1]) is dict:
            iid, target, args = items[2], items[3], items[4]
            if type(target) is str and type(args) is list and (iid is None or type(iid) is str):
                append(Invocation(target, args, iid or None))
                continue
        message = single(items)
        append(message)
        if message is None:
            break
    return out
