"""PUBLISH and SUBSCRIBE (blipmq-protocol.md "PUBLISH", "SUBSCRIBE"; SPEC_NOTES.md)."""
import pytest

from wirecheck.reference_impl.blipmq.codec import Ack, FrameType, Publish, Subscribe

from .conftest import raw

DOC_SUBSCRIBE = bytes.fromhex("00000010 04 0000000000000003 0004 64656D6F 01")
DOC_PUBLISH = bytes.fromhex("00000012 03 0000000000000004 01 0004 64656D6F 6869")


@pytest.mark.requirement("BLIP-SUB-004", "BLIP-PUB-001", "BLIP-PUB-004", "BLIP-PUB-007",
                         "BLIP-PUB-008", "BLIP-POLL-004")
def test_document_subscribe_publish_and_ack_samples(blip):
    conn = blip.connect()
    conn.send(DOC_SUBSCRIBE)
    sub = conn.expect(Ack, correlation_id=3).subscription_id   # layout of the ACK sample
    assert sub != 0, "SUBSCRIBE must answer a non-zero subscription id"
    conn.send(DOC_PUBLISH)
    blip.barrier(conn, "the document's PUBLISH sample")
    delivered, _ = blip.poll(conn, sub)
    assert (delivered.topic, delivered.message, delivered.qos) == ("demo", b"hi", 1)


@pytest.mark.requirement("BLIP-PUB-002")
@pytest.mark.parametrize("qos", [0, 1])
def test_publish_empty_topic(blip, qos):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(Publish(cid, qos, "", b"x"))
    blip.expect_nack(conn, cid, 400, "empty topic")


@pytest.mark.requirement("BLIP-PUB-003")
@pytest.mark.parametrize("qos", [2, 3, 0x80, 0xFF])
def test_publish_invalid_qos(blip, qos):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(Publish(cid, qos, blip.topic(), b"x"))
    blip.expect_nack(conn, cid, 400, "invalid QoS value")


@pytest.mark.requirement("BLIP-PUB-004", "BLIP-PUB-001")
@pytest.mark.parametrize("qos", [0, 1])
@pytest.mark.parametrize("message", [b"", b"hello", bytes(range(256))], ids=["empty", "text", "binary"])
def test_successful_publish_gets_no_answer(blip, qos, message):
    conn = blip.connect()
    topic = blip.topic("pub")
    sub = blip.subscribe(conn, topic, qos)
    conn.send(Publish(blip.cid(), qos, topic, message))
    blip.barrier(conn, "a valid PUBLISH")
    delivered, _ = blip.poll(conn, sub)
    assert delivered.message == message


@pytest.mark.requirement("BLIP-PUB-006")
@pytest.mark.parametrize("payload", [
    b"", b"\x00", b"\x00\x00",                 # shorter than 3 bytes
    b"\x00\x00\x05abc",                        # topic_len past the end
    b"\x00\x00\x02\xc3\x28",                   # topic not UTF-8
], ids=["empty", "1-byte", "2-bytes", "topic-len-past-end", "topic-not-utf8"])
def test_malformed_publish_payload(blip, payload):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(raw(FrameType.PUBLISH, cid, payload))
    blip.expect_nack(conn, cid, 400, "invalid PUBLISH payload")


@pytest.mark.requirement("BLIP-PUB-009", "BLIP-PUB-007")
def test_qos0_delivery_echoes_poll_correlation_id(blip):
    conn = blip.connect()
    topic = blip.topic("q0")
    sub = blip.subscribe(conn, topic, 0)
    blip.publish(conn, topic, b"zero")
    delivered, poll_cid = blip.poll(conn, sub)
    assert delivered.qos == 0
    assert delivered.correlation_id == poll_cid, \
        f"QoS0 delivery correlation_id {delivered.correlation_id} != POLL's {poll_cid}"


