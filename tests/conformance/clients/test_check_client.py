"""``wirecheck check-client``: a client library's driver run under each scenario and judged by
its outcome (conformance/clients/suite.py, clients/driver.py). Planted drivers
(tests/support/planted_client.py) show each verdict: CRASH for an uncaught error or a signal, HANG for
no exit, NON-STRICT (BlipMQ's client rules are SHOULDs) for success where the scenario refused a
request, for a lost and for a duplicated message, NOT-RUN for a scenario that never acted; the
reference driver passes every scenario."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.clients.driver import DriverRun, command_argv, run_driver
from wirecheck.conformance.clients.suite import run_scenario, scenario_names
from wirecheck.reference_impl.core import registry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PLANTED = os.path.join(ROOT, "tests", "support", "planted_client.py")
REFERENCE = f"{sys.executable} -m wirecheck.conformance.clients.drivers.blipmq {{host}} {{port}} {{count}}"


def planted(mode: str) -> str:
    return f"{sys.executable} {PLANTED} {mode} {{host}} {{port}} {{count}}"


def outcome(doc: dict) -> dict:
    case = doc["tests"][0]
    assert case["nodeid"].endswith("::outcome"), case
    return case


def check(scenario: str, command: str, **kw) -> dict:
    return run_scenario(registry.get("blipmq"), scenario, command, count=kw.pop("count", 5), **kw)


def test_the_reference_driver_passes_every_scenario():
    names = scenario_names("blipmq")
    assert {"none", "split", "coalesce", "delay", "close", "error-response", "max-size"} <= set(names)
    for name in names:
        doc = check(name, REFERENCE)
        case = outcome(doc)
        assert case["verdict"] == verdicts.PASS, (name, case["message"])
        assert doc["acted"], name
        bad = [t for t in doc["tests"] if t["verdict"] != verdicts.PASS]
        assert not bad, (name, bad)
        # what the scenario calls for is what the driver did
        expected = {"close": "error", "error-response": "error"}.get(name, "success")
        if name == "close":      # after the 3rd write (SUBSCRIBE's answer), or after the workload
            expected = doc["driver"]["outcome"] if doc["driver"]["outcome"] == "success" else "error"
        assert doc["driver"]["outcome"] == expected, (name, doc["driver"])
        if expected == "success":
            assert doc["driver"]["received"] >= 5 and doc["driver"]["delivered"] >= 5, (name, doc["driver"])
            assert "BLIP-CLIENT-010" in case["requirements"], (name, case)


def test_a_reference_driver_under_its_old_name_passes_a_scenario():
    old = REFERENCE.replace("conformance.clients.drivers", "conformance.drivers")
    case = outcome(check("split", old))
    assert case["verdict"] == verdicts.PASS, case["message"]


@pytest.mark.parametrize("mode, scenario, verdict, requirement, words", [
    ("crash-on-nack", "error-response", verdicts.CRASH, "BLIP-CLIENT-011", "uncaught Python error"),
    ("segfault", "none", verdicts.CRASH, "BLIP-CLIENT-011", "killed by SIGSEGV"),
    ("exit-silently", "none", verdicts.CRASH, "BLIP-CLIENT-011", "without an `error` line"),
    ("ignore-nacks", "error-response", verdicts.NON_STRICT, "BLIP-CLIENT-008", "reported success"),
    ("lose-one", "split", verdicts.NON_STRICT, "BLIP-CLIENT-010", "never handed over"),
    # the hang follows a loss: charged to the delivery rule, not to the scenario's (007)
    ("lose-one-and-wait", "split", verdicts.HANG, "BLIP-CLIENT-010", "never handed over: msg-1"),
    ("duplicate-one", "none", verdicts.NON_STRICT, "BLIP-CLIENT-010", "msg-0 (2 times, delivered 1)"),
])
def test_a_planted_defect_gets_its_verdict(mode, scenario, verdict, requirement, words):
    case = outcome(check(scenario, planted(mode), **({"budget": 8.0} if verdict == verdicts.HANG else {})))
    assert case["verdict"] == verdict and case["requirements"][0] == requirement, case
    assert words in case["message"], case["message"]


def test_a_driver_that_never_exits_is_a_hang_within_its_budget():
    doc = check("close", planted("hang-on-close"), budget=3.0)
    case = outcome(doc)
    assert case["verdict"] == verdicts.HANG and case["requirements"] == ["BLIP-CLIENT-009"], case
    assert "killed by the kit" in case["message"]
    assert doc["driver"]["seconds"] < 3.0 + 10       # SIGTERM is enough for a driver that waits


def test_a_scenario_that_never_acted_is_not_run_not_a_pass():
    doc = check("close", planted("good"), options={"writes": "100000"})
    case = outcome(doc)
    assert not doc["acted"] and doc["driver"]["outcome"] == "success"
    assert case["verdict"] == verdicts.NOT_RUN and case["requirements"] == [], case


def test_the_same_driver_under_an_acting_close_surfaces_the_error():
    doc = check("close", planted("good"), options={"writes": "3"})
    case = outcome(doc)
    assert doc["acted"] and case["verdict"] == verdicts.PASS, case
    assert case["requirements"][0] == "BLIP-CLIENT-009" and "surfaced the error" in case["message"]


def test_runtime_crash_signatures_and_the_driver_contract(tmp_path):
    def ran(code: int, stderr: str = "", stdout: str = "") -> DriverRun:
        run = DriverRun(["x"], returncode=code, stdout=stdout, stderr=stderr)
        for line in stdout.splitlines():
            if line.startswith("error"):
                run.errors.append(line[6:])
        return run

    assert ran(1, "/x.js:3\n  throw err;\n  ^\n\nError: boom\n    at f (x.js:3)\n\nNode.js v18.19.0\n").outcome == "crash"
    assert ran(1, 'Exception in thread "main" java.lang.IllegalStateException\n').uncaught() == "Java"
    assert ran(134, "Unhandled exception. System.Exception: x\n").outcome == "crash"    # .NET abort
    assert ran(101, "thread 'main' panicked at src/main.rs:3:5\n").uncaught() == "Rust"
    assert ran(2, "panic: boom\n\ngoroutine 1 [running]:\n").uncaught() == "Go"
    assert ran(1, stdout="error AuthenticationFailed: refused\n").outcome == "error"
    # a library that logs a background task's traceback and raises the error to its application
    logged = ran(1, "Error while running handler\nTraceback (most recent call last):\n  File \"x\"\n"
                    "ServerError: closed\n", stdout="error ServerError: Connection Closed\n")
    assert logged.outcome == "error" and "error ServerError" in logged.describe()
    assert ran(-9).outcome == "crash" and ran(139).signal == 11
    assert ran(3, stdout="error timeout\n").outcome == "error"
    assert ran(0).outcome == "success"
    # the placeholders, split as a shell would, run without one
    assert command_argv("node d.js --url '{url}' {count}", {"url": "http://h:1/hub", "count": 5}) == \
        ["node", "d.js", "--url", "http://h:1/hub", "5"]
    with pytest.raises(ValueError, match=r"unknown placeholder \{nope\}"):
        command_argv("d {nope}", {"port": 1})
    # `hung WHAT`: the driver gave up on its library (it never returned): a HANG, not an error
    gave_up = run_driver([sys.executable, "-c", "print('received msg-0'); print('hung the answer to Create "
                          "never came within 20 s'); raise SystemExit(1)"], budget=60)
    assert gave_up.outcome == "hang" and not gave_up.hung and gave_up.hangs
    assert "its library never returned: the answer to Create" in gave_up.describe()
    assert run_driver([sys.executable, "-c", "print('hung x')"], budget=60).outcome == "success"   # exit 0 wins
    # a Node.js crash whose error line is above the last stack lines is named in the evidence
    node = ran(1, "/x/decoder.js:584\n  throw new Error(`Unknown response ${key}`);\n  ^\n\n"
                  "Error: Unknown response 22\n" + "".join(f"    at f{i} (x.js:{i})\n" for i in range(14))
               + "\nNode.js v20.20.2\n")
    assert node.outcome == "crash" and "the error it names:\n  Error: Unknown response 22" in node.last_words()
    # a driver that floods its output is read to the end, and kept bounded
    flood = run_driver([sys.executable, "-c", "import sys\nfor i in range(200000): print('received msg-%d' % i)"],
                       budget=60)
    assert flood.outcome == "success" and len(flood.stdout) <= 256 * 1024 and flood.received["msg-0"] == 1


def test_cli_reports_junit_and_exit_status(tmp_path):
    report, junit = tmp_path / "clients.json", tmp_path / "clients.xml"
    cmd = [sys.executable, "-m", "wirecheck", "check-client", "--protocol", "blipmq", "--scenario", "none",
           "--scenario", "error-response", "--count", "3", "--client-command", planted("crash-on-nack"),
           "--report", str(report), "--junitxml", str(junit)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "none: PASS" in proc.stdout and "error-response: CRASH" in proc.stdout, proc.stdout
    doc = json.loads(report.read_text())
    assert doc["kind"] == "client-check" and doc["exitstatus"] == 1
    assert [r["scenario"] for r in doc["driver_runs"]] == ["none", "error-response"]
    assert "BLIP-CLIENT-011" in doc["summary"]["blipmq"]["failing_requirements"]
    cases = {(c.get("classname"), c.get("name")): c for c in ET.parse(junit).getroot().iter("testcase")}
    crash = cases[("check-client.error-response", "outcome")]
    assert crash.find("failure") is not None
    props = {p.get("name"): p.get("value") for p in crash.iter("property")}
    assert props == {"requirements": "BLIP-CLIENT-011", "verdict": "CRASH"}
    assert cases[("check-client.none", "outcome")].find("failure") is None
    # the report merges like any result file
    html = tmp_path / "r.html"
    merged = subprocess.run([sys.executable, "-m", "wirecheck", "report", str(report), "--out", str(html)],
                            capture_output=True, text=True, timeout=120)
    assert merged.returncode == 0 and "BLIP-CLIENT-011" in html.read_text(), merged.stderr
    # a SHOULD broken passes the run, and fails it under --strict (in the JUnit too)
    for strict, code in ((False, 0), (True, 1)):
        junit2 = tmp_path / f"strict-{strict}.xml"
        run = subprocess.run([sys.executable, "-m", "wirecheck", "check-client", "--protocol", "blipmq",
                              "--scenario", "error-response", "--count", "3", "--client-command",
                              planted("ignore-nacks"), "--junitxml", str(junit2)] + (["--strict"] if strict else []),
                             capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert run.returncode == code and "error-response: NON-STRICT" in run.stdout, run.stdout + run.stderr
        outcome_case = next(c for c in ET.parse(junit2).getroot().iter("testcase") if c.get("name") == "outcome")
        assert (outcome_case.find("failure") is not None) == strict
    # a usage error is one line and exit 2, before any driver runs
    bad = subprocess.run([sys.executable, "-m", "wirecheck", "check-client", "--protocol", "blipmq",
                          "--scenario", "close", "--scenario-option", "close=writes", "--client-command", "x"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "NAME:KEY=VALUE" in bad.stderr, bad.stderr


def test_a_driver_named_by_a_relative_path_runs_from_the_callers_directory(tmp_path):
    """`python drivers/mine.py ...` as the user typed it, in their working directory."""
    (tmp_path / "drivers").mkdir()
    shutil.copy(PLANTED, tmp_path / "drivers" / "mine.py")
    run = subprocess.run([sys.executable, "-m", "wirecheck", "check-client", "--protocol", "blipmq",
                          "--scenario", "none", "--count", "2", "--client-command",
                          f"{sys.executable} drivers/mine.py good {{host}} {{port}} {{count}}"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert run.returncode == 0 and "none: PASS" in run.stdout, run.stdout + run.stderr


#: Scenarios a protocol's standard workload leaves untried (NOT-RUN), and why.
UNTRIED = {"rabbitmq-stream": {"consumer-update"}}    # the workload has no single-active consumer
#: Scenarios under which the reference driver's workload fails, and must say so.
FAILING = {"error-response", "server-close", "close-message", "required-extension"}


@pytest.mark.parametrize("protocol, module, where", [
    ("rabbitmq-stream", "rabbitmq_stream", "{host} {port}"), ("vibemq", "vibemq", "{host} {port}"),
    ("signalr", "signalr", "{url}"), ("micromessage2", "micromessage2", "{host} {port}"),
])
def test_a_reference_driver_under_every_scenario(protocol, module, where):
    """Every scenario acts on the workload and the reference client copes: success where the
    scenario changes nothing it may notice, the error surfaced where a request fails."""
    spec = registry.get(protocol)
    command = f"{sys.executable} -m wirecheck.conformance.clients.drivers.{module} {where} {{count}}"
    for name in scenario_names(protocol):
        doc = run_scenario(spec, name, command, count=5)
        case = outcome(doc)
        bad = [t for t in doc["tests"][1:] if t["verdict"] != verdicts.PASS]
        assert not bad, (name, bad)
        if name in UNTRIED.get(protocol, ()):
            assert case["verdict"] == verdicts.NOT_RUN and not doc["acted"], case
            continue
        assert case["verdict"] == verdicts.PASS and doc["acted"], (name, case["message"])
        if name == "close":              # ends the connection after the server's 3rd write:
            # mid-workload, or (a workload whose answers came in fewer writes) after it
            assert doc["driver"]["outcome"] in ("error", "success"), (name, doc["driver"])
            continue
        expected = "error" if name in FAILING else "success"
        assert doc["driver"]["outcome"] == expected, (name, doc["driver"])
        if expected == "success":        # the kit saw the deliveries it compares with
            assert doc["driver"]["delivered"] >= 5 and doc["driver"]["received"] >= 5, (name, doc["driver"])
        if name == "server-close":       # the reference client answered the server's Close
            passed = " ".join(" ".join(t["requirements"]) for t in doc["tests"] if t["verdict"] == verdicts.PASS)
            assert "RMQS-CLOSE-003" in passed, doc["tests"]


def test_the_rstream_example_driver_finds_rstreams_unanswered_close():
    """examples/check-client/rstream_driver.py as the docs show it: rstream (PyPI) completes the
    workload, surfaces a refusal, and leaves the server's Close unanswered (RMQS-CLOSE-003) —
    a real bug the kit reports while the outcome (an error surfaced) passes."""
    pytest.importorskip("rstream")
    spec = registry.get("rabbitmq-stream")
    command = f"{sys.executable} {os.path.join(ROOT, 'examples', 'check-client', 'rstream_driver.py')} {{host}} {{port}} {{count}}"
    clean = run_scenario(spec, "none", command, count=3, budget=40)
    assert outcome(clean)["verdict"] == verdicts.PASS, outcome(clean)["message"]
    assert clean["driver"]["received"] == 3
    refused = run_scenario(spec, "error-response", command, count=3, budget=40)
    assert outcome(refused)["verdict"] == verdicts.PASS and refused["driver"]["outcome"] == "error"
    closed = run_scenario(spec, "server-close", command, count=3, budget=40)
    case = outcome(closed)
    assert case["verdict"] == verdicts.PASS and closed["driver"]["outcome"] == "error", case["message"]
    fails = [t for t in closed["tests"] if t["verdict"] == verdicts.FAIL]
    assert [t["requirements"] for t in fails] == [["RMQS-CLOSE-003"]], closed["tests"]
    assert closed["exitstatus"] == 1


def test_the_default_label_names_the_driver_not_its_runner():
    from wirecheck.cli.check_client import default_label
    assert default_label("rabbitmq-stream", "python examples/check-client/rbfly_driver.py {host} {port} {count}") == \
        "rabbitmq-stream client rbfly_driver.py"
    assert default_label("signalr", "/usr/bin/python3.11 -m wirecheck.conformance.clients.drivers.signalr {url} {count}") == \
        "signalr client wirecheck.conformance.clients.drivers.signalr"
    assert default_label("signalr", "node --no-warnings drivers/js.mjs {url}") == "signalr client js.mjs"
    assert default_label("blipmq", "./my-driver {host} {port}") == "blipmq client my-driver"
