"""The BlipMQ observer (wirecheck/reference_impl/blipmq/observer.py): each rule caught with its
requirement, side and frame index; a correct conversation clean; a pcap with injected
violations; the repository's captures."""
from __future__ import annotations

import os

import pytest

from wirecheck.conformance.captures.pcapfile import PcapWriter, TcpConversation
from wirecheck.conformance.requirements import catalogue
from wirecheck.pipeline.local import analyze
from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import Ack, Auth, Hello, Nack, Ping, Poll, Pong, Publish, Subscribe
from wirecheck.reference_impl.blipmq.observer import BlipObserver
from wirecheck.reference_impl.blipmq.session import BlipSession
from wirecheck.reference_impl.blipmq.state import BrokerState
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.core.observer import C2S, S2C

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CAPTURES = os.path.join(ROOT, "captures", "blipmq")
CATALOGUE = catalogue("wirecheck.conformance.requirements.blipmq")


def c(frame):
    return (C2S, frame)


def s(frame):
    return (S2C, frame)


#: HELLO, ACK, AUTH, ACK: indexes 0-3.
HANDSHAKE = [c(Hello(1)), s(Ack(1, 0)), c(Auth(2, "dev-key")), s(Ack(2, 0))]


def observe(conversation, profile=None) -> BlipObserver:
    """Feed ``conversation`` (direction, frame) pairs, 10 ms apart."""
    obs = BlipObserver(profile)
    for index, (direction, frame) in enumerate(conversation):
        obs.frame(direction, frame, index, 100.0 + index * 0.01)
    obs.finish(100.0 + len(conversation) * 0.01)
    return obs


def found(obs) -> set:
    return {(v.requirement, v.direction, v.index) for v in obs.violations}


def test_the_registry_names_the_observer():
    assert isinstance(registry.get("blipmq").make_observer(), BlipObserver)


def test_a_correct_conversation_has_no_violation_and_pairs_every_answer():
    conversation = HANDSHAKE + [
        c(Ping(3)), s(Pong(3)),                                      # 4, 5
        c(Subscribe(4, "orders", 1)), s(Ack(4, 7)),                  # 6, 7
        c(Subscribe(5, "ticks", 0)), s(Ack(5, 8)),                   # 8, 9
        c(Publish(6, 1, "orders", b"one")),                          # 10: no answer
        c(Publish(7, 0, "ticks", b"")),                              # 11
        c(Poll(8, 7)), s(Publish(1, 1, "orders", b"one")),           # 12, 13: QoS1, tag 1
        c(Ack(1, 7)),                                                # 14: settles tag 1
        c(Poll(9, 8)), s(Publish(9, 0, "ticks", b"")),               # 15, 16: QoS0, POLL's id
        c(Poll(10, 7)),                                              # 17: nothing to deliver
        c(Ack(99, 7)), s(Nack(99, 404, "unknown subscription or delivery tag")),   # 18, 19
        c(Ping(11)), s(Pong(11)),                                    # 20, 21
        c(Nack(12, 400, "client nack")), c(Pong(13)),                # 22, 23: ignored after AUTH
        c(Hello(14, 2)),                                             # 24: second HELLO
        s(Nack(14, 400, "HELLO already performed")),                 # 25
    ]
    obs = observe(conversation)
    assert obs.violations == []
    pairs = {(e.request, e.response, e.kind) for e in obs.exchanges}
    assert pairs == {(0, 1, "HELLO"), (2, 3, "AUTH"), (4, 5, "PING"), (6, 7, "SUBSCRIBE"),
                     (8, 9, "SUBSCRIBE"), (12, 13, "POLL"), (15, 16, "POLL"), (18, 19, "ACK"),
                     (20, 21, "PING"), (24, 25, "HELLO")}
    assert all(e.latency == pytest.approx((e.response - e.request) * 0.01) for e in obs.exchanges)


def test_frame_returns_the_exchange_of_an_answer():
    obs = BlipObserver()
    assert obs.frame(C2S, Hello(1), 0, 10.0) is None
    exchange = obs.frame(S2C, Ack(1, 0), 1, 10.25)
    assert (exchange.request, exchange.response, exchange.kind) == (0, 1, "HELLO")
    assert exchange.latency == pytest.approx(0.25)
    assert obs.exchanges == [exchange]


def test_pipelined_requests_are_judged_in_the_phase_they_were_handled():
    """HELLO, AUTH and PING in one write: the PING waits behind the AUTH, so it is not early."""
    obs = observe([c(Hello(1)), c(Auth(2, "k")), c(Ping(3)), s(Ack(1, 0)), s(Ack(2, 0)), s(Pong(3))])
    assert obs.violations == []


