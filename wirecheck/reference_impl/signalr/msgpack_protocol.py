"""The MessagePack hub protocol ("MessagePack (MsgPack) encoding"; SPEC_NOTES for v1).

Each message is one MessagePack array whose first item is the type; positions, not names,
carry the fields. v1 (today's): every message but Ping/Close/Ack/Sequence has a headers map in
position 1; Invocation and StreamInvocation take an optional 6th item, the stream ids (the JS
client writes 5 items without streams, pysignalr always 6). Items past the ones a type defines
are ignored by v1, as by today's servers, and are an unrecognized field in the draft.

Draft (the document): ``[1, Id, NonBlocking, Target, [Args]]``, ``[2, Id, Item]``,
``[3, Id, ResultKind, Result?]`` (erratum: 2 = void, 3 = non-void, as its examples),
``[4, Id, Error?]`` (StreamCompletion), ``[5, Id]``.
"""
from __future__ import annotations

import msgpack

from ..core.errors import Category, UnknownTypeError
from . import fields as f
from .constants import PROTOCOL, ResultKind
from .framing import frame_binary
from .messages import (Ack, CancelInvocation, Close, Completion, Invocation, Ping, Sequence,
                       StreamCompletion, StreamInvocation, StreamItem)

_unpackb = msgpack.unpackb
_packer_options = {"use_bin_type": True}


def load_array(body: bytes, offset: int) -> list:
    if not body:
        raise f.bad("empty MessagePack message", Category.LENGTH_TOO_SMALL, offset)
    try:
        obj = _unpackb(body, raw=False, strict_map_key=False, use_list=True)
    except msgpack.ExtraData:
        raise f.bad("bytes after the MessagePack value", Category.TRAILING_BYTES, offset) from None
    except UnicodeDecodeError as exc:
        raise f.bad(f"string is not UTF-8: {exc.reason}", Category.BAD_ENCODING, offset) from None
    except ValueError as exc:      # OutOfData ("incomplete input") and FormatError/StackError
        # unpackb bounds every declared str/bin/array/map/ext length by the record's size, so
        # "N exceeds max_..._len" is a value that ends past the record, like "incomplete".
        text = str(exc)
        truncated = "incomplete" in text or "exceeds max_" in text
        category = Category.TRUNCATED if truncated else Category.BAD_ENCODING
        raise f.bad(f"not MessagePack: {exc}", category, offset) from None
    except (TypeError, OverflowError, RecursionError) as exc:     # e.g. an unhashable map key
        raise f.bad(f"unusable MessagePack value: {exc}", Category.BAD_VALUE, offset) from None
    if type(obj) is not list:
        raise f.bad("message is not a MessagePack array", Category.BAD_VALUE, offset)
    if not obj:
        raise f.missing("message", "type", offset)
    return obj


def _need(items: list, count: int, what: str, names: tuple[str, ...], offset: int) -> None:
    if len(items) < count:
        raise f.missing(what, names[len(items) - 1] if len(items) - 1 < len(names) else "item", offset)


def _no_extra(items: list, count: int, what: str, offset: int) -> None:
    if len(items) > count:
        raise f.bad(f"{what} has {len(items) - count} unrecognized item(s)", Category.UNKNOWN_FIELD, offset)


_V1_NAMES = {
    1: ("Headers", "InvocationId", "Target", "Arguments"),
    2: ("Headers", "InvocationId", "Item"),
    3: ("Headers", "InvocationId", "ResultKind"),
    4: ("Headers", "InvocationId", "Target", "Arguments"),
    5: ("Headers", "InvocationId"),
    6: (),
    7: ("Error",),
    8: ("SequenceId",),
    9: ("SequenceId",),
}
_DRAFT_NAMES = {
    1: ("InvocationId", "NonBlocking", "Target", "Arguments"),
    2: ("InvocationId", "Item"),
    3: ("InvocationId", "ResultKind"),
    4: ("InvocationId",),
    5: ("InvocationId",),
}


def parse_message(body: bytes, offset: int = 0, profile: str = "v1"):
    items = load_array(body, offset)
    kind = f.message_type(items[0], offset)
    names = (_DRAFT_NAMES if profile == "draft" else _V1_NAMES).get(kind)
    if names is None:
        raise UnknownTypeError(f"unknown message type {kind} ({profile} profile)",
                               category=Category.UNKNOWN_TYPE, protocol=PROTOCOL, offset=offset)
    _need(items, 1 + len(names), f"message type {kind}", names, offset)
    if profile == "draft":
        return _parse_draft(kind, items, offset)
    return _parse_v1(kind, items, offset)


def _completion(invocation_id: str, kind_value, items: list, at: int, headers, offset: int,
                strict_length: bool) -> Completion:
    kind = f.integer(kind_value, "ResultKind", offset)
    if kind == ResultKind.VOID:
        if strict_length:
            _no_extra(items, at, "void Completion", offset)
        return Completion(invocation_id, headers=headers)
    if kind not in (ResultKind.ERROR, ResultKind.NON_VOID):
        raise f.bad(f"ResultKind {kind} (expected 1, 2 or 3)", Category.BAD_VALUE, offset)
    if len(items) <= at:
        raise f.missing("Completion", "Result" if kind == ResultKind.NON_VOID else "Error", offset)
    if strict_length:
        _no_extra(items, at + 1, "Completion", offset)
    if kind == ResultKind.ERROR:
        return Completion(invocation_id, error=f.string(items[at], "Error", offset), headers=headers)
    return Completion(invocation_id, items[at], None, True, headers)


