"""The VibeMQ reference client: asyncio, requests correlated by message id.

Answers carry the request's id ("Command Descriptions"), except where the real server
(profile ``vibemq-1.8``) uses a new one: ConnectAck, and the Errors raised before dispatch
(rate limit, validation, authentication). The server answers in order, so an answer whose id
matches nothing is given to the oldest outstanding request (ConnectAck by type). Ack gets no
answer.

Compression ("Compression"): the client offers ``compression`` (names, in preference order)
in ``supported-compression``; after the ConnectAck it compresses its own bodies of at least
``compression_threshold`` bytes with the agreed algorithm. Incoming frames are read with the
flag each carries.

Deliveries go to :meth:`next_delivery` (a bounded queue; when it is full the oldest is dropped
and counted in ``dropped``) and to the optional ``on_deliver`` callback. Every wait is bounded
by ``timeout``.
"""
from __future__ import annotations

import asyncio
import itertools
import os
import struct
from collections import OrderedDict, deque
from typing import Any, Callable, Optional

from ..core.client import ConnectionClosed, FramedClient
from . import codec
from . import compression as comp
from .constants import (COMPRESSION_BY_NAME, COMPRESSION_NAMES, COMPRESSION_THRESHOLD,
                        CommandType, Compression)
from .session import DEFAULT_PASSWORD

_HEAD = struct.Struct(">IB")
#: Message ids are "Unique identifier"s ("Message Fields"): each client's start with a prefix
#: of its own, this process's random tag and the client's number in it. (``id(self)`` was
#: used: two clients of one process, one made after the other was freed, could share it.)
_PROCESS_TAG = os.urandom(3).hex()
_CLIENT_NUMBERS = itertools.count(1)
_U32 = struct.Struct(">I")


class VibeError(Exception):
    """An Error (99) answer."""

    def __init__(self, code: Optional[str], message: Optional[str], answer: codec.Message) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.answer = answer


