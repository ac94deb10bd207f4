"""Publishers, Publish, PublishConfirm, PublishError, deduplication and
QueryPublisherSequence (rabbitmq-stream-protocol.adoc "DeclarePublisher", "Publish",
"PublishConfirm", "PublishError", "QueryPublisherSequence", "DeletePublisher"; SPEC_NOTES.md)."""
import pytest

from wirecheck.reference_impl.rabbitmq_stream.chunk import SubBatchEntry
from wirecheck.reference_impl.rabbitmq_stream.codec import (DeclarePublisher, DeclarePublisherResponse, DeletePublisher,
                                                  DeletePublisherResponse, Publish, PublishConfirm,
                                                  PublishedMessage,
                                                  PublishError, QueryPublisherSequence,
                                                  QueryPublisherSequenceResponse)
from wirecheck.reference_impl.rabbitmq_stream.constants import Code, OffsetType


def _declare(rmqs, conn, publisher_id, stream, reference=""):
    cid = rmqs.cid()
    conn.send(DeclarePublisher(cid, publisher_id, reference, stream))
    return conn.expect(DeclarePublisherResponse, correlation_id=cid).code


def _sequence(rmqs, conn, reference, stream):
    cid = rmqs.cid()
    conn.send(QueryPublisherSequence(cid, reference, stream))
    return conn.expect(QueryPublisherSequenceResponse, correlation_id=cid)


def _read_all(rmqs, stream, count):
    """Every message of ``stream`` (``count`` of them), read from the first offset."""
    conn = rmqs.connect(name="reader")
    rmqs.subscribe(conn, 1, stream, OffsetType.FIRST, credit=100)
    got = rmqs.messages_until(conn, 1, count)
    rmqs.barrier(conn, f"the first {count} messages")
    return got


@pytest.mark.requirement("RMQS-PUB-001")
@pytest.mark.parametrize("reference", ["", "wirecheck-writer"], ids=["no-reference", "reference"])
def test_declare_publisher(rmqs, reference):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "decl")
    assert _declare(rmqs, conn, 7, stream, reference) == Code.OK


@pytest.mark.requirement("RMQS-PUB-002")
def test_declare_publisher_on_missing_stream_gets_2(rmqs):
    conn = rmqs.connect()
    assert _declare(rmqs, conn, 1, rmqs.name("missing")) == Code.STREAM_DOES_NOT_EXIST


@pytest.mark.requirement("RMQS-PUB-003")
def test_declare_same_publisher_id_twice_gets_17(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "decl")
    rmqs.declare(conn, 1, stream)
    assert _declare(rmqs, conn, 1, stream, "other-reference") == Code.PRECONDITION_FAILED


@pytest.mark.requirement("RMQS-PUB-004")
def test_reference_held_by_another_publisher_gets_17(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "decl")
    rmqs.declare(conn, 1, stream, "wirecheck-shared")
    # Same connection only: RabbitMQ 3.10 accepts the reference from another connection,
    # which then shares its sequence (observed; the document is silent).
    assert _declare(rmqs, conn, 2, stream, "wirecheck-shared") == Code.PRECONDITION_FAILED


@pytest.mark.requirement("RMQS-PUB-005", "RMQS-PUB-008")
def test_delete_publisher_frees_its_id(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "delpub")
    rmqs.declare(conn, 3, stream)
    cid = rmqs.cid()
    conn.send(DeletePublisher(cid, 3))
    conn.expect(DeletePublisherResponse, correlation_id=cid, code=Code.OK)
    conn.send(Publish(3, (PublishedMessage(1, b"x"),)))
    conn.expect(PublishError, publisher_id=3, errors=((1, Code.PUBLISHER_DOES_NOT_EXIST),))
    assert _declare(rmqs, conn, 3, stream) == Code.OK, "a deleted publisher's id can be declared again"
    rmqs.publish(conn, 3, [PublishedMessage(2, b"y")])


@pytest.mark.requirement("RMQS-PUB-006")
def test_delete_unknown_publisher_gets_18(rmqs):
    conn = rmqs.connect()
    cid = rmqs.cid()
    conn.send(DeletePublisher(cid, 200))
    conn.expect(DeletePublisherResponse, correlation_id=cid, code=Code.PUBLISHER_DOES_NOT_EXIST)


@pytest.mark.requirement("RMQS-PUB-007", "RMQS-PUB-009")
def test_publish_is_confirmed_and_stored_in_order(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "pub")
    rmqs.declare(conn, 5, stream)
    bodies = [b"", b"hello", bytes(range(256)), b"\x00" * 1000] + [b"m%d" % i for i in range(60)]
    # Publishing ids need not start at 1 nor be contiguous: they are the client's.
    ids = [1000 + 3 * i for i in range(len(bodies))]
    rmqs.publish(conn, 5, [PublishedMessage(i, b) for i, b in zip(ids, bodies)])
    rmqs.barrier(conn, "the confirms")
    got = _read_all(rmqs, stream, len(bodies))
    assert [b for _, b in got] == bodies
    offsets = [o for o, _ in got]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets), offsets


