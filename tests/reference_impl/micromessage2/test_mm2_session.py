"""The Micromessage2 server session in memory (no sockets, time passed in): handshake outcomes
in both profiles, the pusher's window and its sequence numbers across the 65535 -> 1 wrap,
delayed acks, queue redelivery when a receiver goes away."""
import struct

import pytest

from wirecheck.reference_impl.micromessage2 import codec
from wirecheck.reference_impl.micromessage2.codec import Command, Error, ExtensionFrame, Handshake, Message
from wirecheck.reference_impl.micromessage2.session import MM2Session, SessionConfig
from wirecheck.reference_impl.micromessage2.state import BrokerState
from wirecheck.reference_impl.micromessage2.syntax import parse_extensions


class Peer:
    """A client talking to one session; decodes what the session answers."""

    def __init__(self, state, profile="document", **cfg):
        self.session = MM2Session(state, SessionConfig.for_profile(profile, **cfg))
        self.decoder = codec.make_decoder(origin="server", profile=profile)
        self.frames = []
        self.session.attach(lambda out: self.frames.extend(self.decoder.feed(b"".join(out))), lambda: None)
        self.now = 0.0

    def send(self, *frames):
        out = self.session.receive(b"".join(codec.encode(f) for f in frames), self.now)
        self.frames.extend(self.decoder.feed(b"".join(out)))
        got, self.frames = self.frames, []
        return got

    def handshake(self, required="pubsub", optional=""):
        offer = Handshake("t", parse_extensions(required), parse_extensions(optional))
        reply = self.send(offer)
        assert len(reply) == 1 and isinstance(reply[0], Handshake), reply
        final = Handshake("t", offer.required + tuple(e for e in reply[0].required if e.name not in offer.names()),
                          tuple(e for e in reply[0].optional if e.name in offer.names()))
        assert self.send(final) == []
        return reply[0]


def test_handshake_refusals_document():
    state = BrokerState()
    p = Peer(state)
    got = p.send(Handshake("t", parse_extensions("x-nope")))
    assert isinstance(got[0], Error) and p.session.closed
    p = Peer(state)
    assert isinstance(p.send(Handshake("t", major=0))[0], Error) and p.session.closed
    # a higher major gets the server's own 1.x: "the lowest version should be used"
    p = Peer(state)
    reply = p.send(Handshake("t", major=2))[0]
    assert isinstance(reply, Handshake) and (reply.major, reply.minor) == (1, 0) and not p.session.closed


def test_handshake_sharpmessaging_keeps_the_connection_and_answers_1_1():
    state = BrokerState()
    p = Peer(state, "sharpmessaging")
    got = p.send(Handshake("t", parse_extensions("x-nope")))
    assert isinstance(got[0], Error) and not p.session.closed
    p.decoder = codec.make_decoder(origin="server", profile="sharpmessaging")   # a new offer
    reply = p.send(Handshake("hulk", parse_extensions("ack")))[0]
    assert (reply.major, reply.minor) == (1, 1)
    assert reply.names() == ("ack", "dotnet")                      # Required = union, Optional - Required
    p2 = Peer(state, "sharpmessaging")
    reply = p2.send(Handshake("t"))[0]
    assert str(reply.optional[0]) == "ack:MessagesPerAck=10,AckExpireTime=500"


def test_sharpmessaging_reply_and_refusal_texts():
    """The real server's reply (its source): its own required extensions first, optional ones
    of either side echoed whether it supports them or not; its two refusal texts."""
    from wirecheck.reference_impl.micromessage2.negotiation import ServerPolicy, Refusal, agree, reply_to
    from wirecheck.reference_impl.micromessage2.syntax import Extension
    policy = ServerPolicy.for_profile("sharpmessaging", required=(Extension("dotnet"),))
    offer = Handshake("t", parse_extensions("ack:MessagesPerAck=1", strict=False), parse_extensions("x-vendor;json"))
    reply = reply_to(policy, offer)
    assert [e.name for e in reply.required] == ["dotnet", "ack"]
    assert [e.name for e in reply.optional] == ["x-vendor", "json"]      # ack is taken by Required
    with pytest.raises(Refusal) as refused:
        agree(policy, offer, reply, Handshake("t", parse_extensions("ack")))
    assert str(refused.value) == "Server requires the following extensions: dotnet"
    with pytest.raises(Refusal) as refused:
        reply_to(policy, Handshake("t", parse_extensions("x-a;x-b")))
    assert str(refused.value) == "Server to not support the following extensions: x-a, x-b"
    assert not refused.value.close
    document = reply_to(ServerPolicy.for_profile("document"), offer)
    assert "x-vendor" not in document.names()


