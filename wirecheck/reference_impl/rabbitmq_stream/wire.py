"""RabbitMQ Stream "Types": reading and writing each field type of a frame body, and the base
that reads and writes a frame's body from its layout.

Integers are big-endian; strings are i16 length + UTF-8 (-1 = null), bytes i32 length (-1 =
null), arrays i32 count ("Types"); properties are an array of string pairs. Two array types
come from the real server: command versions (key, min, max as u16) for
ExchangeCommandVersions, and statistics (string, i64) for StreamStats.

:class:`_Reader` is a cursor over one frame body. A short body raises ``TRUNCATED``, a count
that cannot fit in what is left too (so no count allocates past the frame), bad UTF-8
``BAD_ENCODING``, a negative length or a null where a value is required ``BAD_VALUE``, bytes
after the last field ``TRAILING_BYTES``: all :class:`PayloadError`, with the stream offset.
``_s``, ``_b``, ... write the same types. ``_READ``/``_WRITE`` map a type's name in a layout
("u8", "str", "props", "versions", ...) to its reader and writer.

:class:`_Frame` is the base of every frame class (requests.py, responses.py): it reads and
writes the body its ``FIELDS`` layout describes, which the :func:`_frame` decorator sets;
a frame whose body no layout describes overrides ``parse_body``/``encode_body``.
"""
from __future__ import annotations

import struct
from typing import ClassVar, Optional

from ..core.errors import Category, FrameError, PayloadError
from .constants import PROTOCOL, RESPONSE_BIT, Key

_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")
_U64 = struct.Struct(">Q")
_I64 = struct.Struct(">q")
_VERSIONS = struct.Struct(">HHH")    # key, min version, max version


def _err(cls, message: str, category: Category, offset: int, part: str = "") -> FrameError:
    return cls(message, category=category, protocol=PROTOCOL, offset=offset, part=part)


# --- reading primitives -----------------------------------------------------------------------

class _Reader:
    """Cursor over one frame body; ``base`` is the body's stream offset (for error offsets)."""
    __slots__ = ("data", "pos", "base", "end")

    def __init__(self, data: bytes, base: int = 0) -> None:
        self.data = data
        self.pos = 0
        self.base = base
        self.end = len(data)

    # Every field of every frame passes through these, so each reads its bytes in one step
    # and finds a short body by struct.error (the body is ``data`` to its end) rather than by
    # a test before it: the fuzzers trace every call and comparison.

    def _short(self, n: int, what: str) -> FrameError:
        return _err(PayloadError, f"{what}: {n} bytes needed, {self.end - self.pos} left",
                    Category.TRUNCATED, self.base + self.end)

    def _need(self, n: int, what: str) -> None:
        if self.end - self.pos < n:
            raise self._short(n, what)

    def _unpack(self, st: struct.Struct, what: str):
        try:
            (value,) = st.unpack_from(self.data, self.pos)
        except struct.error:
            raise self._short(st.size, what) from None
        self.pos += st.size
        return value

    def u8(self, what: str = "u8") -> int:
        try:
            value = self.data[self.pos]
        except IndexError:
            raise self._short(1, what) from None
        self.pos += 1
        return value

    def u16(self, what: str = "u16") -> int:
        return self._unpack(_U16, what)

    def u32(self, what: str = "u32") -> int:
        try:
            (value,) = _U32.unpack_from(self.data, self.pos)
        except struct.error:
            raise self._short(4, what) from None
        self.pos += 4
        return value

    def i32(self, what: str = "i32") -> int:
        return self._unpack(_I32, what)

    def u64(self, what: str = "u64") -> int:
        return self._unpack(_U64, what)

    def i64(self, what: str = "i64") -> int:
        return self._unpack(_I64, what)

    def nstr(self, what: str = "string") -> Optional[str]:
        start = self.pos
        try:
            (size,) = _I16.unpack_from(self.data, start)
        except struct.error:
            raise self._short(2, what) from None
        start += 2
        self.pos = start
        if size < 0:
            if size == -1:
                return None
            raise _err(PayloadError, f"{what}: negative length {size}", Category.BAD_VALUE,
                       self.base + start - 2)
        end = start + size
        if end > self.end:
            raise self._short(size, what)
        self.pos = end
        try:
            return self.data[start:end].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _err(PayloadError, f"{what} is not valid UTF-8", Category.BAD_ENCODING,
                       self.base + start + exc.start) from None

    def str(self, what: str = "string") -> str:
        at = self.pos
        value = self.nstr(what)
        if value is None:
            raise _err(PayloadError, f"{what} must not be null", Category.BAD_VALUE, self.base + at)
        return value

    def nbytes(self, what: str = "bytes") -> Optional[bytes]:
        size = self._unpack(_I32, what)
        if size == -1:
            return None
        if size < 0:
            raise _err(PayloadError, f"{what}: negative length {size}", Category.BAD_VALUE,
                       self.base + self.pos - 4)
        self._need(size, what)
        start = self.pos
        self.pos += size
        return bytes(self.data[start:self.pos])

    def count(self, item_size: int, what: str) -> int:
        """An array count, checked against what is left (so no count allocates past the frame)."""
        n = self._unpack(_I32, what + " count")
        if n < 0:
            raise _err(PayloadError, f"{what}: negative count {n}", Category.BAD_VALUE,
                       self.base + self.pos - 4)
        if n * item_size > self.end - self.pos:
            raise _err(PayloadError, f"{what}: {n} items cannot fit in {self.end - self.pos} bytes",
                       Category.TRUNCATED, self.base + self.end)
        return n

    def strs(self, what: str = "strings") -> tuple:
        return tuple(self.str(what) for _ in range(self.count(2, what)))

    def props(self, what: str = "properties") -> dict:
        out: dict = {}
        for _ in range(self.count(4, what)):
            key = self.str(what + " key")
            out[key] = self.str(what + " value")
        return out

    def u64s(self, what: str = "ids") -> tuple:
        n = self.count(8, what)
        values = struct.unpack_from(f">{n}Q", self.data, self.pos)
        self.pos += 8 * n
        return values

    def remaining(self) -> int:
        return self.end - self.pos

    def done(self, name: str) -> None:
        if self.pos != self.end:
            raise _err(PayloadError, f"{name}: {self.end - self.pos} bytes after the last field",
                       Category.TRAILING_BYTES, self.base + self.pos)


