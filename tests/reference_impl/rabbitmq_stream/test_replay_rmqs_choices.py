"""``wirecheck replay`` of RabbitMQ Stream captures does not hold a target to what the document
leaves to the server (conformance/captures/replay_rules.py RMQSRules, replay_flow.py), and still holds it
to the rest:

- the order of the streams (and brokers) of a Metadata answer ("Metadata");
- where a Deliver, a PublishConfirm or a MetadataUpdate falls among the answers to later
  requests ("Frame Structure": one-direction commands), while the messages of one
  subscription stay in order;
- how the server numbers offsets (StoreOffset's offsets, chunks: "StoreOffset", "Deliver"),
  including offsets a client echoes (Subscribe from an offset, StoreOffset/QueryOffset);
- the messages before a requested offset that come with its chunk, and the credit a target
  needs when it cuts the messages into more chunks than the recorded server ("Credit");
- a subscription from a timestamp, placed among the target's chunks as it was among the
  recorded ones even when the replay runs ahead of or behind the recording.

The captures are made here: connections to the in-memory reference session (its answers are
what a server says), written as a pcap, with the server's side altered where a real server
chooses differently."""
from __future__ import annotations

import itertools

import pytest

from wirecheck.conformance.captures import replay

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.captures.pcapfile import PcapWriter, TcpConversation
from wirecheck.conformance.captures.replay_rules import OffsetNumbering, RMQSRules
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.server import ThreadedServer
from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.chunk import SimpleEntry, build_chunk
from wirecheck.reference_impl.rabbitmq_stream.codec import (Create, DeclarePublisher, Deliver, Metadata,
                                                            MetadataResponse, Open, PeerProperties, Publish,
                                                            PublishConfirm, PublishedMessage, QueryOffset,
                                                            SaslAuthenticate, SaslHandshake, StoreOffset, StreamMetadata,
                                                            Subscribe, SubscribeResponse, TuneResponse)
from wirecheck.reference_impl.rabbitmq_stream.constants import Code, OffsetType
from wirecheck.reference_impl.rabbitmq_stream.session import SessionConfig, StreamSession
from wirecheck.reference_impl.rabbitmq_stream.state import BrokerState
from wirecheck.reference_impl.rabbitmq_stream.store import StreamStore

SPEC = registry.get("rabbitmq-stream")
P310 = "rabbitmq-3.10"
STEP = 0.002            # capture seconds between two events


def _decode(data: bytes) -> list:
    return codec.Decoder(codec.StreamConfig(max_frame_size=0), origin="server").feed(data)


class Recording:
    """Connections to one in-memory reference broker, written as a capture on port 5552."""

    def __init__(self, profile: str) -> None:
        self.profile = profile
        self.now = 1_800_000_000.0
        self.state = BrokerState(StreamStore(None, clock=lambda: self.now))
        self.events: list[tuple[float, Conn, str, bytes]] = []
        self.ports = itertools.count(40000)

    def at(self, seconds: float) -> None:
        self.now += seconds

    def event(self, conn: Conn, direction: str, data: bytes) -> None:
        self.now += STEP
        if data:
            self.events.append((self.now, conn, direction, data))

    def connect(self) -> Conn:
        return Conn(self).handshake()

    def write(self, path) -> str:
        with PcapWriter(str(path)) as writer:
            conversations: dict = {}
            for when, conn, direction, data in self.events:
                if conn not in conversations:
                    conversations[conn] = TcpConversation(writer, conn.client, ("127.0.0.1", 5552), when - STEP / 2)
                conversations[conn].data(direction, data, when)
            for conversation in conversations.values():
                conversation.close("c2s", self.now + STEP)
                conversation.close("s2c", self.now + 2 * STEP)
        return str(path)


