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

from ..core.client import ConnectionClosed, FramedClient
from . import codec
from .codec import Ack, Auth, Hello, Nack, Ping, Poll, Pong, Publish, Subscribe
from .session import DEFAULT_API_KEY


class NackError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"NACK {code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Message:
    subscription_id: int
    tag: int
    qos: int
    topic: str
    message: bytes


class BlipClient(FramedClient):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 timeout: float = 10.0) -> None:
        super().__init__(reader, writer, codec.Decoder(), timeout)
        # Request ids start far above any delivery tag, because a QoS1 ACK's correlation id
        # (and its NACK's) is the broker's per-subscription tag, counted from 1.
        self._ids = itertools.count(1 << 40)
        # outstanding POLLs in order: (poll cid, barrier cid, subscription id, future)
        self._polls: deque[tuple[int, int, int, asyncio.Future]] = deque()
        self.errors: list[NackError] = []        # NACKs of fire-and-forget frames
        # Fire-and-forget frames not yet known to be processed: cid -> write sequence. A PONG
        # proves everything written before its PING was processed (answers are in order).
        self._unconfirmed: OrderedDict[int, int] = OrderedDict()
        self._seq = 0
        self._ping_seq: dict[int, int] = {}

    @classmethod
    async def connect(cls, host: str, port: int, api_key: str | None = DEFAULT_API_KEY,
                      timeout: float = 10.0) -> "BlipClient":
        client = cls(*await cls.open_stream(host, port, timeout), timeout)
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
        fut = self.expect(cid)
        barrier = next(self._ids)
        try:
            await self._request(barrier, [frame, Ping(barrier)])
        finally:
            self.forget(cid)
            if fut.done() and not fut.cancelled():
                fut.exception()   # retrieved here even when the barrier failed
        if fut.done():
            fut.result()      # raises the NACK

    async def poll(self, subscription_id: int) -> Message | None:
        cid, barrier = next(self._ids), next(self._ids)
        fut = self.expect(cid)
        self._polls.append((cid, barrier, subscription_id, fut))
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

    # -- plumbing ------------------------------------------------------------------------------

    def _encode(self, frames) -> bytes:
        """Bytes of one write; remembers which write each barrier PING belongs to."""
        self._seq += 1
        for f in frames:
            if isinstance(f, Ping):
                self._ping_seq[f.correlation_id] = self._seq
        return b"".join(codec.encode(f) for f in frames)

    def _write(self, frames) -> None:
        self.write(self._encode(frames))

    async def _request(self, cid: int, frames):
        return await self.request(cid, self._encode(frames))

    def on_closed(self, exc: ConnectionClosed) -> None:
        for *_, fut in self._polls:
            if not fut.done():
                fut.set_exception(exc)
                fut.exception()
        self._polls.clear()

    def _resolve(self, cid: int, value=None, error: BaseException | None = None) -> None:
        if cid not in self._pending and self._unconfirmed.pop(cid, None) is not None:
            if error is not None:       # the NACK of a fire-and-forget frame
                self.errors.append(error)
            return
        if not self.resolve(cid, value, error) and error is not None:
            self.errors.append(error)

    def on_frame(self, frame) -> None:
        if isinstance(frame, Nack):
            err = NackError(frame.code, frame.message)
            self._resolve(frame.correlation_id, error=err)
            self._polls = deque(p for p in self._polls if p[0] != frame.correlation_id)
        elif isinstance(frame, Ack):
            self._resolve(frame.correlation_id, frame.subscription_id)
        elif isinstance(frame, Publish):   # a delivery answers the oldest outstanding POLL
            if self._polls:
                poll_cid, _, sub_id, fut = self._polls.popleft()
                self.forget(poll_cid)
                if not fut.done():
                    fut.set_result(Message(sub_id, frame.correlation_id, frame.qos,
                                           frame.topic, frame.message))
        elif isinstance(frame, Pong):
            seq = self._ping_seq.pop(frame.correlation_id, None)
            while seq is not None and self._unconfirmed and next(iter(self._unconfirmed.values())) < seq:
                self._unconfirmed.popitem(last=False)
            if self._polls and self._polls[0][1] == frame.correlation_id:
                poll_cid, _, _, fut = self._polls.popleft()
                self.forget(poll_cid)
                if not fut.done():
                    fut.set_result(None)
            self._resolve(frame.correlation_id)
