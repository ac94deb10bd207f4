"""The JSON hub protocol ("JSON Encoding"; SPEC_NOTES for v1) and the handshake, which is JSON
in both hub protocols.

A record is UTF-8 JSON text (``"the JSON string should be encoded in whatever form is expected
by the underlying transport"``: UTF-8 for every transport the kit speaks), one object with a
numeric ``type``. Parsing is table-driven: per profile and type, the fields with their check
and whether they are required. Unknown fields are a protocol error in the draft ("It is a
protocol error for any message ... to have an unrecognized field"); v1 ignores them, as
today's servers do (forward compatibility). Numbers NaN/Infinity are not JSON and are refused.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..core import strict_json
from ..core.errors import Category, UnknownTypeError
from . import fields as f
from .constants import PROTOCOL, RS
from .messages import (Ack, CancelInvocation, Close, Completion, HandshakeRequest,
                       HandshakeResponse, Invocation, Ping, Sequence, StreamCompletion,
                       StreamInvocation, StreamItem)

_ABSENT = object()


MAX_DEPTH = strict_json.MAX_DEPTH
too_deep = strict_json.too_deep
_encode = strict_json.dumps


def load_object(record: bytes, offset: int, what: str = "message") -> dict:
    """One record as a JSON object (strict UTF-8, no NaN)."""
    try:
        text = record.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise f.bad(f"{what} is not UTF-8: {exc.reason}", Category.BAD_ENCODING, offset + exc.start) from None
    try:
        obj = strict_json.loads(text)
    except strict_json.JSONProblem as exc:
        if exc.kind == strict_json.SYNTAX:
            raise f.bad(f"{what} is not JSON: {exc.message}", Category.BAD_ENCODING, offset + exc.pos) from None
        if exc.kind == strict_json.SURROGATE:
            raise f.bad(f"{what} {exc.message}", Category.BAD_ENCODING, offset) from None
        if exc.kind == strict_json.DEPTH:
            raise f.bad(f"{what} {exc.message}", Category.BAD_VALUE, offset) from None
        raise f.bad(f"{what} is not acceptable JSON: {exc.message}", Category.BAD_VALUE, offset) from None
    if type(obj) is not dict:
        raise f.bad(f"{what} is not a JSON object", Category.BAD_VALUE, offset)
    return obj


# --- schemas: per profile, type -> (class, fields, post-processing) ---------------------------
# A field: (json name, attribute, check, required). A ``None`` value of an optional field reads
# as absent except where null is a value (Completion.result, StreamItem.item).

Field = tuple[str, str, Callable, bool]
_ANY = None        # a Token: any JSON value, null included

_H = ("headers", "headers", f.headers, False)
_ID = ("invocationId", "invocation_id", f.string, True)

V1: dict[int, tuple[type, tuple[Field, ...]]] = {
    1: (Invocation, (("invocationId", "invocation_id", f.string, False),
                     ("target", "target", f.string, True), ("arguments", "arguments", f.array, True),
                     ("streamIds", "stream_ids", f.stream_ids, False), _H)),
    2: (StreamItem, (_ID, ("item", "item", _ANY, True), _H)),
    3: (Completion, (_ID, ("result", "result", _ANY, False), ("error", "error", f.string, False), _H)),
    4: (StreamInvocation, (_ID, ("target", "target", f.string, True),
                           ("arguments", "arguments", f.array, True),
                           ("streamIds", "stream_ids", f.stream_ids, False), _H)),
    5: (CancelInvocation, (_ID, _H)),
    6: (Ping, ()),
    7: (Close, (("error", "error", f.string, False), ("allowReconnect", "allow_reconnect", f.boolean, False))),
    8: (Ack, (("sequenceId", "sequence_id", f.integer, True),)),
    9: (Sequence, (("sequenceId", "sequence_id", f.integer, True),)),
}

DRAFT: dict[int, tuple[type, tuple[Field, ...]]] = {
    1: (Invocation, (_ID, ("nonblocking", "nonblocking", f.boolean, False),
                     ("target", "target", f.string, True), ("arguments", "arguments", f.array, True))),
    2: (StreamItem, (_ID, ("item", "item", _ANY, True))),
    3: (Completion, (_ID, ("result", "result", _ANY, False), ("error", "error", f.string, False))),
    4: (StreamCompletion, (_ID, ("error", "error", f.string, False))),
    5: (CancelInvocation, (_ID,)),
}

SCHEMAS = {"v1": V1, "draft": DRAFT}
_KNOWN = {p: {t: frozenset(("type",) + tuple(fl[0] for fl in fields)) for t, (_, fields) in s.items()}
          for p, s in SCHEMAS.items()}


def parse_message(record: bytes, offset: int = 0, profile: str = "v1"):
    obj = load_object(record, offset)
    kind = obj.get("type", _ABSENT)
    if kind is _ABSENT:
        raise f.missing("message", "type", offset)
    kind = f.message_type(kind, offset)
    schema = SCHEMAS[profile].get(kind)
    if schema is None:
        raise UnknownTypeError(f"unknown message type {kind} ({profile} profile)",
                               category=Category.UNKNOWN_TYPE, protocol=PROTOCOL, offset=offset)
    cls, fields = schema
    if profile == "draft":
        extra = obj.keys() - _KNOWN[profile][kind]
        if extra:
            raise f.bad(f"{cls.__name__} has unrecognized field(s) {', '.join(sorted(extra))}",
                        Category.UNKNOWN_FIELD, offset)
    kwargs = {}
    for name, attr, check, required in fields:
        value = obj.get(name, _ABSENT)
        if value is _ABSENT or (value is None and check is not _ANY):
            if required:
                if value is None:
                    raise f.bad(f"'{name}' of {cls.__name__} is null", Category.BAD_VALUE, offset)
                raise f.missing(cls.__name__, name, offset)
            continue
        kwargs[attr] = value if check is _ANY else check(value, name, offset)
    if cls is Completion:
        if "error" in kwargs and "result" in kwargs:
            raise f.bad("Completion has both 'result' and 'error'", Category.CONFLICTING_FIELDS, offset)
        kwargs["has_result"] = "result" in kwargs
    elif cls is Invocation and profile == "v1" and not kwargs.get("invocation_id"):
        kwargs.pop("invocation_id", None)          # "" or null: non-blocking, like no id
    return cls(**kwargs)


# --- handshake ("Overview"; SPEC_NOTES: version, response) ------------------------------------

def parse_handshake_request(record: bytes, offset: int = 0, profile: str = "v1",
                            obj: Optional[dict] = None) -> HandshakeRequest:
    """``obj``: the record's object, when the caller already loaded it (load_object)."""
    if obj is None:
        obj = load_object(record, offset, "handshake request")
    if "protocol" not in obj:
        raise f.missing("handshake request", "protocol", offset)
    protocol = f.string(obj["protocol"], "protocol", offset)
    version = obj.get("version", _ABSENT)
    if version is _ABSENT:
        if profile != "draft":                    # the document's handshake has no version
            raise f.missing("handshake request", "version", offset)
        version = None
    else:
        version = f.integer(version, "version", offset)
    if profile == "draft":
        extra = obj.keys() - {"protocol", "version"}
        if extra:
            raise f.bad(f"handshake request has unrecognized field(s) {', '.join(sorted(extra))}",
                        Category.UNKNOWN_FIELD, offset)
    return HandshakeRequest(protocol, version)


