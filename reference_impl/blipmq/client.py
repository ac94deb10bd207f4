"""The BlipMQ reference client: asyncio, pipelined, with POLL backoff.

Responses are matched by correlation id (ACK, NACK, PONG carry the request's). A POLL may get
no frame at all ("If no message available: Returns no frame"), so every POLL is pipelined with
a PING: a delivery arriving before that PONG answers the POLL, the PONG alone means "empty".
A QoS1 publish with ``confirm=True`` is followed by a PING the same way: its PONG proves the
broker processed (and journaled) the publish, since it answers in order.
"""
from __future__ import annotations

import asyncio
import itertools
from collections import OrderedDict, deque
from dataclasses import dataclass

from ..core.errors import FrameError
from . import codec
from .codec import Ack, Auth, Hello, Nack, Ping, Poll, Pong, Publish, Subscribe
from .session import DEFAULT_API_KEY


class NackError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"NACK {code}: {message}")
        self.code = code
        self.message = message


class ConnectionClosed(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Message:
    subscription_id: int
    tag: int
    qos: int
    topic: str
    message: bytes


class BlipClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 timeout: float = 10.0) -> None:
        self.reader, self.writer, self.timeout = reader, writer, timeout
        self.decoder = codec.Decoder()
        # Request ids start far above any delivery tag, because a QoS1 ACK's correlation id
        # (and its NACK's) is the broker's per-subscription tag, counted from 1.
        self._ids = itertools.count(1 << 40)
        self._pending: dict[int, asyncio.Future] = {}
        # outstanding POLLs in order: (poll cid, barrier cid, subscription id, future)
        self._polls: deque[tuple[int, int, int, asyncio.Future]] = deque()
        self.errors: list[NackError] = []        # NACKs of fire-and-forget frames
        # Fire-and-forget frames not yet known to be processed: cid -> write sequence. A PONG
        # proves everything written before its PING was processed (answers are in order).
        self._unconfirmed: OrderedDict[int, int] = OrderedDict()
        self._seq = 0
        self._ping_seq: dict[int, int] = {}
        self._closed: BaseException | None = None
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def connect(cls, host: str, port: int, api_key: str | None = DEFAULT_API_KEY,
                      timeout: float = 10.0) -> "BlipClient":
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        client = cls(reader, writer, timeout)
        await client.hello()
        if api_key is not None:
            await client.auth(api_key)
        return client

    # -- requests ------------------------------------------------------------------------------

    async def hello(self, version: int = codec.PROTOCOL_VERSION) -> None:
        cid = next(self._ids)
        await self._request(cid, [Hello(cid, version)])

    async def auth(self, api_key: str) -> None:
        cid = next(self._ids)
        await self._request(cid, [Auth(cid, api_key)])

    async def subscribe(self, topic: str, qos: int = 0) -> int:
        cid = next(self._ids)
        return await self._request(cid, [Subscribe(cid, topic, qos)])

    async def publish(self, topic: str, message: bytes, qos: int = 0, confirm: bool = False) -> None:
        """Fire and forget; with ``confirm`` wait until the broker has processed it (a NACK
        then raises). A NACK to an unconfirmed publish lands in :attr:`errors`."""
        cid = next(self._ids)
        await self._send_unanswered(cid, Publish(cid, qos, topic, message), confirm)

    async def ack(self, subscription_id: int, tag: int, confirm: bool = False) -> None:
        await self._send_unanswered(tag, Ack(tag, subscription_id), confirm)

    async def _send_unanswered(self, cid: int, frame, confirm: bool) -> None:
        """Send a frame that gets no answer on success."""
        if not confirm:
            self._unconfirmed[cid] = self._seq
            self._write([frame])
            return
        fut = asyncio.get_running_loop().create_future()
        self._pending[cid] = fut
        barrier = next(self._ids)
        try:
            await self._request(barrier, [frame, Ping(barrier)])
        finally:
            self._pending.pop(cid, None)
            if fut.done() and not fut.cancelled():
                fut.exception()   # retrieved here even when the barrier failed
        if fut.done():
            fut.result()      # raises the NACK

    async def poll(self, subscription_id: int) -> Message | None:
        cid, barrier = next(self._ids), next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._polls.append((cid, barrier, subscription_id, fut))
        self._pending[cid] = fut
        self._write([Poll(cid, subscription_id), Ping(barrier)])
        return await asyncio.wait_for(fut, self.timeout)

    async def consume(self, subscription_id: int, *, min_backoff: float = 0.005,
                      max_backoff: float = 0.5, auto_ack: bool = True):
        """Yield messages for ever, backing off (doubling up to ``max_backoff``) while empty."""
        delay = min_backoff
        while True:
            msg = await self.poll(subscription_id)
            if msg is None:
                await asyncio.sleep(delay)
                delay = min(max_backoff, delay * 2)
                continue
            delay = min_backoff
            if auto_ack and msg.qos == 1:
                await self.ack(subscription_id, msg.tag)
            yield msg

    async def ping(self) -> None:
        cid = next(self._ids)
        await self._request(cid, [Ping(cid)])

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass
        self._reader_task.cancel()

    async def __aenter__(self) -> "BlipClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # -- plumbing ------------------------------------------------------------------------------

    def _write(self, frames) -> None:
        if self._closed is not None:
            raise ConnectionClosed(str(self._closed))
        self._seq += 1
        for f in frames:
            if isinstance(f, Ping):
                self._ping_seq[f.correlation_id] = self._seq
        self.writer.write(b"".join(codec.encode(f) for f in frames))

    async def _request(self, cid: int, frames):
        fut = asyncio.get_running_loop().create_future()
        self._pending[cid] = fut
        self._write(frames)
        await self.writer.drain()
        return await asyncio.wait_for(fut, self.timeout)

    async def _read_loop(self) -> None:
        try:
            while data := await self.reader.read(65536):
                for frame in self.decoder.feed(data):
                    self._on_frame(frame)
            self._fail(ConnectionClosed("connection closed by the broker"))
        except (FrameError, ConnectionError, OSError) as exc:
            self._fail(ConnectionClosed(f"connection lost: {exc}"))

    def _fail(self, exc: BaseException) -> None:
        self._closed = exc
        for fut in list(self._pending.values()) + [p[3] for p in self._polls]:
            if not fut.done():
                fut.set_exception(exc)
                fut.exception()   # a waiter still gets it; nobody waiting is not an error
        self._pending.clear()
        self._polls.clear()

    def _resolve(self, cid: int, value=None, error: BaseException | None = None) -> None:
        fut = self._pending.pop(cid, None)
        if fut is None and self._unconfirmed.pop(cid, None) is not None:
            if error is not None:
                self.errors.append(error)
            return
        if fut is None or fut.done():
            if error is not None:
                self.errors.append(error)
            return
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(value)

    def _on_frame(self, frame) -> None:
        if isinstance(frame, Nack):
            err = NackError(frame.code, frame.message)
            self._resolve(frame.correlation_id, error=err)
            self._polls = deque(p for p in self._polls if p[0] != frame.correlation_id)
        elif isinstance(frame, Ack):
            self._resolve(frame.correlation_id, frame.subscription_id)
        elif isinstance(frame, Publish):   # a delivery answers the oldest outstanding POLL
            if self._polls:
                poll_cid, _, sub_id, fut = self._polls.popleft()
                self._pending.pop(poll_cid, None)
                if not fut.done():
                    fut.set_result(Message(sub_id, frame.correlation_id, frame.qos,
                                           frame.topic, frame.message))
        elif isinstance(frame, Pong):
            seq = self._ping_seq.pop(frame.correlation_id, None)
            while seq is not None and self._unconfirmed and next(iter(self._unconfirmed.values())) < seq:
                self._unconfirmed.popitem(last=False)
            if self._polls and self._polls[0][1] == frame.correlation_id:
                poll_cid, _, _, fut = self._polls.popleft()
                self._pending.pop(poll_cid, None)
                if not fut.done():
                    fut.set_result(None)
            self._resolve(frame.correlation_id)
