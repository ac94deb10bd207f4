"""The reference brokers against hostile clients (hardening issue, items 2 and 5), fast:
the quick variant of soak/hostile_clients.py per protocol (a crowd of idle, half-handshake,
trickling, silent-established and 4 GiB-prefix connections; pre-auth commands; the connection
limit; VibeMQ's decompression bombs), then the glue's bounds in process, then the security
defaults of ``wirecheck serve``."""
from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from wirecheck.cli import serve as cli_serve
from wirecheck.reference_impl.blipmq import codec as blip
from wirecheck.reference_impl.blipmq.broker import BlipBroker, BrokerConfig
from wirecheck.reference_impl.core.server import ThreadedServer
from soak.hostile_clients import PROTOCOLS, QUICK, run_protocol, vibemq_bombs

from tests.support.blipmq_proc import ROOT, BrokerProcess

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

#: Smaller than the soak's quick run: ~5 s per protocol on a busy 2-core machine.
FAST = replace(QUICK, connections=80, round_trips=2)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_hostile_crowd_and_checks(protocol):
    result = asyncio.run(run_protocol(protocol, FAST))
    goals = result["goals"]
    failed = {name: g for name, g in goals.items() if not g["met"]}
    assert not failed, failed
    kinds = result["facts"]["kinds"]
    assert sum(k["count"] for k in kinds.values()) == FAST.connections
    # Every hostile connection was closed by the broker, none by a client-side timeout.
    assert all(k["closed"] == k["count"] and k["errors"] == 0 for k in kinds.values()), kinds
    assert kinds["huge"]["answer_ok"] == kinds["huge"]["count"]
    assert goals["rss_peak_mb"]["figure"] < 200
    assert max(result["facts"]["round_trips_s"]) <= FAST.round_trip_bound
    if protocol == "vibemq":
        for name in ("gzip", "brotli"):
            bomb = result["facts"]["bombs"][name]
            assert bomb["closed"] and bomb["errors"] == ["INVALID_MESSAGE"], bomb


def test_vibemq_brotli_bomb_within_the_decompression_limit():
    broker = BrokerProcess(protocol="vibemq").start()
    try:
        bomb = asyncio.run(vibemq_bombs(broker.port, broker.proc.pid))["brotli"]
    finally:
        broker.kill()
    assert bomb["errors"] == ["INVALID_MESSAGE"]
    assert bomb["peak_growth_mb"] < bomb["limit_mb"] + 32, bomb


# -- the glue's bounds, in process -----------------------------------------------------------

def _broker(**config) -> ThreadedServer:
    return ThreadedServer(BlipBroker(BrokerConfig(**config))).start()


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionError:
        return True
    except socket.timeout:
        return False


def _handshake(sock: socket.socket) -> None:
    sock.sendall(blip.encode(blip.Hello(1)) + blip.encode(blip.Auth(2, "dev-key")))
    decoder, frames = blip.Decoder(), []
    while len(frames) < 2:
        frames += decoder.feed(sock.recv(4096))
    assert all(isinstance(f, blip.Ack) for f in frames)


def test_connection_limit_refuses_the_next_and_keeps_the_others():
    server = _broker(max_connections=3)
    try:
        socks = [socket.create_connection(server.address, timeout=5) for _ in range(3)]
        _handshake(socks[0])
        extra = socket.create_connection(server.address, timeout=5)
        assert _closed_within(extra, 5)
        socks[0].sendall(blip.encode(blip.Ping(9)))
        assert blip.Decoder().feed(socks[0].recv(4096)) == [blip.Pong(9)]
        socks.pop().close()
        time.sleep(0.2)
        again = socket.create_connection(server.address, timeout=5)
        _handshake(again)                      # the freed slot serves
        again.close()
        for s in socks:
            s.close()
    finally:
        server.stop()


def test_handshake_timeout_closes_silent_and_trickling_peers_not_authenticated_ones():
    server = _broker(handshake_timeout=0.5, idle_timeout=None)
    try:
        silent = socket.create_connection(server.address, timeout=5)
        trickle = socket.create_connection(server.address, timeout=5)
        ready = socket.create_connection(server.address, timeout=5)
        _handshake(ready)
        hello = blip.encode(blip.Hello(1))
        start = time.monotonic()
        sent = 0
        try:
            for byte in hello * 4:             # a byte every 0.15 s: never a handshake
                trickle.sendall(bytes([byte]))
                sent += 1
                time.sleep(0.15)
        except (BrokenPipeError, ConnectionResetError):
            pass                               # closed while trickling
        assert sent < len(hello) * 4
        assert _closed_within(silent, 5) and _closed_within(trickle, 5)
        assert time.monotonic() - start < 4
        assert not _closed_within(ready, 0.3)
        for s in (silent, trickle, ready):
            s.close()
    finally:
        server.stop()


