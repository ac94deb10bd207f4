"""The RabbitMQ Stream black-box suite against a real RabbitMQ 3.10.8 with the profile that
describes it (``rabbitmq-3.10``), as part of the matrix of real implementations (tools/matrix.py,
with two real clients): the kit's reading of the protocol must hold for the real server, where
it differs from the document only through the profile (features and waivers,
wirecheck/reference_impl/rabbitmq_stream/__init__.py). Real captures replayed against it, and
the crash-recovery tests with the kit running the node."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from wirecheck.conformance.report.verdicts import needs_target_command

from tools.rabbitmq_real import INSTALL_HINT, RealRabbitMQ, available

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture(scope="module")
def rabbitmq():
    if not available() and not os.environ.get("WIRECHECK_REQUIRE_REAL_PEERS"):
        pytest.skip(f"RabbitMQ not installed ({INSTALL_HINT}); set WIRECHECK_REQUIRE_REAL_PEERS "
                    "to make this a failure")
    with RealRabbitMQ() as server:
        yield server


def test_the_matrix_with_real_rabbitmq_and_two_real_clients(rabbitmq, tmp_path):
    """`make matrix`'s part in `make test` (tools/matrix.py): the server suite against the real
    RabbitMQ 3.10.8 with the profile that describes it, where the kit's reading of the protocol
    must hold (it differs from the document only through the profile: features and waivers,
    wirecheck/reference_impl/rabbitmq_stream/__init__.py); and check-client with the drivers of
    examples/check-client/ against two real clients, rstream and rbfly, whose known bugs appear
    with their evidence: neither answers the server's Close (RMQS-CLOSE-003), and rbfly, cut
    during its handshake, reconnects every 30 s without telling its application (a HANG)."""
    from tools.matrix_page import matrix_page
    out = tmp_path / "matrix"
    cmd = [sys.executable, os.path.join(ROOT, "tools", "matrix.py"), "--out", str(out), "--python", sys.executable,
           "--only", "RabbitMQ", "--only", "rstream", "--only", "rbfly",
           "--target", f"RabbitMQ={rabbitmq.host}:{rabbitmq.stream_port}"]
    # half the scenarios, those the assertions below read (make matrix runs them all)
    for scenario in ("none", "split", "close", "consumer-update", "error-response", "server-close"):
        cmd += ["--scenario", scenario]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    doc = json.loads((out / "matrix.json").read_text())
    versions = {e["name"]: e.get("version") for e in doc["implementations"]}
    assert versions == {"RabbitMQ": "3.10.8", "rstream": "1.1.1", "rbfly": "0.10.0"}, doc["implementations"]

    # the server: the suite as the real RabbitMQ needs it
    tests = json.loads((out / "results" / "RabbitMQ.json").read_text())["tests"]
    bad = [(t["nodeid"], t["verdict"], t["message"]) for t in tests
           if t["verdict"] in ("FAIL", "TIMEOUT", "HARNESS-ERROR")]
    assert not bad, bad
    # the crash-recovery tests need the kit to run the server: test_crash_recovery_against_real_rabbitmq_310
    verdicts = {t["verdict"] for t in tests if not needs_target_command(t)}
    assert verdicts <= {"PASS", "UNIMPLEMENTED", "WAIVED"}, verdicts
    # The profile's gaps stay gaps, not silent passes: keys 26-30 are UNIMPLEMENTED.
    passed = sum(t["verdict"] == "PASS" for t in tests)
    assert passed >= 150, f"only {passed} tests passed"
    assert any(t["verdict"] == "UNIMPLEMENTED" and "test_newer_commands" in t["nodeid"] for t in tests)
    assert not any(p["implementation"].startswith("RabbitMQ") for p in doc["problems"]), doc["problems"]

    # the clients, by scenario
    clients = doc["clients"]["rabbitmq-stream"]
    for name in ("rstream 1.1.1", "rbfly 0.10.0"):
        for transparent in ("none", "split"):
            assert clients[transparent][name]["verdict"] == "PASS", (transparent, name, clients[transparent][name])
        assert clients["error-response"][name]["verdict"] == "PASS", clients["error-response"][name]
        assert clients["consumer-update"][name]["verdict"] == "NOT-RUN"
        cell = clients["server-close"][name]
        assert cell["verdict"] == "FAIL" and "RMQS-CLOSE-003" in cell["requirements"], cell
    assert clients["close"]["rbfly 0.10.0"]["verdict"] == "HANG", clients["close"]["rbfly 0.10.0"]
    problems = {(p["implementation"], p["requirement"]): p for p in doc["problems"]}
    for name in ("rstream 1.1.1", "rbfly 0.10.0"):
        bug = problems[(name, "RMQS-CLOSE-003")]
        assert bug["level"] == "MUST" and bug["sentence"] and re.search(r"(did not answer|without answering) the server's Close", bug["evidence"]), bug
    hang = next(p for (impl, _), p in problems.items() if impl == "rbfly 0.10.0" and p["verdict"] == "HANG")
    assert "never came" in hang["evidence"] and "check-client::close::outcome" in hang["cases"], hang

    # the report's page and the documentation's, from the same matrix
    assert "Clients &times; scenarios" in (out / "index.html").read_text()
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    (recorded / "2026-01-01.json").write_text((out / "matrix.json").read_text())
    page = matrix_page(recorded)
    assert "| server-close |" in page and "[RMQS-CLOSE-003](requirements/rabbitmq-stream.md#rmqs-close-003)" in page
    assert "**rbfly 0.10.0**: **FAIL** in " in page and "**rbfly 0.10.0**: **HANG** in " in page


@pytest.mark.parametrize("capture", ["rabbitmq-stream-rstream.pcap",
                                     "rabbitmq-stream-rstream-probe-unknown-cmds.pcap"])
def test_real_capture_replays_against_real_rabbitmq(rabbitmq, capture):
    """The real client's capture, replayed against a real RabbitMQ started here, is
    equivalent modulo the masks (wirecheck/conformance/captures/replay_rules.py); twice in a row, since the
    replay gives the streams names of their own."""
    from wirecheck.conformance.captures import replay
    from wirecheck.reference_impl.core import registry
    spec = registry.get("rabbitmq-stream")
    path = os.path.join(ROOT, "captures", "rabbitmq-stream", "real", capture)
    for attempt in range(2):
        options = replay.ReplayOptions((rabbitmq.host, rabbitmq.stream_port), timeout=5.0,
                                       profile="rabbitmq-3.10", seed=attempt)
        results = replay.replay_capture(spec, path, options)
        bad = [(r.name, r.mismatches) for r in results if r.verdict != "PASS"]
        assert not bad, bad
        assert sum(r.frames_compared for r in results) >= 50


def test_crash_recovery_against_real_rabbitmq_310(tmp_path):
    """The crash-recovery tests (kill -9 of the node, restart on its data) pass against the real
    server, with --strict: the kit's reading of "stored" holds for RabbitMQ itself. The kit
    runs the node (tests/support/rabbitmq_target.py, which warms a new node up first; see there)."""
    if not available():
        if os.environ.get("WIRECHECK_REQUIRE_REAL_PEERS"):
            pytest.fail(f"RabbitMQ not installed ({INSTALL_HINT})")
        pytest.skip(f"RabbitMQ not installed ({INSTALL_HINT})")
    report = tmp_path / "crash.json"
    command = f"{sys.executable} {os.path.join(ROOT, 'tests', 'support', 'rabbitmq_target.py')} --port {{port}} --data-dir {{data_dir}}"
    cmd = [sys.executable, "-m", "wirecheck", "check", "--protocol", "rabbitmq-stream", "--profile", "rabbitmq-3.10",
           "--strict", "--target-command", command, "--report", str(report), "--",
           os.path.join(ROOT, "wirecheck", "conformance", "suites", "rabbitmq_stream", "test_crash_recovery.py")]
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    tests = json.loads(report.read_text())["tests"]
    assert len(tests) == 4 and {t["verdict"] for t in tests} == {"PASS"}, \
        [(t["nodeid"], t["verdict"], t["message"][:300]) for t in tests]
