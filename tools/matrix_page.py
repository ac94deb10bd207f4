"""The documentation's "Real implementations" page (``matrix.md``), generated at build time by
tools/gen_docs.py from the newest ``matrix/recorded/*.json`` (a ``matrix.json`` that
``make matrix`` wrote, tools/matrix.py, copied there when it is recorded)."""
from __future__ import annotations

import json
from pathlib import Path

from wirecheck.conformance.report.matrix import PROBLEMS, findings
from wirecheck.conformance.report.text import anchor

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "matrix" / "recorded"
#: Verdicts that mean nothing was wrong (a server's requirement rows with only these are left out).
QUIET = {"PASS", "UNTESTED", "UNTESTABLE", "UNIMPLEMENTED", "WAIVED", "NOT-RUN", "SKIPPED", "INFORMATIONAL", ""}


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _req_link(proto: str, rid: str) -> str:
    return f"[{rid}](requirements/{proto}.md#{rid.lower()})" if rid and rid != "(none)" else rid


def _finding_id(impl: str, rid: str) -> str:
    return "f-" + anchor(impl, rid).lower()


def grid_lines(doc: dict) -> list[str]:
    """Implementations x requirement areas, per protocol (``areas`` of matrix.json): each cell
    the worst verdict of the area's requirements the implementation was checked on, coloured,
    a problem linked to its finding below; "broken/checked" beside it."""
    grids = doc.get("areas")
    if not grids:
        return ["*This recording has no grid (it predates it): `make matrix` records one.*", ""]
    lines = []
    for proto, g in sorted(grids.items()):
        names = g["implementations"]
        lines += [f"### {proto}", "", "| area | " + " | ".join(
            f"{_cell(n)} ({g['kinds'].get(n, '')})" for n in names) + " |", "|---|" + "---|" * len(names)]
        for area in g["areas"]:
            cells = []
            for n in names:
                c = g["cells"].get(area, {}).get(n)
                if not c or not c.get("verdict"):
                    cells.append("")
                    continue
                badge = f'<span class="v v-{c["verdict"]}">{c["verdict"]}</span>'
                if c["verdict"] in PROBLEMS:
                    badge = f'[{badge}](#{_finding_id(n, c["requirement"])} "{c["requirement"]}")'
                cells.append(f"{badge} {c['broken']}/{c['checked']}")
            lines.append(f"| {_cell(area)} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def matrix_page(recorded_dir: Path = RECORDED) -> str:
    lines = ["# Real implementations", "",
             "The kit run against real servers and real client libraries from the package registries: "
             "the server suite (`wirecheck check`) against the servers, `wirecheck check-client` with the "
             "drivers in `examples/check-client/` against the clients. `make matrix` runs it all again "
             "(tools/matrix.py): the report in `reports/matrix/index.html` has every case with its wire "
             "transcript, `reports/matrix/matrix.json` the cells and problems below. Each problem is a "
             "verdict of the kit with its evidence, as the report shows it.", ""]
    files = sorted(recorded_dir.glob("*.json"))
    if not files:
        return "\n".join(lines + ["*No matrix is recorded yet: run `make matrix`.*", ""])
    newest = files[-1]
    doc = json.loads(newest.read_text(encoding="utf-8"))
    lines += [f"*From `matrix/recorded/{newest.name}` (run on {doc.get('generated', newest.stem)}).*", "",
              "## What ran", "", "| implementation | version | kind | protocol | profile | exit | seconds |",
              "|---|---|---|---|---|---|---|"]
    for e in doc["implementations"]:
        status = e.get("exitstatus", "") if "error" not in e else "not run: " + e["error"][:120]
        lineage = f" ({_cell(e['lineage'])})" if e.get("lineage") else ""
        lines.append(f"| {_cell(e['name'])}{lineage} | {_cell(e.get('version', ''))} | {e.get('kind', '')} | "
                     f"{e.get('protocol', '')} | {_cell(e.get('profile') or 'default')} | {_cell(status)} | "
                     f"{e.get('seconds', '')} |")
    real = [e for e in doc["implementations"] if e.get("kind") in ("server", "client")]
    lines += ["", f"{len(real)} real implementations (the kit's own reference clients, controls, not counted)"
              + (f"; {sum(1 for e in real if e.get('lineage'))} of them forks or rewrites of another, as "
                 "marked" if any(e.get("lineage") for e in real) else "") + "."]
    if doc.get("left_out"):
        lines += ["", "Candidates from PyPI and npm that the matrix does not run, and why:", "",
                  "| candidate | where | why not |", "|---|---|---|"]
        lines += [f"| {_cell(x['name'])} | {_cell(x['where'])} | {_cell(x['why'])} |" for x in doc["left_out"]]
    lines += ["", "## Implementations by area", "",
              "Per protocol, a row per area of the requirement catalogue and a column per implementation: the "
              "worst verdict among the area's requirements it was checked on, then how many of them it broke "
              "of how many were checked. A problem links to its finding below; an empty cell: none checked.",
              ""]
    lines += grid_lines(doc)
    lines += ["## Clients by scenario", "",
              "Each cell: what happened to the client under the scenario, or the verdict of its wire rules "
              "when that is worse ([the client suite](start/clients.md#the-client-suite)).", ""]
    for proto, table in sorted(doc.get("clients", {}).items()):
        names = list(dict.fromkeys(n for row in table.values() for n in row))
        lines += [f"### {proto}", "", "| scenario | " + " | ".join(_cell(n) for n in names) + " |",
                  "|---|" + "---|" * len(names)]
        for scenario, row in table.items():
            cells = []
            for n in names:
                c = row.get(n)
                cells.append("" if c is None else c["verdict"] + (
                    " (" + ", ".join(c["requirements"]) + ")" if c.get("requirements") else ""))
            lines.append(f"| {scenario} | " + " | ".join(_cell(c) for c in cells) + " |")
        lines.append("")
    lines += ["## Servers by requirement", "",
              "Requirements where a server's verdict is other than PASS, UNTESTED, UNIMPLEMENTED or WAIVED "
              "(the full table is in the report).", ""]
    for proto, table in sorted(doc.get("servers", {}).items()):
        names = list(dict.fromkeys(n for row in table.values() for n in row))
        counts: dict[str, dict[str, int]] = {n: {} for n in names}
        for row in table.values():
            for n, v in row.items():
                counts[n][v] = counts[n].get(v, 0) + 1
        lines += [f"### {proto}", ""]
        for n in names:
            lines.append(f"- {_cell(n)}: " + ", ".join(f"{v} {k}" for k, v in sorted(counts[n].items())))
        rows = [(rid, row) for rid, row in sorted(table.items()) if any(v not in QUIET for v in row.values())]
        lines.append("")
        if rows:
            lines += ["| requirement | " + " | ".join(_cell(n) for n in names) + " |", "|---|" + "---|" * len(names)]
            lines += [f"| {_req_link(proto, rid)} | " + " | ".join(row.get(n, "") for n in names) + " |"
                      for rid, row in rows]
            lines.append("")
    problems = doc.get("problems", [])
    found = findings(problems)
    lines += ["## Problems found", "",
              f"{len(found)} finding(s) ({len(problems)} requirement(s) broken), by implementation: the verdict, "
              "the requirements with their sentences, and (unfolded) the evidence, the first case's own message. "
              "Requirements whose failures read the same (numbers, ids and quoted values aside) are one "
              "finding: one bug that breaks the wire under many tests is one line.", ""]
    by_impl: dict[str, list[dict]] = {}
    for f in found:
        by_impl.setdefault(f["implementation"], []).append(f)
    for impl, group in by_impl.items():
        lines += [f"### {impl}", ""]
        for f in group:
            reqs = [f"{_req_link(f['protocol'], r['requirement'])} [{r.get('level', '')}] {_cell(r.get('summary', ''))}"
                    + (f" \"{_cell(r['sentence'])}\"" if r.get("sentence") else "") for r in f["requirements"]]
            lines += ["".join(f'<a id="{_finding_id(impl, r["requirement"])}"></a>' for r in f["requirements"]), ""]
            head = (f"**{_cell(f['implementation'])}**: **{f['verdict']}** in {len(f['cases'])} case(s), "
                    f"first `{_cell(f['cases'][0])}`")
            if len(reqs) == 1:
                lines += [f"{head}: {reqs[0]}", ""]
            else:
                lines += [f"{head}; {len(reqs)} requirements:", "", *(f"- {r}" for r in reqs), ""]
            lines += ['??? quote "evidence"', "    ```text",
                      *("    " + line for line in f.get("evidence", "").splitlines()), "    ```", ""]
    return "\n".join(lines)
