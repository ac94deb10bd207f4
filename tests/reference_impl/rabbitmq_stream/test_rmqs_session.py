"""The sans-IO RabbitMQ Stream session: the rules the black-box suite found the reference broker
breaking against RabbitMQ 3.10.8 (rabbitmq-stream-protocol.adoc "Authentication", "Tune",
"Heartbeat", "Route", "Partitions", "DeclarePublisher"; SPEC_NOTES.md, RabbitMQ Stream), each
checked in memory with a fake clock."""
import pytest

from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.codec import (Close, CloseResponse, ConsumerUpdate, ConsumerUpdateResponse,
                                                  Create, CreateResponse, Credit, DeclarePublisher,
                                                  DeclarePublisherResponse, Delete, DeleteResponse,
                                                  DeletePublisher, DeletePublisherResponse, Deliver,
                                                  Heartbeat, Metadata, MetadataResponse, MetadataUpdate, Open,
                                                  Partitions, PartitionsResponse, PeerProperties,
                                                  PeerPropertiesResponse, Publish, PublishConfirm,
                                                  PublishedMessage, Route, RouteResponse, SaslAuthenticate,
                                                  SaslAuthenticateResponse, SaslHandshake,
                                                  SaslHandshakeResponse, Subscribe, SubscribeResponse, Tune,
                                                  TuneResponse, Unsubscribe, UnsubscribeResponse)
from wirecheck.reference_impl.rabbitmq_stream.constants import Code, Key, OffsetType
from wirecheck.reference_impl.rabbitmq_stream.session import Phase, SessionConfig, StreamSession
from wirecheck.reference_impl.rabbitmq_stream.state import BrokerState
from wirecheck.reference_impl.rabbitmq_stream.store import StreamStore

SAC = {"single-active-consumer": "true", "name": "group"}


class Peer:
    """One session (a connection) on a shared broker state, with a clock; ``send`` returns the
    decoded answers, ``pushed`` what other connections caused (the glue's push)."""

    def __init__(self, state=None, **config):
        self.state = state or BrokerState(StreamStore(None))
        self.session = StreamSession(self.state, SessionConfig(**config), clock=lambda: 1_700_000_000.0)
        self.pushed: list = []
        self.session.attach(lambda out: self.pushed.extend(_decode(b"".join(out))), lambda: None)
        self.now = 0.0

    def send(self, *frames) -> list:
        data = b"".join(f if isinstance(f, bytes) else codec.encode(f) for f in frames)
        return _decode(b"".join(self.session.receive(data, self.now)))

    def tick(self, now: float) -> list:
        self.now = now
        return _decode(b"".join(self.session.tick(now)))

    def handshake(self, *, upto: str = "open", heartbeat: int = 60) -> "Peer":
        (props,) = self.send(PeerProperties(1, {}))
        assert isinstance(props, PeerPropertiesResponse) and props.code == Code.OK
        assert isinstance(self.send(SaslHandshake(2))[0], SaslHandshakeResponse)
        answers = self.send(SaslAuthenticate(3, "PLAIN", b"\0guest\0guest"))
        assert answers[0] == SaslAuthenticateResponse(3, Code.OK) and isinstance(answers[1], Tune)
        if upto == "authenticated":
            return self
        assert self.send(TuneResponse(1048576, heartbeat)) == []
        if upto == "tuned":
            return self
        assert self.send(Open(4, "/"))[0].code == Code.OK
        return self


def _decode(data: bytes) -> list:
    return codec.Decoder(codec.StreamConfig(max_frame_size=0), origin="server").feed(data)


def _open(state=None, **config) -> Peer:
    return Peer(state, **config).handshake()


# -- before Open: only the handshake, and a silent end for anything else --------------------

@pytest.mark.parametrize("upto", ["none", "peer_properties", "authenticated", "tuned"])
@pytest.mark.parametrize("frame", [Heartbeat(), Close(9, 1, "bye"), Create(9, "s", {}), Metadata(9, ()),
                                   Credit(1, 1), codec.encode_raw(0x42, 1, b"\0\0\0\1"),
                                   b"\x00\x00\x00\x02\x00\x17"],
                         ids=["heartbeat", "close", "create", "metadata", "credit", "unknown-key", "size-2"])