def test_idle_timeout_closes_a_silent_authenticated_peer():
    server = _broker(idle_timeout=0.6)
    try:
        busy = socket.create_connection(server.address, timeout=5)
        idle = socket.create_connection(server.address, timeout=5)
        _handshake(busy)
        _handshake(idle)
        for i in range(3):                     # PING keeps a connection alive
            busy.sendall(blip.encode(blip.Ping(i)))
            time.sleep(0.25)
        assert _closed_within(idle, 3)
        busy.sendall(blip.encode(blip.Ping(99)))
        decoder, frames = blip.Decoder(), []
        while blip.Pong(99) not in frames:     # the earlier PONGs come first
            frames += decoder.feed(busy.recv(4096))
        busy.close()
        idle.close()
    finally:
        server.stop()


def test_handshake_byte_budget_closes_a_big_frame_before_auth():
    server = _broker(max_handshake_bytes=1024)
    try:
        sock = socket.create_connection(server.address, timeout=5)
        # A PUBLISH of 2 KiB before AUTH: a legal length, but more than the budget.
        sock.sendall(blip.encode(blip.Hello(1)) + blip.encode(blip.Publish(2, 0, "t", bytes(2048))))
        assert _closed_within(sock, 5)
        sock.close()
    finally:
        server.stop()


def test_subscriptions_are_bounded_broker_wide():
    server = _broker(max_subscriptions=2)
    try:
        sock = socket.create_connection(server.address, timeout=5)
        _handshake(sock)
        sock.sendall(b"".join(blip.encode(blip.Subscribe(10 + i, "t", 0)) for i in range(3)))
        decoder, frames = blip.Decoder(), []
        while len(frames) < 3:
            frames += decoder.feed(sock.recv(4096))
        assert [type(f).__name__ for f in frames] == ["Ack", "Ack", "Nack"]
        assert frames[2].code == 400 and frames[2].correlation_id == 12
        sock.close()
    finally:
        server.stop()


# -- security defaults (item 5) ----------------------------------------------------------------

@pytest.mark.parametrize("host,loopback", [("127.0.0.1", True), ("localhost", True), ("::1", True),
                                           ("127.0.0.2", True), ("0.0.0.0", False), ("", False),
                                           ("::", False), ("192.0.2.7", False), ("example.org", False)])
def test_is_loopback(host, loopback):
    assert cli_serve.is_loopback(host) is loopback


@pytest.mark.parametrize("protocol", ["blipmq", "vibemq", "rabbitmq-stream"])
def test_serve_refuses_default_credentials_off_loopback(protocol):
    """Refused before anything listens, so nothing is exposed by the test itself."""
    r = subprocess.run([sys.executable, "-m", "wirecheck", "serve", "--protocol", protocol,
                        "--host", "0.0.0.0", "--port", "0"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == cli_serve.EXIT_HARNESS
    assert "warning: listening on 0.0.0.0" in r.stderr
    assert "loopback only: give --api-key" in r.stderr


def test_serve_security_warns_but_allows_explicit_credentials_and_no_auth_protocols(capsys):
    from wirecheck.reference_impl.core import registry
    args = argparse.Namespace(host="0.0.0.0", api_key=["s3cret"])
    assert cli_serve._serve_security(registry.get("blipmq"), args, {}) is None
    assert cli_serve._serve_security(registry.get("vibemq"), args, {"require_auth": False})
    args = argparse.Namespace(host="0.0.0.0", api_key=None)
    assert cli_serve._serve_security(registry.get("signalr"), args, {}) is None
    err = capsys.readouterr().err
    assert "warning: listening on 0.0.0.0" in err and "signalr has no authentication" in err
    args = argparse.Namespace(host="127.0.0.1", api_key=None)
    assert cli_serve._serve_security(registry.get("rabbitmq-stream"), args, {}) is None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_listener_binds_loopback_by_default(protocol):
    from wirecheck.reference_impl.core import registry
    broker = registry.get(protocol).make_broker(port=0)
    threaded = ThreadedServer(broker).start()
    try:
        hosts = {broker.host}
        if hasattr(broker, "raw_port"):
            hosts.add(broker.server.host)
            http = broker._http.sockets[0].getsockname()[0]
            hosts.add(http)
        assert hosts == {"127.0.0.1"}
        assert broker.server._server.sockets[0].getsockname()[0] == "127.0.0.1"
    finally:
        threaded.stop()
