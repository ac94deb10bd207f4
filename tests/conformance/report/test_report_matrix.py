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
                               "exitstatus": 1, "seconds": 1.0}]
    (tmp_path / "2026-11-28.json").write_text(json.dumps(doc))
    page = matrix_page(tmp_path)
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
