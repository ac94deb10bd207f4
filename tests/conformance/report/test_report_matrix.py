"""The matrix of implementations (conformance/report/matrix.py, tools/matrix_page.py) from result
files: a client's cell is the worse of its outcome and its wire rules, a problem line carries
the requirement's sentence and the case's evidence, and the report and the docs page show them."""
from __future__ import annotations

import json

from wirecheck.conformance.report.html import render
from wirecheck.conformance.report.matrix import cell_verdict, client_cells, matrix_document
from wirecheck.conformance.report.results import Run

CATALOGUE = {"RMQS-CLOSE-003": {"level": "MUST", "summary": "the client answers the server's Close",
                                "quote": "Close Client & Server 22 Yes", "source": "document"},
             "RMQS-CLIENT-001": {"level": "SHOULD", "summary": "completes under a transparent scenario"}}


def client_run(label: str, cases: list[tuple[str, str, list[str], str]]) -> Run:
    tests = [{"protocol": "rabbitmq-stream", "nodeid": nodeid, "verdict": verdict, "requirements": ids,
              "message": message} for nodeid, verdict, ids, message in cases]
    doc = {"kind": "client-check", "label": label, "tests": tests,
           "summary": {"rabbitmq-stream": {"catalogue": CATALOGUE, "counts": {}}}}
    return Run(label, f"{label}.json", doc)


def test_cells_problems_report_and_page(tmp_path):
    good = client_run("good 1.0", [
        ("check-client::none::outcome", "PASS", ["RMQS-CLIENT-001"], "the workload completed"),
        ("check-client::server-close::outcome", "PASS", ["RMQS-CLIENT-001"], "surfaced"),
        ("check-client::server-close::#1 a->b", "PASS", ["RMQS-CLOSE-003"], "")])
    bad = client_run("bad 2.0", [
        ("check-client::none::outcome", "PASS", ["RMQS-CLIENT-001"], "the workload completed"),
        ("check-client::server-close::outcome", "PASS", ["RMQS-CLIENT-001"], "surfaced"),
        ("check-client::server-close::#2 a->b::RMQS-CLOSE-003", "FAIL", ["RMQS-CLOSE-003"],
         "#17: the client did not answer the server's Close within 2.0 s\nthe scenario: Close code 1"),
        ("check-client::consumer-update::outcome", "NOT-RUN", [], "never acted")])
    cells = client_cells(bad)
    assert list(cells) == ["none", "server-close", "consumer-update"]          # in the order they ran
    assert cell_verdict(cells["server-close"]) == "FAIL"                      # the wire's, worse than PASS
    assert cells["server-close"]["requirements"] == ["RMQS-CLOSE-003"]
    assert cell_verdict(cells["consumer-update"]) == "NOT-RUN"
    doc = matrix_document([good, bad])
    assert doc["clients"]["rabbitmq-stream"]["server-close"]["good 1.0"]["verdict"] == "PASS"
    [problem] = doc["problems"]
    assert (problem["implementation"], problem["requirement"], problem["level"], problem["verdict"]) == \
        ("bad 2.0", "RMQS-CLOSE-003", "MUST", "FAIL")
    assert problem["sentence"] == "Close Client & Server 22 Yes" and "did not answer" in problem["evidence"]
    html = render([good, bad], docs="")
    assert "Clients &times; scenarios" in html and "bad 2.0" in html
    # the documentation's page, from the recorded matrix
    from tools.matrix_page import matrix_page
    assert "No matrix is recorded yet" in matrix_page(tmp_path)
    doc["implementations"] = [{"name": "good", "version": "1.0", "kind": "client", "protocol": "rabbitmq-stream",
                               "exitstatus": 0, "seconds": 1.0},
                              {"name": "bad", "version": "2.0", "kind": "client", "protocol": "rabbitmq-stream",
                               "exitstatus": 1, "seconds": 1.0, "lineage": "a fork of good 0.9"}]
    doc["left_out"] = [{"name": "wrapper", "where": "npm 1.0", "why": "wraps good"}]
    (tmp_path / "2026-11-28.json").write_text(json.dumps(doc))
    page = matrix_page(tmp_path)
    assert "| bad (a fork of good 0.9) | 2.0 | client |" in page
    assert "2 real implementations (the kit's own reference clients, controls, not counted); 1 of them" in page
    assert "| wrapper | npm 1.0 | wraps good |" in page
    assert "| server-close | PASS | FAIL (RMQS-CLOSE-003) |" in page
    assert "**bad 2.0**: **FAIL** in 1 case(s), first `check-client::server-close::#2 a->b::RMQS-CLOSE-003`: " \
        "[RMQS-CLOSE-003](requirements/rabbitmq-stream.md#rmqs-close-003) [MUST]" in page and "### bad 2.0" in page


