"""Result files of suite runs (``wirecheck check --report FILE.json``) read back for reports:
one :class:`Run` per file, the verdict of each requirement in a run, and the merge of several
runs (implementations x requirements).

A requirement's verdict in a run: the worst verdict among the tests naming it that broke it
(HARNESS-ERROR, FAIL, TIMEOUT, NON-STRICT, WAIVED, worst first), else PASS when a test passed,
else UNIMPLEMENTED or SKIPPED; a requirement no test ran is UNTESTABLE (the catalogue gives the
reason) or NOT-RUN.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from conformance import verdicts

UNTESTABLE, NOT_RUN = "UNTESTABLE", "NOT-RUN"
#: Verdicts that say the target broke (or a waiver covers) the requirement, worst first.
_BROKEN = (verdicts.HARNESS_ERROR, verdicts.FAIL, verdicts.TIMEOUT, verdicts.NON_STRICT, verdicts.WAIVED)
#: Verdicts that make a run "not conformant" (NON-STRICT only under --strict).
NOT_CONFORMANT = (verdicts.FAIL, verdicts.TIMEOUT, verdicts.HARNESS_ERROR)


class ReportError(ValueError):
    """A result file that cannot be read as one."""


@dataclass
class Run:
    label: str
    path: str
    doc: dict = field(repr=False)

    @property
    def tests(self) -> list[dict]:
        return self.doc.get("tests", [])

    @property
    def summary(self) -> dict:
        return self.doc.get("summary", {})

    @property
    def protocols(self) -> list[str]:
        return sorted(self.summary)

    @property
    def duration(self) -> float:
        return max(0.0, float(self.doc.get("finished", 0)) - float(self.doc.get("started", 0)))

    def catalogue(self, proto: str) -> dict:
        return self.summary.get(proto, {}).get("catalogue", {})

    def tests_of(self, proto: str) -> list[dict]:
        return [t for t in self.tests if t.get("protocol") == proto]

    def conformant(self, proto: str) -> bool:
        strict = bool(self.doc.get("strict"))
        bad = NOT_CONFORMANT + ((verdicts.NON_STRICT,) if strict else ())
        return not any(t["verdict"] in bad for t in self.tests_of(proto))

    def requirement_verdicts(self, proto: str) -> dict[str, tuple[str, list[dict]]]:
        """Requirement ID -> (verdict, the tests naming it), for every ID of the catalogue."""
        by_id: dict[str, list[dict]] = {}
        for t in self.tests_of(proto):
            for rid in t.get("requirements", []):
                by_id.setdefault(rid, []).append(t)
        out = {}
        for rid, req in self.catalogue(proto).items():
            out[rid] = (requirement_verdict(by_id.get(rid, []), req), by_id.get(rid, []))
        for rid, tests in by_id.items():           # IDs a newer suite knows and the catalogue not
            out.setdefault(rid, (requirement_verdict(tests, {}), tests))
        return out


def requirement_verdict(tests: list[dict], req: dict) -> str:
    found = {t["verdict"] for t in tests}
    for v in _BROKEN:
        if v in found:
            return v
    if verdicts.PASS in found:
        return verdicts.PASS
    for v in (verdicts.INFORMATIONAL, verdicts.UNIMPLEMENTED, verdicts.SKIPPED):
        if v in found:
            return v
    return UNTESTABLE if req.get("untestable") else NOT_RUN


def _label(doc: dict, path: str) -> str:
    if doc.get("label"):
        return str(doc["label"])
    target = doc.get("target")
    if isinstance(target, (list, tuple)) and target:
        where = target[2] if len(target) > 2 and target[2] else f"{target[0]}:{target[1]}"
    else:
        where = str(target) if target else "reference broker"
    profile = doc.get("profile")
    return f"{where} ({profile})" if profile else where


def load_run(path: str) -> Run:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as exc:
        raise ReportError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ReportError(f"{path}: not a JSON result file ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tests"), list) or not isinstance(doc.get("summary"), dict):
        raise ReportError(f"{path}: not a wirecheck result file (no 'tests' and 'summary')")
    return Run(_label(doc, path), path, doc)


def load_runs(paths: list[str]) -> list[Run]:
    """Every result file in ``paths`` (files, or directories holding ``*.json`` result files);
    labels made unique. :class:`ReportError` when one is unreadable or there are none."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p)
                            if f.endswith(".json") and f != "index.json" and _looks_like_result(os.path.join(p, f)))
        else:
            files.append(p)
    if not files:
        raise ReportError(f"no result files in {', '.join(paths)}")
    runs = [load_run(f) for f in files]
    merge_same_target(runs)
    seen: dict[str, int] = {}
    for run in runs:
        n = seen[run.label] = seen.get(run.label, 0) + 1
        if n > 1:
            run.label = f"{run.label} #{n}"
    return runs


def _looks_like_result(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return '"tests"' in head or '"summary"' in head


def merge_same_target(runs: list[Run]) -> None:
    """``make run`` writes one file per protocol for the same reference brokers: one run of
    several protocols reads better than a column per protocol. Runs with the same label and
    disjoint protocols are merged in place (the list shrinks)."""
    i = 0
    while i < len(runs):
        j = i + 1
        while j < len(runs):
            a, b = runs[i], runs[j]
            if a.label == b.label and not set(a.protocols) & set(b.protocols):
                a.doc = {**a.doc, "tests": a.tests + b.tests, "summary": {**a.summary, **b.summary},
                         "started": min(a.doc.get("started", 0), b.doc.get("started", 0)),
                         "finished": max(a.doc.get("finished", 0), b.doc.get("finished", 0)),
                         "paths": a.doc.get("paths", [a.path]) + [b.path]}
                del runs[j]
            else:
                j += 1
        i += 1
