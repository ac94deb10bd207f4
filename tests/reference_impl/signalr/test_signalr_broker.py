"""The SignalR reference hub server (wirecheck/reference_impl/signalr/broker.py) and client
(wirecheck/reference_impl/signalr/client.py): negotiate versions 0 and 1 and the request shapes of the
real clients (signalr-real-clients.md), token use and expiry, raw TCP and WebSocket, text vs
binary WebSocket messages, keep-alive and timeouts with small intervals. Every wait is bounded.
"""
from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest

from wirecheck.reference_impl.core.client import ConnectionClosed
from wirecheck.reference_impl.core.server import ThreadedServer
from wirecheck.reference_impl.signalr.broker import Negotiations, make_broker
from wirecheck.reference_impl.signalr.client import HubClient, HubError, negotiate
from wirecheck.reference_impl.signalr.codec import Decoder

STEP = 10.0
PROTOCOLS = ("json", "messagepack")


def run(coro, timeout: float = 30.0):
    return asyncio.run(asyncio.wait_for(coro, timeout))


@pytest.fixture
def hub(request):
    options = getattr(request, "param", {})
    with ThreadedServer(make_broker(**options)) as server:
        yield server.server


def addresses(broker) -> dict:
    return {"tcp": f"tcp://{broker.host}:{broker.raw_port}", "negotiate": broker.url,
            "skip": broker.url.replace("http://", "ws://")}


async def raw_http(host: str, port: int, request: bytes) -> tuple[int, dict, bytes]:
    """One HTTP/1.1 exchange on a fresh socket, bytes exactly as given (the real clients'
    header shapes); the server closes or the body is read by Content-Length."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), STEP)
    try:
        writer.write(request)
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), STEP)
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines if ln)}
        body = await asyncio.wait_for(reader.readexactly(int(headers.get("content-length", 0))), STEP)
        return int(status_line.split()[1]), headers, body
    finally:
        writer.close()


# --- negotiate ----------------------------------------------------------------------------------

def test_negotiate_v1_shape(hub):
    async def go():
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=STEP)) as s:
            async with s.post(hub.url + "/negotiate?negotiateVersion=1") as r:
                assert r.status == 200 and r.content_type == "application/json"
                return await r.json()
    body = run(go())
    assert set(body) == {"negotiateVersion", "connectionToken", "connectionId", "availableTransports"}
    assert body["negotiateVersion"] == 1
    assert body["connectionToken"] != body["connectionId"]
    assert body["availableTransports"] == [{"transport": "WebSockets",
                                            "transferFormats": ["Text", "Binary"]}]


@pytest.mark.parametrize("query", ["", "?negotiateVersion=0"])
def test_negotiate_v0_shape(hub, query):
    async def go():
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=STEP)) as s:
            async with s.post(hub.url + "/negotiate" + query) as r:
                assert r.status == 200
                return await r.json()
    body = run(go())
    assert "connectionToken" not in body
    assert body["negotiateVersion"] == 0 and isinstance(body["connectionId"], str)
    assert body["availableTransports"][0]["transport"] == "WebSockets"


# The three real clients' negotiate requests (signalr-real-clients.md, "Negotiate").
REAL_NEGOTIATES = {
    "@microsoft/signalr": (b"POST /hub/negotiate?negotiateVersion=1 HTTP/1.1\r\nHost: {host}\r\n"
                           b"content-length: 0\r\nX-Requested-With: XMLHttpRequest\r\naccept: */*\r\n"
                           b"accept-language: *\r\nsec-fetch-mode: cors\r\ncache-control: max-age=0\r\n"
                           b"Connection: close\r\n\r\n", 1),
    "pysignalr": (b"POST /hub/negotiate HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream\r\n"
                  b"Content-Length: 0\r\nUser-Agent: Python/3.11 aiohttp/3.14.5\r\nConnection: close\r\n\r\n", 0),
    "signalrcore": (b"POST /hub/negotiate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 0\r\nUser-Agent: Python-urllib/3.11\r\nConnection: close\r\n\r\n", 0),
}


@pytest.mark.parametrize("client", sorted(REAL_NEGOTIATES))
def test_negotiate_accepts_each_real_clients_request(hub, client):
    template, version = REAL_NEGOTIATES[client]
    request = template.replace(b"{host}", f"{hub.host}:{hub.port}".encode())
    status, headers, body = run(raw_http(hub.host, hub.port, request))
    assert status == 200, body
    assert json.loads(body)["negotiateVersion"] == version


def test_negotiate_rejects_a_bad_version_and_get(hub):
    async def go():
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=STEP)) as s:
            async with s.post(hub.url + "/negotiate?negotiateVersion=x") as r:
                bad = r.status
            async with s.get(hub.url + "/negotiate") as r:
                get = r.status
            async with s.get(hub.url) as r:                      # not a WebSocket upgrade
                plain = r.status
        return bad, get, plain
    assert run(go()) == (400, 405, 400)


# --- connection ids -----------------------------------------------------------------------------

async def _ws_status(url: str) -> int:
    """The HTTP status of a WebSocket upgrade to ``url`` (101 when it succeeds)."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=STEP)) as s:
        try:
            async with s.ws_connect(url) as ws:
                await ws.close()
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


