"""How a stream's log is rebuilt from its segment files after a restart or a crash (store.py):
every good chunk indexed, a torn tail cut off, a damaged chunk's remainder kept beside the
segment and the segments after it set aside (never served, never deleted). A mixin of
:class:`store.StreamLog`, whose index it fills."""
from __future__ import annotations

import logging
import os
import shutil

from ..core.durability import fsync_dir
from ..core.errors import FrameError
from .chunk import HEADER, HEADER_SIZE, parse_chunk
from .store_files import _SEGMENT_NAME, StoreError, _BadChunk, _only_zeros, _Segment

log = logging.getLogger("wirecheck.reference_impl.rabbitmq_stream.store")


class SegmentRecovery:
    def _recover(self) -> dict:
        """Rebuild the index and the tracking state from the segment files."""
        found = []
        for entry in os.listdir(self.directory):
            match = _SEGMENT_NAME.fullmatch(entry)
            if match:
                found.append((int(match.group(1)), os.path.join(self.directory, entry)))
        found.sort()
        report = {"chunks": 0, "truncated_bytes": 0, "set_aside": 0}
        for k, (first, path) in enumerate(found):
            if self._segments and first != self._next_offset:
                self._set_aside(found[k:], f"segment {os.path.basename(path)} does not continue "
                                           f"at offset {self._next_offset}", report)
                break
            segment = _Segment(first, path)
            self._segments.append(segment)
            if k == 0:
                self._next_offset = first
            last = k == len(found) - 1
            try:
                bad = self._scan(segment)
            except OSError as exc:
                raise StoreError(f"stream {self.name!r}: reading {path}: {exc}") from exc
            if bad is not None:
                size = os.path.getsize(path)
                if not bad.torn and _only_zeros(path, segment.size):
                    bad.torn = True          # the file grew before its data reached the disk
                report["truncated_bytes"] += size - segment.size
                message = (f"stream {self.name!r}: {os.path.basename(path)} truncated at byte "
                           f"{segment.size} ({size - segment.size} bytes dropped): {bad.reason}")
                if bad.torn and last:
                    log.info("%s (torn write at the tail)", message)
                else:
                    # Not a crash's torn tail: what follows the damaged chunk may be whole
                    # confirmed chunks, so the cut-off bytes are kept beside the segment, as
                    # later segments are (never served, never deleted).
                    log.warning("%s; the dropped bytes are kept in %s", message,
                                os.path.basename(self._keep_tail(path, segment.size)))
                with open(path, "r+b") as fh:
                    fh.truncate(segment.size)
                    fh.flush()
                    os.fsync(fh.fileno())
                self._set_aside(found[k + 1:], "it follows a damaged chunk", report)
                break
        report["chunks"] = len(self._refs)
        if not self._segments:
            self._new_active_segment(0)
        else:
            self._fd = os.open(self._segments[-1].path, os.O_RDWR)
        return report

    def _scan(self, segment: _Segment) -> _BadChunk | None:
        """Index every good chunk of one segment; the first bad one is returned."""
        with open(segment.path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            position = 0
            while position < size:
                head = fh.read(HEADER_SIZE)
                if len(head) < HEADER_SIZE:
                    return _BadChunk(f"partial chunk header ({len(head)} bytes)", True)
                fields = HEADER.unpack(head)
                data_length, trailer_length, bloom_size = fields[8], fields[9], fields[10]
                length = HEADER_SIZE + bloom_size + data_length + trailer_length
                if position + length > size:
                    return _BadChunk(f"chunk of {length} bytes, {size - position} left", True)
                try:
                    chunk = parse_chunk(head + fh.read(length - HEADER_SIZE))
                    if chunk.first_offset != self._next_offset:
                        raise _BadChunk(f"chunk starts at offset {chunk.first_offset}, "
                                        f"expected {self._next_offset}", False)
                    if chunk.num_records < 1:
                        raise _BadChunk("chunk holds no record", False)
                    # Trailers are outside the CRC: a damaged one must not be half applied
                    # (parse_tracking parses everything before _apply_tracking changes state).
                    self._apply_tracking(chunk)
                except FrameError as exc:
                    return _BadChunk(str(exc), position + length == size)
                except _BadChunk as bad:
                    bad.torn = position + length == size
                    return bad
                self._index(chunk, segment, position, length, None)
                position += length
        return None

    @staticmethod
    def _keep_tail(path: str, start: int) -> str:
        """Copy ``path`` from byte ``start`` to a new ``<segment>.corrupt-tail[N]``, synced."""
        target, n = path + ".corrupt-tail", 1
        while os.path.exists(target):
            n += 1
            target = f"{path}.corrupt-tail{n}"
        with open(path, "rb") as src, open(target, "wb") as dst:
            src.seek(start)
            shutil.copyfileobj(src, dst)
            dst.flush()
            os.fsync(dst.fileno())
        return target

    def _set_aside(self, segments: list[tuple[int, str]], why: str, report: dict) -> None:
        for _, path in segments:
            target = path + ".corrupt"
            n = 1
            while os.path.exists(target):
                n += 1
                target = f"{path}.corrupt{n}"
            log.warning("stream %r: %s set aside as %s: %s", self.name,
                        os.path.basename(path), os.path.basename(target), why)
            os.replace(path, target)
            report["set_aside"] += 1
        if segments:
            fsync_dir(self.directory)
