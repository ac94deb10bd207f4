"""The Micromessage2 observer (wirecheck/reference_impl/micromessage2/observer.py): each rule on frames fed
straight in, a pcap with injected violations through the pipeline, and the repository's
captures."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from wirecheck.conformance.captures.pcapfile import PcapWriter, TcpConversation
from wirecheck.pipeline.local import analyze
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.core.observer import C2S, S2C
from wirecheck.reference_impl.micromessage2 import codec
from wirecheck.reference_impl.micromessage2.codec import Command, Error, ExtensionFrame, Handshake, Message
from wirecheck.reference_impl.micromessage2.observer import MM2Observer
from wirecheck.reference_impl.micromessage2.syntax import parse_extensions

SPEC = registry.get("micromessage2")
CAPTURES = Path(__file__).resolve().parents[3] / "captures" / "micromessage2"
SEQ = struct.Struct(">H")


def hs(required: str = "", optional: str = "", major: int = 1, minor: int = 0, identity: str = "c",
       strict: bool = True) -> Handshake:
    return Handshake(identity, parse_extensions(required, strict), parse_extensions(optional, strict),
                     major, minor)


def ack(ext_id: int, seq: int) -> ExtensionFrame:
    return ExtensionFrame(ext_id, SEQ.pack(seq))


def msg(seq: int, payload: bytes = b"x", dest: str = "topic/t") -> Message:
    return Message(seq, dest, payload)


def run(frames, profile=None, closes=()):
    """Feed ``(direction, frame)`` pairs (index = position, time = index / 100); ``closes``:
    ``(direction, how, index)`` calls of ``closed``. Returns (observer, [(req, dir, index)])."""
    obs = MM2Observer(profile)
    for i, (direction, frame) in enumerate(frames):
        obs.frame(direction, frame, i, i / 100)
        for d, how, at in closes:
            if at == i:
                obs.closed(d, how, i + 1, i / 100)
    return obs, [(v.requirement, v.direction, v.index) for v in obs.violations]


def opened(required: str = "", optional: str = "", reply_required: str = ""):
    """The three handshakes of a conversation that agrees ``required``/``optional`` (and what
    the server required, which the final handshake repeats)."""
    final = ";".join(filter(None, [required, reply_required]))
    strict = "MessagesPerAck" not in required      # the real implementation's property name
    return [(C2S, hs(required, optional, strict=strict)), (S2C, hs(reply_required, identity="s")),
            (C2S, hs(final, optional, strict=strict))]


# --- a correct conversation ---------------------------------------------------------------------

def test_a_correct_conversation_has_no_violations_and_pairs_acks():
    # batch-ack:max-count=2 (ids: pubsub 1, batch-ack 2), messages both ways, acks cumulative
    frames = opened("pubsub;batch-ack:max-count=2") + [
        (C2S, Command("subscribe", (("destination", "topic/t"),))),
        (S2C, msg(1)), (S2C, msg(2)),                       # 4, 5: the window is full
        (C2S, ack(2, 2)),                                   # 6: both acked
        (S2C, msg(3)),                                      # 7
        (C2S, msg(1)), (C2S, msg(2)), (S2C, ack(2, 2)),     # 8, 9, 10
        (C2S, msg(3)), (S2C, ack(2, 3)), (C2S, ack(2, 3)),  # 11, 12, 13
    ]
    obs, found = run(frames)
    assert found == []
    pairs = [(e.request, e.response, e.kind) for e in obs.exchanges]
    assert pairs == [(0, 1, "Handshake"), (4, 6, "Message"), (5, 6, "Message"),
                     (8, 10, "Message"), (9, 10, "Message"), (11, 12, "Message"),
                     (7, 13, "Message")]
    assert obs.exchanges[1].latency == pytest.approx(0.02)


def test_a_cumulative_ack_across_the_wrap_returns_the_named_message():
    obs = MM2Observer()
    for i, (d, f) in enumerate(opened("batch-ack:max-count=5")):
        obs.frame(d, f, i, 0.0)
    obs.pushers[S2C].last = 65533                       # the pusher is near the wrap
    for i, seq in enumerate((65534, 65535, 1), 3):
        assert obs.frame(S2C, msg(seq), i, 1.0) is None
    exchange = obs.frame(C2S, ack(1, 1), 6, 1.5)
    assert (exchange.request, exchange.response) == (5, 6)
    assert [e.request for e in obs.exchanges[1:]] == [3, 4, 5]   # "ACK all five messages"
    assert obs.violations == []


# --- handshake order and refusals ---------------------------------------------------------------

def test_the_server_speaking_first():
    _, found = run([(S2C, hs(identity="s")), (C2S, hs()), (C2S, hs())])
    assert found == [("MM2-HS-001", S2C, 0)]


def test_a_server_frame_before_the_final_handshake():
    _, found = run([(C2S, hs("pubsub")), (S2C, hs()), (S2C, msg(1)), (C2S, hs("pubsub"))])
    assert found == [("MM2-HS-001", S2C, 2)]


def test_the_final_handshake_before_the_reply():
    _, found = run([(C2S, hs()), (C2S, hs()), (S2C, hs())])
    assert found == [("MM2-HS-001", C2S, 1)]


def test_a_lower_major_version_the_server_lacks_must_be_refused():
    _, found = run([(C2S, hs(major=0)), (S2C, hs())])
    assert found == [("MM2-HS-004", S2C, 1)]
    # a server that speaks 0.x answers in it: the lowest version is used
    _, found = run([(C2S, hs(major=0)), (S2C, hs(major=0))])
    assert found == []
    # refused, then closed: right
    _, found = run([(C2S, hs(major=0)), (S2C, Error("no"))], closes=[(S2C, "fin", 1)])
    assert found == []
    # refused, then more from the server: it must disconnect directly after
    _, found = run([(C2S, hs(major=0)), (S2C, Error("no")), (S2C, Error("still here")),
                    (S2C, Error("and here"))])
    assert found == [("MM2-HS-004", S2C, 2)]


def test_a_higher_major_version_may_get_the_servers_own():
    """"If versions differ the lowest version should be used": 1.x to a 2.x client is right,
    and so is a refusal (semantic versioning: majors need not talk)."""
    _, found = run([(C2S, hs(major=2)), (S2C, hs())])
    assert found == []
    _, found = run([(C2S, hs(major=2)), (S2C, Error("no"))], closes=[(S2C, "fin", 1)])
    assert found == []


def test_a_final_handshake_without_the_servers_required_extension():
    base = [(C2S, hs("pubsub")), (S2C, hs("json")), (C2S, hs("pubsub"))]
    _, found = run(base + [(S2C, msg(1))])
    assert found == [("MM2-HS-008", C2S, 2), ("MM2-HS-015", S2C, 3)]
    _, found = run(base + [(S2C, Error("json is required")), (S2C, msg(1))])
    assert found == [("MM2-HS-008", C2S, 2), ("MM2-HS-015", S2C, 4)]
    _, found = run(base, closes=[(S2C, "fin", 2)])
    assert found == [("MM2-HS-008", C2S, 2), ("MM2-HS-015", S2C, 3)]
    _, found = run(base, closes=[(S2C, "end", 2)])      # the capture ended: nothing known
    assert found == [("MM2-HS-008", C2S, 2)]


def test_a_refused_offer_then_more_frames():
    frames = [(C2S, hs("x-unknown")), (S2C, Error("x-unknown is not supported")), (S2C, hs())]
    _, found = run(frames)
    assert found == [("MM2-HS-006", S2C, 2)]
    # SharpMessaging keeps the connection and takes a new offer (SPEC_NOTES): waived
    again = frames[:2] + [(C2S, hs()), (S2C, hs()), (C2S, hs())]
    _, found = run(again, profile="sharpmessaging")
    assert found == []
    assert run(again)[1] == [("MM2-HS-006", S2C, 3)]


def test_a_refused_final_handshake_then_more_frames():
    _, found = run(opened("pubsub") + [(S2C, Error("unsupported")), (S2C, msg(1))])
    assert found == [("MM2-HS-007", S2C, 4)]
    # an ERROR after other client frames is not a refusal of the handshake
    _, found = run(opened("pubsub") + [(C2S, Command("nope")), (S2C, Error("unknown")), (S2C, msg(1))])
    assert found == []


def test_a_client_that_refuses_must_disconnect():
    _, found = run([(C2S, hs()), (S2C, hs("x-server-only")), (C2S, Error("cannot")),
                    (C2S, msg(1))])
    assert found == [("MM2-HS-010", C2S, 3)]


def test_the_reply_uses_the_lower_minor_version():
    frames = [(C2S, hs(minor=0)), (S2C, hs(minor=1)), (C2S, hs())]
    assert run(frames)[1] == [("MM2-HS-003", S2C, 1)]
    assert run(frames, profile="sharpmessaging")[1] == []   # always answers 1.1 (SPEC_NOTES)
    assert run([(C2S, hs(minor=1)), (S2C, hs(minor=0)), (C2S, hs())])[1] == []


# --- sequence numbers, windows, ack frames --------------------------------------------------------

def test_sequence_numbers_count_from_one_and_wrap_to_one():
    # the first number is SPEC_NOTES' 1 (MM2-MSG-007, a SHOULD); from there each follows the one
    # before (MM2-MSG-002, the document's ack algorithm)
    _, found = run(opened() + [(S2C, msg(2))])
    assert found == [("MM2-MSG-007", S2C, 3)]
    _, found = run(opened() + [(S2C, msg(65533)), (S2C, msg(65534))])
    assert found == [("MM2-MSG-007", S2C, 3)]
    _, found = run(opened() + [(C2S, msg(1)), (C2S, msg(3))])
    assert found == [("MM2-MSG-002", C2S, 4)]
    obs = MM2Observer()
    for i, (d, f) in enumerate(opened()):
        obs.frame(d, f, i, 0.0)
    obs.pushers[S2C].last = 65534
    for i, seq in enumerate((65535, 0, 1, 3), 3):
        obs.frame(S2C, msg(seq), i, 0.0)
    assert [(v.requirement, v.index) for v in obs.violations] == [("MM2-MSG-003", 4), ("MM2-MSG-002", 6)]


@pytest.mark.parametrize("ext,window,rule", [("batch-ack:max-count=2", 2, "MM2-ACK-003"),
                                             ("batch-ack:count=2", 2, "MM2-ACK-003"),
                                             ("batch-ack", 10, "MM2-ACK-004"),
                                             ("ack", 1, "MM2-ACK-002")])
@pytest.mark.parametrize("pusher", [S2C, C2S])
def test_a_pusher_stops_at_the_window(ext, window, rule, pusher):
    receiver = C2S if pusher == S2C else S2C
    head = opened(ext)
    full = [(pusher, msg(n)) for n in range(1, window + 1)]
    over = len(head) + window
    _, found = run(head + full + [(pusher, msg(window + 1))])
    assert found == [(rule, pusher, over)]
    # an ack (even before the window fills: "the server should simply reset the counter")
    _, found = run(head + full + [(receiver, ack(1, window)), (pusher, msg(window + 1))])
    assert found == []
    _, found = run(head + full[:1] + [(receiver, ack(1, 1))] + full[1:] + [(pusher, msg(window + 1))])
    assert found == []


def test_sharpmessaging_ack_window_is_messages_per_ack():
    head = opened("ack:MessagesPerAck=3")
    frames = head + [(C2S, msg(n)) for n in range(1, 4)]
    assert run(frames, profile="sharpmessaging")[1] == []
    assert run(frames + [(C2S, msg(4))], profile="sharpmessaging")[1] == [("MM2-ACK-002", C2S, 6)]


def test_an_ack_frame_carries_two_bytes():
    _, found = run(opened("ack") + [(S2C, msg(1)), (C2S, ExtensionFrame(1, b"\x00\x00\x01"))])
    assert found == [("MM2-ACK-007", C2S, 4)]


def test_an_extension_id_names_an_agreed_extension():
    _, found = run(opened("pubsub;dotnet") + [(S2C, ExtensionFrame(3, b"T")), (C2S, ExtensionFrame(0, b""))])
    assert found == [("MM2-HS-011", S2C, 3), ("MM2-HS-011", C2S, 4)]


def test_json_sends_are_json():
    _, found = run(opened("json") + [(C2S, msg(1, b'{"a": 1}')), (C2S, msg(2, b"not json"))])
    assert found == [("MM2-JSON-001", C2S, 4)]


# --- framing ----------------------------------------------------------------------------------------

def _error_of(data: bytes, origin=None) -> FrameError:
    with pytest.raises(FrameError) as info:
        codec.make_decoder(origin=origin).feed(data)
    return info.value


@pytest.mark.parametrize("data,rule", [
    (b"\x20\x00", "MM2-FRAME-001"),                        # unknown flag bit
    (b"\x03\x00", "MM2-FRAME-001"),                        # two type bits
    (b"\x11\x00", "MM2-FRAME-004"),                        # CONTINUED on a COMMAND
    (b"\x09\xff\xff\xff\xf0", "MM2-FRAME-006"),            # a payload that should be split
    (b"\x01\x03A;b", "MM2-CMD-001"),                       # command name not a FIELD
    (b"\x04\x01\xff", "MM2-ERR-001"),                      # ERROR text not UTF-8
    # By what the decoder was reading (FrameError.part), not by words of the error's text,
    # which quotes the sender's own text: each of these was read as another rule.
    (b"\x01\x07x;a=%zz", "MM2-CMD-001"),                    # a command value's bad escape
    (b"\x01\x0ex;CONTINUED!=1", "MM2-CMD-001"),             # an argument name quoting CONTINUED
    (b"\x00\x00\x01\x01q\x00\x07command\x01x", "MM2-MSG-004"),  # a property quoting "command"
])
def test_decode_errors_after_the_handshake(data, rule):
    obs = MM2Observer()
    for i, (d, f) in enumerate(opened()):
        obs.frame(d, f, i, 0.0)
    obs.malformed(C2S, _error_of(data), 3, 0.0)
    assert [(v.requirement, v.direction, v.index) for v in obs.violations] == [(rule, C2S, 3)]


def test_decode_errors_in_the_handshake():
    obs = MM2Observer()
    obs.malformed(C2S, _error_of(b"\x01\x00\x00\x00\x00\x05A:b=;\x00\x00", "client"), 0, 0.0)
    obs.malformed(S2C, _error_of(b"\x01\x00\x00\x01\xff\x00\x00\x00\x00", "server"), 1, 0.0)
    assert [(v.requirement, v.direction) for v in obs.violations] == [("MM2-HS-013", C2S), ("MM2-HS-001", S2C)]


def test_a_direction_no_longer_decoded_leaves_the_others_window_unjudged():
    obs = MM2Observer()
    frames = opened("batch-ack:max-count=1") + [(S2C, msg(1))]
    for i, (d, f) in enumerate(frames):
        obs.frame(d, f, i, 0.0)
    obs.malformed(C2S, _error_of(b"\x20"), 4, 0.0)       # its ack may have followed, unseen
    obs.frame(S2C, msg(2), 5, 0.0)
    assert [v.requirement for v in obs.violations] == ["MM2-FRAME-001"]


# --- a pcap with injected violations --------------------------------------------------------------

def test_a_pcap_with_injected_violations(tmp_path):
    e = codec.encode
    path = tmp_path / "mm2.pcap"
    with PcapWriter(str(path)) as w:
        conv = TcpConversation(w, ("10.0.0.1", 40000), ("10.0.0.2", SPEC.default_port), 10.0)
        conv.data(C2S, e(hs("pubsub;batch-ack:max-count=2")), 10.0)               # 0
        conv.data(S2C, e(hs(identity="s")), 10.1)                                  # 1
        conv.data(C2S, e(hs("pubsub;batch-ack:max-count=2")), 10.2)                # 2
        conv.data(C2S, e(Command("subscribe", (("destination", "topic/a"),))), 10.3)  # 3
        conv.data(C2S, e(msg(1)), 10.4)                                            # 4
        conv.data(C2S, e(msg(3)), 10.5)                                            # 5 injected: skips 2
        conv.data(S2C, e(ack(2, 3)), 10.6)                                         # 6 acks 4, 5
        conv.data(S2C, e(msg(1)), 10.7)                                            # 7
        conv.data(S2C, e(msg(2)), 10.8)                                            # 8
        conv.data(S2C, e(msg(3)), 10.9)                                            # 9 injected: window 2
        conv.data(S2C, e(ExtensionFrame(7, b"?")), 11.0)                           # 10 injected: no id 7
        conv.data(C2S, e(ack(2, 3)), 11.25)                                        # 11 acks 7, 8, 9
        conv.close(C2S, 11.3)
        conv.close(S2C, 11.4)
    tables = analyze([str(path)], "micromessage2")
    found = sorted((v["requirement"], v["direction"], v["index"]) for v in tables["violations"])
    assert found == [("MM2-ACK-003", S2C, 9), ("MM2-HS-011", S2C, 10), ("MM2-MSG-002", C2S, 5)]
    latency = {r["index"]: r["latency"] for r in tables["frames"]}
    assert latency[1] == pytest.approx(0.1)          # the reply answers the offer
    assert latency[6] == pytest.approx(0.1)          # the ack names SEND 3 (index 5)
    assert latency[11] == pytest.approx(0.35)        # the ack names MESSAGE 3 (index 9)
    assert latency[7] is None and latency[3] is None
    assert tables["flows"][0]["exchanges"] == 3


# --- the repository's captures --------------------------------------------------------------------

def test_the_reference_client_capture_has_no_violations():
    tables = analyze([str(CAPTURES / "client.pcap.gz")], "micromessage2")
    assert tables["violations"] == []
    assert any(r["latency"] is not None for r in tables["frames"])


def test_the_suite_capture_has_no_server_violations():
    tables = analyze([str(CAPTURES / "suite.pcap.gz")], "micromessage2")
    assert [v for v in tables["violations"] if v["direction"] == S2C] == []
    # the suite's deliberately bad client frames are found (flags, window, json, a sequence
    # started near the wrap to test acks across it: not 1, MM2-MSG-007)
    found = {v["requirement"] for v in tables["violations"]}
    assert {"MM2-FRAME-001", "MM2-ACK-003", "MM2-JSON-001", "MM2-MSG-007"} <= found