def test_unknown_id_is_404(hub):
    assert run(_ws_status(hub.url.replace("http", "ws") + "?id=nobody")) == 404


@pytest.mark.parametrize("version", [0, 1])
def test_token_is_single_use(hub, version):
    async def go():
        url, body = await negotiate(hub.url, version, STEP)
        if version == 1:
            assert url.endswith("id=" + body["connectionToken"])
        else:
            assert url.endswith("id=" + body["connectionId"])
        client = await HubClient.connect(url, "json", timeout=STEP)
        assert await client.invoke("Add", 1, 2) == 3
        await client.close()
        return await _ws_status(url)
    assert run(go()) == 404


def test_negotiated_token_expires(hub_ttl):
    async def go():
        url, _ = await negotiate(hub_ttl.url, 1, STEP)
        await asyncio.sleep(0.4)                  # > negotiate_ttl: nobody claimed it in time
        return await _ws_status(url)
    assert run(go()) == 404


@pytest.fixture
def hub_ttl():
    with ThreadedServer(make_broker(negotiate_ttl=0.2)) as server:
        yield server.server


def test_negotiations_table_expiry_and_bound():
    now = [100.0]
    table = Negotiations(ttl=5.0, limit=2, clock=lambda: now[0])
    assert table.add("a", "id-a") and table.add("b", "id-b")
    assert not table.add("c", "id-c")             # bounded: the third waits for room
    assert table.claim("a") == "id-a" and table.claim("a") is None     # single use
    now[0] += 5.0                                 # "b" expires
    assert table.claim("b") is None and len(table) == 0
    assert table.add("c", "id-c") and table.claim("c") == "id-c"


def test_too_many_pending_negotiations_is_503():
    with ThreadedServer(make_broker(max_pending=1)) as server:
        hub = server.server

        async def go():
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=STEP)) as s:
                statuses = []
                for _ in range(2):
                    async with s.post(hub.url + "/negotiate") as r:
                        statuses.append(r.status)
                return statuses
        assert run(go()) == [200, 503]


@pytest.mark.parametrize("query", ["", "?connectionId=q+/Zm9v9Aa==", "?connectionId=abc"])
def test_skip_negotiation_paths(hub, query):
    """``GET /hub`` (JS, pysignalr) and signalrcore's ``?connectionId=<raw base64>``."""
    async def go():
        client = await HubClient.connect(hub.url.replace("http", "ws") + query, "json", timeout=STEP)
        try:
            return await client.invoke("Echo", "skip")
        finally:
            await client.close()
    assert run(go()) == "skip"


