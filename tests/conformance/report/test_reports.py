"""Compliance reports: the HTML report of a run against a target with one injected bug names the
requirement FAIL with the transcript that exposed it; several result files merge into a matrix,
index.json and transcript files; stale waivers are flagged; the HTML opens in headless
Chromium (screenshot and the DOM after its script ran)."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from wirecheck.reference_impl.core.server import ThreadedServer

from tests.helpers import run_scratch_suite
from tests.support.faulty_targets import WrongNackCode, broker_with

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SELECTION = "test_publish_empty_topic or test_ping_after_auth_gets_pong"


def wirecheck(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "wirecheck", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs of the same selection: a broker with a wrong NACK code, and a correct one."""
    out = tmp_path_factory.mktemp("runs")
    with ThreadedServer(broker_with(WrongNackCode)) as server:
        bad = wirecheck("check", "--protocol", "blipmq", "--target", f"127.0.0.1:{server.address[1]}",
                        "--label", "broken-broker", "--report", str(out / "bad.html"), "--", "-k", SELECTION)
    good = wirecheck("check", "--protocol", "blipmq", "--label", "reference", "--report",
                     str(out / "good.json"), "--", "-k", SELECTION)
    return out, bad, good


def test_one_injected_bug_shows_as_fail_with_its_transcript(runs):
    out, bad, _ = runs
    assert bad.returncode == 1, bad.stdout[-2000:]
    page = (out / "bad.html").read_text()
    results = json.loads((out / "bad.json").read_text())
    failures = [t for t in results["tests"] if t["verdict"] == "FAIL"]
    assert failures and all(t["requirements"] == ["BLIP-PUB-002"] for t in failures)
    failed = failures[0]
    # The wire log as data: the PUBLISH sent and the NACK received, each with time and bytes.
    entries = [e for conn in failed["wire"] for e in conn["entries"]]
    assert any(d == "->" and "PUBLISH" in note.upper() for _, d, _, note, _ in entries), entries
    nack = [e for e in entries if e[1] == "<-" and e[2]]
    assert nack, entries
    assert "BLIP-PUB-002" in page and 'class="v v-FAIL"' in page
    assert bytes.fromhex(nack[0][2]).hex(" ")[:20] in page, "the received bytes are in the report"
    assert "expected:" in page and "actual:" in page
    assert "401" in page                                   # the wrong code the broker answered


def test_merged_runs_matrix_index_and_transcripts(runs, tmp_path):
    out, _, good = runs
    assert good.returncode == 0, good.stdout[-2000:]
    result = wirecheck("report", str(out / "bad.json"), str(out / "good.json"), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "r" / "index.html").read_text()
    assert "Implementations &times; requirements" in page
    assert "broken-broker" in page and "reference" in page
    index = json.loads((tmp_path / "r" / "index.json").read_text())
    assert set(index["runs"]) == {"broken-broker", "reference"}
    assert index["runs"]["reference"]["protocols"]["blipmq"]["conformant"] is True
    assert index["runs"]["broken-broker"]["protocols"]["blipmq"]["conformant"] is False
    cases = index["runs"]["broken-broker"]["cases"]
    failures = [c for c in cases.values() if c["verdict"] == "FAIL"]
    assert failures and all(c["requirements"] == ["BLIP-PUB-002"] and c["duration_ms"] > 0 for c in failures)
    failing = failures[0]
    transcript = (tmp_path / "r" / failing["transcript"]).read_text()
    assert "<-" in transcript and "->" in transcript
    assert all(c["transcript"] is None for c in index["runs"]["reference"]["cases"].values())


def test_report_refuses_what_is_not_a_result_file(tmp_path):
    bogus = tmp_path / "x.json"
    bogus.write_text('{"a": 1}')
    result = wirecheck("report", str(bogus), "--out", str(tmp_path / "o.html"))
    assert result.returncode == 2 and "not a wirecheck result file" in result.stderr
    result = wirecheck("report", str(tmp_path / "missing.json"), "--out", str(tmp_path / "o.html"))
    assert result.returncode == 2 and "missing.json" in result.stderr
    assert not (tmp_path / "o.html").exists()


def test_stale_waiver_is_flagged(tmp_path):
    profile = tmp_path / "p.toml"
    profile.write_text('extends = "document"\n[waivers]\n"BLIP-PING-001" = "fixed since?"\n')
    result = wirecheck("check", "--protocol", "blipmq", "--profile", str(profile), "--report",
                       str(tmp_path / "s.json"), "--", "-k", "test_ping_after_auth_gets_pong")
    assert result.returncode == 0, result.stdout[-2000:]
    assert "stale waivers (the requirement passes): BLIP-PING-001" in result.stdout
    summary = json.loads((tmp_path / "s.json").read_text())["summary"]["blipmq"]
    assert summary["stale_waivers"] == ["BLIP-PING-001"]
    assert summary["waivers"] == {"BLIP-PING-001": "fixed since?"}


