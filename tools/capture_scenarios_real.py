"""Capture scenarios with real SignalR clients, recorded by tools/record_captures.py.

Each scenario runs one real client library against the reference hub through the recording
relay (``http://127.0.0.1:PORT/hub``: negotiate over HTTP, then the WebSocket). The client runs
in its own process with a hard timeout. The capture holds what that library really puts on the
wire, including its quirks and protocol violations (signalr-real-clients.md):

- ``real-js-json``, ``real-js-messagepack``: @microsoft/signalr (+ signalr-protocol-msgpack)
  on node, installed by ``make signalr-clients``;
- ``real-pysignalr``: pysignalr over JSON. It has no stop: the session ends with a WebSocket
  close 1011 and no SignalR Close;
- ``real-signalrcore-json``: signalrcore. Its ``stop()`` closes the socket's descriptor and
  sends nothing. Whether the TCP connection ends at once (FIN) depends on a race with its
  receive thread: if that thread is already blocked in ``recv()``, the connection ends (RST)
  only after the hub's next frame, the keep-alive Ping 15 s later. Both endings replay as
  equivalent. The default hub is kept so that the capture replays against a plain
  ``wirecheck serve``, which has no keep-alive option;
- ``real-signalrcore-messagepack``: signalrcore's MessagePack client stream is malformed (the
  Invocation lacks the invocationId slot; the stream end lacks the ResultKind), and the hub
  closes that connection with an error.

The clients are driven by the project's own drivers, the ones tests/reference_impl/signalr/test_signalr_real_clients.py
runs (tests/support/signalr_js/client.mjs, tests/support/signalr_py/*_client.py), with negotiation. Each driver
prints one ``RESULT <json>`` line. It is checked here, so a capture is written only of a session
that went the way that client's sessions go.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from typing import Callable

from tools.record_captures import Scenario

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JS_DIR = os.path.join(ROOT, "tests", "support", "signalr_js")
PY_DIR = os.path.join(ROOT, "tests", "support", "signalr_py")
#: Hard limit on one client process. The drivers bound each step at 10 s; signalrcore's stop()
#: waits up to the hub's keep-alive interval (15 s).
RUN_TIMEOUT = 40

#: What every driver's session returns (tests/reference_impl/signalr/test_signalr_real_clients.py, COMMON).
COMMON = {"echo": "hello \u2713", "add": 5, "counter": [0, 1, 2, 3, 4], "recall": "fire-and-forget"}
#: And per client (see each driver's docstring for why they differ).
JS_RESULT = {"sum": 10, "fail": "boom", "callme": 7, "askme": 42, "closed_error": None,
             "state": "Disconnected"}
PYSIGNALR_RESULT = {"fail": {"error": "boom"}, "callme": [7], "askme": 42, "sum_completions": [],
                    "after_sum": "still open"}
SIGNALRCORE_JSON_RESULT = {"fail": {"error": "boom"}, "callme": [7], "after_sum": "still open",
                           "closed_by_server": False}
SIGNALRCORE_MSGPACK_RESULT = {"fail": {"error": "boom"}, "callme": [7], "closed_by_server": True}


# -- versions, for the manifest ----------------------------------------------------------------

def _npm_version(package: str) -> str:
    path = os.path.join(JS_DIR, "node_modules", *package.split("/"), "package.json")
    try:
        with open(path) as fh:
            return json.load(fh)["version"]
    except (OSError, ValueError, KeyError):
        return "(not installed: make signalr-clients)"


def _node_version() -> str:
    node = shutil.which("node")
    if node is None:
        return "(not installed)"
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return "(version unknown)"
    return out.stdout.strip().lstrip("v") or "(version unknown)"


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _js_client() -> str:
    return (f"@microsoft/signalr {_npm_version('@microsoft/signalr')} + "
            f"@microsoft/signalr-protocol-msgpack {_npm_version('@microsoft/signalr-protocol-msgpack')}"
            f" on node {_node_version()} (tests/support/signalr_js/client.mjs)")


def _py_client(name: str, uses: tuple[str, ...] = ()) -> str:
    libs = ", ".join(f"{lib} {_dist_version(lib) or '(not installed)'}" for lib in uses)
    return (f"{name} {_dist_version(name) or '(not installed)'}" + (f" with {libs}" if libs else "")
            + f" (tests/support/signalr_py/{name}_client.py)")


# -- running a driver --------------------------------------------------------------------------

def _drive(command: list[str], cwd: str, want: dict,
           check: Callable[[dict], str | None] | None = None) -> None:
    """Run one driver to its end; raise unless its RESULT line has ``COMMON`` and ``want``
    and ``check`` finds nothing wrong."""
    script = os.path.basename(command[1])
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=cwd,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"{script} did not finish within {RUN_TIMEOUT} s") from exc
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{script} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n"
                           f"{proc.stderr[-3000:]}")
    result = json.loads(lines[-1][len("RESULT "):])
    wrong = {key: result.get(key) for key, value in {**COMMON, **want}.items() if result.get(key) != value}
    problem = f"unexpected {wrong}" if wrong else (check(result) if check is not None else None)
    if problem:
        raise RuntimeError(f"{script}: {problem}; the whole result: {result}")


def _js(protocol: str) -> Callable[[str, int, str | None], None]:
    def run(host: str, port: int, url: str | None) -> None:
        node = shutil.which("node")
        if node is None or not os.path.isdir(os.path.join(JS_DIR, "node_modules", "@microsoft",
                                                          "signalr-protocol-msgpack")):
            raise RuntimeError("node or the npm packages are missing: run `make signalr-clients`")
        _drive([node, os.path.join(JS_DIR, "client.mjs"), url, protocol, "no"], JS_DIR, JS_RESULT)
    return run


def _python(client: str, protocol: str, want: dict, check=None) -> Callable[[str, int, str | None], None]:
    def run(host: str, port: int, url: str | None) -> None:
        if _dist_version(client) is None:
            raise RuntimeError(f"{client} is not installed in {sys.executable}")
        _drive([sys.executable, os.path.join(PY_DIR, f"{client}_client.py"), url, protocol, "no"],
               ROOT, want, check)
    return run


def _refused_sum(result: dict) -> str | None:
    # The hub closed on the malformed Sum: the barrier call after it cannot have succeeded.
    return None if "failed" in str(result.get("after_sum")) else "the barrier call after Sum succeeded"


_SESSION = "Echo, Add, Counter server stream, Remember + Recall, Fail"

SCENARIOS: dict[str, list[Scenario]] = {"signalr": [
    Scenario("real-js-json",
             f"@microsoft/signalr, JSON: negotiate v1; {_SESSION}, Sum client stream (result), "
             "CallMe, AskMe (client result); stop() (SignalR Close, WebSocket close)",
             _js_client(), _js("json")),
    Scenario("real-js-messagepack",
             f"@microsoft/signalr, MessagePack: negotiate v1; {_SESSION}, Sum client stream (result), "
             "CallMe, AskMe (client result); stop() (SignalR Close, WebSocket close)",
             _js_client(), _js("messagepack")),
    Scenario("real-pysignalr",
             f"pysignalr, JSON: negotiate v0; {_SESSION}, CallMe, AskMe (client result), Sum client "
             "stream without invocationId, Echo; cancelled run() (WebSocket close 1011, no SignalR Close)",
             _py_client("pysignalr", ("aiohttp", "websockets")),
             _python("pysignalr", "json", PYSIGNALR_RESULT)),
    Scenario("real-signalrcore-json",
             f"signalrcore, JSON: negotiate v0, handshake version 0; {_SESSION}, CallMe, Sum client "
             "stream without invocationId, Echo; stop() (no Close: FIN at once, or RST after the hub's "
             "next Ping, 15 s later)",
             _py_client("signalrcore"), _python("signalrcore", "json", SIGNALRCORE_JSON_RESULT)),
    Scenario("real-signalrcore-messagepack",
             f"signalrcore, MessagePack: negotiate v0, handshake version 0; {_SESSION}, CallMe; then "
             "a malformed Sum client stream (no invocationId slot, stream end without ResultKind) "
             "that the hub refuses with Close",
             _py_client("signalrcore"),
             _python("signalrcore", "messagepack", SIGNALRCORE_MSGPACK_RESULT, _refused_sum),
             malformed_client=True),
]}