CASES = {
    # -- the handshake and its order ("HELLO / AUTH Handshake") --------------------------------
    "auth before hello": ([c(Auth(1, "k")), s(Nack(1, 400, "HELLO not performed"))],
                          {("BLIP-AUTH-001", C2S, 0)}),
    "auth before hello accepted": ([c(Auth(1, "k")), s(Ack(1, 0))],
                                   {("BLIP-AUTH-001", C2S, 0), ("BLIP-AUTH-001", S2C, 1)}),
    "second auth": (HANDSHAKE + [c(Auth(5, "k")), s(Nack(5, 400, "already authenticated"))],
                    {("BLIP-AUTH-002", C2S, 4)}),
    "second auth accepted": (HANDSHAKE + [c(Auth(5, "k")), s(Ack(5, 0))],
                             {("BLIP-AUTH-002", C2S, 4), ("BLIP-AUTH-002", S2C, 5)}),
    "ping before auth": ([c(Hello(1)), s(Ack(1, 0)), c(Ping(2)), s(Nack(2, 401, "unauthenticated"))],
                         {("BLIP-CLIENT-006", C2S, 2)}),
    "ping before auth answered": ([c(Hello(1)), s(Ack(1, 0)), c(Ping(2)), s(Pong(2))],
                                  {("BLIP-CLIENT-006", C2S, 2), ("BLIP-AUTH-006", S2C, 3)}),
    "publish before hello unanswered": (
        [c(Publish(1, 0, "t", b"")), c(Hello(2)), s(Ack(2, 0))],
        {("BLIP-CLIENT-006", C2S, 0), ("BLIP-AUTH-006", S2C, 0)}),
    "hello of another version accepted": ([c(Hello(1, 2)), s(Ack(1, 0))], {("BLIP-HELLO-002", S2C, 1)}),
    "hello refused": ([c(Hello(1)), s(Nack(1, 426, "unsupported protocol version"))],
                      {("BLIP-HELLO-001", S2C, 1)}),
    "second hello accepted": (HANDSHAKE + [c(Hello(5)), s(Ack(5, 0))], {("BLIP-HELLO-003", S2C, 5)}),
    "auth refused with 400": ([c(Hello(1)), s(Ack(1, 0)), c(Auth(2, "k")), s(Nack(2, 400, "no"))],
                              {("BLIP-AUTH-004", S2C, 3)}),
    "auth acked with a subscription id": ([c(Hello(1)), s(Ack(1, 0)), c(Auth(2, "k")), s(Ack(2, 9))],
                                          {("BLIP-AUTH-005", S2C, 3)}),
    # -- requests and their answers ("Payload Formats") ------------------------------------------
    "empty topic not refused": (HANDSHAKE + [c(Publish(5, 0, "", b"x")), c(Ping(6)), s(Pong(6))],
                                {("BLIP-PUB-002", C2S, 4), ("BLIP-PUB-002", S2C, 4)}),
    "publish qos 2 refused": (HANDSHAKE + [c(Publish(5, 2, "t", b"")), s(Nack(5, 400, "invalid QoS value"))],
                              {("BLIP-PUB-003", C2S, 4)}),
    "publish qos 2 not refused": (HANDSHAKE + [c(Publish(5, 2, "t", b"")), c(Ping(6)), s(Pong(6))],
                                  {("BLIP-PUB-003", C2S, 4), ("BLIP-PUB-003", S2C, 4)}),
    "valid publish answered": (HANDSHAKE + [c(Publish(5, 0, "t", b"")), s(Nack(5, 400, "?"))],
                               {("BLIP-PUB-004", S2C, 5)}),
    "qos1 publish failing in the wal": (HANDSHAKE + [c(Publish(5, 1, "t", b"")),
                                                     s(Nack(5, 500, "durable publish failed: disk"))], set()),
    "subscribe empty topic": (HANDSHAKE + [c(Subscribe(5, "", 0)), s(Nack(5, 400, "empty topic"))],
                              {("BLIP-SUB-002", C2S, 4)}),
    "subscribe qos 3 accepted": (HANDSHAKE + [c(Subscribe(5, "t", 3)), s(Ack(5, 4))],
                                 {("BLIP-SUB-003", C2S, 4), ("BLIP-SUB-003", S2C, 5)}),
    "subscribe acked with id 0": (HANDSHAKE + [c(Subscribe(5, "t", 0)), s(Ack(5, 0))],
                                  {("BLIP-SUB-004", S2C, 5)}),
    "subscribe refused": (HANDSHAKE + [c(Subscribe(5, "t", 0)), s(Nack(5, 404, "?"))],
                          {("BLIP-SUB-004", S2C, 5)}),
    "subscription id given twice": (HANDSHAKE + [c(Subscribe(5, "a", 0)), s(Ack(5, 4)),
                                                 c(Subscribe(6, "b", 0)), s(Ack(6, 4))],
                                    {("BLIP-SUB-005", S2C, 7)}),
    "ack of subscription 0 not refused": (HANDSHAKE + [c(Ack(5, 0)), c(Ping(6)), s(Pong(6))],
                                          {("BLIP-ACK-002", C2S, 4), ("BLIP-ACK-002", S2C, 4)}),
    "ack refused with 400": (HANDSHAKE + [c(Ack(5, 3)), s(Nack(5, 400, "?"))], {("BLIP-ACK-003", S2C, 5)}),
    "poll of subscription 0": (HANDSHAKE + [c(Poll(5, 0)), s(Nack(5, 400, "subscription_id must be non-zero"))],
                               {("BLIP-POLL-002", C2S, 4)}),
    "poll refused with 400": (HANDSHAKE + [c(Poll(5, 3)), s(Nack(5, 400, "?"))], {("BLIP-POLL-003", S2C, 5)}),
    "ping refused": (HANDSHAKE + [c(Ping(5)), s(Nack(5, 400, "?"))], {("BLIP-PING-001", S2C, 5)}),
    "ping unanswered": (HANDSHAKE + [c(Ping(5)), c(Ping(6)), s(Pong(6))], {("BLIP-PING-001", S2C, 4)}),
    "nack code outside the table": (HANDSHAKE + [c(Publish(5, 0, "", b"")), s(Nack(5, 418, "teapot"))],
                                    {("BLIP-PUB-002", C2S, 4), ("BLIP-NACK-002", S2C, 5),
                                     ("BLIP-PUB-002", S2C, 5)}),
    # -- correlation ("Frame Layout": the correlation id is echoed) ------------------------------
    "pong to nothing": (HANDSHAKE + [s(Pong(9))], {("BLIP-FRAME-005", S2C, 4)}),
    "pong with another id": (HANDSHAKE + [c(Ping(5)), s(Pong(6))], {("BLIP-FRAME-005", S2C, 5)}),
    "second pong": (HANDSHAKE + [c(Ping(5)), s(Pong(5)), s(Pong(5))], {("BLIP-FRAME-005", S2C, 6)}),
    "a client nack and a ping share an id": (HANDSHAKE + [c(Nack(5, 400, "stray")), c(Ping(5)), s(Pong(5))],
                                             set()),
    "an answer to a client nack is not judged": (HANDSHAKE + [c(Nack(5, 400, "stray")), s(Nack(5, 400, "?"))],
                                                 set()),
    "delivery without poll": (HANDSHAKE + [s(Publish(1, 1, "t", b""))], {("BLIP-PUB-007", S2C, 4)}),
    # -- deliveries and QoS ("PUBLISH" as delivery, "ACK"; SPEC_NOTES) ---------------------------
    "delivery of another topic": (HANDSHAKE + [c(Subscribe(5, "a", 1)), s(Ack(5, 3)),
                                               c(Poll(6, 3)), s(Publish(1, 1, "b", b""))],
                                  {("BLIP-PUB-007", S2C, 7)}),
    "qos1 delivery on a qos0 subscription": (HANDSHAKE + [c(Subscribe(5, "a", 0)), s(Ack(5, 3)),
                                                          c(Poll(6, 3)), s(Publish(1, 1, "a", b""))],
                                             {("BLIP-PUB-010", S2C, 7)}),
    "delivery with qos 2": (HANDSHAKE + [c(Poll(6, 3)), s(Publish(6, 2, "a", b""))], {("BLIP-PUB-001", S2C, 5)}),
    "qos0 delivery with another id": (HANDSHAKE + [c(Poll(6, 3)), s(Publish(77, 0, "a", b""))],
                                      {("BLIP-PUB-009", S2C, 5)}),
    "redelivery after ack": (HANDSHAKE + [c(Subscribe(5, "a", 1)), s(Ack(5, 3)),
                                          c(Poll(6, 3)), s(Publish(1, 1, "a", b"m")),
                                          c(Ack(1, 3)), c(Poll(7, 3)), s(Publish(1, 1, "a", b"m"))],
                             {("BLIP-QOS1-004", S2C, 10)}),
    "redelivery after a refused ack": (HANDSHAKE + [c(Subscribe(5, "a", 1)), s(Ack(5, 3)),
                                                    c(Poll(6, 3)), s(Publish(1, 1, "a", b"m")),
                                                    c(Ack(1, 3)), s(Nack(1, 404, "unknown")),
                                                    c(Poll(7, 3)), s(Publish(1, 1, "a", b"m"))], set()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_rule(name):
    conversation, expected = CASES[name]
    assert found(observe(conversation)) == expected
    assert all(r in CATALOGUE for r, _, _ in expected)


def _error(data: bytes) -> FrameError:
    with pytest.raises(FrameError) as info:
        codec.decode_all(data)
    return info.value


@pytest.mark.parametrize("data,direction,requirement", [
    (b"\x00\x00\x00\x05" + bytes(5), C2S, "BLIP-FRAME-002"),
    (b"\x01\x00\x00\x01" + bytes(9), C2S, "BLIP-FRAME-003"),
    (codec.encode_raw(0xEE, 1), C2S, "BLIP-FRAME-006"),
    (codec.encode_raw(codec.FrameType.HELLO, 1, b"\x00"), C2S, "BLIP-HELLO-004"),
    (codec.encode_raw(codec.FrameType.AUTH, 1, b"\x00\x05ab"), C2S, "BLIP-AUTH-003"),
    (codec.encode_raw(codec.FrameType.PUBLISH, 1, b"\x00"), C2S, "BLIP-PUB-001"),
    (codec.encode_raw(codec.FrameType.SUBSCRIBE, 1, b"\x00\x01\xff\x00"), C2S, "BLIP-SUB-001"),
    (codec.encode_raw(codec.FrameType.POLL, 1, b"\x00"), C2S, "BLIP-POLL-001"),
    (codec.encode_raw(codec.FrameType.ACK, 1, bytes(9)), S2C, "BLIP-ACK-001"),
    (codec.encode_raw(codec.FrameType.PONG, 1, b"x"), S2C, "BLIP-PING-001"),
    (codec.encode_raw(codec.FrameType.NACK, 1, b"\x01\x90\x00\x09ab"), S2C, "BLIP-NACK-001"),
])
def test_decode_errors_map_to_the_rule_of_what_was_read(data, direction, requirement):
    obs = BlipObserver()
    obs.malformed(direction, _error(data), 3, 1.0)
    assert found(obs) == {(requirement, direction, 3)}


def test_after_a_client_decode_error_answers_to_unseen_frames_are_not_judged():
    obs = BlipObserver()
    for index, (direction, frame) in enumerate(HANDSHAKE):
        obs.frame(direction, frame, index, 1.0)
    obs.malformed(C2S, _error(codec.encode_raw(codec.FrameType.POLL, 9, b"")), 4, 1.0)
    obs.frame(S2C, Nack(9, 400, "invalid POLL payload"), 4, 1.0)
    assert found(obs) == {("BLIP-POLL-001", C2S, 4)}


# -- a capture with injected violations, through the pipeline ---------------------------------

INJECTED_FRAMES = [
    (C2S, Hello(1)), (S2C, Ack(1, 0)),
    (C2S, Ping(2)), (S2C, Pong(2)),                       # 2, 3: PING before AUTH, answered
    (C2S, Auth(3, "dev-key")), (S2C, Ack(3, 0)),
    (C2S, Subscribe(4, "orders", 0)), (S2C, Ack(4, 5)),
    (C2S, Poll(5, 5)), (S2C, Publish(1, 1, "orders", b"x")),  # 8, 9: QoS1 on a QoS0 subscription
    (C2S, Ping(6)), (S2C, Nack(6, 418, "teapot")),        # 10, 11: bad code, PING refused
    (S2C, Pong(99)),                                      # 12: answers nothing
    (C2S, Ping(7)), (S2C, Pong(7)),
]
INJECTED = {("BLIP-CLIENT-006", C2S, 2), ("BLIP-AUTH-006", S2C, 3), ("BLIP-PUB-010", S2C, 9),
            ("BLIP-NACK-002", S2C, 11), ("BLIP-PING-001", S2C, 11), ("BLIP-FRAME-005", S2C, 12)}


def write_injected(path, client=("10.1.1.1", 40000)) -> None:
    """A capture of :data:`INJECTED_FRAMES`, 5 ms apart (tests/pipeline/test_pipeline.py uses it too)."""
    t = 50.0
    with PcapWriter(str(path)) as w:
        conv = TcpConversation(w, client, ("10.1.1.2", 5555), t)
        for direction, frame in INJECTED_FRAMES:
            t += 0.005
            conv.data(direction, codec.encode(frame), t)
        conv.close("c2s", t + 0.01)
        conv.close("s2c", t + 0.02)


def test_pcap_with_injected_violations(tmp_path):
    frames, injected = INJECTED_FRAMES, INJECTED
    path = tmp_path / "injected.pcap"
    write_injected(path)
    tables = analyze([str(path)], "blipmq")
    assert {(v["requirement"], v["direction"], v["index"]) for v in tables["violations"]} == injected
    rows = {r["index"]: r for r in tables["frames"]}
    assert len(rows) == len(frames)
    answered = {i for i, r in rows.items() if r["latency"] is not None}
    assert answered == {1, 3, 5, 7, 9, 11, 14}
    assert all(rows[i]["latency"] == pytest.approx(0.005) for i in answered)


# -- the repository's captures ---------------------------------------------------------------

def _violations(name: str) -> list[dict]:
    return analyze([os.path.join(CAPTURES, name)], "blipmq")["violations"]


def test_reference_client_capture_is_clean():
    assert _violations("client.pcap.gz") == []


def test_suite_capture_has_client_violations_only():
    """The reference broker is right; the suite's deliberately bad frames are the client's."""
    found = _violations("suite.pcap.gz")
    assert [v for v in found if v["direction"] == S2C] == []
    requirements = {v["requirement"] for v in found}
    assert {"BLIP-FRAME-002", "BLIP-FRAME-003", "BLIP-FRAME-006", "BLIP-CLIENT-006",
            "BLIP-PUB-002"} <= requirements
    assert requirements <= set(CATALOGUE)


# -- the reference session is clean ------------------------------------------------------------

def test_the_reference_session_speaks_without_violation():
    """Two clients of the reference broker's session (shared state): handshake, subscriptions,
    publishes, deliveries, a QoS1 redelivery after the backoff, ACKs, refusals."""
    state = BrokerState(retry_backoff=0.1)
    peers = {}
    for name in ("sub", "pub"):
        obs = BlipObserver()
        peers[name] = (BlipSession(state), obs, codec.Decoder(), [0])

    def send(name, frame, now):
        session, obs, decoder, index = peers[name]
        obs.frame(C2S, frame, index[0], now)
        index[0] += 1
        for answer in decoder.feed(b"".join(session.receive(codec.encode(frame), now))):
            obs.frame(S2C, answer, index[0], now + 0.001)
            index[0] += 1

    for name in peers:
        send(name, Hello(1), 0.0)
        send(name, Auth(2, "dev-key"), 0.0)
    send("sub", Subscribe(3, "orders", 1), 0.1)           # subscription 1
    send("sub", Subscribe(4, "ticks", 0), 0.1)            # subscription 2
    send("pub", Publish(3, 1, "orders", b"a"), 0.2)
    send("pub", Publish(4, 1, "orders", b"b"), 0.2)
    send("pub", Publish(5, 1, "ticks", b"t"), 0.2)        # QoS1 message, QoS0 subscription
    send("pub", Publish(6, 0, "", b""), 0.2)              # refused: empty topic (client's fault)
    send("sub", Poll(5, 1), 0.3)                          # a, tag 1
    send("sub", Ack(1, 1), 0.3)
    send("sub", Poll(6, 1), 0.3)                          # b, tag 2, not acked
    send("sub", Poll(7, 2), 0.3)                          # t, QoS0
    send("sub", Poll(8, 1), 0.35)                         # nothing yet
    send("sub", Poll(9, 1), 0.5)                          # b again after the backoff, tag 2
    send("sub", Ack(2, 1), 0.5)
    send("sub", Ack(2, 1), 0.5)                           # twice: 404
    send("sub", Poll(10, 1), 0.6)                         # nothing
    send("sub", Ping(11), 0.7)
    sub, pub = peers["sub"][1], peers["pub"][1]
    assert sub.violations == []
    assert [(v.requirement, v.direction) for v in pub.violations] == [("BLIP-PUB-002", C2S)]
    kinds = sorted(e.kind for e in sub.exchanges)
    assert kinds == ["ACK", "AUTH", "HELLO", "PING", "POLL", "POLL", "POLL", "POLL", "SUBSCRIBE", "SUBSCRIBE"]
