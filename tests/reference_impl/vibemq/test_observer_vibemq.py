"""The VibeMQ observer (wirecheck/reference_impl/vibemq/observer.py): each rule caught with its
requirement, side and frame index; correct conversations clean (written by hand, and spoken
by the reference session in each profile); a pcap with injected violations; the repository's
captures."""
from __future__ import annotations

import os

import pytest

from wirecheck.conformance.captures.pcapfile import PcapWriter, TcpConversation
from wirecheck.conformance.requirements import catalogue
from wirecheck.pipeline.local import analyze
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.core.observer import C2S, S2C
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq import compression as comp
from wirecheck.reference_impl.vibemq.constants import CommandType as T, Compression
from wirecheck.reference_impl.vibemq.observer import VibeObserver
from wirecheck.reference_impl.vibemq.session import SessionConfig, VibeSession
from wirecheck.reference_impl.vibemq.state import BrokerState, StateConfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CAPTURES = os.path.join(ROOT, "captures", "vibemq")
CATALOGUE = catalogue("wirecheck.conformance.requirements.vibemq")
AUTH = {"authPassword": "vibemq"}
INFO = {"name": "q", "messageCount": 0, "subscriberCount": 1, "deliveryMode": "RoundRobin",
        "maxSize": 10000, "createdAt": "2026-02-18T10:00:00Z"}


def m(kind, mid, queue=None, payload=None, headers=None, *, code=None, text=None, version=1,
      compression=Compression.NONE):
    return codec.Message(kind, mid, queue, payload, headers, code, text, version, compression)


def c(message):
    return (C2S, message)


def s(message):
    return (S2C, message)


def err(mid, code="INVALID_MESSAGE", text="no"):
    return m(T.ERROR, mid, code=code, text=text)


def deliver(mid, queue="q", attempts=1, **kw):
    return m(T.DELIVER, mid, queue, {"n": 1}, {"priority": "Normal", "deliveryAttempts": str(attempts)}, **kw)


#: Connect and the document's ConnectAck: indexes 0, 1.
HANDSHAKE = [c(m(T.CONNECT, "c1", headers=AUTH)),
             s(m(T.CONNECT_ACK, "c1", headers={"serverVersion": "1.1.0", "connectionId": "srv_1"}))]
#: The real server's: a new id, no headers.
REAL_HANDSHAKE = [c(m(T.CONNECT, "c1", headers=AUTH)), s(m(T.CONNECT_ACK, "0f0f"))]
SUBSCRIBED = HANDSHAKE + [c(m(T.SUBSCRIBE, "s1", "q")),
                          s(m(T.SUBSCRIBE_ACK, "s1", headers={"queueName": "q", "subscriptionId": "s1"}))]


def observe(conversation, profile=None) -> VibeObserver:
    obs = VibeObserver(profile)
    for index, (direction, message) in enumerate(conversation):
        obs.frame(direction, message, index, 100.0 + index * 0.01)
    obs.finish(100.0 + len(conversation) * 0.01)
    return obs


def found(obs) -> set:
    return {(v.requirement, v.direction, v.index) for v in obs.violations}


def test_the_registry_names_the_observer():
    obs = registry.get("vibemq").make_observer("vibemq-1.8")
    assert isinstance(obs, VibeObserver) and obs.profile == "vibemq-1.8"


