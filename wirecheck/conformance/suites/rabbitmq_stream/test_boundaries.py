"""Boundaries of every length field and list, in both directions (rabbitmq-stream-protocol.adoc
"Types", "DeclarePublisher", "Publish", "PublishConfirm", "PublishError", "Subscribe",
"StoreOffset", "QueryOffset", "Create", "Metadata", "Close"; SPEC_NOTES.md for the chunk).

Fields, what the suite already covered (before this module) and what is added here:

- ``string`` (int16 length, -1 null). Before: names of ~30 bytes both ways, an empty stream
  name (code 17), strings running past the end (test_framing.py). Added: stream names of
  255, 256 and 32767 bytes (the int16's limit; a server that bounds names may answer 17
  there) created and named back by Metadata, Metadata queries of missing names of 1, 256 and
  32767 bytes named back, Close reasons of 0 and 32767 bytes.
- PublisherReference / offset Reference ("max 256 characters"). Before: none and ~20
  characters. Added: 255 and 256 characters (the limit) in DeclarePublisher,
  QueryPublisherSequence, StoreOffset and QueryOffset. At 256 a refusal is accepted too
  (RMQS-PUB-018): Osiris tracking records hold a reference's length in one byte, and
  RabbitMQ 3.10.8 drops the connection on such a StoreOffset (observed).
- ``bytes`` (int32 length): Message. Before: 0, 5, 256 and 1,000 bytes both ways, a frame of
  exactly frame_max sent. Added: 255, 65535 and 65536 bytes published and delivered back
  (the chunk's entry size is the target's u32).
- ``arrays`` (int32 count). PublishedMessages: before 1 and 64 entries; added 0 (no answer
  but, at most, a PublishConfirm of no id) and 256 (confirmed: PublishingIds arrays the
  target writes, 256 ids in all; and the PublishError array for 256 undeclared ones).
  Metadata [Stream]: 0, 1 and 3 before, nothing added. Create Arguments: 0, 1 and 3 before.
  Subscribe Properties: 0 and 2 before; added 1. PeerProperties: 0 and 2 before.
- Sub-batch entry ``count`` (u16, SPEC_NOTES) and the chunk's NumRecords: before 2 and 3
  records. Added: 255, 256 and 65535 (the limit) records, delivered as one entry.
- Frame Size (uint32): above and at frame_max before; the messages above cross 255/256 and
  65535/65536 on the way.
"""
import pytest

from wirecheck.conformance.target.connection import TargetClosed, TargetError
from wirecheck.reference_impl.rabbitmq_stream.codec import (Close, CloseResponse, Create, CreateResponse,
                                                  DeclarePublisher, DeclarePublisherResponse, Metadata,
                                                  MetadataResponse, Publish, PublishConfirm,
                                                  PublishedMessage, PublishError, QueryOffset,
                                                  QueryOffsetResponse, QueryPublisherSequence,
                                                  QueryPublisherSequenceResponse, StoreOffset)
from wirecheck.reference_impl.rabbitmq_stream.constants import Code, OffsetType

from .conftest import describe, messages_of

INT16_MAX = 0x7FFF


def _name(rmqs, length: int, label: str = "edge") -> str:
    base = rmqs.name(label)
    return (base + "n" * length)[:length]


def _create(rmqs, conn, name: str) -> int:
    cid = rmqs.cid()
    conn.send(Create(cid, name, {}))
    code = conn.expect(CreateResponse, correlation_id=cid).code
    if code == Code.OK:
        rmqs.created.append(name)
    return code


@pytest.mark.requirement("RMQS-TYPE-001", "RMQS-STREAM-001", "RMQS-META-001", "RMQS-STREAM-009")
@pytest.mark.parametrize("length", [255, 256, INT16_MAX])
def test_stream_name_length_both_ways(rmqs, length):
    """A stream name past a byte's count is created and named back by Metadata (the server
    writes the same string); at the string's limit a server that bounds names may answer 17."""
    conn = rmqs.connect()
    name = _name(rmqs, length)
    code = _create(rmqs, conn, name)
    if length == INT16_MAX and code == Code.PRECONDITION_FAILED:
        rmqs.barrier(conn, f"the refusal of a {length}-byte stream name")
        return
    assert code == Code.OK, f"Create of a {length}-byte stream name got code {code}"
    (entry,) = rmqs.metadata(conn, [name]).streams
    assert (entry.stream, entry.code) == (name, Code.OK), \
        f"Metadata named a {len(entry.stream)}-byte stream with code {entry.code}"