class Conn:
    def __init__(self, rec: Recording) -> None:
        self.rec = rec
        self.client = ("127.0.0.1", next(rec.ports))
        self.session = StreamSession(rec.state, SessionConfig(profile=rec.profile), clock=lambda: rec.now)
        self._mine: list | None = None
        self.session.attach(self._pushed, lambda: None)

    def _pushed(self, out: list[bytes]) -> None:
        if self._mine is not None:            # during this connection's own receive
            self._mine += out
        else:                                 # caused by another connection
            self.rec.event(self, "s2c", b"".join(out))

    def send(self, *frames, alter=None) -> list:
        """Send ``frames`` in one write; returns the answers as recorded (after ``alter``)."""
        data = b"".join(codec.encode(f) for f in frames)
        self.rec.event(self, "c2s", data)
        self._mine = []
        out = self.session.receive(data, self.rec.now)
        answers = _decode(b"".join(self._mine + out))
        self._mine = None
        if alter is not None:
            answers = alter(answers)
        self.rec.event(self, "s2c", b"".join(codec.encode(f) for f in answers))
        return answers

    def handshake(self) -> Conn:
        self.send(PeerProperties(1, {"product": "test"}))
        self.send(SaslHandshake(2))
        self.send(SaslAuthenticate(3, "PLAIN", b"\0guest\0guest"))
        self.send(TuneResponse(1048576, 60))
        self.send(Open(4, "/"))
        return self


def _replay(path: str, profile: str, **options) -> list:
    with ThreadedServer(SPEC.make_broker("127.0.0.1", 0, profile=profile)) as target:
        return replay.replay_capture(SPEC, path, replay.ReplayOptions(
            target.address, timeout=2.0, profile=profile, seed=5, **options))


def _verdicts(results) -> list[str]:
    return [r.verdict for r in results]


def _msgs(*ids: int) -> tuple:
    return tuple(PublishedMessage(i, b"m%d" % i) for i in ids)


def _move_after(kind, anchor_kind):
    """Alter: the first frame of ``kind`` moved right after the first ``anchor_kind``."""
    def alter(frames: list) -> list:
        moved = next(f for f in frames if isinstance(f, kind))
        rest = [f for f in frames if f is not moved]
        at = next(i for i, f in enumerate(rest) if isinstance(f, anchor_kind))
        return rest[:at + 1] + [moved] + rest[at + 1:]
    return alter


# -- (d) a Deliver among the answers to later requests -------------------------------------------

def _interleaving(tmp_path, alter=None, profile=P310) -> str:
    rec = Recording(profile)
    conn = rec.connect()
    conn.send(Create(10, "a", {}), Create(11, "b", {}), DeclarePublisher(12, 1, "", "a"))
    conn.send(Subscribe(13, 0, "a", OffsetType.NEXT, None, 10, {}))
    # the reference writes the Publish first, so its Deliver comes before the SubscribeResponse
    answers = conn.send(Publish(1, _msgs(1)), Subscribe(14, 1, "b", OffsetType.FIRST, None, 10, {}), alter=alter)
    assert {type(f) for f in answers} == {PublishConfirm, Deliver, SubscribeResponse}
    conn.send(Publish(1, _msgs(2)))
    conn.send(Publish(1, _msgs(3)))
    conn.send(Metadata(15, ("a",)))
    return rec.write(tmp_path / "interleaving.pcap")


def test_a_deliver_after_the_subscribe_response_of_a_later_subscription_is_equivalent(tmp_path):
    # as RabbitMQ may send them: the SubscribeResponse of subscription 1 first
    path = _interleaving(tmp_path, _move_after(Deliver, SubscribeResponse))
    assert _verdicts(_replay(path, P310)) == [verdicts.PASS]
    assert _verdicts(_replay(path, P310, rechunk=True)) == [verdicts.PASS]


def test_a_deliver_before_a_later_subscribe_response_is_equivalent_too(tmp_path):
    path = _interleaving(tmp_path)                 # the reference's own order
    assert _verdicts(_replay(path, "current")) == [verdicts.PASS]     # this one answers Subscribe first


