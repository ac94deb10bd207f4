"""The preflight (conformance/preflight.py): a wrong --target, --protocol or credential is one
line and exit 2 within 10 s, before any test runs or is reported; a right one costs a few
handshakes and changes no verdict."""
from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from tests.faulty_targets import BlackHole
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.server import ThreadedServer

PROTOCOLS = ["blipmq", "vibemq", "micromessage2", "rabbitmq-stream", "signalr"]


@pytest.fixture(scope="module")
def brokers():
    """One reference broker per protocol (SignalR's also on its HTTP path), and a draft one."""
    running = {}
    for proto in PROTOCOLS:
        spec = registry.get(proto)
        running[proto] = ThreadedServer(spec.make_broker("127.0.0.1", 0, **spec.embedded_timing)).start()
    spec = registry.get("signalr")
    running["signalr-draft"] = ThreadedServer(
        spec.make_broker("127.0.0.1", 0, profile="draft", **spec.embedded_timing)).start()
    yield running
    for server in running.values():
        server.stop()


def _raw(server) -> str:
    """The broker's raw TCP address (SignalR's hub also speaks raw TCP, on ``raw_port``)."""
    return f"127.0.0.1:{getattr(server.server, 'raw_port', server.address[1])}"


def _url(server) -> str:
    return server.server.url


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pytest(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    report = tmp_path / "r.json"
    started = time.monotonic()
    got = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "--wirecheck-report", str(report), *args],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return got, time.monotonic() - started


def _refused(got, took: float, tmp_path, *words: str) -> str:
    """Exit 2, in time, one line naming the cause; no test ran or was reported."""
    assert got.returncode == 2, got.stdout[-2000:] + got.stderr[-2000:]
    assert took < 10, took
    lines = [line for line in got.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("wirecheck preflight: "), got.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert "passed" not in got.stdout and "failed" not in got.stdout, got.stdout
    assert not (tmp_path / "r.json").exists()
    return lines[0]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_a_closed_port(tmp_path, proto):
    got, took = _pytest(tmp_path, "--protocol", proto, "--target", f"127.0.0.1:{_closed_port()}")
    _refused(got, took, tmp_path, "nothing accepts connections", "--target")


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_a_server_that_says_nothing(tmp_path, proto):
    hole = BlackHole()
    try:
        got, took = _pytest(tmp_path, "--protocol", proto, "--target", f"127.0.0.1:{hole.port}")
    finally:
        hole.close()
    _refused(got, took, tmp_path, "did not answer", "--protocol")


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_another_protocol_on_the_port(tmp_path, brokers, proto):
    other = PROTOCOLS[(PROTOCOLS.index(proto) + 1) % len(PROTOCOLS)]
    got, took = _pytest(tmp_path, "--protocol", proto, "--target", _raw(brokers[other]))
    line = _refused(got, took, tmp_path, proto)
    assert "--protocol" in line, line


@pytest.mark.parametrize("proto, credentials, setting", [
    ("blipmq", 'api_key = "wrong"', "api_key"),
    ("vibemq", 'password = "wrong"', "password"),
    ("rabbitmq-stream", 'user = "guest"\npassword = "wrong"', "password"),
    ("rabbitmq-stream", 'vhost = "/nowhere"', "vhost"),
])
def test_refused_credentials(tmp_path, brokers, proto, credentials, setting):
    profile = tmp_path / "mine.toml"
    profile.write_text(f"[credentials]\n{credentials}\n")
    got, took = _pytest(tmp_path, "--protocol", proto, "--target", _raw(brokers[proto]),
                        "--profile", str(profile))
    _refused(got, took, tmp_path, "refused", "[credentials]", setting)


def test_a_v1_hub_under_the_draft_profile_and_back(tmp_path, brokers):
    got, took = _pytest(tmp_path, "--protocol", "signalr", "--target", _raw(brokers["signalr"]),
                        "--profile", "draft")
    _refused(got, took, tmp_path, "SignalR v1", "--profile v1")
    got, took = _pytest(tmp_path, "--protocol", "signalr", "--target", _raw(brokers["signalr-draft"]))
    _refused(got, took, tmp_path, "did not answer", "--profile draft")


def test_a_wrong_hub_path(tmp_path, brokers):
    url = _url(brokers["signalr"]).rsplit("/", 1)[0] + "/elsewhere"
    got, took = _pytest(tmp_path, "--protocol", "signalr", "--target", url)
    _refused(got, took, tmp_path, "negotiate", "--target")


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_a_right_target_passes_and_its_tests_run(tmp_path, brokers, proto):
    target = _url(brokers[proto]) if proto == "signalr" else _raw(brokers[proto])
    got, _took = _pytest(tmp_path, "--protocol", proto, "--target", target, "-k", "(handshake or connection) and not stateful", "-m", "not slow",
                         "-x")
    assert "wirecheck preflight" not in got.stderr, got.stderr
    assert got.returncode == 0 and " passed" in got.stdout, got.stdout[-3000:]


def test_draft_hub_under_draft_profile_passes(tmp_path, brokers):
    got, _took = _pytest(tmp_path, "--protocol", "signalr", "--target", _raw(brokers["signalr-draft"]),
                         "--profile", "draft", "-k", "handshake", "-x")
    assert "wirecheck preflight" not in got.stderr, got.stderr
    assert got.returncode == 0, got.stdout[-3000:]


def test_no_preflight_runs_the_tests_anyway(tmp_path):
    got, _took = _pytest(tmp_path, "--protocol", "blipmq", "--target", f"127.0.0.1:{_closed_port()}",
                         "--no-preflight", "-k", "ping_after_auth")
    assert got.returncode == 1 and "wirecheck preflight" not in got.stderr, got.stderr
    assert "1 failed" in got.stdout, got.stdout[-2000:]


def test_wirecheck_check_exits_2_the_same_way(tmp_path):
    started = time.monotonic()
    got = subprocess.run([sys.executable, "-m", "wirecheck", "check", "--protocol", "vibemq", "--target",
                          f"127.0.0.1:{_closed_port()}"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert got.returncode == 2 and time.monotonic() - started < 10
    assert got.stderr.startswith("wirecheck preflight: ") and "nothing accepts connections" in got.stderr
