"""One cause, one finding: failures that share a cause, grouped.

A single encoding bug in a target (a map written as an integer, a length off by one) fails
every test that meets it: dozens of FAIL lines for one defect. The per-test verdicts stay as
they are; the summary, the JSON and the HTML report also say which failures share a cause,
how many tests and requirements each cause touches, and which test shows it first.

The cause of a failure is its message with what differs from test to test taken out: the
exception's class prefix, byte offsets, numbers, ids and quoted values. Two failures with the
same decode error category and field, or the same expected-versus-got shape, then read the same.
"""
from __future__ import annotations

import re
from collections import defaultdict

#: Verdicts whose tests are grouped (a failure of the target's, at any level).
GROUPED = ("FAIL", "NON-STRICT", "TIMEOUT", "HANG", "CRASH")
#: A group is reported from this many tests on.
MIN_TESTS = 2
#: Characters of a cause kept.
CAUSE_CHARS = 240

_PREFIX = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?:Target\w*|AssertionError|BudgetSpent|Breach)\s*:\s*")
#: What a verdict adds in front (a collateral failure is the same cause as its breach's own test).
_NON_STRICT = re.compile(r"^(?:(?:NON-STRICT|WAIVED|collateral):\s*)+")
_AT_BYTE = re.compile(r"\s+at byte \d+")
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{8,}\b")
_NUMBER = re.compile(r"(?<![A-Za-z_])-?\d+(?:\.\d+)?")
_SPACES = re.compile(r"\s+")


#: What stays as it is: requirement IDs (SIGR-INV-007) and the quoted names of fields a decoder
#: says are missing or wrong (:func:`_is_field`).
_REQUIREMENT = re.compile(r"\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-\d{3}\b")
_NAME = re.compile(r"^['\"][A-Za-z_][A-Za-z_]{0,39}['\"]$")


def _is_field(text: str, m) -> bool:
    """A quoted name where a decoder names a field ("has no 'invocationId'", "'Target' must be")."""
    return bool(_NAME.match(m.group(0))) and (text[:m.start()].endswith("has no ")
                                                or text[m.end():].startswith(" must "))


def without_class(text: str) -> str:
    """``text`` without the exception's class in front (``wirecheck...TargetMalformed: ``)."""
    return _PREFIX.sub("", text or "")


def cause(message: str) -> str:
    """``message`` with what varies between tests that fail the same way taken out (a field's
    quoted name and requirement IDs kept)."""
    text = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    text = _NON_STRICT.sub("", text)
    text = _PREFIX.sub("", text)
    text = _AT_BYTE.sub("", text)
    text = _QUOTED.sub(lambda m: m.group(0) if _is_field(text, m) else "'…'", text)
    kept: list[str] = []

    def keep(m):
        kept.append(m.group(0))
        return f"\x00{len(kept) - 1}\x00"
    text = _REQUIREMENT.sub(keep, text)
    text = _HEX.sub("#", text)
    text = _NUMBER.sub(lambda m: m.group(0) if text[max(0, m.start() - 1)] == "\x00" else "N", text)
    text = re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], text)
    return _SPACES.sub(" ", text).strip()[:CAUSE_CHARS]


_FIELD = re.compile(r"has no '([A-Za-z_]\w{0,39})'|'([A-Za-z_]\w{0,39})' must ")


def group_key(result: dict) -> str:
    """What groups a failure with others: its :func:`cause`; but a failure that names the
    requirements it broke (``broke``) and the field a decoder found wrong is that breach of
    that field, however each encoding words it (JSON's "Completion has no 'invocationId'",
    MessagePack's "'InvocationId' must be a string": one defect, one finding)."""
    message = result.get("message", "")
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    broke = result.get("broke") or []
    fields = sorted({(a or b).lower() for a, b in _FIELD.findall(first)})
    if broke and fields:
        return f"breaks {', '.join(sorted(broke))}: field {', '.join(fields)}"
    return cause(message)


def group(results, min_tests: int = MIN_TESTS) -> list[dict]:
    """The causes shared by at least ``min_tests`` failing tests of ``results`` (result dicts
    with nodeid, verdict, message, requirements), the largest first: the cause, how many tests
    and which requirements it touches, and the first test (by node id) as its example."""
    by_cause: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        if r.get("verdict") in GROUPED:
            key = group_key(r)
            if key:
                by_cause[key].append(r)
    out = []
    for tests in by_cause.values():
        if len(tests) < min_tests:
            continue
        tests = sorted(tests, key=lambda r: r["nodeid"])
        key = cause(tests[0].get("message", ""))        # what the group shows: its first test's
        counts: dict[str, int] = defaultdict(int)
        for r in tests:
            counts[r["verdict"]] += 1
        out.append({"cause": key, "tests": len(tests),
                    "requirements": sorted({i for r in tests for i in r.get("broke") or r.get("requirements", [])}),
                    "verdicts": dict(sorted(counts.items())),
                    "example": tests[0]["nodeid"]})
    out.sort(key=lambda g: (-g["tests"], g["cause"]))
    return out
