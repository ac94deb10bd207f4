"""Create, Delete, Metadata and MetadataUpdate (rabbitmq-stream-protocol.adoc "Create",
"Delete", "Metadata", "MetadataUpdate", "Response Codes"; SPEC_NOTES.md)."""
import pytest

from wirecheck.reference_impl.rabbitmq_stream.codec import (Create, CreateResponse, Delete, DeleteResponse,
                                                  MetadataUpdate, Publish, PublishedMessage, PublishError,
                                                  Subscribe, SubscribeResponse, Unsubscribe,
                                                  UnsubscribeResponse)
from wirecheck.reference_impl.rabbitmq_stream.constants import Code, OffsetType


def _create(rmqs, conn, name, arguments=None):
    cid = rmqs.cid()
    conn.send(Create(cid, name, dict(arguments or {})))
    return conn.expect(CreateResponse, correlation_id=cid)


@pytest.mark.requirement("RMQS-STREAM-001", "RMQS-META-001", "RMQS-META-002")
def test_create_then_metadata(rmqs):
    conn = rmqs.connect()
    name = rmqs.name("create")
    assert _create(rmqs, conn, name).code == Code.OK
    rmqs.created.append(name)
    meta = rmqs.metadata(conn, [name])
    (entry,) = meta.streams
    assert entry.stream == name and entry.code == Code.OK, entry
    refs = {b.reference: b for b in meta.brokers}
    assert entry.leader in refs, f"leader {entry.leader} is not among the brokers {meta.brokers}"
    broker = refs[entry.leader]
    assert broker.host and 0 < broker.port < 65536, broker


@pytest.mark.requirement("RMQS-STREAM-002")
def test_create_existing_with_same_arguments_gets_5(rmqs):
    conn = rmqs.connect()
    args = {"max-length-bytes": "1000000"}
    name = rmqs.create(conn, "dup", args)
    assert _create(rmqs, conn, name, args).code == Code.STREAM_ALREADY_EXISTS


@pytest.mark.requirement("RMQS-STREAM-003")
def test_create_existing_with_other_arguments_gets_17(rmqs):
    conn = rmqs.connect()
    name = rmqs.create(conn, "dup")
    assert _create(rmqs, conn, name, {"max-length-bytes": "1000000"}).code == Code.PRECONDITION_FAILED


@pytest.mark.requirement("RMQS-STREAM-004")
def test_create_with_empty_name_gets_17(rmqs):
    conn = rmqs.connect()
    answer = _create(rmqs, conn, "")
    if answer.code == Code.OK:
        rmqs.created.append("")
    assert answer.code == Code.PRECONDITION_FAILED


@pytest.mark.requirement("RMQS-STREAM-005")
@pytest.mark.parametrize("arguments", [
    {"max-length-bytes": "10000000"},
    {"max-age": "1h"},
    {"stream-max-segment-size-bytes": "500000"},
    {"max-length-bytes": "20000000", "max-age": "7D", "stream-max-segment-size-bytes": "1000000"},
], ids=["max-length-bytes", "max-age", "segment-size", "all"])
def test_create_with_valid_arguments(rmqs, arguments):
    conn = rmqs.connect()
    name = rmqs.name("args")
    answer = _create(rmqs, conn, name, arguments)
    if answer.code == Code.OK:
        rmqs.created.append(name)
    assert answer.code == Code.OK


@pytest.mark.requirement("RMQS-STREAM-006")
def test_unknown_argument_is_ignored(rmqs):
    conn = rmqs.connect()
    name = rmqs.name("unknown-arg")
    answer = _create(rmqs, conn, name, {"wirecheck-unknown-argument": "yes"})
    if answer.code == Code.OK:
        rmqs.created.append(name)
    assert answer.code == Code.OK


@pytest.mark.requirement("RMQS-STREAM-007", "RMQS-META-003", "RMQS-SUB-009")
def test_delete_removes_the_stream(rmqs):
    conn = rmqs.connect()
    name = rmqs.create(conn, "delete")
    cid = rmqs.cid()
    conn.send(Delete(cid, name))
    conn.expect(DeleteResponse, correlation_id=cid, code=Code.OK)
    (entry,) = rmqs.metadata(conn, [name]).streams
    assert entry.code == Code.STREAM_DOES_NOT_EXIST, entry
    cid = rmqs.cid()
    conn.send(Subscribe(cid, 1, name, OffsetType.FIRST, None, 1, {}))
    conn.expect(SubscribeResponse, correlation_id=cid, code=Code.STREAM_DOES_NOT_EXIST)
    assert _create(rmqs, conn, name).code == Code.OK, "a deleted stream's name can be used again"


