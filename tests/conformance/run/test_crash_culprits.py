"""A crash is charged to the test that caused it, the same under ``-n 1`` and ``-n 2``
(conformance/target/crashwatch.py, culprits.py, isolation.py): servers that die on what they are
sent (tests/support/planted_servers.py), now, a moment later, or only after an earlier connection's
state, or on a record split across WebSocket messages (tests/support/planted_signalr.py); and those that
set a thread spinning or keep memory for good. The full runs (the whole suite, -n 1, 2 and auto, three times each) are ``make soak``'s
(soak/culprits.py); these are its quick forms, and the runs without ``--target-command``."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from soak import culprits
from wirecheck.conformance.target.crashwatch import earlier, suspects


#: make test's share (soak/culprits.py runs every plant with -n 1, 2 and auto, three times): both
#: forms for the plain crashes, the xdist form (the hard one) for the others; each run's CRASH
#: set must be exactly the tests that crash the server alone, and two runs' verdicts equal.
QUICK = [("content", ("1", "2")), ("delayed", ("2",)), ("stateful", ("2",)), ("split", ("2",))]


@pytest.mark.parametrize("plant,workers", QUICK, ids=[q[0] for q in QUICK])
def test_crashes_are_charged_to_the_tests_that_cause_them_whatever_n(tmp_path, plant, workers):
    spec = culprits.PLANTS[plant]
    runs = [dict(culprits.run_suite(plant, n, spec["quick_k"], tmp_path, quick=True), workers=n) for n in workers]
    assert culprits.problems(plant, runs, quick=True) == [], [r.get("error") for r in runs]
    for run in runs:
        code = "exit code 71" if plant == "split" else "exit code 70"
        for test, message in run["messages"].items():
            assert code in message and "planted crash:" in message, message   # the process's own word
        # every crash says which tests ran then, and how each re-run went
        for crash in run["crashes"]:
            assert crash["culprits"] and crash["suspects"] and crash["reruns"], crash
            assert crash["status"] == code and "planted crash" in crash["output"]


@pytest.mark.parametrize("plant", ["spin", "growth"])
def test_a_spin_or_a_growth_is_charged_to_the_tests_that_cause_it(tmp_path, plant):
    """Under xdist (the hard case: the spin watch and the memory readings see overlapping
    tests): each suspect measured on a target of its own names exactly the tests that do it."""
    run = dict(culprits.run_suite(plant, "2", culprits.PLANTS[plant]["quick_k"], tmp_path, quick=True), workers="2")
    assert culprits.problems(plant, [run], quick=True) == [], run.get("error")


def test_the_crash_a_test_causes_is_not_hidden_by_a_later_kill(tmp_path):
    """The server dies 0.3 s after the last test before the crash-recovery tests (which kill
    the target on purpose): the look before the kill finds it down, and charges that test."""
    run = culprits.run_suite("delayed", "1", "test_api_key_length or test_handled_qos1", tmp_path)
    crashed = {t for t, v in run["verdicts"].items() if v == "CRASH"}
    assert crashed == {"blipmq/test_boundaries.py::test_api_key_length[65535]"}, run["verdicts"]
    assert all(v == "PASS" for t, v in run["verdicts"].items() if t not in crashed), run["verdicts"]


def _against_own_plant(tmp_path, workers: str, select: str, *plant_args: str):
    """The suite (``-k select``) against a planted server the test started (no --target-command)."""
    proc = subprocess.Popen([sys.executable, str(culprits.PLANT), "--port", "0", *plant_args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    report = tmp_path / "r.json"
    try:
        port = int(proc.stdout.readline().rsplit(":", 1)[1])
        got = subprocess.run([sys.executable, "-m", "pytest", "--protocol", "blipmq", "--target", f"127.0.0.1:{port}",
                              "-q", "-p", "no:cacheprovider", "-n", workers, "-k", select,
                              "--wirecheck-report", str(report)], cwd=tmp_path, capture_output=True, text=True,
                             timeout=600)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    return got, json.loads(report.read_text())


@pytest.mark.parametrize("workers", ["0", "2"])
def test_without_target_command_the_tests_that_ran_are_not_judged_and_named(tmp_path, workers):
    got, doc = _against_own_plant(tmp_path, workers, "test_topic_length or test_handshake")
    verdicts = {t["nodeid"]: t for t in doc["tests"]}
    assert got.returncode == 1, got.stdout[-3000:]
    # no test is charged without a re-run: the one that did it is among those not judged
    assert "CRASH" not in {t["verdict"] for t in doc["tests"]}
    culprit = verdicts["blipmq/test_boundaries.py::test_topic_length_both_ways[65535]"]
    assert culprit["verdict"] == "SKIPPED" and culprit["message"].startswith(
        "not judged: the target went down while this test ran or just after"), culprit
    assert "--target-command would" in culprit["message"]
    (crash,) = doc["summary"]["blipmq"]["crashes"]
    assert crash["attributed"] is False and culprit["nodeid"] in crash["suspects"]
    assert "--target-command lets the kit re-run them" in got.stdout
    # a not-judged test charges no requirement
    assert "BLIP-SUB-004" not in doc["summary"]["blipmq"]["failing_requirements"]


def test_suspects_are_the_tests_around_the_last_moment_the_target_answered():
    j = [{"e": "start", "g": 0, "t": 1.0, "test": "a"}, {"e": "end", "g": 0, "t": 2.0, "test": "a"},
         {"e": "start", "g": 0, "t": 2.1, "test": "b"}, {"e": "end", "g": 0, "t": 4.0, "test": "b"},
         {"e": "alive", "g": 0, "t": 4.05},
         {"e": "start", "g": 0, "t": 4.1, "test": "c"}, {"e": "end", "g": 0, "t": 4.2, "test": "c"},
         {"e": "start", "g": 0, "t": 4.3, "test": "d"},                      # running when found down
         {"e": "start", "g": 1, "t": 9.0, "test": "e"}]                       # the next generation
    # a ended more than AFTER_INPUT s before the last answer: cleared; b may have sent the input
    assert suspects(j, 0, found_down=4.5) == ["b", "c", "d"]
    assert earlier(j, 0, before=2.1) == ["a"]
    assert suspects(j, 1, found_down=9.5, since=8.0) == ["e"]


def test_a_test_never_waits_long_for_nothing(tmp_path):
    """A healthy target: every report is handed on, none waits past the end of the run."""
    started = time.monotonic()
    got, doc = _against_own_plant(tmp_path, "2", "test_handshake", "--on", "type-0xee")
    assert got.returncode == 0 and {t["verdict"] for t in doc["tests"]} == {"PASS"}, got.stdout[-2000:]
    assert time.monotonic() - started < 120


def test_the_reruns_draw_what_the_run_draws():
    """A re-run judges a test as the run did: the same hypothesis seed and profile (a state
    machine's examples are the inputs), the plugins loaded by name; never xdist."""
    from types import SimpleNamespace

    from wirecheck.conformance.run.culprits import child_argv
    option = SimpleNamespace(wirecheck_protocol="blipmq", wirecheck_timeout=5.0, wirecheck_profile=None,
                             wirecheck_test_budget=None, hypothesis_seed=1234, hypothesis_profile="ci")
    config = SimpleNamespace(option=option, rootpath="/r", inipath=None,
                             invocation_params=SimpleNamespace(args=("-p", "myplugin", "-pother", "-n", "2",
                                                                     "-p", "xdist", "-p", "no:cacheprovider")))
    argv = child_argv(config, "serve {port}", None, strict=False)
    assert argv[argv.index("--hypothesis-seed") + 1] == "1234"
    assert argv[argv.index("--hypothesis-profile") + 1] == "ci"
    tail = argv[argv.index("--hypothesis-profile") + 2:]
    assert tail == ["-p", "myplugin", "-p", "other"]
    assert "-n" not in argv and argv.count("no:xdist") == 1
