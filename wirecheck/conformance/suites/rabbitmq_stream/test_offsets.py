"""StoreOffset and QueryOffset (rabbitmq-stream-protocol.adoc "StoreOffset", "QueryOffset",
"Response Codes"; SPEC_NOTES.md: code 19 when no offset is stored)."""
import pytest

from wirecheck.reference_impl.rabbitmq_stream.codec import QueryOffset, QueryOffsetResponse, StoreOffset
from wirecheck.reference_impl.rabbitmq_stream.constants import Code


def _query(rmqs, conn, reference, stream):
    cid = rmqs.cid()
    conn.send(QueryOffset(cid, reference, stream))
    return conn.expect(QueryOffsetResponse, correlation_id=cid)


@pytest.mark.requirement("RMQS-OFFSET-001", "RMQS-OFFSET-002")
def test_store_then_query(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "offsets")
    conn.send(StoreOffset("wirecheck-consumer", stream, 42))
    rmqs.barrier(conn, "StoreOffset")
    answer = _query(rmqs, conn, "wirecheck-consumer", stream)
    assert (answer.code, answer.offset) == (Code.OK, 42), answer


@pytest.mark.requirement("RMQS-OFFSET-002")
def test_last_store_wins_even_lower(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "offsets")
    conn.send(StoreOffset("wirecheck-consumer", stream, 5), StoreOffset("wirecheck-consumer", stream, 9),
              StoreOffset("wirecheck-consumer", stream, 3))
    rmqs.barrier(conn, "three StoreOffset frames")
    answer = _query(rmqs, conn, "wirecheck-consumer", stream)
    assert (answer.code, answer.offset) == (Code.OK, 3), answer


@pytest.mark.requirement("RMQS-OFFSET-002", "RMQS-OFFSET-003")
def test_offsets_are_per_reference_and_per_stream(rmqs):
    conn = rmqs.connect()
    a, b = rmqs.create(conn, "off-a"), rmqs.create(conn, "off-b")
    conn.send(StoreOffset("r1", a, 10), StoreOffset("r2", a, 20), StoreOffset("r1", b, 30))
    rmqs.barrier(conn, "StoreOffset frames")
    other = rmqs.connect(name="other")     # stored offsets belong to the stream, not the connection
    found = {(ref, s): _query(rmqs, other, ref, s) for ref, s in (("r1", a), ("r2", a), ("r1", b))}
    assert {k: (v.code, v.offset) for k, v in found.items()} == {
        ("r1", a): (Code.OK, 10), ("r2", a): (Code.OK, 20), ("r1", b): (Code.OK, 30)}, found
    assert _query(rmqs, other, "r2", b).code != Code.OK


@pytest.mark.requirement("RMQS-OFFSET-004")
def test_no_stored_offset_is_not_ok(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "nooffset")
    answer = _query(rmqs, conn, "wirecheck-never-stored", stream)
    assert answer.code != Code.OK, f"QueryOffset answered OK with offset {answer.offset} for a reference " \
                                   f"that never stored one"


@pytest.mark.requirement("RMQS-OFFSET-005")
def test_no_stored_offset_gets_19(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "nooffset")
    answer = _query(rmqs, conn, "wirecheck-never-stored", stream)
    assert answer.code == Code.NO_OFFSET, answer


@pytest.mark.requirement("RMQS-OFFSET-006")
def test_query_offset_on_missing_stream_gets_2(rmqs):
    conn = rmqs.connect()
    answer = _query(rmqs, conn, "wirecheck-consumer", rmqs.name("missing"))
    assert answer.code == Code.STREAM_DOES_NOT_EXIST, answer


@pytest.mark.requirement("RMQS-OFFSET-007")
def test_store_offset_to_missing_stream_is_ignored(rmqs):
    conn = rmqs.connect()
    conn.send(StoreOffset("wirecheck-consumer", rmqs.name("missing"), 7))
    rmqs.barrier(conn, "StoreOffset to a missing stream")
