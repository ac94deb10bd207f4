"""The SignalR reference client (asyncio), for both transports and both hub protocols.

Addresses:

- ``tcp://HOST:PORT`` or ``HOST:PORT``: raw TCP, the document's hub protocol on a plain stream;
- ``http(s)://HOST:PORT/PATH``: ``POST PATH/negotiate?negotiateVersion=N`` then a WebSocket to
  ``PATH?id=<connectionToken>`` (version 1) or ``?id=<connectionId>`` (version 0), as the real
  clients do (SPEC_NOTES.md SignalR; signalr-real-clients.md); ``skip_negotiation=True`` goes
  straight to the WebSocket;
- ``ws(s)://HOST:PORT/PATH``: a WebSocket without negotiation.

After connecting it sends the handshake (always JSON, "Overview") and waits for ``{}``. On a
WebSocket each record is one message: text for JSON (and the handshake), binary for
MessagePack, as @microsoft/signalr does.

Calls: :meth:`HubClient.invoke` (result, or :class:`HubError` from an error Completion),
:meth:`HubClient.send` (non-blocking: no invocationId), :meth:`HubClient.stream` (an async
iterator over StreamItems, cancellable with CancelInvocation), client-to-server streams through
``streams=`` on any of them (``streamIds``, then StreamItems and a Completion per stream),
:meth:`HubClient.on` for methods the server invokes (with an invocationId the handler's return
value or exception goes back as a Completion: "client results"), :meth:`HubClient.ping`,
:meth:`HubClient.close` (sends Close). A Close from the server ends the connection: the
client closes the transport without waiting for the server to, then the waiting calls fail
(:class:`HubError` with the Close's error, if it has one). Every wait is bounded by ``timeout``.
"""
from __future__ import annotations

import asyncio
import inspect
import itertools
from typing import Any, Callable, Iterable, Optional
from urllib.parse import urlencode, urlsplit, urlunsplit

from ..core.client import ConnectionClosed
from ..core.errors import FrameError
from .codec import Decoder, encode
from .constants import JSON, MESSAGEPACK, PROTOCOL_VERSION
from .messages import (CancelInvocation, Close, Completion, HandshakeRequest, HandshakeResponse,
                       Invocation, Ping, StreamCompletion, StreamInvocation, StreamItem)

DEFAULT_TIMEOUT = 10.0


class HubError(Exception):
    """The server completed an invocation with an error, refused the handshake, or closed the
    connection with an error (``Close.error``)."""


# --- transports ---------------------------------------------------------------------------------

class _TcpTransport:
    """Raw TCP: records are concatenated on the stream."""

    kind = "tcp"

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, host: str, port: int, timeout: float) -> "_TcpTransport":
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        return cls(reader, writer)

    async def send(self, data: bytes, binary: bool) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def recv(self) -> Optional[bytes]:
        data = await self.reader.read(65536)
        return data or None

    async def close(self) -> None:
        self.writer.close()
        try:
            await asyncio.wait_for(self.writer.wait_closed(), 2.0)
        except (ConnectionError, OSError, asyncio.TimeoutError):
            pass


class _WebSocketTransport:
    """One record per WebSocket message; ``kinds`` records "text"/"binary" of each received
    message (the broker tests check which kind the server chose)."""

    kind = "websocket"

    def __init__(self, session, ws) -> None:
        self.session, self.ws = session, ws
        self.kinds: list[str] = []

    @classmethod
    async def open(cls, url: str, timeout: float, headers: Optional[dict]) -> "_WebSocketTransport":
        import aiohttp
        session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout))
        try:
            ws = await session.ws_connect(url, headers=headers, autoping=True, compress=0,
                                          max_msg_size=0, timeout=aiohttp.ClientWSTimeout(ws_close=timeout))
        except BaseException:
            await session.close()
            raise
        return cls(session, ws)

    async def send(self, data: bytes, binary: bool) -> None:
        if binary:
            await self.ws.send_bytes(data)
        else:
            await self.ws.send_str(data.decode("utf-8"))

    async def recv(self) -> Optional[bytes]:
        from aiohttp import WSMsgType
        msg = await self.ws.receive()
        if msg.type == WSMsgType.TEXT:
            self.kinds.append("text")
            return msg.data.encode("utf-8")
        if msg.type == WSMsgType.BINARY:
            self.kinds.append("binary")
            return msg.data
        return None                         # CLOSE, CLOSING, CLOSED, ERROR

    @property
    def close_code(self) -> Optional[int]:
        return self.ws.close_code

    async def close(self) -> None:
        try:
            await self.ws.close()
        finally:
            await self.session.close()