def test_the_messages_of_one_subscription_stay_in_order(tmp_path):
    rec = Recording(P310)
    conn = rec.connect()
    conn.send(Create(10, "a", {}), DeclarePublisher(12, 1, "", "a"))
    conn.send(Publish(1, _msgs(1)))
    conn.send(Publish(1, _msgs(2)))

    def swap(frames):          # the two chunks of subscription 0 in the other order
        delivers = [f for f in frames if isinstance(f, Deliver)]
        return [f for f in frames if not isinstance(f, Deliver)] + delivers[::-1]
    conn.send(Subscribe(13, 0, "a", OffsetType.FIRST, None, 10, {}), alter=swap)
    conn.send(Metadata(15, ("a",)))
    (result,) = _replay(rec.write(tmp_path / "swapped.pcap"), P310)
    assert result.verdict == verdicts.FAIL
    assert any("m1" in m or "m2" in m for m in result.mismatches), result.mismatches


def test_a_deliver_with_other_content_still_fails(tmp_path):
    def other_body(frames):
        return [Deliver(f.subscription_id, build_chunk([SimpleEntry(b"not m1")], f.chunk.first_offset,
                                                       f.chunk.timestamp))
                if isinstance(f, Deliver) else f for f in frames]
    (result,) = _replay(_interleaving(tmp_path, other_body), P310)
    assert result.verdict == verdicts.FAIL
    assert any("not m1" in m for m in result.mismatches), result.mismatches


# -- (b) and (a): Metadata ------------------------------------------------------------------------

def test_metadata_stream_order_is_not_compared(tmp_path):
    rec = Recording("current")
    conn = rec.connect()
    conn.send(Create(10, "a", {}), Create(11, "b", {}))

    def reverse(frames):
        (m,) = frames
        return [MetadataResponse(m.correlation_id, m.brokers, m.streams[::-1])]
    answers = conn.send(Metadata(12, ("a", "missing", "b")), alter=reverse)
    assert [s.stream for s in answers[0].streams] == ["b", "missing", "a"]
    assert _verdicts(_replay(rec.write(tmp_path / "order.pcap"), "current")) == [verdicts.PASS]


def test_metadata_codes_are_still_compared(tmp_path):
    rec = Recording("current")
    conn = rec.connect()
    conn.send(Create(10, "a", {}))

    def missing(frames):
        (m,) = frames
        return [MetadataResponse(m.correlation_id, m.brokers, (StreamMetadata("a", Code.STREAM_DOES_NOT_EXIST,
                                                                              0xFFFF, ()),))]
    conn.send(Metadata(12, ("a",)), alter=missing)
    (result,) = _replay(rec.write(tmp_path / "codes.pcap"), "current")
    assert result.verdict == verdicts.FAIL and any("code" in m for m in result.mismatches), result.mismatches


def test_metadata_without_brokers_replays_against_the_310_profile_only(tmp_path):
    rec = Recording(P310)
    answers = rec.connect().send(Metadata(12, ("missing",)))
    assert answers[0].brokers == ()
    path = rec.write(tmp_path / "brokers.pcap")
    assert _verdicts(_replay(path, P310)) == [verdicts.PASS]
    (result,) = _replay(path, "current")         # the broker list is still compared
    assert result.verdict == verdicts.FAIL and any("brokers" in m for m in result.mismatches)


# -- (c) offsets numbered by the server ---------------------------------------------------------

def _numbered(tmp_path, profile) -> str:
    """StoreOffsets in one write (one offset under 3.10, three under current), then a message
    and clients echoing its offset: Subscribe from it, StoreOffset of it, QueryOffset."""
    rec = Recording(profile)
    conn = rec.connect()
    conn.send(Create(10, "s", {}), DeclarePublisher(11, 1, "", "s"))
    conn.send(Publish(1, _msgs(1)))
    conn.send(StoreOffset("r1", "s", 0), StoreOffset("r2", "s", 0), StoreOffset("r3", "s", 0))
    conn.send(Publish(1, _msgs(2)))
    (_, _, second) = conn.send(Subscribe(12, 0, "s", OffsetType.FIRST, None, 10, {}))
    at = second.chunk.first_offset
    assert at == (2 if profile == P310 else 4)
    reader = rec.connect()
    answers = reader.send(Subscribe(13, 0, "s", OffsetType.OFFSET, at, 10, {}))
    assert [f.chunk.messages() for f in answers[1:]] == [[b"m2"]]
    reader.send(StoreOffset("reader", "s", at))
    (stored,) = reader.send(QueryOffset(14, "reader", "s"))
    assert stored.offset == at
    return rec.write(tmp_path / f"numbered-{profile}.pcap")


