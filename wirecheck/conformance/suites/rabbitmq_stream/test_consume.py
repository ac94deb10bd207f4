"""Subscribe with every offset specification, Credit, Unsubscribe, and the chunk that Deliver
carries (rabbitmq-stream-protocol.adoc "Subscribe", "Deliver", "Credit", "Unsubscribe",
"Response Codes"; SPEC_NOTES.md: the 48-byte chunk header, offset only for types 4 and 5)."""
import struct
import zlib

import pytest

from wirecheck.conformance.target.connection import pace
from wirecheck.reference_impl.rabbitmq_stream.codec import (Credit, CreditResponse, PublishedMessage, Subscribe,
                                                  SubscribeResponse, Unsubscribe, UnsubscribeResponse)
from wirecheck.reference_impl.rabbitmq_stream.constants import Code, Key, OffsetType

from .conftest import raw

#: Three chunks: offsets 0, 1-2 (a sub-batch entry of two records), 3.
GROUPS = [[b"a0"], [b"b1", b"b2"], [b"c3"]]


def _chunks(rmqs, conn, sub_id, count):
    return [d.chunk for d in rmqs.deliveries(conn, sub_id, count)]


def _prepared(rmqs, label="sub"):
    """A stream of the three GROUPS chunks, its chunks as read from FIRST, and the
    publisher connection (publisher 1; publishing ids 1-3 used)."""
    stream, pub = rmqs.stream_with_chunks(GROUPS, label)
    reader = rmqs.connect(name="first-reader")
    rmqs.subscribe(reader, 1, stream, OffsetType.FIRST, credit=10)
    chunks = _chunks(rmqs, reader, 1, 3)
    rmqs.barrier(reader, "the three chunks of the stream")
    reader.close()
    return stream, chunks, pub


@pytest.mark.requirement("RMQS-SUB-001", "RMQS-SUB-002", "RMQS-SUB-010", "RMQS-DELIVER-001",
                         "RMQS-DELIVER-005")
def test_subscribe_first(rmqs):
    stream, pub = rmqs.stream_with_chunks(GROUPS, "first")
    conn = rmqs.connect()
    rmqs.subscribe(conn, 4, stream, OffsetType.FIRST, credit=10)
    delivered = rmqs.deliveries(conn, 4, 3)
    rmqs.barrier(conn, "the three chunks")
    assert all(d.version == 1 and d.subscription_id == 4 for d in delivered)
    chunks = [d.chunk for d in delivered]
    assert [c.messages() for c in chunks] == GROUPS
    assert chunks[0].first_offset == 0, chunks[0]
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.first_offset == prev.first_offset + prev.num_records, (prev, nxt)


@pytest.mark.requirement("RMQS-SUB-003")
def test_subscribe_last_delivers_the_last_chunk(rmqs):
    stream, chunks, _ = _prepared(rmqs, "last")
    conn = rmqs.connect()
    rmqs.subscribe(conn, 1, stream, OffsetType.LAST, credit=10)
    (got,) = _chunks(rmqs, conn, 1, 1)
    rmqs.barrier(conn, "the last chunk")
    assert got.first_offset == chunks[-1].first_offset and got.messages() == GROUPS[-1], got


@pytest.mark.requirement("RMQS-SUB-004", "RMQS-SUB-013")
def test_subscribe_next_gets_only_new_messages(rmqs):
    stream, pub = rmqs.stream_with_chunks(GROUPS, "next")
    conn = rmqs.connect()
    rmqs.subscribe(conn, 1, stream, OffsetType.NEXT, credit=10)
    rmqs.barrier(conn, "a NEXT subscription to a stream with old messages")
    rmqs.publish(pub, 1, [PublishedMessage(4, b"new")])
    (got,) = _chunks(rmqs, conn, 1, 1)
    assert got.messages() == [b"new"], got


@pytest.mark.requirement("RMQS-SUB-005", "RMQS-DELIVER-005")
@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_subscribe_at_offset_starts_with_its_chunk(rmqs, index):
    stream, chunks, _ = _prepared(rmqs, "offset")
    offsets = [(c, c.first_offset + i) for c in chunks for i in range(c.num_records)]
    holder, offset = offsets[index]
    expected = chunks[chunks.index(holder):]
    conn = rmqs.connect()
    rmqs.subscribe(conn, 1, stream, OffsetType.OFFSET, offset, credit=10)
    got = _chunks(rmqs, conn, 1, len(expected))
    rmqs.barrier(conn, f"the chunks from offset {offset}")
    assert [c.first_offset for c in got] == [c.first_offset for c in expected], (offset, got)


