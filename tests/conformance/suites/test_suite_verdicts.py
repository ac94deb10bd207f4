"""The black-box suite as a CI gate: faulty targets fail with the requirement ID named,
SHOULD deviations are NON-STRICT unless --strict, waivers, transcripts, a silent target."""
import json
import os
import subprocess
import sys
import time

import pytest

from wirecheck.conformance.requirements import catalogue
from wirecheck.conformance.report.verdicts import needs_target_command
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.server import ThreadedServer

from tests.helpers import run_scratch_suite
from tests.support.faulty_targets import (BlackHole, NoCloseOnUnknownType, RenamedDuplicateHello, WrongNackCode,
                             WrongPongId, broker_with)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def check(port, *extra, report=None, timeout=60):
    cmd = [sys.executable, "-m", "wirecheck", "check", "--protocol", "blipmq",
           "--target", f"127.0.0.1:{port}"]
    if report:
        cmd += ["--report", str(report)]
    cmd += list(extra)
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("session_class,selection,requirement", [
    (WrongNackCode, "test_publish_empty_topic", "BLIP-PUB-002"),
    (WrongPongId, "test_ping_after_auth_gets_pong", "BLIP-PING-001"),
    (NoCloseOnUnknownType, "test_unknown_frame_type_closes_connection and 0x0a", "BLIP-FRAME-006"),
])
def test_one_broken_rule_fails_the_suite_and_names_the_requirement(tmp_path, session_class,
                                                                  selection, requirement):
    report = tmp_path / "r.json"
    with ThreadedServer(broker_with(session_class)) as server:
        result = check(server.address[1], "--timeout", "0.5", "--", "-k", selection, report=report)
    assert result.returncode == 1, result.stdout + result.stderr
    assert requirement in result.stdout
    doc = json.loads(report.read_text())
    failed = [t for t in doc["tests"] if t["verdict"] in ("FAIL", "TIMEOUT")]
    assert failed and all(requirement in t["requirements"] for t in failed)
    assert all(t["transcript"] for t in failed), "a failing test must carry its wire transcript"
    assert f"{requirement} [MUST]" in result.stdout     # the requirement's text is shown
    assert requirement in doc["summary"]["blipmq"]["failing_requirements"]


def test_should_deviation_is_non_strict_unless_strict(tmp_path):
    with ThreadedServer(broker_with(RenamedDuplicateHello)) as server:
        lenient = check(server.address[1], "--", "-k", "test_second_hello_rejected",
                        report=tmp_path / "l.json")
        strict = check(server.address[1], "--strict", "--", "-k", "test_second_hello_rejected")
    assert lenient.returncode == 0, lenient.stdout
    verdicts = {t["verdict"] for t in json.loads((tmp_path / "l.json").read_text())["tests"]}
    assert verdicts == {"NON-STRICT"}
    assert "non-strict" in lenient.stdout.lower()
    assert strict.returncode == 1 and "BLIP-HELLO-003" in strict.stdout


def test_profile_waiver(tmp_path):
    profile = tmp_path / "p.toml"
    profile.write_text('extends = "document"\n[waivers]\n"BLIP-PUB-002" = "known bug #12"\n')
    with ThreadedServer(broker_with(WrongNackCode)) as server:
        result = check(server.address[1], "--profile", str(profile), "--", "-k",
                       "test_publish_empty_topic", report=tmp_path / "w.json")
    assert result.returncode == 0, result.stdout
    tests = json.loads((tmp_path / "w.json").read_text())["tests"]
    assert {t["verdict"] for t in tests} == {"WAIVED"}
    assert "known bug #12" in tests[0]["message"]


def test_bad_profile_is_a_usage_error(tmp_path):
    result = check(1, "--profile", "no-such-profile")
    assert result.returncode == 2
    assert "unknown profile" in result.stdout + result.stderr