def test_one_cause_under_several_requirements_is_one_finding(tmp_path):
    """A server bug that breaks every requirement its tests check (aiosignalr's MessagePack
    headers: 45 of them) is one finding with its requirements; another cause is another."""
    catalogue = {"R-1": {"level": "MUST", "summary": "one", "quote": "first sentence"},
                 "R-2": {"level": "SHOULD", "summary": "two", "quote": "second sentence"},
                 "R-3": {"level": "MUST", "summary": "three", "quote": "third sentence"}}
    tests = [{"protocol": "p", "nodeid": "a.py::t[1]", "verdict": "FAIL", "requirements": ["R-1"],
              "message": "TargetDecodeError: headers: expected a map, got int 128 at byte 7"},
             {"protocol": "p", "nodeid": "a.py::t[2]", "verdict": "TIMEOUT", "requirements": ["R-2", "R-1"],
              "message": "TargetDecodeError: headers: expected a map, got int 128 at byte 19"},
             {"protocol": "p", "nodeid": "b.py::u", "verdict": "FAIL", "requirements": ["R-3"],
              "message": "AssertionError: no Close before closing"}]
    doc = {"label": "srv 1", "tests": tests, "summary": {"p": {"catalogue": catalogue, "counts": {}}}}
    out = matrix_document([Run("srv 1", "srv.json", doc)])
    assert len(out["problems"]) == 3                                           # a line per requirement
    by_cause = {f["cause"]: f for f in out["findings"]}
    assert len(by_cause) == 2, by_cause
    headers = by_cause["headers: expected a map, got int N"]
    assert [r["requirement"] for r in headers["requirements"]] == ["R-1", "R-2"]     # worst verdict first
    assert headers["verdict"] == "FAIL" and headers["cases"] == ["a.py::t[1]", "a.py::t[2]"]
    assert [r["requirement"] for r in by_cause["no Close before closing"]["requirements"]] == ["R-3"]
    from tools.matrix_page import matrix_page
    out["implementations"] = [{"name": "srv", "version": "1", "kind": "server", "protocol": "p"}]
    (tmp_path / "2026-11-28.json").write_text(json.dumps(out))
    page = matrix_page(tmp_path)
    assert "2 finding(s) (3 requirement(s) broken)" in page
    assert "**srv 1**: **FAIL** in 2 case(s), first `a.py::t[1]`; 2 requirements:" in page
    assert "- [R-1](requirements/p.md#r-1) [MUST] one \"first sentence\"" in page


def test_implementations_by_area_grid(tmp_path):
    """The grid a person scans: per protocol, a row per requirement area (the catalogue's
    section), a column per implementation, each cell the worst verdict of the area's checked
    requirements with broken/checked, a problem linked to its finding (page) or its evidence
    (report); an area where an implementation was checked on nothing is empty."""
    catalogue = {"R-1": {"level": "MUST", "section": "Handshake", "summary": "one", "quote": "first"},
                 "R-2": {"level": "MUST", "section": "Handshake", "summary": "two", "quote": "second"},
                 "R-3": {"level": "SHOULD", "section": "Streams", "summary": "three", "quote": "third"},
                 "R-4": {"level": "MUST", "section": "Close", "summary": "four", "quote": "fourth"}}

    def run(label, cases):
        tests = [{"protocol": "p", "nodeid": n, "verdict": v, "requirements": ids, "message": m}
                 for n, v, ids, m in cases]
        return Run(label, f"{label}.json", {"label": label, "tests": tests,
                                             "summary": {"p": {"catalogue": catalogue, "counts": {}}}})
    a = run("a 1", [("h.py::t1", "PASS", ["R-1"], ""), ("h.py::t2", "FAIL", ["R-2"], "AssertionError: no answer"),
                    ("s.py::t", "NON-STRICT", ["R-3"], "AssertionError: slow")])
    b = run("b 2", [("h.py::t1", "PASS", ["R-1"], ""), ("h.py::t2", "PASS", ["R-2"], "")])
    grid = matrix_document([a, b])["areas"]["p"]
    assert grid["areas"] == ["Handshake", "Streams", "Close"] and grid["implementations"] == ["a 1", "b 2"]
    assert grid["cells"]["Handshake"]["a 1"] == {"verdict": "FAIL", "requirement": "R-2", "checked": 2, "broken": 1}
    assert grid["cells"]["Handshake"]["b 2"] == {"verdict": "PASS", "requirement": "R-1", "checked": 2, "broken": 0}
    assert grid["cells"]["Streams"]["a 1"]["verdict"] == "NON-STRICT"
    assert grid["cells"]["Close"]["a 1"] == {"verdict": "", "requirement": "", "checked": 0, "broken": 0}
    html = render([a, b], docs="")
    assert "Implementations &times; areas" in html
    assert "href='#p_a_1-R_2'" in html and "id='p_a_1-R_2'" in html         # the cell's link has a target
    from tools.matrix_page import matrix_page
    doc = matrix_document([a, b])
    doc["implementations"] = [{"name": "a", "version": "1", "kind": "server", "protocol": "p"},
                              {"name": "b", "version": "2", "kind": "server", "protocol": "p"}]
    (tmp_path / "2026-12-07.json").write_text(json.dumps(doc))
    page = matrix_page(tmp_path)
    assert ('| Handshake | [<span class="v v-FAIL">FAIL</span>](#f-a_1-r_2 "R-2") 1/2 | '
            '<span class="v v-PASS">PASS</span> 0/2 |') in page
    assert '| Close |  |  |' in page
    assert '<a id="f-a_1-r_2"></a>' in page                                  # the link's target
