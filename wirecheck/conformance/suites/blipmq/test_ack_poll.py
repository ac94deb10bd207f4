"""ACK, POLL, QoS1 redelivery, NACK layout (blipmq-protocol.md "ACK", "POLL", "NACK",
"Error Codes"; SPEC_NOTES.md for redelivery)."""
import time

import pytest

from wirecheck.reference_impl.blipmq.codec import Ack, FrameType, Nack, Poll, Publish

from .conftest import raw


@pytest.mark.requirement("BLIP-ACK-001")
@pytest.mark.parametrize("size", [0, 7, 9])
def test_malformed_ack_payload(blip, size):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(raw(FrameType.ACK, cid, b"\x01" * size))
    blip.expect_nack(conn, cid, 400, "invalid ACK payload")


@pytest.mark.requirement("BLIP-ACK-002")
def test_ack_subscription_zero(blip):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(Ack(cid, 0))
    blip.expect_nack(conn, cid, 400, "subscription_id must be non-zero")


@pytest.mark.requirement("BLIP-ACK-003", "BLIP-NACK-002")
def test_ack_unknown_subscription(blip):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(Ack(cid, 2**64 - 1))
    blip.expect_nack(conn, cid, 404, "unknown subscription or delivery tag")


@pytest.mark.requirement("BLIP-ACK-003")
def test_ack_unknown_tag(blip):
    conn = blip.connect()
    sub = blip.subscribe(conn, blip.topic("tag"), 1)
    tag = 2**63 + 12345
    conn.send(Ack(tag, sub))
    blip.expect_nack(conn, tag, 404, "unknown subscription or delivery tag")


@pytest.mark.requirement("BLIP-ACK-004", "BLIP-QOS1-004", "BLIP-PUB-008")
def test_ack_removes_inflight_and_second_ack_is_unknown(blip):
    conn = blip.connect()
    topic = blip.topic("ack")
    sub = blip.subscribe(conn, topic, 1)
    blip.publish(conn, topic, b"once", qos=1)
    delivered, _ = blip.poll(conn, sub)
    assert delivered.qos == 1
    conn.send(Ack(delivered.correlation_id, sub))
    blip.barrier(conn, "a valid ACK")
    conn.send(Ack(delivered.correlation_id, sub))
    blip.expect_nack(conn, delivered.correlation_id, 404, "unknown subscription or delivery tag")
    # Not delivered again, even after the redelivery backoff has passed.
    deadline = time.monotonic() + blip.retry_backoff * 3
    assert blip.poll_until(conn, sub, deadline) is None, "an acknowledged message was delivered again"


@pytest.mark.requirement("BLIP-POLL-001")
@pytest.mark.parametrize("size", [0, 4, 7, 9, 16])
def test_malformed_poll_payload(blip, size):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(raw(FrameType.POLL, cid, b"\x00" * (size - 1) + b"\x01" if size else b""))
    blip.expect_nack(conn, cid, 400, "invalid POLL payload")


@pytest.mark.requirement("BLIP-POLL-002")
def test_poll_subscription_zero(blip):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(Poll(cid, 0))
    blip.expect_nack(conn, cid, 400, "subscription_id must be non-zero")


@pytest.mark.requirement("BLIP-POLL-003")
@pytest.mark.parametrize("qos", [0, 1])
def test_poll_empty_subscription_returns_nothing(blip, qos):
    conn = blip.connect()
    sub = blip.subscribe(conn, blip.topic("empty"), qos)
    assert blip.poll(conn, sub) is None   # the barrier PONG came first: no frame was sent


@pytest.mark.requirement("BLIP-POLL-004", "BLIP-POLL-003")
def test_poll_returns_messages_in_order_then_nothing(blip):
    conn = blip.connect()
    topic = blip.topic("order")
    sub = blip.subscribe(conn, topic, 0)
    for i in range(10):
        conn.send(Publish(blip.cid(), 0, topic, b"%d" % i))
    blip.barrier(conn, "ten PUBLISH frames")
    assert [blip.poll(conn, sub)[0].message for _ in range(10)] == [b"%d" % i for i in range(10)]
    assert blip.poll(conn, sub) is None


@pytest.mark.requirement("BLIP-QOS1-003", "BLIP-PUB-008")
def test_delivery_tags_per_subscription_from_one(blip):
    conn = blip.connect()
    topic = blip.topic("tags")
    s1, s2 = blip.subscribe(conn, topic, 1), blip.subscribe(conn, topic, 1)
    for i in range(3):
        conn.send(Publish(blip.cid(), 1, topic, b"%d" % i))
    blip.barrier(conn, "three PUBLISH frames")
    for sub in (s1, s2):
        tags = [blip.poll_new(conn, sub)[0].correlation_id for _ in range(3)]   # redeliveries passed over
        assert tags == [1, 2, 3], f"subscription {sub}: tags {tags}"


@pytest.mark.requirement("BLIP-QOS1-001")
def test_unacked_qos1_is_redelivered_with_same_tag(blip):
    conn = blip.connect()
    topic = blip.topic("redeliver")
    sub = blip.subscribe(conn, topic, 1)
    blip.publish(conn, topic, b"again", qos=1)
    first, _ = blip.poll(conn, sub)
    got = blip.poll_until(conn, sub, time.monotonic() + max(2.0, blip.retry_backoff * 20))
    assert got is not None, "an unacked QoS1 message was not delivered again"
    assert (got[0].message, got[0].correlation_id) == (b"again", first.correlation_id)
    conn.send(Ack(first.correlation_id, sub))
    blip.barrier(conn, "ACK of a redelivered message")


@pytest.mark.requirement("BLIP-QOS1-002")
def test_unacked_qos1_is_dropped_after_max_retries(blip):
    conn = blip.connect()
    topic = blip.topic("drop")
    sub = blip.subscribe(conn, topic, 1)
    blip.publish(conn, topic, b"doomed", qos=1)
    # Each expected delivery is awaited generously (its backoff, retry_backoff * 2**(n-1),
    # three times over plus 2 s: a slow link or a busy machine only makes it come later);
    # after the last, one more backoff and a half shows none follows (lateness cannot add one).
    deliveries = []
    for attempt in range(blip.max_retries):
        backoff = blip.retry_backoff * (2 ** max(attempt - 1, 0)) if attempt else 0.0
        got = blip.poll_until(conn, sub, time.monotonic() + backoff * 3 + 2.0)
        assert got is not None, (f"delivered {len(deliveries)} times, expected {blip.max_retries} "
                                 f"(the next did not come within {backoff * 3 + 2.0:g} s)")
        deliveries.append(got[0].correlation_id)
    backoff = blip.retry_backoff * (2 ** (blip.max_retries - 1))
    extra = blip.poll_until(conn, sub, time.monotonic() + backoff * 1.5 + 0.3)
    assert extra is None, f"delivered a {blip.max_retries + 1}th time, expected {blip.max_retries}"


@pytest.mark.requirement("BLIP-NACK-001", "BLIP-NACK-002", "BLIP-FRAME-005")
def test_nack_layout_and_correlation_id(blip):
    conn = blip.connect()
    cid = 0x0102030405060708
    conn.send(Poll(cid, 0))
    nack = conn.expect(Nack, correlation_id=cid)
    assert nack.code in (400, 401, 404, 426, 500)
    # The reference decoder enforces u16 code, u16 message_len == rest, UTF-8 message.
    assert nack.message == "subscription_id must be non-zero"