def test_silent_target_fails_every_test_within_the_bound(tmp_path):
    hole = BlackHole()
    timeout = 0.1
    try:
        start = time.monotonic()
        # the suite's own bound, not the preflight (which turns a black hole away at once)
        result = check(hole.port, "--timeout", str(timeout), "-n", "2", "--no-preflight", report=tmp_path / "b.json",
                       timeout=600)
        elapsed = time.monotonic() - start
    finally:
        hole.close()
    doc = json.loads((tmp_path / "b.json").read_text())
    tests = doc["tests"]
    assert result.returncode == 1
    assert len(tests) > 300
    levels = {rid: req.level for rid, req in catalogue(registry.get("blipmq").requirements).items()}

    def only_mays(t):       # a MAY the target does not do is INFORMATIONAL, never a failure
        return all(levels[rid] == "MAY" for rid in t["requirements"])
    bad = [t for t in tests if not needs_target_command(t)
           and t["verdict"] not in (("INFORMATIONAL",) if only_mays(t) else ("FAIL", "TIMEOUT", "NON-STRICT"))]
    assert not bad, bad[:3]
    assert any(only_mays(t) for t in tests)         # the MAY branch is exercised
    assert all(t["message"] for t in tests), "every failure must say why"
    assert elapsed < len(tests) * timeout + 60, elapsed


def test_junit_and_allure_carry_requirements_and_transcripts(tmp_path):
    import glob
    import xml.etree.ElementTree as ET
    allure_dir, junit = tmp_path / "allure", tmp_path / "j.xml"
    with ThreadedServer(broker_with(WrongNackCode)) as server:
        result = check(server.address[1], "--junitxml", str(junit), "--", "-k",
                       "test_publish_empty_topic", "--alluredir", str(allure_dir))
    assert result.returncode == 1
    cases = ET.parse(junit).getroot().iter("testcase")
    props = [{p.get("name"): p.get("value") for p in case.iter("property")} for case in cases]
    assert props and all(p["requirements"] == "BLIP-PUB-002" and p["verdict"] == "FAIL" for p in props)
    results = [json.loads(open(f).read()) for f in glob.glob(str(allure_dir / "*-result.json"))]
    assert results and all(r["status"] == "failed" for r in results)
    assert all(any(a["name"] == "wire transcript" for a in r.get("attachments", [])) for r in results)
    for r in results:                   # epic = protocol, feature = section, story = requirement
        labels = {(lab["name"], lab["value"]) for lab in r["labels"]}
        assert {("epic", "blipmq"), ("feature", "PUBLISH"), ("story", "BLIP-PUB-002"),
                ("severity", "critical")} <= labels, labels


def test_setup_failure_is_a_harness_error_and_exits_2(tmp_path):
    """A kit-side failure (fixture set-up) is not a verdict on the target."""
    result, doc = run_scratch_suite(
        tmp_path, "import pytest\n\n@pytest.fixture\ndef broken():\n    raise RuntimeError('kit broke')\n\n"
        "@pytest.mark.requirement('BLIP-AUTH-002')\ndef test_h(broken):\n    pass\n")
    # pytest itself exits 2 (the kit failed), as `wirecheck check` does: the plugin decides.
    assert result.returncode == 2, result.stdout
    (test,) = doc["tests"]
    assert test["verdict"] == "HARNESS-ERROR" and "kit broke" in test["message"]
    assert doc["exitstatus"] == 2


