"""Delivery semantics of the real server (SPEC_NOTES: delivery modes, ack timeout and retries,
dead-letter queue, TTL, overflow), with the target's timings from the profile's ``[timing]``
(``ack_timeout``, ``retry_base_delay``), so the tests stay short against a broker configured
with short timings. Each subscriber has its own connection; "no delivery" is proven with the
Ping barrier."""
import time

import pytest

from wirecheck.conformance.target.connection import TargetError, pace
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import CommandType as T


def _deliveries(vibe, conn, n: int, what: str) -> list:
    return [vibe.expect(conn, T.DELIVER, f"{what} ({i + 1} of {n})") for i in range(n)]


def _ack(conn, message) -> None:
    conn.send(Message(T.ACK, message.id, headers={"messageId": message.id}))


@pytest.mark.requirement("VIBE-MODE-001")
def test_round_robin(vibe):
    admin = vibe.connect(name="publisher")
    q = vibe.create_queue(admin, deliveryMode="RoundRobin")
    a, b = vibe.connect(name="a"), vibe.connect(name="b")
    vibe.subscribe(a, q)
    vibe.subscribe(b, q)
    sent = [vibe.publish(admin, q, {"n": n}) for n in range(4)]
    got_a = _deliveries(vibe, a, 2, "round robin to a")
    got_b = _deliveries(vibe, b, 2, "round robin to b")
    for conn, got in ((a, got_a), (b, got_b)):
        for m in got:
            _ack(conn, m)
        vibe.barrier(conn, "its share of the round robin")
    assert sorted(m.id for m in got_a + got_b) == sorted(sent), "each message to exactly one subscriber"


@pytest.mark.requirement("VIBE-MODE-002", "VIBE-MODE-003")
@pytest.mark.parametrize("mode", ["FanOutWithAck", "FanOutWithoutAck"])
def test_fan_out(vibe, mode):
    admin = vibe.connect(name="publisher")
    q = vibe.create_queue(admin, deliveryMode=mode)
    subs = [vibe.connect(name=f"s{i}") for i in range(3)]
    for s in subs:
        vibe.subscribe(s, q)
    sent = [vibe.publish(admin, q, {"n": n}) for n in range(2)]
    for s in subs:
        got = _deliveries(vibe, s, 2, f"{mode} to every subscriber")
        assert [m.id for m in got] == sent
        if mode == "FanOutWithAck":
            for m in got:
                _ack(s, m)
    if mode == "FanOutWithoutAck":
        # Nothing is tracked: after the ack timeout nothing comes again.
        pace(vibe.timing("ack_timeout", 30.0) * 1.5)
    for s in subs:
        vibe.barrier(s, f"{mode} deliveries")


@pytest.mark.requirement("VIBE-MODE-004")
def test_priority_based(vibe):
    admin = vibe.connect(name="publisher")
    q = vibe.create_queue(admin, deliveryMode="PriorityBased")
    order = ["Low", "Normal", "Critical", "High"]
    ids = {vibe.publish(admin, q, {"p": p}, priority=p): p for p in order}
    sub = vibe.connect(name="subscriber")
    vibe.subscribe(sub, q)
    got = _deliveries(vibe, sub, 4, "the backlog by priority")
    assert [ids[m.id] for m in got] == ["Critical", "High", "Normal", "Low"]


@pytest.mark.requirement("VIBE-TTL-001")
def test_expired_messages_are_not_delivered(vibe):
    admin = vibe.connect()
    q = vibe.create_queue(admin, messageTtl=100)
    vibe.publish(admin, q, {"stale": True})
    pace(0.35)
    sub = vibe.connect()
    vibe.subscribe(sub, q)
    vibe.barrier(sub, "subscribing after the TTL passed")