def test_a_correct_document_conversation():
    conversation = SUBSCRIBED + [
        c(m(T.PING, "p1")), s(m(T.PONG, "p1")),                                        # 4, 5
        c(m(T.CREATE_QUEUE, "cq", "q2")), s(m(T.CREATE_QUEUE, "cq", "q2")),            # 6, 7
        c(m(T.PUBLISH, "m1", "q", {"a": 1})),                                          # 8
        s(deliver("m1")),                                                              # 9
        s(m(T.PUBLISH_ACK, "m1", headers={"messageId": "m1", "queueName": "q"})),      # 10
        c(m(T.ACK, "a1", headers={"messageId": "m1"})),                                # 11
        c(m(T.QUEUE_INFO, "i1", "q")), s(m(T.QUEUE_INFO, "i1", "q", INFO)),            # 12, 13
        c(m(T.LIST_QUEUES, "l1")), s(m(T.LIST_QUEUES, "l1", payload=["q", "q2"])),     # 14, 15
        c(m(T.DELETE_QUEUE, "d1", "nope")), s(err("d1", "QUEUE_NOT_FOUND")),           # 16, 17
        c(m(T.UNSUBSCRIBE, "u1", "q")), s(m(T.UNSUBSCRIBE_ACK, "u1", headers={"queueName": "q"})),
        c(m(T.DISCONNECT, "x1")),                                                      # 20
    ]
    obs = observe(conversation)
    assert obs.violations == []
    assert {(e.request, e.response, e.kind) for e in obs.exchanges} == {
        (0, 1, "connect"), (2, 3, "subscribe"), (4, 5, "ping"), (6, 7, "createQueue"),
        (8, 10, "publish"), (12, 13, "queueInfo"), (14, 15, "listQueues"), (16, 17, "deleteQueue"),
        (18, 19, "unsubscribe")}
    assert all(e.latency == pytest.approx((e.response - e.request) * 0.01) for e in obs.exchanges)


def test_a_correct_real_server_conversation():
    """vibemq-1.8 (SPEC_NOTES): new ids on ConnectAck and on errors raised before dispatch, no
    headers in the answers, the Ack carrying the delivered id, QueueInfo of an unknown queue
    without a payload."""
    conversation = [
        c(m(T.PUBLISH, "early", "q")), s(err("0001", "NOT_AUTHENTICATED")),            # 0, 1
        c(m(T.CONNECT, "c1", headers={"authPassword": "bad"})), s(err("0002", "AUTH_FAILED")),
        c(m(T.CONNECT, "c2", headers=AUTH)), s(m(T.CONNECT_ACK, "0003")),              # 4, 5
        c(m(T.SUBSCRIBE, "s1", "q")), s(m(T.SUBSCRIBE_ACK, "s1", "q")),                # 6, 7
        s(m(T.DELIVER, "m1", "q", {"x": 1})), c(m(T.ACK, "m1")),                       # 8, 9
        c(m(T.QUEUE_INFO, "i1", "nope")), s(m(T.QUEUE_INFO, "i1", "nope")),            # 10, 11
        c(m(T.PUBLISH, "m2", "q")), s(m(T.PUBLISH_ACK, "m2", "q")),                    # 12, 13
    ]
    obs = observe(conversation, "vibemq-1.8")
    assert found(obs) == {("VIBE-CONN-003", C2S, 0)}
    assert {(e.request, e.response) for e in obs.exchanges} == {(0, 1), (2, 3), (4, 5), (6, 7),
                                                               (10, 11), (12, 13)}


def test_an_error_with_a_new_id_answers_the_oldest_request_that_expects_an_answer():
    """Connected, an Ack gets no answer: an Error of the real server's (a new id) after it
    answers the Publish behind it."""
    obs = observe(REAL_HANDSHAKE + [c(m(T.ACK, "m9")), c(m(T.PUBLISH, "m1", "q")),
                                    s(err("ffff", "RATE_LIMITED"))], "vibemq-1.8")
    assert obs.violations == []
    assert {(e.request, e.response) for e in obs.exchanges} == {(0, 1), (3, 4)}


def test_frame_returns_the_exchange_of_an_answer():
    obs = VibeObserver()
    assert obs.frame(C2S, m(T.PING, "p"), 0, 5.0) is None
    exchange = obs.frame(S2C, m(T.PONG, "p"), 1, 5.5)
    assert (exchange.request, exchange.response, exchange.kind, exchange.latency) == (0, 1, "ping", 0.5)


