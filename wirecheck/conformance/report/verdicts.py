"""Verdicts of black-box tests and requirement coverage.

PASS; FAIL (a MUST broken); TIMEOUT (the target did not answer in time, or kept the test busy
past its budget: a FAIL whose reason is silence or a flood, kept apart so a hung target is told
from a wrong one); NON-STRICT (only SHOULD/MAY
requirements broken: passes unless ``--strict``); WAIVED (the profile waives every requirement
the test checks); UNIMPLEMENTED (an optional feature the profile says the target lacks: the
test calls :func:`unimplemented`, which skips it with that verdict); INFORMATIONAL (the test's
checks held and it records what the target chose where the document leaves a choice: it calls
:func:`informational` with the observation); HARNESS-ERROR (the kit itself failed: fixture
set-up, broker start); CRASH (the target went down during the test: conformance/target/crashwatch.py).

Client checks (``wirecheck check-client``, conformance/clients/suite.py) add HANG (the client's
driver did not end its workload within the scenario's budget: a client's TIMEOUT) and NOT-RUN
(the scenario never acted on any of the client's connections, so nothing was tried); a client's
driver that dies of a signal or an uncaught error is a CRASH.
"""
from __future__ import annotations

PASS, FAIL, TIMEOUT = "PASS", "FAIL", "TIMEOUT"
NON_STRICT, WAIVED, HARNESS_ERROR = "NON-STRICT", "WAIVED", "HARNESS-ERROR"
SKIPPED, UNIMPLEMENTED, INFORMATIONAL = "SKIPPED", "UNIMPLEMENTED", "INFORMATIONAL"
CRASH = "CRASH"
HANG, NOT_RUN = "HANG", "NOT-RUN"
#: How a CRASH report's text begins (conformance/target/crashwatch.py), and what separates the crash's
#: story (the test's re-run, the process's status and last output) from the test's own failure.
CRASH_PREFIX = "CRASH: "
CRASH_OWN_OUTCOME = "\n\nThe test's own outcome in that run:\n"
_UNIMPLEMENTED_PREFIX = "UNIMPLEMENTED: "
_INFORMATIONAL_PREFIX = "INFORMATIONAL: "
_RANK = {PASS: 0, INFORMATIONAL: 1, SKIPPED: 1, UNIMPLEMENTED: 1, NOT_RUN: 1, WAIVED: 2, NON_STRICT: 3,
         TIMEOUT: 4, HANG: 4, FAIL: 5, CRASH: 6, HARNESS_ERROR: 7}


def rank(verdict: str) -> int:
    return _RANK.get(verdict, 0)


def _catalogue(proto: str) -> dict:
    from wirecheck.conformance.requirements import catalogue
    from wirecheck.reference_impl.core import registry
    return catalogue(registry.get(proto).requirements)


def _levels(proto: str, ids: list[str]) -> list[str]:
    cat = _catalogue(proto)
    return [cat[i].level if i in cat else "MUST" for i in ids]


def describe(proto: str, ids: list[str]) -> str:
    """One line per requirement a test checks: ID, level, document section, statement."""
    cat = _catalogue(proto)
    lines = []
    for i in ids:
        req = cat.get(i)
        lines.append(f"{i} [{req.level}] {req.section}: {req.summary}" if req else f"{i} [unknown ID]")
    return "\n".join(lines)


#: How a crash-recovery test that needs the kit to run the target begins its SKIPPED message
#: (plugin_lifecycle.target_process): such a skip says nothing about the target.
NEEDS_TARGET_COMMAND = "needs --target-command"


def needs_target_command(result: dict) -> bool:
    """A result (JSON) SKIPPED only because the kit did not run the target."""
    return result.get("verdict") == SKIPPED and result.get("message", "").startswith(NEEDS_TARGET_COMMAND)


def unimplemented(feature: str) -> None:
    """Skip the calling test: the profile says the target lacks ``feature`` (not a failure)."""
    import pytest
    pytest.skip(_UNIMPLEMENTED_PREFIX + feature)


