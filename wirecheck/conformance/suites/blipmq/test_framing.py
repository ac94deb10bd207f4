"""Frame layout: length bounds, unknown types, split writes, pipelining (blipmq-protocol.md
"Frame Layout", "Frame Types", "Backpressure & Batching Behavior")."""
import struct
import threading

import pytest

from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import MAX_FRAME_SIZE, Ack, FrameType, Hello, Ping, Pong, Publish

from .conftest import raw

KNOWN_TYPES = {int(t) for t in FrameType}
UNKNOWN_TYPES = [t for t in range(256) if t not in KNOWN_TYPES]


@pytest.mark.requirement("BLIP-FRAME-002")
@pytest.mark.parametrize("length", [0, 1, 8])
def test_length_below_nine_closes_connection(blip, length):
    conn = blip.connect()
    conn.send(struct.pack(">I", length) + b"\x07" + bytes(8))
    conn.expect_closed(reason=f"length {length} < 9")


@pytest.mark.requirement("BLIP-FRAME-003")
@pytest.mark.parametrize("length", [MAX_FRAME_SIZE + 1, 2**32 - 1])
def test_length_above_16mib_closes_without_waiting_for_body(blip, length):
    conn = blip.connect()
    # Only the header: a server that waits for the declared body before checking the
    # length never closes, and the test fails by timeout.
    conn.send(struct.pack(">IBQ", length, FrameType.PUBLISH, blip.cid()))
    conn.expect_closed(reason=f"length {length} > 16 MiB")


@pytest.mark.requirement("BLIP-FRAME-003")
def test_oversized_length_closes_before_authentication(blip):
    conn = blip.connect(hello=False)
    conn.send(b"\xff\xff\xff\xff\x01")
    conn.expect_closed(reason="length 2^32-1")


@pytest.mark.requirement("BLIP-FRAME-004", "BLIP-FRAME-001", "BLIP-PUB-004")
def test_frame_of_exactly_16mib_is_accepted(blip):
    conn = blip.connect()
    topic = blip.topic("max")
    head = 1 + 2 + len(topic.encode())
    message = b"m" * (MAX_FRAME_SIZE - 9 - head)
    frame = codec.encode(Publish(blip.cid(), 0, topic, message))
    assert struct.unpack(">I", frame[:4])[0] == MAX_FRAME_SIZE
    conn.send(frame)
    blip.barrier(conn, "a 16 MiB PUBLISH")


@pytest.mark.requirement("BLIP-FRAME-009", "BLIP-PING-001")
def test_length_nine_empty_payload_is_valid(blip):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(struct.pack(">IBQ", 9, FrameType.PING, cid))
    conn.expect(Pong, correlation_id=cid)


@pytest.mark.requirement("BLIP-FRAME-006")
@pytest.mark.parametrize("frame_type", UNKNOWN_TYPES, ids=lambda t: f"0x{t:02x}")
def test_unknown_frame_type_closes_connection(blip, frame_type):
    conn = blip.connect()
    conn.send(raw(frame_type, blip.cid(), b"\x00\x01"))
    conn.expect_closed(reason=f"unknown frame type 0x{frame_type:02x}")


@pytest.mark.requirement("BLIP-FRAME-006", "BLIP-FRAME-007")
def test_frames_before_an_unknown_type_are_still_answered(blip):
    conn = blip.connect()
    cid = blip.cid()
    conn.send(Ping(cid), raw(0xEE, blip.cid()))
    conn.expect(Pong, correlation_id=cid)
    conn.expect_closed(reason="unknown frame type after a PING")


@pytest.mark.requirement("BLIP-FRAME-008", "BLIP-HELLO-001", "BLIP-AUTH-005")
def test_handshake_sent_one_byte_at_a_time(blip):
    conn = blip.connect(hello=False)
    hello, auth = blip.cid(), blip.cid()
    conn.send(Hello(hello), chunks=1)
    conn.expect(Ack, correlation_id=hello, subscription_id=0)
    conn.send(codec.Auth(auth, blip.api_key), chunks=1)
    conn.expect(Ack, correlation_id=auth, subscription_id=0)


@pytest.mark.requirement("BLIP-FRAME-008")
@pytest.mark.parametrize("split", [4, 5, 13], ids=["after-length", "after-type", "after-header"])
def test_header_and_body_in_separate_writes(blip, split):
    conn = blip.connect()
    topic = blip.topic("split")
    sub = blip.subscribe(conn, topic, 0)
    conn.send(Publish(blip.cid(), 0, topic, b"split-body"), chunks=[split])
    blip.barrier(conn, "a split PUBLISH")
    frame, _ = blip.poll(conn, sub)
    assert frame.message == b"split-body"


@pytest.mark.requirement("BLIP-FRAME-008", "BLIP-FRAME-007")
def test_many_frames_split_at_odd_boundaries(blip):
    conn = blip.connect()
    cids = [blip.cid() for _ in range(20)]
    conn.send(*[Ping(c) for c in cids], chunks=[3, 7, 11, 2, 1, 40, 17, 5, 9, 13] * 5)
    for c in cids:
        conn.expect(Pong, correlation_id=c)


@pytest.mark.requirement("BLIP-FRAME-007", "BLIP-FRAME-005")
def test_pipelined_frames_in_one_write_answered_in_order(blip):
    conn = blip.connect()
    cids = [blip.cid() for _ in range(100)]
    conn.send(*[Ping(c) for c in cids])
    for c in cids:
        conn.expect(Pong, correlation_id=c)


@pytest.mark.requirement("BLIP-FRAME-007", "BLIP-HELLO-001", "BLIP-AUTH-005", "BLIP-SUB-004")
def test_handshake_and_requests_pipelined_in_one_write(blip):
    conn = blip.connect(hello=False)
    hello, auth, sub, ping = (blip.cid() for _ in range(4))
    conn.send(Hello(hello), codec.Auth(auth, blip.api_key),
              codec.Subscribe(sub, blip.topic("pipe"), 1), Ping(ping))
    conn.expect(Ack, correlation_id=hello, subscription_id=0)
    conn.expect(Ack, correlation_id=auth, subscription_id=0)
    assert conn.expect(Ack, correlation_id=sub).subscription_id != 0
    conn.expect(Pong, correlation_id=ping)


@pytest.mark.requirement("BLIP-IO-001")
def test_all_responses_arrive_when_client_reads_late(blip):
    conn = blip.connect()
    cids = [blip.cid() for _ in range(20000)]
    # ~340 KB of PINGs, and as many PONGs back, before the first PONG is read. The writer
    # runs in a thread: a server may rightly stop reading while its answers are unread, and
    # the kit must not deadlock on that.
    errors = []

    def write():
        try:
            conn.send(*[Ping(c) for c in cids])
        except AssertionError as exc:
            errors.append(exc)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    writer.join(0.2)      # let the target's unread answers pile up first
    for c in cids:
        conn.expect(Pong, correlation_id=c)
    writer.join(conn.timeout)
    assert not errors, errors[0]
