"""SignalR's protocol-level scenarios (wirecheck/conformance/clients/scripted/signalr.py): the reference client
(wirecheck/reference_impl/signalr/client.py) under each one copes (it sees what the scenario sent and
goes on, or, under ``close-message``, surfaces the error and ends the connection), with JSON
and MessagePack, over WebSocket (negotiate, then the upgrade) and over raw TCP; the checker
finds no violation by either side: the messages sent are legal server behaviour, and the
client's are right. @microsoft/signalr (when installed) runs under them too. A raw-socket
client that ignores the server's Close is reported as hung. The splitters are fed byte by
byte and checked against the units they must cut; a message of the scenario's own waits for
a record boundary; under the draft profile the scenarios stand aside.
"""
from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time

import pytest

from wirecheck.conformance.clients.scripted import scenarios_for
from wirecheck.conformance.clients.scripted.signalr import HTTP, RECORD, WS, HubSplitter, _Wire, padded, record_body
from wirecheck.conformance.target.websocket import encode_server_frame as _server_ws_frame
from tests.conformance.clients.test_scripted_framework import FakeRelay
from wirecheck.reference_impl.core.client import ConnectionClosed
from wirecheck.reference_impl.signalr import codec
from wirecheck.reference_impl.signalr.constants import DEFAULT_MAX_RECEIVE, JSON, MESSAGEPACK
from wirecheck.reference_impl.signalr.framing import encode_varint
from wirecheck.reference_impl.signalr.messages import (Close, Completion, HandshakeRequest,
                                             HandshakeResponse, Invocation, Ping, StreamItem)
from tests.conformance.clients.test_client_check import (JS_DIR, RUN_TIMEOUT, STEP, _assert_clean, _check, _checker,
                                     _run_async, _signalr_command, _summary)

PROTOCOLS = (JSON, MESSAGEPACK)
TRANSPORTS = ("ws", "tcp")
ERROR = "wirecheck scripted error"
CLOSE_ERROR = "wirecheck scripted close"


class _Seen:
    """What the client received: every message it dispatched, and whether the raw bytes held
    a given marker (the client's own API shows results, not headers or unknown fields)."""

    def __init__(self, client, marker: bytes) -> None:
        self.messages: list = []
        self.marked = False
        dispatch, recv = client._dispatch, client.transport.recv

        def seen_dispatch(message):
            self.messages.append(message)
            dispatch(message)

        async def seen_recv():
            data = await recv()
            if data is not None and marker in data:
                self.marked = True
            return data
        client._dispatch = seen_dispatch
        client.transport.recv = seen_recv


async def _connect(checker, protocol: str, transport: str):
    from wirecheck.reference_impl.signalr.client import HubClient
    if transport == "ws":
        url = f"http://127.0.0.1:{checker.port}{checker.hub_path}"
    else:
        url = f"tcp://127.0.0.1:{checker.raw_port}"
    client = await HubClient.connect(url, protocol, timeout=STEP)
    # JSON: the unknown property (an object), not only the header (a string)
    return client, _Seen(client, b'"x-wirecheck-unknown":{' if protocol == JSON else b"x-wirecheck-unknown")


async def _calls(client) -> dict:
    """The usual session's calls (tests/conformance/clients/test_client_check.py): single results, a server stream,
    a client stream, a fire-and-forget send proven by a later call."""
    echo = await client.invoke("Echo", "hello \u2713")
    stream = await client.stream("Counter", 3, 0)
    items = await asyncio.wait_for(stream.collect(), STEP)
    total = await client.invoke("Sum", streams=[[1, 2, 3, 4]])
    await client.send("Remember", "kept")
    recalled = await client.invoke("Recall")
    return {"echo": echo, "counter": items, "sum": total, "recall": recalled}


def _done(out: dict, client) -> dict:
    out["unexpected"] = list(client.unexpected)
    return out


async def ping(checker, protocol, transport, options) -> dict:
    client, seen = await _connect(checker, protocol, transport)
    try:
        out = await _calls(client)
        await asyncio.sleep(1.0)          # several Pings, between the answers and after them
        out["after"] = await client.invoke("Echo", "still here")
        out["pings"] = client.pings
        return _done(out, client)
    finally:
        await asyncio.wait_for(client.close(), STEP + 1)


