"""The child side of a culprit search (culprits.py): ``pytest --wirecheck-isolate REQUEST.json``.

The request names the *suspects* of one crash (the tests that ran while the target went down,
or just before: crashwatch.py) in the order they started, and the tests that ran before them on
the crashed target. This process collects them and searches, each step on a target started
afresh (an empty data directory), with every test judged exactly as the run judges it:

1. **In order.** The suspects run one after another on a fresh target, which is looked at after
   each test, and once more :data:`crashwatch.AFTER_INPUT` seconds after the last (a server may
   die a moment after the input that killed it). A test after which it still answered is judged
   by this run. When it stays up to the end, the search is over.
2. **Alone.** When it goes down, the test during which it did is run alone on a fresh target
   (with the same wait after it); if that brings it down, it is a culprit. Otherwise the tests
   before it are halved (each half run in order on a fresh target) until one test that brings
   the target down alone is found. The suspects not judged yet go round again (several tests
   may crash a server, each on its own).
3. **After others.** When no single test does it, the crash needs what an earlier test left
   behind: the earlier tests (and the suspects before the one during which it went down) are
   halved, each half followed by that test, until the one it needs is found.

Every step is one fresh start; at most :data:`MAX_STEPS`. The result is written to the
request's ``out`` file as one JSON line: ``results`` (each judged test's reports, as pytest
serializes them, from the run that judged it), ``culprits``, ``needs``, ``unresolved`` and
``reruns`` (each step: the tests, whether the target went down, during or after which test).
So is the target's process group at each start, which the asking run kills if this process is
itself killed.
"""
from __future__ import annotations

import json
import time

from wirecheck.conformance.target.crashwatch import AFTER_INPUT, append_line, look

#: Fresh starts (steps) one search may take.
MAX_STEPS = 60