def test_anything_but_the_handshake_before_open_ends_the_connection_silently(upto, frame):
    peer = Peer()
    if upto == "peer_properties":
        peer.send(PeerProperties(1, {}))
    elif upto != "none":
        peer.handshake(upto=upto)
    assert peer.send(frame) == []
    assert peer.session.closed


@pytest.mark.parametrize("frame", [PeerProperties(9, {}), SaslHandshake(9),
                                   SaslAuthenticate(9, "PLAIN", b"\0guest\0guest"), Open(9, "/"),
                                   TuneResponse(1048576, 60), Tune(1048576, 60)],
                         ids=["peer-properties", "sasl-handshake", "sasl-authenticate", "open",
                              "tune-response", "tune"])
def test_handshake_command_after_open_gets_close_13(frame):
    peer = _open()
    (close,) = peer.send(frame)
    assert isinstance(close, Close) and close.code == Code.UNKNOWN_FRAME
    assert peer.session.closed


def test_unknown_key_after_open_still_gets_close_13():
    peer = _open()
    (close,) = peer.send(codec.encode_raw(0x42, 1, b"\0\0\0\1"))
    assert isinstance(close, Close) and close.code == Code.UNKNOWN_FRAME


@pytest.mark.parametrize("mechanism,data,code", [
    ("PLAIN", b"\0guest\0wrong", Code.AUTHENTICATION_FAILURE),
    ("NOPE", b"\0guest\0guest", Code.SASL_MECHANISM_NOT_SUPPORTED),
    ("PLAIN", b"guest", Code.SASL_ERROR),
    ("PLAIN", None, Code.SASL_ERROR),
])
def test_failed_authentication_is_answered_then_closes(mechanism, data, code):
    peer = Peer()
    peer.send(PeerProperties(1, {}), SaslHandshake(2))
    assert peer.send(SaslAuthenticate(3, mechanism, data)) == [SaslAuthenticateResponse(3, code)]
    assert peer.session.closed


def test_client_close_after_open_is_answered():
    peer = _open()
    assert peer.send(Close(7, 1, "bye")) == [CloseResponse(7, Code.OK)]
    assert peer.session.closed


# -- heartbeat ----------------------------------------------------------------------------

def test_heartbeat_every_half_period_and_gone_after_three():
    peer = Peer().handshake(upto="tuned", heartbeat=2)
    peer.send(Open(4, "/"))
    assert peer.tick(0.5) == []
    assert peer.tick(1.0) == [Heartbeat()]          # half of the 2 s period without sending
    assert peer.tick(1.5) == []
    assert peer.tick(2.0) == [Heartbeat()]
    assert not peer.session.closed
    peer.tick(6.0)
    assert not peer.session.closed                  # exactly three periods: not yet
    peer.tick(6.1)
    assert peer.session.closed and peer.session.close_reason == "heartbeat timeout"


def test_client_traffic_keeps_the_connection():
    peer = Peer().handshake(upto="tuned", heartbeat=1)
    peer.send(Open(4, "/"))
    for step in range(1, 20):
        peer.now = step * 0.5
        peer.send(Heartbeat())
        peer.tick(peer.now)
    assert not peer.session.closed


def test_client_heartbeat_of_zero_means_none():
    # "Heartbeat => in seconds, 0 means no heartbeat": the client's answer is the setting,
    # even though the server offered 60.
    peer = Peer().handshake(upto="tuned", heartbeat=0)
    peer.send(Open(4, "/"))
    assert peer.session.heartbeat == 0
    assert peer.tick(10_000.0) == [] and not peer.session.closed


def test_client_heartbeat_is_taken_as_is():
    peer = Peer().handshake(upto="tuned", heartbeat=7)
    assert peer.session.heartbeat == 7


