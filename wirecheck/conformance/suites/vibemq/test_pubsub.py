"""Publish, Subscribe, Deliver, Ack ("Publish/Subscribe", "Acknowledgment", "Message
Publishing", "Message Delivery")."""
import pytest

from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import CommandType as T

PAYLOADS = [{"title": "Hello", "body": "World"}, [1, 2, 3], "text", 42, 1.5, True,
            {"nested": {"deep": [None, {"x": "✓"}]}}]


@pytest.mark.requirement("VIBE-PUB-001", "VIBE-PUB-002")
def test_publish_is_acknowledged(vibe):
    conn = vibe.connect()
    q = vibe.create_queue(conn)
    mid = vibe.new_id("msg")
    conn.send(Message(T.PUBLISH, mid, q, {"title": "Hello"}))
    ack = vibe.expect(conn, T.PUBLISH_ACK, "PublishAck", id=mid)
    if vibe.feature("publish_ack_headers", vibe.reading == "document"):
        assert ack.header("messageId") == mid and ack.header("queueName") == q, ack.headers


@pytest.mark.requirement("VIBE-SUB-001", "VIBE-DEL-001", "VIBE-DEL-002", "VIBE-MSG-002", "VIBE-ACK-001")
@pytest.mark.parametrize("payload", PAYLOADS, ids=[str(i) for i in range(len(PAYLOADS))])
def test_publish_subscribe_deliver_ack(vibe, payload):
    sub = vibe.connect(name="subscriber")
    q = vibe.create_queue(sub)
    ack = vibe.subscribe(sub, q)
    assert ack.header("queueName") == q or ack.queue == q, ack
    if vibe.feature("publish_ack_headers", True):      # the document's acks carry headers
        assert ack.header("subscriptionId"), ack.headers
    pub = vibe.connect(name="publisher")
    mid = vibe.publish(pub, q, payload, priority="High")
    deliver = vibe.expect(sub, T.DELIVER, "the Deliver")
    assert (deliver.id, deliver.queue, deliver.payload) == (mid, q, payload), deliver
    if vibe.feature("deliver_headers", True):
        assert deliver.header("deliveryAttempts") == "1" and deliver.header("priority") == "High", \
            deliver.headers
    sub.send(Message(T.ACK, mid, headers={"messageId": mid}))
    vibe.barrier(sub, "the Ack")


@pytest.mark.requirement("VIBE-SUB-002")
def test_unsubscribe_stops_deliveries(vibe):
    sub = vibe.connect()
    q = vibe.create_queue(sub)
    vibe.subscribe(sub, q)
    uid = vibe.new_id("unsub")
    sub.send(Message(T.UNSUBSCRIBE, uid, q))
    ack = vibe.expect(sub, T.UNSUBSCRIBE_ACK, "UnsubscribeAck")
    assert ack.header("queueName") == q or ack.queue == q, ack
    pub = vibe.connect()
    vibe.publish(pub, q, {"after": "unsubscribe"})
    vibe.barrier(sub, "a publish after Unsubscribe")


@pytest.mark.requirement("VIBE-QUEUE-006")
def test_publish_to_a_new_queue(vibe):
    conn = vibe.connect()
    q = vibe.queue("implicit")
    mid = vibe.new_id("msg")
    conn.send(Message(T.PUBLISH, mid, q, {"x": 1}))
    if vibe.feature("implicit_queues", True):
        vibe.expect(conn, T.PUBLISH_ACK, id=mid)
    else:
        vibe.expect_error(conn, "QUEUE_NOT_FOUND")


@pytest.mark.requirement("VIBE-DEL-003")
def test_publisher_headers_are_delivered(vibe):
    sub = vibe.connect(name="subscriber")
    q = vibe.create_queue(sub)
    vibe.subscribe(sub, q)
    pub = vibe.connect(name="publisher")
    headers = {"correlationId": "corr_456", "timestamp": "2026-02-18T10:30:00Z", "x-custom": "✓"}
    mid = vibe.publish(pub, q, {"h": 1}, **headers)
    deliver = vibe.expect(sub, T.DELIVER, "the Deliver with the publisher's headers")
    assert deliver.id == mid
    for key, value in headers.items():
        assert deliver.header(key) == value, (key, deliver.headers)