async def error_response(checker, protocol, transport, options) -> dict:
    from wirecheck.reference_impl.signalr.client import HubError
    client, seen = await _connect(checker, protocol, transport)
    try:
        try:
            await client.invoke("Echo", "refused")          # the first Invocation
            refused = None
        except HubError as exc:
            refused = str(exc)
        out = await _calls(client)                          # the connection goes on
        out["refused"] = refused
        return _done(out, client)
    finally:
        await asyncio.wait_for(client.close(), STEP + 1)


async def unknown_fields(checker, protocol, transport, options) -> dict:
    client, seen = await _connect(checker, protocol, transport)
    try:
        out = await _calls(client)
        out["headers"] = sorted({k for m in seen.messages for k in (getattr(m, "headers", None) or {})})
        out["marked"] = seen.marked
        return _done(out, client)
    finally:
        await asyncio.wait_for(client.close(), STEP + 1)


async def max_size(checker, protocol, transport, options) -> dict:
    client, seen = await _connect(checker, protocol, transport)
    try:
        out = await _calls(client)
        first = next(m for m in seen.messages if isinstance(m, Completion))
        # the record as the client read it (the codec writes it back byte for byte)
        out["first_size"] = len(record_body(first, protocol))
        out["first_headers"] = sorted(first.headers or {})
        return _done(out, client)
    finally:
        await asyncio.wait_for(client.close(), STEP + 1)


async def close_message(checker, protocol, transport, options) -> dict:
    from wirecheck.reference_impl.signalr.client import HubError
    client, seen = await _connect(checker, protocol, transport)
    started = time.monotonic()
    try:
        echo = await client.invoke("Echo", "before")     # its Completion, then the Close
        close = await client.wait_closed(STEP)
        took = time.monotonic() - started
        try:
            await client.invoke("Echo", "after")
            after = "answered"
        except (HubError, ConnectionClosed) as exc:
            after = type(exc).__name__
        return {"echo": echo, "close": close, "after": after, "took": took,
                "reason": str(client.closed_reason), "unexpected": list(client.unexpected)}
    finally:
        await asyncio.wait_for(client.close(), STEP + 1)


SESSIONS = {"ping": ping, "error-response": error_response, "unknown-fields": unknown_fields,
            "max-size": max_size, "close-message": close_message}
USUAL = {"echo": "hello \u2713", "counter": [0, 1, 2], "sum": 10, "recall": "kept"}


def test_every_scenario_has_a_session():
    assert set(SESSIONS) == set(scenarios_for("signalr"))