@pytest.mark.requirement("RMQS-TYPE-001", "RMQS-META-001", "RMQS-META-003")
@pytest.mark.parametrize("length", [1, 256, INT16_MAX])
def test_metadata_of_a_missing_name_at_the_string_limit(rmqs, length):
    """The server writes back, as asked, a name as long as a string can be: code 2."""
    conn = rmqs.connect()
    name = _name(rmqs, length, "missing") if length > 1 else "~"
    (entry,) = rmqs.metadata(conn, [name]).streams
    assert (len(entry.stream), entry.code) == (length, Code.STREAM_DOES_NOT_EXIST), \
        f"a {len(entry.stream)}-byte name with code {entry.code}"
    assert entry.stream == name


@pytest.mark.requirement("RMQS-PUB-018", "RMQS-PUB-001", "RMQS-PUB-011")
@pytest.mark.parametrize("length", [255, 256])
def test_publisher_reference_length(rmqs, length):
    """A reference of 255 characters, and of 256 (the document's limit; a server whose
    tracking records hold 255 bytes may refuse it with 17): declared, used to publish, and its
    sequence queried."""
    conn = rmqs.connect()
    stream = rmqs.create(conn, "ref")
    reference = "r" * length
    cid = rmqs.cid()
    conn.send(DeclarePublisher(cid, 1, reference, stream))
    code = conn.expect(DeclarePublisherResponse, correlation_id=cid).code
    if length > 255 and code == Code.PRECONDITION_FAILED:
        rmqs.barrier(conn, f"the refusal of a {length}-character reference")
        return
    assert code == Code.OK, f"DeclarePublisher with a {length}-character reference got code {code}"
    rmqs.publish(conn, 1, [PublishedMessage(7, b"referenced")])
    cid = rmqs.cid()
    conn.send(QueryPublisherSequence(cid, reference, stream))
    answer = conn.expect(QueryPublisherSequenceResponse, correlation_id=cid)
    assert (answer.code, answer.sequence) == (Code.OK, 7), answer


@pytest.mark.requirement("RMQS-PUB-018", "RMQS-OFFSET-002", "RMQS-OFFSET-001")
@pytest.mark.parametrize("length", [255, 256])
def test_offset_reference_length(rmqs, length):
    """StoreOffset and QueryOffset with a reference at the bound: the offset stored is the one
    queried. At 256 a server whose records hold 255 bytes cannot keep it: StoreOffset has no
    answer to refuse it with, so it is not stored (QueryOffset, on a connection of its own,
    gives any code but 1); the connection may end on it (RabbitMQ 3.10.8)."""
    conn = rmqs.connect()
    stream = rmqs.create(conn, "offref")
    rmqs.declare(conn, 1, stream)
    rmqs.publish(conn, 1, [PublishedMessage(1, b"x"), PublishedMessage(2, b"y")])
    reference = "o" * length
    conn.send(StoreOffset(reference, stream, 1))
    if length > 255:
        try:
            rmqs.barrier(conn, f"a StoreOffset with a {length}-character reference")
        except TargetClosed:
            pass                              # refused by ending the connection
        conn = rmqs.connect(name="query")
    else:
        rmqs.barrier(conn, f"a StoreOffset with a {length}-character reference")
    cid = rmqs.cid()
    conn.send(QueryOffset(cid, reference, stream))
    answer = conn.expect(QueryOffsetResponse, correlation_id=cid)
    if length > 255 and answer.code != Code.OK:
        return
    assert (answer.code, answer.offset) == (Code.OK, 1), answer


@pytest.mark.requirement("RMQS-PUB-009", "RMQS-DELIVER-007", "RMQS-PUB-007")
@pytest.mark.parametrize("size", [255, 65535, 65536])
def test_message_size_both_ways(rmqs, size):
    body = bytes(i % 241 for i in range(size))
    stream, _ = rmqs.stream_with_chunks([[body]], "size")
    conn = rmqs.connect()
    rmqs.subscribe(conn, 1, stream, OffsetType.FIRST, credit=1)
    got = rmqs.messages_until(conn, 1, 1)
    assert [len(b) for _, b in got] == [size] and got[0][1] == body


