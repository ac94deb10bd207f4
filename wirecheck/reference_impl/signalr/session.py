"""The server side of one SignalR connection, sans-IO: bytes in, framed records out.

Phases ("Overview"; SPEC_NOTES for v1): the first record must be the JSON handshake request.
v1 answers ``{}`` (or ``{"error": ...}`` and closes: unknown protocol, unsupported version,
anything that is not a handshake); the draft defines no answer, so the draft profile answers
nothing and closes on failure. Then hub messages in the chosen protocol, dispatched to the
test hub (:mod:`.hub`).

Protocol errors ("Errors"): a malformed message (any :class:`FrameError`: missing or unknown
field, result and error together, bad encoding, over the receive limit) or a breach of the
invocation rules (:mod:`.rules`). v1 sends a Close carrying the error first, as today's
servers do; the draft just terminates ("the other endpoint may immediately terminate").
Where today's servers are lenient, v1 is too: unknown message types, Ack/Sequence without
stateful reconnect, and StreamItem/Completion for unknown ids are ignored, and only an id still
in use is refused (with an error Completion). The draft treats each as a protocol error.

Timers (time is passed in): handshake timeout, client timeout (nothing received), v1
keep-alive Ping when nothing was sent for the keep-alive interval, and server streams whose
items are due. ``next_deadline()`` says when ``tick()`` should next run.

Every element ``receive``/``tick`` return is one complete framed record, so a WebSocket
transport sends each as one message (binary once MessagePack is chosen: ``binary``).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..core.errors import FrameError, UnknownTypeError
from . import codec
from .constants import (CLIENT_TIMEOUT, DEFAULT_MAX_RECEIVE, HANDSHAKE_TIMEOUT, HUB_PROTOCOLS,
                        KEEP_ALIVE_INTERVAL, MESSAGEPACK, PROTOCOL_VERSION)
from .hub import (METHODS, VOID, ClientCall, ConnectionContext, HubError, HubState, StreamPlan,
                  bind)
from .messages import (Ack, CancelInvocation, Close, Completion, HandshakeRequest,
                       HandshakeResponse, Invocation, Ping, Sequence, StreamCompletion,
                       StreamInvocation, StreamItem)
from .rules import HubProtocolError, InvocationBook, Violation

HANDSHAKE, OPEN, CLOSED = "handshake", "open", "closed"


@dataclass
class HubConfig:
    profile: str = "v1"
    keep_alive_interval: float = KEEP_ALIVE_INTERVAL
    client_timeout: float = CLIENT_TIMEOUT
    handshake_timeout: float = HANDSHAKE_TIMEOUT
    #: Longest record accepted (ASP.NET Core's MaximumReceiveMessageSize default).
    max_receive: int = DEFAULT_MAX_RECEIVE
    strict_varint: bool = False
    protocols: tuple[str, ...] = HUB_PROTOCOLS
    #: Active server streams plus client streams per connection.
    max_streams: int = 256
    #: Stream items sent per stream per tick (a zero-interval stream yields between batches).
    max_items_per_tick: int = 256
    #: Client stream items buffered per connection before the upload is refused.
    max_upload_items: int = 100_000


@dataclass
class _ServerStream:
    plan: StreamPlan
    next_at: float


@dataclass
class _Upload:
    """A call waiting for its client streams (v1 ``streamIds``)."""
    invocation_id: Optional[str]
    method: Any
    arguments: list
    stream_ids: list
    items: dict = field(default_factory=dict)      # stream id -> list
    error: Optional[str] = None


class HubSession:
    def __init__(self, config: Optional[HubConfig] = None, *, transport: str = "tcp",
                 state: Optional[HubState] = None, connection_id: str = "") -> None:
        self.config = cfg = config or HubConfig()
        self.profile = cfg.profile
        self.transport = transport
        self.state = state or HubState()
        self.decoder = codec.Decoder(codec.SignalRLimits(max_frame_size=cfg.max_receive,
                                                         strict_varint=cfg.strict_varint),
                                     origin="client", profile=cfg.profile)
        self.phase = HANDSHAKE
        self.protocol: Optional[str] = None
        self.binary = False
        self.book = InvocationBook(cfg.profile)
        self.ctx = ConnectionContext(connection_id)
        self.errors: list[tuple[str, str]] = []        # (category or violation, message)
        self._streams: dict[str, _ServerStream] = {}
        self._uploads: dict[str, _Upload] = {}          # stream id -> the call it feeds
        self._upload_items = 0
        self._client_calls: dict[str, Optional[str]] = {}   # server invocation id -> caller's id
        self._server_ids = itertools.count()
        self._start: Optional[float] = None
        self.last_received = self.last_sent = 0.0
        self._push: Optional[Callable] = None
        self._close: Optional[Callable] = None
        self.state.connections += 1

    # -- the glue's interface ------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.phase == CLOSED

    @property
    def established(self) -> bool:
        """The handshake is done (the glue's byte budget for it stops here)."""
        return self.phase == OPEN

    def attach(self, push: Callable[[list[bytes]], None], close: Callable[[], None]) -> None:
        self._push, self._close = push, close

    def connection_lost(self) -> None:
        self._finish()

    def receive(self, data: bytes, now: float) -> list[bytes]:
        self._begin(now)
        if self.phase == CLOSED:
            return []
        self.last_received = now
        self.decoder.receive(data)
        out: list = []
        while self.phase != CLOSED:
            try:
                message = self.decoder.next_frame()
            except UnknownTypeError as exc:
                if self.phase == OPEN and self.profile != "draft":
                    continue                      # v1: ignore types it does not know
                self._protocol_error(out, str(exc.category), exc.message)
                break
            except FrameError as exc:
                self._protocol_error(out, str(exc.category), exc.message)
                break
            if message is None:
                break
            try:
                self._dispatch(message, now, out)
            except HubProtocolError as exc:
                self._protocol_error(out, str(exc.violation), exc.message)
            if self._streams:
                self._play_streams(now, out)      # items due now go out in order
        return self._emit(out, now)

    def tick(self, now: float) -> list[bytes]:
        self._begin(now)
        if self.phase == CLOSED:
            return []
        cfg = self.config
        if self.phase == HANDSHAKE:
            if now - self._start >= cfg.handshake_timeout:
                self.errors.append(("TIMEOUT", "no handshake within the handshake timeout"))
                self._finish()
            return []
        if now - self.last_received >= cfg.client_timeout:
            self.errors.append(("TIMEOUT", f"nothing received for {cfg.client_timeout:g} s"))
            self._finish()
            return []
        out: list = []
        self._play_streams(now, out)
        if not out and self.profile != "draft" and now - self.last_sent >= cfg.keep_alive_interval:
            out.append(Ping())
        return self._emit(out, now)

    def next_deadline(self) -> Optional[float]:
        if self.phase == CLOSED:
            return None
        if self._start is None:
            return 0.0                            # tick once to learn the time
        cfg = self.config
        if self.phase == HANDSHAKE:
            return self._start + cfg.handshake_timeout
        times = [self.last_received + cfg.client_timeout]
        if self.profile != "draft":
            times.append(self.last_sent + cfg.keep_alive_interval)
        times.extend(s.next_at for s in self._streams.values())
        return min(times)

    # -- internals -----------------------------------------------------------------------------

    def _begin(self, now: float) -> None:
        if self._start is None:
            self._start = self.last_received = self.last_sent = now

    def _emit(self, out: list, now: float) -> list[bytes]:
        if not out:
            return []
        self.last_sent = now
        return [m if isinstance(m, bytes) else codec.encode(m, self.protocol or "json", self.profile)
                for m in out]

    def _finish(self) -> None:
        if self.phase != CLOSED:
            self.phase = CLOSED
            self.state.connections -= 1
        self._streams.clear()
        self._uploads.clear()

    def _protocol_error(self, out: list, category: str, message: str) -> None:
        self.errors.append((category, message))
        if self.phase == HANDSHAKE:
            self._handshake_failed(out, f"Handshake was rejected: {message}")
            return
        if self.profile != "draft":
            out.append(Close(error=f"Connection closed with an error. {category}: {message}"))
        self._finish()

    def _handshake_failed(self, out: list, reason: str) -> None:
        if self.profile != "draft":
            out.append(codec.encode(HandshakeResponse(error=reason)))
        self._finish()

    def _dispatch(self, message, now: float, out: list) -> None:
        if self.phase == HANDSHAKE:
            self._handshake(message, out)
            return
        handler = _HANDLERS.get(type(message))
        if handler is None:          # a HandshakeResponse/Request parsed as a hub message cannot happen
            raise HubProtocolError(Violation.MALFORMED_MESSAGE, f"unexpected {type(message).__name__}")
        handler(self, message, now, out)

    def _handshake(self, message, out: list) -> None:
        if not isinstance(message, HandshakeRequest):
            raise HubProtocolError(Violation.HANDSHAKE_FIRST, "the first message must be the handshake")
        if message.protocol not in self.config.protocols:
            self.errors.append((str(Violation.HANDSHAKE_FIRST), f"protocol {message.protocol!r}"))
            self._handshake_failed(out, f"The protocol '{message.protocol}' is not supported.")
            return
        version = message.version
        if version is not None and not 0 <= version <= PROTOCOL_VERSION:
            self._handshake_failed(out, f"The server does not support version {version} of the "
                                        f"'{message.protocol}' protocol.")
            return
        self.protocol = message.protocol
        self.binary = message.protocol == MESSAGEPACK
        self.phase = OPEN
        if self.profile != "draft":
            out.append(codec.encode(HandshakeResponse()))

    # -- hub messages from the client -------------------------------------------------------------

    def _on_invocation(self, message, now: float, out: list) -> None:
        streaming_request = isinstance(message, StreamInvocation)
        iid = message.invocation_id
        nonblocking = iid is None or getattr(message, "nonblocking", False)
        draft = self.profile == "draft"
        reply = (lambda text: None) if nonblocking else (lambda text: out.append(self._failure(iid, text)))
        try:
            # v1 (ASP.NET Core): only starting a stream checks that the id is not in use
            self.book.peer_invocation(iid, active=(draft or streaming_request)
                                      and (iid in self._streams or self._uploading(iid)))
        except HubProtocolError:
            if draft:
                raise
            reply(f"Invocation ID '{iid}' is already in use.")
            return
        self.state.invocations += 1
        method = METHODS.get(message.target)
        if method is None:
            reply(f"Unknown hub method '{message.target}'")
            return
        if not draft:
            if method.streaming and not streaming_request:
                reply(f"The client attempted to invoke the streaming '{method.name}' method with a "
                      f"non-streaming invocation.")
                return
            if streaming_request and not method.streaming:
                reply(f"The client attempted to invoke the non-streaming '{method.name}' method with "
                      f"a streaming invocation.")
                return
        stream_ids = list(message.stream_ids or [])
        given = len(message.arguments) + len(stream_ids)
        if len(stream_ids) != method.client_streams or given != method.arity:
            reply(f"Failed to invoke '{method.name}' due to an error on the server. Invocation "
                  f"provides {given} argument(s) but target expects {method.arity}.")
            return
        try:
            arguments = bind(method, message.arguments)
        except HubError as exc:
            reply(f"Failed to invoke '{method.name}' due to an error on the server. {exc}")
            return
        if stream_ids:
            if any(sid in self._uploads for sid in stream_ids) or len(set(stream_ids)) != len(stream_ids):
                reply(f"Failed to invoke '{method.name}': stream id already in use.")
                return
            if self._active_streams() + len(stream_ids) > self.config.max_streams:
                reply("Too many active streams on this connection.")
                return
            upload = _Upload(iid if not nonblocking else None, method, arguments, stream_ids)
            for sid in stream_ids:
                self._uploads[sid] = upload
                upload.items[sid] = []
            return
        self._call(method, iid if not nonblocking else None, arguments, now, out)

    def _call(self, method, iid: Optional[str], arguments: list, now: float, out: list) -> None:
        try:
            result = method.call(self.ctx, *arguments)
        except HubError as exc:
            if iid is not None:
                out.append(self._failure(iid, str(exc)))
            return
        if isinstance(result, StreamPlan):
            if iid is None:
                return                            # nobody listens to a non-blocking stream
            if self._active_streams() >= self.config.max_streams:
                out.append(self._failure(iid, "Too many active streams on this connection."))
                return
            self._streams[iid] = _ServerStream(result, now)
            return
        if isinstance(result, ClientCall):
            self._invoke_client(result, iid, out)
            if result.expect_result:
                return                            # answered when the client's Completion comes
            result = result.then
        if iid is None:
            return
        out.append(Completion(iid) if result is VOID else Completion.with_result(iid, result))

    def _invoke_client(self, call: ClientCall, caller_id: Optional[str], out: list) -> None:
        draft = self.profile == "draft"
        if call.expect_result or draft:
            sid = f"s{next(self._server_ids)}"
            nonblocking = not call.expect_result
            self.book.sent_invocation(sid, nonblocking=nonblocking)
            if call.expect_result:
                self._client_calls[sid] = caller_id
            out.append(Invocation(call.target, list(call.arguments), sid, nonblocking=draft and nonblocking,
                                  stream_ids=self._no_streams()))
        else:
            out.append(Invocation(call.target, list(call.arguments), stream_ids=self._no_streams()))

    def _on_stream_item(self, message: StreamItem, now: float, out: list) -> None:
        upload = self._uploads.get(message.invocation_id)
        if upload is not None:
            self._upload_items += 1
            if self._upload_items > self.config.max_upload_items:
                raise HubProtocolError(Violation.MALFORMED_MESSAGE,
                                       f"more than {self.config.max_upload_items} client stream items buffered")
            upload.items[message.invocation_id].append(message.item)
            return
        if self.profile == "draft" or self.book.outstanding(message.invocation_id):
            self.book.peer_response("item", message.invocation_id)
        # v1: an item for no stream of this connection is ignored, as today's servers do

    def _on_completion(self, message, now: float, out: list) -> None:
        sid = message.invocation_id
        upload = self._uploads.pop(sid, None)
        if upload is not None:
            if message.error is not None:
                upload.error = message.error
            if not any(s in self._uploads for s in upload.stream_ids):
                self._finish_upload(upload, now, out)
            return
        has_result = getattr(message, "has_result", False)
        kind = "stream_completion" if isinstance(message, StreamCompletion) else "completion"
        if self.profile == "draft" or self.book.outstanding(sid):
            self.book.peer_response(kind, sid, has_result)
        if sid in self._client_calls:
            caller = self._client_calls.pop(sid)
            if caller is None:
                return
            if message.error is not None:
                out.append(self._failure(caller, f"The client failed: {message.error}"))
            else:
                out.append(Completion.with_result(caller, message.result) if has_result else Completion(caller))

    def _finish_upload(self, upload: _Upload, now: float, out: list) -> None:
        self._upload_items -= sum(len(v) for v in upload.items.values())
        if upload.error is not None:
            if upload.invocation_id is not None:
                out.append(self._failure(upload.invocation_id, f"Client stream failed: {upload.error}"))
            return
        streams = [upload.items[s] for s in upload.stream_ids]
        self._call(upload.method, upload.invocation_id, [*upload.arguments, *streams], now, out)

    def _on_cancel(self, message: CancelInvocation, now: float, out: list) -> None:
        # "Streamed Result closed early": the stream stops; items already sent may still arrive.
        self._streams.pop(message.invocation_id, None)

    def _on_ping(self, message, now: float, out: list) -> None:
        pass

    def _on_close(self, message: Close, now: float, out: list) -> None:
        self._finish()

    def _on_ignored(self, message, now: float, out: list) -> None:
        pass                                  # Ack/Sequence: stateful reconnect is not offered

    # -- helpers -------------------------------------------------------------------------------

    def _no_streams(self) -> Optional[list]:
        """Stream ids of a server-to-client Invocation: none, written as ASP.NET Core does (an
        empty 6th item in v1 MessagePack, which signalrcore's reader requires; absent in JSON)."""
        return [] if self.protocol == MESSAGEPACK and self.profile != "draft" else None

    def _uploading(self, iid: Optional[str]) -> bool:
        return iid is not None and any(u.invocation_id == iid for u in self._uploads.values())

    def _active_streams(self) -> int:
        return len(self._streams) + len(self._uploads)

    def _failure(self, iid: str, text: str):
        return Completion.with_error(iid, text)

    def _end_stream(self, iid: str, error: Optional[str]):
        if self.profile == "draft":
            return StreamCompletion(iid, error)
        return Completion.with_error(iid, error) if error is not None else Completion(iid)

    def _play_streams(self, now: float, out: list) -> None:
        cap = self.config.max_items_per_tick
        for iid, stream in list(self._streams.items()):
            sent = 0
            while stream.next_at <= now and sent < cap:
                try:
                    item = next(stream.plan.items)
                except StopIteration:
                    del self._streams[iid]
                    out.append(self._end_stream(iid, stream.plan.error))
                    break
                out.append(StreamItem(iid, item))
                sent += 1
                stream.next_at += stream.plan.interval


_HANDLERS = {
    Invocation: HubSession._on_invocation,
    StreamInvocation: HubSession._on_invocation,
    StreamItem: HubSession._on_stream_item,
    Completion: HubSession._on_completion,
    StreamCompletion: HubSession._on_completion,
    CancelInvocation: HubSession._on_cancel,
    Ping: HubSession._on_ping,
    Close: HubSession._on_close,
    Ack: HubSession._on_ignored,
    Sequence: HubSession._on_ignored,
}
