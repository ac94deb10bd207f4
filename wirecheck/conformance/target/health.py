"""The target's health between tests, when the kit runs it (``--target-command``): what the
frames cannot show.

- **Memory and file descriptors.** Before and after each suite test, the test's own process
  reads the target's process group from Linux ``/proc`` (resident memory, open descriptors;
  no sleep, no new dependency). Each result carries the figures after the test and the growth
  during it (``target`` in the JSON); the report lists the tests after which they grew most.
  Under pytest-xdist, tests overlap, so a test's growth may be another's: a leak still shows as
  steady growth over the run.
- **A spinning thread.** A thread of the target that keeps burning a core after the traffic
  that woke it has ended is a defect a black-box suite otherwise never sees (an independent
  Micromessage2 server kept a thread at 100% forever after one COMMAND frame). In the process
  that runs the target, :class:`SpinWatch` samples every thread's CPU time every
  :data:`SAMPLE` seconds. A thread above :data:`SUSPECT` of a core for :data:`STREAK` seconds
  (over a rolling window) is a suspect, because a busy test can cause that too; the suspicion is then checked while
  **no test runs**: the watch takes the run's lock exclusively (the tests wait, as for a
  crash-recovery kill; crashwatch.CrashWatch.turn) and measures :data:`IDLE` seconds. Still
  above :data:`SPIN` of a core with nothing to do: a spin, reported once per thread with the
  tests that ended or ran when it began (``busy while idle``; NON-STRICT: the document has no
  sentence about CPU, so it fails a run only with ``--strict``).
"""
from __future__ import annotations

import collections
import json
import os
import threading
import time

from wirecheck.conformance.target.process import live_group_pids

#: Seconds between two samples of the threads' CPU time.
SAMPLE = 0.2
#: Seconds either side of a thread's creation time taken as its start (the two clocks compared).
CREATED_SLACK = 0.002
#: Share of a core that makes a thread a suspect, and for how long.
SUSPECT, STREAK = 0.6, 2.0
#: Seconds measured with no test running, and the share of a core that is then a spin.
IDLE, SPIN = 2.0, 0.5
#: Idle checks per run at most (each one holds the tests up for about IDLE seconds).
MAX_CHECKS = 5
#: Seconds a thread found busy for a test's sake (not spinning) is not suspected again.
CLEARED_FOR = 30.0
#: Seconds after the target (re)started and accepted connections during which no thread is a
#: suspect: a server finishing its start-up (RabbitMQ recovering its streams, a JVM warming up)
#: is busy with nothing to do from outside.
START_GRACE = 3.0

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return None


def resources(pgid: int) -> dict | None:
    """``{"rss_kb", "fds"}`` of the target's process group, or None when it has no process."""
    pids = live_group_pids(pgid)
    if not pids:
        return None
    rss = fds = 0
    for pid in pids:
        status = _read(f"/proc/{pid}/status") or ""
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                rss += int(line.split()[1])
                break
        try:
            fds += len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            pass
    return {"rss_kb": rss, "fds": fds}


def _boot_offset() -> float:
    """Wall-clock time of the boot, from the boot clock (``/proc/stat``'s btime is whole seconds)."""
    return time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)


def thread_times(pgid: int) -> dict[str, tuple[str, float, float]]:
    """``"pid/tid" -> (thread name, seconds runnable so far, wall time it was started)`` for
    every thread of the group.

    Runnable is on a CPU or waiting in the run queue for one (``/proc/.../schedstat``): a
    spinning thread is runnable all the time however busy the machine is, where its CPU time
    falls with the load (on a loaded two-core machine a spinning thread got under half a core,
    and was let go). Where the kernel keeps no schedstat, the CPU time (utime + stime)."""
    out: dict[str, tuple[str, float, float]] = {}
    booted = _boot_offset()
    for pid in live_group_pids(pgid):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            stat = _read(f"/proc/{pid}/task/{tid}/stat")
            if not stat or ")" not in stat:
                continue
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()
            # after "pid (comm) ": state(0) ... utime(11) stime(12) ... starttime(19)
            runnable = (int(fields[11]) + int(fields[12])) / _TICK
            sched = (_read(f"/proc/{pid}/task/{tid}/schedstat") or "").split()
            if len(sched) >= 2 and sched[0].isdigit() and sched[1].isdigit():
                runnable = (int(sched[0]) + int(sched[1])) / 1e9     # ns on a CPU + ns waiting for one
            out[f"{pid}/{tid}"] = (name, runnable, booted + int(fields[19]) / _TICK)
    return out


