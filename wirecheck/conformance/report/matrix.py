"""Implementations side by side, from their result files: servers by requirement, clients by
scenario, and one line per problem found with the requirement's sentence and the evidence.

The HTML report draws the clients' table when it has ``wirecheck check-client`` runs (its
servers' table is report_html's requirements matrix); ``make matrix`` (tools/matrix.py) writes
:func:`matrix_document` as ``matrix.json`` and the documentation renders the recorded one.
A cell is what the kit said: a problem line is a verdict, not a diagnosis, and its evidence is
the case's own message (what was expected, what happened, the driver's last words).
"""
from __future__ import annotations

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.report.causes import cause as _cause
from wirecheck.conformance.report.text import anchor as _anchor
from wirecheck.conformance.report.text import escape as _e
from wirecheck.conformance.report.results import Run

#: Verdicts that are a problem of the implementation (HARNESS-ERROR is the kit's own).
PROBLEMS = (verdicts.FAIL, verdicts.CRASH, verdicts.HANG, verdicts.TIMEOUT, verdicts.NON_STRICT)
#: Lines of a case's message kept as evidence.
EVIDENCE_LINES = 14
CLIENT_KIND = "client-check"
OUTCOME = "::outcome"


def is_client_run(run: Run) -> bool:
    return run.doc.get("kind") == CLIENT_KIND


def scenario_of(nodeid: str) -> str:
    """``check-client::SCENARIO::...`` -> SCENARIO ("" for another case)."""
    parts = nodeid.split("::")
    return parts[1] if len(parts) > 2 and parts[0] == "check-client" else ""


def client_cells(run: Run) -> dict[str, dict]:
    """Scenario -> its cell: the outcome case's verdict, the worst verdict of the wire cases,
    the requirement IDs of both, and the outcome's first line."""
    cells: dict[str, dict] = {}
    for t in run.tests:
        scenario = scenario_of(t["nodeid"])
        if not scenario:
            continue
        cell = cells.setdefault(scenario, {"outcome": "", "wire": verdicts.PASS, "requirements": [],
                                           "message": "", "wire_failures": []})
        if t["nodeid"].endswith(OUTCOME):
            cell["outcome"] = t["verdict"]
            cell["message"] = (t.get("message") or "").split("\n", 1)[0]
        elif verdicts.rank(t["verdict"]) > verdicts.rank(cell["wire"]):
            cell["wire"] = t["verdict"]
        if t["verdict"] in PROBLEMS or t["verdict"] == verdicts.HARNESS_ERROR:
            cell["requirements"] += [r for r in t.get("requirements", []) if r not in cell["requirements"]]
            if not t["nodeid"].endswith(OUTCOME):
                cell["wire_failures"].append(t["nodeid"])
    return cells


def cell_verdict(cell: dict) -> str:
    """The worse of the outcome's and the wire's verdicts (a client that completed its workload
    but broke a wire rule is not a pass)."""
    outcome = cell["outcome"] or verdicts.NOT_RUN
    return cell["wire"] if verdicts.rank(cell["wire"]) > verdicts.rank(outcome) else outcome


def problems(run: Run) -> list[dict]:
    """One entry per (protocol, requirement) the run broke: its level and sentence, the cases
    and, as evidence, the first of them's message."""
    out: dict[tuple, dict] = {}
    for t in sorted(run.tests, key=lambda t: (-verdicts.rank(t["verdict"]), t["nodeid"])):
        if t["verdict"] not in PROBLEMS:
            continue
        proto = t.get("protocol", "")
        cat = run.catalogue(proto)
        for rid in t.get("broke") or t.get("requirements") or ["(none)"]:
            req = cat.get(rid, {})
            entry = out.get((proto, rid))
            if entry is None:
                lines = (t.get("message") or "").strip().splitlines()
                out[(proto, rid)] = entry = {
                    "implementation": run.label, "protocol": proto, "requirement": rid,
                    "level": req.get("level", ""), "summary": req.get("summary", ""),
                    "sentence": req.get("quote", ""), "source": req.get("source", ""),
                    "verdict": t["verdict"], "cases": [],
                    "evidence": "\n".join(lines[:EVIDENCE_LINES])
                    + ("\n..." if len(lines) > EVIDENCE_LINES else "")}
            entry["cases"].append(t["nodeid"])
    return list(out.values())


