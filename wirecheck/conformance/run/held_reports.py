"""A suite test's reports, held back until no crash can be charged to it any more.

A server often dies a moment after the input that killed it, when the test that sent it has
ended; under pytest-xdist another test is running then too. So a test's reports (setup, call,
teardown) are not handed to pytest's reporters (terminal, JUnit, the result file) when the test
ends: they wait until the target was seen answering :data:`crashwatch.AFTER_INPUT` seconds
after the test (the test is clear), or, when the target went down, until the crash's culprits
are known (crashwatch.py, culprits.py). Then a suspect's reports are those of its own re-run
alone on a fresh target (CRASH when that re-run brought the target down), or, when the kit
cannot restart the target, "not judged" with the names of the tests that ran beside it.

Reports are handed on in the order the tests ran.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.target.crashwatch import AFTER_INPUT, POLL
from wirecheck.conformance.target.evidence import crash_key


@dataclass
class Held:
    item: object
    reports: list
    generation: int
    ended: float
    nodeid: str = field(init=False)

    def __post_init__(self) -> None:
        self.nodeid = self.item.nodeid


def set_verdict(report, verdict: str) -> None:
    props = [p for p in report.user_properties if p[0] not in ("verdict", "broke")]
    report.user_properties = props + [("verdict", verdict)]


def mark_crash(report, text: str) -> None:
    """Make ``report`` the CRASH ``text`` tells of (the test's own failure, if any, follows)."""
    before = f"{verdicts.CRASH_OWN_OUTCOME}{report.longrepr}" if report.longrepr else ""
    report.outcome = "failed"
    report.longrepr = f"{verdicts.CRASH_PREFIX}{text}{before}"
    set_verdict(report, verdicts.CRASH)
    props = dict(report.user_properties)
    if props.get("protocol") and props.get("requirements") and not any(
            name == "wirecheck requirements" for name, _ in report.sections):
        report.sections.append(("wirecheck requirements",
                                verdicts.describe(props["protocol"], props["requirements"].split())))


def mark_not_judged(report, item, text: str) -> None:
    report.outcome = "skipped"
    report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {text}")
    set_verdict(report, verdicts.SKIPPED)
    report.sections = [s for s in report.sections if not s[0].startswith("wirecheck ")]


def not_judged(held: Held, text: str) -> list:
    """``held``'s reports, made "not judged" (every one of them: the teardown's carries the
    verdict of the call too, and the worst verdict of a test's reports is its verdict)."""
    reports = list(held.reports)
    call = _call_report(reports)
    mark_not_judged(call, held.item, text)
    for report in reports:
        if report is not call and "verdict" in dict(report.user_properties):
            set_verdict(report, verdicts.SKIPPED)
    return reports


def _call_report(reports: list):
    """The report that carries the verdict: the call's, or the setup's when there was no call."""
    return next((r for r in reports if r.when == "call"), None) or next(
        (r for r in reports if r.when == "setup"), reports[0])


def crash_text(rec: dict, needs: list[str] | None, doc: dict) -> str:
    """What a culprit's CRASH says: how its re-run went, how the target ended, its last output."""
    moment = "during this test" if rec.get("when") != "after" else \
        f"within {AFTER_INPUT:g} s after this test ended"
    if needs:
        how = (f"run after {', '.join(needs)} on a freshly started target (alone it stays up: the crash "
               f"needs what {'that test' if len(needs) == 1 else 'those tests'} left behind)")
    else:
        how = "run alone on a freshly started target"
    # the target's own word first (its exit status, error line, exception): the first line of
    # the message, which the causes group by, so two root causes are never one
    evidence = crash_key(rec.get("status") or "", rec.get("output") or "")[0][len("crash: "):]
    text = f"({evidence}) the target went down {moment}, {how}: {rec['down']}"
    if rec.get("status"):
        text += f"; the process: {rec['status']}"
    others = [t for t in doc.get("suspects", []) if t != rec["test"]]
    text += (f" (found when the target went down in the run, with {len(others)} other test(s) running "
             f"or just ended; each was re-run alone)" if others else "")
    if rec.get("output"):
        text += "; its last output:\n" + rec["output"]
    return text


def resolve(config, held: Held, doc: dict) -> list:
    """The reports to hand on for ``held``, given its generation's crash document."""
    nodeid = held.nodeid
    if nodeid not in doc.get("suspects", []):
        return held.reports
    rec = doc.get("results", {}).get(nodeid)
    if rec is None and nodeid in doc.get("unresolved", {}):
        return not_judged(held, "not judged: re-run after the tests that ran before it on a freshly started "
                                "target, the target went down during this test, but neither this test alone nor "
                                "any single earlier test was found to bring it down")
    if rec is None:
        others = [t for t in doc["suspects"] if t != nodeid]
        beside = f", beside {', '.join(others)}" if others else ""
        if doc.get("error"):
            why = f"; its re-run failed: {doc['error'].splitlines()[0]}"
        else:
            why = ("; the kit does not run the target, so it cannot re-run the tests one at a time to "
                   "find which (--target-command would)")
        return not_judged(held, f"not judged: the target went down while this test ran or just after{beside}{why}")
    reports = [config.hook.pytest_report_from_serializable(config=config, data=d) for d in rec["reports"]]
    call = _call_report(reports)
    if nodeid in doc.get("culprits", []):
        mark_crash(call, crash_text(rec, doc.get("needs", {}).get(nodeid), doc))
    else:
        call.user_properties = list(call.user_properties) + [
            ("rerun", "re-run alone on a freshly started target: the target went down while it ran "
                      "beside other tests")]
    return reports


def _xdist_worker(config):
    """pytest-xdist's side of a worker (it sends each report as the report of the test it runs
    now, and checks that they match), or None outside a worker."""
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ == "WorkerInteractor" and hasattr(plugin, "item_index"):
            return plugin
    return None


def log(item, reports: list) -> None:
    """Hand ``item``'s reports to pytest's reporters (under xdist, as that test's)."""
    worker = _xdist_worker(item.config)
    now = getattr(worker, "item_index", None)
    if worker is not None:
        worker.item_index = item.session.items.index(item)
    try:
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for report in reports:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    finally:
        if worker is not None:
            worker.item_index = now


def drain(config, watch, held: list[Held], final: bool, give_up_after: float) -> None:
    """Hand on every held test that is settled, in order; with ``final`` (this process runs no
    more tests), wait until each is, looking at the target once its wait is over."""
    deadline = time.monotonic() + give_up_after
    while held:
        first = held[0]
        kind, doc = watch.settled(first.generation, first.ended)
        if kind == "clear":
            log(first.item, first.reports)
        elif kind == "culprits":
            log(first.item, resolve(config, first, doc))
        elif not final:
            return
        elif time.monotonic() > deadline:
            log(first.item, not_judged(first, "not judged: the kit could not tell whether the target went "
                                              "down after this test"))
        else:
            if watch.claimed(first.generation) is None and watch.generation() == first.generation:
                wait = first.ended + AFTER_INPUT - time.time()
                if wait > 0:
                    time.sleep(wait)
                watch.look_now(first.nodeid, first.generation)
            else:
                time.sleep(POLL)
            continue
        held.pop(0)
