"""Stream storage of the reference RabbitMQ Stream broker: append-only Osiris segment files.

Layout under the data directory::

    streams/<quoted name>/arguments.json           {"name": ..., "arguments": {...}}
    streams/<quoted name>/<first offset:020d>.segment
    deleted/                                        streams being removed (emptied at start-up)

The directory name is ``urllib.parse.quote(name, safe="")``, so any stream name maps to one
path component; names that quoting cannot make safe (``.``, ``..``, or too long for a file
name) get ``%`` + SHA-256 of the name instead, which quoting never produces. The stream's name
is read back from ``arguments.json``, not from the directory name.

A segment is a plain concatenation of chunks exactly as :meth:`Chunk.encode` writes them
(header, bloom, data, trailer; see :mod:`.chunk`, SPEC_NOTES.md "RabbitMQ Stream"). Offsets
are contiguous across chunks and segments; a segment's file name is the first offset it holds
(or will hold), so an empty segment still fixes where the stream continues.

What the stream holds besides messages, as the real server's log does:

* a user chunk's trailer carries the publishers' last publishing ids (tracking records of type
  SEQUENCE), so deduplication state survives a restart;
* each StoreOffset is a chunk of type TRACKING_DELTA with one record, which therefore occupies
  an offset of its own (SPEC_NOTES.md, RabbitMQ Stream: "each StoreOffset occupies an offset of
  its own in the stream, so message offsets jump after a store"); several stored together
  (:meth:`StreamLog.store_offsets`) are one such chunk, and stored offsets written with messages
  ride in the user chunk's trailer (:meth:`StreamLog.append`), as RabbitMQ 3.10's writer does
  with what reaches it in one batch (session.py, profile rabbitmq-3.10);
* each new segment starts with a TRACKING_SNAPSHOT chunk (one record, one offset) holding the
  whole tracking state, when there is any, as the real server's log does on a segment roll:
  retention deletes whole segments, and without the snapshot the tracking records in them
  would be lost with them.

Recovery reads every chunk back and checks it (header, sizes, CRC, entries, offset
continuity). The first bad chunk ends the stream: its segment is truncated there and any later
segments are renamed ``*.corrupt`` (never served, never deleted). A bad chunk at the end of
the last segment is the expected result of a crash during a write (torn tail) and is logged at
INFO; anything else at WARNING, and then the bytes cut off the segment are first copied to
``<segment>.corrupt-tail`` (they may hold whole chunks after the damaged one). A tail of zeros
or garbage after the last whole chunk (a file extended before its data reached the disk) is
a torn tail too. The CRC covers a chunk's data only (the Osiris format): damage to the header
is caught by the checks above, damage to the trailer (tracking records) only when it no
longer parses.

Durability: an append returns only after its chunk is written to the segment (and fsync'ed
as the :class:`~reference_impl.core.durability.FsyncPolicy` says), so the caller may confirm the
publish as soon as it returns. A failed write is truncated away, never left half-written for
the next chunk to follow.

Not thread-safe: the broker calls it from its event loop only.
"""
from __future__ import annotations

import bisect
import json
import logging
import os
import shutil
import time
import uuid
import zlib
from typing import Callable, Iterable

from ..core.durability import FsyncPolicy, SyncedAppender, fsync_dir
from ..core.errors import FrameError
from .chunk import (HEADER, HEADER_SIZE, Chunk, Entry, SimpleEntry, SubBatchEntry, TrackingType,
                    build_chunk, encode_tracking, parse_chunk, parse_tracking)
from .constants import ChunkType
from .store_files import (  # noqa: F401  (names other modules read here)
    _check_reference, _check_timestamp, _check_u64, _ChunkRef, _pread_exact, _Segment, _tracking_chunk, _write_json_atomically, ARGUMENTS_FILE, DEFAULT_SEGMENT_BYTES, DELETED_DIR, EPOCH, segment_filename, StoreError, stream_dirname, STREAMS_DIR)
