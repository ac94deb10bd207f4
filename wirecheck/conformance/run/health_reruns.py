"""Which test leaves the target spinning, or its memory or descriptors growing: measured on a
target of the test's own (culprits.py asks; the child's side of isolation.py runs this).

During the run, the spin watch (target/health.py) finds a thread that keeps a core busy with no
test running, and each test's memory and descriptor growth is read; under pytest-xdist the
tests overlap, so neither names the test that did it. The tests it may have been (the spin's
tests, those that ran while it spun, and those during which memory or descriptors grew by more
than a round's threshold) are run again here on freshly started targets: a growth suspect alone,
:data:`ROUNDS` times in a row, the target's resident memory and open descriptors read before and
after each run; after a run nothing is sent for :data:`target_health.IDLE` seconds and every
thread's CPU time is read. A spin's suspects run in groups, a group that spins split in halves
down to the single tests that spin a target of their own (:func:`measure`).

- **growth**: every round added at least :data:`GROWTH_KB` of memory, or at least one
  descriptor (a start-up cost is paid once; a leak is paid every time);
- **spin**: a thread used at least :data:`target_health.SPIN` of a core with nothing to do.

Both are NON-STRICT verdicts where the test passed (the documents say nothing of CPU or memory):
they fail a run only under ``--strict``.
"""
from __future__ import annotations

import time

from wirecheck.conformance.target import health as th

#: Runs of the test on one fresh target, and what each must add to be growth.
ROUNDS = 3
GROWTH_KB = 8 * 1024
#: A test whose run added this much during the suite is re-run (with the spin's tests).
SUSPECT_KB = GROWTH_KB
SUSPECT_FDS = 2


def measure(isolation, out: dict[str, dict]) -> None:
    """Each test of ``isolation.suspects`` measured on fresh targets: a growth suspect alone,
    :data:`ROUNDS` times on one target, and then idle when it is a spin's too; the tests that are
    only a spin's suspects (those that ran while it went on, often dozens) in groups, each group
    run once on one target and then left idle, a group that spins split in halves down to the
    tests that spin a target alone. (A target that spins once per process: the second test that
    would set it going runs while the first one's thread spins, and is found only so.)
    (Filled into ``out`` as measured: when the search's fresh starts are spent, what was
    measured stands.)"""
    alone = [t for t in isolation.suspects if t in isolation.growth_tests]
    grouped = [t for t in isolation.suspects if t not in isolation.growth_tests and t in isolation.spin_tests]
    for nodeid in alone:
        out[nodeid] = _alone(isolation, nodeid, ROUNDS, nodeid in isolation.spin_tests)
    pending = [grouped] if grouped else []
    while pending:
        group = pending.pop(0)
        if len(group) == 1:
            out[group[0]] = _alone(isolation, group[0], 1, True)
            continue
        if _group_spins(isolation, group):
            half = len(group) // 2
            pending += [group[:half], group[half:]]
        else:
            out.update({t: {"test": t, "rss_kb": [], "fds": [], "reports": [], "group": len(group)}
                        for t in group})


def _alone(isolation, nodeid: str, rounds: int, spin_suspect: bool) -> dict:
    """One test on a fresh target: ``rounds`` runs, memory and descriptors read after each."""
    isolation.fresh_target()
    pgid = isolation.managed.proc.pid
    ready = isolation.managed.ready_at or time.time()
    item = isolation.items[nodeid]
    rss, fds, reports = [], [], None
    before = th.resources(pgid)
    for _round in range(rounds):
        got = isolation._run_item(item)
        reports = reports or isolation.serialize(item, got)
        after = th.resources(pgid)
        if before is None or after is None:
            break
        rss.append(after["rss_kb"] - before["rss_kb"])
        fds.append(after["fds"] - before["fds"])
        before = after
    for data in reports or []:
        data["nodeid"] = nodeid
    busy = _busiest(pgid, ready) if spin_suspect else None
    record = {"test": nodeid, "rss_kb": rss, "fds": fds, "reports": reports or []}
    if len(rss) == ROUNDS and (all(r >= GROWTH_KB for r in rss) or all(f >= 1 for f in fds)):
        record["growth"] = ("memory" if all(r >= GROWTH_KB for r in rss) else "descriptors")
    if busy is not None and busy[1][1] >= th.SPIN:
        record["spin"] = {"thread": f"{busy[1][0]} ({busy[0]})", "cpu": round(busy[1][1], 2)}
    return record


def _group_spins(isolation, group: list[str]) -> bool:
    """``group`` run in order on one fresh target, then nothing sent: does a thread spin? (A
    target that went down in the group cannot tell: the group is split as if it did.)"""
    isolation.fresh_target()
    pgid = isolation.managed.proc.pid
    ready = isolation.managed.ready_at or time.time()
    for nodeid in group:
        isolation._run_item(isolation.items[nodeid])
    if th.resources(pgid) is None:
        return True
    busy = _busiest(pgid, ready)
    return busy is None or busy[1][1] >= th.SPIN


def _busiest(pgid: int, ready: float):
    """``(thread key, (name, share of a core))`` of the busiest thread over :data:`IDLE
    <target_health.IDLE>` seconds with nothing sent, after the start-up's grace (a thread at a
    spin's share: the lower of two such windows in a row); None when the target has no thread
    left to read."""
    wait = ready + th.START_GRACE - time.time()      # a start-up's work is no spin
    if wait > 0:
        time.sleep(wait)
    ticks = th.thread_times(pgid)
    time.sleep(th.IDLE)
    later = th.thread_times(pgid)
    usage = th.cores(ticks, later, th.IDLE)
    busy = max(usage.items(), key=lambda kv: kv[1][1], default=None)
    if busy is None or busy[1][1] < th.SPIN:
        return busy
    # a spin is for good, a busy stretch ends: the thread must be as busy over a second window
    # (a test that leaves a 16 MiB frame to work through read as a spin on a loaded machine)
    time.sleep(th.IDLE)
    again = th.cores(later, th.thread_times(pgid), th.IDLE)
    name, share = busy[1]
    return busy[0], (name, min(share, again.get(busy[0], (name, 0.0))[1]))


def describe(record: dict) -> str:
    """The NON-STRICT message of a test charged with a spin or a growth."""
    parts = []
    if record.get("spin"):
        spin = record["spin"]
        parts.append(f"target busy while idle after this test, run alone on a freshly started target: "
                     f"thread {spin['thread']} at {spin['cpu']:.0%} of a core for {th.IDLE:g} s with nothing sent")
    if record.get("growth") == "memory":
        parts.append("target memory grows with each run of this test on a freshly started target: "
                     + ", ".join(f"+{kb // 1024} MiB" for kb in record["rss_kb"]))
    elif record.get("growth") == "descriptors":
        parts.append("target keeps descriptors open with each run of this test on a freshly started target: "
                     + ", ".join(f"+{n}" for n in record["fds"]))
    return "NON-STRICT: " + "; ".join(parts)