def _chromium():
    for name in ("chromium-headless-shell", "chromium", "chromium-browser"):
        path = shutil.which(name) or (f"/usr/lib/chromium/{name}" if os.path.exists(f"/usr/lib/chromium/{name}") else None)
        if path:
            return path
    pytest.fail("no headless Chromium: `make test` installs chromium-headless-shell (make browser)")


def test_report_opens_in_headless_chromium(runs, tmp_path):
    out, _, _ = runs
    browser = _chromium()
    flags = ["--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    url = (out / "bad.html").as_uri()
    shot = tmp_path / "report.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1280,900", url],
                   capture_output=True, timeout=120, check=True)
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000, len(png)
    dom = subprocess.run([browser, *flags, "--dump-dom", url], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert "<h2>Summary</h2>" in dom
    # The filter script ran: it wrote how many requirements are shown.
    assert "requirement(s) shown" in dom
    every = int(dom.split(" requirement(s) shown")[0].rsplit(">", 1)[-1])
    failed = subprocess.run([browser, *flags, "--dump-dom", url + "#failed-only&level=MUST"],
                            capture_output=True, text=True, timeout=120, check=True).stdout
    assert "1 requirement(s) shown" in failed, "failed only: BLIP-PUB-002 alone"
    assert every > 40
    assert 'class="req hidden"' in failed and 'class="req"' in failed


def test_run_leaves_index_html_json_and_junit(tmp_path):
    result = wirecheck("run", "--protocol", "micromessage2", "--protocol", "blipmq", "--reports",
                       str(tmp_path), timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    # each suite says how far along it is (at least its first count and its end)
    counts = re.findall(r"^   blipmq: (\d+)/(\d+) tests$", result.stdout, re.M)
    assert counts and counts[-1][0] == counts[-1][1] and int(counts[0][0]) < int(counts[0][1]), result.stdout
    for name in ("index.html", "index.json", "blipmq.junit.xml", "micromessage2.junit.xml"):
        assert (tmp_path / name).stat().st_size > 0, name
    index = json.loads((tmp_path / "index.json").read_text())
    (run,) = index["runs"].values()                       # both protocols: one implementation
    assert set(run["protocols"]) == {"blipmq", "micromessage2"}
    assert all(p["conformant"] for p in run["protocols"].values())
    page = (tmp_path / "index.html").read_text()
    assert "MM2-HS-001" in page and "BLIP-PUB-002" in page


ALLURE = os.path.join(ROOT, "tools", "allure", "node_modules", ".bin", "allure")


def test_allure_command_line_builds_its_report(tmp_path):
    """What `make report-allure` does, on a small selection: allure results with the kit's
    labels, then allure's own HTML report from them (allure from npm, on the Java runtime)."""
    if not os.access(ALLURE, os.X_OK):
        pytest.fail("allure's command line is missing: `make test` installs it (make allure-cli)")
    with ThreadedServer(broker_with(WrongNackCode)) as server:
        wirecheck("check", "--protocol", "blipmq", "--target", f"127.0.0.1:{server.address[1]}", "--",
                  "-k", SELECTION, "--alluredir", str(tmp_path / "results"))
    built = subprocess.run([ALLURE, "generate", str(tmp_path / "results"), "-o", str(tmp_path / "html"),
                            "--clean"], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "html" / "index.html").exists()
    behaviors = json.loads((tmp_path / "html" / "data" / "behaviors.json").read_text())
    assert "blipmq" in json.dumps(behaviors) and "BLIP-PUB-002" in json.dumps(behaviors)


def test_informational_verdict_is_neither_pass_nor_failure(tmp_path):
    result, doc = run_scratch_suite(
        tmp_path, "import pytest\nfrom wirecheck.conformance.report.verdicts import informational\n\n"
        "@pytest.mark.requirement('BLIP-PING-001')\ndef test_i():\n    informational('answers in 3 ms')\n")
    assert result.returncode == 0, result.stdout
    (test,) = doc["tests"]
    assert test["verdict"] == "INFORMATIONAL" and "answers in 3 ms" in test["message"]
    assert doc["summary"]["blipmq"]["failing_requirements"] == []
    from wirecheck.conformance.report.results import load_run
    run = load_run(str(tmp_path / "scratch.json"))
    assert run.conformant("blipmq") and run.requirement_verdicts("blipmq")["BLIP-PING-001"][0] == "INFORMATIONAL"


def test_a_breach_fails_only_the_requirement_it_names(tmp_path):
    """A test checking a MUST and a SHOULD whose failure names the SHOULD (verdicts.Breach) is
    NON-STRICT for that one; the MUST is not reported as broken. A Breach naming an ID its test
    does not check makes the test collateral of that breach: charged to it, at its level, and
    its own requirements are neither failed nor tested by it."""
    result, doc = run_scratch_suite(
        tmp_path, "import pytest\nfrom wirecheck.conformance.report.verdicts import Breach\n\n"
        "@pytest.mark.requirement('BLIP-FRAME-001', 'BLIP-HELLO-003')\ndef test_named():\n"
        "    raise Breach('no greeting', 'BLIP-HELLO-003')\n\n"
        "@pytest.mark.requirement('BLIP-FRAME-002', 'BLIP-IO-002')\ndef test_stray():\n"
        "    raise Breach('not one of mine', 'BLIP-PING-001')\n")
    tests = {t["nodeid"].split("::")[-1]: t for t in doc["tests"]}
    assert tests["test_named"]["verdict"] == "NON-STRICT" and tests["test_named"]["broke"] == ["BLIP-HELLO-003"]
    stray = tests["test_stray"]
    assert stray["verdict"] == "FAIL" and stray["broke"] == ["BLIP-PING-001"], stray
    assert stray["message"].startswith("collateral: ") and "not one of mine" in stray["message"], stray["message"]
    assert doc["summary"]["blipmq"]["failing_requirements"] == ["BLIP-HELLO-003", "BLIP-PING-001"]
    assert result.returncode == 1, result.stdout
    from wirecheck.conformance.report.matrix import problems
    from wirecheck.conformance.report.results import load_run
    run = load_run(str(tmp_path / "scratch.json"))
    verdict_of = {rid: v for rid, (v, _) in run.requirement_verdicts("blipmq").items()}
    assert verdict_of["BLIP-HELLO-003"] == "NON-STRICT" and verdict_of["BLIP-FRAME-001"] == "NOT-RUN"
    assert verdict_of["BLIP-PING-001"] == "FAIL" and verdict_of["BLIP-FRAME-002"] == "NOT-RUN"
    assert sorted(p["requirement"] for p in problems(run)) == ["BLIP-HELLO-003", "BLIP-PING-001"]
    from wirecheck.conformance.report.html import render
    assert "requirements BLIP-FRAME-001, BLIP-HELLO-003; broke BLIP-HELLO-003)" in render([run], docs="")


def test_a_requirement_only_unimplemented_tests_name_is_not_tested(tmp_path):
    """Coverage counts a requirement tested only when a test of it ran to its check: one whose
    only test is UNIMPLEMENTED (the profile says the feature is absent) tested nothing."""
    result, doc = run_scratch_suite(
        tmp_path, "import pytest\nfrom wirecheck.conformance.report.verdicts import unimplemented\n\n"
        "@pytest.mark.requirement('BLIP-PING-001')\ndef test_absent():\n    unimplemented('pings')\n\n"
        "@pytest.mark.requirement('BLIP-PUB-002')\ndef test_present():\n    pass\n")
    assert result.returncode == 0, result.stdout
    assert doc["summary"]["blipmq"]["coverage"]["MUST"][0] == 1, doc["summary"]["blipmq"]["coverage"]
    assert doc["summary"]["blipmq"]["unimplemented_requirements"] == ["BLIP-PING-001"]


def test_distinct_failures_of_one_test_are_each_reported_with_what_they_broke(tmp_path):
    """hypothesis's "found 2 distinct failures" (an ExceptionGroup) is not one opaque FAIL: the
    message lists each failure with the requirements it names, the result keeps them apart, and
    the test is charged with those requirements."""
    result, doc = run_scratch_suite(
        tmp_path, "import pytest\nfrom wirecheck.conformance.report.verdicts import Breach\n\n"
        "@pytest.mark.requirement('BLIP-PUB-002', 'BLIP-PING-001', 'BLIP-FRAME-001')\ndef test_two():\n"
        "    nack, pong = Breach('wrong NACK code', 'BLIP-PUB-002'), Breach('no PONG', 'BLIP-PING-001')\n"
        "    for error, step in ((nack, 'state.publish(qos=1)'), (pong, 'state.ping()')):\n"
        "        for note in ('state = Machine()', step):\n"
        "            error.add_note(note)\n"
        "    raise ExceptionGroup('found 2 distinct failures', [nack, pong])\n")
    assert result.returncode == 1, result.stdout
    (test,) = doc["tests"]
    # each with its own minimal example (the notes hypothesis adds to each failure)
    assert test["failures"] == [
        {"message": "wrong NACK code", "requirements": ["BLIP-PUB-002"],
         "example": "state = Machine()\nstate.publish(qos=1)"},
        {"message": "no PONG", "requirements": ["BLIP-PING-001"], "example": "state = Machine()\nstate.ping()"}], test
    assert test["message"].startswith("2 distinct failures: (1) wrong NACK code [BLIP-PUB-002]; (2) no PONG"), test
    assert sorted(test["broke"]) == ["BLIP-PING-001", "BLIP-PUB-002"]
    assert doc["summary"]["blipmq"]["failing_requirements"] == ["BLIP-PING-001", "BLIP-PUB-002"]
    from wirecheck.conformance.report.html import render
    from wirecheck.conformance.report.results import load_run
    page = render([load_run(str(tmp_path / "scratch.json"))], docs="")
    assert "2 distinct failures</b>, each with its minimal example" in page and "state.ping()" in page
