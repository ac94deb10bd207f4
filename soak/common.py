"""Helpers shared by the soak runs and the benchmarks: a child process's peak memory, the JSON
result file, and a child command a signal stops the way the kit's commands stop."""
from __future__ import annotations

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
    """Write one soak run's result as indented JSON, creating the directory; whole or not at
    all (a run stopped while it writes leaves the previous file, never half of one)."""
    from wirecheck.conformance.atomic_file import write_json
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_json(path, result, indent=2, sort_keys=True)


def run_stoppable(argv: list[str], **popen):
    """``subprocess.run(argv, capture_output=True, text=True, ...)`` for a child that is a
    ``wirecheck`` command or a suite: stopped meanwhile (SIGINT, SIGTERM), the child is given
    the signal once and waited for (it writes what it has and stops what it started), then
    KeyboardInterrupt goes on up. subprocess.run would kill it, leaving its own children and
    temporary files behind (conformance/cli_signals.py)."""
    from wirecheck.conformance import cli_signals
    done = cli_signals.run_child(argv, **popen)
    if done.stopped:
        raise KeyboardInterrupt("stopped while a child command ran")
    return done
