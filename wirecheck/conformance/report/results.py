"""The inputs of a report read back: result files of suite runs (``wirecheck check --report
FILE.json``, ``wirecheck replay --report``), one :class:`Run` per file, the verdict of each
requirement in a run, and the merge of several runs (implementations x requirements); fuzz
campaign summaries (``wirecheck fuzz --all``, fuzz/campaign.py), one :class:`Campaign` each; and
capture analyses (``wirecheck analyze CAPTURES --out DIR``, pipeline/spark_job.py), one
:class:`Analysis` per ``DIR/summary.json``.

One loading path, :func:`load`, reads any of them and dispatches on the document's ``"kind"``
(:data:`KINDS`): none (a suite run), ``"replay"`` or ``"client-check"`` (``wirecheck serve
--check-clients``) is a result file, ``"fuzz-campaign"`` a
campaign summary, ``"capture-analysis"`` an analysis summary; anything else is refused with a
:class:`ReportError` saying what it is not.

A requirement's verdict in a run: the worst verdict among the tests naming it that broke it
(HARNESS-ERROR, CRASH, FAIL, TIMEOUT, HANG, NON-STRICT, WAIVED, worst first), else PASS when a test
passed, else INFORMATIONAL, UNIMPLEMENTED or SKIPPED; a requirement no test ran is UNTESTABLE (the catalogue gives the
reason) or NOT-RUN.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field

from wirecheck.conformance.report import verdicts

UNTESTABLE, NOT_RUN = "UNTESTABLE", verdicts.NOT_RUN
#: Verdicts that say the target broke (or a waiver covers) the requirement, worst first.
_BROKEN = (verdicts.HARNESS_ERROR, verdicts.CRASH, verdicts.FAIL, verdicts.TIMEOUT, verdicts.HANG,
           verdicts.NON_STRICT, verdicts.WAIVED)
#: Verdicts that make a run "not conformant" (NON-STRICT only under --strict).
#: Verdicts a MAY requirement reads as INFORMATIONAL (a crash or the kit's error stays).
_BELOW_A_MAY = (verdicts.FAIL, verdicts.TIMEOUT, verdicts.NON_STRICT)
NOT_CONFORMANT = (verdicts.FAIL, verdicts.CRASH, verdicts.TIMEOUT, verdicts.HANG, verdicts.HARNESS_ERROR)
#: The ``"kind"`` of a fuzz campaign summary (fuzz/campaign.py).
CAMPAIGN = "fuzz-campaign"
#: The ``"kind"`` of a capture analysis summary (pipeline/spark_job.py: ``OUT/summary.json``).
ANALYSIS = "capture-analysis"


class ReportError(ValueError):
    """A report input that cannot be read as one."""


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
            # a test charged with another requirement's breach (verdicts.collateral) counts there
            for rid in dict.fromkeys(t.get("requirements", []) + t.get("broke", [])):
                by_id.setdefault(rid, []).append(t)
        out = {}
        for rid, req in self.catalogue(proto).items():
            out[rid] = (requirement_verdict(by_id.get(rid, []), req, rid), by_id.get(rid, []))
        for rid, tests in by_id.items():           # IDs a newer suite knows and the catalogue not
            out.setdefault(rid, (requirement_verdict(tests, {}, rid), tests))
        return out


def requirement_verdict(tests: list[dict], req: dict, rid: str | None = None) -> str:
    # a test blamed for the target's health (a spin) keeps its verdict for its requirements;
    # a test that failed on another of its requirements (``broke``: verdicts.Breach) stopped
    # there and says nothing of ``rid``
    found = {t.get("requirements_verdict", t["verdict"]) for t in tests
             if rid is None or not t.get("broke") or rid in t["broke"]}
    if req.get("level") == "MAY" and found & set(_BELOW_A_MAY):
        # a MAY is never a failure (verdicts.classify): a test of it and of others that failed
        # says the target did not do what the MAY allows, which is information
        found = (found - set(_BELOW_A_MAY)) | {verdicts.INFORMATIONAL}
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


@dataclass
class _Summary:
    """A summary document read from ``path``, shown as ``label``; ``started`` orders them
    (newest first)."""
    label: str
    path: str
    doc: dict = field(repr=False)

    @property
    def started(self) -> float:
        return float(self.doc.get("started") or 0)


@dataclass
class Campaign(_Summary):
    """A fuzz campaign's summary: the machine, the budget, per job its target, execs, rate,
    coverage, corpus size, coverage timeline (in-process jobs) and findings, and the findings
    deduplicated across jobs (fuzz/campaign.py writes it)."""

    @property
    def jobs(self) -> list[dict]:
        return self.doc.get("jobs", [])

    @property
    def findings(self) -> list[dict]:
        return self.doc.get("findings", [])

    @property
    def protocols(self) -> list[str]:
        return sorted({str(j["protocol"]) for j in self.jobs if j.get("protocol")})

    def job_protocols(self, names: list[str]) -> set[str]:
        """The protocols of the jobs named (a finding's ``found_by``)."""
        return {str(j["protocol"]) for j in self.jobs if j.get("name") in names and j.get("protocol")}

    def summary(self) -> dict:
        """The campaign without its coverage timelines (index.json keeps this; the timelines
        stay in the campaign file, ``file``)."""
        def bare(job: dict) -> dict:
            out = {k: v for k, v in job.items() if k != "timeline"}
            if isinstance(out.get("targets"), list):        # a job that fuzzed several targets
                out["targets"] = [bare(t) for t in out["targets"] if isinstance(t, dict)]
            return out
        return {"file": self.path, "label": self.label,
                **{k: v for k, v in self.doc.items() if k != "jobs"},
                "jobs": [bare(j) for j in self.jobs]}


def _campaign_label(doc: dict) -> str:
    started = doc.get("started")
    if isinstance(started, (int, float)) and started > 0:
        return "campaign " + time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started))
    return "campaign"


