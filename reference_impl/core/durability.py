"""When appended bytes are forced to disk: shared by every broker that persists (the BlipMQ
WAL, the RabbitMQ Stream segments)."""
from __future__ import annotations

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
