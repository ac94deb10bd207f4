"""Text helpers shared by the HTML report's sections (report/html.py, report/captures.py):
escaping, anchors, numbers and durations as the pages show them; and the terminal's lines of a
suite run (a crash, a failing test)."""
from __future__ import annotations

import html

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.report.causes import without_class


def escape(text) -> str:
    return html.escape(str(text), quote=True)


def anchor(*parts: str) -> str:
    return "-".join("".join(c if c.isalnum() else "_" for c in p) for p in parts)


def visible(text) -> str:
    """Escaped, and visible: a signature carries the target's bytes, so control characters and
    lone surrogates (bytes JSON kept undecoded) are shown as escapes instead of vanishing or
    making the page unwritable as UTF-8."""
    text = str(text)
    if not text.isprintable():
        text = "".join(c if c.isprintable() or c in " \n" else
                       c.encode("unicode_escape", "backslashreplace").decode("ascii") for c in text)
    return escape(text.encode("utf-8", "backslashreplace").decode("utf-8"))


def number(value, fmt: str = ",") -> str:
    return format(value, fmt) if isinstance(value, (int, float)) and not isinstance(value, bool) else ""


def seconds(value) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "?"
    if value >= 3600:
        return f"{value / 3600:.1f} h"
    return f"{value / 60:.1f} min" if value >= 120 else f"{value:.1f} s"


def crash_line(crash: dict) -> str:
    """One line for a crash of the target (crashwatch.py, culprits.py): the test that did it, or
    why none is named."""
    how = crash["reason"].splitlines()[0] + (f"; the process: {crash['status']}" if crash.get("status") else "")
    culprits = crash.get("culprits") or []
    if culprits:
        needs = crash.get("needs", {})
        named = ", ".join(c + (f" (after {', '.join(needs[c])})" if needs.get(c) else "") for c in culprits)
        return (f"target down ({how}): CRASH of {named}, found by re-running the "
                f"{len(crash['suspects'])} test(s) that ran then on fresh targets")
    names = crash.get("suspects", [])
    ran = (", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")) or "no test"
    if crash.get("error"):
        return f"target down ({how}) while {ran} ran: not judged, the re-runs failed: {crash['error'].splitlines()[0]}"
    if "results" in crash and crash.get("reruns"):
        return (f"target down ({how}) while {ran} ran: not reproduced (none of them, re-run alone on a "
                f"fresh target or after the tests before them, brought it down)")
    return (f"target down ({how}) while {ran} ran: not judged (--target-command lets the kit re-run them "
            f"one at a time to find which); the tests after it were not run")


#: The verdicts the terminal lists one line each (the failures and what fails under --strict).
FAILURE_VERDICTS = (verdicts.HARNESS_ERROR, verdicts.CRASH, verdicts.FAIL, verdicts.TIMEOUT, verdicts.NON_STRICT)
#: Characters of a failure's message on its terminal line.
LINE_MESSAGE = 200


def failure_lines(results, protocol: str) -> list[str]:
    """One line per test of ``protocol`` whose verdict is a failure: the verdict, the test, the
    requirements it is charged to (those it broke, else those it checks) and the first line of
    its message, worst verdicts first."""
    rank = {v: i for i, v in enumerate(FAILURE_VERDICTS)}
    failing = sorted((r for r in results if r["protocol"] == protocol and r["verdict"] in rank),
                     key=lambda r: (rank[r["verdict"]], r["nodeid"]))
    out = []
    for r in failing:
        ids = r.get("broke") or r["requirements"]
        levels = verdicts._levels(protocol, ids)
        charged = ", ".join(f"{i} [{level}]" for i, level in zip(ids, levels))
        first = next((line.strip() for line in without_class(str(r.get("message") or "")).splitlines()
                      if line.strip()), "")
        if len(first) > LINE_MESSAGE:
            first = first[:LINE_MESSAGE - 1] + "…"
        out.append(f"{r['verdict']} {r['nodeid']} ({charged})" + (f": {first}" if first else ""))
    return out