# -- publishers ---------------------------------------------------------------------------

def _stream(peer, name="s"):
    assert peer.send(Create(10, name, {})) == [CreateResponse(10, Code.OK)]


def test_deduplication_in_order_within_one_publish():
    peer = _open()
    _stream(peer)
    peer.send(DeclarePublisher(11, 1, "ref", "s"))
    assert peer.send(Publish(1, (PublishedMessage(10, b"x10"), PublishedMessage(7, b"x7"),
                                 PublishedMessage(11, b"x11")))) == [PublishConfirm(1, (10, 7, 11))]
    answers = peer.send(Subscribe(12, 1, "s", OffsetType.FIRST, None, 5, {}))
    (deliver,) = [f for f in answers if isinstance(f, Deliver)]
    assert deliver.chunk.messages() == [b"x10", b"x11"]
    assert peer.state.stream("s").writer_sequence("ref") == 11


def test_publisher_reference_is_unique_per_connection_only():
    state = BrokerState(StreamStore(None))
    first, second = _open(state), _open(state)
    _stream(first)
    assert first.send(DeclarePublisher(11, 1, "ref", "s")) == [DeclarePublisherResponse(11, Code.OK)]
    assert first.send(DeclarePublisher(12, 2, "ref", "s")) == [
        DeclarePublisherResponse(12, Code.PRECONDITION_FAILED)]
    assert second.send(DeclarePublisher(13, 1, "ref", "s")) == [DeclarePublisherResponse(13, Code.OK)]
    # They share the reference's sequence: 3 is below 5, kept by the first connection.
    first.send(Publish(1, (PublishedMessage(5, b"a5"),)))
    second.send(Publish(1, (PublishedMessage(3, b"b3"), PublishedMessage(6, b"b6"))))
    assert state.stream("s").writer_sequence("ref") == 6
    assert first.send(DeletePublisher(14, 1)) == [DeletePublisherResponse(14, Code.OK)]
    assert first.send(DeclarePublisher(15, 2, "ref", "s")) == [DeclarePublisherResponse(15, Code.OK)]


# -- Route and Partitions: the response key per profile --------------------------------------

@pytest.mark.parametrize("profile,bit", [("current", True), ("rabbitmq-3.10", False)])
def test_route_and_partitions_response_key(profile, bit):
    peer = Peer(profile=profile).handshake()
    route, partitions = peer.send(Route(20, "k", "missing"), Partitions(21, "missing"))
    assert isinstance(route, RouteResponse) and isinstance(partitions, PartitionsResponse)
    assert (route.code, route.streams, partitions.code) == (Code.STREAM_DOES_NOT_EXIST, (),
                                                            Code.STREAM_DOES_NOT_EXIST)
    assert route.response_bit is bit and partitions.response_bit is bit
    wire = codec.encode(route)
    assert int.from_bytes(wire[4:6], "big") == (Key.ROUTE | 0x8000 if bit else Key.ROUTE)


# -- single active consumer (ConsumerUpdate, key 26) -----------------------------------------

def _sac_setup():
    state = BrokerState(StreamStore(None))
    owner = _open(state)
    _stream(owner)
    owner.send(DeclarePublisher(11, 1, "", "s"))
    owner.send(Publish(1, (PublishedMessage(1, b"a"),)))
    owner.send(Publish(1, (PublishedMessage(2, b"b"),)))
    return state, owner


def test_first_group_member_gets_consumer_update_and_its_answer_sets_the_offset():
    state, _ = _sac_setup()
    peer = _open(state)
    answers = peer.send(Subscribe(30, 1, "s", OffsetType.FIRST, None, 10, SAC))
    assert answers[0] == SubscribeResponse(30, Code.OK)
    (update,) = answers[1:]
    assert isinstance(update, ConsumerUpdate) and (update.subscription_id, update.active) == (1, 1)
    (deliver,) = peer.send(ConsumerUpdateResponse(update.correlation_id, Code.OK, OffsetType.OFFSET, 1))
    assert isinstance(deliver, Deliver) and deliver.chunk.messages() == [b"b"]


