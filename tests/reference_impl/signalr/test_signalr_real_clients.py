"""The real SignalR clients against the reference hub (HTTP + WebSocket), each in its own
process with a hard timeout: @microsoft/signalr 10.0.11 (+ signalr-protocol-msgpack) on node,
pysignalr 1.3.3 and signalrcore 1.0.2; x {json, messagepack} x {negotiate, skipNegotiation}.

Each driver (tests/support/signalr_js/client.mjs, tests/support/signalr_py/*.py) runs Echo, Add, a server
stream, a client stream, a fire-and-forget call checked with Recall, an error, server-to-client
calls and a stop, and prints its results as JSON. Where a client is itself broken
(signalr-real-clients.md), the test asserts what the hub must do about it and says why.
`make signalr-clients` (part of `make test`) installs the npm packages.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from wirecheck.reference_impl.core.server import ThreadedServer
from wirecheck.reference_impl.signalr.broker import make_broker

SUPPORT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "support")
JS_DIR = os.path.join(SUPPORT, "signalr_js")
PY_DIR = os.path.join(SUPPORT, "signalr_py")
#: Hard limit per client run; each driver bounds its own steps at 10 s.
RUN_TIMEOUT = 90

CLIENTS = ("js", "pysignalr", "signalrcore")
PROTOCOLS = ("json", "messagepack")
NEGOTIATION = ("negotiate", "skip")


def _command(client: str, url: str, protocol: str, skip: bool) -> list[str]:
    flag = "yes" if skip else "no"
    if client == "js":
        node = shutil.which("node")
        if node is None or not os.path.isdir(os.path.join(JS_DIR, "node_modules", "@microsoft",
                                                          "signalr-protocol-msgpack")):
            pytest.skip("node or the npm packages are missing: run `make signalr-clients`")
        return [node, os.path.join(JS_DIR, "client.mjs"), url, protocol, flag]
    pytest.importorskip(client)
    return [sys.executable, os.path.join(PY_DIR, f"{client}_client.py"), url, protocol, flag]


#: Keep-alive of the hub for signalrcore. Its stop() closes the socket's file descriptor while
#: its receive thread is blocked in recv(): on Linux that neither wakes the thread nor closes
#: the TCP connection, so stop() (which joins the thread) hangs until the next frame from the
#: hub, the keep-alive Ping (15 s by default). A short interval keeps the run short, and shows
#: that the hub's Ping is what ends the stall.
SIGNALRCORE_KEEP_ALIVE = 1.0


@pytest.fixture
def hub(client):
    options = {"keep_alive_interval": SIGNALRCORE_KEEP_ALIVE} if client == "signalrcore" else {}
    with ThreadedServer(make_broker(**options)) as server:
        yield server.server


def _run(command: list[str]) -> dict:
    proc = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          cwd=JS_DIR, stdin=subprocess.DEVNULL)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (
        f"exit {proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def _ended_sessions(broker, timeout: float = 5.0) -> list:
    """The sessions of the run, once the hub has seen every WebSocket end."""
    deadline = time.monotonic() + timeout
    while broker.websockets and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not broker.websockets, "a WebSocket stayed open after the client exited"
    return list(broker.finished)


COMMON = {"echo": "hello \u2713", "add": 5, "counter": [0, 1, 2, 3, 4], "recall": "fire-and-forget"}


@pytest.mark.parametrize("negotiation", NEGOTIATION)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("client", CLIENTS)
def test_real_client(hub, client, protocol, negotiation):
    result = _run(_command(client, hub.url, protocol, negotiation == "skip"))
    for key, want in COMMON.items():
        assert result[key] == want, (key, result)
    sessions = _ended_sessions(hub)
    assert sessions and all(s.protocol == protocol for s in sessions), [s.protocol for s in sessions]

    if client == "js":
        assert result["sum"] == 10                        # Invocation with id + streamIds
        assert result["fail"] == "boom"
        assert result["callme"] == 7 and result["askme"] == 42
        assert result["closed_error"] is None and result["state"] == "Disconnected"
        assert all(not s.errors for s in sessions), [s.errors for s in sessions]
        return

    assert result["fail"] == {"error": "boom"}
    if client == "pysignalr":
        assert result["callme"] == [7] and result["askme"] == 42
        # pysignalr sends the client-stream Invocation without an invocationId (a non-blocking
        # call), so Sum's result must NOT come back: no Completion arrived between the upload
        # and the barrier call, which the hub answered on the same, still open, connection.
        assert result["sum_completions"] == []
        assert result["after_sum"] == "still open"
        # pysignalr has no stop: cancelling run() drops the socket (1011), no SignalR Close;
        # that is not a protocol error for the hub.
        assert all(not s.errors for s in sessions), [s.errors for s in sessions]
        return

    # signalrcore
    # The hub writes a server-to-client MessagePack Invocation with 6 items (an empty streamIds,
    # as ASP.NET Core does); signalrcore's reader indexes item 5, so with 5 it would drop the call.
    assert result["callme"] == [7]
    if protocol == "json":
        # The JSON client stream is well formed but id-less (non-blocking): no result, and the
        # connection stays open (the barrier call is answered).
        assert result["after_sum"] == "still open" and result["closed_by_server"] is False
        assert all(not s.errors for s in sessions), [s.errors for s in sessions]
    else:
        # signalrcore's MessagePack client stream is malformed ([1, {}, "Sum", [], [id]]: the
        # invocationId slot is missing; its end [3, {}, id] lacks the ResultKind). The hub must
        # refuse it: a Close with an error, then the connection ends; the barrier call fails.
        assert result["closed_by_server"] is True, result
        assert "failed" in result["after_sum"], result
        refused = [s for s in sessions if s.errors]
        assert len(refused) == 1, [s.errors for s in sessions]
        assert all(category != "TIMEOUT" for category, _ in refused[0].errors), refused[0].errors