@pytest.mark.requirement("RMQS-STREAM-008")
def test_delete_missing_gets_2(rmqs):
    conn = rmqs.connect()
    cid = rmqs.cid()
    conn.send(Delete(cid, rmqs.name("missing")))
    conn.expect(DeleteResponse, correlation_id=cid, code=Code.STREAM_DOES_NOT_EXIST)


@pytest.mark.requirement("RMQS-META-001", "RMQS-META-002", "RMQS-META-003", "RMQS-META-005")
def test_metadata_of_existing_and_missing_streams(rmqs):
    conn = rmqs.connect()
    a, b = rmqs.create(conn, "meta-a"), rmqs.create(conn, "meta-b")
    missing = rmqs.name("meta-missing")
    meta = rmqs.metadata(conn, [a, missing, b])
    entries = {e.stream: e for e in meta.streams}
    assert len(meta.streams) == 3 and set(entries) == {a, b, missing}, meta.streams
    refs = {br.reference for br in meta.brokers}
    for name in (a, b):
        assert entries[name].code == Code.OK and entries[name].leader in refs, entries[name]
        assert set(entries[name].replicas) <= refs, entries[name]
    assert entries[missing].code == Code.STREAM_DOES_NOT_EXIST
    # SPEC_NOTES.md: references are 0-based; a stream without a leader says 0xFFFF.
    assert min(refs) == 0, meta.brokers
    assert entries[missing].leader == 0xFFFF, entries[missing]


@pytest.mark.requirement("RMQS-META-004")
def test_metadata_of_no_stream(rmqs):
    conn = rmqs.connect()
    assert rmqs.metadata(conn, []).streams == ()


def _subscriber_and_publisher(rmqs):
    owner = rmqs.connect(name="owner")
    name = rmqs.create(owner, "upd")
    consumer = rmqs.connect(name="consumer")
    rmqs.subscribe(consumer, 3, name, credit=1)
    publisher = rmqs.connect(name="publisher")
    rmqs.declare(publisher, 4, name)
    bystander = rmqs.connect(name="bystander")
    cid = rmqs.cid()
    owner.send(Delete(cid, name))
    owner.expect(DeleteResponse, correlation_id=cid, code=Code.OK)
    return name, consumer, publisher, bystander


@pytest.mark.requirement("RMQS-META-006")
def test_delete_sends_metadata_update_to_consumers_and_publishers(rmqs):
    name, consumer, publisher, _ = _subscriber_and_publisher(rmqs)
    consumer.expect(MetadataUpdate, code=Code.STREAM_NOT_AVAILABLE, stream=name)
    publisher.expect(MetadataUpdate, code=Code.STREAM_NOT_AVAILABLE, stream=name)


@pytest.mark.requirement("RMQS-META-006")
def test_delete_by_a_consumer_sends_it_metadata_update_too(rmqs):
    conn = rmqs.connect()
    name = rmqs.create(conn, "upd-self")
    rmqs.subscribe(conn, 1, name, credit=1)
    cid = rmqs.cid()
    conn.send(Delete(cid, name))
    conn.expect(DeleteResponse, correlation_id=cid, code=Code.OK)
    conn.expect(MetadataUpdate, code=Code.STREAM_NOT_AVAILABLE, stream=name)


@pytest.mark.requirement("RMQS-META-007")
def test_after_metadata_update_subscription_and_publisher_are_gone(rmqs):
    name, consumer, publisher, _ = _subscriber_and_publisher(rmqs)
    consumer.expect(MetadataUpdate, code=Code.STREAM_NOT_AVAILABLE, stream=name)
    cid = rmqs.cid()
    consumer.send(Unsubscribe(cid, 3))
    consumer.expect(UnsubscribeResponse, correlation_id=cid, code=Code.SUBSCRIPTION_ID_DOES_NOT_EXIST)
    publisher.expect(MetadataUpdate, code=Code.STREAM_NOT_AVAILABLE, stream=name)
    publisher.send(Publish(4, (PublishedMessage(1, b"late"),)))
    publisher.expect(PublishError, publisher_id=4, errors=((1, Code.PUBLISHER_DOES_NOT_EXIST),))


@pytest.mark.requirement("RMQS-META-008")
def test_bystander_gets_no_metadata_update(rmqs):
    name, consumer, _, bystander = _subscriber_and_publisher(rmqs)
    # Once the consumer has its update, the server has dealt with the delete.
    consumer.expect(MetadataUpdate, code=Code.STREAM_NOT_AVAILABLE, stream=name)
    rmqs.barrier(bystander, f"the delete of {name}, which the bystander never used")