def findings(problems_: list[dict]) -> list[dict]:
    """Problem lines of one implementation and protocol whose evidence reads the same once what
    varies between cases is taken out (:func:`wirecheck.conformance.report.causes.cause`), as one
    finding: one encoding bug fails every requirement its tests check, and is one thing for the
    implementer to fix. In the order the lines come; each with its requirements (ID, level,
    summary, sentence), the worst verdict, the cases, and the first line's evidence."""
    out: dict[tuple, dict] = {}
    for p in problems_:
        reason = _cause(p.get("evidence", "")) or p["requirement"]
        key = (p["implementation"], p["protocol"], reason)
        found = out.get(key)
        if found is None:
            out[key] = found = {"implementation": p["implementation"], "protocol": p["protocol"],
                                "cause": reason, "verdict": p["verdict"], "evidence": p.get("evidence", ""),
                                "requirements": [], "cases": []}
        if verdicts.rank(p["verdict"]) > verdicts.rank(found["verdict"]):
            found["verdict"] = p["verdict"]
        found["requirements"].append({k: p.get(k, "") for k in ("requirement", "level", "summary", "sentence")})
        found["cases"] += [c for c in p.get("cases", []) if c not in found["cases"]]
    return list(out.values())


#: Requirement verdicts that say nothing was checked: an area with only these is an empty cell.
UNCHECKED = ("UNTESTED", "UNTESTABLE", verdicts.NOT_RUN, verdicts.SKIPPED, verdicts.UNIMPLEMENTED, verdicts.WAIVED)


def area_cells(run: Run, proto: str) -> dict[str, dict]:
    """Requirement area (the catalogue's section) -> one implementation's cell: the worst
    verdict of the area's requirements it was checked on ("" when none was), the requirement
    that gave it (the first by ID among equals), how many were checked and how many broken."""
    cat = run.catalogue(proto)
    cells: dict[str, dict] = {}
    for rid, (verdict, _tests) in sorted(run.requirement_verdicts(proto).items()):
        area = cat.get(rid, {}).get("section") or "other"
        cell = cells.setdefault(area, {"verdict": "", "requirement": "", "checked": 0, "broken": 0})
        if verdict in UNCHECKED:
            continue
        cell["checked"] += 1
        cell["broken"] += verdict in PROBLEMS or verdict == verdicts.HARNESS_ERROR
        if not cell["verdict"] or verdicts.rank(verdict) > verdicts.rank(cell["verdict"]):
            cell["verdict"], cell["requirement"] = verdict, rid
    return cells


def area_grid(runs: list[Run]) -> dict[str, dict]:
    """Per protocol, implementations x requirement areas: ``areas`` in the catalogue's order,
    ``implementations`` (servers, then clients, in the order they ran) and ``cells``
    (area -> implementation -> :func:`area_cells`'s cell; absent where the implementation has
    no requirement of the area)."""
    grid: dict[str, dict] = {}
    for proto in sorted({p for r in runs for p in r.protocols}):
        of = sorted((r for r in runs if proto in r.protocols), key=is_client_run)
        cat = next((r.catalogue(proto) for r in of if r.catalogue(proto)), {})
        cells: dict[str, dict] = {}
        for run in of:
            for area, cell in area_cells(run, proto).items():
                cells.setdefault(area, {})[run.label] = cell
        areas = list(dict.fromkeys([c.get("section") or "other" for c in cat.values()] + list(cells)))
        grid[proto] = {"areas": [a for a in areas if a in cells], "implementations": [r.label for r in of],
                       "kinds": {r.label: "client" if is_client_run(r) else "server" for r in of}, "cells": cells}
    return grid


def matrix_document(runs: list[Run], implementations: list[dict] | None = None) -> dict:
    """The matrix as data: per protocol, requirement -> implementation -> verdict (servers) and
    scenario -> client -> cell (clients), the problems found (a line per requirement) and the
    same as findings (a line per cause, :func:`findings`), and ``implementations`` (what ran:
    name, version, kind, command; given by the caller)."""
    servers: dict[str, dict] = {}
    clients: dict[str, dict] = {}
    for run in runs:
        for proto in run.protocols:
            if is_client_run(run):
                table = clients.setdefault(proto, {})
                for scenario, cell in client_cells(run).items():
                    table.setdefault(scenario, {})[run.label] = {**cell, "verdict": cell_verdict(cell)}
            else:
                table = servers.setdefault(proto, {})
                for rid, (verdict, tests) in run.requirement_verdicts(proto).items():
                    table.setdefault(rid, {})[run.label] = verdict
    return {"implementations": implementations or [{"name": r.label} for r in runs],
            "servers": servers, "clients": clients, "areas": area_grid(runs),
            "problems": (found := [p for r in runs for p in problems(r)]), "findings": findings(found)}