def test_waiting_member_is_promoted_when_the_active_one_leaves():
    state, owner = _sac_setup()
    first, second = _open(state), _open(state)
    update = first.send(Subscribe(30, 1, "s", OffsetType.FIRST, None, 10, SAC))[1]
    first.send(ConsumerUpdateResponse(update.correlation_id, Code.OK, OffsetType.NEXT))
    assert second.send(Subscribe(31, 2, "s", OffsetType.FIRST, None, 10, SAC)) == [SubscribeResponse(31, Code.OK)]
    owner.send(Publish(1, (PublishedMessage(3, b"c"),)))
    assert [f.chunk.messages() for f in first.pushed] == [[b"c"]]
    assert second.pushed == []
    assert first.send(Unsubscribe(32, 1)) == [UnsubscribeResponse(32, Code.OK)]
    (promoted,) = second.pushed
    assert isinstance(promoted, ConsumerUpdate) and (promoted.subscription_id, promoted.active) == (2, 1)
    answers = second.send(ConsumerUpdateResponse(promoted.correlation_id, Code.OK, OffsetType.FIRST))
    assert [f.chunk.messages() for f in answers] == [[b"a"], [b"b"], [b"c"]]


def test_closing_the_active_member_promotes_the_next():
    state, _ = _sac_setup()
    first, second = _open(state), _open(state)
    first.send(Subscribe(30, 1, "s", OffsetType.FIRST, None, 10, SAC))
    second.send(Subscribe(31, 2, "s", OffsetType.FIRST, None, 10, SAC))
    first.session.connection_lost()
    assert [type(f) for f in second.pushed] == [ConsumerUpdate]


def test_sac_needs_a_name_and_the_profile():
    state, _ = _sac_setup()
    peer = _open(state)
    props = {"single-active-consumer": "true"}
    assert peer.send(Subscribe(30, 1, "s", OffsetType.FIRST, None, 10, props)) == [
        SubscribeResponse(30, Code.PRECONDITION_FAILED)]
    # RabbitMQ 3.10 has no ConsumerUpdate: the properties are only properties there.
    old = Peer(state, profile="rabbitmq-3.10").handshake()
    answers = old.send(Subscribe(31, 1, "s", OffsetType.FIRST, None, 10, SAC))
    assert answers[0] == SubscribeResponse(31, Code.OK) and all(isinstance(f, Deliver) for f in answers[1:])


def test_delete_drops_the_group_without_promoting():
    state, owner = _sac_setup()
    first, second = _open(state), _open(state)
    first.send(Subscribe(30, 1, "s", OffsetType.FIRST, None, 10, SAC))
    second.send(Subscribe(31, 2, "s", OffsetType.FIRST, None, 10, SAC))
    answers = owner.send(Delete(40, "s")) + owner.pushed     # it publishes there: pushed too
    assert answers[0] == DeleteResponse(40, Code.OK)
    assert not state.consumer_groups
    assert [type(f) for f in second.pushed] == [MetadataUpdate]
    (meta,) = second.send(Metadata(41, ()))
    assert isinstance(meta, MetadataResponse) and meta.streams == ()
    assert first.session.phase is Phase.OPEN


def test_a_connection_that_never_opens_is_dropped_after_the_handshake_timeout():
    # RabbitMQ 3.10 closes a connection that has not sent Open within 10 s (no frame).
    from wirecheck.reference_impl.rabbitmq_stream.session import SessionConfig, StreamSession
    from wirecheck.reference_impl.rabbitmq_stream.state import BrokerState
    from wirecheck.reference_impl.rabbitmq_stream.store import StreamStore
    session = StreamSession(BrokerState(StreamStore(None)), SessionConfig())
    assert session.tick(100.0) == [] and not session.closed
    assert session.tick(109.9) == [] and not session.closed
    assert session.tick(110.1) == [] and session.closed
    assert session.close_reason == "handshake timeout"
