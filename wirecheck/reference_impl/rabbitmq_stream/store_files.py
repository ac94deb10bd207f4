"""The RabbitMQ Stream store's files (store.py): names and limits, the helpers that read and
write segment and argument files, the checks of what a tracking record may hold, and the
records of segments and chunks the index keeps."""
from __future__ import annotations

import hashlib
import json
import os
import re
import zlib
from dataclasses import dataclass
from urllib.parse import quote

from ..core.durability import fsync_dir
from .chunk import Chunk

DEFAULT_SEGMENT_BYTES = 500_000_000
EPOCH = 1
SEGMENT_SUFFIX = ".segment"
ARGUMENTS_FILE = "arguments.json"
STREAMS_DIR = "streams"
DELETED_DIR = "deleted"

_SEGMENT_NAME = re.compile(r"([0-9]{20})\.segment")
_MAX_DIRNAME = 240                  # below NAME_MAX (255) of common file systems
_U64_MAX = 2 ** 64 - 1
_I64_MIN, _I64_MAX = -2 ** 63, 2 ** 63 - 1
_MAX_REFERENCE = 255                # tracking records hold the reference length in one byte


class StoreError(Exception):
    """A storage operation failed (bad argument, I/O error, unknown stream)."""


def stream_dirname(name: str) -> str:
    quoted = quote(name, safe="")
    if quoted in (".", "..") or len(quoted) > _MAX_DIRNAME:
        return "%" + hashlib.sha256(name.encode("utf-8")).hexdigest()
    return quoted


def segment_filename(first_offset: int) -> str:
    return f"{first_offset:020d}{SEGMENT_SUFFIX}"


def _write_json_atomically(path: str, value) -> None:
    # A crash leaves either the old file or the new one, never a partial one.
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(value, fh, ensure_ascii=False, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path))


def _pread_exact(fd: int, length: int, pos: int) -> bytes:
    parts = []
    while length > 0:
        part = os.pread(fd, length, pos)
        if not part:
            break
        parts.append(part)
        length -= len(part)
        pos += len(part)
    return b"".join(parts)


def _only_zeros(path: str, start: int) -> bool:
    with open(path, "rb") as fh:
        fh.seek(start)
        while block := fh.read(1 << 20):
            if block.count(0) != len(block):
                return False
    return True


def _check_reference(reference: str) -> None:
    if not isinstance(reference, str):
        raise StoreError(f"reference {reference!r} is not a string")
    if len(reference.encode("utf-8")) > _MAX_REFERENCE:
        raise StoreError(f"reference of more than {_MAX_REFERENCE} bytes cannot be tracked")


def _check_u64(what: str, value: int) -> None:
    if not isinstance(value, int) or not 0 <= value <= _U64_MAX:
        raise StoreError(f"{what} {value!r} is not an unsigned 64-bit integer")


def _check_timestamp(value: int) -> None:
    if not isinstance(value, int) or not _I64_MIN <= value <= _I64_MAX:
        raise StoreError(f"timestamp {value!r} is not a signed 64-bit integer")


def _tracking_chunk(chunk_type: int, data: bytes, first_offset: int, timestamp: int) -> Chunk:
    # Tracking chunks hold their records as data (not as entries): one entry, one record,
    # hence one offset.
    return Chunk(int(chunk_type), 1, 1, timestamp, EPOCH, first_offset, zlib.crc32(data), data)


@dataclass(slots=True, eq=False)
class _Segment:
    first_offset: int
    path: str | None                # None: in memory
    size: int = 0
    chunks: int = 0
    newest_ts: int | None = None    # largest chunk timestamp in it (max-age)


@dataclass(slots=True, eq=False)
class _ChunkRef:
    first_offset: int
    num_records: int
    chunk_type: int
    timestamp: int
    segment: _Segment
    position: int
    length: int
    chunk: Chunk | None             # the chunk itself in memory mode only


class _BadChunk(Exception):
    def __init__(self, reason: str, torn: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.torn = torn
