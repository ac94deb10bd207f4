"""Crash recovery: what the server confirmed or stored outlives ``kill -9``.

The document names the confirm (PublishConfirm), the stored offset (StoreOffset, QueryOffset)
and the stored publishing sequence (QueryPublisherSequence) but says nothing of a crash;
streams are RabbitMQ's persistent logs, so the kit reads "stored" as outliving the server
process (requirements RMQS-STORE-*, source "reading": SHOULD, so a loss is NON-STRICT, a
failure under ``--strict``). The kit kills the target it runs (``--target-command``; the
``target_process`` fixture) and starts it again on the same data; without that these tests
are SKIPPED; a profile with ``[features] durable = false`` (streams in memory) makes them
UNIMPLEMENTED.

After the restart a server may take a moment before a stream is available again (RabbitMQ
recovers its streams after it accepts connections): the tests retry while it answers "stream
not available" or "does not exist", for :data:`RECOVERY_WAIT` seconds (a floor; ten receive
timeouts when those are longer), and only then call the data lost.
"""
import time

import pytest

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.target.connection import TargetClosed, TargetError, TargetTimeout, pace
from wirecheck.reference_impl.rabbitmq_stream.codec import (Deliver, Heartbeat, Publish, PublishConfirm, PublishedMessage,
                                                  QueryOffset, QueryOffsetResponse, QueryPublisherSequence,
                                                  QueryPublisherSequenceResponse, StoreOffset, Subscribe,
                                                  SubscribeResponse)
from wirecheck.reference_impl.rabbitmq_stream.constants import Code, OffsetType

from .conftest import describe, messages_of

RECOVERY_WAIT = 10.0
#: Answers that mean "not back yet" rather than "gone" while the wait lasts.
_NOT_YET = (Code.STREAM_NOT_AVAILABLE, Code.STREAM_DOES_NOT_EXIST)
_HINT = ("a target that keeps its streams in memory keeps nothing across a crash: set "
         "[features] durable = false in its profile")
#: What is said instead when something did come back: the target keeps data, so a profile
#: change would only hide the defect.
_KEPT = "the stream came back, so the target does keep data across a crash: what it lost is a defect of that recovery"


def _advice(kept: bool) -> str:
    """The hint that fits what was observed: a profile change only when nothing came back."""
    return _KEPT if kept else _HINT


def _durable(rmqs) -> None:
    if not rmqs.profile.feature("durable"):
        verdicts.unimplemented("durable (the profile says the target keeps its streams in memory)")


def _deadline(rmqs) -> float:
    return time.monotonic() + max(RECOVERY_WAIT, 10 * rmqs.target.timeout)


def _body(label: str, i: int) -> bytes:
    return f"{label}-{i:05d}-".encode() + bytes([i % 251]) * (i % 41)


def _name(body: bytes) -> str:
    return "-".join(p.decode() for p in body.split(b"-")[:2])


def _names(bodies) -> str:
    bodies = list(bodies)
    return ", ".join(_name(b) for b in bodies[:5]) + (" ..." if len(bodies) > 5 else "")


def _retry(rmqs, conn, make, response_class, what: str):
    """Send ``make(cid)`` until the answer's code is not one of :data:`_NOT_YET` or the wait
    is over; (the last answer, the connection). A connection the server closes meanwhile (as
    RabbitMQ does to a request on a stream it is still recovering) is opened again; Heartbeats
    (legal at any time) are passed over."""
    deadline = _deadline(rmqs)
    while True:
        cid = rmqs.cid()
        try:
            conn.send(make(cid))
            frame = conn.recv(expecting=f"{what} answer")
            while isinstance(frame, Heartbeat):
                frame = conn.recv(expecting=f"{what} answer")
        except TargetClosed:
            if time.monotonic() >= deadline:
                raise
            pace(0.2)
            conn = rmqs.connect(name=f"after the restart ({what} again)")
            continue
        if not isinstance(frame, response_class) or frame.correlation_id != cid:
            raise TargetError(f"expected the {what} answer ({cid}), got {describe(frame)}")
        if frame.code not in _NOT_YET or time.monotonic() >= deadline:
            return frame, conn
        pace(0.2)


def _read_back(rmqs, stream: str, wanted: list[bytes]) -> list[bytes]:
    """The bodies a subscription from the first offset delivers after the restart, read until
    every one of ``wanted`` has come or the wait is over."""
    conn = rmqs.connect(name="after the restart")
    answer, conn = _retry(rmqs, conn, lambda cid: Subscribe(cid, 1, stream, int(OffsetType.FIRST), None, 1000, {}),
                          SubscribeResponse, "Subscribe")
    if answer.code != Code.OK:
        pytest.fail(f"after kill -9 and restart, Subscribe to the stream answers code {answer.code} "
                    f"after {RECOVERY_WAIT:g} s: the stream holding {len(wanted)} confirmed messages is "
                    f"gone ({_HINT})", pytrace=False)
    got: list[bytes] = []
    deadline = _deadline(rmqs)
    want = set(wanted)
    while not want <= set(got) and time.monotonic() < deadline:
        try:
            frame = conn.recv(expecting="Deliver of the recovered messages")
        except TargetTimeout:
            continue                          # nothing yet: the deadline decides
        if isinstance(frame, Heartbeat):
            continue
        if not isinstance(frame, Deliver) or frame.subscription_id != 1:
            raise TargetError(f"expected Deliver for subscription 1, got {describe(frame)}")
        got.extend(body for _offset, body in messages_of(frame))
    return got


