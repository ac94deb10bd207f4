"""The reference broker under the ``rabbitmq-3.10`` profile where the document leaves a choice
and RabbitMQ 3.10.8 makes one (seen on the real server: tests/reference_impl/rabbitmq_stream/test_rmqs_rich_capture.py checks
the same against it), in memory:

- Metadata ("Metadata": [Broker] [StreamMetadata]): no broker when none of the streams exists,
  each name answered once, in reverse byte order;
- offsets ("StoreOffset", "Deliver"): what one read brings is written as the real server's
  writer batches it (batch.py): Publish frames in one chunk, StoreOffsets in its trailer (no
  offset) or, without messages, in one tracking chunk (one offset for all); a sub-entry batch
  spans one offset per record.

Under the other profiles the broker keeps its own choices (checked too)."""
from __future__ import annotations

import pytest

from wirecheck.reference_impl.rabbitmq_stream.chunk import SubBatchEntry
from wirecheck.reference_impl.rabbitmq_stream.codec import (BrokerInfo, Create, DeclarePublisher, Deliver, Metadata,
                                                            MetadataResponse, Publish, PublishConfirm, PublishedMessage,
                                                            QueryOffset, QueryOffsetResponse,
                                                            QueryPublisherSequence, QueryPublisherSequenceResponse,
                                                            StoreOffset, Subscribe, SubscribeResponse)
from wirecheck.reference_impl.rabbitmq_stream.constants import Code, Compression, OffsetType

from tests.reference_impl.rabbitmq_stream.test_rmqs_session import Peer

P310 = "rabbitmq-3.10"


def _open(profile: str, state=None) -> Peer:
    return Peer(state, profile=profile).handshake()


def _stream(peer: Peer, name: str = "s", publisher: int = 1, reference: str = "") -> None:
    peer.send(Create(10, name, {}))
    peer.send(DeclarePublisher(11, publisher, reference, name))


def _offsets(peer: Peer, stream: str = "s", sid: int = 9) -> list[tuple[int, bytes]]:
    """(offset, body) of every message of ``stream``, from a subscription at FIRST."""
    answers = peer.send(Subscribe(90 + sid, sid, stream, OffsetType.FIRST, None, 100, {}))
    assert answers[0] == SubscribeResponse(90 + sid, Code.OK)
    out = []
    for deliver in answers[1:]:
        assert isinstance(deliver, Deliver)
        out += [(deliver.chunk.first_offset + i, m) for i, m in enumerate(deliver.chunk.messages())]
    return out


def _msg(pid: int, body: bytes = b"") -> PublishedMessage:
    return PublishedMessage(pid, body or b"m%d" % pid)


# -- Metadata -----------------------------------------------------------------------------------

def test_metadata_of_missing_streams_lists_no_broker_under_310():
    peer = _open(P310)
    (answer,) = peer.send(Metadata(20, ("missing-x", "missing-y")))
    assert answer.brokers == ()
    assert [(s.stream, s.code, s.leader) for s in answer.streams] == [
        ("missing-y", Code.STREAM_DOES_NOT_EXIST, 0xFFFF), ("missing-x", Code.STREAM_DOES_NOT_EXIST, 0xFFFF)]
    (empty,) = peer.send(Metadata(21, ()))
    assert empty == MetadataResponse(21, (), ())


def test_metadata_answers_each_stream_once_in_reverse_name_order_under_310():
    peer = _open(P310)
    _stream(peer, "b")
    _stream(peer, "a", publisher=2)
    (answer,) = peer.send(Metadata(20, ("a", "missing", "b", "a")))
    assert [(s.stream, s.code) for s in answer.streams] == [
        ("missing", Code.STREAM_DOES_NOT_EXIST), ("b", Code.OK), ("a", Code.OK)]
    assert len(answer.brokers) == 1 and answer.brokers[0].reference == 0


def test_metadata_under_the_current_profile_keeps_the_request_and_its_broker():
    peer = _open("current")
    (answer,) = peer.send(Metadata(20, ("missing-x", "missing-y", "missing-x")))
    assert [s.stream for s in answer.streams] == ["missing-x", "missing-y", "missing-x"]
    assert answer.brokers == (BrokerInfo(0, peer.state.advertised_host, peer.state.advertised_port),)


# -- offsets: what one read writes -------------------------------------------------------------

def test_store_offsets_in_one_read_spend_one_offset_under_310():
    peer = _open(P310)
    _stream(peer)
    peer.send(Publish(1, (_msg(1),)))
    peer.send(StoreOffset("r1", "s", 0), StoreOffset("r2", "s", 0), StoreOffset("r1", "s", 0))
    peer.send(Publish(1, (_msg(2),)))
    assert _offsets(peer) == [(0, b"m1"), (2, b"m2")]          # one tracking record: offset 1
    (r1,) = peer.send(QueryOffset(30, "r1", "s"))
    (r2,) = peer.send(QueryOffset(31, "r2", "s"))
    assert (r1.offset, r2.offset) == (0, 0)


def test_store_offsets_in_separate_reads_spend_one_offset_each():
    peer = _open(P310)
    _stream(peer)
    peer.send(Publish(1, (_msg(1),)))
    peer.send(StoreOffset("r", "s", 0))
    peer.send(StoreOffset("r", "s", 0))
    peer.send(Publish(1, (_msg(2),)))
    assert _offsets(peer) == [(0, b"m1"), (3, b"m2")]


