"""Machine-readable reports: ``index.json`` (one entry per case and implementation, like
Autobahn's: verdict, requirement IDs, duration, transcript file) and the transcript files
beside it, and the writer that produces every report format of a set of runs and fuzz
campaigns.

``index.json`` also has ``"campaigns"`` (always present; empty without campaign inputs),
newest first: each campaign summary as ``wirecheck fuzz --all`` wrote it (machine, budget,
seconds, workers, execs, jobs with their findings, the deduplicated findings, job errors)
plus ``file`` (the summary read) and ``label``, but without the jobs' coverage
``timeline``: up to 200 points per in-process job, a plot's data and not an index's; the
campaign file named in ``file`` keeps them, and the HTML report draws them.

And ``"analyses"`` (always present; empty without capture analysis inputs), newest first when
the summaries carry a time, else in the order given: each capture analysis summary as
``wirecheck analyze`` wrote it (files, input bytes, master, partitions, seconds, row counts,
and its report block: violations by requirement with examples, the stats table) plus ``file``
(the summary.json read) and ``label``."""
from __future__ import annotations

import os
import time

from wirecheck.conformance.atomic_file import write_json, write_text
from wirecheck.conformance.report.html import render
from wirecheck.conformance.report.results import Analysis, Campaign, Inputs, ReportError, Run, load_inputs


def _file_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:180]


def index(runs: list[Run], transcripts_dir: str | None, campaigns: list[Campaign] = (),
          analyses: list[Analysis] = ()) -> dict:
    """The index document; writes each case's transcript under ``transcripts_dir`` (a path
    relative to the index's directory is recorded) when given."""
    out = {"generated": time.time(), "runs": {}, "campaigns": [c.summary() for c in campaigns],
           "analyses": [a.summary() for a in analyses]}
    for run in runs:
        cases = {}
        for t in run.tests:
            entry = {"protocol": t.get("protocol"), "verdict": t["verdict"],
                     "requirements": t.get("requirements", []),
                     "duration_ms": round(t.get("duration", 0) * 1000, 3), "message": t.get("message", ""),
                     "transcript": None}
            if transcripts_dir and t.get("transcript"):
                rel = os.path.join("transcripts", _file_name(run.label), _file_name(t["nodeid"]) + ".txt")
                path = os.path.join(transcripts_dir, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(t["transcript"] + "\n")
                entry["transcript"] = rel
            cases[t["nodeid"]] = entry
        out["runs"][run.label] = {
            "profile": run.doc.get("profile"), "strict": bool(run.doc.get("strict")),
            "result_files": run.doc.get("paths", [run.path]),
            "protocols": {p: {"conformant": run.conformant(p), "counts": run.summary[p].get("counts", {}),
                              "coverage": run.summary[p].get("coverage", {}),
                              "failing_requirements": run.summary[p].get("failing_requirements", []),
                              "stale_waivers": run.summary[p].get("stale_waivers", [])}
                          for p in run.protocols},
            "cases": cases}
    return out


def write(runs: list[Run], out: str, campaigns: list[Campaign] = (), analyses: list[Analysis] = ()) -> list[str]:
    """Write the report(s) ``out`` names: ``*.html`` (the HTML report), ``*.json`` (index.json
    and its transcripts beside it), or a directory (both, as ``index.html`` and ``index.json``).
    The paths written."""
    if out.endswith(".html"):
        targets = [out, None]
    elif out.endswith(".json"):
        targets = [None, out]
    else:
        targets = [os.path.join(out, "index.html"), os.path.join(out, "index.json")]
    written = []
    html_path, json_path = targets
    for path in filter(None, targets):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if html_path:
        write_text(html_path, render(runs, campaigns=campaigns, analyses=analyses))
        written.append(html_path)
    if json_path:
        doc = index(runs, os.path.dirname(os.path.abspath(json_path)), campaigns, analyses)
        write_json(json_path, doc)
        written.append(json_path)
    return written


def load_for_report(paths: list[str], unreadable: list[str]) -> Inputs:
    """:func:`~results.load_inputs` for ``wirecheck report``, each input then shown once on
    its own: the loader checks the types the report reads, and an input that passes them yet
    still cannot be shown (a field nested deeper than they go) is left out with the one line
    naming what failed, rather than ending the command with a traceback."""
    import traceback
    inputs = load_inputs(paths, unreadable)
    kept: dict[str, list] = {"runs": [], "campaigns": [], "analyses": []}
    for key in kept:
        for item in getattr(inputs, key):
            alone = {k: [item] if k == key else [] for k in kept}
            try:
                render(alone["runs"], campaigns=alone["campaigns"], analyses=alone["analyses"], docs="")
                index(alone["runs"], None, alone["campaigns"], alone["analyses"])
            except Exception as exc:           # the input's fault: the kit wrote none such
                where = traceback.extract_tb(exc.__traceback__)[-1]
                text = (str(exc).splitlines() or [""])[0]
                unreadable.append(f"{item.path}: cannot be shown ({type(exc).__name__}: {text} "
                                  f"in {os.path.basename(where.filename)}:{where.name})")
                continue
            kept[key].append(item)
    if not any(kept.values()):
        raise ReportError(unreadable[0])
    return Inputs(kept["runs"], kept["campaigns"], kept["analyses"])


def write_result(doc: dict, out: str, name: str) -> None:
    """One run's result document (``wirecheck replay``, ``serve --check-clients``) where
    ``--report`` says: FILE.json (the result file), FILE.html (and FILE.json beside it), or a
    directory (``name`` in it, plus index.html and index.json)."""
    if out.endswith(".json") or out.endswith(".html"):
        json_path = os.path.splitext(out)[0] + ".json"
    else:
        json_path = os.path.join(out, name)
    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    write_json(json_path, doc)
    if not out.endswith(".json"):
        write([Run(doc["label"], json_path, doc)], out)
