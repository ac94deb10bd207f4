"""Crash recovery: QoS1 messages the broker handled survive ``kill -9`` (blipmq-protocol.md
"PUBLISH": "If QoS1 and WAL configured: Append to WAL", and only then "enqueue message to
subscriber queues").

The kit kills the target it runs (``--target-command``; the ``target_process`` fixture) and
starts it again on the same data directory; without that these tests are SKIPPED. A PUBLISH
gets no answer, so "handled" is proven the suite's usual way: the PONG of a PING sent after it
(frames of a connection are handled in order). What the document does not promise is not
required: a message in flight at the kill (sent, not yet proven handled) may or may not come
back; an acknowledged one may come back too (QoS1 is at-least-once, and the document does not
say that an ACK is logged); a delivered, unacknowledged one may have been dropped by the
redelivery limit (SPEC_NOTES.md) before the kill. Nothing that was never sent may appear.

After the restart the messages are looked for on the subscription the client had (its id kept
across the restart, as the reference broker's log keeps it) and, when that id is unknown or
yields nothing, on a new subscription to the same topic (a server that gives recovered
messages to the topic's next subscriber): either way the messages survived.
"""
import time

import pytest

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.target.connection import TargetError, pace
from wirecheck.reference_impl.blipmq.codec import Ack, Nack, Ping, Poll, Pong, Publish

#: Seconds a restarted target has to deliver what it recovered (a floor; 10 receive timeouts
#: when those are longer): a sound target takes a fraction of it, a lossy one fails at its end.
RECOVERY_WAIT = 10.0


def _durable(blip) -> None:
    if not blip.profile.feature("durable"):
        verdicts.unimplemented("durable (the profile says the target runs without a WAL)")


def _body(label: str, i: int) -> bytes:
    return f"{label}-{i:05d}-".encode() + bytes([i % 251]) * (i % 37)


def _name(body: bytes) -> str:
    return body.split(b"-")[0].decode() + "-" + body.split(b"-")[1].decode()


def _drain_once(blip, conn, sub_id: int, seen: dict) -> str | None:
    """POLL ``sub_id`` until the barrier shows nothing more, ACKing each QoS1 delivery; add
    what came to ``seen`` (body -> times). None, or why the subscription is unusable."""
    while True:
        cid, barrier = blip.cid(), blip.cid()
        conn.send(Poll(cid, sub_id), Ping(barrier))
        frame = conn.recv(expecting="delivery or barrier PONG")
        if isinstance(frame, Pong) and frame.correlation_id == barrier:
            return None
        if isinstance(frame, Nack):
            conn.expect(Pong, correlation_id=barrier)
            return f"POLL of subscription {sub_id} answered NACK({frame.code}, {frame.message!r})"
        if not isinstance(frame, Publish):
            raise TargetError(f"POLL answered with {blip.target.spec.frame_to_dict(frame)}")
        conn.expect(Pong, correlation_id=barrier)
        seen[frame.message] = seen.get(frame.message, 0) + 1
        if frame.qos == 1:
            ack_barrier = blip.cid()
            conn.send(Ack(frame.correlation_id, sub_id), Ping(ack_barrier))
            answer = conn.recv(expecting="barrier PONG after ACK")
            if isinstance(answer, Nack):         # acknowledged twice (redelivered): harmless here
                conn.expect(Pong, correlation_id=ack_barrier)
            elif not (isinstance(answer, Pong) and answer.correlation_id == ack_barrier):
                raise TargetError(f"ACK answered with {blip.target.spec.frame_to_dict(answer)}")


def _waited(blip) -> float:
    """Seconds :func:`_recovered` looks for the messages after a restart."""
    return max(RECOVERY_WAIT, 10 * blip.target.timeout)


def _recovered(blip, topic: str, sub_id: int, wanted: set) -> dict:
    """Every message delivered after the restart (body -> times), looking until ``wanted`` has
    all come or :func:`_waited` has passed."""
    conn = blip.connect(name="after the restart")
    seen: dict = {}
    subs, unusable = [sub_id], set()
    deadline = time.monotonic() + _waited(blip)
    while True:
        for sid in subs:
            if sid not in unusable and _drain_once(blip, conn, sid, seen) is not None:
                unusable.add(sid)
        if wanted <= set(seen) or time.monotonic() >= deadline:
            return seen
        if len(subs) == 1:                 # the old id unknown or empty: the topic's next subscriber
            subs.append(blip.subscribe(conn, topic, 1))
        pace(0.2)


