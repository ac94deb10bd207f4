"""The sans-IO BlipMQ session: ordering, every NACK, QoS1 redelivery with a fake clock."""
import pytest

from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import (Ack, Auth, FrameType, Hello, Nack, Ping, Poll, Pong, Publish,
                                         Subscribe)
from wirecheck.reference_impl.blipmq.session import BlipSession, Phase, SessionConfig
from wirecheck.reference_impl.blipmq.state import BrokerState, JournalError


class Peer:
    """A session plus a clock; ``send`` returns the decoded answers."""

    def __init__(self, state=None, **config):
        self.state = state or BrokerState()
        self.session = BlipSession(self.state, SessionConfig(**config) if config else None)
        self.now = 0.0

    def send(self, *frames) -> list:
        data = b"".join(f if isinstance(f, bytes) else codec.encode(f) for f in frames)
        return codec.decode_all(b"".join(self.session.receive(data, self.now)))

    def ready(self) -> "Peer":
        assert self.send(Hello(1), Auth(2, "dev-key")) == [Ack(1, 0), Ack(2, 0)]
        return self


def test_handshake_and_phases():
    p = Peer()
    assert p.session.phase is Phase.AWAIT_HELLO
    assert p.send(Hello(1)) == [Ack(1, 0)]
    assert p.session.phase is Phase.AWAIT_AUTH
    assert p.send(Auth(2, "dev-key")) == [Ack(2, 0)]
    assert p.session.phase is Phase.READY


@pytest.mark.parametrize("frames,answer", [
    ([Hello(5, 2)], Nack(5, 426, "unsupported protocol version")),
    ([codec.encode_raw(FrameType.HELLO, 5, b"\x01")], Nack(5, 400, "invalid HELLO payload")),
    ([Auth(5, "dev-key")], Nack(5, 400, "HELLO not performed")),
    ([Hello(1), Hello(5)], Nack(5, 400, "HELLO already performed")),
    ([Hello(1), Auth(5, "nope")], Nack(5, 401, "invalid API key")),
    ([Hello(1), codec.encode_raw(FrameType.AUTH, 5, b"\x00\x09x")], Nack(5, 400, "invalid AUTH payload")),
    ([Ping(5)], Nack(5, 401, "unauthenticated")),
    ([Hello(1), Poll(5, 1)], Nack(5, 401, "unauthenticated")),
    ([Hello(1), Pong(5)], Nack(5, 401, "unauthenticated")),
])
def test_handshake_nacks(frames, answer):
    assert Peer().send(*frames)[-1] == answer


def test_retries_after_failed_hello_and_auth():
    p = Peer()
    assert p.send(Hello(1, 7), Hello(2)) == [Nack(1, 426, "unsupported protocol version"), Ack(2, 0)]
    assert p.send(Auth(3, "x"), Auth(4, "dev-key")) == [Nack(3, 401, "invalid API key"), Ack(4, 0)]
    assert p.send(Auth(5, "dev-key")) == [Nack(5, 400, "already authenticated")]
    assert p.send(Hello(6)) == [Nack(6, 400, "HELLO already performed")]


def test_configured_api_keys():
    p = Peer(api_keys=frozenset({"k1", "k2"}))
    assert p.send(Hello(1), Auth(2, "dev-key"), Auth(3, "k2")) == [
        Ack(1, 0), Nack(2, 401, "invalid API key"), Ack(3, 0)]


@pytest.mark.parametrize("frame,answer", [
    (Publish(9, 0, "", b"x"), Nack(9, 400, "empty topic")),
    (Publish(9, 2, "t", b"x"), Nack(9, 400, "invalid QoS value")),
    (codec.encode_raw(FrameType.PUBLISH, 9, b"\x00\x00"), Nack(9, 400, "invalid PUBLISH payload")),
    (Subscribe(9, "", 0), Nack(9, 400, "empty topic")),
    (Subscribe(9, "t", 3), Nack(9, 400, "invalid QoS value")),
    (codec.encode_raw(FrameType.SUBSCRIBE, 9, b"\x00\x05ab"), Nack(9, 400, "invalid SUBSCRIBE payload")),
    (Ack(9, 0), Nack(9, 400, "subscription_id must be non-zero")),
    (Ack(9, 77), Nack(9, 404, "unknown subscription or delivery tag")),
    (codec.encode_raw(FrameType.ACK, 9, b"\x00"), Nack(9, 400, "invalid ACK payload")),
    (Poll(9, 0), Nack(9, 400, "subscription_id must be non-zero")),
    (codec.encode_raw(FrameType.POLL, 9, b""), Nack(9, 400, "invalid POLL payload")),
])
def test_request_nacks(frame, answer):
    assert Peer().ready().send(frame) == [answer]