@dataclass
class Analysis(_Summary):
    """A capture analysis's summary (``started``: when the job started, pipeline/spark_job.py):
    the job's facts (files, input bytes, master, seconds, row counts) and its ``"report"``
    block: violations by requirement with a few examples, and the ``stats`` table in long
    format (pipeline/schema.py ``STATS``: per protocol a ``metric``, a ``key``, a ``count``
    and a ``value``)."""

    @property
    def violations(self) -> list[dict]:
        return self.doc["report"]["violations"]

    @property
    def stats(self) -> list[dict]:
        return self.doc["report"]["stats"]

    @property
    def rows(self) -> dict:
        return self.doc.get("rows") if isinstance(self.doc.get("rows"), dict) else {}

    @property
    def protocols(self) -> list[str]:
        return sorted({str(r["protocol"]) for r in self.stats + self.violations})

    def stats_of(self, proto: str, metric: str) -> list[dict]:
        return [r for r in self.stats if r["protocol"] == proto and r["metric"] == metric]

    def violations_of(self, proto: str) -> list[dict]:
        return [v for v in self.violations if v["protocol"] == proto]

    def summary(self) -> dict:
        """What index.json keeps: the whole summary (its report block is small: one row per
        protocol and type, size bucket, code, latency figure, requirement, total) plus
        ``file`` and ``label``."""
        return {"file": self.path, "label": self.label, **self.doc}


def _analysis_label(doc: dict, path: str) -> str:
    started = doc.get("started")
    if isinstance(started, (int, float)) and not isinstance(started, bool) and started > 0:
        return "capture analysis " + time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started))
    out = doc.get("out") if isinstance(doc.get("out"), str) and doc.get("out") else os.path.dirname(path)
    return f"capture analysis {out or path}"


#: Seconds since 1970 past which a file's times are not taken as times (the year 5138).
LATEST_TIME = 1e11


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _malformed_analysis(doc: dict) -> str | None:
    """What is wrong with an analysis summary's report block, or None. Checked once here so
    the renderer can trust the types (a hand-edited or truncated summary must not make the
    page half-written)."""
    report = doc.get("report")
    stopped = doc.get("interrupted")
    if isinstance(stopped, dict) and report is None:
        return (f"stopped by {stopped.get('signal', 'a signal')} before its end: its tables are "
                "incomplete; run wirecheck analyze again")
    if not isinstance(report, dict) or not isinstance(report.get("violations"), list) \
            or not isinstance(report.get("stats"), list):
        return "without its 'report' block (violations and stats; wirecheck analyze writes it)"
    for i, r in enumerate(report["stats"]):
        if not (isinstance(r, dict) and isinstance(r.get("protocol"), str) and isinstance(r.get("metric"), str)
                and "key" in r and isinstance(r["key"], (str, type(None))) and _number(r.get("count"))
                and "value" in r and (r["value"] is None or _number(r["value"]))):
            return (f"stats row {i} is not {{protocol, metric, key, count, value}} with a number count: "
                    f"{json.dumps(r)[:200]}")
    for i, v in enumerate(report["violations"]):
        if not (isinstance(v, dict) and isinstance(v.get("protocol"), str) and isinstance(v.get("requirement"), str)
                and _number(v.get("count")) and isinstance(v.get("examples", []), list)
                and all(isinstance(x, dict) for x in v.get("examples", []))):
            return (f"violation {i} is not {{protocol, requirement, level, count, flows, examples}}: "
                    f"{json.dumps(v)[:200]}")
    if "rows" in doc and not isinstance(doc["rows"], dict):
        return "its 'rows' is not an object of row counts"
    return None


