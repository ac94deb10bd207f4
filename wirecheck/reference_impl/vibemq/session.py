"""The VibeMQ server's rules for one connection, sans-IO: ``receive(data, now) -> [bytes]``.

Two rule sets, picked by ``profile``:

- ``document`` (vibemq-protocol.rst as written): answers carry the headers of the document's
  examples (ConnectAck ``serverVersion``/``connectionId``, PublishAck ``messageId``/
  ``queueName``, SubscribeAck ``queueName``/``subscriptionId``, UnsubscribeAck ``queueName``,
  Deliver ``priority``/``deliveryAttempts``), an Error always carries the request's id, and
  only the document's error codes are used (plus NOT_AUTHENTICATED and CONNECTION_LIMIT, which
  the document has no code for: SPEC_NOTES "VibeMQ");
- ``vibemq-1.8`` (the real server, ``src/VibeMQ.Server`` at v1.8.0) and ``vibemq-1.0`` (the
  same with protocol 1.0 framing, no compression): answers carry the request's ``queue`` and
  no headers, ConnectAck has a new id, errors raised before dispatch (rate limit, validation,
  authentication) carry a new id, and the real codes are used (AUTH_REQUIRED, INVALID_QUEUE,
  INVALID_PAYLOAD, UNKNOWN_COMMAND).

Order of checks per message, as the real read loop (``BrokerServer.ReadLoopAsync``): rate
limit (RATE_LIMITED, message dropped), validation (``MessageValidator``: queue name at most 256
characters of letters, digits, ``-_.``; at most 50 headers; header values at most 4,096
characters; INVALID_MESSAGE), authentication (before Connect only Connect and Ping:
NOT_AUTHENTICATED), then Disconnect (closes, no answer) or the handler.

A frame the codec cannot read: a bad length or an unknown compression flag drops the
connection without an answer (SPEC_NOTES; ``FrameReader`` throws). A bad body (truncated,
bad UTF-8/JSON, empty id, corrupt or oversized compressed data): ``document`` answers Error
INVALID_MESSAGE and closes; the real profiles close without an answer (the real codec throws
out of the read loop). An unknown command type is a whole message: UNKNOWN_COMMAND
(``CommandDispatcher``; INVALID_MESSAGE in ``document``) and the connection stays open.

Compression ("Compression"): the client's ``supported-compression`` order wins (the first
name the server supports, ``ConnectHandler.NegotiateAlgorithm``); ConnectAck carries
``negotiated-compression`` only when one was agreed; from the next frame on, bodies of at
least ``compression_threshold`` bytes (1,024) are compressed and smaller ones are not. Client
frames are read with whatever flag each carries, negotiated or not ("FrameReader always reads
the compression flag directly from each frame").
"""
from __future__ import annotations

import re
import struct
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Callable, Optional

from ..core.errors import FrameError, UnknownTypeError
from . import codec
from . import compression as comp
from .constants import (COMPRESSION_BY_NAME, COMPRESSION_NAMES, COMPRESSION_THRESHOLD,
                        PRIORITIES, CommandType, Compression, DeliveryMode, ErrorCode)
from .state import BrokerState, LimitError, Overflow, QueueOptions, StoredMessage

#: The development password accepted when none is configured (say so in ``wirecheck serve``).
DEFAULT_PASSWORD = "vibemq"
#: ConnectAck ``serverVersion`` in the document profile ("Protocol Versions": 1.1).
SERVER_VERSION = "1.1.0"

#: MessageValidator.cs.
MAX_QUEUE_NAME = 256
MAX_HEADERS = 50
MAX_HEADER_VALUE = 4096

_HEAD = struct.Struct(">IB")
_U32 = struct.Struct(">I")
_PEEK = struct.Struct(">IBBBH")        # length, flags, version, type, id length