def test_store_offsets_read_with_messages_ride_in_their_chunk_under_310():
    """Seen on 3.10.8: StoreOffset, Publish, StoreOffset in one write spend no offset; the
    chunk's trailer keeps both, QueryOffset answers them."""
    peer = _open(P310)
    _stream(peer)
    peer.send(Publish(1, (_msg(1),)))
    answers = peer.send(StoreOffset("r1", "s", 1), Publish(1, (_msg(2),)), StoreOffset("r2", "s", 1))
    assert answers == [PublishConfirm(1, (2,))]
    peer.send(Publish(1, (_msg(3),)))
    assert _offsets(peer) == [(0, b"m1"), (1, b"m2"), (2, b"m3")]
    assert peer.send(QueryOffset(30, "r1", "s"), QueryOffset(31, "r2", "s")) == [
        QueryOffsetResponse(30, Code.OK, 1), QueryOffsetResponse(31, Code.OK, 1)]
    log = peer.state.stream("s")
    assert [log.chunk_at(i).num_records for i in range(log.end_chunk_index())] == [1, 1, 1]


def test_store_offsets_under_the_current_profile_spend_one_offset_each():
    peer = _open("current")
    _stream(peer)
    peer.send(Publish(1, (_msg(1),)))
    peer.send(StoreOffset("r1", "s", 0), StoreOffset("r2", "s", 0), Publish(1, (_msg(2),)))
    assert _offsets(peer) == [(0, b"m1"), (3, b"m2")]


def test_publish_frames_of_one_read_are_one_chunk_confirmed_in_order_under_310():
    peer = _open(P310)
    _stream(peer)
    peer.send(DeclarePublisher(12, 2, "", "s"))
    answers = peer.send(Publish(1, (_msg(1), _msg(2))), Publish(2, (_msg(7),)), Publish(1, (_msg(3),)))
    assert answers == [PublishConfirm(1, (1, 2)), PublishConfirm(2, (7,)), PublishConfirm(1, (3,))]
    log = peer.state.stream("s")
    assert log.end_chunk_index() == 1 and log.chunk_at(0).num_records == 4


def test_a_query_in_the_same_read_sees_what_was_published_before_it_under_310():
    peer = _open(P310)
    _stream(peer, reference="writer")
    answers = peer.send(Publish(1, (_msg(5),)), QueryPublisherSequence(40, "writer", "s"),
                        Publish(1, (_msg(5, b"again"), _msg(6))))
    assert answers == [PublishConfirm(1, (5,)), QueryPublisherSequenceResponse(40, Code.OK, 5),
                       PublishConfirm(1, (5, 6))]
    assert [b for _, b in _offsets(peer)] == [b"m5", b"m6"]          # 5 again: deduplicated


def test_deduplication_within_one_read_under_310():
    peer = _open(P310)
    _stream(peer, reference="writer")
    answers = peer.send(Publish(1, (_msg(1), _msg(2))), Publish(1, (_msg(2, b"dup"), _msg(3))))
    assert answers == [PublishConfirm(1, (1, 2)), PublishConfirm(1, (2, 3))]
    assert [b for _, b in _offsets(peer)] == [b"m1", b"m2", b"m3"]
    (seq,) = peer.send(QueryPublisherSequence(41, "writer", "s"))
    assert seq.sequence == 3


def test_a_subscriber_on_another_connection_gets_the_batch_after_its_confirms():
    reader = _open(P310)
    writer = _open(P310, reader.state)
    _stream(writer)
    assert reader.send(Subscribe(50, 1, "s", OffsetType.NEXT, None, 5, {})) == [SubscribeResponse(50, Code.OK)]
    assert writer.send(Publish(1, (_msg(1),)), Publish(1, (_msg(2),))) == [PublishConfirm(1, (1,)),
                                                                         PublishConfirm(1, (2,))]
    (deliver,) = reader.pushed
    assert isinstance(deliver, Deliver) and deliver.chunk.messages() == [b"m1", b"m2"]


@pytest.mark.parametrize("profile", [P310, "current"])
def test_a_sub_entry_batch_spans_one_offset_per_record(profile):
    peer = _open(profile)
    _stream(peer)
    batch = SubBatchEntry.of([b"a", b"b", b"c"], Compression.GZIP)
    peer.send(Publish(1, (_msg(1), PublishedMessage(2, batch))))
    peer.send(Publish(1, (_msg(3),)))
    assert _offsets(peer) == [(0, b"m1"), (1, b"a"), (2, b"b"), (3, b"c"), (4, b"m3")]


def test_a_batch_too_many_entries_for_one_chunk_is_written_in_two():
    peer = _open(P310)
    _stream(peer)
    first = tuple(_msg(i, b"x") for i in range(1, 40_001))
    second = tuple(_msg(i, b"y") for i in range(40_001, 80_001))
    answers = peer.send(Publish(1, first), Publish(1, second))
    assert [len(a.publishing_ids) for a in answers] == [40_000, 40_000]
    log = peer.state.stream("s")
    assert [log.chunk_at(i).num_entries for i in range(log.end_chunk_index())] == [40_000, 40_000]
