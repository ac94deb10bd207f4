"""Frames ("Frames", "MESSAGE", "COMMAND"): flags, LARGE_PAYLOAD, CONTINUED, split writes,
unknown flags, bad lengths, the layout of what the server pushes."""
import struct

import pytest

from wirecheck.reference_impl.micromessage2.codec import Command, Error, Message
from wirecheck.reference_impl.micromessage2.constants import FrameFlags as F


def _pair(mm2, kind="topic", required="pubsub"):
    sub = mm2.connect(required=required, name="subscriber")
    dest = mm2.destination(kind)
    mm2.subscribe(sub, dest)
    mm2.barrier(sub, "subscribe")
    return sub, dest


@pytest.mark.requirement("MM2-FRAME-001", "MM2-MSG-001", "MM2-MSG-002", "MM2-MSG-004", "MM2-MSG-005")
def test_message_layout_and_sequence_numbers(mm2):
    sub, topic = _pair(mm2)
    props = (("price", "N12"), ("city", "TOslo"))
    for i in range(5):
        mm2.send(sub, topic, b"payload-%d" % i, props)
    got = mm2.messages(sub, 5)
    assert mm2.numbers(sub, got) == [1, 2, 3, 4, 5]
    assert all(m.destination == topic and m.properties == props for m in got)
    assert [m.payload for m in got] == [b"payload-%d" % i for i in range(5)]
    mm2.barrier(sub)


@pytest.mark.requirement("MM2-MSG-007")
def test_first_message_is_numbered_one(mm2):
    """SPEC_NOTES (the real implementation): the count starts at 1. The document only fixes
    that each number follows the one before, so this is a SHOULD on its own."""
    sub, topic = _pair(mm2)
    mm2.send(sub, topic, b"first")
    got = mm2.expect(sub, Message, "the first MESSAGE of the connection")
    assert got.sequence == 1, f"the first MESSAGE of a connection is numbered {got.sequence}, not 1"
    mm2.barrier(sub)


@pytest.mark.requirement("MM2-FRAME-002")
@pytest.mark.parametrize("size", [0, 5, 255, 256, 70_000])
def test_large_payload_flag(mm2, size):
    sub, topic = _pair(mm2)
    payload = bytes(i % 251 for i in range(size))
    sub.send(Message(1, topic, payload, large=True))       # 4-byte length, whatever the size
    got = mm2.expect(sub, Message, "the message sent with LARGE_PAYLOAD")
    assert got.payload == payload
    # "8 = LARGE_PAYLOAD. The length header will be 4 bytes instead of 1": a payload above 255
    # bytes needs it; the document does not forbid it on a smaller one.
    assert got.large or size <= 255, "a payload above 255 bytes needs LARGE_PAYLOAD"
    mm2.barrier(sub)


# The same frames sent to a target that only receives (no pubsub to echo them back): with a
# window of one, the target's ack of the SEND's number proves it read the frame whole.

@pytest.mark.requirement("MM2-MSG-001")
def test_empty_payload_send_is_acked(mm2):
    """A SEND with an empty payload (length 0, in the 1-byte form and the LARGE_PAYLOAD form)
    is a SEND like any other. Its own test: a target that never acks an empty SEND breaks the
    MESSAGE layout's length, not LARGE_PAYLOAD (the LARGE test below sends payloads of 255
    bytes and more)."""
    conn = mm2.connect(required=mm2.window_extension(1))
    queue = mm2.destination("queue")
    conn.send(Message(1, queue, b""))
    conn.send(Message(2, queue, b"", large=True))
    conn.sent = 2
    assert mm2.expect_acks(conn, 2, "the acks of two empty SENDs") == [1, 2]


@pytest.mark.requirement("MM2-FRAME-002")
@pytest.mark.parametrize("size", [255, 256, 70_000])
def test_large_payload_send_is_acked(mm2, size):
    conn = mm2.connect(required=mm2.window_extension(1))
    queue = mm2.destination("queue")
    conn.send(Message(1, queue, bytes(size), large=True))
    conn.send(Message(2, queue, bytes(size)))               # 4-byte length only above 255 bytes
    conn.sent = 2
    assert mm2.expect_acks(conn, 2, "the acks of two SENDs, one with LARGE_PAYLOAD") == [1, 2]


@pytest.mark.requirement("MM2-FRAME-004", "MM2-FRAME-006")
def test_continued_sends_are_acked(mm2):
    conn = mm2.connect(required=mm2.window_extension(1))
    queue = mm2.destination("queue")
    head = struct.pack(">HB", 1, len(queue)) + queue.encode() + b"\x00\x00"
    conn.send(b"".join(bytes((F.CONTINUED if i < 2 else 0,)) + head + bytes((len(p),)) + p
                       for i, p in enumerate([b"abc", b"def", b"g"])))
    conn.send(Message(2, queue, bytes(range(256)) * (4 * 1024 + 3)))     # > 1 MiB: two pieces
    conn.sent = 2
    assert mm2.expect_acks(conn, 2, "one ack per reassembled SEND") == [1, 2]