CASES = {
    # -- order ("Connect"; SPEC_NOTES: before Connect only Connect and Ping) ---------------------
    "publish before connect": ([c(m(T.PUBLISH, "p", "q")), s(err("p", "NOT_AUTHENTICATED"))],
                               {("VIBE-CONN-003", C2S, 0)}),
    "publish after a refused connect": ([c(m(T.CONNECT, "c", headers={"authPassword": "bad"})),
                                         s(err("c", "AUTH_FAILED")), c(m(T.PUBLISH, "p", "q")),
                                         s(err("p", "NOT_AUTHENTICATED"))], {("VIBE-CONN-003", C2S, 2)}),
    "ping before connect": ([c(m(T.PING, "p")), s(m(T.PONG, "p"))], set()),
    "publish before connect accepted": (
        [c(m(T.PUBLISH, "p", "q")), s(m(T.PUBLISH_ACK, "p", headers={"messageId": "p", "queueName": "q"}))],
        {("VIBE-CONN-003", C2S, 0), ("VIBE-CONN-003", S2C, 1)}),
    "publish before connect refused with another code": (
        [c(m(T.PUBLISH, "p", "q")), s(err("p", "QUEUE_NOT_FOUND"))],
        {("VIBE-CONN-003", C2S, 0), ("VIBE-CONN-003", S2C, 1)}),
    "pipelined behind connect": ([c(m(T.CONNECT, "c", headers=AUTH)), c(m(T.PING, "p")),
                                  c(m(T.LIST_QUEUES, "l")), HANDSHAKE[1],
                                  s(m(T.PONG, "p")), s(m(T.LIST_QUEUES, "l", payload=[]))], set()),
    "answer after disconnect": (HANDSHAKE + [c(m(T.DISCONNECT, "d")), c(m(T.PING, "p")), s(m(T.PONG, "p"))],
                                {("VIBE-CONN-004", S2C, 4)}),
    # -- answers and correlation ("Command Descriptions") ----------------------------------------
    "pong with another id": (HANDSHAKE + [c(m(T.PING, "p1")), s(m(T.PONG, "p2"))], {("VIBE-PING-001", S2C, 3)}),
    "second pong": (HANDSHAKE + [c(m(T.PING, "p1")), s(m(T.PONG, "p1")), s(m(T.PONG, "p1"))],
                    {("VIBE-PING-001", S2C, 4)}),
    "ping answered with an error": (HANDSHAKE + [c(m(T.PING, "p1")), s(err("p1", "SERVER_ERROR"))],
                                    {("VIBE-PING-001", S2C, 3)}),
    "ping rate limited": (HANDSHAKE + [c(m(T.PING, "p1")), s(err("zz", "RATE_LIMITED"))], set()),
    "ping answered with a publishAck": (HANDSHAKE + [c(m(T.PING, "p1")), s(m(T.PUBLISH_ACK, "p1"))],
                                        {("VIBE-PING-001", S2C, 3)}),
    "publishAck with another id": (
        HANDSHAKE + [c(m(T.PUBLISH, "m1", "q")),
                     s(m(T.PUBLISH_ACK, "m2", headers={"messageId": "m1", "queueName": "q"}))],
        {("VIBE-PUB-001", S2C, 3)}),
    "subscribeAck to nothing": (HANDSHAKE + [s(m(T.SUBSCRIBE_ACK, "s9"))], {("VIBE-SUB-001", S2C, 2)}),
    "unsolicited error": (HANDSHAKE + [s(err("e", "CONNECTION_LIMIT"))], set()),
    "publish without a queue accepted": (
        REAL_HANDSHAKE + [c(m(T.PUBLISH, "m1")), s(m(T.PUBLISH_ACK, "m1"))],
        {("VIBE-ERR-006", C2S, 2), ("VIBE-ERR-006", S2C, 3)}, "vibemq-1.8"),
    "error without its code": (HANDSHAKE + [c(m(T.PUBLISH, "m1", "q")), s(m(T.ERROR, "m1", text="x"))],
                               {("VIBE-ERR-001", S2C, 3)}),
    "queueInfo lacking fields": (HANDSHAKE + [c(m(T.QUEUE_INFO, "i", "q")), s(m(T.QUEUE_INFO, "i", "q", {"name": "q"}))],
                                 {("VIBE-QUEUE-004", S2C, 3)}),
    "queueInfo without payload in the document profile": (
        HANDSHAKE + [c(m(T.QUEUE_INFO, "i", "q")), s(m(T.QUEUE_INFO, "i", "q"))], {("VIBE-QUEUE-004", S2C, 3)}),
    "listQueues not a list": (HANDSHAKE + [c(m(T.LIST_QUEUES, "l")), s(m(T.LIST_QUEUES, "l", payload={"q": 1}))],
                              {("VIBE-QUEUE-005", S2C, 3)}),
    "late answer is paired": (HANDSHAKE + [c(m(T.PING, "p1")), c(m(T.PING, "p2")),
                                           s(m(T.PONG, "p2")), s(m(T.PONG, "p1"))], set()),
    "version byte": (HANDSHAKE + [c(m(T.PING, "p", version=2)), s(m(T.PONG, "p"))], {("VIBE-MSG-003", C2S, 2)}),
    # -- the document's headers (profile document only) ------------------------------------------
    "connectAck without serverVersion": ([HANDSHAKE[0], s(m(T.CONNECT_ACK, "c1", headers={"connectionId": "x"}))],
                                         {("VIBE-CONN-005", S2C, 1)}),
    "subscribeAck without headers": (HANDSHAKE + [c(m(T.SUBSCRIBE, "s", "q")), s(m(T.SUBSCRIBE_ACK, "s"))],
                                     {("VIBE-SUB-001", S2C, 3)}),
    "publishAck naming another queue": (
        HANDSHAKE + [c(m(T.PUBLISH, "m", "q")), s(m(T.PUBLISH_ACK, "m", headers={"messageId": "m", "queueName": "r"}))],
        {("VIBE-PUB-002", S2C, 3)}),
    "unsubscribeAck without queueName": (HANDSHAKE + [c(m(T.UNSUBSCRIBE, "u", "q")), s(m(T.UNSUBSCRIBE_ACK, "u"))],
                                         {("VIBE-SUB-002", S2C, 3)}),
    # -- compression ("Negotiation") ---------------------------------------------------------------
    "server compresses without agreement": (HANDSHAKE + [c(m(T.PING, "p")), s(m(T.PONG, "p", compression=Compression.GZIP))],
                                            {("VIBE-COMP-002", S2C, 3)}),
    "agreed algorithm not offered": (
        [c(m(T.CONNECT, "c", headers={**AUTH, "supported-compression": "gzip"})),
         s(m(T.CONNECT_ACK, "c", headers={"serverVersion": "1", "connectionId": "x", "negotiated-compression": "brotli"}))],
        {("VIBE-COMP-001", S2C, 1)}),
    "agreed although none offered": (
        [c(m(T.CONNECT, "c", headers=AUTH)),
         s(m(T.CONNECT_ACK, "c", headers={"serverVersion": "1", "connectionId": "x", "negotiated-compression": "gzip"}))],
        {("VIBE-COMP-002", S2C, 1)}),
    "server uses another algorithm": (
        [c(m(T.CONNECT, "c", headers={**AUTH, "supported-compression": "brotli,gzip"})),
         s(m(T.CONNECT_ACK, "c", headers={"serverVersion": "1", "connectionId": "x", "negotiated-compression": "gzip"})),
         c(m(T.PING, "p", compression=Compression.GZIP)), s(m(T.PONG, "p", compression=Compression.BROTLI))],
        {("VIBE-COMP-003", S2C, 3)}),
    "client compresses before agreement": ([c(m(T.CONNECT, "c", headers=AUTH, compression=Compression.GZIP)),
                                            HANDSHAKE[1]], {("VIBE-CLIENT-001", C2S, 0)}),
    # -- deliveries and acks -------------------------------------------------------------------------
    "deliver to a queue not subscribed": (HANDSHAKE + [s(deliver("m1"))], {("VIBE-DEL-001", S2C, 2)}),
    "deliver while the subscribe is pending": (HANDSHAKE + [c(m(T.SUBSCRIBE, "s", "q")), s(deliver("m1"))], set()),
    "deliver without the document's headers": (SUBSCRIBED + [s(m(T.DELIVER, "m1", "q"))], {("VIBE-DEL-002", S2C, 4)}),
    "redelivery without more attempts": (SUBSCRIBED + [s(deliver("m1")), s(deliver("m1"))],
                                         {("VIBE-RETRY-001", S2C, 5)}),
    "redelivery after a handled ack": (
        SUBSCRIBED + [s(deliver("m1")), c(m(T.ACK, "a", headers={"messageId": "m1"})),
                      c(m(T.PING, "p")), s(m(T.PONG, "p")), s(deliver("m1", attempts=2))],
        {("VIBE-ACK-001", S2C, 8)}),
    "redelivery crossing the ack": (
        SUBSCRIBED + [s(deliver("m1")), c(m(T.ACK, "a", headers={"messageId": "m1"})), s(deliver("m1", attempts=2))],
        set()),
    "redelivery after a refused ack": (
        SUBSCRIBED + [s(deliver("m1")), c(m(T.ACK, "a", headers={"messageId": "m1"})), s(err("a", "RATE_LIMITED")),
                      c(m(T.PING, "p")), s(m(T.PONG, "p")), s(deliver("m1", attempts=2))],
        set()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_rule(name):
    conversation, expected, *profile = CASES[name]
    assert found(observe(conversation, *profile)) == expected
    assert all(r in CATALOGUE for r, _, _ in expected)


def test_the_real_server_reading_of_ack_and_headers():
    """vibemq-1.8: the Ack's own id names the message; answers carry no document headers."""
    conversation = REAL_HANDSHAKE + [
        c(m(T.SUBSCRIBE, "s", "q")), s(m(T.SUBSCRIBE_ACK, "s", "q")),
        s(m(T.DELIVER, "m1", "q")), c(m(T.ACK, "m1")), c(m(T.PING, "p")), s(m(T.PONG, "p")),
        s(m(T.DELIVER, "m1", "q"))]                                                     # 8
    assert found(observe(conversation, "vibemq-1.8")) == {("VIBE-ACK-001", S2C, 8)}


def _error(data: bytes, **options) -> FrameError:
    with pytest.raises(FrameError) as info:
        codec.decode_all(data, **options)
    return info.value


def _frame(body: bytes, flag: int = 0) -> bytes:
    return len(body).to_bytes(4, "big") + bytes([flag]) + body


_PING = codec.encode_body(m(T.PING, "p"))
_PUBLISH = codec.encode_body(m(T.PUBLISH, "x", "q", {"a": 1}))


@pytest.mark.parametrize("data,requirement", [
    (b"\x00\x00\x00\x01\x00\x00", "VIBE-FRAME-004"),
    (b"\x00\x20\x00\x00\x00", "VIBE-FRAME-005"),
    (_frame(_PING, 7), "VIBE-FRAME-003"),
    (_frame(bytes([1, 77]) + _PING[2:]), "VIBE-MSG-006"),
    (_frame(bytes([1, 10, 0, 0]) + _PING[4:]), "VIBE-MSG-007"),
    (_frame(codec.encode_body(m(T.PUBLISH, "x", "q", "{")).replace(b'"{"', b"{x}")), "VIBE-MSG-002"),
    (_frame(_PING[:4]), "VIBE-MSG-001"),
    # a body that ends inside the payload, or its length: the layout's rule, not the JSON
    # payload's (the error says "the payload"; read by its words, it was VIBE-MSG-002)
    (_frame(_PUBLISH[:_PUBLISH.index(b'{"a"') + 3]), "VIBE-MSG-001"),
    (_frame(_PUBLISH[:_PUBLISH.index(b'{"a"') - 2]), "VIBE-MSG-001"),
    (_frame(b"\x1f\x8b" + bytes(20), 1), "VIBE-COMP-007"),
    (_frame(comp.compress(b"\x00" * 5000, Compression.GZIP), 1), None),
])
def test_decode_errors_map_to_the_rule_of_what_was_read(data, requirement):
    obs = VibeObserver()
    if requirement is None:     # a bomb needs a low limit to be one here
        obs.malformed(C2S, _error(data, limits=codec.VibeLimits(max_decompressed=100)), 2, 1.0)
        assert found(obs) == {("VIBE-FRAME-006", C2S, 2)}
        return
    obs.malformed(C2S, _error(data), 2, 1.0)
    assert found(obs) == {(requirement, C2S, 2)}


def test_json_nesting_beyond_the_kits_bound_is_not_a_violation():
    deep = "[" * 600 + "]" * 600
    body = codec.encode_body(m(T.PUBLISH, "x", "q", 1)).replace(b"\x00\x00\x00\x011", len(deep).to_bytes(4, "big") + deep.encode())
    obs = VibeObserver()
    obs.malformed(C2S, _error(_frame(body)), 2, 1.0)
    assert obs.violations == []


def test_after_a_client_decode_error_answers_to_unseen_messages_are_not_judged():
    obs = observe(HANDSHAKE)
    obs.malformed(C2S, _error(_frame(bytes([1, 77]) + _PING[2:])), 2, 1.0)
    obs.frame(S2C, m(T.PONG, "zz"), 2, 1.0)
    assert found(obs) == {("VIBE-MSG-006", C2S, 2)}


# -- the reference session in each profile is clean ---------------------------------------------

class _Recorded:
    """One client of a reference session: what it sends and what comes back, fed to an
    observer in order."""

    def __init__(self, state, profile, obs):
        self.session = VibeSession(state, SessionConfig(profile=profile, max_messages_per_second=None))
        self.codec_profile = profile
        self.obs = obs
        self.server = codec.Decoder(profile=profile, origin="server")
        self.client = codec.Decoder(profile=profile, origin="client")
        self.index = 0

    def _feed(self, direction, decoder, data, now):
        for message in decoder.feed(data):
            self.obs.frame(direction, message, self.index, now)
            self.index += 1

    def send(self, message, now, compression=None):
        data = codec.encode(message, self.codec_profile, compression)
        self._feed(C2S, self.client, data, now)
        self._feed(S2C, self.server, b"".join(self.session.receive(data, now)), now + 0.001)

    def tick(self, now):
        self._feed(S2C, self.server, b"".join(self.session.tick(now)), now)


@pytest.mark.parametrize("profile", ["document", "vibemq-1.8", "vibemq-1.0"])
def test_the_reference_session_speaks_without_violation(profile):
    state = BrokerState(StateConfig(ack_timeout=1.0, retry_base_delay=0.5, retry_max_delay=1.0))
    sub_obs, pub_obs = VibeObserver(profile), VibeObserver(profile)
    sub, pub = _Recorded(state, profile, sub_obs), _Recorded(state, profile, pub_obs)
    offer = {} if profile == "vibemq-1.0" else {"supported-compression": "gzip"}
    real = profile != "document"
    gzip = None if profile == "vibemq-1.0" else Compression.GZIP
    sub.send(m(T.PING, "sp0"), 0.0)
    sub.send(m(T.CONNECT, "sc", headers={**AUTH, **offer}), 0.1)
    pub.send(m(T.CONNECT, "pc", headers={**AUTH, **offer}), 0.1)
    pub.send(m(T.CREATE_QUEUE, "cq", "q"), 0.2)
    sub.send(m(T.SUBSCRIBE, "s1", "q"), 0.3)
    pub.send(m(T.PUBLISH, "m1", "q", {"n": 1}), 0.4)
    pub.send(m(T.PUBLISH, "m2", "q", {"big": "x" * 3000}), 0.5, compression=gzip)
    sub.tick(0.6)                                      # both deliveries
    sub.send(m(T.ACK, "m1") if real else m(T.ACK, "a1", headers={"messageId": "m1"}), 0.7)
    sub.send(m(T.PING, "sp1"), 0.8)
    sub.tick(2.0)                                      # m2 again, unacked
    sub.send(m(T.ACK, "m2") if real else m(T.ACK, "a2", headers={"messageId": "m2"}), 2.1)
    pub.send(m(T.QUEUE_INFO, "qi", "q"), 2.2)
    pub.send(m(T.LIST_QUEUES, "lq"), 2.3)
    pub.send(m(T.DELETE_QUEUE, "dq", "nope"), 2.4)
    pub.send(m(T.PUBLISH, "m3"), 2.5)                  # no queue: refused
    sub.send(m(T.UNSUBSCRIBE, "u1", "q"), 2.6)
    sub.send(m(T.DISCONNECT, "x"), 2.7)
    for obs in (sub_obs, pub_obs):
        obs.finish(3.0)
    assert [(v.requirement, v.direction) for v in sub_obs.violations] == []
    assert [(v.requirement, v.direction) for v in pub_obs.violations] == [("VIBE-ERR-006", C2S)]
    assert sum(1 for e in sub_obs.exchanges) == 5     # ping, connect, subscribe, ping, unsubscribe
    assert sub.index > 10 and pub.index > 14


# -- a capture with injected violations, through the pipeline ---------------------------------

def test_pcap_with_injected_violations(tmp_path):
    big = {"text": "y" * 4000}
    frames = [
        (C2S, m(T.CONNECT, "c", headers={**AUTH, "supported-compression": "gzip"}), None),
        (S2C, m(T.CONNECT_ACK, "c", headers={"serverVersion": "1", "connectionId": "x",
                                             "negotiated-compression": "gzip"}), None),
        (C2S, m(T.SUBSCRIBE, "s", "q"), None),
        (S2C, m(T.SUBSCRIBE_ACK, "s", headers={"queueName": "q", "subscriptionId": "s"}), None),
        (C2S, m(T.PUBLISH, "m1", "q", big), Compression.GZIP),                     # 4
        (S2C, deliver("m1"), Compression.BROTLI),                                  # 5: COMP-003
        (S2C, m(T.PUBLISH_ACK, "m1", headers={"messageId": "m1", "queueName": "q"}), None),
        (C2S, m(T.PING, "p1"), None),
        (S2C, m(T.PONG, "p2"), None),                                              # 8: PING-001
        (S2C, deliver("m9", "other"), None),                                       # 9: DEL-001
        (C2S, m(T.LIST_QUEUES, "l"), None),
        (S2C, m(T.LIST_QUEUES, "l", payload=["q"]), Compression.GZIP),
        (C2S, m(T.DISCONNECT, "d"), None),
        (C2S, m(T.PING, "p3"), None),
        (S2C, m(T.PONG, "p3"), None),                                              # 14: CONN-004
    ]
    injected = {("VIBE-COMP-003", S2C, 5), ("VIBE-PING-001", S2C, 8), ("VIBE-DEL-001", S2C, 9),
                ("VIBE-CONN-004", S2C, 14)}
    path = tmp_path / "injected.pcap"
    t = 70.0
    with PcapWriter(str(path)) as w:
        conv = TcpConversation(w, ("10.2.2.1", 41000), ("10.2.2.2", 2925), t)
        for direction, message, flag in frames:
            t += 0.004
            conv.data(direction, codec.encode(message, compression=flag or Compression.NONE), t)
        conv.close("c2s", t + 0.01)
        conv.close("s2c", t + 0.02)
    tables = analyze([str(path)], "vibemq")
    assert {(v["requirement"], v["direction"], v["index"]) for v in tables["violations"]} == injected
    rows = {r["index"]: r for r in tables["frames"]}
    assert len(rows) == len(frames)
    answered = {i for i, r in rows.items() if r["latency"] is not None}
    assert answered == {1, 3, 6, 8, 11, 14}
    assert rows[6]["latency"] == pytest.approx(0.008)
    assert all(rows[i]["latency"] == pytest.approx(0.004) for i in answered - {6})


# -- the repository's captures ---------------------------------------------------------------

def _violations(name: str) -> list[dict]:
    return analyze([os.path.join(CAPTURES, name)], "vibemq")["violations"]


def test_reference_client_capture_is_clean():
    assert _violations("client.pcap.gz") == []


def test_suite_capture_has_client_violations_only():
    """The reference broker is right; the suite's deliberately bad frames are the client's."""
    found = _violations("suite.pcap.gz")
    assert [v for v in found if v["direction"] == S2C] == []
    requirements = {v["requirement"] for v in found}
    assert {"VIBE-FRAME-003", "VIBE-FRAME-004", "VIBE-MSG-006", "VIBE-CONN-003",
            "VIBE-ERR-006"} <= requirements
    assert requirements <= set(CATALOGUE)
