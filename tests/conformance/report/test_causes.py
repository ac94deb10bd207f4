"""One cause, one finding (conformance/report/causes.py): failures whose messages differ only in
numbers, offsets and values are grouped in the summary, the JSON and the HTML report; the
per-test verdicts stay as they are."""
from wirecheck.conformance.report.causes import cause, group

from tests.helpers import run_scratch_suite


def test_what_varies_between_tests_is_taken_out():
    a = cause("wirecheck.conformance.target.connection.TargetMalformed: target sent a malformed frame: "
              "messagepack at byte 17: Headers is 128, not a map")
    b = cause("TargetMalformed: target sent a malformed frame: messagepack at byte 230: Headers is 128, "
              "not a map\nmore lines")
    assert a == b == "target sent a malformed frame: messagepack: Headers is N, not a map"
    assert cause("NON-STRICT: expected Completion(invocationId='m17'), got 'x'") == \
        cause("expected Completion(invocationId='m3'), got 'yy'")
    assert cause("") == ""
    # what names the defect stays: a field's name, the requirement broken
    assert cause("SIGR-INV-007: Completion has no 'invocationId' at byte 9") == \
        "SIGR-INV-007: Completion has no 'invocationId'"
    assert cause("'InvocationId' must be a string, not 'x'") == "'InvocationId' must be a string, not '…'"
    assert cause("Completion has no 'invocationId'") != cause("Completion has no 'error'")
    # a different field or category is a different cause
    assert cause("target sent a malformed frame: messagepack at byte 3: Target is 7, not a string") != a


def test_groups_of_two_or_more_failures_the_largest_first():
    tests = [{"nodeid": f"t{i}", "verdict": "FAIL", "requirements": [f"R-{i % 3}"],
              "message": f"target sent a malformed frame: json at byte {i}: bad header"} for i in range(5)]
    tests += [{"nodeid": "u1", "verdict": "NON-STRICT", "requirements": ["R-9"], "message": "NON-STRICT: late by 3 s"},
              {"nodeid": "u2", "verdict": "TIMEOUT", "requirements": ["R-9"], "message": "late by 4 s"},
              {"nodeid": "lone", "verdict": "FAIL", "requirements": ["R-8"], "message": "something else"},
              {"nodeid": "ok", "verdict": "PASS", "requirements": ["R-7"], "message": "late by 5 s"}]
    groups = group(tests)
    assert [g["tests"] for g in groups] == [5, 2]
    first = groups[0]
    assert first["requirements"] == ["R-0", "R-1", "R-2"] and first["example"] == "t0"
    assert first["verdicts"] == {"FAIL": 5}
    assert groups[1]["verdicts"] == {"NON-STRICT": 1, "TIMEOUT": 1} and groups[1]["requirements"] == ["R-9"]


def test_one_breach_of_one_field_is_one_cause_in_every_encoding():
    """A failure that names the requirement it broke and the field a decoder found wrong is
    grouped by those, however each encoding words it; another field stays another cause."""
    json_, msgpack = ("target sent a malformed frame: MISSING_FIELD at byte 3: Completion has no 'invocationId'",
                      "target sent a malformed frame: BAD_VALUE at byte 9: 'InvocationId' must be a string, not null")
    tests = [{"nodeid": f"j{i}", "verdict": "FAIL", "requirements": ["R-1"], "broke": ["SIGR-INV-007"],
              "message": json_} for i in range(2)]
    tests += [{"nodeid": f"m{i}", "verdict": "FAIL", "requirements": ["R-2"], "broke": ["SIGR-INV-007"],
               "message": msgpack} for i in range(2)]
    tests += [{"nodeid": f"x{i}", "verdict": "FAIL", "requirements": ["R-3"], "broke": ["SIGR-INV-007"],
               "message": "target sent a malformed frame: MISSING_FIELD at byte 3: Completion has no 'error'"}
              for i in range(2)]
    groups = group(tests)
    assert [(g["tests"], g["example"]) for g in groups] == [(4, "j0"), (2, "x0")], groups
    assert "invocationId" in groups[0]["cause"] and groups[0]["requirements"] == ["SIGR-INV-007"]
    # without a named breach, the wording decides (nothing known to say they are one)
    for t in tests:
        t.pop("broke")
    assert [g["tests"] for g in group(tests)] == [2, 2, 2]


def test_the_summary_the_json_and_the_report_carry_the_groups(tmp_path):
    body = "import pytest\nfrom wirecheck.conformance.target.connection import TargetMalformed\n\n"
    for i, rid in enumerate(("BLIP-PUB-002", "BLIP-PUB-003", "BLIP-AUTH-002", "BLIP-PING-001")):
        body += (f"@pytest.mark.requirement('{rid}')\ndef test_{i}():\n"
                 f"    raise TargetMalformed('target sent a malformed frame: payload at byte {i * 7}: "
                 f"topic length {i + 3} past the frame')\n\n")
    body += "@pytest.mark.requirement('BLIP-PING-001')\ndef test_other():\n    assert False, 'another thing'\n"
    result, doc = run_scratch_suite(tmp_path, body)
    assert [t["verdict"] for t in doc["tests"]].count("FAIL") == 5       # each test keeps its verdict
    (g,) = doc["summary"]["blipmq"]["causes"]
    assert g["tests"] == 4 and len(g["requirements"]) == 4
    assert "one cause, 4 tests, 4 requirements: target sent a malformed frame: payload: topic length N" \
        in result.stdout, result.stdout[-2000:]
    from wirecheck.conformance.report.html import render
    from wirecheck.conformance.report.results import load_run
    html = render([load_run(str(tmp_path / "scratch.json"))])
    assert "<h3>Causes</h3>" in html and "topic length N past the frame" in html