def test_silent_answers_and_ignored_frames():
    p = Peer().ready()
    assert p.send(Publish(3, 0, "t", b"x")) == []
    assert p.send(Poll(4, 12345)) == []           # unknown subscription: no frame
    assert p.send(Pong(5), Nack(6, 400, "x")) == []
    assert p.send(Ping(7)) == [Pong(7)]


def test_publish_poll_and_correlation_ids():
    p = Peer().ready()
    (ack,) = p.send(Subscribe(3, "t", 1))
    sub = ack.subscription_id
    assert sub == 1
    p.send(Publish(4, 0, "t", b"zero"), Publish(5, 1, "t", b"one"))
    assert p.send(Poll(6, sub)) == [Publish(6, 0, "t", b"zero")]      # QoS0: the POLL's id
    assert p.send(Poll(7, sub)) == [Publish(2, 1, "t", b"one")]       # QoS1: tag 2
    assert p.send(Poll(8, sub)) == []
    assert p.send(Ack(2, sub)) == []
    assert p.send(Ack(2, sub)) == [Nack(2, 404, "unknown subscription or delivery tag")]


def test_redelivery_backoff_and_drop_with_fake_clock():
    p = Peer(BrokerState(retry_backoff=0.125, max_retries=3)).ready()
    (ack,) = p.send(Subscribe(3, "t", 1))
    sub = ack.subscription_id
    p.send(Publish(4, 1, "t", b"m"))
    times = [0.0, 0.125, 0.375]               # backoff 0.125, 0.25, then 0.5 and dropped
    for t in times:
        p.now = t - 0.001
        if t:
            assert p.send(Poll(5, sub)) == [], f"redelivered too early at {p.now}"
        p.now = t
        assert p.send(Poll(5, sub)) == [Publish(1, 1, "t", b"m")], f"no delivery at {t}"
    p.now = 10.0
    assert p.send(Poll(5, sub)) == []
    assert p.send(Ack(1, sub)) == [Nack(1, 404, "unknown subscription or delivery tag")]


def test_queue_bound_evicts_oldest_pending():
    p = Peer(BrokerState(max_queue=3)).ready()
    (ack,) = p.send(Subscribe(3, "t", 0))
    for i in range(5):
        p.send(Publish(10 + i, 0, "t", b"%d" % i))
    got = [p.send(Poll(20, ack.subscription_id))[0].message for _ in range(3)]
    assert got == [b"2", b"3", b"4"]


@pytest.mark.parametrize("data", [b"\x00\x00\x00\x00", b"\x00\x00\x00\x08" + bytes(8),
                                  b"\xff\xff\xff\xff", codec.encode_raw(0x42, 1)])
def test_stream_errors_close_without_answer_after_serving_earlier_frames(data):
    p = Peer()
    out = p.session.receive(codec.encode(Hello(1)) + data + codec.encode(Hello(2)), 0.0)
    assert codec.decode_all(b"".join(out)) == [Ack(1, 0)]
    assert p.session.closed and p.session.close_reason is not None
    assert p.session.receive(codec.encode(Ping(3)), 0.0) == []


class FailingJournal:
    def publish(self, qos, topic, message, targets):
        raise JournalError("disk full")

    def subscribe(self, sub_id, topic, qos):
        pass

    def settle(self, sub_id, msg_id):
        pass


def test_journal_failure_gets_nack_500():
    """BLIP-PUB-005 (untestable black-box): a failed WAL append is NACK(500)."""
    p = Peer(BrokerState(FailingJournal())).ready()
    (ack,) = p.send(Subscribe(3, "t", 1))
    assert p.send(Publish(4, 1, "t", b"x")) == [Nack(4, 500, "durable publish failed: disk full")]
    assert p.send(Poll(5, ack.subscription_id)) == []       # nothing enqueued
    assert p.send(Publish(6, 0, "t", b"q0")) == []          # QoS0 is not journaled