def _parse_v1(kind: int, items: list, offset: int):
    if kind == 6:
        return Ping()
    if kind == 7:
        error = items[1]
        allow = f.boolean(items[2], "AllowReconnect", offset) if len(items) > 2 else None
        return Close(None if error is None else f.string(error, "Error", offset), allow)
    if kind in (8, 9):
        seq = f.integer(items[1], "SequenceId", offset)
        return Ack(seq) if kind == 8 else Sequence(seq)
    headers = f.headers(items[1], "Headers", offset)
    raw_id = items[2]
    if kind == 1:
        invocation_id = None if raw_id is None or raw_id == "" else f.string(raw_id, "InvocationId", offset)
        streams = f.stream_ids(items[5], "StreamIds", offset) if len(items) > 5 else None
        return Invocation(f.string(items[3], "Target", offset), f.array(items[4], "Arguments", offset),
                          invocation_id, headers, streams)
    invocation_id = f.string(raw_id, "InvocationId", offset)
    if kind == 2:
        return StreamItem(invocation_id, items[3], headers)
    if kind == 3:
        return _completion(invocation_id, items[3], items, 4, headers, offset, False)
    if kind == 4:
        streams = f.stream_ids(items[5], "StreamIds", offset) if len(items) > 5 else None
        return StreamInvocation(invocation_id, f.string(items[3], "Target", offset),
                                f.array(items[4], "Arguments", offset), headers, streams)
    return CancelInvocation(invocation_id, headers)


def _parse_draft(kind: int, items: list, offset: int):
    invocation_id = f.string(items[1], "InvocationId", offset)
    if kind == 1:
        _no_extra(items, 5, "Invocation", offset)
        return Invocation(f.string(items[3], "Target", offset), f.array(items[4], "Arguments", offset),
                          invocation_id, nonblocking=f.boolean(items[2], "NonBlocking", offset))
    if kind == 2:
        _no_extra(items, 3, "StreamItem", offset)
        return StreamItem(invocation_id, items[2])
    if kind == 3:
        return _completion(invocation_id, items[2], items, 3, None, offset, True)
    if kind == 4:
        _no_extra(items, 3, "StreamCompletion", offset)
        error = items[2] if len(items) > 2 else None
        return StreamCompletion(invocation_id, None if error is None else f.string(error, "Error", offset))
    _no_extra(items, 2, "CancelInvocation", offset)
    return CancelInvocation(invocation_id)


# --- encoding ---------------------------------------------------------------------------------

def _completion_items(message: Completion) -> list:
    if message.error is not None:
        if message.has_result:
            raise ValueError("a Completion carries a result or an error, not both")
        return [ResultKind.ERROR.value, message.error]
    if message.has_result:
        return [ResultKind.NON_VOID.value, message.result]
    return [ResultKind.VOID.value]


def to_array(message, profile: str = "v1") -> list:
    cls = type(message)
    if profile == "draft":
        if getattr(message, "headers", None) or getattr(message, "stream_ids", None) is not None:
            raise ValueError("the draft profile has no headers or streamIds")
        if cls is Invocation:
            if message.invocation_id is None:
                raise ValueError("a draft Invocation always carries an invocationId")
            return [1, message.invocation_id, message.nonblocking, message.target, list(message.arguments)]
        if cls is StreamItem:
            return [2, message.invocation_id, message.item]
        if cls is Completion:
            return [3, message.invocation_id] + _completion_items(message)
        if cls is StreamCompletion:
            return [4, message.invocation_id] + ([] if message.error is None else [message.error])
        if cls is CancelInvocation:
            return [5, message.invocation_id]
        raise ValueError(f"{cls.__name__} does not exist in the draft profile")
    headers = dict(message.headers) if getattr(message, "headers", None) else {}
    if cls is Invocation:
        if message.nonblocking:
            raise ValueError("'nonblocking' is the draft's; v1 leaves the invocationId out")
        out = [1, headers, message.invocation_id, message.target, list(message.arguments)]
        if message.stream_ids is not None:
            out.append(list(message.stream_ids))
        return out
    if cls is StreamItem:
        return [2, headers, message.invocation_id, message.item]
    if cls is Completion:
        return [3, headers, message.invocation_id] + _completion_items(message)
    if cls is StreamInvocation:
        out = [4, headers, message.invocation_id, message.target, list(message.arguments)]
        if message.stream_ids is not None:
            out.append(list(message.stream_ids))
        return out
    if cls is CancelInvocation:
        return [5, headers, message.invocation_id]
    if cls is Ping:
        return [6]
    if cls is Close:
        out = [7, message.error]
        if message.allow_reconnect is not None:
            out.append(message.allow_reconnect)
        return out
    if cls is Ack:
        return [8, message.sequence_id]
    if cls is Sequence:
        return [9, message.sequence_id]
    if cls is StreamCompletion:
        raise ValueError("StreamCompletion exists only in the draft profile")
    raise TypeError(f"not a hub message: {message!r}")


def encode_body(message, profile: str = "v1") -> bytes:
    try:
        return msgpack.packb(to_array(message, profile), **_packer_options)
    except (TypeError, OverflowError) as exc:
        raise ValueError(f"not encodable as MessagePack: {exc}") from None


def encode_message(message, profile: str = "v1") -> bytes:
    return frame_binary(encode_body(message, profile))
