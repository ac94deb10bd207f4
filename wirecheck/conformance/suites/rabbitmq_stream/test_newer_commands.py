"""Commands newer than the document: 26 ConsumerUpdate, 27 ExchangeCommandVersions,
28 StreamStats, 29/30 Create/DeleteSuperStream, Publish and Deliver version 2 (SPEC_NOTES.md,
RabbitMQ Stream). A profile without them (RabbitMQ 3.10: feature ``keys_26_30`` false) makes
these tests UNIMPLEMENTED; test_framing.py checks that such a target treats the keys as unknown."""
import struct

import pytest

from wirecheck.conformance.report import verdicts
from wirecheck.reference_impl.rabbitmq_stream.codec import (ConsumerUpdate, ConsumerUpdateResponse, CreateSuperStream,
                                                  CreateSuperStreamResponse, Deliver, DeleteSuperStream,
                                                  DeleteSuperStreamResponse, ExchangeCommandVersions,
                                                  ExchangeCommandVersionsResponse, PublishedMessage,
                                                  StreamStats, StreamStatsResponse, Unsubscribe,
                                                  UnsubscribeResponse)
from wirecheck.reference_impl.rabbitmq_stream.constants import Code, Key, OffsetType

from .conftest import raw


@pytest.fixture
def rmqs_new(rmqs):
    if not rmqs.profile.feature("keys_26_30"):
        verdicts.unimplemented("keys_26_30 (commands 26-30 and version 2 of Publish/Deliver)")
    return rmqs


def _exchange(rmqs, conn, versions):
    cid = rmqs.cid()
    conn.send(ExchangeCommandVersions(cid, tuple(versions)))
    return conn.expect(ExchangeCommandVersionsResponse, correlation_id=cid, code=Code.OK)


@pytest.mark.requirement("RMQS-NEW-001")
def test_exchange_command_versions(rmqs_new):
    conn = rmqs_new.connect()
    answer = _exchange(rmqs_new, conn, [(Key.PUBLISH, 1, 2), (Key.DELIVER, 1, 2)])
    table = {key: (lo, hi) for key, lo, hi in answer.versions}
    assert {Key.PUBLISH, Key.DELIVER} <= set(table), answer.versions
    assert all(1 <= lo <= hi for lo, hi in table.values()), answer.versions


@pytest.mark.requirement("RMQS-NEW-002")
def test_deliver_version_2_after_the_exchange(rmqs_new):
    stream, _ = rmqs_new.stream_with_chunks([[b"one"], [b"two"]], "v2")
    conn = rmqs_new.connect()
    answer = _exchange(rmqs_new, conn, [(Key.DELIVER, 1, 2)])
    if dict((k, hi) for k, _, hi in answer.versions).get(Key.DELIVER, 1) < 2:
        verdicts.unimplemented("Deliver version 2 (not in the server's ExchangeCommandVersions)")
    rmqs_new.subscribe(conn, 1, stream, OffsetType.FIRST, credit=5)
    delivered = [conn.expect(Deliver, subscription_id=1) for _ in range(2)]
    assert all(d.version == 2 for d in delivered), [d.version for d in delivered]
    # CommittedChunkId: the first offset of the last committed chunk, so never before the
    # chunk that carries it.
    for d in delivered:
        assert d.committed_chunk_id is not None and d.chunk.first_offset <= d.committed_chunk_id, d


@pytest.mark.requirement("RMQS-NEW-003")
def test_publish_version_2_with_filter_values(rmqs_new):
    conn = rmqs_new.connect()
    stream = rmqs_new.create(conn, "pubv2")
    _exchange(rmqs_new, conn, [(Key.PUBLISH, 1, 2)])
    rmqs_new.declare(conn, 1, stream)
    messages = [PublishedMessage(1, b"red", "red"), PublishedMessage(2, b"none", None)]
    rmqs_new.publish(conn, 1, messages, version=2)
    reader = rmqs_new.connect(name="reader")
    rmqs_new.subscribe(reader, 1, stream, credit=5)
    got = rmqs_new.messages_until(reader, 1, 2)
    assert [b for _, b in got] == [b"red", b"none"], got


@pytest.mark.requirement("RMQS-NEW-004")
def test_stream_stats(rmqs_new):
    stream, pub = rmqs_new.stream_with_chunks([[b"a"], [b"b"]], "stats")
    cid = rmqs_new.cid()
    pub.send(StreamStats(cid, stream))
    stats = pub.expect(StreamStatsResponse, correlation_id=cid, code=Code.OK).stats
    assert stats.get("first_chunk_id") == 0, stats
    assert stats.get("committed_chunk_id") == 1, stats    # the last chunk starts at offset 1
    cid = rmqs_new.cid()
    pub.send(StreamStats(cid, rmqs_new.name("missing")))
    pub.expect(StreamStatsResponse, correlation_id=cid, code=Code.STREAM_DOES_NOT_EXIST)