def area_grid_html(runs: list[Run], badge) -> str:
    """The report's "Implementations x areas" section, for a report of several runs: per
    protocol a row per requirement area, a column per implementation, each cell the area's
    worst verdict linked to that requirement in the implementation's section."""
    if len(runs) < 2:
        return ""
    parts = ["<section id='area-grid'><h2>Implementations &times; areas</h2>"
             "<p>Each cell: the worst verdict among the area's requirements the implementation was "
             "checked on (the number broken of the number checked), linked to its evidence; "
             "empty where none was checked.</p>"]
    for proto, g in area_grid(runs).items():
        head = "".join(f"<th>{_e(label)}<br><small>{g['kinds'][label]}</small></th>" for label in g["implementations"])
        rows = []
        for area in g["areas"]:
            tds = []
            for label in g["implementations"]:
                cell = g["cells"][area].get(label)
                if not cell or not cell["verdict"]:
                    tds.append("<td></td>")
                    continue
                target = _anchor(_anchor(proto, label), cell["requirement"])
                tds.append(f"<td title='{_e(cell['requirement'])}'><a href='#{target}'>{badge(cell['verdict'])}</a>"
                           f" <small>{cell['broken']}/{cell['checked']}</small></td>")
            failed = int(any(c["verdict"] in PROBLEMS for c in g["cells"][area].values()))
            rows.append(f"<tr class='req' data-proto='{_e(proto)}' data-level='' data-failed='{failed}'>"
                        f"<td>{_e(area)}</td>{''.join(tds)}</tr>")
        parts.append(f"<h3>{_e(proto)}</h3><table><tr><th>area</th>{head}</tr>{''.join(rows)}</table>")
    parts.append("</section>")
    return "".join(parts)


def client_matrix_html(runs: list[Run], badge) -> str:
    """The report's "Clients x scenarios" section: per protocol a row per scenario, a column
    per client run, each cell the scenario's verdict (outcome and wire) linked to the case in
    that run's section; "" without client runs."""
    client = [r for r in runs if is_client_run(r)]
    if not client:
        return ""
    parts = ["<section id='client-matrix'><h2>Clients &times; scenarios</h2>"
             "<p>Each cell: what happened to the client under the scenario (its outcome case) "
             "and, when worse, the verdict of its wire rules.</p>"]
    for proto in sorted({p for r in client for p in r.protocols}):
        runs_of = [r for r in client if proto in r.protocols]
        cells = [client_cells(r) for r in runs_of]
        scenarios = list(dict.fromkeys(s for c in cells for s in c))     # in the order they ran
        head = "".join(f"<th>{_e(r.label)}</th>" for r in runs_of)
        rows = []
        for scenario in scenarios:
            tds = []
            for run, table in zip(runs_of, cells):
                cell = table.get(scenario)
                if cell is None:
                    tds.append("<td></td>")
                    continue
                verdict = cell_verdict(cell)
                rid = next(iter(cell["requirements"]), "")
                target = _anchor(_anchor(proto, run.label), rid) if rid else _anchor(proto, run.label)
                title = cell["message"] + ("; wire: " + ", ".join(cell["wire_failures"]) if cell["wire_failures"] else "")
                tds.append(f"<td title='{_e(title)}'><a href='#{target}'>{badge(verdict)}</a></td>")
            failed = int(any(cell_verdict(t[scenario]) in PROBLEMS for t in cells if scenario in t))
            rows.append(f"<tr class='req' data-proto='{_e(proto)}' data-level='' data-failed='{failed}'>"
                        f"<td>{_e(scenario)}</td>{''.join(tds)}</tr>")
        parts.append(f"<h3>{_e(proto)}</h3><table><tr><th>scenario</th>{head}</tr>{''.join(rows)}</table>")
    parts.append("</section>")
    return "".join(parts)
