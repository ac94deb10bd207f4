"""Reliable messaging ("ack", "batch-ack"): the pusher's window measured (messages counted, then
a barrier proves no more came), cumulative acks, early acks, the server's own acks of SENDs,
acks across the sequence-number wrap."""
import pytest

from wirecheck.reference_impl.micromessage2.codec import ExtensionFrame, Message


def _subscriber(mm2, required, kind="topic"):
    sub = mm2.connect(required=required, name="subscriber")
    dest = mm2.destination(kind)
    mm2.subscribe(sub, dest)
    mm2.barrier(sub, "subscribe")
    return sub, dest


def _publish(mm2, dest, n):
    pub = mm2.connect(required="pubsub", name="publisher")
    for i in range(n):
        mm2.send(pub, dest, b"m%d" % i)
    mm2.barrier(pub, f"{n} SENDs")              # every SEND is routed before the barrier's ERROR
    return pub


@pytest.mark.requirement("MM2-ACK-001", "MM2-MSG-005")
def test_without_ack_extension_everything_is_pushed(mm2):
    sub, topic = _subscriber(mm2, "pubsub")
    _publish(mm2, topic, 25)
    got = mm2.messages(sub, 25)
    assert mm2.numbers(sub, got) == list(range(1, 26))
    mm2.barrier(sub, "25 messages")
    assert not sub.acks, "no ack extension was agreed, yet the server sent ack frames"


@pytest.mark.requirement("MM2-ACK-003", "MM2-ACK-005")
@pytest.mark.parametrize("spelling", ["max-count=3", "count=3", "batch-max=3", "max-count:3"])
def test_batch_window_is_never_exceeded(mm2, spelling):
    sub, topic = _subscriber(mm2, f"pubsub;batch-ack:{spelling}")
    _publish(mm2, topic, 8)
    assert mm2.numbers(sub, mm2.messages(sub, 3)) == [1, 2, 3]
    mm2.barrier(sub, "3 unacked messages (window 3)")
    mm2.ack(sub, 3)
    assert mm2.numbers(sub, mm2.messages(sub, 3)) == [4, 5, 6]
    mm2.barrier(sub, "the window refilled")
    mm2.ack(sub, 6)
    assert mm2.numbers(sub, mm2.messages(sub, 2)) == [7, 8]
    mm2.barrier(sub, "all 8 messages")


@pytest.mark.requirement("MM2-ACK-004")
def test_default_window_is_ten(mm2):
    sub, topic = _subscriber(mm2, "pubsub;batch-ack")
    _publish(mm2, topic, 12)
    assert len(mm2.messages(sub, 10)) == 10
    mm2.barrier(sub, "10 unacked messages (default window)")
    mm2.ack(sub, 10)
    assert mm2.numbers(sub, mm2.messages(sub, 2)) == [11, 12]


@pytest.mark.requirement("MM2-ACK-006")
def test_early_ack_resets_the_counter(mm2):
    sub, topic = _subscriber(mm2, "pubsub;batch-ack:max-count=4")
    _publish(mm2, topic, 9)
    mm2.numbers(sub, mm2.messages(sub, 4))
    mm2.ack(sub, 2)                                  # two acked early: two more may come
    assert mm2.numbers(sub, mm2.messages(sub, 2)) == [5, 6]
    mm2.barrier(sub, "4 unacked after an early ack of 2")


@pytest.mark.requirement("MM2-ACK-002")
def test_single_ack_one_message_at_a_time(mm2):
    sub, topic = _subscriber(mm2, "pubsub;ack")
    window = 1 if mm2.reading != "sharpmessaging" else 10
    _publish(mm2, topic, window + 2)
    got = mm2.messages(sub, window)
    mm2.barrier(sub, f"{window} unacked message(s) with 'ack'")
    mm2.ack(sub, mm2.numbers(sub, got)[-1])
    assert mm2.numbers(sub, [mm2.expect(sub, Message)]) == [window + 1]


@pytest.mark.requirement("MM2-ACK-009")
def test_ack_of_nothing_in_flight(mm2):
    sub, topic = _subscriber(mm2, "pubsub;batch-ack:max-count=2")
    mm2.ack(sub, 77)
    mm2.expect_error(sub, "an ERROR for an ack of a sequence number never sent")
    mm2.barrier(sub)


@pytest.mark.requirement("MM2-ACK-007", "MM2-ACK-010")
def test_server_acks_the_clients_sends(mm2):
    conn = mm2.connect(required=mm2.window_extension(5))
    queue = mm2.destination("queue")
    for _ in range(2):
        mm2.send(conn, queue)
    # Below the window: the ack comes after the target's ack delay.
    frame = conn.recv(mm2.timing("ack_delay", 0.5) + conn.timeout, expecting="a delayed ack of SEND 2")
    assert frame == ExtensionFrame(mm2.ack_id(conn), b"\x00\x02"), frame
    for _ in range(5):
        mm2.send(conn, queue)
    frame = conn.recv(expecting="the ack of a full window (SEND 7)")
    assert frame == ExtensionFrame(mm2.ack_id(conn), b"\x00\x07"), frame


@pytest.mark.requirement("MM2-ACK-008")
def test_acks_across_the_wrap(mm2):
    conn = mm2.connect(required=mm2.window_extension(3))
    queue = mm2.destination("queue")
    conn.sent = 65533
    seqs = [mm2.send(conn, queue) for _ in range(3)]
    assert seqs == [65534, 65535, 1]
    frame = conn.recv(expecting="the ack of 65534, 65535, 1")
    assert frame == ExtensionFrame(mm2.ack_id(conn), b"\x00\x01"), frame