@pytest.mark.parametrize("recorded,target", [("current", P310), (P310, "current")])
def test_offsets_the_server_numbers_differently_are_equivalent(tmp_path, recorded, target):
    path = _numbered(tmp_path, recorded)
    assert _verdicts(_replay(path, target)) == [verdicts.PASS, verdicts.PASS]
    assert _verdicts(_replay(path, target, rechunk=True)) == [verdicts.PASS, verdicts.PASS]


def test_offset_numbering_keeps_one_order_and_one_mapping():
    n = OffsetNumbering()
    for r in range(3):
        n.add(r, r)
    n.add(4, 3)                        # the target spent one offset less before message 4
    n.add(5, 4)
    assert n.consistent(1, 1) and not n.consistent(1, 2)          # one mapping
    assert n.consistent(3, 3) is False                            # 3 is the target's 4's place... taken by 4
    assert n.consistent(6, 5) and n.consistent(6, 9) and not n.consistent(6, 4)   # one order
    assert n.to_target(4) == 3 and n.to_target(10) == 9 and n.to_target(2) == 2
    assert (n.starts, n.deltas) == ([0, 4], [0, -1])
    empty = OffsetNumbering()
    assert empty.consistent(7, 70) and empty.to_target(7) == 7


# -- chunks: messages before a requested offset, and credit --------------------------------------

def _one_chunk_of_two(tmp_path, subscribe) -> str:
    """Recorded under 3.10: two Publish frames in one write are one chunk; the target under
    current cuts them into two."""
    rec = Recording(P310)
    conn = rec.connect()
    conn.send(Create(10, "s", {}), DeclarePublisher(11, 1, "", "s"))
    conn.send(Publish(1, _msgs(1)), Publish(1, _msgs(2)))
    answers = conn.send(subscribe)
    assert [f.chunk.messages() for f in answers[1:]] == [[b"m1", b"m2"]]
    conn.send(Metadata(15, ("s",)))
    return rec.write(tmp_path / "chunk.pcap")


def test_messages_before_the_requested_offset_are_not_compared(tmp_path):
    path = _one_chunk_of_two(tmp_path, Subscribe(12, 0, "s", OffsetType.OFFSET, 1, 10, {}))
    assert _verdicts(_replay(path, "current")) == [verdicts.PASS]


def test_a_target_cutting_messages_into_more_chunks_gets_the_credit_it_needs(tmp_path):
    path = _one_chunk_of_two(tmp_path, Subscribe(12, 0, "s", OffsetType.FIRST, None, 1, {}))
    (result,) = _replay(path, "current")
    assert result.verdict == verdicts.PASS, result.mismatches
    assert any("Credit frames the recording lacks" in n for n in result.notes), result.notes
    (same,) = _replay(path, P310)                 # chunked as recorded: nothing added
    assert same.verdict == verdicts.PASS and not any("Credit" in n for n in same.notes)


# -- (e) a subscription from a timestamp -------------------------------------------------------

def test_a_timestamp_subscription_while_the_replay_runs_ahead_of_the_recording(tmp_path):
    """A time taken between two chunks, used 3 s later in the recording; the replay shortens
    that wait (max_gap), so the clocks' difference at the Subscribe would put the time before
    both chunks. Placed by the moments around it, it falls between them as recorded."""
    rec = Recording(P310)
    publisher = rec.connect()
    publisher.send(Create(10, "s", {}), DeclarePublisher(11, 1, "", "s"))
    publisher.send(Publish(1, _msgs(1)))
    rec.at(0.2)
    consumer = rec.connect()
    stamp = int(rec.now * 1000) + 1                      # after chunk 1 (the clock of this machine)
    rec.at(0.05)
    publisher.send(Publish(1, _msgs(2)))
    rec.at(3.0)
    answers = consumer.send(Subscribe(12, 0, "s", OffsetType.TIMESTAMP, stamp, 10, {}))
    assert [f.chunk.messages() for f in answers[1:]] == [[b"m2"]]
    consumer.send(Metadata(13, ("s",)))
    results = _replay(rec.write(tmp_path / "timestamp.pcap"), P310, max_gap=0.1)
    assert _verdicts(results) == [verdicts.PASS, verdicts.PASS], [r.mismatches for r in results]