class VibeClient(FramedClient):
    def __init__(self, reader, writer, *, profile: str = "document", timeout: float = 10.0,
                 compression_threshold: int = COMPRESSION_THRESHOLD, max_deliveries: int = 10_000,
                 on_deliver: Optional[Callable[[codec.Message], Any]] = None) -> None:
        self.profile = profile
        super().__init__(reader, writer, codec.Decoder(profile=profile, origin="server"), timeout)
        self.codec_profile = profile if profile in ("document", "vibemq-1.8", "vibemq-1.0") else "document"
        self.compression_threshold = compression_threshold
        self.negotiated: Optional[int] = None
        self.connect_ack: Optional[codec.Message] = None
        self.on_deliver = on_deliver
        self.dropped = 0
        self.errors: list[VibeError] = []                 # Errors nobody was waiting for
        self._deliveries: deque[codec.Message] = deque(maxlen=max_deliveries)
        self._delivery_ready = asyncio.Event()
        self._order: OrderedDict[str, CommandType] = OrderedDict()   # outstanding requests
        self._ids = itertools.count(1)
        self._prefix = f"c{_PROCESS_TAG}{next(_CLIENT_NUMBERS):x}-"

    @classmethod
    async def connect(cls, host: str, port: int, password: Optional[str] = DEFAULT_PASSWORD, *,
                      username: Optional[str] = None, compression: tuple[str, ...] = (),
                      timeout: float = 10.0, **options) -> "VibeClient":
        client = cls(*await cls.open_stream(host, port, timeout), timeout=timeout, **options)
        try:
            await client.handshake(password, username=username, compression=compression)
        except BaseException:
            await client.close()
            raise
        return client

    # -- requests ----------------------------------------------------------------------------

    def new_id(self, kind: str = "m") -> str:
        return f"{self._prefix}{kind}{next(self._ids)}"

    async def handshake(self, password: Optional[str], *, username: Optional[str] = None,
                        compression: tuple[str, ...] = (), headers: Optional[dict] = None) -> codec.Message:
        """Connect; the ConnectAck (its ``negotiated-compression`` is applied)."""
        h = dict(headers or {})
        if password is not None:
            h["authPassword"] = password
        if username is not None:
            h["authUsername"] = username
        if compression:
            h["supported-compression"] = ",".join(compression)
        ack = await self.call(codec.Message(CommandType.CONNECT, self.new_id("conn"), headers=h or None))
        self.connect_ack = ack
        name = ack.header("negotiated-compression")
        self.negotiated = COMPRESSION_BY_NAME.get(name) if name else None
        return ack

    async def ping(self) -> codec.Message:
        return await self.call(codec.Message(CommandType.PING, self.new_id("ping")))

    async def publish(self, queue: str, payload: Any = None, *, headers: Optional[dict] = None,
                      priority: Optional[str] = None, message_id: Optional[str] = None) -> codec.Message:
        h = dict(headers or {})
        if priority is not None:
            h["priority"] = priority
        return await self.call(codec.Message(CommandType.PUBLISH, message_id or self.new_id("msg"),
                                             queue, payload, h or None))

    async def subscribe(self, queue: str) -> codec.Message:
        return await self.call(codec.Message(CommandType.SUBSCRIBE, self.new_id("sub"), queue))

    async def unsubscribe(self, queue: str) -> codec.Message:
        return await self.call(codec.Message(CommandType.UNSUBSCRIBE, self.new_id("unsub"), queue))

    async def ack(self, delivery: codec.Message | str) -> None:
        """Acknowledge a delivery (no answer). ``document``: ``headers.messageId``; the real
        profiles: the Ack's own id is the delivered message's id."""
        mid = delivery if isinstance(delivery, str) else delivery.id
        if self.profile == "document":
            message = codec.Message(CommandType.ACK, self.new_id("ack"), headers={"messageId": mid})
        else:
            message = codec.Message(CommandType.ACK, mid)
        self.write(self._frame(message))
        await asyncio.wait_for(self.writer.drain(), self.timeout)

    async def create_queue(self, queue: str, *, mode: Optional[str] = None,
                           max_size: Optional[int] = None, ttl_ms: Optional[int] = None,
                           dead_letter: Optional[bool] = None, dead_letter_name: Optional[str] = None,
                           overflow: Optional[str] = None, max_retries: Optional[int] = None,
                           as_payload: Optional[bool] = None) -> codec.Message:
        """CreateQueue; options go in headers (document) or the payload (real server)."""
        options = {"deliveryMode": mode, "maxQueueSize": max_size, "messageTtl": ttl_ms,
                   "enableDeadLetterQueue": dead_letter, "deadLetterQueueName": dead_letter_name,
                   "overflowStrategy": overflow, "maxRetryAttempts": max_retries}
        options = {k: v for k, v in options.items() if v is not None}
        payload = headers = None
        if options:
            if as_payload if as_payload is not None else self.profile != "document":
                payload = options
            else:
                headers = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}
        return await self.call(codec.Message(CommandType.CREATE_QUEUE, self.new_id("create"), queue,
                                             payload, headers))

    async def delete_queue(self, queue: str) -> codec.Message:
        return await self.call(codec.Message(CommandType.DELETE_QUEUE, self.new_id("delete"), queue))

    async def queue_info(self, queue: str) -> Optional[dict]:
        answer = await self.call(codec.Message(CommandType.QUEUE_INFO, self.new_id("info"), queue))
        return answer.payload

    async def list_queues(self) -> list[str]:
        answer = await self.call(codec.Message(CommandType.LIST_QUEUES, self.new_id("list")))
        return list(answer.payload or [])

    async def disconnect(self) -> None:
        """Disconnect (no answer), then wait (bounded) for the server to close."""
        try:
            self.write(self._frame(codec.Message(CommandType.DISCONNECT, self.new_id("disc"))))
            await asyncio.wait_for(self.writer.drain(), self.timeout)
            await asyncio.wait_for(asyncio.shield(self._reader_task), self.timeout)
        except (ConnectionClosed, ConnectionError, OSError):
            pass
        finally:
            await self.close()

    async def next_delivery(self, timeout: Optional[float] = None) -> codec.Message:
        """The oldest delivery not yet taken; :class:`asyncio.TimeoutError` after ``timeout``."""
        async def wait():
            while not self._deliveries:
                if self._closed is not None:
                    raise ConnectionClosed(str(self._closed))
                self._delivery_ready.clear()
                await self._delivery_ready.wait()
            return self._deliveries.popleft()
        return await asyncio.wait_for(wait(), self.timeout if timeout is None else timeout)

    @property
    def pending_deliveries(self) -> int:
        return len(self._deliveries)

    async def call(self, message: codec.Message) -> codec.Message:
        """Send a request, wait for its answer; an Error answer raises :class:`VibeError`."""
        self._order[message.id] = message.type
        try:
            answer = await self.request(message.id, self._frame(message))
        finally:
            self._order.pop(message.id, None)
        return answer

    async def send_raw(self, data: bytes) -> None:
        self.write(data)
        await asyncio.wait_for(self.writer.drain(), self.timeout)

    # -- plumbing ----------------------------------------------------------------------------

    def _frame(self, message: codec.Message) -> bytes:
        body = codec.encode_body(message, self.codec_profile)
        if self.codec_profile == "vibemq-1.0":
            return _U32.pack(len(body)) + body
        flag = Compression.NONE
        if self.negotiated and len(body) >= self.compression_threshold:
            flag = self.negotiated
            body = comp.compress(body, flag)
        return _HEAD.pack(len(body), flag) + body

    def on_frame(self, frame: codec.Message) -> None:
        if frame.type == CommandType.DELIVER:
            if len(self._deliveries) == self._deliveries.maxlen:
                self.dropped += 1
            self._deliveries.append(frame)
            self._delivery_ready.set()
            if self.on_deliver is not None:
                result = self.on_deliver(frame)
                if asyncio.iscoroutine(result):
                    asyncio.ensure_future(result)
            return
        if frame.type == CommandType.DISCONNECT:        # server shutdown notice (BrokerServer.StopAsync)
            return
        key = frame.id if frame.id in self._pending else None
        if key is None and frame.type == CommandType.CONNECT_ACK:
            key = next((k for k, t in self._order.items() if t == CommandType.CONNECT), None)
        if key is None:                             # answers come in order: the oldest waiting
            key = next((k for k in self._order if k in self._pending), None)
        self._order.pop(key, None)
        if frame.type == CommandType.ERROR:
            error = VibeError(frame.error_code, frame.error_message, frame)
            if key is None or not self.resolve(key, error=error):
                self.errors.append(error)
        elif key is not None:
            self.resolve(key, frame)

    def on_closed(self, exc: ConnectionClosed) -> None:
        self._delivery_ready.set()


__all__ = ["VibeClient", "VibeError", "ConnectionClosed", "COMPRESSION_NAMES"]