# --- writing primitives -----------------------------------------------------------------------

def _s(value: Optional[str]) -> bytes:
    if value is None:
        return _I16.pack(-1)
    raw = value.encode("utf-8")
    return _I16.pack(len(raw)) + raw


def _b(value: Optional[bytes]) -> bytes:
    if value is None:
        return _I32.pack(-1)
    return _I32.pack(len(value)) + bytes(value)


def _strs(values) -> bytes:
    return _I32.pack(len(values)) + b"".join(_s(v) for v in values)


def _props(values: dict) -> bytes:
    return _I32.pack(len(values)) + b"".join(_s(k) + _s(v) for k, v in values.items())


def _u64s(values) -> bytes:
    return _I32.pack(len(values)) + struct.pack(f">{len(values)}Q", *values)


def _read_versions(r: _Reader, what: str = "versions") -> tuple:
    n = r.count(6, what)
    out = tuple(_VERSIONS.unpack_from(r.data, r.pos + 6 * i) for i in range(n))
    r.pos += 6 * n
    return out


def _write_versions(values) -> bytes:
    return _I32.pack(len(values)) + b"".join(_VERSIONS.pack(*v) for v in values)


def _read_stats(r: _Reader, what: str = "statistics") -> dict:
    out = {}
    for _ in range(r.count(10, what)):
        name = r.str(what + " key")
        out[name] = r.i64(what + " value")
    return out


def _write_stats(values: dict) -> bytes:
    return _I32.pack(len(values)) + b"".join(_s(k) + _I64.pack(v) for k, v in values.items())


_READ = {
    "u8": _Reader.u8, "u16": _Reader.u16, "u32": _Reader.u32, "u64": _Reader.u64,
    "i64": _Reader.i64, "str": _Reader.str, "nstr": _Reader.nstr, "nbytes": _Reader.nbytes,
    "strs": _Reader.strs, "props": _Reader.props, "u64s": _Reader.u64s,
    "versions": _read_versions, "stats": _read_stats,
}
_WRITE = {
    "u8": _U8.pack, "u16": _U16.pack, "u32": _U32.pack, "u64": _U64.pack, "i64": _I64.pack,
    "str": _s, "nstr": _s, "nbytes": _b, "strs": _strs, "props": _props, "u64s": _u64s,
    "versions": _write_versions, "stats": _write_stats,
}


# --- the frame base ---------------------------------------------------------------------------

class _Frame:
    """Base of every frame class. ``key`` is the command key (without the response bit);
    ``FIELDS`` is the body layout for the generic reader and writer, in wire order."""
    __slots__ = ()
    key: ClassVar[Key]
    response: ClassVar[bool] = False
    FIELDS: ClassVar[tuple] = ()
    version: int

    @property
    def wire_key(self) -> int:
        bit = self.response and getattr(self, "response_bit", True)
        return self.key | (RESPONSE_BIT if bit else 0)

    def encode_body(self) -> bytes:
        return b"".join(_WRITE[kind](getattr(self, name)) for name, kind in self.FIELDS)

    @classmethod
    def parse_body(cls, r: _Reader, version: int):
        return cls(*[_READ[kind](r, name) for name, kind in cls.FIELDS])


def _frame(key: Key, *layout: tuple[str, str], response: bool = False):
    """Class decorator: set key, direction and generic layout."""
    def wrap(cls):
        cls.key = key
        cls.response = response
        cls.FIELDS = layout
        return cls
    return wrap


#: The first fields of most requests (CORR) and responses (CORR, CODE).
CORR = ("correlation_id", "u32")
CODE = ("code", "u16")