@pytest.mark.requirement("RMQS-FRAME-004", "RMQS-PUB-007", "RMQS-PUB-009")
def test_publish_of_no_message(rmqs):
    """An empty PublishedMessages array: no response, nothing to confirm (a PublishConfirm of
    no id, which confirms nothing, is let pass), and the publisher goes on."""
    conn = rmqs.connect()
    stream = rmqs.create(conn, "none")
    rmqs.declare(conn, 1, stream)
    conn.send(Publish(1, ()))
    cid = rmqs.cid()
    conn.send(Metadata(cid, ()))
    frame = conn.recv(expecting=f"MetadataResponse({cid}) as barrier")
    if isinstance(frame, PublishConfirm) and frame.publisher_id == 1 and not frame.publishing_ids:
        frame = conn.recv(expecting=f"MetadataResponse({cid}) as barrier")
    if not (isinstance(frame, MetadataResponse) and frame.correlation_id == cid):
        raise TargetError(f"expected no answer to a Publish of no message, got {describe(frame)}")
    rmqs.publish(conn, 1, [PublishedMessage(1, b"after")])


@pytest.mark.requirement("RMQS-PUB-007", "RMQS-PUB-009")
def test_publish_of_256_messages_is_confirmed(rmqs):
    """256 entries (a count past one byte); the confirms the target writes cover all of them,
    in as many PublishConfirm arrays as it likes."""
    conn = rmqs.connect()
    stream = rmqs.create(conn, "many")
    rmqs.declare(conn, 1, stream)
    rmqs.publish(conn, 1, [PublishedMessage(i, b"%d" % i) for i in range(1, 257)])
    rmqs.barrier(conn, "the confirms of 256 messages")


@pytest.mark.requirement("RMQS-PUB-008")
def test_publish_error_for_256_messages(rmqs):
    conn = rmqs.connect()
    conn.send(Publish(9, tuple(PublishedMessage(i, b"x") for i in range(1, 257))))
    errors = []
    while len(errors) < 256:
        frame = conn.expect(PublishError, publisher_id=9)
        errors.extend(tuple(e) for e in frame.errors)
    assert sorted(errors) == [(i, Code.PUBLISHER_DOES_NOT_EXIST) for i in range(1, 257)]
    rmqs.barrier(conn, "the PublishErrors of 256 messages")


@pytest.mark.requirement("RMQS-SUB-012")
def test_subscribe_with_one_property(rmqs):
    stream, _ = rmqs.stream_with_chunks([[b"one"]], "oneprop")
    conn = rmqs.connect()
    rmqs.subscribe(conn, 1, stream, credit=1, properties={"wirecheck-property": "v"})
    assert [b for _, b in rmqs.messages_until(conn, 1, 1)] == [b"one"]


@pytest.mark.requirement("RMQS-PUB-010", "RMQS-DELIVER-004")
@pytest.mark.parametrize("count", [255, 256, 65535])
def test_sub_batch_record_count(rmqs, count):
    """A sub-batch's u16 record count past a byte and at its limit: one entry of that many
    records, delivered with NumRecords = count."""
    records = [b"%d" % (i % 10) for i in range(count)]
    stream, _ = rmqs.stream_with_chunks([records], "batch")
    conn = rmqs.connect()
    rmqs.subscribe(conn, 1, stream, credit=1)
    (deliver,) = rmqs.deliveries(conn, 1, 1)
    assert (deliver.chunk.num_entries, deliver.chunk.num_records) == (1, count), deliver.chunk
    assert [b for _, b in messages_of(deliver)] == records


@pytest.mark.requirement("RMQS-CLOSE-001", "RMQS-TYPE-001")
@pytest.mark.parametrize("length", [0, INT16_MAX])
def test_close_reason_length(rmqs, length):
    conn = rmqs.connect()
    cid = rmqs.cid()
    conn.send(Close(cid, 1, "z" * length))
    conn.expect(CloseResponse, correlation_id=cid, code=Code.OK)