# --- both transports, both protocols ------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("way", ["tcp", "negotiate", "skip"])
def test_every_kind_of_call(hub, way, protocol):
    async def go():
        client = await HubClient.connect(addresses(hub)[way], protocol, timeout=STEP)
        seen = []
        client.on("Hello", lambda arg: seen.append(arg))
        client.on("Double", lambda arg: arg * 2)
        try:
            assert await client.invoke("Echo", "h\u00e9 \u2713") == "h\u00e9 \u2713"
            assert await client.invoke("Add", 40, 2) == 42
            assert await client.invoke("Nothing") is None
            assert await client.invoke("Batched", 3) == [0, 1, 2]
            assert await (await client.stream("Counter", 4, 0)).collect() == [0, 1, 2, 3]
            assert await client.invoke("Sum", streams=[[1, 2, 3, 4]]) == 10

            async def numbers():
                for n in range(5):
                    yield n
            assert await client.invoke("Sum", streams=[numbers()]) == 10
            await client.send("Remember", {"k": [1, 2]})
            assert await client.invoke("Recall") == {"k": [1, 2]}
            with pytest.raises(HubError, match="boom"):
                await client.invoke("Fail", "boom")
            stream = await client.stream("StreamFailure", 2)
            items = []
            with pytest.raises(HubError, match="Ran out of data"):
                async for item in stream:
                    items.append(item)
            assert items == [0, 1]
            assert await client.invoke("CallMe", "Hello", 7) is True and seen == [7]
            assert await client.invoke("AskMe", "Double", 21) == 42
            with pytest.raises(HubError):
                await client.invoke("AskMe", "NoSuchHandler", 1)     # client answers an error
        finally:
            await client.close()
    run(go())


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("way", ["tcp", "skip"])
def test_cancel_endless_stream(hub, way, protocol):
    async def go():
        client = await HubClient.connect(addresses(hub)[way], protocol, timeout=STEP)
        try:
            stream = await client.stream("Endless", 1)
            got = [await stream.__anext__() for _ in range(3)]
            await stream.cancel()
            assert got == [0, 1, 2]
            assert await client.invoke("Echo", "barrier") == "barrier"   # still served
        finally:
            await client.close()
    run(go())


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_websocket_message_kinds_and_one_record_per_message(hub, protocol):
    """Text messages for JSON; binary for MessagePack, its handshake response included; each
    message carries exactly one record."""
    async def go():
        client = await HubClient.connect(addresses(hub)["skip"], protocol, timeout=STEP)
        try:
            assert await (await client.stream("Counter", 5, 0)).collect() == list(range(5))
            return list(client.transport.kinds)
        finally:
            await client.close()
    kinds = run(go())
    assert len(kinds) == 1 + 5 + 1                # handshake, 5 items, completion
    assert set(kinds) == {"binary" if protocol == "messagepack" else "text"}


@pytest.mark.parametrize("handshake_kind", ["text", "binary"])
def test_raw_websocket_messages(hub, handshake_kind):
    """The handshake as a text (JS) or binary (pysignalr, signalrcore) message; each answer is
    one WebSocket message holding one whole record."""
    async def go():
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=STEP)) as s:
            async with s.ws_connect(hub.url.replace("http", "ws")) as ws:
                hello = b'{"protocol": "json", "version": 1}\x1e'
                await (ws.send_str(hello.decode()) if handshake_kind == "text" else ws.send_bytes(hello))
                await ws.send_str('{"type":1,"invocationId":"1","target":"Batched","arguments":[2]}\x1e'
                                  '{"type":4,"invocationId":"2","target":"Counter","arguments":[2,0]}\x1e')
                messages = []
                while len(messages) < 4:
                    msg = await asyncio.wait_for(ws.receive(), STEP)
                    assert msg.type == aiohttp.WSMsgType.TEXT, msg
                    messages.append(msg.data)
                await ws.close()
                return messages
    messages = run(go())
    assert messages[0] == "{}\x1e"
    assert all(m.count("\x1e") == 1 and m.endswith("\x1e") for m in messages)
    decoded = [json.loads(m[:-1]) for m in messages[1:]]
    assert decoded[0] == {"type": 3, "invocationId": "1", "result": [0, 1]}
    assert [d["type"] for d in decoded[1:]] == [2, 2]


def test_handshake_refused_over_websocket(hub):
    async def go():
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=STEP)) as s:
            async with s.ws_connect(hub.url.replace("http", "ws")) as ws:
                await ws.send_str('{"protocol":"xml","version":1}\x1e')
                first = await asyncio.wait_for(ws.receive(), STEP)
                second = await asyncio.wait_for(ws.receive(), STEP)
                return first, second
    first, second = run(go())
    assert first.type == aiohttp.WSMsgType.TEXT and "error" in json.loads(first.data[:-1])
    assert second.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)


# --- timers -------------------------------------------------------------------------------------