@pytest.mark.requirement("BLIP-PUB-010")
@pytest.mark.parametrize("sub_qos,msg_qos,expected", [(0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 1, 1)])
def test_effective_delivery_qos(blip, sub_qos, msg_qos, expected):
    conn = blip.connect()
    topic = blip.topic("eff")
    sub = blip.subscribe(conn, topic, sub_qos)
    blip.publish(conn, topic, b"q", qos=msg_qos)
    delivered, _ = blip.poll(conn, sub)
    assert delivered.qos == expected, f"delivery qos {delivered.qos}, expected {expected}"


@pytest.mark.requirement("BLIP-PUB-011", "BLIP-POLL-003")
def test_publish_reaches_only_existing_subscriptions(blip):
    conn = blip.connect()
    topic = blip.topic("late")
    blip.publish(conn, topic, b"before")
    sub = blip.subscribe(conn, topic, 0)
    assert blip.poll(conn, sub) is None, "a message published before SUBSCRIBE was delivered"


@pytest.mark.requirement("BLIP-POLL-004", "BLIP-PUB-007")
def test_fan_out_and_order_across_connections(blip):
    pub, c1, c2 = blip.connect(), blip.connect(), blip.connect()
    topic = blip.topic("fan")
    s1, s2 = blip.subscribe(c1, topic, 0), blip.subscribe(c2, topic, 1)
    for i in range(5):
        pub.send(Publish(blip.cid(), 1, topic, b"m%d" % i))
    blip.barrier(pub, "five PUBLISH frames")
    for conn, sub in ((c1, s1), (c2, s2)):
        # poll_new: a QoS1 redelivery (the timer fired; it depends on the link's pace) is no
        # new message, so neither breaks the order nor counts as a sixth
        got = [blip.poll_new(conn, sub)[0].message for _ in range(5)]
        assert got == [b"m%d" % i for i in range(5)], f"subscription {sub} got {got}"
        assert blip.poll_new(conn, sub) is None


@pytest.mark.requirement("BLIP-SUB-001")
@pytest.mark.parametrize("payload", [
    b"", b"\x00\x01", b"\x00\x04demo",        # no qos byte
    b"\x00\x09demo\x01",                       # topic_len past the end
    b"\x00\x02\xff\xfe\x01",                   # topic not UTF-8
], ids=["empty", "2-bytes", "no-qos", "topic-len-past-end", "topic-not-utf8"])
def test_malformed_subscribe_payload(blip, payload):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(raw(FrameType.SUBSCRIBE, cid, payload))
    blip.expect_nack(conn, cid, 400, "invalid SUBSCRIBE payload")


@pytest.mark.requirement("BLIP-SUB-002")
def test_subscribe_empty_topic(blip):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(Subscribe(cid, "", 0))
    blip.expect_nack(conn, cid, 400, "empty topic")


@pytest.mark.requirement("BLIP-SUB-003")
@pytest.mark.parametrize("qos", [2, 0xFF])
def test_subscribe_invalid_qos(blip, qos):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(Subscribe(cid, blip.topic(), qos))
    blip.expect_nack(conn, cid, 400, "invalid QoS value")


@pytest.mark.requirement("BLIP-SUB-005", "BLIP-SUB-004")
def test_each_subscribe_gets_a_new_id(blip):
    conn = blip.connect()
    topic = blip.topic("ids")
    ids = [blip.subscribe(conn, topic, q) for q in (0, 1, 0)]
    ids.append(blip.subscribe(conn, blip.topic("ids2"), 0))
    assert len(set(ids)) == len(ids), f"subscription ids repeat: {ids}"


@pytest.mark.requirement("BLIP-SUB-006")
def test_subscribe_ignores_bytes_after_qos(blip):
    conn = blip.connect()
    cid = blip.cid()
    topic = blip.topic("trail").encode()
    conn.send(raw(FrameType.SUBSCRIBE, cid, len(topic).to_bytes(2, "big") + topic + b"\x00extra"))
    assert conn.expect(Ack, correlation_id=cid).subscription_id != 0