def _as_analysis(path: str, doc: dict) -> Analysis:
    problem = _malformed_analysis(doc)
    if problem:
        raise ReportError(f"{path}: a capture analysis summary {problem}")
    return Analysis(_analysis_label(doc, path), path, doc)


def _as_run(path: str, doc: dict) -> Run:
    if isinstance(doc.get("mode"), str) and "execs" in doc:
        raise ReportError(f"{path}: one fuzz run's summary (wirecheck fuzz --json), not a result file or a "
                          "fuzz campaign summary (wirecheck fuzz --all writes those)")
    if not isinstance(doc.get("tests"), list) or not isinstance(doc.get("summary"), dict):
        raise ReportError(f"{path}: not a wirecheck result file (no 'tests' and 'summary') "
                          f"or fuzz campaign summary (no \"kind\": \"{CAMPAIGN}\")")
    problem = _malformed_run(doc)
    if problem is not None:
        raise ReportError(f"{path}: a result file whose {problem}")
    return Run(_label(doc, path), path, doc)


def _is(value, kinds, optional: bool = True) -> bool:
    return (optional and value is None) or (isinstance(value, kinds) and not isinstance(value, bool)
                                            if kinds in (int, float, (int, float)) else isinstance(value, kinds))


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


#: A test entry's fields the report reads, and their types (None: may be absent).
_TEST_FIELDS = {"nodeid": str, "verdict": str, "protocol": (str, type(None)), "message": (str, type(None)),
                "transcript": (str, type(None)), "duration": (int, float, type(None)),
                "requirements_verdict": (str, type(None)), "wire": (list, type(None)),
                "notes": (list, type(None)), "failures": (list, type(None))}
#: A protocol summary's blocks and their types.
_SUMMARY_FIELDS = {"counts": dict, "catalogue": dict, "coverage": dict, "failing_requirements": list,
                   "waivers": dict, "stale_waivers": list, "unimplemented_requirements": list,
                   "waived_requirements": list, "crashes": list, "target_health": dict}


def _malformed_run(doc: dict) -> str | None:
    """What in a result file does not have the type the report reads it as, or None (checked
    once here, as :func:`_malformed_analysis` does for analyses: the renderer trusts it)."""
    for key in ("started", "finished"):
        if not _is(doc.get(key), (int, float)):
            return f"{key!r} is not a number"
    for key in ("label", "profile"):
        if not _is(doc.get(key), str):
            return f"{key!r} is not text"
    if not _is(doc.get("paths"), list) or not all(isinstance(p, str) for p in doc.get("paths") or ()):
        return "'paths' is not a list of file names"
    if not _is(doc.get("interrupted"), dict):
        return "'interrupted' is not an object"
    for i, t in enumerate(doc["tests"]):
        if not isinstance(t, dict):
            return f"test {i} is not an object"
        for key, kinds in _TEST_FIELDS.items():
            if not isinstance(t.get(key), kinds if isinstance(kinds, tuple) else (kinds,)) or isinstance(t.get(key), bool):
                return f"test {i}'s {key!r} is not {_kind_name(kinds)}"
        for key in ("requirements", "broke"):
            if key in t and not _strings(t[key]) or key == "requirements" and key not in t:
                return f"test {i}'s {key!r} is not a list of requirement IDs"
    for proto, summary in doc["summary"].items():
        if not isinstance(summary, dict):
            return f"summary of {proto!r} is not an object"
        for key, kind in _SUMMARY_FIELDS.items():
            if key in summary and not isinstance(summary[key], kind):
                return f"summary of {proto!r}: {key!r} is not {_kind_name(kind)}"
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in summary.get("counts", {}).values()):
            return f"summary of {proto!r}: 'counts' are not whole numbers"
        if not all(isinstance(r, dict) for r in summary.get("catalogue", {}).values()):
            return f"summary of {proto!r}: a 'catalogue' entry is not an object"
    return None


def _kind_name(kinds) -> str:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    names = {str: "text", int: "a number", float: "a number", list: "a list", dict: "an object"}
    return " or ".join(dict.fromkeys(names[k] for k in kinds if k in names)) or "absent"


def _as_campaign(path: str, doc: dict) -> Campaign:
    if not isinstance(doc.get("jobs"), list) or not isinstance(doc.get("findings"), list) or not all(
            isinstance(x, dict) for x in doc["jobs"] + doc["findings"]):
        raise ReportError(f"{path}: a fuzz campaign summary without its 'jobs' and 'findings'")
    return Campaign(_campaign_label(doc), path, doc)


