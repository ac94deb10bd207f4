"""asyncio client for RabbitMQ Stream: the whole command set, used by the suite, the
benchmarks and the tests (against the reference broker and a real RabbitMQ alike).

Requests return the decoded response frame (the caller reads ``.code``); nothing raises on a
non-OK code, because the suite needs to see every code. Deliveries, confirms, publish errors,
metadata updates and credit errors are kept in per-kind asyncio queues. The server's Tune is
answered automatically (smaller value of each side), its Close is answered with CloseResponse,
and heartbeats are sent when negotiated.
"""
from __future__ import annotations

import asyncio
import itertools
from typing import Optional

from ..core.client import ConnectionClosed, FramedClient
from . import codec
from .constants import Code, OffsetType

__all__ = ["StreamClient", "ConnectionClosed"]


class StreamClient(FramedClient):
    def __init__(self, reader, writer, *, timeout: float = 10.0, limits=None,
                 auto_credit: bool = False) -> None:
        super().__init__(reader, writer, codec.Decoder(limits or codec.StreamConfig(max_frame_size=0),
                                                      origin="server"),
                         timeout)
        self._ids = itertools.count(1)
        self.auto_credit = auto_credit
        self.tune: Optional[codec.Tune] = None
        self.frame_max = 0
        self.heartbeat = 0
        self.wanted_frame_max: Optional[int] = None
        self.wanted_heartbeat: Optional[int] = None
        self.tuned = asyncio.get_running_loop().create_future()
        self.deliveries: dict[int, asyncio.Queue] = {}
        self.confirms: dict[int, asyncio.Queue] = {}
        self.errors: dict[int, asyncio.Queue] = {}
        self.metadata_updates: asyncio.Queue = asyncio.Queue()
        self.credit_errors: asyncio.Queue = asyncio.Queue()
        self.server_close: Optional[codec.Close] = None
        self.consumer_updates: asyncio.Queue = asyncio.Queue()
        self.heartbeats_received = 0
        self._heartbeat_task: Optional[asyncio.Task] = None

    # -- connecting ----------------------------------------------------------------------------

    @classmethod
    async def connect(cls, host: str, port: int, *, user: str = "guest", password: str = "guest",
                      vhost: str = "/", timeout: float = 10.0, handshake: bool = True,
                      frame_max: Optional[int] = None, heartbeat: Optional[int] = None,
                      auto_credit: bool = False, properties: Optional[dict] = None) -> "StreamClient":
        reader, writer = await cls.open_stream(host, port, timeout)
        client = cls(reader, writer, timeout=timeout, auto_credit=auto_credit)
        client.wanted_frame_max, client.wanted_heartbeat = frame_max, heartbeat
        if handshake:
            try:
                await client.handshake(user, password, vhost, properties)
            except BaseException:
                await client.close()
                raise
        return client

    async def handshake(self, user: str, password: str, vhost: str = "/",
                        properties: Optional[dict] = None) -> codec.OpenResponse:
        """PeerProperties, SaslHandshake, SaslAuthenticate (PLAIN), Tune, Open; raises
        ConnectionError naming the step that failed."""
        r = await self.peer_properties(properties or {"product": "wirecheck-client"})
        _check(r, "PeerProperties")
        r = await self.sasl_handshake()
        _check(r, "SaslHandshake")
        r = await self.sasl_authenticate("PLAIN", b"\0" + user.encode() + b"\0" + password.encode())
        _check(r, "SaslAuthenticate")
        await asyncio.wait_for(asyncio.shield(self.tuned), self.timeout)
        r = await self.open(vhost)
        _check(r, "Open")
        return r

    # -- frames in -----------------------------------------------------------------------------

    def on_frame(self, frame) -> None:
        t = type(frame)
        if t is codec.Deliver:
            self._queue(self.deliveries, frame.subscription_id).put_nowait(frame)
            if self.auto_credit:
                self.send(codec.Credit(frame.subscription_id, 1))
        elif t is codec.PublishConfirm:
            self._queue(self.confirms, frame.publisher_id).put_nowait(frame)
        elif t is codec.PublishError:
            self._queue(self.errors, frame.publisher_id).put_nowait(frame)
        elif t is codec.Tune:
            self._on_tune(frame)
        elif t is codec.Heartbeat:
            self.heartbeats_received += 1
        elif t is codec.MetadataUpdate:
            self.metadata_updates.put_nowait(frame)
        elif t is codec.CreditResponse:
            self.credit_errors.put_nowait(frame)
        elif t is codec.Close:
            self.server_close = frame
            self.send(codec.CloseResponse(frame.correlation_id, Code.OK))
        elif t is codec.ConsumerUpdate:
            self.consumer_updates.put_nowait(frame)
        elif hasattr(frame, "correlation_id"):
            self.resolve(frame.correlation_id, frame)

    def on_closed(self, exc) -> None:
        if not self.tuned.done():
            self.tuned.set_exception(exc)
            self.tuned.exception()
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()

    def _on_tune(self, tune: codec.Tune) -> None:
        self.tune = tune
        self.frame_max = _smaller(tune.frame_max, self.wanted_frame_max)
        self.heartbeat = _smaller(tune.heartbeat, self.wanted_heartbeat)
        self.send(codec.TuneResponse(self.frame_max, self.heartbeat))
        if self.heartbeat:
            self._heartbeat_task = asyncio.get_running_loop().create_task(self._beat())
        if not self.tuned.done():
            self.tuned.set_result(tune)

    async def _beat(self) -> None:
        try:
            while True:
                await asyncio.sleep(self.heartbeat)
                self.send(codec.Heartbeat())
        except (ConnectionClosed, OSError):
            pass

    @staticmethod
    def _queue(table: dict, key: int) -> asyncio.Queue:
        q = table.get(key)
        if q is None:
            q = table[key] = asyncio.Queue()
        return q

    # -- frames out ----------------------------------------------------------------------------

    def send(self, frame) -> None:
        self.write(codec.encode(frame))

    def next_id(self) -> int:
        return next(self._ids)

    async def call(self, make) -> object:
        """``make(correlation_id)`` builds the request; returns the correlated response."""
        corr = self.next_id()
        return await self.request(corr, codec.encode(make(corr)))

    async def peer_properties(self, properties: dict):
        return await self.call(lambda c: codec.PeerProperties(c, properties))

    async def sasl_handshake(self):
        return await self.call(codec.SaslHandshake)

    async def sasl_authenticate(self, mechanism: str, data: Optional[bytes]):
        return await self.call(lambda c: codec.SaslAuthenticate(c, mechanism, data))

    async def open(self, vhost: str = "/"):
        return await self.call(lambda c: codec.Open(c, vhost))

    async def create(self, stream: str, arguments: Optional[dict] = None):
        return await self.call(lambda c: codec.Create(c, stream, arguments or {}))

    async def delete(self, stream: str):
        return await self.call(lambda c: codec.Delete(c, stream))

    async def metadata(self, *streams: str):
        return await self.call(lambda c: codec.Metadata(c, tuple(streams)))

    async def declare_publisher(self, publisher_id: int, stream: str, reference: str = ""):
        return await self.call(lambda c: codec.DeclarePublisher(c, publisher_id, reference, stream))

    async def delete_publisher(self, publisher_id: int):
        return await self.call(lambda c: codec.DeletePublisher(c, publisher_id))

    async def query_publisher_sequence(self, reference: str, stream: str):
        return await self.call(lambda c: codec.QueryPublisherSequence(c, reference, stream))

    def publish(self, publisher_id: int, messages, version: int = 1) -> None:
        """``messages``: (publishing id, body) pairs or :class:`codec.PublishedMessage`."""
        msgs = tuple(m if isinstance(m, codec.PublishedMessage) else codec.PublishedMessage(*m)
                     for m in messages)
        self.send(codec.Publish(publisher_id, msgs, version))

    async def wait_confirms(self, publisher_id: int, ids, timeout: Optional[float] = None) -> dict:
        """Wait until every id in ``ids`` is confirmed or errored: {id: Code}."""
        waiting = set(ids)
        out: dict[int, int] = {}
        confirms = self._queue(self.confirms, publisher_id)
        errors = self._queue(self.errors, publisher_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (timeout or self.timeout)
        while waiting:
            for q in (errors, confirms):
                while not q.empty():
                    frame = q.get_nowait()
                    if isinstance(frame, codec.PublishConfirm):
                        for pid in frame.publishing_ids:
                            out[pid] = Code.OK
                            waiting.discard(pid)
                    else:
                        for pid, code in frame.errors:
                            out[pid] = code
                            waiting.discard(pid)
            if not waiting:
                break
            left = deadline - loop.time()
            if left <= 0:
                raise asyncio.TimeoutError(f"{len(waiting)} publishing id(s) neither confirmed nor errored")
            getters = [loop.create_task(confirms.get()), loop.create_task(errors.get())]
            # the read loop ends with the connection: nothing more can be confirmed then, so
            # it wakes this wait too (else a closed connection waited out the whole timeout)
            done, _ = await asyncio.wait([*getters, self._reader_task], timeout=left,
                                         return_when=asyncio.FIRST_COMPLETED)
            got = False
            for t, q in zip(getters, (confirms, errors)):
                if t in done and not t.cancelled():
                    q.put_nowait(t.result())      # re-queue; handled on the next pass
                    got = True
                else:
                    t.cancel()
            if not got and self._reader_task.done():
                raise ConnectionClosed(str(self._closed or "the client was closed"))
        return out

    async def subscribe(self, subscription_id: int, stream: str,
                        offset_type: int = OffsetType.FIRST, offset: Optional[int] = None,
                        credit: int = 10, properties: Optional[dict] = None):
        return await self.call(lambda c: codec.Subscribe(c, subscription_id, stream, offset_type,
                                                         offset, credit, properties or {}))

    def credit(self, subscription_id: int, credit: int) -> None:
        self.send(codec.Credit(subscription_id, credit))

    async def next_delivery(self, subscription_id: int, timeout: Optional[float] = None) -> codec.Deliver:
        q = self._queue(self.deliveries, subscription_id)
        return await asyncio.wait_for(q.get(), timeout or self.timeout)

    async def unsubscribe(self, subscription_id: int):
        return await self.call(lambda c: codec.Unsubscribe(c, subscription_id))

    def store_offset(self, reference: str, stream: str, offset: int) -> None:
        self.send(codec.StoreOffset(reference, stream, offset))

    async def query_offset(self, reference: str, stream: str):
        return await self.call(lambda c: codec.QueryOffset(c, reference, stream))

    async def route(self, routing_key: str, super_stream: str):
        return await self.call(lambda c: codec.Route(c, routing_key, super_stream))

    async def partitions(self, super_stream: str):
        return await self.call(lambda c: codec.Partitions(c, super_stream))

    async def stream_stats(self, stream: str):
        return await self.call(lambda c: codec.StreamStats(c, stream))

    async def exchange_command_versions(self, versions):
        return await self.call(lambda c: codec.ExchangeCommandVersions(c, tuple(versions)))

    async def create_super_stream(self, name: str, partitions, binding_keys, arguments=None):
        return await self.call(lambda c: codec.CreateSuperStream(c, name, tuple(partitions),
                                                                 tuple(binding_keys), arguments or {}))

    async def delete_super_stream(self, name: str):
        return await self.call(lambda c: codec.DeleteSuperStream(c, name))

    async def close_connection(self, code: int = Code.OK, reason: str = "bye"):
        """Close (key 22) and wait for the server's CloseResponse."""
        return await self.call(lambda c: codec.Close(c, code, reason))


def _smaller(offer: int, wanted: Optional[int]) -> int:
    if wanted is None:
        return offer
    if offer == 0 or wanted == 0:
        return offer or wanted
    return min(offer, wanted)


def _check(response, step: str) -> None:
    if getattr(response, "code", Code.OK) != Code.OK:
        raise ConnectionError(f"{step} refused: {codec.code_name(response.code)}")