async def negotiate(url: str, version: int = 1, timeout: float = DEFAULT_TIMEOUT,
                    headers: Optional[dict] = None) -> tuple[str, dict]:
    """``POST {url}/negotiate`` -> (the WebSocket URL with ``id``, the negotiate response)."""
    import aiohttp
    parts = urlsplit(url)
    query = parts.query + ("&" if parts.query else "") + urlencode({"negotiateVersion": version})
    negotiate_url = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/negotiate",
                                query, ""))
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
        async with session.post(negotiate_url, headers=headers) as response:
            if response.status != 200:
                raise HubError(f"negotiate: HTTP {response.status} {await response.text()}")
            body = await response.json(content_type=None)
    if not isinstance(body, dict):
        raise HubError(f"negotiate: not a JSON object: {body!r}")
    if "error" in body:
        raise HubError(f"negotiate: {body['error']}")
    transports = [t.get("transport") for t in body.get("availableTransports", ())
                  if isinstance(t, dict)]
    if "WebSockets" not in transports:
        raise HubError(f"negotiate: no WebSockets transport in {transports}")
    token = body.get("connectionToken") if body.get("negotiateVersion", 0) >= 1 else None
    token = token or body.get("connectionId")
    if not isinstance(token, str) or not token:
        raise HubError(f"negotiate: no connection id in {body!r}")
    ws_query = parts.query + ("&" if parts.query else "") + urlencode({"id": token})
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urlunsplit((scheme, parts.netloc, parts.path, ws_query, "")), body