#: A document's ``"kind"`` -> how it is read. Suite result files have no kind.
KINDS = {None: _as_run, "replay": _as_run, "client-check": _as_run, CAMPAIGN: _as_campaign,
         ANALYSIS: _as_analysis}
#: Kinds the kit writes that are not report inputs, and what to give the report instead.
_NOT_INPUTS = {"fuzz-analysis": "an analyze-fuzz summary, which the report does not read (give it the "
                                "campaign summaries themselves)"}


def load(path: str) -> Run | Campaign | Analysis:
    """One report input, whatever it is (see :data:`KINDS`)."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as exc:
        raise ReportError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ReportError(f"{path}: not a JSON result file ({exc})") from None
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: not a wirecheck result file (a JSON {type(doc).__name__}, not an object)")
    for key in ("started", "finished", "seconds"):      # every kind is ordered and timed by these
        if doc.get(key) is not None and not (_number(doc[key]) and 0 <= doc[key] < LATEST_TIME):
            raise ReportError(f"{path}: its {key!r} is not a time (seconds since 1970)")
    kind = doc.get("kind")
    reader = KINDS.get(kind) if isinstance(kind, (str, type(None))) else None
    if reader is None:
        if isinstance(kind, str) and kind in _NOT_INPUTS:
            raise ReportError(f"{path}: {_NOT_INPUTS[kind]}")
        raise ReportError(f"{path}: not a wirecheck result file, fuzz campaign summary or capture analysis "
                          f"summary (kind {kind!r})")
    return reader(path, doc)


def load_run(path: str) -> Run:
    run = load(path)
    if not isinstance(run, Run):
        raise ReportError(f"{path}: {_what(run)}, not a result file")
    return run


def _what(item: Campaign | Analysis) -> str:
    return "a fuzz campaign summary" if isinstance(item, Campaign) else "a capture analysis summary"


@dataclass
class Inputs:
    """What a report is made of: the runs (merged and labelled), the campaigns and the capture
    analyses, newest first."""
    runs: list[Run]
    campaigns: list[Campaign]
    analyses: list[Analysis] = field(default_factory=list)


def load_inputs(paths: list[str], unreadable: list[str] | None = None) -> Inputs:
    """Every result file, campaign summary and capture analysis in ``paths``: files, or
    directories holding them as ``*.json`` (other JSON files in a directory are skipped, a file
    named is not). A capture analysis's output directory is such a directory: its one JSON file
    is ``summary.json`` (the tables are Parquet, in subdirectories, not read). Runs of the same
    target merged, labels made unique. :class:`ReportError` when one is unreadable or there
    are none; with ``unreadable`` given, what cannot be read is said there (one line each) and
    the others are read, :class:`ReportError` only when none can be."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p)
                            if f.endswith(".json") and f != "index.json" and _looks_like_input(os.path.join(p, f)))
        else:
            files.append(p)
    if not files:
        raise ReportError(f"no result files or fuzz campaign summaries (nor capture analysis directories) "
                          f"in {', '.join(paths)}")
    loaded = []
    for f in files:
        try:
            loaded.append(load(f))
        except ReportError as exc:
            if unreadable is None:
                raise
            unreadable.append(str(exc))
    if not loaded:
        raise ReportError(unreadable[0])
    runs = [x for x in loaded if isinstance(x, Run)]
    campaigns = sorted((x for x in loaded if isinstance(x, Campaign)), key=lambda c: -c.started)
    analyses = sorted((x for x in loaded if isinstance(x, Analysis)), key=lambda a: -a.started)
    merge_same_target(runs)
    for items in (runs, campaigns, analyses):
        seen: dict[str, int] = {}
        for item in items:
            n = seen[item.label] = seen.get(item.label, 0) + 1
            if n > 1:
                item.label = f"{item.label} #{n}"
    return Inputs(runs, campaigns, analyses)


def load_runs(paths: list[str]) -> list[Run]:
    """The runs of :func:`load_inputs` (for callers that make reports of suite runs only:
    a campaign or analysis summary among ``paths`` is an error there, not silently dropped)."""
    inputs = load_inputs(paths)
    others = inputs.campaigns + inputs.analyses
    if others:
        raise ReportError(f"{others[0].path}: {_what(others[0])}, not a result file")
    return inputs.runs


def _looks_like_input(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.read(4096)
    except (OSError, ValueError):
        return False
    return ('"tests"' in head or '"summary"' in head or f'"{CAMPAIGN}"' in head
            or f'"{ANALYSIS}"' in head)


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