def parse_handshake_response(record: bytes, offset: int = 0, profile: str = "v1",
                             obj: Optional[dict] = None) -> HandshakeResponse:
    """``obj``: the record's object, when the caller already loaded it (load_object)."""
    if obj is None:
        obj = load_object(record, offset, "handshake response")
    error = obj.get("error")
    if error is not None:
        f.string(error, "error", offset)
    return HandshakeResponse(error)


def encode_handshake(message) -> bytes:
    if isinstance(message, HandshakeRequest):
        obj = {"protocol": message.protocol}
        if message.version is not None:
            obj["version"] = message.version
    elif isinstance(message, HandshakeResponse):
        obj = {} if message.error is None else {"error": message.error}
    else:
        raise TypeError(f"not a handshake message: {message!r}")
    return _encode(obj).encode("utf-8") + RS


# --- encoding ---------------------------------------------------------------------------------

def to_object(message, profile: str = "v1") -> dict:
    """The JSON object of ``message`` in wire order (type first). Raises ValueError for a
    message the profile cannot express or that would be a protocol error."""
    cls = type(message)
    if profile == "draft":
        if getattr(message, "headers", None) or getattr(message, "stream_ids", None) is not None:
            raise ValueError("the draft profile has no headers or streamIds")
        if cls is Invocation and message.invocation_id is None:
            raise ValueError("a draft Invocation always carries an invocationId")
    elif cls is StreamCompletion:
        raise ValueError("StreamCompletion exists only in the draft profile")
    if cls is Invocation:
        obj: dict = {"type": 1}
        if message.invocation_id is not None:
            obj["invocationId"] = message.invocation_id
        if message.nonblocking:
            if profile != "draft":
                raise ValueError("'nonblocking' is the draft's; v1 leaves the invocationId out")
            obj["nonblocking"] = True
        obj["target"] = message.target
        obj["arguments"] = list(message.arguments)
        if message.stream_ids is not None:
            obj["streamIds"] = list(message.stream_ids)
    elif cls is StreamItem:
        obj = {"type": 2, "invocationId": message.invocation_id, "item": message.item}
    elif cls is Completion:
        obj = {"type": 3, "invocationId": message.invocation_id}
        if message.error is not None:
            if message.has_result:
                raise ValueError("a Completion carries a result or an error, not both")
            obj["error"] = message.error
        elif message.has_result:
            obj["result"] = message.result
    elif cls is StreamInvocation:
        if profile == "draft":
            raise ValueError("StreamInvocation does not exist in the draft profile")
        obj = {"type": 4, "invocationId": message.invocation_id, "target": message.target,
               "arguments": list(message.arguments)}
        if message.stream_ids is not None:
            obj["streamIds"] = list(message.stream_ids)
    elif cls is StreamCompletion:
        obj = {"type": 4, "invocationId": message.invocation_id}
        if message.error is not None:
            obj["error"] = message.error
    elif cls is CancelInvocation:
        obj = {"type": 5, "invocationId": message.invocation_id}
    elif profile == "draft":
        raise ValueError(f"{cls.__name__} does not exist in the draft profile")
    elif cls is Ping:
        return {"type": 6}
    elif cls is Close:
        obj = {"type": 7}
        if message.error is not None:
            obj["error"] = message.error
        if message.allow_reconnect is not None:
            obj["allowReconnect"] = message.allow_reconnect
        return obj
    elif cls in (Ack, Sequence):
        return {"type": 8 if cls is Ack else 9, "sequenceId": message.sequence_id}
    else:
        raise TypeError(f"not a hub message: {message!r}")
    if getattr(message, "headers", None):            # StreamCompletion (draft) has none
        obj["headers"] = dict(message.headers)
    return obj


def encode_message(message, profile: str = "v1") -> bytes:
    try:
        return _encode(to_object(message, profile)).encode("utf-8") + RS
    except TypeError as exc:           # a value JSON has no form for (bytes, sets, ...)
        raise ValueError(f"not encodable as JSON: {exc}") from None


def guess_handshake(obj: dict) -> Optional[str]:
    """'request' or 'response' for a handshake object of unknown direction."""
    return "request" if "protocol" in obj else "response"