def _run(scenario: str, protocol: str, transport: str, tmp_path, options=None):
    checker = _checker("signalr", scenario, options, tmp_path)
    session = SESSIONS[scenario]
    doc, out, _ = _check(checker, lambda c: _run_async(
        c, lambda ch: session(ch, protocol, transport, options)))
    _assert_clean(doc)
    assert doc["scenario"] == scenario
    # the hub connection: the WebSocket (after the negotiate connection), or the raw one
    conns = doc["connections"]
    assert len(conns) == (2 if transport == "ws" else 1), _summary(doc)
    conn = conns[-1]
    # the report says what the scenario did on the connection (the negotiate one: nothing)
    assert conn["scenario_actions"] and not any(c["scenario_actions"] for c in conns[:-1]), _summary(doc)
    assert all(a in t["message"] for t in doc["tests"] for a in conn["scenario_actions"]), _summary(doc)
    return doc, conn, out


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("scenario", sorted(SESSIONS))
def test_reference_client_copes(scenario, protocol, transport, tmp_path):
    doc, conn, out = _run(scenario, protocol, transport, tmp_path)
    assert out["unexpected"] == [], out
    if scenario == "close-message":
        assert out["echo"] == "before", out
        assert out["close"] == Close(CLOSE_ERROR, None), out
        assert CLOSE_ERROR in out["reason"] and out["after"] == "ConnectionClosed", out
        # the scenario ended the connection right after its Close; the client closed its side
        # and did not come back. The client ends it on the Close alone, so its FIN may even
        # come first (raw TCP: the two cross)
        assert conn["scenario_actions"] == [f"Close (error {CLOSE_ERROR!r})",
                                            "the server ends the connection"], _summary(doc)
        assert conn["outcome"] == "surfaced an error", _summary(doc)
        assert conn["behaviour"] in ("the server closed it; the client then closed its side",
                                     "the client closed it"), _summary(doc)
        return
    assert conn["outcome"] == "recovered", _summary(doc)
    assert {k: out[k] for k in USUAL} == USUAL, out
    if scenario == "ping":
        assert out["pings"] >= 3 and out["after"] == "still here", out
        assert conn["scenario_actions"][0].startswith("Ping"), _summary(doc)
    elif scenario == "error-response":
        assert out["refused"] == ERROR, out
    elif scenario == "unknown-fields":
        assert out["headers"] == ["x-wirecheck-unknown"], out
        assert out["marked"], out
    elif scenario == "max-size":
        assert out["first_size"] == DEFAULT_MAX_RECEIVE, out
        assert out["first_headers"] == ["x-wirecheck-padding"], out


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_max_size_over_64k(protocol, tmp_path):
    """A record over 65,535 bytes: a 64-bit WebSocket length and a 3-byte VarInt."""
    doc, conn, out = _run("max-size", protocol, "ws", tmp_path, {"size": 70_000})
    assert out["first_size"] == 70_000 and {k: out[k] for k in USUAL} == USUAL, out


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_close_message_the_client_ends_it(transport, tmp_path):
    """With ``linger`` the server waits: the client ends the connection on the Close alone,
    long before the server would, and reads allowReconnect."""
    options = {"linger": 3.0, "allow_reconnect": True}
    doc, conn, out = _run("close-message", MESSAGEPACK, transport, tmp_path, options)
    assert out["close"] == Close(CLOSE_ERROR, True), out
    assert out["took"] < 2.0, out
    # the scenario never had to end it (over the WebSocket the client's close frame makes the
    # broker answer and close too: whose FIN comes first is a race, and either is a close)
    assert conn["scenario_actions"] == [f"Close (error {CLOSE_ERROR!r}, allowReconnect True)"], _summary(doc)
    assert conn["outcome"] == "recovered", _summary(doc)
    if transport == "tcp":
        assert conn["behaviour"] == "the client closed it", _summary(doc)


# -- @microsoft/signalr, the real client ----------------------------------------------------------

JS_CASES = [(s, p) for s in ("ping", "unknown-fields", "max-size") for p in PROTOCOLS] + [
    ("error-response", JSON), ("close-message", MESSAGEPACK)]


@pytest.mark.parametrize("scenario,protocol", JS_CASES)
def test_microsoft_signalr_js(scenario, protocol, tmp_path):
    """The JS client (tests/support/signalr_js/client.mjs: Echo first, then the rest of its session)
    under the scenarios: it accepts the Pings, the unknown fields and the 32 KiB message; it
    surfaces the error Completion as Echo's error and the Close's error as the connection's
    (its driver stops at the first error, by design). No violation either way."""
    checker = _checker("signalr", scenario, None, tmp_path)

    def drive(c):
        command = _signalr_command("js", f"http://127.0.0.1:{c.port}{c.hub_path}", protocol)
        proc = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                              cwd=JS_DIR, stdin=subprocess.DEVNULL)
        lines = [line for line in proc.stdout.splitlines() if line.startswith(("RESULT ", "ERROR "))]
        assert lines, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        return proc.returncode, lines[-1], proc.stderr

    doc, (code, line, logged), _ = _check(checker, drive)
    _assert_clean(doc)
    conn = doc["connections"][-1]
    assert conn["scenario_actions"], _summary(doc)
    if scenario == "error-response":
        assert code == 1 and line == f"ERROR Error: {ERROR}", line     # the stack is on the next lines
        return
    if scenario == "close-message":
        # the call in flight fails with the Close's error, or (when the Close came between two
        # calls) the next one finds the connection stopped; the client logs why it stopped
        assert code == 1 and ("Server returned an error on close" in line
                              or "not in the 'Connected' State" in line), line
        assert f"Connection disconnected with error 'Error: Server returned an error on close: " \
               f"{CLOSE_ERROR}'" in logged, logged
        assert conn["outcome"] == "surfaced an error", _summary(doc)
        return
    assert code == 0, line
    result = json.loads(line[len("RESULT "):])
    assert result["echo"] == "hello \u2713" and result["sum"] == 10 and result["askme"] == 42, result
    assert result["closed_error"] is None, result