@pytest.mark.requirement("VIBE-RETRY-001", "VIBE-ACK-001")
def test_redelivery_after_the_ack_timeout(vibe):
    vibe.keep_redeliveries = True
    admin = vibe.connect()
    q = vibe.create_queue(admin, maxRetryAttempts=5)
    sub = vibe.connect()
    vibe.subscribe(sub, q)
    mid = vibe.publish(admin, q, {"retry": True})
    first = vibe.expect(sub, T.DELIVER, "the first delivery")
    limit = vibe.timing("ack_timeout", 30.0) + vibe.timing("retry_base_delay", 2.0) + 2.0
    again = vibe.expect(sub, T.DELIVER, f"the redelivery within {limit:g} s", timeout=limit)
    assert again.id == first.id == mid
    if vibe.feature("deliver_headers", True):
        assert int(again.header("deliveryAttempts")) == int(first.header("deliveryAttempts")) + 1
    _ack(sub, again)
    # A redelivery the timer sent before the ack arrived (a slow link) is legal: the barrier
    # after the ack shows it processed, and from then on no more may come.
    pid = vibe.new_id("ping")
    sub.send(Message(T.PING, pid))
    while True:
        answer = vibe.recv(sub, "the barrier's Pong after the ack")
        if answer.type == T.PONG and answer.id == pid:
            break
        if not (answer.type == T.DELIVER and answer.id == mid):
            raise TargetError(f"expected the barrier's Pong, got {codec.frame_to_dict(answer)}")
    pace(vibe.timing("ack_timeout", 30.0) * 1.5)
    vibe.barrier(sub, "the acked message (no further redelivery)")


@pytest.mark.requirement("VIBE-DLQ-001")
def test_dead_letter_after_max_retries(vibe):
    admin = vibe.connect()
    q = vibe.create_queue(admin, maxRetryAttempts=1, enableDeadLetterQueue="true")
    sub = vibe.connect()
    vibe.subscribe(sub, q)
    mid = vibe.publish(admin, q, {"doomed": True})
    vibe.expect(sub, T.DELIVER, "the only delivery")
    deadline = time.monotonic() + vibe.timing("ack_timeout", 30.0) * 3 + 2.0
    dlq = f"{q}.dlq"
    while True:                                  # poll the dead-letter queue's size
        iid = vibe.new_id("info")
        admin.send(Message(T.QUEUE_INFO, iid, dlq))
        info = vibe.recv(admin, f"QueueInfo({dlq})")
        count = info.payload.get("messageCount") if info.type == T.QUEUE_INFO and info.payload else 0
        if count == 1:
            break
        assert time.monotonic() < deadline, f"{mid} not dead-lettered in {dlq}: {info}"
        pace(0.1)
    dead = vibe.connect()
    vibe.subscribe(dead, dlq)
    letter = vibe.expect(dead, T.DELIVER, "the dead letter")
    assert letter.id == mid and letter.payload == {"doomed": True}


@pytest.mark.requirement("VIBE-OVER-001")
def test_queue_does_not_grow_past_its_maximum(vibe):
    admin = vibe.connect()
    q = vibe.create_queue(admin, maxQueueSize=2)
    for n in range(4):
        mid = vibe.new_id("msg")
        admin.send(Message(T.PUBLISH, mid, q, {"n": n}))
        vibe.recv(admin, "PublishAck or an Error at the limit")
    iid = vibe.new_id("info")
    admin.send(Message(T.QUEUE_INFO, iid, q))
    info = vibe.expect(admin, T.QUEUE_INFO, id=iid)
    assert info.payload["messageCount"] <= 2, info.payload


@pytest.mark.requirement("VIBE-ERR-003")
def test_rate_limit(vibe):
    rate = vibe.timing("max_messages_per_second", 0)
    if not rate:
        pytest.skip("the profile gives no rate limit ([timing] max_messages_per_second)")
    conn = vibe.connect()
    conn.send(*[Message(T.PING, f"r{i}") for i in range(int(rate) + 5)])
    codes = []
    for _ in range(int(rate) + 5):
        m = vibe.recv(conn, "Pongs, then RATE_LIMITED")
        codes.append(m.error_code if m.type == T.ERROR else "PONG")
    assert "RATE_LIMITED" in codes, codes