#: Command types a client may send, and their handlers.
HANDLERS = {
    CommandType.CONNECT: "connect", CommandType.DISCONNECT: "disconnect",
    CommandType.PING: "ping", CommandType.PUBLISH: "publish",
    CommandType.SUBSCRIBE: "subscribe", CommandType.UNSUBSCRIBE: "unsubscribe",
    CommandType.ACK: "ack", CommandType.CREATE_QUEUE: "create_queue",
    CommandType.DELETE_QUEUE: "delete_queue", CommandType.QUEUE_INFO: "queue_info",
    CommandType.LIST_QUEUES: "list_queues",
}
#: Allowed before a successful Connect (BrokerServer.ReadLoopAsync).
BEFORE_CONNECT = frozenset({CommandType.CONNECT, CommandType.PING})


class Phase(Enum):
    AWAIT_CONNECT = "await-connect"
    READY = "ready"
    CLOSED = "closed"


@dataclass(frozen=True)
class Credentials:
    """Accepted ``authPassword`` values, alone or with an ``authUsername`` (the real
    ConnectHandler reads both). Empty: authentication is off and any Connect is accepted (the
    real server without an authentication service)."""
    passwords: frozenset = frozenset({DEFAULT_PASSWORD})
    users: tuple = ()                              # (username, password) pairs

    @classmethod
    def from_api_keys(cls, keys) -> "Credentials":
        passwords, users = set(), []
        for key in keys:
            user, sep, password = key.partition(":")
            if sep:
                users.append((user, password))
            else:
                passwords.add(key)
        return cls(frozenset(passwords), tuple(users))

    @property
    def required(self) -> bool:
        return bool(self.passwords or self.users)

    def check(self, username: Optional[str], password: Optional[str]) -> bool:
        return password in self.passwords or (username, password) in self.users


@dataclass
class SessionConfig:
    profile: str = "document"
    credentials: Credentials = field(default_factory=Credentials)
    #: Algorithms the server accepts (BrokerOptions.SupportedCompressions); () disables.
    compressions: tuple = (Compression.BROTLI, Compression.GZIP)
    compression_threshold: int = COMPRESSION_THRESHOLD
    #: RateLimitOptions.MaxMessagesPerClientPerSecond; None or 0 disables.
    max_messages_per_second: Optional[int] = 1000
    max_subscriptions: int = 1024
    limits: codec.VibeLimits = field(default_factory=codec.VibeLimits)
    server_version: str = SERVER_VERSION


class _ClientDecoder(codec.Decoder):
    """The codec's decoder, remembering the id of the frame being read when it can be seen
    without decompressing (an unknown command type is answered with the request's id)."""

    last_id: Optional[str] = None

    def next_frame(self):
        self.last_id = None
        head = self._buf.unpack(_PEEK) if self.flags else None
        if head is not None and head[1] == Compression.NONE and 2 <= head[0] <= self.limits.max_frame_size:
            raw = self._buf.peek(_PEEK.size + head[4])
            if raw is not None and head[4] <= head[0] - 4:
                self.last_id = raw[_PEEK.size:].decode("utf-8", "replace") or None
        return super().next_frame()


def _iso(wall: float, real: bool) -> str:
    moment = datetime.fromtimestamp(wall, timezone.utc)
    if real:       # System.Text.Json writes DateTime with 7 fractional digits
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "0Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _timespan(seconds: float) -> str:
    """.NET TimeSpan's constant format ``[d.]hh:mm:ss[.fffffff]`` (how System.Text.Json writes it)."""
    ticks = round(seconds * 10_000_000)
    days, rem = divmod(ticks, 86_400 * 10_000_000)
    hours, rem = divmod(rem, 3600 * 10_000_000)
    minutes, rem = divmod(rem, 60 * 10_000_000)
    secs, frac = divmod(rem, 10_000_000)
    out = f"{days}." if days else ""
    out += f"{hours:02}:{minutes:02}:{secs:02}"
    return out + (f".{frac:07}" if frac else "")


