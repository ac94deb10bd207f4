"""Progress of ``wirecheck analyze`` while its Spark job runs: files read, MB, frames,
conversations and violations so far, on one line of stderr that updates itself; nothing when
stderr is not a terminal (CI) or with ``--no-progress``, as the fuzzer and replay do.

The counts come from Spark accumulators the tasks add to (a file's bytes when its read task
ends, a partition's rows when its analysis task ends); the driver reads them twice a second
from a thread of its own, so the figures move task by task, not frame by frame.
"""
from __future__ import annotations

import sys
import threading
import time

#: Seconds between two updates of the line.
INTERVAL = 0.5


class ListParam:
    """A Spark accumulator of lists (the tasks add items; the driver reads them all)."""

    def zero(self, value):
        return []

    def addInPlace(self, first, second):       # noqa: N802 - Spark's name
        first.extend(second)
        return first


class Counters:
    """The job's accumulators (made on the driver, added to by the tasks). ``damaged``: a
    ``{"file", "error"}`` per input that could not be read whole (spark_job.read_file)."""

    def __init__(self, sc) -> None:
        self.damaged = sc.accumulator([], ListParam())
        self.files = sc.accumulator(0)
        self.bytes = sc.accumulator(0)
        self.frames = sc.accumulator(0)
        self.flows = sc.accumulator(0)
        self.violations = sc.accumulator(0)

    def line(self, files_total: int, bytes_total: int, seconds: float) -> str:
        return (f"analyze: {self.files.value}/{files_total} file(s), {self.bytes.value / 1e6:.1f}/"
                f"{bytes_total / 1e6:.1f} MB read, {self.frames.value:,} frames, {self.flows.value:,} "
                f"conversations, {self.violations.value:,} violations, {seconds:.0f} s")


class Display:
    """``with Display(counters, files, bytes, enabled):`` the line on stderr meanwhile, and a
    last one when the job ends."""

    def __init__(self, counters: Counters, files_total: int, bytes_total: int, enabled: bool,
                 stream=None) -> None:
        self.counters, self.files_total, self.bytes_total = counters, files_total, bytes_total
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = 0.0
        self._shown = ""

    def _show(self, last: bool = False) -> None:
        """On a terminal the line is rewritten in place; elsewhere (``--progress`` into a file)
        a line is added when the figures changed (the seconds aside)."""
        text = self.counters.line(self.files_total, self.bytes_total, time.monotonic() - self._start)
        figures = text.rsplit(",", 1)[0]
        if getattr(self.stream, "isatty", lambda: False)():
            self.stream.write("\r\x1b[2K" + text + ("\n" if last else ""))
        elif figures != self._shown or last:
            self.stream.write(text + "\n")
        self._shown = figures
        self.stream.flush()

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            self._show()

    def __enter__(self) -> "Display":
        self._start = time.monotonic()
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="wirecheck-analyze-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(5.0)
            self._show(last=True)


def enabled(flag: bool | None, stream=None) -> bool:
    """``--progress`` / ``--no-progress``, else whether stderr is a terminal."""
    stream = stream or sys.stderr
    return flag if flag is not None else bool(getattr(stream, "isatty", lambda: False)())