class Isolation:
    def __init__(self, request_path: str, managed, spec, profile, address: tuple, timeout: float) -> None:
        with open(request_path) as fh:
            request = json.load(fh)
        #: "culprits" (the crash search) or "health" (run/health_reruns.py: growth and spin, per test)
        self.mode: str = request.get("mode", "culprits")
        self.suspects: list[str] = request.get("suspects") or request.get("tests", [])
        #: health mode: which tests a spin began with or ran beside, which grew the target
        self.spin_tests: set[str] = set(request.get("spin", self.suspects))
        self.growth_tests: set[str] = set(request.get("growth", self.suspects))
        self.earlier: list[str] = request.get("earlier", [])
        #: the asking run's node id -> the argument it gave for it (path::name)
        self.args: dict[str, str] = request.get("args", {})
        self.out: str = request["out"]
        self.managed = managed
        self.spec, self.profile = spec, profile
        self.host, self.port = address[0], address[1]
        self.url = address[2] if len(address) > 2 else None
        self.timeout = timeout
        self.fresh = True                 # the start made by the preflight has run nothing yet
        self.steps = 0
        self.reruns: list[dict] = []
        self.items: dict = {}
        self._note_pgid()

    def _note_pgid(self) -> None:
        if self.managed.proc is not None:
            append_line(self.out, {"pgid": self.managed.proc.pid})

    def _look(self) -> str | None:
        return look(self.spec, self.profile, self.host, self.port, self.url, self.timeout)

    # -- one step ------------------------------------------------------------------------------

    def _run_item(self, item) -> list:
        """Run ``item`` (again): every fixture set up and torn down, its reports returned."""
        from _pytest.runner import runtestprotocol
        item.user_properties.clear()
        item._report_sections = []
        return runtestprotocol(item, nextitem=None, log=False)

    def fresh_target(self) -> None:
        """A target that has run nothing (one start of the search: :data:`MAX_STEPS`)."""
        if self.steps >= MAX_STEPS:
            raise StepsSpent()
        self.steps += 1
        if not self.fresh:
            self.managed.fresh_start()
            self._note_pgid()
        self.fresh = False

    def serialize(self, item, reports: list) -> list[dict]:
        return [item.config.hook.pytest_report_to_serializable(config=item.config, report=r) for r in reports]

    def sequence(self, tests: list[str]) -> tuple[list[dict], int | None]:
        """Run ``tests`` in order on a fresh target until it goes down: (one record per test
        run, the index of the test during or after which it went down, or None)."""
        self.fresh_target()
        records: list[dict] = []
        down_at = None
        last_alive = 0.0
        for i, nodeid in enumerate(tests):
            item = self.items[nodeid]
            reports = self._run_item(item)
            ended = time.time()
            down, when = self._look(), "during"
            if down is None:
                last_alive = ended
            if down is None and i == len(tests) - 1:
                time.sleep(AFTER_INPUT)
                down, when = self._look(), "after"
            serialized = self.serialize(item, reports)
            for data in serialized:
                data["nodeid"] = nodeid           # the asking run's name for it
            record = {"test": nodeid, "down": down, "when": when, "reports": serialized, "ended": ended}
            if down is not None:
                status = self.managed.exit_status()
                record["status"] = "still running (hung): killed by the kit" if status == "running" else status
                record["output"] = self.managed.output_tail(15)
                down_at = i
            records.append(record)
            if down is not None:
                break
        for record in records:
            # judged by this run: the target still answered AFTER_INPUT s after the test
            # (a look found it answering that much later, or the run ended with it answering)
            record["clear"] = record["down"] is None and (
                down_at is None or last_alive - record["ended"] >= AFTER_INPUT)
        last = records[down_at] if down_at is not None else None
        self.reruns.append({"tests": list(tests), "down": last["down"] if last else None,
                            "during": last["test"] if last else None,
                            "when": last["when"] if last else None,
                            "status": last.get("status") if last else None})
        return records, down_at

    def _brings_down(self, tests: list[str]) -> tuple[str | None, dict | None]:
        records, at = self.sequence(tests)
        return (records[at]["test"], records[at]) if at is not None else (None, None)

    # -- the search ----------------------------------------------------------------------------

    def search(self) -> dict:
        results: dict[str, dict] = {}
        culprits: list[str] = []
        needs: dict[str, list[str]] = {}
        unresolved: dict[str, dict] = {}
        remaining = list(self.suspects)
        try:
            while remaining:
                records, at = self.sequence(remaining)
                for rec in records:
                    if rec["clear"]:
                        results[rec["test"]] = rec
                if at is None:
                    break
                # the culprit is among the tests this run did not clear (a server may die a
                # moment after the input: the test it died during may be innocent)
                prefix = [rec["test"] for rec in records if not rec["clear"]]
                found = self._alone(prefix)
                if found is None:              # state: every test that ran before it may have left it
                    found = self._after_others(remaining[:at + 1], needs)
                if found is None:
                    unresolved[prefix[-1]] = records[at]
                else:
                    culprits.append(found[0])
                    results[found[0]] = found[1]
                remaining = [t for t in remaining if t not in results and t not in unresolved]
            if not culprits and not unresolved and self.earlier:
                self._whole_history(results, culprits, needs)
        except StepsSpent:
            pass
        return {"results": results, "culprits": culprits, "needs": needs, "reruns": self.reruns,
                "unresolved": unresolved, "steps": self.steps}

    def _alone(self, prefix: list[str]) -> tuple[str, dict] | None:
        """A test of ``prefix`` that brings a fresh target down on its own: the last one first
        (the usual case: it went down during the test that did it), then by halves."""
        got, rec = self._brings_down([prefix[-1]])
        if got is not None:
            return got, rec
        candidates = prefix[:-1]
        while candidates:
            if len(candidates) == 1:
                got, rec = self._brings_down(candidates)
                return (got, rec) if got is not None else None
            half = len(candidates) // 2
            for part in (candidates[half:], candidates[:half]):
                got, _rec = self._brings_down(part)
                if got is not None:
                    candidates = part[:part.index(got) + 1]
                    break
            else:
                return None
        return None

    def _after_others(self, prefix: list[str], needs: dict) -> tuple[str, dict] | None:
        """The test during which ``prefix`` brought the target down, when it does so only after
        earlier tests: which of those it needs (halving them, each half followed by it)."""
        culprit = prefix[-1]
        candidates = [t for t in self.earlier if t not in prefix] + prefix[:-1]
        got, rec = self._brings_down(candidates + [culprit])
        if got != culprit:
            return None
        while len(candidates) > 1:
            half = len(candidates) // 2
            for part in (candidates[half:], candidates[:half]):
                got, part_rec = self._brings_down(part + [culprit])
                if got == culprit:
                    candidates, rec = part, part_rec
                    break
            else:
                break                    # it needs tests of both halves
        needs[culprit] = candidates
        return culprit, rec

    def _whole_history(self, results: dict, culprits: list, needs: dict) -> None:
        """The suspects left the target up in order: with the tests before them, in the order
        they ran, do they bring it down (state that the earlier tests left)?"""
        tests = self.earlier + [t for t in self.suspects if t not in self.earlier]
        got, rec = self._brings_down(tests)
        if got is None or got not in self.suspects:
            return
        found = self._after_others(tests[:tests.index(got) + 1], needs)
        if found is not None:
            culprits.append(found[0])
            results[found[0]] = found[1]


class StepsSpent(Exception):
    """The search used :data:`MAX_STEPS` fresh starts."""


def run(session, isolation: Isolation) -> None:
    """``pytest_runtestloop`` of the child: the search over the collected tests."""
    by_arg = {f"{item.path}::{item.nodeid.partition('::')[2]}": item for item in session.items}
    isolation.items = {nodeid: by_arg[arg] for nodeid, arg in isolation.args.items() if arg in by_arg}
    missing = [t for t in isolation.suspects + isolation.earlier if t not in isolation.items]
    isolation.earlier = [t for t in isolation.earlier if t in isolation.items]
    isolation.suspects = [t for t in isolation.suspects if t in isolation.items]
    if isolation.mode == "health":
        from wirecheck.conformance.run.health_reruns import measure
        doc = {"results": {}}
        try:
            measure(isolation, doc["results"])
        except StepsSpent:      # the fresh starts are spent: what was measured stands
            doc["spent"] = True
    else:
        doc = isolation.search()
    doc["missing"] = missing
    append_line(isolation.out, {"done": doc})