def test_hypothesis_giving_up_is_a_harness_error_not_the_targets_fail(tmp_path):
    """A strategy that draws differently on replay (FlakyStrategyDefinition, seen while a target
    restarted) or a failed health check is the kit's problem; a check of the target that
    failed once and passed on replay (FlakyFailure of an AssertionError) stays the target's."""
    body = (
        "import itertools\nimport pytest\nfrom hypothesis import given, settings, strategies as st, HealthCheck\n"
        "from hypothesis.errors import FlakyStrategyDefinition\n\n"
        "@pytest.mark.requirement('BLIP-AUTH-002')\n"
        "def test_strategy_broke():\n    raise FlakyStrategyDefinition('drew differently on replay')\n\n"
        "@pytest.mark.requirement('BLIP-AUTH-002')\n"
        "@settings(max_examples=5)\n@given(st.integers().filter(lambda n: False))\n"
        "def test_health_check(n):\n    pass\n\n"
        "_calls = itertools.count()\n\n"
        "@pytest.mark.requirement('BLIP-AUTH-002')\n"
        "@settings(max_examples=5, database=None, derandomize=True)\n@given(st.just(0))\n"
        "def test_failed_once(n):\n    assert next(_calls) > 0, 'the target broke a rule once'\n")
    result, doc = run_scratch_suite(tmp_path, body)
    verdicts = {t["nodeid"].rsplit("::", 1)[-1]: t["verdict"] for t in doc["tests"]}
    assert verdicts == {"test_strategy_broke": "HARNESS-ERROR", "test_health_check": "HARNESS-ERROR",
                        "test_failed_once": "FAIL"}, (verdicts, result.stdout[-3000:])
    assert result.returncode == 2


def test_state_machine_accepts_a_redelivery_timer_that_fires_mid_exchange(tmp_path):
    """A target whose QoS1 redelivery timer fires between pipelined POLLs (here: at once; on a
    slow link or a busy machine, any exchange that outlasts the backoff) redelivers legally:
    told the profile's ``retry_backoff``, the state machine expects it and passes (its model
    of the redeliveries is checked, with a control, in tests/reference_impl/blipmq/test_blipmq_stateful.py)."""
    from wirecheck.reference_impl.core import registry
    profile = tmp_path / "quick.toml"
    profile.write_text('extends = "document"\n[timing]\nretry_backoff = 0.0\n')
    report = tmp_path / "r.json"
    broker = registry.get("blipmq").make_broker("127.0.0.1", 0, retry_backoff=0.0)
    with ThreadedServer(broker) as server:
        result = check(server.address[1], "--profile", str(profile), "--", "-k", "test_state_machine_should",
                       "-p", "no:randomly", report=report, timeout=240)
    doc = json.loads(report.read_text())
    got = {t["nodeid"].rsplit("::", 1)[-1]: t["verdict"] for t in doc["tests"]}
    assert result.returncode == 0 and got == {"test_state_machine_should": "PASS"}, result.stdout[-3000:]


def test_the_terminal_shows_one_line_per_failure_and_v_the_transcripts(tmp_path):
    """A run with failures prints the summary, one line per failing test (verdict, test, the
    requirements charged with their level, the cause) and where the results are; pytest's pages
    (each transcript in full, then as JSON: 575 KB for four failures) come with -v only. The
    result file keeps the transcripts either way."""
    select = "handshake or (unknown_frame_type and (0x0a or 0x0b or 0x0c or 0x0d or 0x0e))"
    with ThreadedServer(broker_with(NoCloseOnUnknownType)) as server:
        terse = check(server.address[1], "--timeout", "0.5", "--", "-k", select, report=tmp_path / "t.json",
                      timeout=300)
        verbose = check(server.address[1], "--timeout", "0.5", "--", "-k", select, "-v",
                        report=tmp_path / "v.json", timeout=300)
    doc = json.loads((tmp_path / "t.json").read_text())
    failed = [t for t in doc["tests"] if t["verdict"] in ("FAIL", "TIMEOUT")]
    assert terse.returncode == 1 and len(failed) >= 4, terse.stdout[-3000:]
    assert all(t["transcript"] for t in failed)
    assert len(terse.stdout.encode()) < 10_000, len(terse.stdout)
    lines = [line.strip() for line in terse.stdout.splitlines()]
    for t in failed:
        (line,) = [x for x in lines if x.startswith(f"{t['verdict']} {t['nodeid']} (")]
        assert all(f"{rid} [" in line for rid in t.get("broke") or t["requirements"]) and len(line) < 400, line
    assert "transcript connection" not in terse.stdout and "Traceback" not in terse.stdout
    assert f"results: {tmp_path / 't.json'}" in terse.stdout
    assert "transcript connection" in verbose.stdout and len(verbose.stdout) > len(terse.stdout)