@pytest.mark.requirement("MM2-FRAME-005")
@pytest.mark.parametrize("chunks", [2, 5])
def test_split_sends_are_acked(mm2, chunks):
    conn = mm2.connect(required=mm2.window_extension(1))
    queue = mm2.destination("queue")
    conn.send(*[Message(i, queue, b"m%d" % i, (("k", "N%d" % i if mm2.typed else str(i)),))
                for i in range(1, 4)], chunks=chunks)
    conn.sent = 3
    assert mm2.expect_acks(conn, 3, f"the acks of three SENDs written in {chunks} pieces") == [1, 2, 3]


@pytest.mark.requirement("MM2-FRAME-004", "MM2-FRAME-006")
def test_continued_frames_are_reassembled(mm2):
    sub, topic = _pair(mm2)
    payload = bytes(range(256)) * (4 * 1024 + 3)            # ~1 MiB + a little: two pieces
    sub.send(Message(1, topic, payload))
    got = mm2.expect(sub, Message, "the reassembled message")
    assert got.payload == payload
    assert got.pieces >= 2, "a payload above 1 MiB is split into CONTINUED frames"
    mm2.barrier(sub)


@pytest.mark.requirement("MM2-FRAME-004")
def test_continued_small_pieces(mm2):
    sub, topic = _pair(mm2)
    head = struct.pack(">HB", 1, len(topic)) + topic.encode() + b"\x00\x00"
    pieces = [b"abc", b"def", b"g"]
    raw = b"".join(bytes((F.CONTINUED if i < 2 else 0,)) + head + bytes((len(p),)) + p
                   for i, p in enumerate(pieces))
    sub.send(raw)
    got = mm2.expect(sub, Message, "the message sent in three CONTINUED pieces")
    assert got.payload == b"abcdefg"
    mm2.barrier(sub)


@pytest.mark.requirement("MM2-FRAME-005")
@pytest.mark.parametrize("chunks", [1, 2, 5])
def test_frames_split_and_pipelined(mm2, chunks):
    sub, topic = _pair(mm2)
    frames = [Message(i, topic, b"m%d" % i, (("k", "N%d" % i),)) for i in range(1, 4)]
    sub.send(*frames, Command("x-wirecheck-barrier"), chunks=chunks)
    got = mm2.messages(sub, 3)
    assert [m.payload for m in got] == [b"m1", b"m2", b"m3"]
    mm2.expect_error(sub, "the barrier sent in the same write")


@pytest.mark.requirement("MM2-FRAME-003")
@pytest.mark.parametrize("flags", [0x20, 0x40, 0x80, 0x21])
def test_unknown_flag_bits(mm2, flags):
    conn = mm2.connect()
    conn.send(bytes((flags, 1, 0x61)))
    mm2.expect_error_then_close(conn, f"flags 0x{flags:02x}")


@pytest.mark.requirement("MM2-FRAME-003")
@pytest.mark.parametrize("flags", [F.COMMAND | F.EXTENSION, F.COMMAND | F.ERROR, F.EXTENSION | F.ERROR,
                                   F.COMMAND | F.CONTINUED])
def test_two_frame_types(mm2, flags):
    conn = mm2.connect()
    conn.send(bytes((flags, 1, 1, 0x61)))
    mm2.expect_error_then_close(conn, f"flags 0x{int(flags):02x}")


@pytest.mark.requirement("MM2-FRAME-007")
def test_length_above_limit_refused_before_the_body(mm2):
    conn = mm2.connect()
    conn.send(bytes((F.COMMAND | F.LARGE_PAYLOAD,)) + struct.pack(">I", 0xFFFFFFF0) + b"subscribe")
    mm2.expect_error_then_close(conn, "a 4 GiB command")


@pytest.mark.requirement("MM2-CMD-001", "MM2-CMD-002")
def test_unknown_command_gets_an_error_and_the_connection_stays(mm2):
    # a target that answers no COMMAND (features.commands = false) cannot be asked this
    mm2.needs("commands")
    conn = mm2.connect()
    conn.send(Command("x-no-such-command", (("a", "1 2;3"),)))
    mm2.expect_error(conn, "an ERROR for an unknown command")
    mm2.barrier(conn, "the unknown command")


@pytest.mark.requirement("MM2-MSG-006")
def test_send_without_destination(mm2):
    conn = mm2.connect()
    conn.send(Message(1, "", b"x"))
    mm2.expect_error(conn, "an ERROR for a SEND without destination")
    mm2.barrier(conn)


@pytest.mark.requirement("MM2-ERR-002")
def test_error_from_the_client_ends_the_connection(mm2):
    conn = mm2.connect()
    conn.send(Error("the client gives up"))
    mm2.expect_closed(conn, "the client sent an ERROR frame")
