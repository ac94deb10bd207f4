"""The preflight (conformance/target/preflight.py): a wrong --target, --protocol or credential is one
line and exit 2 within 10 s, before any test runs or is reported; a right one costs a few
handshakes and changes no verdict."""
from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from tests.support.faulty_targets import BlackHole
from wirecheck.conformance.target.preflight import PreflightError, preflight
from wirecheck.conformance.profiles import load_profile
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


def _direct(proto: str, target: str, profile: str | None = None) -> str | None:
    """The preflight in this process: its message (None when the target passes), within 10 s."""
    spec = registry.get(proto)
    if "://" in target:
        host_port = target.split("://", 1)[1].split("/", 1)[0]
        host, port, url = host_port.rsplit(":", 1)[0], int(host_port.rsplit(":", 1)[1]), target
    else:
        host, port, url = target.rsplit(":", 1)[0], int(target.rsplit(":", 1)[1]), None
    started = time.monotonic()
    try:
        preflight(spec, load_profile(spec, profile), host, port, url)
        return None
    except PreflightError as exc:
        return str(exc)
    finally:
        assert time.monotonic() - started < 10


def test_the_run_ends_before_any_test_with_one_line(tmp_path):
    got, took = _pytest(tmp_path, "--protocol", "blipmq", "--target", f"127.0.0.1:{_closed_port()}")
    _refused(got, took, tmp_path, "nothing accepts connections", "--target")


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_a_closed_port(proto):
    message = _direct(proto, f"127.0.0.1:{_closed_port()}")
    assert "nothing accepts connections" in message and "--target" in message, message


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_a_server_that_says_nothing(proto):
    hole = BlackHole()
    try:
        message = _direct(proto, f"127.0.0.1:{hole.port}")
    finally:
        hole.close()
    assert "did not answer" in message and "--protocol" in message, message


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_another_protocol_on_the_port(brokers, proto):
    other = PROTOCOLS[(PROTOCOLS.index(proto) + 1) % len(PROTOCOLS)]
    message = _direct(proto, _raw(brokers[other]))
    assert message and proto in message and "--protocol" in message, message


@pytest.mark.parametrize("proto, credentials, setting", [
    ("blipmq", 'api_key = "wrong"', "api_key"),
    ("vibemq", 'password = "wrong"', "password"),
    ("rabbitmq-stream", 'user = "guest"\npassword = "wrong"', "password"),
    ("rabbitmq-stream", 'vhost = "/nowhere"', "vhost"),
])
def test_refused_credentials(tmp_path, brokers, proto, credentials, setting):
    profile = tmp_path / "mine.toml"
    profile.write_text(f"[credentials]\n{credentials}\n")
    message = _direct(proto, _raw(brokers[proto]), str(profile))
    assert "refused" in message and "[credentials]" in message and setting in message, message


def test_refused_credentials_end_the_run_too(tmp_path, brokers):
    profile = tmp_path / "mine.toml"
    profile.write_text('[credentials]\napi_key = "wrong"\n')
    got, took = _pytest(tmp_path, "--protocol", "blipmq", "--target", _raw(brokers["blipmq"]),
                        "--profile", str(profile))
    _refused(got, took, tmp_path, "refused the blipmq AUTH", "api_key")


def test_a_v1_hub_under_the_draft_profile_and_back(brokers):
    message = _direct("signalr", _raw(brokers["signalr"]), "draft")
    assert "SignalR v1" in message and "--profile v1" in message, message
    message = _direct("signalr", _raw(brokers["signalr-draft"]))
    assert "did not answer" in message and "--profile draft" in message, message


def test_a_wrong_hub_path(brokers):
    url = _url(brokers["signalr"]).rsplit("/", 1)[0] + "/elsewhere"
    message = _direct("signalr", url)
    assert "negotiate" in message and "--target" in message, message


def test_the_hubs_http_port_given_as_raw_tcp(brokers):
    """HOST:PORT of the hub's HTTP listener: the raw handshake gets an HTTP answer. Named as
    such, with the URL form to use, not as a version problem."""
    message = _direct("signalr", f"127.0.0.1:{brokers['signalr'].address[1]}")
    assert "speaks HTTP" in message and "--target http://" in message, message
    assert "--profile" not in message, message


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_a_right_target_passes(brokers, proto):
    assert _direct(proto, _raw(brokers[proto])) is None
    if proto == "signalr":
        assert _direct(proto, _url(brokers[proto])) is None
        assert _direct(proto, _raw(brokers["signalr-draft"]), "draft") is None


def test_a_right_target_passes_and_its_tests_run(tmp_path, brokers):
    got, _took = _pytest(tmp_path, "--protocol", "signalr", "--target", _url(brokers["signalr"]),
                         "-k", "handshake and not stateful", "-m", "not slow", "-x")
    assert "wirecheck preflight" not in got.stderr, got.stderr
    assert got.returncode == 0 and " passed" in got.stdout, got.stdout[-3000:]


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


@pytest.mark.parametrize("session_class", ["WrongAuthAckId", "SilentAfterHello"])
def test_an_auth_answer_that_breaks_a_rule_is_judged_not_sent_away(tmp_path, session_class):
    """The credentials are right; the AUTH's answer breaks a MUST (a wrong correlation id, or
    none at all). The preflight sent such servers away ("Set the profile's [credentials]", exit
    2) and the violation was never reported: now the suite runs and fails the requirement."""
    from tests.support import faulty_targets
    from tests.support.faulty_targets import broker_with
    report = tmp_path / "r.json"
    with ThreadedServer(broker_with(getattr(faulty_targets, session_class))) as server:
        got = subprocess.run([sys.executable, "-m", "wirecheck", "check", "--protocol", "blipmq", "--target",
                              f"127.0.0.1:{server.address[1]}", "--timeout", "0.5", "--report", str(report),
                              "--", "-k", "test_document_auth_sample or test_ping_after_auth_gets_pong"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert got.returncode == 1 and "wirecheck preflight" not in got.stderr, got.stdout[-2000:] + got.stderr
    import json
    doc = json.loads(report.read_text())
    verdicts = {t["nodeid"].split("::")[1]: t["verdict"] for t in doc["tests"]}
    assert verdicts["test_document_auth_sample"] in ("FAIL", "TIMEOUT"), verdicts
    assert "BLIP-AUTH-005" in doc["summary"]["blipmq"]["failing_requirements"]


def test_an_answer_the_profile_cannot_read_names_the_profile_that_can():
    """A Micromessage2 server speaking SharpMessaging's reading, tested with the document's:
    the line names the field the reading refused and the built-in profile that reads it."""
    spec = registry.get("micromessage2")
    server = ThreadedServer(spec.make_broker("127.0.0.1", 0, profile="sharpmessaging", **spec.embedded_timing)).start()
    try:
        with pytest.raises(PreflightError) as got:
            preflight(spec, load_profile(spec, None), "127.0.0.1", server.address[1])
        preflight(spec, load_profile(spec, "sharpmessaging"), "127.0.0.1", server.address[1])    # and it reads
    finally:
        server.stop()
    text = str(got.value)
    assert "'MessagesPerAck'" in text and "try --profile sharpmessaging" in text, text
    assert "not micromessage2" not in text