def cores(before: dict, after: dict, seconds: float) -> dict[str, tuple[str, float]]:
    """Share of the time each thread was runnable (of a core it used or waited for) between
    two :func:`thread_times` readings."""
    out = {}
    for key, (name, runnable, _started) in after.items():
        if key in before and seconds > 0:
            out[key] = (name, (runnable - before[key][1]) / seconds)
    return out


class SpinWatch:
    """In the process that runs the target: finds threads that spin while no test runs.

    ``pgid`` is read through ``current_pgid`` (the target is restarted after a crash), the time
    it last became ready through ``ready_at``;
    ``turn`` is the run's lock (crashwatch.CrashWatch.turn); ``tests_file`` is where the
    tests' start and end times are appended (one JSON object per line)."""

    def __init__(self, current_pgid, turn, tests_file: str, out_file: str, ready_at=lambda: 0.0,
                 restart=None) -> None:
        self.current_pgid = current_pgid
        #: called (with no test running) once a spin is recorded: a fresh target, so that a later
        #: test that sets a thread spinning is seen too, whichever of them ran first
        self.restart = restart
        #: wall time the target last started accepting connections (None: not yet)
        self.ready_at = ready_at
        self.turn = turn
        self.tests_file = tests_file
        self.out_file = out_file
        self.spins: list[dict] = []
        self._reported: set[str] = set()
        self._checks = 0
        #: thread -> its last samples: (monotonic time, CPU ticks, wall time)
        self._history: dict[str, collections.deque] = {}
        self._started: dict[str, float] = {}         # thread -> wall time it was created
        self._cleared: dict[str, float] = {}         # thread -> when an idle check cleared it
        #: seconds the tests waited for the idle checks (reported: the watch's cost)
        self.paused = 0.0
        self._run_began = time.time()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wirecheck-spinwatch", daemon=True)

    def start(self) -> "SpinWatch":
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE):
            pgid = self.current_pgid()
            if not pgid:
                continue
            suspects = self._sample(pgid)
            if suspects and self._checks < MAX_CHECKS:
                self._check(pgid, suspects)

    def _sample(self, pgid: int) -> list[str]:
        """Read every thread's CPU time; the threads that used at least :data:`SUSPECT` of a
        core over the last :data:`STREAK` seconds (a rolling window: a spinning thread that
        shares an interpreter lock with busy ones dips now and then)."""
        now = time.monotonic()
        suspects = []
        young = self._young()
        for key, (name, ticks, started) in thread_times(pgid).items():
            self._started[key] = started
            history = self._history.setdefault(key, collections.deque())
            history.append((now, ticks, time.time()))
            while len(history) > 1 and now - history[1][0] >= STREAK:
                history.popleft()
            first_t, first_ticks, _wall = history[0]
            if not young and key not in self._reported and now - first_t >= STREAK \
                    and now - self._cleared.get(key, -CLEARED_FOR) >= CLEARED_FOR \
                    and (ticks - first_ticks) / (now - first_t) >= SUSPECT:
                suspects.append(key)
        return suspects

    def _check(self, pgid: int, suspects: list[str]) -> None:
        """Measure the suspects while no test runs; record the ones still spinning."""
        self._checks += 1
        began = {k: self._began(k) for k in suspects}
        asked = time.monotonic()
        with self.turn(exclusive=True):
            before = thread_times(pgid)
            if self._stop.wait(IDLE):
                return
            usage = cores(before, thread_times(pgid), IDLE)
            found = False
            for key in suspects:
                self._history.pop(key, None)       # measured again from now if it stays high
                name, share = usage.get(key, ("?", 0.0))
                if share < SPIN:
                    self._cleared[key] = time.monotonic()     # a busy test's work, done once the tests paused
                    continue
                self._reported.add(key)
                found = True
                self.spins.append({"thread": f"{name} ({key})", "cpu": round(share, 2),
                                   "since": began[key][0], "tests": self._tests_in(*began[key])})
            if found and self.restart is not None:
                self.restart()
                # the tests that ran while it spun: one of them may have set off a thread the
                # spinning one kept from starting; they are measured alone too (run/health_reruns.py)
                for spin in self.spins:
                    if "until" not in spin:
                        spin["until"] = time.time()
                        spin["during"] = self._tests_in(spin["since"], spin["until"])
            self._save()
        self.paused += time.monotonic() - asked

    def _began(self, key: str) -> tuple[float, float]:
        """When the thread went high, as a wall-clock window: the moment the thread was created,
        when it was created after the run began (to a clock tick); else the sampling interval in
        which it went high."""
        history = self._history[key]
        started = self._started.get(key, 0.0)
        if self._run_began <= started <= history[-1][2]:
            # the kernel keeps it in whole clock ticks, rounded down
            return (started - CREATED_SLACK, started + 1 / _TICK + CREATED_SLACK)
        return (history[0][2] - SAMPLE, history[-1][2])

    def finish(self) -> None:
        """At the end of the run, before the target is stopped: a thread that went high too
        late for a streak is checked now, with nothing running."""
        self._stop.set()
        self._thread.join(timeout=IDLE + 10)
        self._look_at_high()

    def look_now(self) -> None:
        """Before the kit kills the target (a crash-recovery test, which holds the run's turn:
        no other test runs): a thread high now is measured idle, as at the end of the run;
        killed unmeasured, its spin would go with the process, charged to no test."""
        self._look_at_high()

    def _look_at_high(self) -> None:
        pgid = self.current_pgid()
        if not pgid or self._checks >= MAX_CHECKS:
            return
        high = [k for k, h in list(self._history.items()) if k not in self._reported and len(h) > 1
                and (h[-1][1] - h[0][1]) / max(h[-1][0] - h[0][0], 1e-9) >= SUSPECT]
        if not high:
            return
        ready = self.ready_at()
        if ready is not None and time.time() - ready < START_GRACE:       # a short run: let the start-up end
            time.sleep(START_GRACE - (time.time() - ready))
        before = thread_times(pgid)
        time.sleep(IDLE)
        usage = cores(before, thread_times(pgid), IDLE)
        for key in high:
            name, share = usage.get(key, ("?", 0.0))
            if share >= SPIN and key in self._history:
                began = self._began(key)
                self._reported.add(key)
                self.spins.append({"thread": f"{name} ({key})", "cpu": round(share, 2),
                                   "since": began[0], "tests": self._tests_in(*began),
                                   "until": time.time(), "during": self._tests_in(began[0], time.time())})
        self._save()

    def _young(self) -> bool:
        """The target started accepting connections less than :data:`START_GRACE` s ago."""
        ready = self.ready_at()
        return ready is None or time.time() - ready < START_GRACE

    def _tests_in(self, first: float, last: float) -> list[str]:
        """The tests that ran at some moment between ``first`` and ``last``: the traffic that
        set the thread going."""
        found = []
        try:
            with open(self.tests_file) as fh:
                for line in fh:
                    try:
                        t = json.loads(line)
                    except ValueError:
                        continue
                    if t["start"] <= last and t["end"] >= first:
                        found.append(t["test"])
        except OSError:
            pass
        return found

    def _save(self) -> None:
        tmp = f"{self.out_file}.tmp"
        with open(tmp, "w") as fh:
            json.dump(self.spins, fh)
        os.replace(tmp, self.out_file)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=IDLE + 10)
