"""JSON read strictly, for protocols that carry JSON (SignalR's JSON hub protocol, VibeMQ's
payload): only what can be written back as JSON is accepted.

- NaN, Infinity and numbers that overflow a float (``1e400``) are not JSON values a writer can
  produce: refused (``VALUE``);
- a ``\\uD800``-``\\uDFFF`` escape without its pair is not a character (UTF-8 cannot carry it):
  refused (``SURROGATE``);
- nesting is bounded at :data:`MAX_DEPTH`, a bound of the kit's own (the documents set none),
  so that whether a text is accepted never depends on how deep the caller's stack is (the
  reader recurses); only a text with that many opening brackets is scanned (``DEPTH``);
- anything else the reader refuses is ``SYNTAX``, with its position.

Each protocol maps the kinds to its own error categories.
"""
from __future__ import annotations

import json
import math
import re

MAX_DEPTH = 500
SYNTAX, VALUE, DEPTH, SURROGATE = "syntax", "value", "depth", "surrogate"


class JSONProblem(ValueError):
    def __init__(self, kind: str, message: str, pos: int = 0) -> None:
        super().__init__(message)
        self.kind, self.message, self.pos = kind, message, pos


def _no_constants(name: str):
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:32]} is out of range")
    return value


_decode = json.JSONDecoder(parse_constant=_no_constants, parse_float=_finite_float).decode
#: Compact, UTF-8 as is, no NaN: how the kit writes JSON.
dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_TOKENS = {str: re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL),
           bytes: re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)}
_OPEN = {str: ("[", "{"), bytes: (b"[", b"{")}
_CLOSE = {str: ("]", "}"), bytes: (b"]", b"}")}


def too_deep(text) -> bool:
    """Whether ``text`` (str or bytes) nests arrays/objects deeper than MAX_DEPTH, strings
    skipped."""
    kind = bytes if isinstance(text, (bytes, bytearray)) else str
    opening, closing = _OPEN[kind], _CLOSE[kind]
    if text.count(opening[0]) + text.count(opening[1]) <= MAX_DEPTH:
        return False
    depth = 0
    for match in _TOKENS[kind].finditer(text):
        token = match.group()
        if token in opening:
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif token in closing:
            depth -= 1
    return False


def loads(text: str):
    """The value of ``text``; :class:`JSONProblem` says why not."""
    if too_deep(text):
        raise JSONProblem(DEPTH, f"nests deeper than {MAX_DEPTH}")
    try:
        value = _decode(text)
    except json.JSONDecodeError as exc:
        raise JSONProblem(SYNTAX, exc.msg, exc.pos) from None
    except (ValueError, RecursionError) as exc:         # NaN, 1e400, huge integers
        raise JSONProblem(VALUE, str(exc)) from None
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        try:                                              # a surrogate pair is fine, a lone one not
            dumps(value).encode("utf-8")
        except UnicodeEncodeError:
            raise JSONProblem(SURROGATE, "has a lone surrogate escape") from None
    return value
