"""A requirement's verdict is at most what its level allows: a MAY is never a FAIL, in a test
of it alone (INFORMATIONAL, ``--strict`` or not) or beside a MUST (the MUST fails, the MAY reads
INFORMATIONAL), in the terminal's "not met", the result file and every catalogue."""
from __future__ import annotations

import pytest

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.requirements import catalogue, catalogue_data
from wirecheck.conformance.report.results import requirement_verdict
from wirecheck.reference_impl.core import registry

from tests.helpers import run_scratch_suite

PROTOCOLS = ("blipmq", "vibemq", "micromessage2", "rabbitmq-stream", "signalr")
MAYS = [(p, rid) for p in PROTOCOLS for rid, req in catalogue(registry.get(p).requirements).items()
        if req.level == "MAY"]


def test_every_catalogue_has_its_mays_listed():
    assert {p for p, _ in MAYS} >= {"blipmq", "signalr"}, MAYS      # the scan sees them


@pytest.mark.parametrize("proto, rid", MAYS, ids=[r for _, r in MAYS])
def test_no_may_requirement_reads_as_a_failure(proto, rid):
    req = catalogue_data(catalogue(registry.get(proto).requirements))[rid]
    for bad in (verdicts.FAIL, verdicts.TIMEOUT, verdicts.NON_STRICT):
        got = requirement_verdict([{"verdict": bad, "requirements": [rid]}], req, rid)
        assert got == verdicts.INFORMATIONAL, (rid, bad, got)
        beside_a_pass = requirement_verdict([{"verdict": bad, "requirements": [rid]},
                                             {"verdict": verdicts.PASS, "requirements": [rid]}], req, rid)
        assert beside_a_pass == verdicts.PASS, (rid, bad, beside_a_pass)
    # a crash charged to its test, and the kit's own error, stay what they are
    assert requirement_verdict([{"verdict": verdicts.CRASH, "requirements": [rid]}], req, rid) == verdicts.CRASH


@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
def test_a_failing_test_of_a_may_is_informational_and_beside_a_must_the_must_fails(tmp_path, strict):
    body = ("import pytest\n\n"
            "@pytest.mark.requirement('BLIP-SUB-006')\ndef test_may_alone():\n"
            "    assert False, 'the trailing bytes were refused'\n\n"
            "@pytest.mark.requirement('BLIP-AUTH-007', 'BLIP-PING-001')\ndef test_may_and_must():\n"
            "    assert False, 'no PONG'\n")
    result, doc = run_scratch_suite(tmp_path, body, strict=strict)
    by_test = {t["nodeid"].split("::")[1]: t for t in doc["tests"]}
    assert by_test["test_may_alone"]["verdict"] == verdicts.INFORMATIONAL
    assert "the target does not do what this MAY allows" in by_test["test_may_alone"]["message"]
    assert by_test["test_may_and_must"]["verdict"] == verdicts.FAIL
    s = doc["summary"]["blipmq"]
    assert s["failing_requirements"] == ["BLIP-PING-001"], s["failing_requirements"]
    assert "BLIP-AUTH-007" not in result.stdout.split("not met:")[1].splitlines()[0]
    assert result.returncode == 1
