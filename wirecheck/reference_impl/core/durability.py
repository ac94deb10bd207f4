"""When appended bytes are forced to disk: shared by every broker that persists (the BlipMQ
WAL, the RabbitMQ Stream segments)."""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class FsyncPolicy:
    """``always`` (every append), ``none``, ``every_n:N`` appends, ``interval_ms:MS``."""
    every_n: int | None = 1
    interval: float | None = None

    @classmethod
    def parse(cls, text: str) -> "FsyncPolicy":
        if text == "always":
            return cls(1, None)
        if text == "none":
            return cls(None, None)
        kind, _, value = text.partition(":")
        if kind == "every_n" and value.isdigit() and int(value) > 0:
            return cls(int(value), None)
        if kind == "interval_ms" and value.isdigit():
            return cls(None, int(value) / 1000)
        raise ValueError(f"fsync policy {text!r}: use always, none, every_n:N or interval_ms:MS")

    def due(self, unsynced: int, last_sync: float, now: float) -> bool:
        """Whether to fsync now, after ``unsynced`` appends since the last one."""
        return ((self.every_n is not None and unsynced >= self.every_n)
                or (self.interval is not None and now - last_sync >= self.interval))


def fsync_dir(path: str) -> None:
    """Force a directory's entries (a created, renamed or removed file) to disk: a file's own
    fsync does not make its name durable (fsync(2))."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SyncedAppender:
    """Appends records to one file descriptor and fsyncs per the policy. A failed write or
    fsync truncates the file back to where the record started: the next record never follows
    a partial one (recovery would see a bad checksum followed by good records, i.e. corruption),
    and bytes whose fsync failed cannot be trusted. Shared by the BlipMQ WAL and the RabbitMQ
    Stream segments."""

    def __init__(self, policy: FsyncPolicy, clock) -> None:
        self.policy = policy
        self.clock = clock
        self.unsynced = 0
        self.last_sync = clock()

    def append(self, fd: int, data: bytes, position: int) -> None:
        """Write ``data`` at ``position`` and sync if due; OSError after undoing the write."""
        try:
            view = memoryview(data)
            pos = position
            while view:
                written = os.pwrite(fd, view, pos)
                view = view[written:]
                pos += written
            self.unsynced += 1
            now = self.clock()
            if self.policy.due(self.unsynced, self.last_sync, now):
                os.fsync(fd)
                self.unsynced = 0
                self.last_sync = now
        except OSError:
            try:
                os.ftruncate(fd, position)
            except OSError:
                pass
            raise
