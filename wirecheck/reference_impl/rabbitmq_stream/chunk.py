"""The Osiris chunk: what Deliver carries and what the broker's segment files hold.

Layout (SPEC_NOTES.md, RabbitMQ Stream; the document's "Deliver" lists an older, shorter
header): a 48-byte header

    magic/version u8 (0x50: magic 5, version 0) | chunk type u8 | entries u16 | records u32 |
    timestamp i64 (ms) | epoch u64 | first offset u64 | CRC u32 | data length u32 |
    trailer length u32 | bloom size u8 | 3 reserved bytes

then ``bloom size`` bytes of filter (always 0 in version 0), ``data length`` bytes of entries,
and ``trailer length`` bytes of trailer. The CRC is ``zlib.crc32`` of the entry data only.
Deliver carries a chunk without its trailer; RabbitMQ 3.10.8 still announces the stored
trailer's length in the header (a chunk of a publisher with a reference: its sequence
record), which :attr:`Chunk.announced_trailer` keeps, so that such a frame encodes again to the
bytes received. The reference broker announces 0.

An entry is *simple* (u32 size with the top bit clear, then the body: one record) or a
*sub-batch* (u8 ``0x80 | compression << 4``, u16 record count, u32 uncompressed length,
u32 length, then ``length`` bytes holding ``count`` simple records, possibly compressed), which
spans ``count`` offsets. Only user chunks (type 0) hold entries in this format; tracking chunks
(types 1 and 2) hold the broker's tracking records (see :func:`encode_tracking`).

Every parse error is a :class:`~reference_impl.core.errors.PayloadError`; decompression is
bounded by the declared uncompressed length and by ``max_uncompressed``.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Optional, Union

from ..core.errors import Category, PayloadError
from .constants import PROTOCOL, ChunkType, Compression

HEADER = struct.Struct(">BBHIqQQIIIB3x")
HEADER_SIZE = HEADER.size          # 48
assert HEADER_SIZE == 48
MAGIC = 5
MAGIC_VERSION = 0x50               # what RabbitMQ 3.10 writes
KNOWN_MAGIC_VERSIONS = frozenset((0x50, 0x51))
_CHUNK_TYPES = frozenset(int(t) for t in ChunkType)
#: From this many entries on, a one-size batch is checked with strided slices (below it the
#: plain loop is cheaper).
_STRIDED_FROM = 8

_U32 = struct.Struct(">I")
_SUB = struct.Struct(">BHII")      # entry type byte, records, uncompressed length, length
_TRACK_HEAD = struct.Struct(">BB")
_U64 = struct.Struct(">Q")

#: Upper bound on one sub-batch's uncompressed size (a decompression bomb is an error).
DEFAULT_MAX_UNCOMPRESSED = 64 * 1024 * 1024


def _err(message: str, category: Category, offset: int) -> PayloadError:
    return PayloadError(message, category=category, protocol=PROTOCOL, offset=offset)


# --- entries ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SimpleEntry:
    body: bytes

    @property
    def record_count(self) -> int:
        return 1

    def records(self, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> list[bytes]:
        return [self.body]

    def encode(self) -> bytes:
        return _U32.pack(len(self.body)) + self.body


@dataclass(frozen=True, slots=True)
class SubBatchEntry:
    """``body`` is as on the wire (compressed when ``compression`` is not NONE)."""
    compression: int
    count: int
    uncompressed_size: int
    body: bytes

    @property
    def record_count(self) -> int:
        return self.count

    @classmethod
    def of(cls, records: list[bytes], compression: int = Compression.NONE) -> "SubBatchEntry":
        raw = b"".join(_U32.pack(len(r)) + r for r in records)
        return cls(compression, len(records), len(raw), compress(raw, compression))

    def encode(self) -> bytes:
        return _SUB.pack(0x80 | (self.compression & 0x7) << 4, self.count,
                         self.uncompressed_size, len(self.body)) + self.body

    def records(self, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> list[bytes]:
        raw = decompress(self.body, self.compression, self.uncompressed_size, max_uncompressed)
        out: list[bytes] = []
        pos = 0
        for _ in range(self.count):
            if len(raw) - pos < 4:
                raise _err(f"sub-batch holds fewer than {self.count} records", Category.TRUNCATED, pos)
            (size,) = _U32.unpack_from(raw, pos)
            pos += 4
            if len(raw) - pos < size:
                raise _err(f"sub-batch record of {size} bytes exceeds the batch", Category.TRUNCATED, pos)
            out.append(raw[pos:pos + size])
            pos += size
        if pos != len(raw):
            raise _err(f"sub-batch has {len(raw) - pos} bytes after its {self.count} records",
                       Category.TRAILING_BYTES, pos)
        return out


Entry = Union[SimpleEntry, SubBatchEntry]


def compress(data: bytes, compression: int) -> bytes:
    if compression == Compression.NONE:
        return data
    if compression == Compression.GZIP:
        co = zlib.compressobj(wbits=31)
        return co.compress(data) + co.flush()
    raise ValueError(f"compression {compression} is recognised but not implemented")


def decompress(data: bytes, compression: int, expected: int, limit: int) -> bytes:
    """``data`` inflated to exactly ``expected`` bytes, never past ``min(expected, limit)``."""
    if expected > limit:
        raise _err(f"sub-batch declares {expected} uncompressed bytes (limit {limit})",
                   Category.BAD_VALUE, 0)
    if compression == Compression.NONE:
        out = data
    elif compression == Compression.GZIP:
        inflater = zlib.decompressobj(wbits=31)
        try:
            out = inflater.decompress(data, expected + 1)
        except zlib.error as exc:
            raise _err(f"gzip sub-batch: {exc}", Category.BAD_ENCODING, 0) from None
        if len(out) <= expected and not inflater.eof:
            raise _err("gzip sub-batch is truncated", Category.TRUNCATED, len(data))
    else:
        name = Compression(compression).name if compression in Compression._value2member_map_ else str(compression)
        raise _err(f"sub-batch compression {name} is recognised but not supported",
                   Category.BAD_VALUE, 0)
    if len(out) != expected:
        raise _err(f"sub-batch inflates to {len(out)}{'+' if len(out) > expected else ''} bytes, "
                   f"declared {expected}", Category.BAD_VALUE, 0)
    return out


def parse_entry(data, pos: int, end: int, base: int = 0) -> tuple[Entry, int]:
    """The entry at ``data[pos:]`` (not past ``end``) and the position after it."""
    if end - pos < 1:
        raise _err("entry expected", Category.TRUNCATED, base + pos)
    if data[pos] & 0x80 == 0:
        if end - pos < 4:
            raise _err("simple entry size truncated", Category.TRUNCATED, base + end)
        (size,) = _U32.unpack_from(data, pos)
        pos += 4
        if end - pos < size:
            raise _err(f"simple entry of {size} bytes exceeds the data", Category.TRUNCATED, base + end)
        return SimpleEntry(bytes(data[pos:pos + size])), pos + size
    if end - pos < _SUB.size:
        raise _err("sub-batch entry header truncated", Category.TRUNCATED, base + end)
    type_byte, count, uncompressed, length = _SUB.unpack_from(data, pos)
    if type_byte & 0x0F:
        raise _err(f"sub-batch entry type byte 0x{type_byte:02x} has reserved bits set",
                   Category.BAD_VALUE, base + pos)
    compression = (type_byte >> 4) & 0x7
    if compression not in Compression._value2member_map_:
        raise _err(f"unknown sub-batch compression {compression}", Category.BAD_VALUE, base + pos)
    pos += _SUB.size
    if end - pos < length:
        raise _err(f"sub-batch of {length} bytes exceeds the data", Category.TRUNCATED, base + end)
    return SubBatchEntry(compression, count, uncompressed, bytes(data[pos:pos + length])), pos + length


def count_records(data, num_entries: int, base: int = 0) -> int:
    """Check that exactly ``num_entries`` entries fill ``data``, without building them;
    returns how many records they hold."""
    return walk_entries(data, num_entries, base)[0]


def _all_simple(data, num_entries: int) -> Optional[list]:
    """The bodies if ``data`` is exactly ``num_entries`` simple entries, else None (then the
    careful walk finds what is wrong). A size with the top bit set (a sub-batch) or past the
    end always leaves ``pos`` past ``end`` or makes ``unpack`` fail, so one check at the end
    suffices: the loop itself has no branch."""
    unpack = _U32.unpack_from
    end = len(data)
    if num_entries >= _STRIDED_FROM and end >= 4:
        # Messages of one size (the usual batch): every entry header equals the first one,
        # which four strided slices compare at C speed; then one comprehension cuts the bodies.
        (size,) = unpack(data, 0)
        stride = size + 4
        if not size & 0x80000000 and stride * num_entries == end:
            head = bytes(data[0:4])
            if all(data[k::stride] == head[k:k + 1] * num_entries for k in range(4)):
                return [data[i:i + size] for i in range(4, end + 1, stride)]
    bodies: list = []
    append = bodies.append
    pos = 0
    try:
        for _ in range(num_entries):
            start = pos + 4
            pos = start + unpack(data, pos)[0]
            append(data[start:pos])
    except struct.error:
        return None
    return bodies if pos == len(data) else None


def walk_entries(data, num_entries: int, base: int = 0) -> tuple[int, Optional[list]]:
    """The decode-time check of a chunk's entries, in one pass: (records, the bodies when every
    entry is simple, else None). Errors are those of :func:`parse_entry`."""
    fast = _all_simple(data, num_entries)
    if fast is not None:
        return num_entries, fast
    unpack = _U32.unpack_from
    pos, end, records = 0, len(data), 0
    bodies: Optional[list] = []
    for _ in range(num_entries):
        if end - pos >= 4:
            (size,) = unpack(data, pos)
            if not size & 0x80000000:
                if end - pos - 4 >= size:
                    pos += 4
                    if bodies is not None:
                        bodies.append(data[pos:pos + size])
                    pos += size
                    records += 1
                    continue
        entry, pos = parse_entry(data, pos, end, base)     # sub-batch, or the precise error
        records += entry.record_count
        bodies = None
    if pos != end:
        raise _err(f"{end - pos} bytes after the {num_entries} entries the header announces",
                   Category.TRAILING_BYTES, base + pos)
    return records, bodies


def parse_entries(data, num_entries: int, base: int = 0) -> tuple[Entry, ...]:
    """Exactly ``num_entries`` entries filling ``data``."""
    out = []
    pos, end = 0, len(data)
    for _ in range(num_entries):
        entry, pos = parse_entry(data, pos, end, base)
        out.append(entry)
    if pos != end:
        raise _err(f"{end - pos} bytes after the {num_entries} entries the header announces",
                   Category.TRAILING_BYTES, base + pos)
    return tuple(out)


# --- chunks -----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Chunk:
    chunk_type: int
    num_entries: int
    num_records: int
    timestamp: int
    epoch: int
    first_offset: int
    crc: int
    data: bytes
    trailer: bytes = b""
    bloom: bytes = b""
    magic_version: int = MAGIC_VERSION
    #: The record bodies, when the decode-time check already cut them (all entries simple).
    bodies: Optional[tuple] = field(default=None, compare=False, repr=False)
    #: The trailer length the header announced when the trailer bytes were not there (a
    #: Deliver from RabbitMQ); None when they were, or when it announced none.
    announced_trailer: Optional[int] = field(default=None, compare=False, repr=False)

    @property
    def next_offset(self) -> int:
        return self.first_offset + self.num_records

    @property
    def trailer_length(self) -> int:
        """What the header says of the trailer: its length, or the announced one."""
        return len(self.trailer) if self.trailer or self.announced_trailer is None else self.announced_trailer

    def header(self, *, trailer: bool = True) -> bytes:
        return HEADER.pack(self.magic_version, self.chunk_type, self.num_entries, self.num_records,
                           self.timestamp, self.epoch, self.first_offset, self.crc, len(self.data),
                           self.trailer_length if trailer else 0, len(self.bloom))

    def encode(self, *, trailer: bool = True) -> bytes:
        """Header + bloom + data (+ trailer). With ``trailer=False`` the trailer is dropped and
        the header says so: the form sent to consumers."""
        return b"".join((self.header(trailer=trailer), self.bloom, self.data,
                         self.trailer if trailer else b""))

    def entries(self) -> tuple[Entry, ...]:
        if self.chunk_type != ChunkType.USER:
            return ()
        return parse_entries(self.data, self.num_entries)

    def messages(self, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> list[bytes]:
        """Every record's body, sub-batches expanded, in offset order (one pass: simple
        entries are sliced directly, the common case of a Deliver)."""
        if self.chunk_type != ChunkType.USER:
            return []
        if self.bodies is not None:
            return list(self.bodies)
        data = self.data
        out: list[bytes] = []
        append = out.append
        unpack = _U32.unpack_from
        pos, end = 0, len(data)
        for _ in range(self.num_entries):
            if end - pos >= 4:
                (size,) = unpack(data, pos)
                if not size & 0x80000000 and end - pos - 4 >= size:
                    pos += 4
                    append(data[pos:pos + size])
                    pos += size
                    continue
            entry, pos = parse_entry(data, pos, end)
            out.extend(entry.records(max_uncompressed))
        if pos != end:
            raise _err(f"{end - pos} bytes after the {self.num_entries} entries the header announces",
                       Category.TRAILING_BYTES, pos)
        return out


def build_chunk(entries: list[Entry], first_offset: int, timestamp: int, *, epoch: int = 1,
                chunk_type: int = ChunkType.USER, trailer: bytes = b"") -> Chunk:
    data = b"".join(e.encode() for e in entries)
    return Chunk(int(chunk_type), len(entries), sum(e.record_count for e in entries), timestamp,
                 epoch, first_offset, zlib.crc32(data), data, trailer)


def parse_chunk(buf, base: int = 0, *, check_crc: bool = True, check_entries: bool = True) -> Chunk:
    """One whole chunk filling ``buf`` (with or without its trailer bytes)."""
    n = len(buf)
    if n < HEADER_SIZE:
        raise _err(f"chunk of {n} bytes is shorter than the {HEADER_SIZE}-byte header",
                   Category.TRUNCATED, base + n)
    (magic_version, chunk_type, num_entries, num_records, timestamp, epoch, first_offset, crc,
     data_length, trailer_length, bloom_size) = HEADER.unpack_from(buf)
    if magic_version not in KNOWN_MAGIC_VERSIONS:
        if magic_version >> 4 != MAGIC:
            raise _err(f"chunk magic {magic_version >> 4} (expected {MAGIC})", Category.BAD_VALUE, base)
        raise _err(f"chunk version {magic_version & 0xF} unknown", Category.BAD_VALUE, base)
    if chunk_type not in _CHUNK_TYPES:
        raise _err(f"unknown chunk type {chunk_type}", Category.BAD_VALUE, base + 1)
    pos = HEADER_SIZE
    body = n - pos
    need = bloom_size + data_length
    if body < need:
        raise _err(f"chunk announces {need} bytes of bloom+data, {body} follow",
                   Category.TRUNCATED, base + n)
    if body not in (need, need + trailer_length):
        raise _err(f"chunk has {body - need} bytes after its data, trailer length is {trailer_length}",
                   Category.TRAILING_BYTES, base + pos + need)
    bloom = bytes(buf[pos:pos + bloom_size]) if bloom_size else b""
    pos += bloom_size
    data = bytes(buf[pos:pos + data_length])
    trailer = bytes(buf[pos + data_length:n]) if pos + data_length < n else b""
    if check_crc and zlib.crc32(data) != crc:
        raise _err(f"chunk CRC 0x{crc:08x} does not match its data (0x{zlib.crc32(data):08x})",
                   Category.BAD_VALUE, base + 32)
    bodies = None
    if check_entries and chunk_type == ChunkType.USER:
        records, bodies = walk_entries(data, num_entries, base + HEADER_SIZE + bloom_size)
        if records != num_records:
            raise _err(f"chunk header says {num_records} records, its entries hold {records}",
                       Category.BAD_VALUE, base + 4)
    return Chunk(chunk_type, num_entries, num_records, timestamp, epoch, first_offset, crc, data,
                 trailer, bloom, magic_version, None if bodies is None else tuple(bodies),
                 trailer_length if trailer_length and not trailer else None)


# --- tracking records (trailers of user chunks, bodies of tracking chunks) ---------------------

class TrackingType:
    SEQUENCE = 0     # publisher reference -> last publishing id (deduplication)
    OFFSET = 1       # consumer reference -> stored offset (StoreOffset)


def encode_tracking(records: list[tuple[int, str, int]]) -> bytes:
    out = bytearray()
    for kind, ref, value in records:
        raw = ref.encode("utf-8")
        out += _TRACK_HEAD.pack(kind, len(raw)) + raw + _U64.pack(value)
    return bytes(out)


def parse_tracking(data) -> list[tuple[int, str, int]]:
    out = []
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < 2:
            raise _err("tracking record truncated", Category.TRUNCATED, pos)
        kind, size = _TRACK_HEAD.unpack_from(data, pos)
        pos += 2
        if end - pos < size + 8:
            raise _err("tracking record truncated", Category.TRUNCATED, pos)
        try:
            ref = bytes(data[pos:pos + size]).decode("utf-8")
        except UnicodeDecodeError:
            raise _err("tracking reference is not UTF-8", Category.BAD_ENCODING, pos) from None
        (value,) = _U64.unpack_from(data, pos + size)
        out.append((kind, ref, value))
        pos += size + 8
    return out