def test_pusher_window_and_wrap():
    state = BrokerState()
    sub = Peer(state)
    sub.handshake("pubsub;batch-ack:max-count=3")
    sub.session.outbox.last = 65533                              # as after 65,533 deliveries
    assert sub.send(Command("subscribe", (("destination", "topic/t"),))) == []
    pub = Peer(state)
    pub.handshake()
    pub.send(*[Message(i, "topic/t", b"%d" % i) for i in range(1, 8)])
    first = sub.frames
    sub.frames = []
    assert [m.sequence for m in first] == [65534, 65535, 1]          # window 3, across the wrap
    got = sub.send(ExtensionFrame(2, struct.pack(">H", 1)))          # cumulative ack across the wrap
    assert [m.sequence for m in got] == [2, 3, 4]
    got = sub.send(ExtensionFrame(2, struct.pack(">H", 3)))          # early ack of 2 of 3
    assert [m.sequence for m in got] == [5]
    assert isinstance(sub.send(ExtensionFrame(2, struct.pack(">H", 3)))[0], Error)   # no longer in flight


def test_delayed_ack_of_sends():
    state = BrokerState()
    p = Peer(state, ack_delay=0.25)
    p.handshake("pubsub;batch-ack:max-count=4")
    assert p.send(Message(1, "q", b"a")) == []
    assert p.session.next_deadline() == pytest.approx(0.25)
    assert p.session.tick(0.1) == []
    out = p.session.tick(0.3)
    assert codec.decode_all(b"".join(out)) == [ExtensionFrame(2, b"\x00\x01")]
    assert p.session.next_deadline() is None


def test_queue_message_redelivered_when_receiver_leaves():
    state = BrokerState()
    a, b = Peer(state), Peer(state)
    a.handshake("pubsub;ack")
    b.handshake("pubsub;ack")
    a.send(Command("subscribe", (("destination", "jobs"),)))
    pub = Peer(state)
    pub.handshake()
    pub.send(Message(1, "jobs", b"job-1"))
    assert [m.payload for m in a.frames] == [b"job-1"]
    b.send(Command("subscribe", (("destination", "jobs"),)))
    a.session.connection_lost()                                      # never acked
    assert [m.payload for m in b.frames] == [b"job-1"]


def test_long_refusal_text_is_read_as_an_error():
    # Found by wirecheck/fuzz/fuzz_mm2_session.py (wirecheck/fuzz/crashers/micromessage2-session/long-refusal-text):
    # the ERROR refusing an offer whose extension name is not a FIELD quotes the name; above
    # 255 bytes it has LARGE_PAYLOAD, and the client must still read it as the ERROR that
    # replaces the server's handshake.
    name = b"K" * 300
    offer = bytes([1, 0, 0, 1]) + b"c" + struct.pack(">H", len(name)) + name + b"\x00\x00"
    session = MM2Session(BrokerState(), SessionConfig())
    out = session.receive(offer, 0.0)
    assert session.closed
    frames = codec.decode_all(b"".join(out), origin="server")
    assert len(frames) == 1 and isinstance(frames[0], Error) and frames[0].large


@pytest.mark.parametrize("profile, extension", [
    ("document", "batch-ack:max-count=%C2%B2"),                 # "²": str.isdigit() says yes
    ("sharpmessaging", "ack:AckExpireTime=%C2%B2"),
    ("document", "batch-ack:count=" + "1" * 4301),              # past int()'s 4,300 digits
])
def test_counts_not_in_ascii_digits_are_refused(profile, extension):
    # Found by review, confirmed with wirecheck/fuzz/fuzz_mm2_handshake.py and fuzz_mm2_session.py
    # (wirecheck/fuzz/crashers/micromessage2-*/superscript-window): a window or AckExpireTime that
    # str.isdigit() accepts but int() does not escaped the session as a ValueError. The final
    # handshake is refused (ERROR, disconnect), as for any count that is not one.
    offer = codec.encode(Handshake("t", parse_extensions(extension, strict=False)))
    session = MM2Session(BrokerState(), SessionConfig.for_profile(profile))
    out = session.receive(offer + offer, 0.0)
    assert session.closed
    frames = codec.decode_all(b"".join(out), origin="server", profile=profile)
    assert [type(f) for f in frames] == [Handshake, Error], frames


def test_queue_publish_offers_only_the_new_message():
    """A backlog nobody wants is not rescanned on each publish; order and hand-over are kept."""
    from wirecheck.reference_impl.micromessage2.filters import parse_filter
    from wirecheck.reference_impl.micromessage2.state import Stored

    class Receiver:
        typed, got, room = True, [], True

        def has_room(self):
            return self.room

        def deliver(self, message):
            self.got.append(message.payload)

    state = BrokerState()
    rx = Receiver()
    sub = state.subscribe(rx, "q", parse_filter("k=N1"))
    calls = []
    wants = sub.wants
    sub.wants = lambda m: calls.append(m) or wants(m)
    for i in range(50):
        assert state.publish(Stored("q", b"%d" % i, (("k", "N2"),))) == 0    # waits
    calls.clear()
    assert state.publish(Stored("q", b"yes", (("k", "N1"),))) == 1
    assert len(calls) == 1 and rx.got == [b"yes"]
    rx.room = False
    assert state.publish(Stored("q", b"later", (("k", "N1"),))) == 0
    rx.room = True
    state.room_freed(rx)
    assert rx.got == [b"yes", b"later"] and len(state.queues["q"].messages) == 50