@pytest.mark.parametrize("hub", [{"keep_alive_interval": 0.2}], indirect=True)
@pytest.mark.parametrize("way", ["tcp", "skip"])
def test_keep_alive_ping(hub, way):
    async def go():
        client = await HubClient.connect(addresses(hub)[way], "json", timeout=STEP)
        try:
            started = time.monotonic()
            await client.wait_for_ping(2.0)
            await client.wait_for_ping(2.0)
            return time.monotonic() - started
        finally:
            await client.close()
    assert run(go()) >= 0.2


@pytest.mark.parametrize("hub", [{"client_timeout": 0.4, "keep_alive_interval": 0.1}], indirect=True)
@pytest.mark.parametrize("way", ["tcp", "skip"])
def test_client_timeout(hub, way):
    """A silent client is dropped after client_timeout; one that pings is kept."""
    async def go():
        quiet = await HubClient.connect(addresses(hub)[way], "json", timeout=STEP)
        talker = await HubClient.connect(addresses(hub)[way], "messagepack", timeout=STEP)
        try:
            started = time.monotonic()
            while time.monotonic() - started < 1.0:
                await talker.ping()
                await asyncio.sleep(0.1)
            await quiet.wait_closed(3.0)
            assert quiet.closed
            assert await talker.invoke("Echo", "alive") == "alive"
        finally:
            await quiet.close()
            await talker.close()
    run(go())


@pytest.mark.parametrize("hub", [{"handshake_timeout": 0.3}], indirect=True)
@pytest.mark.parametrize("way", ["tcp", "skip"])
def test_handshake_timeout(hub, way):
    async def go():
        client = await HubClient.connect(addresses(hub)[way], "json", timeout=STEP, handshake=False)
        try:
            await client.wait_closed(3.0)
            with pytest.raises(ConnectionClosed):
                await client.ping()
        finally:
            await client.abort()
    run(go())


# --- client behaviour ---------------------------------------------------------------------------

def test_client_close_sends_close(hub):
    async def go():
        client = await HubClient.connect(addresses(hub)["skip"], "messagepack", timeout=STEP)
        await client.invoke("Echo", "x")
        await client.close()
    run(go())
    deadline = time.monotonic() + STEP
    while hub.websockets and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not hub.websockets
    assert hub.finished[-1].closed and hub.finished[-1].errors == []


def test_client_waits_are_bounded():
    """A server that accepts and never answers: the handshake wait times out."""
    async def go():
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            started = time.monotonic()
            with pytest.raises(asyncio.TimeoutError):
                await HubClient.connect(f"127.0.0.1:{port}", "json", timeout=0.3)
            return time.monotonic() - started
        finally:
            server.close()
    assert run(go()) < 3.0


@pytest.mark.parametrize("way", ["tcp", "skip"])
def test_server_stop_fails_pending_calls(way):
    """The hub stops while a stream is being read: the reader fails at once (no hang)."""
    server = ThreadedServer(make_broker()).start()

    async def go():
        client = await HubClient.connect(addresses(server.server)[way], "json", timeout=STEP)
        stream = await client.stream("Endless", 50)
        await stream.__anext__()
        await asyncio.get_running_loop().run_in_executor(None, server.stop, STEP)
        started = time.monotonic()
        with pytest.raises((ConnectionClosed, HubError)):
            async for _ in stream:
                pass
        await client.abort()
        return time.monotonic() - started
    try:
        assert run(go()) < 5.0
    finally:
        if server._thread.is_alive():
            server.stop()


def test_decoder_reads_server_side_with_known_protocol():
    decoder = Decoder(origin="server", protocol="messagepack")
    assert [type(m).__name__ for m in decoder.feed(b"{}\x1e\x02\x91\x06")] == ["HandshakeResponse", "Ping"]


# --- factory ------------------------------------------------------------------------------------

def test_make_broker_ports_and_options():
    assert make_broker(port=5200).raw_port == 5201
    assert make_broker(port=5200, raw_port=6000).raw_port == 6000
    assert make_broker(keep_alive_interval=1.0).config.session.keep_alive_interval == 1.0
    assert make_broker(profile="draft").config.session.profile == "draft"
    with pytest.raises(ValueError, match="no_such_option"):
        make_broker(no_such_option=1)
    with ThreadedServer(make_broker()) as server:
        broker = server.server
        assert broker.port and broker.raw_port and broker.port != broker.raw_port
        assert broker.url == f"http://127.0.0.1:{broker.port}/hub"