# -- negative control -------------------------------------------------------------------------

def test_a_client_that_ignores_the_close_hangs(tmp_path):
    """Negative control: a raw-TCP client that reads the Close and keeps its side open is
    reported (``hung``); the scenario's own messages break no rule."""
    checker = _checker("signalr", "close-message", None, tmp_path)
    held = []

    def drive(c):
        sock = socket.create_connection(("127.0.0.1", c.raw_port), timeout=STEP)
        held.append(sock)
        sock.sendall(codec.encode(HandshakeRequest(JSON, 1))
                     + codec.encode(Invocation("Echo", ["x"], "1"), JSON))
        got = b""
        deadline = time.monotonic() + STEP
        while b'"type":7' not in got and time.monotonic() < deadline:
            got += sock.recv(65536)
        return [json.loads(r) for r in got.split(b"\x1e") if r]
    try:
        doc, records, _ = _check(checker, drive)
    finally:
        for sock in held:
            sock.close()
    assert records[0] == {} and records[1]["type"] == 3, records
    assert records[-1] == {"type": 7, "error": CLOSE_ERROR}, records
    conn = doc["connections"][-1]
    assert conn["outcome"] == "hung", _summary(doc)
    assert conn["behaviour"] == "the server closed it and the client never closed its side", _summary(doc)
    assert doc["outcomes"] == {"hung": 1}
    assert conn["violations"] == 0 and doc["exitstatus"] == 0, _summary(doc)


# -- the splitters ----------------------------------------------------------------------------

def _cut(direction: str, stream: bytes, wire=None, step: int = 1):
    splitter = HubSplitter(direction, wire or _Wire())
    out = []
    for i in range(0, len(stream), step):
        out += splitter.feed(stream[i:i + step])
    return out, list(splitter.kinds), splitter


def _client_frame(opcode: int, payload: bytes) -> bytes:
    from wirecheck.conformance.target.websocket import encode_frame
    return encode_frame(opcode, payload)


@pytest.mark.parametrize("size", (5, 200, 70_000))
def test_websocket_units_byte_by_byte(size):
    """An upgrade and its frames (7-, 16- and 64-bit lengths), both directions, fed a byte at a
    time: each unit comes out whole, with its kind."""
    hub = codec.encode(HandshakeRequest(MESSAGEPACK, 1))
    payload = codec.encode(StreamItem("1", "y" * size), MESSAGEPACK)
    request = b"GET /hub?id=abc HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    units = [request, _client_frame(1, hub), _client_frame(2, payload), _client_frame(8, b"\x03\xe8")]
    step = 1 if size < 1000 else 997
    out, kinds, _ = _cut("c2s", b"".join(units), step=step)
    assert out == units
    assert [k[0] for k in kinds] == [HTTP, WS, WS, WS] and [k[1] for k in kinds[1:]] == [1, 2, 8]
    assert all(k[4] for k in kinds[1:])                                   # masked
    response = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    units = [response, _server_ws_frame(1, b"{}\x1e"), _server_ws_frame(2, payload)]
    out, kinds, _ = _cut("s2c", b"".join(units), step=step)
    assert out == units and [k[0] for k in kinds] == [HTTP, WS, WS] and not kinds[1][4]


def test_negotiate_and_the_upgrade_on_one_connection_byte_by_byte():
    """HTTP/1.1 keeps a connection for the next request: the negotiate and the upgrade on one
    (as signalr-async's aiohttp sends them) are cut as two HTTP units each way, then frames."""
    negotiate = b"POST /hub/negotiate?negotiateVersion=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
    upgrade = b"GET /hub?id=abc HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    hub = _client_frame(1, codec.encode(HandshakeRequest(JSON, 1)))
    out, kinds, splitter = _cut("c2s", negotiate + upgrade + hub)
    assert out == [negotiate, upgrade, hub] and not splitter.raw
    assert [k[0] for k in kinds] == [HTTP, HTTP, WS]
    body = b'{"negotiateVersion":1,"connectionToken":"abc"}'
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    switched = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    out, kinds, splitter = _cut("s2c", answer + switched + _server_ws_frame(1, b"{}\x1e"))
    assert out == [answer, switched, _server_ws_frame(1, b"{}\x1e")] and [k[0] for k in kinds] == [HTTP, HTTP, WS]