class VibeSession:
    protocol = "vibemq"

    def __init__(self, state: BrokerState, config: Optional[SessionConfig] = None) -> None:
        self.state = state
        self.config = cfg = config or SessionConfig()
        self.profile = cfg.profile
        self.real = cfg.profile != "document"
        self.codec_profile = cfg.profile if cfg.profile in codec_profiles() else "document"
        self.decoder = _ClientDecoder(cfg.limits, profile=self.codec_profile, origin="client")
        self.phase = Phase.AWAIT_CONNECT
        self.compression: int = Compression.NONE          # negotiated, for our frames
        self.subscriptions: set[str] = set()
        self.close_reason: Optional[BaseException | str] = None
        self.username: Optional[str] = None
        self._window: deque = deque()
        self._out: list[bytes] = []
        self._busy = False
        self._push: Optional[Callable] = None
        self._close: Optional[Callable] = None
        self._now = 0.0
        self.conn = state.connect(self)
        self.rejected = self.conn is None
        if self.rejected:                    # ConnectionManager.TryAdd failed: error, then close
            self._error(None, ErrorCode.CONNECTION_LIMIT, "Maximum connections reached.", fresh=True)
            self.phase = Phase.CLOSED
            self.close_reason = "connection limit"

    # -- the glue's interface ------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.phase is Phase.CLOSED

    @property
    def established(self) -> bool:
        """Connect accepted (the glue's handshake timeout and byte budget stop here)."""
        return self.phase is Phase.READY

    def attach(self, push: Callable[[list[bytes]], None], close: Callable[[], None]) -> None:
        self._push, self._close = push, close
        if self.rejected and self._out:
            out, self._out = self._out, []
            push(out)
            close()

    def receive(self, data: bytes, now: float) -> list[bytes]:
        """Bytes from the client in; the bytes to send back, in order. When ``closed`` turns
        True the caller closes the connection after writing them."""
        if self.closed:
            return self._take()
        self._now = now
        self._busy = True
        try:
            self.decoder.receive(data)
            while not self.closed:
                try:
                    message = self.decoder.next_frame()
                except UnknownTypeError as exc:
                    if self.decoder._error is exc:        # unknown compression flag: sticky
                        self._shut(exc)
                        break
                    self._on_unknown_type(exc)
                    continue
                except FrameError as exc:
                    self._on_bad_frame(exc)
                    break
                if message is None:
                    break
                self._dispatch(message)
        finally:
            self._busy = False
        return self._take()

    def tick(self, now: float) -> list[bytes]:
        if self.closed:
            return self._take()
        self._now = now
        self._busy = True
        try:
            self.state.tick(now)
        finally:
            self._busy = False
        return self._take()

    def next_deadline(self) -> Optional[float]:
        """The broker's timers (redelivery, TTL) run on whichever connection's timer fires
        first: every session names the state's next deadline."""
        return None if self.closed else self.state.next_deadline()

    def connection_lost(self) -> None:
        self.phase = Phase.CLOSED
        self._leave()

    # -- output ----------------------------------------------------------------------------

    def _take(self) -> list[bytes]:
        out, self._out = self._out, []
        return out

    def _frame(self, message: codec.Message) -> bytes:
        """"Framing" + "Threshold": compress a body of at least the threshold once agreed."""
        body = codec.encode_body(message, self.codec_profile)
        if self.codec_profile == "vibemq-1.0":
            return _U32.pack(len(body)) + body
        flag = Compression.NONE
        if self.compression != Compression.NONE and len(body) >= self.config.compression_threshold:
            flag = self.compression
            body = comp.compress(body, flag)
        return _HEAD.pack(len(body), flag) + body

    def _send(self, message: codec.Message) -> None:
        data = self._frame(message)
        if self._busy or self._push is None:
            self._out.append(data)
        else:                                   # caused by another connection (a delivery)
            self._push([data])

    def _error(self, request: Optional[codec.Message], code: str, text: str, *,
               fresh: bool = False) -> None:
        """Error (99). ``fresh``: the real server sends this one without the request's id."""
        if request is None or (fresh and self.real):
            mid = self.state.new_id()
        else:
            mid = request.id
        self._send(codec.Message(CommandType.ERROR, mid, error_code=str(code), error_message=text))

    def _code(self, real: str, document: str = ErrorCode.INVALID_MESSAGE) -> str:
        return real if self.real else document

    def deliver(self, message: StoredMessage, attempts: int) -> None:
        """Deliver (26): the publisher's id and payload ("Deliver"; QueueManager.ToDeliverMessage)."""
        if self.closed:
            return
        if self.real:
            headers = dict(message.headers) if message.headers else None
        else:
            headers = dict(message.headers or {})
            headers["priority"] = PRIORITIES[message.priority]
            headers["deliveryAttempts"] = str(attempts)
        self._send(codec.Message(CommandType.DELIVER, message.id, message.queue,
                                 message.payload, headers))

    # -- closing -----------------------------------------------------------------------------

    def _shut(self, reason) -> None:
        self.close_reason = reason
        self.phase = Phase.CLOSED
        self._leave()

    def _leave(self) -> None:
        if self.conn is not None:
            conn, self.conn = self.conn, None
            self.state.disconnect(conn, self._now)

    def _on_bad_frame(self, exc: FrameError) -> None:
        if self.decoder._error is None and not self.real:   # a bad body, not bad framing
            self._error(None, ErrorCode.INVALID_MESSAGE, f"Invalid message: {exc.message}")
        self._shut(exc)

    def _on_unknown_type(self, exc: UnknownTypeError) -> None:
        request = codec.Message(CommandType.ERROR, self.decoder.last_id or self.state.new_id())
        if not self._allowed(request):
            return
        if self.phase is not Phase.READY:
            return self._error(request, ErrorCode.NOT_AUTHENTICATED,
                               "Please send a Connect command first.", fresh=True)
        self._error(request, self._code(ErrorCode.UNKNOWN_COMMAND), f"Unknown command type: {exc.message}")

    # -- dispatch ----------------------------------------------------------------------------

    def _allowed(self, request: Optional[codec.Message]) -> bool:
        """RateLimiter.IsMessageAllowed: a one-second sliding window per connection."""
        limit = self.config.max_messages_per_second
        if not limit:
            return True
        window, now = self._window, self._now
        while window and window[0] < now - 1.0:
            window.popleft()
        if len(window) >= limit:
            self._error(request, ErrorCode.RATE_LIMITED, "Message rate limit exceeded.", fresh=True)
            return False
        window.append(now)
        return True

    @staticmethod
    def validate(message: codec.Message) -> Optional[str]:
        """MessageValidator.Validate: None if valid, else the reason."""
        queue = message.queue
        if queue is not None:
            if len(queue) > MAX_QUEUE_NAME:
                return f"Queue name exceeds maximum length ({MAX_QUEUE_NAME})."
            if not valid_queue_name(queue):
                return "Queue name contains invalid characters. Allowed: alphanumeric, hyphens, underscores, dots."
        headers = message.headers or {}
        if len(headers) > MAX_HEADERS:
            return f"Too many headers ({len(headers)}). Maximum: {MAX_HEADERS}."
        for key, value in headers.items():
            if value is not None and len(value) > MAX_HEADER_VALUE:
                return f"Header value for '{key}' exceeds maximum length ({MAX_HEADER_VALUE})."
        return None

    def _dispatch(self, message: codec.Message) -> None:
        if not self._allowed(message):
            return
        reason = self.validate(message)
        if reason is not None:
            return self._error(message, ErrorCode.INVALID_MESSAGE, reason, fresh=True)
        kind = message.type
        if self.phase is not Phase.READY and kind not in BEFORE_CONNECT:
            return self._error(message, ErrorCode.NOT_AUTHENTICATED,
                               "Please send a Connect command first.", fresh=True)
        name = HANDLERS.get(kind)
        if name is None:        # a server-to-client type sent by the client
            return self._error(message, self._code(ErrorCode.UNKNOWN_COMMAND),
                               f"Unknown command type: {message.type_name}")
        getattr(self, "_on_" + name)(message)

    def _need_queue(self, message: codec.Message, what: str) -> Optional[str]:
        if not message.queue:
            self._error(message, self._code(ErrorCode.INVALID_QUEUE), f"Queue name is required for {what}.")
            return None
        return message.queue

    # -- handlers ----------------------------------------------------------------------------

    def _on_connect(self, message: codec.Message) -> None:
        """"Connect" / "ConnectAck"; ConnectHandler.cs for the checks and negotiation."""
        creds = self.config.credentials
        if creds.required:
            username = message.header("authUsername")
            password = message.header("authPassword")
            if not password or (self.real and not username and not creds.passwords):
                code = self._code(ErrorCode.AUTH_REQUIRED, ErrorCode.AUTH_FAILED)
                return self._error(message, code, "Username and password are required.", fresh=True)
            if not creds.check(username, password):
                return self._error(message, ErrorCode.AUTH_FAILED, "Invalid username or password.",
                                   fresh=True)
            self.username = username
        self.phase = Phase.READY
        agreed = self._negotiate(message.header("supported-compression"))
        headers = {}
        if not self.real:
            headers = {"serverVersion": self.config.server_version, "connectionId": f"srv_{self.conn}"}
        if agreed is not None:
            headers["negotiated-compression"] = COMPRESSION_NAMES[agreed]
        mid = self.state.new_id() if self.real else message.id
        self._send(codec.Message(CommandType.CONNECT_ACK, mid, headers=headers or None))
        self.compression = agreed if agreed is not None else Compression.NONE

    def _negotiate(self, offered: Optional[str]) -> Optional[int]:
        if not offered or not self.config.compressions or self.codec_profile == "vibemq-1.0":
            return None
        for part in offered.split(","):
            flag = COMPRESSION_BY_NAME.get(part.strip().lower())
            if flag is not None and flag in self.config.compressions:
                return flag
        return None

    def _on_disconnect(self, message: codec.Message) -> None:
        self._shut("disconnect")

    def _on_ping(self, message: codec.Message) -> None:
        self._send(codec.Message(CommandType.PONG, message.id))

    def _on_publish(self, message: codec.Message) -> None:
        queue = self._need_queue(message, "publish")
        if queue is None:
            return
        try:
            result = self.state.publish(queue, message.id, message.payload, message.headers, self._now)
        except LimitError as exc:
            return self._error(message, ErrorCode.SERVER_ERROR, str(exc))
        if result is None:
            return self._error(message, ErrorCode.QUEUE_NOT_FOUND, f"Queue '{queue}' not found.")
        if self.real:
            self._send(codec.Message(CommandType.PUBLISH_ACK, message.id, queue))
        else:
            self._send(codec.Message(CommandType.PUBLISH_ACK, message.id,
                                     headers={"messageId": message.id, "queueName": queue}))

    def _on_subscribe(self, message: codec.Message) -> None:
        queue = self._need_queue(message, "subscribe")
        if queue is None:
            return
        if queue not in self.subscriptions and len(self.subscriptions) >= self.config.max_subscriptions:
            self.subscriptions = {q for q in self.subscriptions
                                  if q in self.state.queues and self.conn in self.state.queues[q].subscribers}
            if len(self.subscriptions) >= self.config.max_subscriptions:
                return self._error(message, ErrorCode.SERVER_ERROR,
                                   f"At most {self.config.max_subscriptions} subscriptions per connection.")
        try:
            found = self.state.subscribe(self.conn, queue, self._now)
        except LimitError as exc:
            return self._error(message, ErrorCode.SERVER_ERROR, str(exc))
        if found is None:
            return self._error(message, ErrorCode.QUEUE_NOT_FOUND, f"Queue '{queue}' not found.")
        self.subscriptions.add(queue)
        if self.real:
            self._send(codec.Message(CommandType.SUBSCRIBE_ACK, message.id, queue))
        else:
            self._send(codec.Message(CommandType.SUBSCRIBE_ACK, message.id,
                                     headers={"queueName": queue, "subscriptionId": message.id}))
        self.state.pump(queue, self._now)

    def _on_unsubscribe(self, message: codec.Message) -> None:
        queue = self._need_queue(message, "unsubscribe")
        if queue is None:
            return
        self.state.unsubscribe(self.conn, queue)
        self.subscriptions.discard(queue)
        if self.real:
            self._send(codec.Message(CommandType.UNSUBSCRIBE_ACK, message.id, queue))
        else:
            self._send(codec.Message(CommandType.UNSUBSCRIBE_ACK, message.id,
                                     headers={"queueName": queue}))

    def _on_ack(self, message: codec.Message) -> None:
        """"Ack": ``headers.messageId`` (document) or the Ack's own id (AckHandler.cs). No
        answer either way, an unknown id included (the real server only logs it)."""
        named = message.header("messageId")
        if named and self.state.ack(self.conn, named, self._now):
            return
        self.state.ack(self.conn, message.id, self._now)

    def _on_create_queue(self, message: codec.Message) -> None:
        queue = self._need_queue(message, "CreateQueue")
        if queue is None:
            return
        try:
            options = parse_queue_options(message, self.state.config.default_options,
                                          self.state.config.max_queue_size_limit)
        except ValueError as exc:
            return self._error(message, self._code(ErrorCode.INVALID_PAYLOAD), f"Invalid queue options: {exc}")
        try:
            created = self.state.create_queue(queue, options, self._now)
        except LimitError as exc:
            return self._error(message, ErrorCode.SERVER_ERROR, str(exc))
        if not created and not self.real:
            return self._error(message, ErrorCode.QUEUE_EXISTS, f"Queue '{queue}' already exists.")
        self._send(codec.Message(CommandType.CREATE_QUEUE, message.id, queue))

    def _on_delete_queue(self, message: codec.Message) -> None:
        queue = self._need_queue(message, "DeleteQueue")
        if queue is None:
            return
        if not self.state.delete_queue(queue) and not self.real:
            return self._error(message, ErrorCode.QUEUE_NOT_FOUND, f"Queue '{queue}' not found.")
        self.subscriptions.discard(queue)
        self._send(codec.Message(CommandType.DELETE_QUEUE, message.id, queue))

    def _on_queue_info(self, message: codec.Message) -> None:
        queue = self._need_queue(message, "QueueInfo")
        if queue is None:
            return
        info = self.state.queue_snapshot(queue, self._now)
        if info is None and not self.real:
            return self._error(message, ErrorCode.QUEUE_NOT_FOUND, f"Queue '{queue}' not found.")
        payload = None if info is None else self._format_info(info)
        self._send(codec.Message(CommandType.QUEUE_INFO, message.id, queue, payload))

    def _format_info(self, info: dict) -> dict:
        """"QueueInfo" response: the document's six fields first; the real QueueInfo.cs
        fields after them. ``document`` writes enums by name and the TTL in milliseconds;
        the real server writes enums as numbers and the TTL as a TimeSpan, null fields omitted."""
        out = dict(info)
        out["createdAt"] = _iso(info["createdAt"], self.real)
        ttl = info["messageTtl"]
        if self.real:
            out["deliveryMode"] = list(DeliveryMode).index(info["deliveryMode"])
            out["overflowStrategy"] = int(info["overflowStrategy"])
            out["messageTtl"] = None if ttl is None else _timespan(ttl)
        else:
            out["deliveryMode"] = str(info["deliveryMode"])
            out["overflowStrategy"] = Overflow(info["overflowStrategy"]).name
            out["messageTtl"] = None if ttl is None else round(ttl * 1000)
        return {k: v for k, v in out.items() if v is not None}

    def _on_list_queues(self, message: codec.Message) -> None:
        self._send(codec.Message(CommandType.LIST_QUEUES, message.id, payload=self.state.list_queues()))


