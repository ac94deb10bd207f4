"""Queue management ("CreateQueue", "DeleteQueue", "QueueInfo", "ListQueues", "Error Codes")."""
import pytest

from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import CommandType as T


@pytest.mark.requirement("VIBE-QUEUE-001", "VIBE-QUEUE-004")
@pytest.mark.parametrize("mode", ["RoundRobin", "FanOutWithAck", "FanOutWithoutAck", "PriorityBased"])
def test_create_queue_then_info(vibe, mode):
    conn = vibe.connect()
    q = vibe.create_queue(conn, deliveryMode=mode, maxQueueSize=500, messageTtl=3_600_000)
    iid = vibe.new_id("info")
    conn.send(Message(T.QUEUE_INFO, iid, q))
    info = vibe.expect(conn, T.QUEUE_INFO, f"QueueInfo({q})", id=iid)
    payload = info.payload
    assert isinstance(payload, dict), info
    modes = ["RoundRobin", "FanOutWithAck", "FanOutWithoutAck", "PriorityBased"]
    expected = mode if vibe.feature("queue_info_names", True) else modes.index(mode)
    assert payload.get("name") == q and payload.get("deliveryMode") == expected, payload
    assert payload.get("maxSize") == 500 and payload.get("messageCount") == 0, payload
    assert payload.get("subscriberCount") == 0 and payload.get("createdAt"), payload


@pytest.mark.requirement("VIBE-QUEUE-002")
def test_create_existing_queue(vibe):
    conn = vibe.connect()
    q = vibe.create_queue(conn)
    cid = vibe.new_id("create")
    conn.send(Message(T.CREATE_QUEUE, cid, q))
    if vibe.feature("queue_exists_error", True):
        vibe.expect_error(conn, "QUEUE_EXISTS")
    else:                                    # the real server answers and keeps the old queue
        vibe.expect(conn, T.CREATE_QUEUE, id=cid)


@pytest.mark.requirement("VIBE-QUEUE-003", "VIBE-QUEUE-005")
def test_delete_queue_and_list(vibe):
    conn = vibe.connect()
    q1, q2 = vibe.create_queue(conn), vibe.create_queue(conn)
    lid = vibe.new_id("list")
    conn.send(Message(T.LIST_QUEUES, lid))
    listed = vibe.expect(conn, T.LIST_QUEUES, "ListQueues", id=lid)
    assert isinstance(listed.payload, list) and {q1, q2} <= set(listed.payload), listed.payload
    conn.send(Message(T.DELETE_QUEUE, vibe.new_id("delete"), q1))
    answer = vibe.recv(conn, "the answer to DeleteQueue")
    assert answer.type != T.ERROR, answer
    conn.send(Message(T.LIST_QUEUES, lid + "b"))
    listed = vibe.expect(conn, T.LIST_QUEUES, id=lid + "b")
    assert q1 not in listed.payload and q2 in listed.payload


@pytest.mark.requirement("VIBE-QUEUE-003", "VIBE-ERR-002", "VIBE-QUEUE-004")
@pytest.mark.parametrize("kind", [T.DELETE_QUEUE, T.QUEUE_INFO])
def test_unknown_queue(vibe, kind):
    conn = vibe.connect()
    mid = vibe.new_id()
    conn.send(Message(kind, mid, vibe.queue("missing")))
    if vibe.feature("queue_not_found_errors", True):
        vibe.expect_error(conn, "QUEUE_NOT_FOUND")
    else:                                    # the real server answers without an error
        answer = vibe.expect(conn, kind, id=mid)
        assert answer.payload is None, answer