@pytest.mark.requirement("RMQS-SUB-006")
def test_subscribe_beyond_the_end_waits_for_the_next_message(rmqs):
    stream, chunks, pub = _prepared(rmqs, "beyond")
    conn = rmqs.connect()
    rmqs.subscribe(conn, 1, stream, OffsetType.OFFSET, chunks[-1].next_offset + 1000, credit=10)
    rmqs.barrier(conn, "a subscription beyond the end")
    rmqs.publish(pub, 1, [PublishedMessage(4, b"new")])
    (got,) = _chunks(rmqs, conn, 1, 1)
    assert got.messages() == [b"new"], got


@pytest.mark.requirement("RMQS-SUB-007", "RMQS-DELIVER-008")
def test_subscribe_by_timestamp(rmqs):
    pub = rmqs.connect(name="publisher")
    stream = rmqs.create(pub, "ts")
    rmqs.declare(pub, 1, stream)
    for i in range(3):
        rmqs.publish(pub, 1, [PublishedMessage(i + 1, b"t%d" % i)])
        pace(0.005)       # lets the target's millisecond clock move, so timestamps differ
    reader = rmqs.connect(name="reader")
    rmqs.subscribe(reader, 1, stream, OffsetType.FIRST, credit=10)
    chunks = _chunks(rmqs, reader, 1, 3)
    stamps = [c.timestamp for c in chunks]
    assert stamps == sorted(stamps), stamps
    conn = rmqs.connect()
    points = [stamps[0] - 1, stamps[0], stamps[0] + 1, stamps[1], stamps[2], stamps[2] + 1]
    for sub_id, point in enumerate(points, start=10):
        expected = [c.first_offset for c in chunks if c.timestamp >= point]
        rmqs.subscribe(conn, sub_id, stream, OffsetType.TIMESTAMP, point, credit=10)
        got = [c.first_offset for c in _chunks(rmqs, conn, sub_id, len(expected))]
        rmqs.barrier(conn, f"the chunks from timestamp {point} (chunk timestamps {stamps})")
        assert got == expected, (point, stamps, got)


@pytest.mark.requirement("RMQS-SUB-008")
def test_subscription_id_in_use_gets_3(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "dupsub")
    rmqs.subscribe(conn, 1, stream, credit=1)
    cid = rmqs.cid()
    conn.send(Subscribe(cid, 1, stream, OffsetType.FIRST, None, 1, {}))
    conn.expect(SubscribeResponse, correlation_id=cid, code=Code.SUBSCRIPTION_ID_ALREADY_EXISTS)


@pytest.mark.requirement("RMQS-SUB-009")
def test_subscribe_to_missing_stream_gets_2(rmqs):
    conn = rmqs.connect()
    cid = rmqs.cid()
    conn.send(Subscribe(cid, 1, rmqs.name("missing"), OffsetType.FIRST, None, 1, {}))
    conn.expect(SubscribeResponse, correlation_id=cid, code=Code.STREAM_DOES_NOT_EXIST)


@pytest.mark.requirement("RMQS-SUB-011", "RMQS-SUB-010")
@pytest.mark.parametrize("offset_type", [OffsetType.FIRST, OffsetType.OFFSET], ids=["first", "offset"])
def test_subscribe_without_properties_count(rmqs, offset_type):
    stream, pub = rmqs.stream_with_chunks(GROUPS[:1], "noprops")
    conn = rmqs.connect()
    cid = rmqs.cid()
    body = struct.pack(">IB", cid, 2) + struct.pack(">h", len(stream)) + stream.encode()
    body += struct.pack(">H", offset_type)
    if offset_type == OffsetType.OFFSET:
        body += struct.pack(">Q", 0)
    body += struct.pack(">H", 5)                     # credit, and nothing after it
    conn.send(raw(Key.SUBSCRIBE, 1, body))
    conn.expect(SubscribeResponse, correlation_id=cid, code=Code.OK)
    (got,) = _chunks(rmqs, conn, 2, 1)
    assert got.messages() == GROUPS[0]


@pytest.mark.requirement("RMQS-SUB-012")
def test_subscribe_with_properties(rmqs):
    stream, _ = rmqs.stream_with_chunks(GROUPS[:1], "props")
    conn = rmqs.connect()
    rmqs.subscribe(conn, 1, stream, credit=5, properties={"wirecheck-property": "value", "x": ""})
    (got,) = _chunks(rmqs, conn, 1, 1)
    assert got.messages() == GROUPS[0]