def informational(observation: str) -> None:
    """End the calling test (its checks held) with verdict INFORMATIONAL and ``observation``:
    what the target chose where the document leaves it a choice."""
    import pytest
    pytest.skip(_INFORMATIONAL_PREFIX + observation)


class Breach(AssertionError):
    """A failed check that knows which requirements it broke: a test that checks several (a
    state machine's SHOULD run: SIGR-V1-004, -005, -006) then fails only that one, and the
    others keep what other tests say of them. It may name a requirement its test does not
    check: a carry-through test that meets a Completion answering a non-blocking invocation
    (SIGR-INV-007) is collateral of that breach, and its own requirements stay untested by it.
    The verdict's level is the broken ones'."""

    def __init__(self, message: str, *requirements: str) -> None:
        super().__init__(message)
        self.requirements = tuple(requirements)


def broken_ids(exc: BaseException | None, ids: list[str]) -> list[str]:
    """The requirements a failure says it broke, when every failure in it (inside a group too:
    hypothesis reports several failures as one) names them (a :class:`Breach`, a malformed
    frame whose rule the suite knows: target.TargetError.requirements); else [] (every
    requirement of the test is taken as broken). Named IDs outside ``ids`` are the test's
    collateral: it failed on another requirement's breach (:func:`collateral`)."""
    if exc is None:
        return []
    leaves = list(_leaves(exc)) if isinstance(exc, BaseExceptionGroup) else [exc]
    named = [tuple(getattr(leaf, "requirements", None) or ()) for leaf in leaves]
    if not all(named):
        return []
    return list(dict.fromkeys(i for group in named for i in group))


#: Characters of one failure's minimal example kept (a state machine's steps, one a line).
EXAMPLE_CHARS = 4000


def distinct_failures(group: BaseException) -> list[dict]:
    """Each failure of a group (hypothesis's "found N distinct failures"): its first line, the
    requirements it names (a :class:`Breach`; [] for one that names none), and its own minimal
    example (the notes hypothesis adds to it: "state = ...", the steps, one a line)."""
    out = []
    for leaf in _leaves(group):
        text = str(leaf).strip()
        first = text.splitlines()[0] if text else type(leaf).__name__
        example = "\n".join(str(n) for n in getattr(leaf, "__notes__", ()))
        if len(example) > EXAMPLE_CHARS:
            example = example[:EXAMPLE_CHARS] + f"\n... ({len(example) - EXAMPLE_CHARS} more characters)"
        out.append({"message": first[:300], "requirements": list(getattr(leaf, "requirements", None) or ()),
                    "example": example})
    return out


def result_message(result: dict) -> str:
    """A failed result's message as the reports show it: several distinct failures listed each
    with the IDs it names; a collateral failure (charged to what it broke, the IDs shown beside
    it, not its own) says so first, without the exception's class."""
    message = result["message"]
    if result.get("failures"):
        message = f"{len(result['failures'])} distinct failures: " + "; ".join(
            f"({i}) {f['message']}" + (f" [{', '.join(f['requirements'])}]" if f["requirements"] else "")
            for i, f in enumerate(result["failures"], 1))
    from wirecheck.conformance.report.causes import without_class
    return "collateral: " + without_class(message) if collateral(result) else message


def collateral(result: dict) -> list[str]:
    """The requirements a failed test (its JSON result) was charged with that it does not check."""
    return [i for i in result.get("broke") or () if i not in result.get("requirements", ())]