@pytest.mark.parametrize("head", [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
                                  b"HTTP/1.0 200 OK\r\n\r\n{}"], ids=["chunked", "until-close"])
def test_a_response_of_unknown_length_passes_as_it_comes(head):
    out, kinds, splitter = _cut("s2c", head)
    assert b"".join(out) == head and splitter.raw and kinds == []


def test_a_client_that_upgrades_on_the_negotiate_connection_is_scripted(tmp_path):
    """One aiohttp session for the negotiate and the WebSocket reuses the connection (as
    signalr-async does): the scenario plays on it (before, it was passed on unread and the
    scenario was NOT-RUN), and the client copes."""
    checker = _checker("signalr", "ping", None, tmp_path)

    async def session(c):
        import aiohttp
        from wirecheck.reference_impl.signalr.client import HubClient, _WebSocketTransport
        base = f"http://127.0.0.1:{c.port}{c.hub_path}"
        http = aiohttp.ClientSession()
        try:
            async with http.post(f"{base}/negotiate?negotiateVersion=1") as response:
                token = (await response.json(content_type=None))["connectionToken"]
            ws = await http.ws_connect(f"{base}?id={token}", compress=0, max_msg_size=0)
        except BaseException:
            await http.close()
            raise
        client = HubClient(_WebSocketTransport(http, ws), JSON, timeout=STEP)
        try:
            await client.handshake()
            out = await _calls(client)
            await asyncio.sleep(1.0)
            out["pings"] = client.pings
            return _done(out, client)
        finally:
            await asyncio.wait_for(client.close(), STEP + 1)
    doc, out, _ = _check(checker, lambda c: _run_async(c, session))
    _assert_clean(doc)
    [conn] = doc["connections"]                           # one TCP connection for both
    assert conn["scenario_actions"] and conn["scenario_actions"][0].startswith("Ping"), _summary(doc)
    assert out["pings"] >= 3 and {k: out[k] for k in USUAL} == USUAL, out


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_raw_tcp_records_byte_by_byte(protocol):
    """Raw TCP: the handshake record, then records in the protocol the client's handshake
    named (the client's side tells the server's), a 3-byte VarInt included."""
    wire = _Wire()
    client = [codec.encode(HandshakeRequest(protocol, 1)), codec.encode(Ping(), protocol),
              codec.encode(Invocation("Echo", ["z" * 20_000], "1"), protocol)]
    out, kinds, _ = _cut("c2s", b"".join(client), wire)
    assert out == client and kinds == [(RECORD,)] * 3 and wire.protocol == protocol
    server = [codec.encode(HandshakeResponse()),
              codec.encode(Completion.with_result("1", "z" * 20_000), protocol), codec.encode(Close("bye"), protocol)]
    out, kinds, _ = _cut("s2c", b"".join(server), wire)
    assert out == server and kinds == [(RECORD,)] * 3


def test_draft_handshake_is_left_alone():
    """A handshake without version (the draft's): Ping, Close and headers do not exist there,
    so the scenario passes everything as it comes."""
    wire = _Wire()
    stream = b'{"protocol":"json"}\x1e' + codec.encode(Invocation("Echo", ["x"], "1"), JSON)
    out, kinds, splitter = _cut("c2s", stream, wire)
    assert b"".join(out) == stream and wire.passive and splitter.raw


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("size", (100, 255, 256, 258, 300, 32_768, 65_535, 65_536, 65_540))
def test_padding_is_exact(protocol, size):
    message = Completion.with_result("17", "hello")
    body = padded(message, protocol, size)
    assert body is not None and len(body) == size
    back = codec.parse_record(body, protocol)
    assert back.result == "hello" and back.invocation_id == "17"
    assert padded(message, protocol, 10) is None                   # smaller than the message
    assert len(encode_varint(size)) <= 3