def _create_super(rmqs, conn, name, parts):
    cid = rmqs.cid()
    conn.send(CreateSuperStream(cid, name, parts, tuple(f"k{i}" for i in range(len(parts))), {}))
    return conn.expect(CreateSuperStreamResponse, correlation_id=cid).code


@pytest.mark.requirement("RMQS-NEW-005", "RMQS-NEW-007")
def test_create_and_delete_super_stream(rmqs_new):
    conn = rmqs_new.connect()
    name = rmqs_new.name("super")
    parts = (f"{name}-a", f"{name}-b")
    code = _create_super(rmqs_new, conn, name, parts)
    if code == Code.OK:
        rmqs_new.created_super.append(name)
        rmqs_new.created.extend(parts)
    assert code == Code.OK
    assert {e.stream: e.code for e in rmqs_new.metadata(conn, parts).streams} == dict.fromkeys(parts, Code.OK)
    cid = rmqs_new.cid()
    conn.send(DeleteSuperStream(cid, name))
    conn.expect(DeleteSuperStreamResponse, correlation_id=cid, code=Code.OK)
    found = {e.stream: e.code for e in rmqs_new.metadata(conn, parts).streams}
    assert found == dict.fromkeys(parts, Code.STREAM_DOES_NOT_EXIST), found
    cid = rmqs_new.cid()
    conn.send(DeleteSuperStream(cid, name))
    conn.expect(DeleteSuperStreamResponse, correlation_id=cid, code=Code.STREAM_DOES_NOT_EXIST)


@pytest.mark.requirement("RMQS-NEW-006")
def test_create_existing_super_stream_gets_5(rmqs_new):
    conn = rmqs_new.connect()
    name = rmqs_new.name("super")
    parts = (f"{name}-0",)
    assert _create_super(rmqs_new, conn, name, parts) == Code.OK
    rmqs_new.created_super.append(name)
    rmqs_new.created.extend(parts)
    assert _create_super(rmqs_new, conn, name, parts) == Code.STREAM_ALREADY_EXISTS


SAC = {"single-active-consumer": "true", "name": "wirecheck-group"}


@pytest.mark.requirement("RMQS-NEW-008")
def test_single_active_consumer_gets_consumer_update(rmqs_new):
    stream, pub = rmqs_new.stream_with_chunks([[b"a"], [b"b"]], "sac")
    first = rmqs_new.connect(name="first")
    rmqs_new.subscribe(first, 1, stream, OffsetType.FIRST, credit=10, properties=SAC)
    update = first.expect(ConsumerUpdate, subscription_id=1, active=1)
    # Deliveries start from the offset specification of the answer, not of the Subscribe.
    first.send(ConsumerUpdateResponse(update.correlation_id, Code.OK, OffsetType.OFFSET, 1))
    got = first.expect(Deliver, subscription_id=1)
    assert got.chunk.messages() == [b"b"], got.chunk
    rmqs_new.barrier(first, "the chunks from offset 1")

    second = rmqs_new.connect(name="second")
    rmqs_new.subscribe(second, 2, stream, OffsetType.FIRST, credit=10, properties=SAC)
    rmqs_new.barrier(second, "a second consumer of an active group")
    rmqs_new.publish(pub, 1, [PublishedMessage(3, b"c")])
    assert first.expect(Deliver, subscription_id=1).chunk.messages() == [b"c"]
    rmqs_new.barrier(second, "a message while another consumer is active")

    cid = rmqs_new.cid()
    first.send(Unsubscribe(cid, 1))
    first.expect(UnsubscribeResponse, correlation_id=cid, code=Code.OK)
    update = second.expect(ConsumerUpdate, subscription_id=2, active=1)
    second.send(ConsumerUpdateResponse(update.correlation_id, Code.OK, OffsetType.NEXT))
    rmqs_new.barrier(second, "promotion with a NEXT answer")
    rmqs_new.publish(pub, 1, [PublishedMessage(4, b"d")])
    assert second.expect(Deliver, subscription_id=2).chunk.messages() == [b"d"]


@pytest.mark.requirement("RMQS-NEW-009")
def test_consumer_update_request_from_the_client_gets_close_13(rmqs_new):
    conn = rmqs_new.connect()
    conn.send(raw(Key.CONSUMER_UPDATE, 1, struct.pack(">IBB", rmqs_new.cid(), 1, 1)))
    rmqs_new.expect_close(conn, Code.UNKNOWN_FRAME, "a ConsumerUpdate request from the client")