def _judge(sent: list[bytes], confirmed: list[bytes], got: list[bytes], how: str) -> None:
    stranger = [b for b in got if b not in set(sent)]
    assert not stranger, f"after {how}, the stream delivers messages never published: {stranger[:3]!r}"
    lost = [b for b in confirmed if b not in set(got)]
    assert not lost, (f"after {how}, {len(lost)} of {len(confirmed)} confirmed messages are not in the "
                      f"stream: {_names(lost)} ({_advice(bool(got))})")
    twice = sorted({b for b in got if got.count(b) > 1})
    assert not twice, f"after {how}, messages stored twice: {_names(twice)}"
    order = [sent.index(b) for b in got]
    assert order == sorted(order), f"after {how}, the stream holds the messages out of order: " \
                                   f"{_names(got)}"


@pytest.mark.requirement("RMQS-STORE-001")
def test_confirmed_messages_survive_kill(rmqs, target_process):
    _durable(rmqs)
    pub = rmqs.connect(name="publisher")
    stream = rmqs.create(pub, "durable")
    rmqs.declare(pub, 1, stream)
    sent = [_body("confirmed", i) for i in range(30)]
    for first in range(0, 30, 10):
        rmqs.publish(pub, 1, [PublishedMessage(i + 1, sent[i]) for i in range(first, first + 10)])
    target_process.kill_and_restart()
    _judge(sent, sent, _read_back(rmqs, stream, sent), "kill -9")


@pytest.mark.requirement("RMQS-STORE-001")
def test_messages_confirmed_before_a_kill_mid_batch_survive(rmqs, target_process):
    """Ten Publish frames in one write; the kill comes once 30 publishing ids are confirmed,
    while the others may be in flight: those may or may not be stored, in order either way."""
    _durable(rmqs)
    pub = rmqs.connect(name="publisher")
    stream = rmqs.create(pub, "batch")
    rmqs.declare(pub, 1, stream)
    sent = [_body("batch", i) for i in range(100)]
    pub.send(*[Publish(1, tuple(PublishedMessage(i + 1, sent[i]) for i in range(first, first + 10)))
               for first in range(0, 100, 10)])
    confirmed: set[int] = set()
    while len(confirmed) < 30:
        frame = pub.recv(expecting="PublishConfirm")
        if not isinstance(frame, PublishConfirm) or frame.publisher_id != 1:
            raise TargetError(f"waiting for confirms, got {describe(frame)}")
        confirmed.update(frame.publishing_ids)
    target_process.kill_and_restart()
    wanted = [sent[i - 1] for i in sorted(confirmed)]
    _judge(sent, wanted, _read_back(rmqs, stream, wanted), "a kill -9 in the middle of a batch")


@pytest.mark.requirement("RMQS-STORE-002")
def test_stored_offset_survives_kill(rmqs, target_process):
    _durable(rmqs)
    conn = rmqs.connect()
    stream = rmqs.create(conn, "offset")
    rmqs.declare(conn, 1, stream)
    rmqs.publish(conn, 1, [PublishedMessage(i + 1, _body("offset", i)) for i in range(5)])
    conn.send(StoreOffset("wirecheck-consumer", stream, 3))
    answer, conn = _retry(rmqs, conn, lambda cid: QueryOffset(cid, "wirecheck-consumer", stream),
                          QueryOffsetResponse, "QueryOffset")
    if (answer.code, answer.offset) != (Code.OK, 3):
        raise TargetError(f"before the kill, QueryOffset after StoreOffset(3) answers code {answer.code} "
                          f"offset {answer.offset}")
    target_process.kill_and_restart()
    conn = rmqs.connect(name="after the restart")
    answer, conn = _retry(rmqs, conn, lambda cid: QueryOffset(cid, "wirecheck-consumer", stream),
                          QueryOffsetResponse, "QueryOffset")
    assert (answer.code, answer.offset) == (Code.OK, 3), (
        f"after kill -9 and restart, QueryOffset of the offset stored (and queried back) before the "
        f"kill answers code {answer.code} offset {answer.offset}, not code 1 offset 3 "
        f"({_advice(answer.code != Code.STREAM_DOES_NOT_EXIST)})")


@pytest.mark.requirement("RMQS-STORE-003")
def test_publisher_sequence_survives_kill(rmqs, target_process):
    """Ids 1-10 confirmed under a reference, the kill, then QueryPublisherSequence (10), and ids
    9-12 sent again under the same reference: 9 and 10 are confirmed but not stored twice."""
    _durable(rmqs)
    conn = rmqs.connect(name="publisher")
    stream = rmqs.create(conn, "sequence")
    reference = rmqs.name("ref")
    rmqs.declare(conn, 1, stream, reference)
    sent = [_body("sequence", i) for i in range(12)]
    rmqs.publish(conn, 1, [PublishedMessage(i + 1, sent[i]) for i in range(10)])
    target_process.kill_and_restart()
    conn = rmqs.connect(name="after the restart")
    answer, conn = _retry(rmqs, conn, lambda cid: QueryPublisherSequence(cid, reference, stream),
                          QueryPublisherSequenceResponse, "QueryPublisherSequence")
    assert (answer.code, answer.sequence) == (Code.OK, 10), (
        f"after kill -9 and restart, QueryPublisherSequence of the reference whose ids 1-10 were "
        f"confirmed answers code {answer.code} sequence {answer.sequence}, not code 1 sequence 10 "
        f"({_advice(answer.code != Code.STREAM_DOES_NOT_EXIST)})")
    rmqs.declare(conn, 2, stream, reference)
    rmqs.publish(conn, 2, [PublishedMessage(i + 1, sent[i]) for i in range(8, 12)])
    _judge(sent, sent, _read_back(rmqs, stream, sent), "kill -9 and ids 9-12 sent again")