def classify(report, call, proto: str, ids: list[str], profile, strict: bool) -> str:
    """The verdict of one phase's report; turns NON-STRICT/WAIVED failures into xfails."""
    if report.skipped:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
        reason = str(reason).removeprefix("Skipped: ")
        if reason.startswith(_UNIMPLEMENTED_PREFIX):
            return UNIMPLEMENTED
        if reason.startswith(_INFORMATIONAL_PREFIX):
            return INFORMATIONAL
        return SKIPPED
    if report.passed:
        return PASS
    if report.when != "call":
        return HARNESS_ERROR
    if call.excinfo is not None and kit_error(call.excinfo.value):
        return HARNESS_ERROR
    from wirecheck.conformance.target.connection import TargetTimeout, spent_in
    waivers = profile.waivers if profile is not None else {}
    if ids and all(i in waivers for i in ids):
        report.outcome = "skipped"
        report.wasxfail = "WAIVED: " + "; ".join(f"{i}: {waivers[i]}" for i in ids)
        return WAIVED
    if ids and all(level == "MAY" for level in _levels(proto, ids)):
        # A MAY is never a failure, --strict or not: what the document allows the target need not
        # do; what it did instead is judged by the requirement that forbids it.
        report.outcome = "skipped"
        report.wasxfail = _INFORMATIONAL_PREFIX + "the target does not do what this MAY allows: " + _first_line(call)
        return INFORMATIONAL
    if ids and not strict and all(level != "MUST" for level in _levels(proto, ids)):
        report.outcome = "skipped"
        report.wasxfail = "NON-STRICT: " + _first_line(call)
        return NON_STRICT
    if call.excinfo is not None and (call.excinfo.errisinstance(TargetTimeout)
                                     or spent_in(call.excinfo.value) is not None):
        return TIMEOUT
    return FAIL


def kit_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the kit's own failure, not the target's: hypothesis refusing to go on
    (a strategy that drew differently on replay, a failed health check, an invalid setting).
    A failure hypothesis could not reproduce (FlakyFailure) stays the target's when what failed
    was a check of the target: it was seen once, and its transcript shows it."""
    try:
        from hypothesis import errors
    except ImportError:                 # pragma: no cover - hypothesis is a dependency
        return False
    if isinstance(exc, errors.FlakyFailure):
        return not all(isinstance(e, (AssertionError, OSError)) for e in _leaves(exc))
    return isinstance(exc, errors.HypothesisException)


def _leaves(group: BaseException):
    for e in getattr(group, "exceptions", ()):
        if isinstance(e, BaseExceptionGroup):
            yield from _leaves(e)
        else:
            yield e


def _first_line(call) -> str:
    if call.excinfo is None:
        return ""
    return str(call.excinfo.value).strip().splitlines()[0] if str(call.excinfo.value).strip() else call.excinfo.typename


def message(report) -> str:
    if getattr(report, "wasxfail", ""):
        return report.wasxfail
    if report.longrepr is None:
        return ""
    if isinstance(report.longrepr, str) and report.longrepr.startswith(CRASH_PREFIX):
        return report.longrepr.partition(CRASH_OWN_OUTCOME)[0]
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:   # a skip: (file, line, reason)
        reason = str(report.longrepr[2])
        return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
    crash = getattr(report.longrepr, "reprcrash", None)
    return crash.message if crash is not None else str(report.longrepr).splitlines()[-1]


def coverage(cat: dict, tested_ids: set) -> dict:
    """(tested, testable) per level, plus how many IDs are untestable black-box."""
    out = {level: [0, 0] for level in ("MUST", "SHOULD", "MAY")}
    untestable = 0
    for req in cat.values():
        if req.untestable:
            untestable += 1
            continue
        out[req.level][1] += 1
        if req.id in tested_ids:
            out[req.level][0] += 1
    out["untestable"] = untestable
    return out


def untested_behind(cat: dict, by_id: dict, tested_ids: set, level: str = "MUST") -> dict:
    """Requirement ID -> the IDs whose breach its tests met first, for each testable
    requirement of ``level`` that no test ran to because every test of it that ran stopped at
    another requirement's breach (``broke``): a run whose only findings are such breaches can
    end with exit 0 and these never checked. ``by_id``: ID -> the results naming it."""
    out = {}
    for rid, req in cat.items():
        if req.level != level or req.untestable or rid in tested_ids:
            continue
        behind = sorted({b for t in by_id.get(rid, ()) for b in t.get("broke") or () if b != rid})
        if behind:
            out[rid] = behind
    return out