def test_stop_with_open_websockets_is_prompt():
    server = ThreadedServer(make_broker()).start()
    hub = server.server

    async def open_one():
        return await HubClient.connect(addresses(hub)["skip"], "json", timeout=STEP)

    loop = asyncio.new_event_loop()
    try:
        client = loop.run_until_complete(asyncio.wait_for(open_one(), STEP))
        started = time.monotonic()
        server.stop(timeout=STEP)
        assert time.monotonic() - started < 5.0
        loop.run_until_complete(client.wait_closed(STEP))
        loop.run_until_complete(client.abort())
    finally:
        loop.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("way", ["tcp", "skip"])
def test_draft_profile(way, protocol):
    """The document as written: no handshake answer, no Ping, streams end with
    StreamCompletion, non-blocking calls carry ``nonblocking: true``."""
    with ThreadedServer(make_broker(profile="draft", keep_alive_interval=0.1)) as server:
        async def go():
            client = await HubClient.connect(addresses(server.server)[way], protocol,
                                             profile="draft", timeout=STEP)
            try:
                assert await client.invoke("Add", 1, 2) == 3
                assert await (await client.stream("Counter", 3, 0)).collect() == [0, 1, 2]
                with pytest.raises(HubError, match="Ran out of data"):
                    await (await client.stream("StreamFailure", 1)).collect()
                await client.send("Remember", 5)
                assert await client.invoke("Recall") == 5
                await asyncio.sleep(0.3)              # three keep-alive intervals: no Ping
                assert client.pings == 0
            finally:
                await client.close()
        run(go())


def test_cli_serve_prints_and_serves_both_transports(tmp_path):
    """``wirecheck serve --protocol signalr``: HTTP/WebSocket on --port, raw TCP beside it."""
    import os
    import re
    import signal
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, "-m", "wirecheck", "serve", "--protocol", "signalr",
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    try:
        lines = []
        deadline = time.monotonic() + 30
        while len(lines) < 2 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
        match = re.search(r"serving (http://\S+) and raw TCP on (\S+)", "".join(lines))
        assert match, (lines, proc.stderr.read() if proc.poll() is not None else "")
        url, raw = match.groups()

        async def go():
            for address in (url, f"tcp://{raw}"):
                client = await HubClient.connect(address, "messagepack", timeout=STEP)
                assert await client.invoke("Add", 2, 2) == 4
                await client.close()
        run(go())
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.slow
def test_websocket_peer_that_stops_reading_is_bounded_then_dropped():
    """A fast server stream to a peer that never reads: the queue of unsent records stays near
    the high-water mark (the stream waits), and the stalled send aborts the connection."""
    import base64
    import os
    import socket
    high_water = 64 * 1024
    with ThreadedServer(make_broker(write_high_water=high_water, write_timeout=1.0)) as server:
        hub = server.server
        sock = socket.create_connection((hub.host, hub.port), timeout=STEP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            key = base64.b64encode(os.urandom(16)).decode()
            sock.sendall(f"GET /hub HTTP/1.1\r\nHost: {hub.host}\r\nUpgrade: websocket\r\n"
                         f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                         f"Sec-WebSocket-Version: 13\r\n\r\n".encode())
            assert sock.recv(12) == b"HTTP/1.1 101"

            def text_frame(text: str) -> bytes:          # masked with a zero key, < 126 bytes
                data = text.encode()
                return bytes([0x81, 0x80 | len(data)]) + b"\0\0\0\0" + data
            sock.sendall(text_frame('{"protocol":"json","version":1}\x1e'))
            sock.sendall(text_frame('{"type":4,"invocationId":"1","target":"Counter",'
                                    '"arguments":[1000000,0]}\x1e'))
            # The kernel's socket buffers (megabytes) fill first: about 8 s alone, longer on a
            # loaded machine.
            deadline = time.monotonic() + 60
            peak = 0
            while time.monotonic() < deadline:
                conns = list(hub.websockets)
                if not conns and hub.finished:
                    break
                peak = max([peak] + [c._queued for c in conns])
                time.sleep(0.01)
            assert not hub.websockets, "the stalled WebSocket was never dropped"
            # at most the mark plus one tick's batch (256 items of a few dozen bytes)
            assert peak <= high_water + 256 * 64, peak
        finally:
            sock.close()