@pytest.mark.requirement("RMQS-SUB-013")
def test_live_messages_from_another_connection(rmqs):
    pub = rmqs.connect(name="publisher")
    stream = rmqs.create(pub, "live")
    rmqs.declare(pub, 1, stream)
    conn = rmqs.connect(name="consumer")
    rmqs.subscribe(conn, 1, stream, OffsetType.FIRST, credit=50)
    rmqs.barrier(conn, "a subscription to an empty stream")
    for i in range(5):
        rmqs.publish(pub, 1, [PublishedMessage(i + 1, b"live%d" % i)])
    got = rmqs.messages_until(conn, 1, 5)
    assert [b for _, b in got] == [b"live%d" % i for i in range(5)]


# -- Credit ------------------------------------------------------------------------------------

@pytest.mark.requirement("RMQS-CREDIT-001", "RMQS-CREDIT-002", "RMQS-CREDIT-003")
def test_no_delivery_without_credit_then_one_chunk_per_credit(rmqs):
    stream, chunks, _ = _prepared(rmqs, "credit")
    conn = rmqs.connect()
    rmqs.subscribe(conn, 1, stream, OffsetType.FIRST, credit=0)
    rmqs.barrier(conn, "a subscription with no credit")
    conn.send(Credit(1, 1))
    (got,) = _chunks(rmqs, conn, 1, 1)
    rmqs.barrier(conn, "a credit of 1")
    assert got.first_offset == chunks[0].first_offset
    conn.send(Credit(1, 2))
    got = _chunks(rmqs, conn, 1, 2)
    rmqs.barrier(conn, "a credit of 2 with two chunks left")
    assert [c.first_offset for c in got] == [c.first_offset for c in chunks[1:]]


@pytest.mark.requirement("RMQS-CREDIT-002")
def test_initial_credit_counts_chunks(rmqs):
    stream, chunks, pub = _prepared(rmqs, "credit2")
    conn = rmqs.connect()
    rmqs.subscribe(conn, 1, stream, OffsetType.FIRST, credit=2)
    got = _chunks(rmqs, conn, 1, 2)
    rmqs.barrier(conn, "two chunks for a credit of 2")
    assert [c.first_offset for c in got] == [c.first_offset for c in chunks[:2]]
    rmqs.publish(pub, 1, [PublishedMessage(4, b"more")])
    rmqs.barrier(conn, "a new message with no credit left")
    conn.send(Credit(1, 5))
    got = _chunks(rmqs, conn, 1, 2)
    assert got[0].first_offset == chunks[2].first_offset and got[1].messages() == [b"more"]


@pytest.mark.requirement("RMQS-CREDIT-004")
def test_credit_for_unknown_subscription_gets_credit_response_4(rmqs):
    conn = rmqs.connect()
    conn.send(Credit(99, 5))
    conn.expect(CreditResponse, code=Code.SUBSCRIPTION_ID_DOES_NOT_EXIST, subscription_id=99)
    rmqs.barrier(conn, "the CreditResponse")


# -- Unsubscribe -------------------------------------------------------------------------------

@pytest.mark.requirement("RMQS-UNSUB-001")
def test_unsubscribe_stops_delivery(rmqs):
    stream, chunks, pub = _prepared(rmqs, "unsub")
    conn = rmqs.connect()
    rmqs.subscribe(conn, 1, stream, OffsetType.NEXT, credit=10)
    cid = rmqs.cid()
    conn.send(Unsubscribe(cid, 1))
    conn.expect(UnsubscribeResponse, correlation_id=cid, code=Code.OK)
    rmqs.publish(pub, 1, [PublishedMessage(4, b"after-unsubscribe")])
    rmqs.barrier(conn, "a message published after Unsubscribe")
    rmqs.subscribe(conn, 1, stream, OffsetType.LAST, credit=1)
    (got,) = _chunks(rmqs, conn, 1, 1)
    assert got.messages() == [b"after-unsubscribe"]


@pytest.mark.requirement("RMQS-UNSUB-002")
def test_unsubscribe_unknown_gets_4(rmqs):
    conn = rmqs.connect()
    cid = rmqs.cid()
    conn.send(Unsubscribe(cid, 42))
    conn.expect(UnsubscribeResponse, correlation_id=cid, code=Code.SUBSCRIPTION_ID_DOES_NOT_EXIST)


# -- the chunk ---------------------------------------------------------------------------------

