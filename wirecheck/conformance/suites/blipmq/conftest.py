"""Helpers of the BlipMQ suite: connections that speak the handshake, the PING barrier, and
unique topic names (tests never share state, so they run in any order and under xdist)."""
from __future__ import annotations

import itertools
import os
import time
import uuid

import pytest

from wirecheck.conformance.target.connection import TargetError, pace
from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import Ack, Auth, Hello, Nack, Ping, Poll, Pong, Publish, Subscribe


class Blip:
    """Suite-side vocabulary for BlipMQ; does no I/O until a test calls it."""

    def __init__(self, target) -> None:
        self.target = target
        self.profile = target.profile
        self.api_key = target.profile.credentials.get("api_key", "dev-key")
        self._cids = itertools.count(0x1000 + (os.getpid() % 1000) * 0x10000)
        self.retry_backoff = float(target.profile.timing.get("retry_backoff", 0.1))
        self.max_retries = int(target.profile.timing.get("max_retries", 3))
        self._tags: dict = {}        # (connection, subscription) -> {delivery tag: (topic, message)}

    def cid(self) -> int:
        return next(self._cids)

    def topic(self, label: str = "t") -> str:
        return f"wirecheck.{label}.{uuid.uuid4().hex[:12]}"

    def connect(self, *, hello: bool = True, auth: bool = True, name: str = ""):
        conn = self.target.connect(name)
        if hello:
            cid = self.cid()
            conn.send(Hello(cid, 1))
            conn.expect(Ack, correlation_id=cid, subscription_id=0)
        if hello and auth:
            cid = self.cid()
            conn.send(Auth(cid, self.api_key))
            conn.expect(Ack, correlation_id=cid, subscription_id=0)
        return conn

    def barrier(self, conn, what: str = "") -> None:
        """Prove that nothing was answered to the frames sent before: a PING sent now must get
        its PONG as the very next frame (DESIGN.md: a barrier, never a sleep)."""
        cid = self.cid()
        conn.send(Ping(cid))
        frame = conn.recv(expecting=f"PONG({cid}) as barrier")
        if not (isinstance(frame, Pong) and frame.correlation_id == cid):
            d = self.target.spec.frame_to_dict(frame)
            raise TargetError(f"expected no answer{' to ' + what if what else ''}, but got {d} "
                              f"before the barrier PONG")

    def subscribe(self, conn, topic: str, qos: int) -> int:
        cid = self.cid()
        conn.send(Subscribe(cid, topic, qos))
        ack = conn.expect(Ack, correlation_id=cid)
        if ack.subscription_id == 0:
            raise TargetError("SUBSCRIBE answered with subscription_id 0")
        return ack.subscription_id

    def publish(self, conn, topic: str, message: bytes, qos: int = 0) -> None:
        """Publish and prove it was accepted (no NACK before the barrier)."""
        conn.send(Publish(self.cid(), qos, topic, message))
        self.barrier(conn, "PUBLISH")

    def poll(self, conn, sub_id: int):
        """The delivery answering a POLL, or None when the barrier shows there was none."""
        cid = self.cid()
        conn.send(Poll(cid, sub_id))
        barrier = self.cid()
        conn.send(Ping(barrier))
        frame = conn.recv(expecting="delivery or barrier PONG")
        if isinstance(frame, Pong) and frame.correlation_id == barrier:
            return None
        if not isinstance(frame, Publish):
            raise TargetError(f"POLL answered with {self.target.spec.frame_to_dict(frame)}")
        conn.expect(Pong, correlation_id=barrier)
        return frame, cid

    def poll_new(self, conn, sub_id: int, limit: int = 64):
        """Like :meth:`poll`, but a redelivery is passed over: a QoS1 PUBLISH whose delivery
        tag (its correlation_id, "PUBLISH" in the document) this subscription already got.
        The target redelivers an unacknowledged message when its timer fires, and whether
        that happens before a given POLL depends on how fast the bytes travel, so a test of
        order or of "nothing more" must not count it. A repeated tag must carry the same
        message. At most ``limit`` redeliveries are passed over (the timer's retries are few)."""
        seen = self._tags.setdefault((id(conn), sub_id), {})
        for _ in range(limit):
            got = self.poll(conn, sub_id)
            if got is None:
                return None
            frame = got[0]
            if frame.qos != 1 or frame.correlation_id not in seen:
                if frame.qos == 1:
                    seen[frame.correlation_id] = (frame.topic, frame.message)
                return got
            if seen[frame.correlation_id] != (frame.topic, frame.message):
                raise TargetError(f"delivery tag {frame.correlation_id} came again with a different "
                                  f"message: {seen[frame.correlation_id]!r}, now {(frame.topic, frame.message)!r}")
        raise TargetError(f"{limit} redeliveries in a row and nothing new on subscription {sub_id}")

    def poll_until(self, conn, sub_id: int, deadline: float):
        """Poll (barrier-paced, a few ms apart) until a delivery or the deadline."""
        while True:
            got = self.poll(conn, sub_id)
            if got is not None or time.monotonic() >= deadline:
                return got
            pace(0.01)

    def expect_nack(self, conn, cid: int, code: int, message: str | None = None):
        fields = {"correlation_id": cid, "code": code}
        if message is not None:
            fields["message"] = message
        return conn.expect(Nack, **fields)


@pytest.fixture
def blip(target):
    return Blip(target)


raw = codec.encode_raw
