"""Filters on MESSAGE properties ("FILTER_VALUE", "Filtering operators").

A property value is a FILTER_VALUE: a type prefix and text. ``N`` number (integers of any size,
and decimals), ``D`` date (UNIX epoch seconds, fractions after the dot), ``T`` URL-encoded
text. The document's operator table is garbled; the kit's reading:

=========  ===========================  =====================
operator   numbers and dates            text (case sensitive)
=========  ===========================  =====================
``=``      equal                        equal
``!=``     not equal                    not equal
``<``      less than                    starts with
``<=``     less than or equal           (not used: an error)
``>``      greater than                 ends with
``>=``     greater than or equal        (not used: an error)
``&``      (not used: an error)         contains
``~``      (not used: an error)         does not contain
=========  ===========================  =====================

A filter (the ``filter`` argument of ``subscribe``) is one or more conditions joined by ``;``,
all of which must hold: ``name<op><FILTER_VALUE>``, e.g. ``price>=N10;city=TOslo``. A message
matches a condition only when it has the property and the property holds a value of the same
type; a missing or differently typed property fails the condition (``!=`` and ``~``
included). In the ``sharpmessaging`` profile property values are untyped (its vector
``last_name:kalle;``): a value is read as the filter's type (text as written, or a number
without prefix).

Sans-IO and pure; :class:`FilterError` (a ``ValueError``) for a filter that cannot be read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Optional, Union

from .syntax import lookup, url_decode
from ..core.errors import FrameError

#: Longest first, so ``<=`` is not read as ``<``.
OPERATORS = ("!=", "<=", ">=", "=", "<", ">", "&", "~")
NUMERIC_OPERATORS = frozenset({"=", "!=", "<", "<=", ">", ">="})
TEXT_OPERATORS = frozenset({"=", "!=", "<", ">", "&", "~"})
_NAME = re.compile(r"[A-Za-z0-9_-]+")
_NUMBER = re.compile(r"[+-]?\d+(\.\d+)?\Z")

Value = tuple[str, Union[Decimal, str]]     # ("N"|"D", Decimal) or ("T", str)


class FilterError(ValueError):
    pass


def parse_value(text: str) -> Optional[Value]:
    """A FILTER_VALUE, or None when ``text`` is not one."""
    if not text:
        return None
    kind, rest = text[0], text[1:]
    if kind in "ND":
        if not _NUMBER.match(rest):
            return None
        try:
            return kind, Decimal(rest)
        except InvalidOperation:
            return None
    if kind == "T":
        try:
            return "T", url_decode(rest)
        except FrameError:
            return None
    return None


def format_value(value) -> str:
    """A Python value as a FILTER_VALUE: int/float/Decimal -> N, str -> T (URL-encoded).
    Dates are written with :func:`date_value`."""
    from .syntax import url_encode
    if isinstance(value, bool):
        raise TypeError("a FILTER_VALUE has no boolean type")
    if isinstance(value, (int, float, Decimal)):
        return "N" + _positional(value)
    if isinstance(value, str):
        return "T" + url_encode(value)
    raise TypeError(f"no FILTER_VALUE type for {type(value).__name__}")


def date_value(epoch_seconds: float) -> str:
    text = _positional(epoch_seconds)
    return "D" + (text if "." in text else text + ".0")


def _positional(number) -> str:
    """``number`` in plain digits: a FILTER_VALUE number has no exponent (``1e-07`` is not
    one), so Python's shortest float form cannot be used as it is."""
    if isinstance(number, int):
        return str(number)
    exact = Decimal(repr(number)) if isinstance(number, float) else number
    if not exact.is_finite():
        raise ValueError(f"a FILTER_VALUE number is finite, not {number}")
    return format(exact, "f")


@dataclass(frozen=True, slots=True)
class Condition:
    name: str
    op: str
    value: Value

    def matches(self, properties, typed: bool = True) -> bool:
        raw = lookup(properties, self.name)
        if raw is None:
            return False
        if typed:
            have = parse_value(raw)
        elif self.value[0] == "T":
            have = ("T", raw)
        else:                                            # untyped: read as the filter's type
            have = (self.value[0], Decimal(raw)) if _NUMBER.match(raw) else None
        if have is None or have[0] != self.value[0]:
            return False
        a, b = have[1], self.value[1]
        op = self.op
        if self.value[0] == "T":
            if op == "=":
                return a == b
            if op == "!=":
                return a != b
            if op == "<":
                return a.startswith(b)
            if op == ">":
                return a.endswith(b)
            if op == "&":
                return b in a
            return b not in a                           # "~"
        if op == "=":
            return a == b
        if op == "!=":
            return a != b
        if op == "<":
            return a < b
        if op == "<=":
            return a <= b
        if op == ">":
            return a > b
        return a >= b                                   # ">="


@dataclass(frozen=True, slots=True)
class Filter:
    conditions: tuple[Condition, ...] = ()

    def matches(self, properties, typed: bool = True) -> bool:
        return all(c.matches(properties, typed) for c in self.conditions)

    def __str__(self) -> str:
        return ";".join(f"{c.name}{c.op}{_show(c.value)}" for c in self.conditions)


def _show(value: Value) -> str:
    """A FILTER_VALUE as written: numbers in plain digits (``str(Decimal)`` would write
    ``N0.000000001`` back as ``N1E-9``, which is not a FILTER_VALUE)."""
    from .syntax import url_encode
    kind, v = value
    return kind + (url_encode(v) if kind == "T" else _positional(v))


def parse_filter(text: str) -> Filter:
    """``name<op>VALUE(;name<op>VALUE)*`` (a trailing ``;`` allowed); :class:`FilterError`."""
    conditions = []
    parts = text.split(";")
    if parts and parts[-1] == "":
        parts.pop()
    if not parts:
        raise FilterError("an empty filter")
    for part in parts:
        m = _NAME.match(part)
        if not m:
            raise FilterError(f"condition {part!r} does not start with a property name")
        name, rest = m.group(), part[m.end():]
        op = next((o for o in OPERATORS if rest.startswith(o)), None)
        if op is None:
            raise FilterError(f"condition {part!r} has no operator ({' '.join(OPERATORS)})")
        value = parse_value(rest[len(op):])
        if value is None:
            raise FilterError(f"condition {part!r}: {rest[len(op):]!r} is not a FILTER_VALUE (N, D or T)")
        allowed = TEXT_OPERATORS if value[0] == "T" else NUMERIC_OPERATORS
        if op not in allowed:
            kind = "text" if value[0] == "T" else "numbers and dates"
            raise FilterError(f"operator {op!r} is not used for {kind}")
        conditions.append(Condition(name, op, value))
    return Filter(tuple(conditions))