def test_timestamp_translation_by_chunks_and_client_moments():
    rules = RMQSRules(replay.ReplayOptions(("127.0.0.1", 1)))
    rules.client_sent(1.000, 101.000)                # recorded 1000 ms was sent at 101000 ms
    rules.client_sent(2.000, 104.000)                # the replay fell 2 s behind
    # a time taken just before the client's next request: placed by that request, not by the
    # clocks' difference at the Subscribe (6 s), which would put it after the target's chunk
    assert rules.translate_timestamp(990, clock_shift=6.0, stream="s") == 100_990
    assert rules.translate_timestamp(5000, clock_shift=6.0, stream="s") == 107_000
    rules._anchor(rules._chunk_times.setdefault("s", []), 1500, 102_700)     # a chunk both delivered
    rules._anchor(rules._chunk_times["s"], 1600, 102_710)
    assert rules.translate_timestamp(1500, 0.0, "s") == 102_700                # its time: exact
    assert rules.translate_timestamp(1550, 0.0, "s") == 102_710                # between: at most the next
    assert rules.translate_timestamp(1601, 0.0, "s") == 103_601                # after: past the last one
    assert rules.translate_timestamp(1499, 0.0, "s") == 101_499                # before it: by the nearest moment
    assert rules.translate_timestamp(1500, 0.0, "other") == 101_500            # another stream's chunks: not used
    bare = RMQSRules(replay.ReplayOptions(("127.0.0.1", 1)))
    assert bare.translate_timestamp(1000, 2.5, "s") == 3500                    # nothing known: the clocks


def test_a_timestamp_stays_between_the_client_sends_around_it():
    """Unpaced, the replay sends a publish recorded 50 ms after a time 1 ms after the request
    recorded 2 ms before it: the time is placed by that request (the nearest), but not after the
    publish, whose chunk it names (the rich capture's "rich-from-time" subscription)."""
    rules = RMQSRules(replay.ReplayOptions(("127.0.0.1", 1)))
    rules.client_sent(3.000, 110.0004)               # the request before the time
    rules.client_sent(3.052, 110.0012)               # the publish after it, sent 0.8 ms later
    assert rules.translate_timestamp(3002, 0.0, "s") == 110_001                # not past the publish
    assert rules.translate_timestamp(3050, 0.0, "s") == 110_000                # not before the request
    assert rules.translate_timestamp(3060, 0.0, "s") == 110_009                # after both: the nearest
    rules._anchor(rules._chunk_times.setdefault("s", []), 2990, 110_001)       # a chunk both delivered
    assert rules.translate_timestamp(3002, 0.0, "s") == 110_002                # after that chunk


def test_async_keys_and_unordered_lists():
    rules = RMQSRules(replay.ReplayOptions(("127.0.0.1", 1)))
    assert rules.async_key({"type": "Deliver (message)", "subscription_id": 3}) == ("Deliver (message)", 3)
    assert rules.async_key({"type": "PublishConfirm (id)", "publisher_id": 1}) == ("PublishConfirm (id)", 1)
    assert rules.async_key({"type": "MetadataUpdate", "stream": "s"}) == ("MetadataUpdate", "s")
    assert rules.async_key({"type": "SubscribeResponse"}) is None
    one = {"type": "MetadataResponse", "brokers": [], "streams": [{"stream": "a"}, {"stream": "b"}]}
    other = {**one, "streams": one["streams"][::-1]}
    assert rules.mask(one) == rules.mask(other)
