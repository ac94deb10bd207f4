"""Helpers of the VibeMQ suite: connections that run Connect (password from the profile's
credentials, compression preferences per test), the Ping barrier, unique queue names, and the
accepted shapes of an error.

The profile says which reading the target follows (``document``, ``vibemq-1.8``,
``vibemq-1.0``): its framing (1.0 has no compression flags byte), how the suite writes
messages (the document writes errorCode/errorMessage in every message, the real codec only in
Error), and, through ``[features]``, the answers that differ (ConnectAck and PublishAck
headers, implicit queues). ``[timing]`` gives the target's ack timeout and retry backoff so
redelivery tests stay short.
"""
from __future__ import annotations

import itertools
import os
import uuid

import pytest

from wirecheck.conformance.target.connection import CLOSE, Connection, Outcome, TargetError
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import CommandType as T

#: What the suite accepts from a target (its own bound: a Deliver may be large).
MAX_INCOMING = 64 * 1024 * 1024


def _attempt(message) -> int:
    """The Deliver's ``deliveryAttempts`` header (1 where it is absent or not a number)."""
    try:
        return int(message.header("deliveryAttempts") or 1)
    except (TypeError, ValueError):
        return 1


class Vibe:
    """Suite-side vocabulary for VibeMQ; does no I/O until a test calls it."""

    def __init__(self, target) -> None:
        self.target = target
        self.profile = target.profile
        self.reading = target.profile.base or "document"
        creds = target.profile.credentials
        self.password = creds.get("password", "vibemq")
        self.username = creds.get("username")
        self._ids = itertools.count(1)
        self._prefix = f"{os.getpid() % 10000}-{uuid.uuid4().hex[:6]}"
        #: Deliveries seen in this test, by (queue, message id). A Deliver of one again is a
        #: redelivery ("Deliver": a message not acked in time is sent again): whether the ack
        #: timer fires before the ack arrives depends on the link's pace, so :meth:`recv`
        #: passes over redeliveries unless the test is about them (``keep_redeliveries``).
        self.delivered: set = set()
        self.keep_redeliveries = False

    # -- names -----------------------------------------------------------------------------

    def new_id(self, label: str = "m") -> str:
        return f"{label}-{self._prefix}-{next(self._ids)}"

    def queue(self, label: str = "q") -> str:
        return f"wirecheck-{label}-{uuid.uuid4().hex[:10]}"

    def timing(self, name: str, default: float) -> float:
        return float(self.profile.timing.get(name, default))

    def feature(self, name: str, default: bool = True) -> bool:
        return self.profile.feature(name, default)

    # -- connections -----------------------------------------------------------------------

    def decoder(self) -> codec.Decoder:
        return codec.Decoder(codec.VibeLimits(max_frame_size=MAX_INCOMING), profile=self.reading,
                             origin="server")

    def encode(self, message: Message, compression: int | None = None) -> bytes:
        return codec.encode(message, self.reading, compression)

    def open(self, name: str = "") -> Connection:
        return self.target.connect(name, decoder=self.decoder(), encode=lambda m: self.encode(m))

    def connect_message(self, *, password: str | None = None, compression: str | None = None,
                        **headers) -> Message:
        hdrs = {"authPassword": self.password if password is None else password}
        if self.username:
            hdrs["authUsername"] = self.username
        if compression is not None:
            hdrs["supported-compression"] = compression
        hdrs.update(headers)
        return Message(T.CONNECT, self.new_id("conn"), headers=hdrs)

    def connect(self, *, compression: str | None = None, name: str = "") -> Connection:
        """A connection past Connect/ConnectAck; the ConnectAck is kept as ``conn.connect_ack``."""
        conn = self.open(name)
        conn.send(self.connect_message(compression=compression))
        ack = self.recv(conn, "ConnectAck")
        if ack.type != T.CONNECT_ACK:
            raise TargetError(f"expected ConnectAck, got {codec.frame_to_dict(ack)}")
        conn.connect_ack = ack
        return conn

    # -- receiving -------------------------------------------------------------------------

    def recv(self, conn, expecting: str = "a message", timeout: float | None = None) -> Message:
        while True:
            message = conn.recv(timeout, expecting=expecting)
            if message.type != T.DELIVER:
                return message
            # Again on this connection, or (fan-out sends one message to every subscriber, a
            # redelivery may go to another) anywhere in this test with deliveryAttempts above 1.
            key = (message.queue, message.id)
            again = (id(conn), key) in self.delivered or (
                key in self.delivered and _attempt(message) > 1)
            if not again or self.keep_redeliveries:
                self.delivered.update(((id(conn), key), key))
                return message
            conn.transcript.add("--", b"", f"a redelivery of {message.id} passed over (the ack "
                                           "timer's pace, not this test's matter)")

    def expect(self, conn, kind: int, expecting: str = "", *, timeout: float | None = None,
               **fields) -> Message:
        message = self.recv(conn, expecting or T(kind).name, timeout)
        if message.type != kind:
            raise TargetError(f"expected {T(kind).name}, got {codec.frame_to_dict(message)}")
        wrong = {k: getattr(message, k) for k, v in fields.items() if getattr(message, k) != v}
        if wrong:
            raise TargetError(f"expected {T(kind).name} with {fields}, got {codec.frame_to_dict(message)}")
        return message

    def expect_error(self, conn, codes, expecting: str = "") -> Message:
        """An Error whose errorCode is one of ``codes``."""
        codes = {codes} if isinstance(codes, str) else set(codes)
        message = self.recv(conn, expecting or f"Error {'/'.join(sorted(codes))}")
        if message.type != T.ERROR or message.error_code not in codes:
            raise TargetError(f"expected Error {sorted(codes)}, got {codec.frame_to_dict(message)}")
        return message

    def expect_error_or_close(self, conn, codes, reason: str) -> str:
        """Accepted: an Error with one of ``codes`` (the connection may close after it), or
        the connection dropped. Returns "error" or "closed"."""
        codes = {codes} if isinstance(codes, str) else set(codes)
        error = Outcome(f"Error {'/'.join(sorted(codes))}",
                        lambda m: m.type == T.ERROR and m.error_code in codes)
        outcome, _ = conn.expect_one_of(error, CLOSE, reason=reason)
        return "error" if outcome is error else "closed"

    def barrier(self, conn, after: str = "") -> None:
        """Prove nothing else is queued: a Ping whose Pong must be the next message."""
        pid = self.new_id("ping")
        conn.send(Message(T.PING, pid))
        message = self.recv(conn, f"the barrier's Pong{' after ' + after if after else ''}")
        if message.type != T.PONG or message.id != pid:
            raise TargetError(f"expected only the barrier's Pong({pid}){' after ' + after if after else ''}, "
                              f"got {codec.frame_to_dict(message)}")

    # -- operations ------------------------------------------------------------------------

    def create_queue(self, conn, name: str | None = None, **settings) -> str:
        name = name or self.queue()
        headers = {k: str(v) for k, v in settings.items()}
        conn.send(Message(T.CREATE_QUEUE, self.new_id("create"), name, headers=headers or None))
        message = self.recv(conn, f"the answer to CreateQueue({name})")
        if message.type == T.ERROR:
            raise TargetError(f"CreateQueue({name}) failed: {codec.frame_to_dict(message)}")
        return name

    def subscribe(self, conn, queue: str) -> Message:
        sid = self.new_id("sub")
        conn.send(Message(T.SUBSCRIBE, sid, queue))
        return self.expect(conn, T.SUBSCRIBE_ACK, f"SubscribeAck({queue})")

    def publish(self, conn, queue: str, payload=None, **headers) -> str:
        mid = self.new_id("msg")
        conn.send(Message(T.PUBLISH, mid, queue, payload, headers or None))
        self.expect(conn, T.PUBLISH_ACK, f"PublishAck({mid})")
        return mid


@pytest.fixture
def vibe(target):
    return Vibe(target)


def raw_body(vibe, kind: int, mid: bytes = b"x", queue: bytes = b"", payload: bytes = b"",
             headers: bytes = b"\x00\x00") -> bytes:
    """A message body written by hand (for what the encoder refuses): fields as given, raw."""
    body = bytes([1, kind]) + len(mid).to_bytes(2, "big") + mid + len(queue).to_bytes(2, "big") + queue
    body += len(payload).to_bytes(4, "big") + payload + headers
    if vibe.reading == "document":
        body += b"\x00\x00\x00\x00"                    # errorCode, errorMessage: absent
    return body


def raw_frame(vibe, body: bytes, flags: int = 0) -> bytes:
    head = len(body).to_bytes(4, "big")
    return head + (b"" if vibe.reading == "vibemq-1.0" else bytes([flags])) + body
