"""The health of a target the kit started, watched during a network campaign (fuzz/live/fuzzer.py):
what the answers cannot show, measured as the suites measure it (conformance/target/health.py).

- **spin**: every :data:`EVERY` seconds the target's threads' CPU time is read
  (``thread_times``); a thread above ``SUSPECT`` of a core over a rolling ``STREAK`` is a
  suspect, since a server busy with the fuzzer's traffic is too. The fuzzer then sends nothing
  for ``IDLE`` seconds (``cores``): still above ``SPIN``, it spins. A suspect cleared so is not
  suspected again for ``CLEARED_FOR`` seconds, and nothing is suspected within ``START_GRACE``
  of a start (a server finishing its start-up).
- **growth**: resident memory and open descriptors (``resources``) against the first reading
  after the start: :data:`MEMORY_SUSPECT_KB` or :data:`FD_SUSPECT` more is a suspect, and the
  interval where it rose most tells which connections to replay.

Either way a suspect is only a lead: the finding is what a fresh target does with the
connections replayed (fuzz/live/replay.py).
"""
from __future__ import annotations

import collections
import os
import time
from dataclasses import dataclass

from wirecheck.conformance.target import health
from wirecheck.conformance.target.evidence import thread_key

#: Seconds between two readings of the target's threads and resources.
EVERY = 0.25
#: Rise over the first reading after a start that makes a growth suspect.
MEMORY_SUSPECT_KB, FD_SUSPECT = 64 * 1024, 32


@dataclass
class Lead:
    kind: str                 # "spin" or "growth"
    detail: str
    until: float              # wall time: the connections sent before it are the candidates
    key: str = ""


class HealthWatch:
    def __init__(self) -> None:
        self.available = os.path.isdir("/proc/self/task")       # Linux: /proc is what is read
        self.reset()

    def reset(self) -> None:
        """After a (re)start: nothing known of the new process."""
        self.history: dict[str, collections.deque] = {}
        self.cleared: dict[str, float] = {}
        self.baseline: dict | None = None
        self.readings: list[tuple[float, dict]] = []
        self.last = 0.0

    def check(self, managed) -> Lead | None:
        """A lead, at most every :data:`EVERY` s (cheap otherwise)."""
        now = time.monotonic()
        if not self.available or managed is None or managed.proc is None or now - self.last < EVERY:
            return None
        self.last = now
        ready = managed.ready_at
        if ready is None or time.time() - ready < health.START_GRACE:
            return None
        pgid = managed.proc.pid
        return self._spin(pgid, now, ready) or self._growth(pgid)

    def _spin(self, pgid: int, now: float, ready: float) -> Lead | None:
        suspects = []
        for key, (name, ticks, started) in health.thread_times(pgid).items():
            samples = self.history.setdefault(key, collections.deque())
            samples.append((now, ticks, time.time()))
            while len(samples) > 1 and now - samples[1][0] >= health.STREAK:
                samples.popleft()
            first_t, first_ticks, _ = samples[0]
            if now - first_t >= health.STREAK and now - self.cleared.get(key, -health.CLEARED_FOR) >= health.CLEARED_FOR \
                    and (ticks - first_ticks) / (now - first_t) >= health.SUSPECT:
                suspects.append((key, name, started))
        if not suspects:
            return None
        # nothing is sent while this measures: busy now is busy with nothing to do
        before = health.thread_times(pgid)
        time.sleep(health.IDLE)
        usage = health.cores(before, health.thread_times(pgid), health.IDLE)
        for key, name, started in suspects:
            share = usage.get(key, ("", 0.0))[1]
            self.history.pop(key, None)
            if share < health.SPIN:
                self.cleared[key] = time.monotonic()
                continue
            # the connections before the thread was created (when it was, during the run), else
            # before the moment it was last seen high
            until = started + 1 / _tick() + health.CREATED_SLACK if started > ready else time.time()
            return Lead("spin", f"thread {name} at {share:.0%} of a core for {health.IDLE:g} s with nothing "
                        f"sent", until, thread_key(name))
        return None

    def _growth(self, pgid: int) -> Lead | None:
        reading = health.resources(pgid)
        if reading is None:
            return None
        wall = time.time()
        self.readings.append((wall, reading))
        if self.baseline is None:
            self.baseline = reading
            return None
        rss = reading["rss_kb"] - self.baseline["rss_kb"]
        fds = reading["fds"] - self.baseline["fds"]
        if rss < MEMORY_SUSPECT_KB and fds < FD_SUSPECT:
            return None
        what = "rss_kb" if rss >= MEMORY_SUSPECT_KB else "fds"
        # the reading after the latest large rise (at least half the largest): the connections
        # sent before it hold the cause. Not the largest alone: two rises of one input differ by
        # noise, and the campaign keeps only its last connections (live.MAX_HISTORY), so an
        # early rise's connections may be gone while a later one's are there.
        steps = [(b[what] - a[what], t) for (_, a), (t, b) in zip(self.readings, self.readings[1:])]
        largest = max((rise for rise, _ in steps), default=0)
        until = max((t for rise, t in steps if rise >= largest / 2), default=wall) if largest > 0 else wall
        detail = (f"resident memory {rss // 1024} MiB above the first reading after the start" if what == "rss_kb"
                  else f"{fds} open descriptors more than after the start")
        return Lead("growth", detail, until)


def _tick() -> int:
    return os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