def _judge(wanted: list[bytes], sent: set, seen: dict, how: str, waited: float) -> None:
    stranger = [b for b in seen if b not in sent]
    assert not stranger, f"after {how}, delivered messages that were never published: {stranger[:3]!r}"
    lost = [b for b in wanted if b not in seen]
    if not lost:
        return
    if seen:
        # some came back: the target keeps data, so what it lost is a defect, not a missing WAL
        advice = (f"{len(seen)} other(s) came back, so the target does keep messages across a crash: the "
                  f"lost ones are a defect of that recovery")
    else:
        advice = ("nothing came back at all: if the target runs without a WAL (the document promises "
                  "this only 'if WAL configured'), its profile says so with [features] durable = false")
    raise AssertionError(
        f"after {how}, {len(lost)} of {len(wanted)} QoS1 messages the broker had handled (their PING "
        f"barriers answered) were not delivered within {waited:g} s of the restart: "
        f"{', '.join(_name(b) for b in lost[:5])}{' ...' if len(lost) > 5 else ''}; {advice}")


@pytest.mark.requirement("BLIP-PUB-012")
@pytest.mark.parametrize("kills", [1, 2], ids=["one-crash", "two-crashes"])
def test_handled_qos1_publishes_survive_kill(blip, target_process, kills):
    _durable(blip)
    conn = blip.connect()
    topic = blip.topic("durable")
    sub = blip.subscribe(conn, topic, 1)
    sent = [_body("handled", i) for i in range(20)]
    for body in sent:
        blip.publish(conn, topic, body, qos=1)
    for _ in range(kills):              # a second crash: recovery of what recovery left
        target_process.kill_and_restart()
    seen = _recovered(blip, topic, sub, set(sent))
    _judge(sent, set(sent), seen, "kill -9" + (" twice" if kills > 1 else ""), _waited(blip))


@pytest.mark.requirement("BLIP-PUB-012")
def test_publishes_handled_before_a_kill_mid_batch_survive(blip, target_process):
    """A batch sent in one write, each PUBLISH followed by a PING; the kill comes after the
    20th PONG, while the rest may still be in flight: those may or may not survive."""
    _durable(blip)
    conn = blip.connect()
    topic = blip.topic("batch")
    sub = blip.subscribe(conn, topic, 1)
    sent = [_body("batch", i) for i in range(60)]
    pings = [blip.cid() for _ in sent]
    frames = []
    for body, ping in zip(sent, pings):
        frames += [Publish(blip.cid(), 1, topic, body), Ping(ping)]
    conn.send(*frames)
    for ping in pings[:20]:
        conn.expect(Pong, correlation_id=ping)
    target_process.kill_and_restart()
    seen = _recovered(blip, topic, sub, set(sent[:20]))
    _judge(sent[:20], set(sent), seen, "a kill -9 in the middle of a batch", _waited(blip))


@pytest.mark.requirement("BLIP-PUB-012")
def test_unacknowledged_messages_survive_a_kill_after_acks(blip, target_process):
    """Ten handled, six delivered, three of those acknowledged (barrier answered), then the
    kill: the four never delivered must come back; the others may."""
    _durable(blip)
    conn = blip.connect()
    topic = blip.topic("acked")
    sub = blip.subscribe(conn, topic, 1)
    sent = [_body("acked", i) for i in range(10)]
    for body in sent:
        blip.publish(conn, topic, body, qos=1)
    delivered = []
    for _ in range(6):
        got = blip.poll(conn, sub)
        if got is None:
            raise TargetError("POLL returned nothing while published messages were pending")
        delivered.append(got[0])
    for frame in delivered[:3]:
        conn.send(Ack(frame.correlation_id, sub))
    blip.barrier(conn, "three ACKs")
    target_process.kill_and_restart()
    never_delivered = [b for b in sent if b not in {f.message for f in delivered}]
    seen = _recovered(blip, topic, sub, set(never_delivered))
    _judge(never_delivered, set(sent), seen, "a kill -9 right after three ACKs", _waited(blip))