def _host_port(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {address!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


# --- streams ------------------------------------------------------------------------------------

_END = object()


class HubStream:
    """Items of a server-to-client stream. ``async for item in stream``; a Completion with an
    error raises :class:`HubError` at the end; :meth:`cancel` sends CancelInvocation."""

    def __init__(self, client: "HubClient", invocation_id: str, timeout: float) -> None:
        self.client, self.invocation_id, self.timeout = client, invocation_id, timeout
        self.queue: asyncio.Queue = asyncio.Queue()
        self.done = False

    def __aiter__(self) -> "HubStream":
        return self

    async def __anext__(self):
        if self.done:
            raise StopAsyncIteration
        item = await asyncio.wait_for(self.queue.get(), self.timeout)
        if item is _END:
            self.done = True
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self.done = True
            raise item
        return item

    async def collect(self) -> list:
        return [item async for item in self]

    async def cancel(self) -> None:
        """CancelInvocation; items already on the wire may still arrive and are dropped."""
        if not self.done:
            self.done = True
            self.client._streams.pop(self.invocation_id, None)
            await self.client._write(CancelInvocation(self.invocation_id))


# --- the client ---------------------------------------------------------------------------------

class HubClient:
    def __init__(self, transport, protocol: str = JSON, *, profile: str = "v1",
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        if protocol not in (JSON, MESSAGEPACK):
            raise ValueError(f"unknown hub protocol {protocol!r}")
        self.transport, self.protocol, self.profile, self.timeout = transport, protocol, profile, timeout
        self.binary = protocol == MESSAGEPACK
        # The draft defines no handshake answer: hub messages come from the first byte.
        self.decoder = Decoder(origin="server", protocol=protocol, profile=profile,
                               handshake=profile != "draft")
        self._ids = itertools.count()
        self._pending: dict[str, asyncio.Future] = {}
        self._streams: dict[str, HubStream] = {}
        self._handlers: dict[str, list[Callable]] = {}
        self._handshake: asyncio.Future = asyncio.get_running_loop().create_future()
        self._closed = asyncio.Event()
        self._tasks: set[asyncio.Task] = set()
        #: What the server sent: its Close message (if any), the Pings, other messages.
        self.close_message: Optional[Close] = None
        self.pings = 0
        self.ping_event = asyncio.Event()
        self.closed_reason: Optional[BaseException] = None
        self.unexpected: list = []
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    # -- connecting ----------------------------------------------------------------------------

    @classmethod
    async def connect(cls, address: str, protocol: str = JSON, *, skip_negotiation: bool = False,
                      negotiate_version: int = 1, profile: str = "v1",
                      timeout: float = DEFAULT_TIMEOUT, headers: Optional[dict] = None,
                      handshake: bool = True) -> "HubClient":
        """Open the transport and (unless ``handshake=False``) complete the handshake."""
        scheme = urlsplit(address).scheme if "://" in address else ""
        if scheme in ("", "tcp"):
            host, port = _host_port(address.split("://", 1)[-1].rstrip("/"))
            transport = await _TcpTransport.open(host, port, timeout)
        elif scheme in ("http", "https"):
            if skip_negotiation:
                parts = urlsplit(address)
                url = urlunsplit(("wss" if scheme == "https" else "ws",) + tuple(parts[1:]))
            else:
                url, _ = await negotiate(address, negotiate_version, timeout, headers)
            transport = await _WebSocketTransport.open(url, timeout, headers)
        elif scheme in ("ws", "wss"):
            transport = await _WebSocketTransport.open(address, timeout, headers)
        else:
            raise ValueError(f"unsupported address {address!r}")
        client = cls(transport, protocol, profile=profile, timeout=timeout)
        if handshake:
            try:
                await client.handshake()
            except BaseException:
                await client.abort()
                raise
        return client

    async def handshake(self, version: int = PROTOCOL_VERSION) -> None:
        await self.transport.send(encode(HandshakeRequest(self.protocol, version)), False)
        if self.profile == "draft":                # nothing comes back ("Overview")
            self._handshake.set_result(HandshakeResponse())
            return
        response = await self._wait(self._handshake)
        if response.error is not None:
            raise HubError(f"handshake refused: {response.error}")

    # -- calls ---------------------------------------------------------------------------------

    def _next_id(self) -> str:
        return str(next(self._ids))

    async def _write(self, message) -> None:
        if self.closed_reason is not None:
            raise ConnectionClosed(str(self.closed_reason))
        await self.transport.send(encode(message, self.protocol, self.profile), self.binary)

    async def _wait(self, awaitable, timeout: Optional[float] = None):
        return await asyncio.wait_for(asyncio.shield(awaitable) if isinstance(awaitable, asyncio.Future)
                                      else awaitable, timeout or self.timeout)

    def _stream_ids(self, streams) -> Optional[list[str]]:
        return [self._next_id() for _ in streams] if streams else None

    async def _upload(self, ids: Optional[list[str]], streams) -> None:
        """StreamItems of each client stream, then its (void) Completion ("streamIds")."""
        for stream_id, items in zip(ids or (), streams or ()):
            if hasattr(items, "__aiter__"):
                async for item in items:
                    await self._write(StreamItem(stream_id, item))
            else:
                for item in items:
                    await self._write(StreamItem(stream_id, item))
            await self._write(Completion(stream_id))

    async def invoke(self, target: str, *args, streams: Iterable = (),
                     timeout: Optional[float] = None) -> Any:
        """Invocation with an id; the Completion's result (None for void), or HubError."""
        ids = self._stream_ids(streams)
        invocation_id = self._next_id()
        fut = asyncio.get_running_loop().create_future()
        self._pending[invocation_id] = fut
        try:
            await self._write(Invocation(target, list(args), invocation_id, stream_ids=ids))
            await self._upload(ids, streams)
            completion: Completion = await self._wait(fut, timeout)
        finally:
            self._pending.pop(invocation_id, None)
        if completion.error is not None:
            raise HubError(completion.error)
        return completion.result

    async def send(self, target: str, *args, streams: Iterable = ()) -> None:
        """A non-blocking Invocation (v1: no invocationId; draft: ``nonblocking: true``)."""
        ids = self._stream_ids(streams)
        if self.profile == "draft":
            message = Invocation(target, list(args), self._next_id(), nonblocking=True)
        else:
            message = Invocation(target, list(args), None, stream_ids=ids)
        await self._write(message)
        await self._upload(ids, streams)

    async def stream(self, target: str, *args, streams: Iterable = (),
                     timeout: Optional[float] = None) -> HubStream:
        """StreamInvocation (the draft: an Invocation answered by StreamItems and a
        StreamCompletion, "Streamed Result"); iterate the returned :class:`HubStream`."""
        ids = self._stream_ids(streams)
        invocation_id = self._next_id()
        stream = HubStream(self, invocation_id, timeout or self.timeout)
        self._streams[invocation_id] = stream
        if self.profile == "draft":
            await self._write(Invocation(target, list(args), invocation_id))
        else:
            await self._write(StreamInvocation(invocation_id, target, list(args), stream_ids=ids))
        await self._upload(ids, streams)
        return stream

    def on(self, method: str, handler: Callable) -> None:
        """``handler(*arguments)`` (plain or async) for Invocations of ``method`` by the server."""
        self._handlers.setdefault(method, []).append(handler)

    async def ping(self) -> None:
        await self._write(Ping())

    async def wait_for_ping(self, timeout: Optional[float] = None) -> None:
        """The next Ping from the server (keep-alive)."""
        self.ping_event.clear()
        await asyncio.wait_for(self.ping_event.wait(), timeout or self.timeout)

    async def wait_closed(self, timeout: Optional[float] = None) -> Optional[Close]:
        """Until the connection ends; the server's Close message, if it sent one."""
        await asyncio.wait_for(self._closed.wait(), timeout or self.timeout)
        return self.close_message

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def close(self, error: Optional[str] = None) -> None:
        """Send Close (v1), then close the transport."""
        if self.closed_reason is None and self.profile != "draft" and self._handshake.done():
            try:
                await asyncio.wait_for(self._write(Close(error)), self.timeout)
            except (ConnectionClosed, ConnectionError, OSError, RuntimeError, asyncio.TimeoutError):
                pass
        await self.abort()

    async def abort(self) -> None:
        """Close the transport without a SignalR Close."""
        try:
            await asyncio.wait_for(self.transport.close(), self.timeout)
        except (ConnectionError, OSError, RuntimeError, asyncio.TimeoutError):
            pass
        self._reader.cancel()
        for task in list(self._tasks):
            task.cancel()
        self._fail(ConnectionClosed("closed by the client"))

    async def __aenter__(self) -> "HubClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # -- reading -------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        try:
            while self.close_message is None and (data := await self.transport.recv()) is not None:
                for message in self.decoder.feed(data):
                    self._dispatch(message)
                    if self.close_message is not None:
                        break           # the server's Close ends the connection: read no further
            if self.close_message is not None:
                # "Close": the connection is over. The client ends the transport itself (as
                # @microsoft/signalr stops its connection at once) rather than wait for the
                # server's end; then the calls fail with the Close's error (wait_closed: the
                # connection is gone by then).
                try:
                    await asyncio.wait_for(self.transport.close(), self.timeout)
                except (ConnectionError, OSError, RuntimeError, asyncio.TimeoutError):
                    pass
            reason = "connection closed by the server"
            if self.close_message is not None and self.close_message.error:
                reason += f": {self.close_message.error}"
            self._fail(ConnectionClosed(reason))
        except FrameError as exc:
            self._fail(ConnectionClosed(f"undecodable data from the server: {exc}"))
        except (ConnectionError, OSError, RuntimeError) as exc:
            self._fail(ConnectionClosed(f"connection lost: {exc}"))

    def _dispatch(self, message) -> None:
        if isinstance(message, HandshakeResponse):
            if not self._handshake.done():
                self._handshake.set_result(message)
        elif isinstance(message, Completion):
            fut = self._pending.pop(message.invocation_id, None)
            if fut is not None and not fut.done():
                fut.set_result(message)
            elif (stream := self._streams.pop(message.invocation_id, None)) is not None:
                stream.queue.put_nowait(HubError(message.error) if message.error is not None else _END)
            else:
                self.unexpected.append(message)
        elif isinstance(message, StreamCompletion):                       # draft
            if (stream := self._streams.pop(message.invocation_id, None)) is not None:
                stream.queue.put_nowait(HubError(message.error) if message.error is not None else _END)
        elif isinstance(message, StreamItem):
            stream = self._streams.get(message.invocation_id)
            if stream is not None:
                stream.queue.put_nowait(message.item)
            else:
                self.unexpected.append(message)
        elif isinstance(message, Invocation):
            task = asyncio.get_running_loop().create_task(self._call_handler(message))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif isinstance(message, Ping):
            self.pings += 1
            self.ping_event.set()
        elif isinstance(message, Close):
            self.close_message = message
        else:
            self.unexpected.append(message)

    async def _call_handler(self, message: Invocation) -> None:
        handlers = self._handlers.get(message.target, [])
        wants_result = message.invocation_id is not None and not message.nonblocking
        result, error = None, None
        if not handlers:
            error = f"Client didn't provide a result for '{message.target}'."
        for handler in handlers:
            try:
                value = handler(*message.arguments)
                if inspect.isawaitable(value):
                    value = await asyncio.wait_for(value, self.timeout)
                result = value
            except Exception as exc:            # the handler's failure is the client's result
                error = f"{type(exc).__name__}: {exc}"
        if wants_result:
            reply = (Completion.with_error(message.invocation_id, error) if error is not None
                     else Completion.with_result(message.invocation_id, result))
            try:
                await self._write(reply)
            except (ConnectionClosed, ConnectionError, OSError, RuntimeError):
                pass

    def _fail(self, exc: ConnectionClosed) -> None:
        if self.closed_reason is None:
            self.closed_reason = exc
        error: BaseException = exc
        if self.close_message is not None and self.close_message.error:
            error = HubError(self.close_message.error)
        if not self._handshake.done():
            self._handshake.set_exception(error)
            self._handshake.exception()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(error)
                fut.exception()
        self._pending.clear()
        for stream in self._streams.values():
            stream.queue.put_nowait(error)
        self._streams.clear()
        self._closed.set()