@pytest.mark.requirement("RMQS-PUB-007")
def test_two_publishers_on_one_connection(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "pub2")
    rmqs.declare(conn, 1, stream)
    rmqs.declare(conn, 2, stream)
    conn.send(Publish(1, tuple(PublishedMessage(i, b"a") for i in range(1, 41))),
              Publish(2, tuple(PublishedMessage(i, b"b") for i in range(1, 4))))
    pending = {1: set(range(1, 41)), 2: {1, 2, 3}}
    while pending[1] or pending[2]:
        frame = conn.recv(expecting=f"PublishConfirm for {pending}")
        assert isinstance(frame, PublishConfirm), frame
        ids = set(frame.publishing_ids)
        assert ids <= pending[frame.publisher_id], (frame, pending)
        pending[frame.publisher_id] -= ids
    rmqs.barrier(conn, "the confirms")


@pytest.mark.requirement("RMQS-PUB-008")
@pytest.mark.parametrize("count", [1, 3])
def test_publish_with_undeclared_publisher_gets_publish_error_18(rmqs, count):
    conn = rmqs.connect()
    conn.send(Publish(9, tuple(PublishedMessage(i, b"x") for i in range(1, count + 1))))
    errors = []
    while len(errors) < count:
        frame = conn.expect(PublishError, publisher_id=9)
        errors.extend(tuple(e) for e in frame.errors)
    assert sorted(errors) == [(i, Code.PUBLISHER_DOES_NOT_EXIST) for i in range(1, count + 1)]
    rmqs.barrier(conn, "the PublishError")


@pytest.mark.requirement("RMQS-PUB-010", "RMQS-DELIVER-004")
def test_sub_batch_entry_spans_its_records(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "batch")
    rmqs.declare(conn, 1, stream)
    rmqs.publish(conn, 1, [PublishedMessage(1, SubBatchEntry.of([b"s1", b"s2", b"s3"]))])
    rmqs.publish(conn, 1, [PublishedMessage(2, b"after")])
    reader = rmqs.connect(name="reader")
    rmqs.subscribe(reader, 1, stream, credit=10)
    first, second = rmqs.deliveries(reader, 1, 2)
    assert (first.chunk.num_entries, first.chunk.num_records) == (1, 3), first.chunk
    assert first.chunk.messages() == [b"s1", b"s2", b"s3"]
    assert second.chunk.first_offset == first.chunk.first_offset + 3, (first.chunk, second.chunk)
    assert second.chunk.messages() == [b"after"]


@pytest.mark.requirement("RMQS-PUB-011", "RMQS-PUB-012")
def test_query_publisher_sequence(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "seq")
    answer = _sequence(rmqs, conn, "wirecheck-writer", stream)
    assert (answer.code, answer.sequence) == (Code.OK, 0), answer
    rmqs.declare(conn, 1, stream, "wirecheck-writer")
    rmqs.publish(conn, 1, [PublishedMessage(i, b"x") for i in (5, 6, 9)])
    answer = _sequence(rmqs, conn, "wirecheck-writer", stream)
    assert (answer.code, answer.sequence) == (Code.OK, 9), answer


@pytest.mark.requirement("RMQS-PUB-013")
def test_query_publisher_sequence_of_missing_stream_gets_2(rmqs):
    conn = rmqs.connect()
    answer = _sequence(rmqs, conn, "wirecheck-writer", rmqs.name("missing"))
    assert answer.code == Code.STREAM_DOES_NOT_EXIST, answer


@pytest.mark.requirement("RMQS-PUB-014", "RMQS-PUB-011")
def test_deduplication_with_a_reference(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "dedup")
    rmqs.declare(conn, 1, stream, "wirecheck-dedup")
    rmqs.publish(conn, 1, [PublishedMessage(i, b"m%d" % i) for i in (1, 2, 3)])
    rmqs.publish(conn, 1, [PublishedMessage(i, b"d%d" % i) for i in (2, 3, 4)])   # 2, 3 again
    rmqs.publish(conn, 1, [PublishedMessage(10, b"x10"), PublishedMessage(7, b"x7")])  # 7 < 10
    assert _sequence(rmqs, conn, "wirecheck-dedup", stream).sequence == 10
    got = _read_all(rmqs, stream, 5)
    assert [b for _, b in got] == [b"m1", b"m2", b"m3", b"d4", b"x10"], got


@pytest.mark.requirement("RMQS-PUB-015")
def test_no_deduplication_without_a_reference(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "nodedup")
    rmqs.declare(conn, 1, stream)
    rmqs.publish(conn, 1, [PublishedMessage(5, b"a")])
    rmqs.publish(conn, 1, [PublishedMessage(5, b"b")])
    got = _read_all(rmqs, stream, 2)
    assert [b for _, b in got] == [b"a", b"b"], got


@pytest.mark.requirement("RMQS-PUB-016")
def test_sequence_outlives_the_publisher(rmqs):
    first = rmqs.connect(name="first")
    stream = rmqs.create(first, "dedup")
    rmqs.declare(first, 1, stream, "wirecheck-durable")
    rmqs.publish(first, 1, [PublishedMessage(i, b"m%d" % i) for i in (1, 2, 3)])
    cid = rmqs.cid()
    first.send(DeletePublisher(cid, 1))
    first.expect(DeletePublisherResponse, correlation_id=cid, code=Code.OK)
    second = rmqs.connect(name="second")
    assert _sequence(rmqs, second, "wirecheck-durable", stream).sequence == 3
    rmqs.declare(second, 8, stream, "wirecheck-durable")
    rmqs.publish(second, 8, [PublishedMessage(i, b"n%d" % i) for i in (3, 4)])
    got = _read_all(rmqs, stream, 4)
    assert [b for _, b in got] == [b"m1", b"m2", b"m3", b"n4"], got