def codec_profiles() -> tuple[str, ...]:
    return ("document", "vibemq-1.8", "vibemq-1.0")


def valid_queue_name(name: str) -> bool:
    return bool(name) and all(c.isalnum() or c in "-_." for c in name)


# --- CreateQueue options ("Queue Headers" as headers; QueueOptions.cs as the payload) ----------

_TIMESPAN = re.compile(r"(?:(\d+)\.)?(\d{1,2}):(\d{1,2}):(\d{1,2}(?:\.\d{1,7})?)$")
_MODES = {m.value.lower(): m for m in DeliveryMode}
_OPTION_KEYS = ("deliveryMode", "mode", "maxQueueSize", "messageTtl", "enableDeadLetterQueue",
                "deadLetterQueueName", "overflowStrategy", "maxRetryAttempts")


def _int(value, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{what} must be an integer")
    if isinstance(value, str):
        text = value.strip()
        if not text.lstrip("-").isdigit():
            raise ValueError(f"{what} must be an integer")
        value = int(text)
    if not low <= value <= high:
        raise ValueError(f"{what} must be in {low}..{high}")
    return value


def _enum(value, what: str, names: dict, members: list):
    if isinstance(value, str) and value.strip().lower() in names:
        return names[value.strip().lower()]
    return members[_int(value, what, 0, len(members) - 1)]


def _ttl(value) -> Optional[float]:
    """Milliseconds ("Queue Headers") or a .NET TimeSpan string ``[d.]hh:mm:ss[.f]`` (the real
    client serialises QueueOptions.MessageTtl that way); null means no TTL."""
    if value is None:
        return None
    if isinstance(value, str) and ":" in value:
        match = _TIMESPAN.match(value.strip())
        if match is None:
            raise ValueError("messageTtl must be milliseconds or [d.]hh:mm:ss[.f]")
        days, hours, minutes, secs = match.groups()
        seconds = int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(secs)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000
    else:
        seconds = _int(value, "messageTtl", 1, 10**12) / 1000
    if not 0 < seconds <= 10**9:
        raise ValueError("messageTtl must be positive")
    return seconds


def _bool(value, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"{what} must be true or false")


def parse_queue_options(message: codec.Message, defaults: QueueOptions,
                        max_size_limit: int) -> Optional[QueueOptions]:
    """Options from the payload (real server) and the headers (document), headers last.
    None when neither names any option (the broker's defaults apply)."""
    given: dict = {}
    if message.payload is not None:
        if not isinstance(message.payload, dict):
            raise ValueError("the payload must be a JSON object")
        given.update({k: v for k, v in message.payload.items() if k in _OPTION_KEYS})
    given.update({k: v for k, v in (message.headers or {}).items() if k in _OPTION_KEYS})
    if not given:
        return None
    o = defaults
    kw = {}
    mode = given.get("deliveryMode", given.get("mode"))
    if mode is not None:
        kw["mode"] = _enum(mode, "deliveryMode", _MODES, list(DeliveryMode))
    if given.get("maxQueueSize") is not None:
        kw["max_size"] = _int(given["maxQueueSize"], "maxQueueSize", 1, max_size_limit)
    if "messageTtl" in given:
        kw["ttl"] = _ttl(given["messageTtl"])
    if given.get("enableDeadLetterQueue") is not None:
        kw["dead_letter"] = _bool(given["enableDeadLetterQueue"], "enableDeadLetterQueue")
    if given.get("deadLetterQueueName") is not None:
        name = given["deadLetterQueueName"]
        if not isinstance(name, str) or not valid_queue_name(name) or len(name) > MAX_QUEUE_NAME:
            raise ValueError("deadLetterQueueName is not a valid queue name")
        kw["dead_letter_name"] = name
    if given.get("overflowStrategy") is not None:
        kw["overflow"] = _enum(given["overflowStrategy"], "overflowStrategy",
                               {s.name.lower(): s for s in Overflow}, list(Overflow))
    if given.get("maxRetryAttempts") is not None:
        kw["max_retries"] = _int(given["maxRetryAttempts"], "maxRetryAttempts", 0, 1000)
    return QueueOptions(**{**{f: getattr(o, f) for f in o.__dataclass_fields__}, **kw})
