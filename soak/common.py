"""Helpers shared by the soak runs and the benchmarks: a child process's peak memory and the
JSON result file."""
from __future__ import annotations

import json
import os
import threading


class HighWater:
    """The largest ``VmHWM`` of process ``pid`` (``/proc/<pid>/status``), polled every few ms
    until :meth:`stop` (0 where there is no /proc). The mark only grows, so the last reading
    before the process exits is its peak, up to what it allocated in its last interval."""

    def __init__(self, pid: int, interval: float = 0.005) -> None:
        self.mb = 0.0
        self._path = f"/proc/{pid}/status"
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, args=(interval,), daemon=True)
        self._thread.start()

    def _poll(self, interval: float) -> None:
        while not self._done.is_set():
            try:
                with open(self._path, encoding="ascii") as fh:
                    for line in fh:
                        if line.startswith("VmHWM:"):
                            self.mb = max(self.mb, int(line.split()[1]) / 1024.0)
                            break
            except (OSError, ValueError):
                return                             # the process is gone, or no /proc
            self._done.wait(interval)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def rss_mb(pid: int) -> float:
    """Current resident memory of ``pid`` in MB (``VmRSS``; 0 where there is no /proc)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        pass
    return 0.0


def write_result(path: str, result: dict) -> None:
    """Write one soak run's result as indented JSON, creating the directory."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2, sort_keys=True)
        fh.write("\n")