def _parse_deliver(frame: bytes, sub_id: int):
    """One Deliver frame (without its size field) parsed by SPEC_NOTES.md alone: returns
    (ChunkFirstOffset, NumRecords, message bodies, ChunkCrc)."""
    size = len(frame)
    key, version, got_sub = struct.unpack_from(">HHB", frame)
    assert (key, version, got_sub) == (Key.DELIVER, 1, sub_id), (key, version, got_sub)
    (magic, chunk_type, entries, records, _timestamp, _epoch, first_offset, crc, data_length,
     _trailer_length, bloom_size) = struct.unpack_from(">BBHIqQQIIIB3x", frame, 5)
    assert magic >> 4 == 5, f"magic/version 0x{magic:02x}: the magic is 5"
    assert chunk_type == 0, f"chunk type {chunk_type}: a delivered chunk is a user chunk"
    data_at = 5 + 48 + bloom_size
    assert size == data_at + data_length, (
        f"Deliver of {size} bytes: 5 + 48-byte header + {bloom_size} bloom + {data_length} data "
        f"= {data_at + data_length}; {size - data_at - data_length} bytes more (a trailer?)")
    data = frame[data_at:]
    assert crc == zlib.crc32(data), f"ChunkCrc 0x{crc:08x}, CRC-32 of the data 0x{zlib.crc32(data):08x}"
    bodies, pos = [], 0
    while pos < len(data):
        (entry_size,) = struct.unpack_from(">I", data, pos)
        assert not entry_size & 0x80000000, "a published message comes back as a simple entry"
        bodies.append(data[pos + 4:pos + 4 + entry_size])
        pos += 4 + entry_size
    assert pos == len(data), "the last entry runs past DataLength"
    assert entries == records == len(bodies), (entries, records, len(bodies))
    return first_offset, records, bodies, crc


@pytest.mark.requirement("RMQS-DELIVER-001", "RMQS-DELIVER-002", "RMQS-DELIVER-003", "RMQS-DELIVER-004",
                         "RMQS-DELIVER-005", "RMQS-DELIVER-006", "RMQS-DELIVER-007")
def test_deliver_frames_parsed_by_hand(rmqs):
    bodies = [b"", b"x", b"msg: 9", bytes(range(200))]
    pub = rmqs.connect(name="publisher")
    stream = rmqs.create(pub, "layout")
    rmqs.declare(pub, 1, stream)
    rmqs.publish(pub, 1, [PublishedMessage(1, b"first")])
    # One Publish: one chunk or several, as the target likes; the checks hold either way.
    rmqs.publish(pub, 1, [PublishedMessage(i, b) for i, b in enumerate(bodies, start=2)])
    conn = rmqs.connect()
    # No credit yet: the Deliver frames must come after everything the decoder has read, so
    # that the test can take their bytes straight from the socket.
    rmqs.subscribe(conn, 6, stream, OffsetType.OFFSET, 1, credit=0)
    rmqs.barrier(conn, "a subscription without credit")
    conn.send(Credit(6, len(bodies)))
    got, expected_offset = [], 1
    while len(got) < len(bodies):
        (size,) = struct.unpack(">I", rmqs.recv_exact(conn, 4, "Deliver size"))
        first_offset, records, chunk_bodies, _ = _parse_deliver(rmqs.recv_exact(conn, size, "a Deliver"), 6)
        assert first_offset == expected_offset, \
            f"ChunkFirstOffset {first_offset}, expected {expected_offset} (the next message's offset)"
        expected_offset += records
        got += chunk_bodies
    assert got == bodies, got
    rmqs.barrier(conn, "the chunks of the published messages")


@pytest.mark.requirement("RMQS-DELIVER-003")
def test_deliver_crc_of_the_spec_notes_vector(rmqs):
    # SPEC_NOTES.md (rstream's test vector): data 00000006 "msg: 9" has CRC 3486439553.
    stream, _ = rmqs.stream_with_chunks([[b"msg: 9"]], "crc")
    conn = rmqs.connect()
    rmqs.subscribe(conn, 1, stream, OffsetType.FIRST, credit=0)
    rmqs.barrier(conn, "a subscription without credit")
    conn.send(Credit(1, 1))
    (size,) = struct.unpack(">I", rmqs.recv_exact(conn, 4, "Deliver size"))
    _, _, bodies, crc = _parse_deliver(rmqs.recv_exact(conn, size, "a Deliver"), 1)
    assert bodies == [b"msg: 9"] and crc == 3486439553, (bodies, crc)