from .store_recovery import SegmentRecovery
from .stream_arguments import SEGMENT_SIZE_KEYS, parse_arguments, parse_duration  # noqa: F401

log = logging.getLogger(__name__)

# --- one stream -------------------------------------------------------------------------------

class StreamLog(SegmentRecovery):
    """One stream: its segments, an index of its chunks, and its tracking state.

    Chunk indices are absolute: retention removes a prefix and raises
    :meth:`first_chunk_index`, the indices of the remaining chunks do not change (for the
    life of this object; a restart numbers the recovered chunks from 0 again).
    """

    def __init__(self, name: str, arguments: dict[str, str], limits: dict,
                 directory: str | None, policy: FsyncPolicy, *,
                 segment_bytes_default: int = DEFAULT_SEGMENT_BYTES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.arguments = dict(arguments)
        self.limits = limits
        self.directory = directory
        self.policy = policy
        self.clock = clock
        self.max_segment_bytes = limits.get("max_segment_size_bytes") or segment_bytes_default
        self._segments: list[_Segment] = []
        self._refs: list[_ChunkRef] = []
        self._offsets: list[int] = []           # first offset of each stored chunk (bisect)
        self._ts_max: list[int] = []            # running max of chunk timestamps (bisect)
        self._base = 0                          # absolute index of self._refs[0]
        self._next_offset = 0
        self._last_user: int | None = None      # absolute index
        self._sequences: dict[str, int] = {}
        self._stored: dict[str, int] = {}
        self._fd: int | None = None
        self._appender = SyncedAppender(policy, clock)
        self._closed = False

    # -- positions ---------------------------------------------------------------------------

    @property
    def first_offset(self) -> int:
        return self._offsets[0] if self._offsets else self._next_offset

    @property
    def next_offset(self) -> int:
        return self._next_offset

    def first_chunk_index(self) -> int:
        return self._base

    def end_chunk_index(self) -> int:
        return self._base + len(self._refs)

    def last_user_chunk_index(self) -> int | None:
        return self._last_user

    def chunk_index(self, offset: int) -> int:
        if offset >= self._next_offset:
            return self.end_chunk_index()
        i = bisect.bisect_right(self._offsets, offset) - 1
        # Offsets are contiguous, so the chunk starting at or before ``offset`` contains it;
        # an offset before the first stored one maps to the first stored chunk.
        return self._base + max(i, 0)

    def chunk_index_for_timestamp(self, ts_ms: int) -> int:
        # The running maximum first reaches ts_ms at the first chunk whose own timestamp does.
        return self._base + bisect.bisect_left(self._ts_max, ts_ms)

    def chunk_at(self, index: int) -> Chunk | None:
        """The chunk at an absolute index, or None outside [first_chunk_index, end)."""
        i = index - self._base
        if i < 0 or i >= len(self._refs):
            return None
        ref = self._refs[i]
        if ref.chunk is not None:
            return ref.chunk
        buf = self._read(ref)
        try:
            chunk = parse_chunk(buf)
        except FrameError as exc:
            raise StoreError(f"stream {self.name!r}: chunk {ref.first_offset} is damaged on "
                             f"disk: {exc}") from exc
        if chunk.first_offset != ref.first_offset:
            raise StoreError(f"stream {self.name!r}: chunk at byte {ref.position} of "
                             f"{ref.segment.path} is not chunk {ref.first_offset}")
        return chunk

    def _read(self, ref: _ChunkRef) -> bytes:
        """The stored bytes of one chunk (file mode)."""
        try:
            if ref.segment is self._segments[-1] and self._fd is not None:
                return _pread_exact(self._fd, ref.length, ref.position)
            with open(ref.segment.path, "rb") as fh:
                fh.seek(ref.position)
                return fh.read(ref.length)
        except OSError as exc:
            raise StoreError(f"stream {self.name!r}: reading chunk {ref.first_offset}: "
                             f"{exc}") from exc

    def chunk_type_at(self, index: int) -> int | None:
        i = index - self._base
        if i < 0 or i >= len(self._refs):
            return None
        return self._refs[i].chunk_type

    def delivery_bytes_at(self, index: int) -> bytes | None:
        """The chunk at ``index`` as Deliver carries it: header (trailer length 0), bloom and
        data, without the trailer (what RabbitMQ sends; the captures show trailer length 0).
        The data's CRC is checked; the entries are not re-parsed (they were when written)."""
        i = index - self._base
        if i < 0 or i >= len(self._refs):
            return None
        ref = self._refs[i]
        if ref.chunk is not None:
            return ref.chunk.encode(trailer=False)
        buf = self._read(ref)
        fields = list(HEADER.unpack_from(buf)) if len(buf) >= HEADER_SIZE else None
        if fields is None or fields[6] != ref.first_offset:
            raise StoreError(f"stream {self.name!r}: chunk {ref.first_offset} is damaged on disk")
        data_length, bloom = fields[8], fields[10]
        end = HEADER_SIZE + bloom + data_length
        if len(buf) < end or zlib.crc32(memoryview(buf)[HEADER_SIZE + bloom:end]) != fields[7]:
            raise StoreError(f"stream {self.name!r}: chunk {ref.first_offset} fails its CRC on disk")
        fields[9] = 0                                   # trailer length: not sent
        return HEADER.pack(*fields) + buf[HEADER_SIZE:end]

    def size_bytes(self) -> int:
        return sum(seg.size for seg in self._segments)

    def segment_offsets(self) -> list[int]:
        """The first offset of each segment, oldest first (the last one is active)."""
        return [seg.first_offset for seg in self._segments]

    def stats(self) -> dict[str, int]:
        if not self._refs:
            return {"first_chunk_id": -1, "committed_chunk_id": -1}
        return {"first_chunk_id": self._offsets[0], "committed_chunk_id": self._offsets[-1]}

    # -- tracking ----------------------------------------------------------------------------

    def stored_offset(self, reference: str) -> int | None:
        return self._stored.get(reference)

    def writer_sequence(self, reference: str) -> int | None:
        return self._sequences.get(reference)

    def _apply_tracking(self, chunk: Chunk) -> None:
        if chunk.chunk_type == ChunkType.USER:
            if not chunk.trailer:
                return
            records = parse_tracking(chunk.trailer)
        else:
            records = parse_tracking(chunk.data)
        if chunk.chunk_type == ChunkType.TRACKING_SNAPSHOT:
            # A snapshot is the whole state at that point (see _roll).
            self._sequences, self._stored = {}, {}
        for kind, reference, value in records:
            if kind == TrackingType.SEQUENCE:
                self._sequences[reference] = value
            elif kind == TrackingType.OFFSET:
                self._stored[reference] = value

    # -- writing -----------------------------------------------------------------------------

    def append(self, entries: Iterable[Entry], timestamp_ms: int,
               writer_sequences: dict[str, int] | None = None,
               stored_offsets: dict[str, int] | None = None) -> Chunk:
        """Write one user chunk holding ``entries``, with the publishers' sequences and any
        ``stored_offsets`` (reference -> offset) as tracking records in its trailer; returns it
        once it is durable per the fsync policy (the caller confirms the publishes only then)."""
        entries = list(entries)
        if not all(isinstance(e, (SimpleEntry, SubBatchEntry)) for e in entries):
            raise StoreError("entries are SimpleEntry or SubBatchEntry objects")
        if not entries:
            raise StoreError("a chunk holds at least one entry")
        if len(entries) > 0xFFFF:
            raise StoreError(f"a chunk holds at most 65535 entries, not {len(entries)}")
        _check_timestamp(timestamp_ms)
        records = []
        for reference, sequence in (writer_sequences or {}).items():
            _check_reference(reference)
            _check_u64("publishing id", sequence)
            records.append((TrackingType.SEQUENCE, reference, sequence))
        for reference, offset in (stored_offsets or {}).items():
            _check_reference(reference)
            _check_u64("offset", offset)
            records.append((TrackingType.OFFSET, reference, offset))
        if sum(e.record_count for e in entries) < 1:
            raise StoreError("a chunk holds at least one record")
        self._prepare(timestamp_ms)
        chunk = build_chunk(entries, self._next_offset, timestamp_ms, epoch=EPOCH,
                            trailer=encode_tracking(records))
        self._write(chunk)
        return chunk

    def store_offset(self, reference: str, offset: int, timestamp_ms: int) -> Chunk:
        """Write a tracking chunk for a StoreOffset; it occupies one offset (SPEC_NOTES.md,
        RabbitMQ Stream)."""
        return self.store_offsets({reference: offset}, timestamp_ms)

    def store_offsets(self, offsets: dict[str, int], timestamp_ms: int) -> Chunk:
        """Write one tracking chunk holding ``offsets`` (reference -> offset): one record, so
        one offset, however many references it holds (RabbitMQ 3.10 writes the StoreOffsets
        of one writer batch so)."""
        if not offsets:
            raise StoreError("a tracking chunk holds at least one stored offset")
        for reference, offset in offsets.items():
            _check_reference(reference)
            _check_u64("offset", offset)
        _check_timestamp(timestamp_ms)
        self._prepare(timestamp_ms)
        data = encode_tracking([(TrackingType.OFFSET, r, o) for r, o in offsets.items()])
        chunk = _tracking_chunk(ChunkType.TRACKING_DELTA, data, self._next_offset, timestamp_ms)
        self._write(chunk)
        return chunk

    def _prepare(self, timestamp_ms: int) -> None:
        if self._closed:
            raise StoreError(f"stream {self.name!r} is closed")
        active = self._segments[-1]
        if active.chunks and active.size >= self.max_segment_bytes:
            try:
                self._roll(timestamp_ms)
            except OSError as exc:
                raise StoreError(f"stream {self.name!r}: new segment: {exc}") from exc

    def _roll(self, timestamp_ms: int) -> None:
        """Start a new segment: snapshot the tracking state into it, then evaluate retention
        (the order the real server's log follows on a roll)."""
        self._close_active()
        self._new_active_segment(self._next_offset)
        first = self.first_offset
        # Stored offsets below the first stored offset point at nothing any more; the real
        # server's snapshot leaves them out as well.
        self._stored = {ref: off for ref, off in self._stored.items() if off >= first}
        if self._sequences or self._stored:
            records = ([(TrackingType.SEQUENCE, r, v) for r, v in self._sequences.items()]
                       + [(TrackingType.OFFSET, r, v) for r, v in self._stored.items()])
            self._write(_tracking_chunk(ChunkType.TRACKING_SNAPSHOT, encode_tracking(records),
                                        self._next_offset, timestamp_ms))
        self.apply_retention(timestamp_ms)

    def _write(self, chunk: Chunk) -> None:
        raw = chunk.encode()
        segment = self._segments[-1]
        position = segment.size
        if self.directory is not None:
            if self._fd is None:
                raise StoreError(f"stream {self.name!r} has no open segment")
            try:
                self._appender.append(self._fd, raw, position)
            except OSError as exc:
                raise StoreError(f"stream {self.name!r}: write failed: {exc}") from exc
        self._index(chunk, segment, position, len(raw),
                    chunk if self.directory is None else None)
        self._apply_tracking(chunk)

    def _index(self, chunk: Chunk, segment: _Segment, position: int, length: int,
               keep: Chunk | None) -> None:
        self._refs.append(_ChunkRef(chunk.first_offset, chunk.num_records, chunk.chunk_type,
                                    chunk.timestamp, segment, position, length, keep))
        self._offsets.append(chunk.first_offset)
        self._ts_max.append(max(self._ts_max[-1], chunk.timestamp) if self._ts_max
                            else chunk.timestamp)
        if chunk.chunk_type == ChunkType.USER:
            self._last_user = self._base + len(self._refs) - 1
        segment.size += length
        segment.chunks += 1
        segment.newest_ts = (chunk.timestamp if segment.newest_ts is None
                             else max(segment.newest_ts, chunk.timestamp))
        self._next_offset = chunk.next_offset

    # -- retention ---------------------------------------------------------------------------

    def apply_retention(self, now_ms: int) -> None:
        """Drop the oldest whole segments while the stream is larger than max-length-bytes or
        their newest chunk is older than max-age; the active segment always stays. Also run on
        every segment roll, with the new chunk's timestamp as ``now_ms``."""
        max_bytes = self.limits.get("max_length_bytes")
        max_age = self.limits.get("max_age_ms")
        if max_bytes is None and max_age is None:
            return
        total = self.size_bytes()
        drop = 0
        while drop < len(self._segments) - 1:
            seg = self._segments[drop]
            too_big = max_bytes is not None and total > max_bytes
            too_old = max_age is not None and (seg.newest_ts is None
                                               or seg.newest_ts < now_ms - max_age)
            if not (too_big or too_old):
                break
            total -= seg.size
            drop += 1
        if drop:
            self._drop_segments(drop)

    def _drop_segments(self, count: int) -> None:
        dropped, self._segments = self._segments[:count], self._segments[count:]
        n = sum(seg.chunks for seg in dropped)
        del self._refs[:n]
        del self._offsets[:n]
        self._base += n
        self._ts_max = []
        for ref in self._refs:
            self._ts_max.append(max(self._ts_max[-1], ref.timestamp) if self._ts_max
                                else ref.timestamp)
        if self._last_user is not None and self._last_user < self._base:
            self._last_user = None
        if self.directory is None:
            return
        try:
            # Oldest first, stopping at the first failure: what is left over then still
            # continues into the live segments, so a restart serves it again instead of
            # finding a gap (which would end the stream there, see _recover).
            for seg in dropped:
                os.unlink(seg.path)
        except OSError as exc:
            log.warning("stream %r: removing old segment %s: %s", self.name, seg.path, exc)
        try:
            fsync_dir(self.directory)
        except OSError as exc:
            log.warning("stream %r: %s", self.name, exc)

    # -- recovery ----------------------------------------------------------------------------

    def _new_active_segment(self, first_offset: int) -> None:
        segment = _Segment(first_offset, None)
        if self.directory is not None:
            segment.path = os.path.join(self.directory, segment_filename(first_offset))
            self._fd = os.open(segment.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            fsync_dir(self.directory)
        self._segments.append(segment)
        self._next_offset = first_offset

    # -- closing -----------------------------------------------------------------------------

    def _close_active(self) -> None:
        if self._fd is None:
            return
        try:
            if self._appender.unsynced and (self.policy.every_n is not None
                                            or self.policy.interval is not None):
                os.fsync(self._fd)
        finally:
            os.close(self._fd)
            self._fd = None
            self._appender.unsynced = 0

    def close(self) -> None:
        self._closed = True
        try:
            self._close_active()
        except OSError as exc:
            raise StoreError(f"stream {self.name!r}: closing: {exc}") from exc


# --- all streams ------------------------------------------------------------------------------

class StreamStore:
    """Every stream of the broker; ``data_dir=None`` keeps them in memory (same behaviour,
    no files)."""

    def __init__(self, data_dir: str | None, fsync: FsyncPolicy | str | None = None, *,
                 segment_bytes_default: int = DEFAULT_SEGMENT_BYTES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if isinstance(fsync, str):
            fsync = FsyncPolicy.parse(fsync)
        self.policy = fsync if fsync is not None else FsyncPolicy()
        self.data_dir = data_dir
        self.segment_bytes_default = segment_bytes_default
        self.clock = clock
        self.streams: dict[str, StreamLog] = {}
        self.recovery: dict[str, dict] = {}
        if data_dir is not None:
            try:
                self._recover_all()
            except OSError as exc:
                raise StoreError(f"recovering {data_dir}: {exc}") from exc

    def _streams_dir(self) -> str:
        return os.path.join(self.data_dir, STREAMS_DIR)

    def _recover_all(self) -> None:
        streams_dir = self._streams_dir()
        os.makedirs(streams_dir, exist_ok=True)
        deleted = os.path.join(self.data_dir, DELETED_DIR)
        if os.path.isdir(deleted):
            # Deletions interrupted by a crash: the rename made them final already.
            shutil.rmtree(deleted, ignore_errors=True)
        for entry in sorted(os.listdir(streams_dir)):
            directory = os.path.join(streams_dir, entry)
            if not os.path.isdir(directory):
                continue
            meta_path = os.path.join(directory, ARGUMENTS_FILE)
            try:
                with open(meta_path, encoding="utf-8") as fh:
                    meta = json.load(fh)
                name, arguments = meta["name"], meta["arguments"]
                limits = parse_arguments(arguments)
            except FileNotFoundError:
                # Create was interrupted before its arguments were durable: it never
                # succeeded. create() of that name replaces the directory.
                log.warning("stream directory %s has no %s: ignored", entry, ARGUMENTS_FILE)
                continue
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("stream directory %s: unreadable %s (%s): ignored",
                            entry, ARGUMENTS_FILE, exc)
                continue
            if name in self.streams or stream_dirname(name) != entry:
                log.warning("stream directory %s does not belong to stream %r: ignored",
                            entry, name)
                continue
            stream = self._new_log(name, arguments, limits, directory)
            self.recovery[name] = stream._recover()
            self.streams[name] = stream

    def _new_log(self, name, arguments, limits, directory) -> StreamLog:
        return StreamLog(name, arguments, limits, directory, self.policy,
                         segment_bytes_default=self.segment_bytes_default, clock=self.clock)

    def create(self, name: str, arguments: dict[str, str]) -> StreamLog:
        """A new empty stream. ValueError for bad arguments; StoreError if it exists or the
        files cannot be written."""
        if not isinstance(name, str) or not name:
            raise StoreError("a stream name is a non-empty string")
        if name in self.streams:
            raise StoreError(f"stream {name!r} exists")
        limits = parse_arguments(arguments)
        directory = None
        if self.data_dir is not None:
            directory = os.path.join(self._streams_dir(), stream_dirname(name))
            try:
                if os.path.exists(directory):
                    shutil.rmtree(directory)       # leftover of an interrupted create
                os.makedirs(directory)
                fsync_dir(self._streams_dir())
                _write_json_atomically(os.path.join(directory, ARGUMENTS_FILE),
                                       {"name": name, "arguments": dict(arguments)})
            except OSError as exc:
                raise StoreError(f"creating stream {name!r}: {exc}") from exc
        stream = self._new_log(name, arguments, limits, directory)
        try:
            stream._new_active_segment(0)
        except OSError as exc:
            raise StoreError(f"creating stream {name!r}: {exc}") from exc
        self.streams[name] = stream
        return stream

    def get(self, name: str) -> StreamLog | None:
        return self.streams.get(name)

    def delete(self, name: str) -> None:
        """Remove a stream and its files. StoreError if there is no such stream."""
        stream = self.streams.pop(name, None)
        if stream is None:
            raise StoreError(f"stream {name!r} does not exist")
        try:
            stream.close()
        except StoreError as exc:
            log.warning("%s", exc)
        if stream.directory is None:
            return
        try:
            # One rename makes the deletion final even if a crash interrupts the removal.
            deleted = os.path.join(self.data_dir, DELETED_DIR)
            os.makedirs(deleted, exist_ok=True)
            target = os.path.join(deleted, uuid.uuid4().hex)
            os.rename(stream.directory, target)
            fsync_dir(self._streams_dir())
            shutil.rmtree(target)
        except OSError as exc:
            raise StoreError(f"deleting stream {name!r}: {exc}") from exc

    def close(self) -> None:
        errors = []
        for stream in self.streams.values():
            try:
                stream.close()
            except StoreError as exc:
                errors.append(str(exc))
        if errors:
            raise StoreError("; ".join(errors))
