"""A network finding is a fact only once a freshly started target gives it back: the replays
of fuzz/live/fuzzer.py, for a target the kit started (``--serve``, ``--command``).

A **trial** restarts the target (a new process: nothing left from the campaign), sends recorded
connections one after the other in the order and the writes they were recorded with, each read
until the target closes or stays quiet (as ``wirecheck replay`` sends a finding), waits
``settle`` seconds (a server whose parser fails off the connection's path dies a moment later),
and then looks: the process exited (a **crash**, keyed by its own evidence:
conformance/target/evidence.py), a new connection refused (a crash) or unanswered twice (a **hang**), a
thread busy while nothing is sent (a **spin**: conformance/target/health.py's measure, ``SPIN``
of a core over ``IDLE`` seconds), memory or descriptors that rose in each of
:data:`GROWTH_ROUNDS` rounds of the same connections (**growth**), or undecodable answers (a
**violation**).

**Attribution** finds which connections cause an event seen during the campaign: the last
connection alone first, then longer runs of the connections before it (the input that killed a
server 0.3 s later, or the earlier connection that left the state a later one needs): the
shortest reproducing suffix by bisection, then its first connection alone, the first with the
last, and the connections in between dropped where the event stays. When even every recorded
connection does not give the event back (:data:`REPLAYS` times), it does not reproduce.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from wirecheck.conformance.target import liveness
from wirecheck.conformance.target import health
from wirecheck.conformance.target.evidence import crash_key, log_offset, output_since, thread_key

CRASH, HANG, VIOLATION, SPIN, GROWTH = "crash", "hang", "violation", "spin", "growth"
#: Fresh-target replays of a finding's connections: ``reproduced`` says how many gave it back.
REPLAYS = 3
#: Connections of the campaign kept for attribution (since the target's last start).
MAX_HISTORY = 256
#: Suffix lengths tried first (then every connection recorded).
WINDOWS = (1, 8, 64)
#: Seconds a trial waits after its last connection for a late death, at least and at most.
SETTLE, MAX_SETTLE = 0.5, 5.0
#: Seconds given a process that refuses connections to exit (and tell its exit status). A
#: process closes its sockets a moment before it can be waited for, longer on a busy machine
#: (a confirming replay of a planted crash once came back as something else in CI; each
#: finding now lists what every replay gave). Only a target that refuses connections waits it.
EXIT_WAIT = 2.0
#: Trials spent narrowing a reproducing run of connections down, and minimizing frames.
NARROW_TRIALS, MINIMIZE_TRIALS = 12, 12
#: Rounds of a growth trial; what each must add to count as growth (memory, descriptors).
GROWTH_ROUNDS = 3
MEMORY_STEP_KB, FD_STEP = 8 * 1024, 1


@dataclass
class Sent:
    """One connection of the campaign as it was sent."""
    frames: tuple
    writes: list
    how: str = ""
    changed: int = -1
    started: float = 0.0                # wall clock: compared with a thread's creation time
    ended: float = 0.0

    @property
    def data(self) -> bytes:
        return b"".join(self.frames)


@dataclass
class Event:
    kind: str
    key: str                            # what groups findings (one root cause, one key)
    detail: str = ""
    output: str = ""                    # the target's output after the input (a crash)


@dataclass
class Attribution:
    connections: list                   # the ones needed, the failing one last
    event: Event
    settle: float
    trials: int = 0


@dataclass
class Verdict:
    """What the replays said: ``attribution`` None when nothing reproduced."""
    attribution: Attribution | None
    reproduced: int = 0
    replays: int = 0
    trials: int = 0
    log: list = field(default_factory=list)


class Trials:
    """Trials against a target the fuzzer (fuzz/live/fuzzer.py LiveFuzzer) started: ``fuzzer.managed``
    is restarted by each, ``fuzzer.send_only`` sends a connection, ``fuzzer.settled`` probes."""

    def __init__(self, fuzzer) -> None:
        self.fuzzer = fuzzer
        self.count = 0

    # -- one trial --------------------------------------------------------------------------

    def trial(self, connections: list[Sent], looking_for: str, settle: float) -> Event | None:
        f, managed = self.fuzzer, self.fuzzer.managed
        self.count += 1
        f.restart_target()
        offset = log_offset(managed)
        pgid = managed.proc.pid
        rounds = GROWTH_ROUNDS if looking_for == GROWTH else 1
        start = health.resources(pgid) if looking_for == GROWTH else None
        rises, violation = [], ""
        for _ in range(rounds):
            for sent in connections:
                if managed.exited():
                    break
                outcome = f.send_only(sent.data, sent.writes)
                violation = violation or outcome.violation
            deadline = time.monotonic() + settle
            while time.monotonic() < deadline and not managed.exited():
                time.sleep(0.02)
            if managed.exited():
                break
            if start is not None:
                now = health.resources(pgid) or start
                rises.append((now["rss_kb"] - start["rss_kb"], now["fds"] - start["fds"]))
                start = now
        probe = None if managed.exited() else f.settled()
        if probe is not None and probe.status == liveness.REFUSED:
            # a killed process closes its sockets before it can be waited for
            deadline = time.monotonic() + EXIT_WAIT
            while not managed.exited() and time.monotonic() < deadline:
                time.sleep(0.01)
        if managed.exited():
            return self._died(managed, offset)
        if probe.status == liveness.REFUSED:
            return Event(CRASH, "crash: refuses connections", probe.detail, output_since(managed, offset))
        if probe.status == liveness.SILENT:
            return Event(HANG, "hang: still running, no answer", probe.detail)
        if looking_for == SPIN:
            spin = self.spinning(pgid)
            if spin is not None:
                return spin
        if looking_for == GROWTH and len(rises) == rounds:
            if all(rss >= MEMORY_STEP_KB for rss, _ in rises):
                return Event(GROWTH, "growth: memory", f"resident memory rose by {[r // 1024 for r, _ in rises]} MiB "
                             f"in {rounds} rounds of the same connections")
            if all(fds >= FD_STEP for _, fds in rises):
                return Event(GROWTH, "growth: descriptors", f"open descriptors rose by {[d for _, d in rises]} "
                             f"in {rounds} rounds of the same connections")
        if violation:
            from wirecheck.conformance.target.evidence import signature
            return Event(VIOLATION, signature(VIOLATION, f"undecodable answer: {violation}"), violation)
        if probe.status in (liveness.GARBAGE, liveness.CLOSED):
            from wirecheck.conformance.target.evidence import signature
            return Event(VIOLATION, signature(VIOLATION, probe.detail), probe.detail)
        return None

    @staticmethod
    def _died(managed, offset: int) -> Event:
        output = output_since(managed, offset)
        key, detail = crash_key(managed.exit_status(), output)
        return Event(CRASH, key, f"{detail} ({managed.exit_status()})", output)

    @staticmethod
    def spinning(pgid: int) -> Event | None:
        """A thread above ``SPIN`` of a core over ``IDLE`` seconds with nothing sent."""
        before = health.thread_times(pgid)
        time.sleep(health.IDLE)
        usage = health.cores(before, health.thread_times(pgid), health.IDLE)
        busy = sorted(((share, name) for name, share in usage.values() if share >= health.SPIN), reverse=True)
        if not busy:
            return None
        share, name = busy[0]
        return Event(SPIN, thread_key(name), f"thread {name} at {share:.0%} of a core for "
                     f"{health.IDLE:g} s with nothing sent")

    # -- attribution ------------------------------------------------------------------------

    def attribute(self, kind: str, key: str | None, history: list[Sent], settle: float,
                  worse: str | None = None) -> Verdict:
        """Which of ``history`` (oldest first) give ``kind`` (with ``key``, or any key: the
        first trial that reproduces fixes it) back on a fresh target; see the module doc.
        An event of kind ``worse`` (a violation's replay that kills the target: a crash) is
        taken instead, and is then what the later trials look for."""
        verdict = Verdict(None)
        history = history[-MAX_HISTORY:]
        if not history:
            return verdict
        wanted = {"key": key, "kind": kind}

        chosen_settle = [settle]

        def hit(connections: list[Sent]) -> Event | None:
            event = self.trial(connections, wanted["kind"], chosen_settle[0])
            verdict.trials += 1
            verdict.log.append((len(connections), event.key if event else None))
            if event is not None and worse is not None and event.kind == worse != wanted["kind"]:
                wanted.update(kind=worse, key=event.key)
                return event
            if event is None or event.kind != wanted["kind"] or wanted["key"] not in (None, event.key):
                return None
            wanted["key"] = event.key
            return event

        n = len(history)
        sizes = sorted({s for s in WINDOWS if s < n} | {n})
        shorter, found, event = 0, 0, None
        for size in sizes:
            event = hit(history[-size:])
            if event is not None:
                found = size
                break
            shorter = size
        full_tries = 1 if found == 0 else 0
        while found == 0 and full_tries < REPLAYS:
            # again, waiting longer for a late death (a server that fails off the connection's path)
            full_tries += 1
            chosen_settle[0] = max(settle, MAX_SETTLE if wanted["kind"] in (CRASH, VIOLATION) else settle)
            event = hit(history)
            found = n if event is not None else 0
        if found == 0:
            verdict.replays = full_tries
            return verdict
        # the shortest reproducing suffix, by bisection between one that did not and one that did
        while found - shorter > 1:
            mid = (found + shorter) // 2
            again = hit(history[-mid:])
            if again is not None:
                found, event = mid, again
            else:
                shorter = mid
        chosen = history[-found:]
        if len(chosen) > 1:
            chosen, event = self._narrow(chosen, event, hit)
        verdict.attribution = Attribution(chosen, event, chosen_settle[0], verdict.trials)
        return verdict

    def _narrow(self, chosen: list[Sent], event: Event, hit) -> tuple[list[Sent], Event]:
        """Its first connection alone (the input of a late death), or the first and the last
        (the state one connection leaves for another), else drop runs of those between."""
        budget = NARROW_TRIALS
        for trial in ([chosen[0]], [chosen[0], chosen[-1]]):
            budget -= 1
            again = hit(trial)
            if again is not None:
                return trial, again
        middle = chosen[1:-1]
        step = max(1, len(middle) // 2)
        while step >= 1 and budget > 0 and middle:
            i = 0
            while i < len(middle) and budget > 0:
                budget -= 1
                trial = [chosen[0]] + middle[:i] + middle[i + step:] + [chosen[-1]]
                again = hit(trial)
                if again is not None:
                    middle, event = middle[:i] + middle[i + step:], again
                else:
                    i += step
            step //= 2
        return [chosen[0]] + middle + [chosen[-1]], event

    def minimize(self, attribution: Attribution, trials: int = MINIMIZE_TRIALS) -> int | None:
        """Drop frames of the failing connection that the event does not need (last to first);
        the number of frames it had, when some were dropped."""
        *before, last = attribution.connections
        frames = list(last.frames)
        original = len(frames)
        i = len(frames) - 1
        while i >= 0 and trials > 0 and len(frames) > 1:
            trial = frames[:i] + frames[i + 1:]
            trials -= 1
            candidate = Sent(tuple(trial), [len(b"".join(trial))], last.how, -1, last.started, last.ended)
            event = self.trial(before + [candidate], attribution.event.kind, attribution.settle)
            if event is not None and event.key == attribution.event.key:
                frames = trial
            i -= 1
        if len(frames) == original:
            return None
        attribution.connections = before + [Sent(tuple(frames), [len(b"".join(frames))], last.how, -1,
                                                 last.started, last.ended)]
        return original

    def confirm(self, attribution: Attribution) -> list[str]:
        """What each of :data:`REPLAYS` fresh-target trials gave: the event's key, or "nothing"
        (the finding says how many gave it back, and what the others saw instead)."""
        return [event.key if event is not None else "nothing"
                for event in (self.trial(attribution.connections, attribution.event.kind, attribution.settle)
                              for _ in range(REPLAYS))]