def _server_units(relay) -> list:
    """What reached the client, cut into WebSocket frames: (opcode, fin, payload)."""
    from wirecheck.conformance.target.websocket import FrameReader
    stream = b"".join(d for direction, d, _ in relay.out if direction == "s2c" and d)
    return FrameReader().feed(stream.partition(b"\r\n\r\n")[2] if stream.startswith(b"HTTP/") else stream)


def test_injected_messages_wait_for_a_record_boundary():
    """Over a WebSocket a message of the scenario's own goes between two whole server
    messages: never inside a fragmented message nor inside a record spanning frames. A frame
    whose records do not begin and end with it passes unchanged, rewritten or not."""
    from wirecheck.conformance.clients.scripted.signalr import UnknownFields, _HubShaper
    relay = FakeRelay()
    shaper = _HubShaper(relay, {})
    upgrade = b"GET /hub HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    shaper.client_data(upgrade + _client_frame(1, codec.encode(HandshakeRequest(JSON, 1))))
    assert shaper.protocol == JSON
    shaper.data(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"
                + _server_ws_frame(1, b"{}\x1e"))
    assert shaper.open
    first, second = (codec.encode(Completion.with_result(i, "r"), JSON) for i in ("1", "2"))
    # a message in two fragments (the first without FIN), the record cut in the middle
    shaper.data(bytes([0x01, 10]) + first[:10])
    shaper.inject(Ping())
    assert shaper.queued                         # held: inside a message and a record
    shaper.data(_server_ws_frame(0, first[10:]))
    assert not shaper.queued
    units = _server_units(relay)
    assert [(op, fin) for op, fin, _ in units] == [(1, True), (1, False), (0, True), (1, True)]
    assert units[-1][2] == codec.encode(Ping(), JSON)
    # a rewriting scenario leaves a frame alone when a record spans it
    relay.out.clear()
    rewriter = UnknownFields(relay, {})
    rewriter.client_data(upgrade + _client_frame(1, codec.encode(HandshakeRequest(JSON, 1))))
    rewriter.data(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"
                  + _server_ws_frame(1, b"{}\x1e"))
    spanning = _server_ws_frame(1, first + second[:5]), _server_ws_frame(1, second[5:])
    rewriter.data(b"".join(spanning))
    whole = _server_ws_frame(1, first)
    rewriter.data(whole)
    units = _server_units(relay)[1:]
    assert [p for _, _, p in units[:2]] == [first + second[:5], second[5:]]      # unchanged
    assert b'"x-wirecheck-unknown":{' in units[2][2] and json.loads(units[2][2][:-1])["result"] == "r"


@pytest.mark.parametrize("protocol,transport", [(MESSAGEPACK, "tcp"), (JSON, "ws")])
def test_the_draft_profile_is_left_alone(protocol, transport, tmp_path):
    """Under ``--profile draft`` (no handshake answer, no Ping, Close or headers) the scenarios
    do nothing but say so: the session passes as it comes, judged by the draft's rules."""
    from wirecheck.conformance.clients.serve_check import ClientChecker
    from wirecheck.reference_impl.core import registry
    from wirecheck.reference_impl.signalr.client import HubClient
    spec = registry.get("signalr")
    checker = ClientChecker(spec, spec.make_broker("127.0.0.1", 0, profile="draft"), scenario="ping",
                            profile="draft", capture_path=str(tmp_path / "c.pcap"))

    async def session(c):
        url = (f"http://127.0.0.1:{c.port}{c.hub_path}" if transport == "ws"
               else f"tcp://127.0.0.1:{c.raw_port}")
        client = await HubClient.connect(url, protocol, profile="draft", timeout=STEP)
        try:
            out = {"add": await client.invoke("Add", 1, 2)}
            await asyncio.sleep(0.5)
            out["pings"] = client.pings
            return out
        finally:
            await asyncio.wait_for(client.close(), STEP + 1)
    doc, out, _ = _check(checker, lambda c: _run_async(c, session))
    assert out == {"add": 3, "pings": 0}, out
    _assert_clean(doc)
    actions = doc["connections"][-1]["scenario_actions"]
    assert len(actions) == 1 and actions[0].startswith("scenario not played"), _summary(doc)
