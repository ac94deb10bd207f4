"""The observers' ``client_rules`` tables (what client checking, wirecheck/conformance/clients/serve_check.py, may
report as PASS for a client connection): every ID is in the catalogue; every entry (frame type,
ID) is witnessed by a small conversation in which a client frame of that type makes the observer
report that ID against the client; and every ID an observer module can report against the client
is in its table (statically: each ID the module names is either listed or known to be the
server's alone; dynamically: the witnesses raise nothing against the client outside the table).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from wirecheck.conformance.clients.serve_check import exercised_requirements
from wirecheck.conformance.requirements import catalogue
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import Category, PayloadError
from wirecheck.reference_impl.core.observer import C2S, S2C

ROOT = Path(__file__).resolve().parents[2]
PROTOCOLS = ("blipmq", "vibemq", "micromessage2", "rabbitmq-stream", "signalr")
ID_PATTERN = re.compile(r"\b(?:BLIP|VIBE|MM2|RMQS|SIGR)-[A-Z0-9]+-\d{3}\b")


def spec(protocol):
    return registry.get(protocol)


def observer_class(protocol):
    return type(spec(protocol).make_observer())


def observer_source(protocol) -> str:
    """The observer's source: observer.py and the modules it is split into (observer_*.py)."""
    folder = ROOT / "wirecheck" / "reference_impl" / protocol.replace("-", "_")
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("observer*.py")))


def framing(protocol) -> set:
    cls = observer_class(protocol)
    return set(cls.framing_requirements.values()) | ({cls.framing_requirement} - {""})


def table(protocol) -> dict:
    return observer_class(protocol).client_rules


def listed(protocol) -> set:
    return {rid for rids in table(protocol).values() for rid in rids}


def type_name(protocol, frame) -> str:
    """The frames row's "type", as the pipeline and clientcheck name it."""
    return str(spec(protocol).frame_to_dict(frame).get("type", type(frame).__name__))


def bad(text: str, category: Category = Category.BAD_VALUE, part: str = "") -> PayloadError:
    """A decode error as a decoder raises it; ``part``: what it says it was reading
    (FrameError.part), which the observers map to rules."""
    return PayloadError(text, category=category, protocol="test", part=part)


# -- a witness: a conversation in which a client frame of a type breaks a rule --------------------

@dataclass
class Witness:
    """``events``: ``(C2S|S2C, frame)``, ``("bad", direction, FrameError)`` (a decode error) or
    ``("end", direction, how)``; the rule is reported against the client at or after event
    ``at``, which (when it is a frame) is a client frame of type ``kind``. A decode error or an
    end has no type: ``kind`` is the type the rule belongs to ("*": any)."""
    kind: str
    rule: str
    events: list
    at: Optional[int] = None          # default: the last event
    profile: Optional[str] = None

    def run(self, protocol):
        obs = spec(protocol).make_observer(self.profile)
        for i, event in enumerate(self.events):
            if event[0] == "bad":
                obs.malformed(event[1], event[2], i, i / 100)
            elif event[0] == "end":
                obs.closed(event[1], event[2], i, i / 100)
            else:
                obs.frame(event[0], event[1], i, i / 100)
        obs.finish(len(self.events) / 100)
        return obs

    @property
    def position(self) -> int:
        return len(self.events) - 1 if self.at is None else self.at


# BlipMQ ------------------------------------------------------------------------------------------

def blipmq_witnesses() -> list[Witness]:
    from wirecheck.reference_impl.blipmq import codec
    from wirecheck.reference_impl.blipmq.codec import (Ack, Auth, FrameType, Hello, Nack, Ping, Poll, Pong,
                                             Publish, Subscribe)
    hs = [(C2S, Hello(1)), (S2C, Ack(1, 0)), (C2S, Auth(2, "dev-key")), (S2C, Ack(2, 0))]

    def decode_error(frame_type, payload):
        try:
            codec.decode_all(codec.encode_raw(int(frame_type), 9, payload))
        except Exception as exc:            # the decoder's own FrameError
            return exc
        raise AssertionError(f"{frame_type.name} payload {payload!r} decodes")

    out = [Witness("*", "BLIP-FRAME-001", [("bad", C2S, bad("stream ended inside a frame",
                                                             Category.TRUNCATED))])]
    payloads = {FrameType.HELLO: ("BLIP-HELLO-004", b"\x01"), FrameType.AUTH: ("BLIP-AUTH-003", b"\x00\x05ab"),
                FrameType.PUBLISH: ("BLIP-PUB-001", b"\x00"), FrameType.SUBSCRIBE: ("BLIP-SUB-001", b"\x00"),
                FrameType.ACK: ("BLIP-ACK-001", b"\x00"), FrameType.NACK: ("BLIP-NACK-001", b"\x00"),
                FrameType.PING: ("BLIP-PING-001", b"x"), FrameType.PONG: ("BLIP-PING-001", b"x"),
                FrameType.POLL: ("BLIP-POLL-001", b"\x00")}
    for frame_type, (rule, payload) in payloads.items():
        out.append(Witness(frame_type.name, rule, [("bad", C2S, decode_error(frame_type, payload))]))
    out += [
        Witness("AUTH", "BLIP-AUTH-001", [(C2S, Auth(1, "k"))]),
        Witness("AUTH", "BLIP-AUTH-002", hs + [(C2S, Auth(3, "k"))]),
        Witness("PUBLISH", "BLIP-PUB-002", hs + [(C2S, Publish(3, 0, ""))]),
        Witness("PUBLISH", "BLIP-PUB-003", hs + [(C2S, Publish(3, 2, "t"))]),
        Witness("SUBSCRIBE", "BLIP-SUB-002", hs + [(C2S, Subscribe(3, "", 0))]),
        Witness("SUBSCRIBE", "BLIP-SUB-003", hs + [(C2S, Subscribe(3, "t", 2))]),
        Witness("ACK", "BLIP-ACK-002", hs + [(C2S, Ack(3, 0))]),
        Witness("POLL", "BLIP-POLL-002", hs + [(C2S, Poll(3, 0))]),
    ]
    for frame in (Publish(1, 0, "t"), Subscribe(1, "t", 0), Ack(1, 1), Nack(1, 400), Ping(1), Pong(1),
                  Poll(1, 1)):
        out.append(Witness(frame.type.name, "BLIP-CLIENT-006", [(C2S, Hello(0)), (S2C, Ack(0, 0)),
                                                                 (C2S, frame)]))
    return out


# VibeMQ ------------------------------------------------------------------------------------------

def vibemq_witnesses() -> list[Witness]:
    from wirecheck.reference_impl.vibemq import codec
    from wirecheck.reference_impl.vibemq.constants import TYPE_NAMES, CommandType as T, Compression
    from wirecheck.reference_impl.vibemq.observer import QUEUE_COMMANDS

    def m(kind, mid="x", queue=None, *, version=1, compression=Compression.NONE):
        return codec.Message(kind, mid, queue, None, None, None, None, version, compression)

    hs = [(C2S, m(T.CONNECT, "c1")), (S2C, m(T.CONNECT_ACK, "c1"))]
    out = [
        Witness("*", "VIBE-MSG-003", [(C2S, m(T.CONNECT, version=2))]),
        Witness("*", "VIBE-CLIENT-001", hs + [(C2S, m(T.PING, "p", compression=Compression.GZIP))]),
    ]
    decode_errors = [
        ("VIBE-FRAME-003", bad("unknown compression flag 0x07", Category.UNKNOWN_TYPE, "compression-flag")),
        ("VIBE-MSG-006", bad("unknown command type 77", Category.UNKNOWN_TYPE, "command-type")),
        ("VIBE-FRAME-006", bad("the body inflates past the limit", Category.LENGTH_TOO_LARGE, "bomb")),
        ("VIBE-COMP-007", bad("corrupt gzip stream", Category.BAD_ENCODING, "compressed-body")),
        ("VIBE-MSG-007", bad("the id is empty", Category.BAD_VALUE, "id")),
        ("VIBE-MSG-002", bad("the payload is not JSON", Category.BAD_ENCODING, "payload")),
        ("VIBE-FRAME-004", bad("body length 1", Category.LENGTH_TOO_SMALL)),
        ("VIBE-FRAME-005", bad("body length 9999999", Category.LENGTH_TOO_LARGE)),
        ("VIBE-MSG-001", bad("message cut short", Category.TRUNCATED)),
        ("VIBE-FRAME-001", bad("something else", Category.MISSING_FIELD)),
    ]
    out += [Witness("*", rule, hs + [("bad", C2S, error)]) for rule, error in decode_errors]
    for kind in T:
        if kind not in (T.CONNECT, T.PING):
            out.append(Witness(TYPE_NAMES[kind], "VIBE-CONN-003", [(C2S, m(kind, "x", "q"))]))
        if kind in QUEUE_COMMANDS:
            out.append(Witness(TYPE_NAMES[kind], "VIBE-ERR-006", hs + [(C2S, m(kind, "x"))]))
    return out


# Micromessage2 -----------------------------------------------------------------------------------

def micromessage2_witnesses() -> list[Witness]:
    import struct

    from wirecheck.reference_impl.micromessage2.codec import Error, ExtensionFrame, Handshake, Message
    from wirecheck.reference_impl.micromessage2.syntax import parse_extensions

    def hs(required="", identity="c"):
        return Handshake(identity, parse_extensions(required, True), parse_extensions("", True), 1, 0)

    def opened(required=""):
        return [(C2S, hs(required)), (S2C, hs(identity="s")), (C2S, hs(required))]

    def msg(seq, payload=b"{}"):
        return Message(seq, "topic/t", payload)

    ack = struct.pack(">H", 1)
    return [
        Witness("Handshake", "MM2-HS-001", [(C2S, hs()), (C2S, hs())]),
        Witness("Handshake", "MM2-HS-008", [(C2S, hs()), (S2C, hs("ack", "s")), (C2S, hs())]),
        Witness("Handshake", "MM2-HS-013", [("bad", C2S, bad("an extension name", Category.BAD_ENCODING))]),
        Witness("Message", "MM2-MSG-002", opened() + [(C2S, msg(1)), (C2S, msg(3))]),
        Witness("Message", "MM2-MSG-007", opened() + [(C2S, msg(2))]),
        Witness("Message", "MM2-MSG-003", opened() + [(C2S, msg(65535)), (C2S, msg(5))]),
        Witness("Message", "MM2-JSON-001", opened("json") + [(C2S, msg(1, b"not json"))]),
        Witness("Message", "MM2-ACK-002", opened("ack") + [(C2S, msg(1)), (C2S, msg(2))]),
        Witness("Message", "MM2-ACK-003", opened("batch-ack:max-count=1") + [(C2S, msg(1)), (C2S, msg(2))]),
        Witness("Message", "MM2-ACK-004", opened("batch-ack") + [(C2S, msg(n)) for n in range(1, 12)]),
        Witness("Message", "MM2-FRAME-004", opened() + [("bad", C2S, bad("a CONTINUED piece names another "
                                                                          "sequence number",
                                                                          part="continued"))]),
        Witness("Message", "MM2-MSG-004", opened() + [("bad", C2S, bad("the properties is not UTF-8",
                                                                       Category.BAD_ENCODING,
                                                                       "properties"))]),
        Witness("Extension", "MM2-HS-011", opened() + [(C2S, ExtensionFrame(5, ack))]),
        Witness("Extension", "MM2-ACK-007", opened("batch-ack") + [(C2S, ExtensionFrame(1, b"\x01"))]),
        Witness("Command", "MM2-CMD-001", opened() + [("bad", C2S, bad("the command is not UTF-8",
                                                                       Category.BAD_ENCODING, "command"))]),
        Witness("Error", "MM2-ERR-001", opened() + [("bad", C2S, bad("the ERROR text is not UTF-8",
                                                                     Category.BAD_ENCODING, "error-text"))]),
        Witness("Error", "MM2-HS-010", [(C2S, hs()), (S2C, hs("x", "s")), (C2S, Error("no")),
                                        (C2S, msg(1))], at=2),
    ]


# RabbitMQ Stream ---------------------------------------------------------------------------------

def rabbitmq_stream_witnesses() -> list[Witness]:
    from wirecheck.reference_impl.rabbitmq_stream import codec as k
    from wirecheck.reference_impl.rabbitmq_stream.chunk import SimpleEntry, build_chunk
    from wirecheck.reference_impl.rabbitmq_stream.observer import _SERVER_RESPONSES

    def handshake(frame_max=1_048_576):
        return [(C2S, k.PeerProperties(1, {})), (S2C, k.PeerPropertiesResponse(1, 1, {})),
                (C2S, k.SaslHandshake(2)), (S2C, k.SaslHandshakeResponse(2, 1, ("PLAIN",))),
                (C2S, k.SaslAuthenticate(3, "PLAIN", b"\0guest\0guest")), (S2C, k.SaslAuthenticateResponse(3, 1)),
                (S2C, k.Tune(frame_max, 60)), (C2S, k.TuneResponse(frame_max, 60)),
                (C2S, k.Open(4, "/")), (S2C, k.OpenResponse(4, 1, {"advertised_host": "h",
                                                                   "advertised_port": "5552"}))]

    peer = [(C2S, k.PeerProperties(1, {}))]
    long = "r" * 257
    commands = [k.DeclarePublisher(5, 1, "", "s"), k.Publish(1, (k.PublishedMessage(1, b"a"),)),
                k.QueryPublisherSequence(5, "", "s"), k.DeletePublisher(5, 1),
                k.Subscribe(5, 0, "s", 1, None, 1), k.Credit(0, 1), k.StoreOffset("r", "s", 0),
                k.QueryOffset(5, "r", "s"), k.Unsubscribe(5, 0), k.Create(5, "s", {}), k.Delete(5, "s"),
                k.Metadata(5, ("s",)), k.Route(5, "k", "ss"), k.Partitions(5, "ss"),
                k.ExchangeCommandVersions(5, ()), k.StreamStats(5, "s"),
                k.CreateSuperStream(5, "ss", ("p",), ("b",), {}), k.DeleteSuperStream(5, "ss")]
    deliver = k.Deliver(0, build_chunk([SimpleEntry(b"m")], 0, 1000), None, 1)
    responses = {"QueryPublisherSequenceResponse": (0,), "QueryOffsetResponse": (0,), "MetadataResponse": ((), ()),
                 "SaslHandshakeResponse": ((),), "RouteResponse": ((),), "PartitionsResponse": ((),),
                 "ExchangeCommandVersionsResponse": ((),)}
    out = [
        Witness("*", "RMQS-FRAME-011", peer + [("bad", C2S, bad("size 2", Category.LENGTH_TOO_SMALL))]),
        Witness("*", "RMQS-FRAME-009", peer + [("bad", C2S, bad("unknown key 0x0077", Category.UNKNOWN_TYPE))]),
        Witness("*", "RMQS-FRAME-010", peer + [("bad", C2S, bad("unknown version 9 of key 0x0001",
                                                                 Category.UNKNOWN_TYPE, "version"))]),
        Witness("*", "RMQS-TYPE-001", peer + [("bad", C2S, bad("string length past the end"))]),
        Witness("*", "RMQS-FRAME-007", handshake(4096) + [("bad", C2S, bad("frame of 2000000 bytes",
                                                                           Category.LENGTH_TOO_LARGE))]),
        Witness("SaslHandshake", "RMQS-HS-016", [(C2S, k.SaslHandshake(1))]),
        Witness("SaslAuthenticate", "RMQS-HS-016", peer + [(C2S, k.SaslAuthenticate(2, "PLAIN", b"\0a\0b"))]),
        Witness("SaslAuthenticate", "RMQS-HS-017", handshake()[:4] + [(C2S, k.SaslAuthenticate(3, "AMQPLAIN", b"x"))]),
        Witness("Tune", "RMQS-HS-016", peer + [(C2S, k.Tune(4096, 60))]),
        Witness("TuneResponse", "RMQS-HS-016", peer + [(C2S, k.TuneResponse(4096, 60))]),
        Witness("Open", "RMQS-HS-016", peer + [(C2S, k.Open(2, "/"))]),
        Witness("DeclarePublisher", "RMQS-PUB-017", handshake() + [(C2S, k.DeclarePublisher(5, 1, long, "s"))]),
        Witness("QueryPublisherSequence", "RMQS-PUB-017", handshake() + [(C2S, k.QueryPublisherSequence(5, long, "s"))]),
        Witness("StoreOffset", "RMQS-OFFSET-008", handshake() + [(C2S, k.StoreOffset(long, "s", 0))]),
        Witness("Publish", "RMQS-FRAME-007", handshake(200) + [
            (C2S, k.Publish(1, (k.PublishedMessage(1, b"x" * 300),)))]),
        Witness("CloseResponse", "RMQS-FRAME-003", handshake() + [(C2S, k.CloseResponse(77, 1))]),
        Witness("CloseResponse", "RMQS-CLOSE-003", handshake() + [(S2C, k.Close(5, 1, "bye")), ("end", C2S, "fin")]),
        # the server's Close unanswered for 1.1 s (110 heartbeats), then the server's FIN
        Witness("CloseResponse", "RMQS-CLOSE-003", handshake() + [(S2C, k.Close(5, 1, "bye"))]
                + [(C2S, k.Heartbeat())] * 110 + [("end", S2C, "fin")]),
        Witness("ConsumerUpdateResponse", "RMQS-FRAME-003", handshake() + [
            (C2S, k.ConsumerUpdateResponse(77, 1, 1, None))]),
        # ConsumerUpdate unanswered while 30 heartbeats (0.3 s) pass, then the client leaves
        Witness("ConsumerUpdateResponse", "RMQS-NEW-010", handshake() + [(S2C, k.ConsumerUpdate(9, 1, True))]
                + [(S2C, k.Heartbeat())] * 30 + [("end", C2S, "fin")]),
        Witness("Close", "RMQS-NEW-010", handshake() + [(S2C, k.ConsumerUpdate(9, 1, True))]
                + [(S2C, k.Heartbeat())] * 30 + [(C2S, k.Close(8, 1, "bye"))]),
    ]
    out += [Witness(type(c).__name__, "RMQS-HS-016", peer + [(C2S, c)]) for c in commands]
    for frame in (k.PublishConfirm(1, (1,)), k.PublishError(1, ((1, 2),)), deliver, k.MetadataUpdate(6, "s"),
                  k.ConsumerUpdate(5, 0, True)):
        out.append(Witness(type(frame).__name__, "RMQS-FRAME-009", handshake() + [(C2S, frame)]))
    for name in _SERVER_RESPONSES:
        frame = getattr(k, name)(77, 1, *responses.get(name, ()))
        out.append(Witness(name, "RMQS-FRAME-003", handshake() + [(C2S, frame)]))
    return out


# SignalR -----------------------------------------------------------------------------------------

#: The hub decode rules a client's message can break after the handshake, by category (v1).
SIGNALR_HUB_ERRORS = (("SIGR-ERR-001", Category.MISSING_FIELD), ("SIGR-ERR-006", Category.CONFLICTING_FIELDS),
                      ("SIGR-ERR-011", Category.BAD_VALUE), ("SIGR-FRAME-003", Category.LENGTH_TOO_LARGE),
                      ("SIGR-MSGPACK-001", Category.LENGTH_TOO_SMALL))


def signalr_witnesses() -> list[Witness]:
    from wirecheck.reference_impl.signalr.messages import (Completion, HandshakeRequest, HandshakeResponse, Invocation,
                                                 StreamCompletion, StreamInvocation, StreamItem)
    from wirecheck.reference_impl.signalr.observer import _CLIENT_HUB_FRAMING
    opened = [(C2S, HandshakeRequest("json", 1)), (S2C, HandshakeResponse())]
    mp_opened = [(C2S, HandshakeRequest("messagepack", 1)), (S2C, HandshakeResponse())]
    out = [Witness("HandshakeRequest", "SIGR-HS-001", [("bad", C2S, bad("no protocol", Category.MISSING_FIELD))])]
    # The hub decode rules, for every hub message type that lists them.
    hub_types = [t for t, rules in table("signalr").items() if set(_CLIENT_HUB_FRAMING) <= set(rules)]
    for kind in hub_types:
        for rule, category in SIGNALR_HUB_ERRORS:
            out.append(Witness(kind, rule, mp_opened + [("bad", C2S, bad("a bad message", category))]))
        out.append(Witness(kind, "SIGR-JSON-002", opened + [("bad", C2S, bad("a record cut short",
                                                                              Category.TRUNCATED))]))

    def server_calls(frame):
        return opened + [(S2C, frame)]

    single, stream = Invocation("M", [], "s1"), StreamInvocation("s1", "M", [])
    nonblocking = Invocation("M", [], "s1", nonblocking=True)
    out += [
        Witness("Invocation", "SIGR-ERR-007", opened + [(C2S, Invocation("A", [], "1")),
                                                        (C2S, Invocation("B", [], "1"))]),
        Witness("StreamInvocation", "SIGR-ERR-007", opened + [(C2S, StreamInvocation("1", "A", [])),
                                                              (C2S, StreamInvocation("1", "B", []))]),
        Witness("StreamItem", "SIGR-ERR-003", opened + [(C2S, StreamItem("zz", 1))]),
        Witness("StreamItem", "SIGR-ERR-004", server_calls(nonblocking) + [(C2S, StreamItem("s1", 1))]),
        Witness("StreamItem", "SIGR-ERR-009", server_calls(stream) + [(C2S, Completion("s1")),
                                                                      (C2S, StreamItem("s1", 1))]),
        Witness("StreamItem", "SIGR-ERR-009", opened + [(C2S, Invocation("Up", [], "1", stream_ids=["u"])),
                                                        (C2S, Completion("u")), (C2S, StreamItem("u", 1))]),
        Witness("StreamItem", "SIGR-INV-003", server_calls(single) + [(C2S, StreamItem("s1", 1))]),
        Witness("Completion", "SIGR-ERR-003", opened + [(C2S, Completion("zz"))]),
        Witness("Completion", "SIGR-ERR-004", server_calls(nonblocking) + [(C2S, Completion("s1"))]),
        Witness("Completion", "SIGR-ERR-009", server_calls(single) + [(C2S, Completion("s1")),
                                                                      (C2S, Completion("s1"))]),
        Witness("Completion", "SIGR-ERR-005", server_calls(stream) + [(C2S, StreamItem("s1", 1)),
                                                                      (C2S, Completion.with_result("s1", 2))]),
        Witness("Completion", "SIGR-STR-002", server_calls(stream) + [(C2S, Completion.with_result("s1", 2))]),
        Witness("StreamCompletion", "SIGR-ERR-003", opened + [(C2S, StreamCompletion("zz"))]),
        Witness("StreamCompletion", "SIGR-ERR-004", server_calls(nonblocking) + [(C2S, StreamCompletion("s1"))]),
        Witness("StreamCompletion", "SIGR-ERR-009", server_calls(stream) + [(C2S, StreamCompletion("s1")),
                                                                            (C2S, StreamCompletion("s1"))]),
    ]
    return out


WITNESSES = {"blipmq": blipmq_witnesses, "vibemq": vibemq_witnesses, "micromessage2": micromessage2_witnesses,
             "rabbitmq-stream": rabbitmq_stream_witnesses, "signalr": signalr_witnesses}

#: IDs an observer module names that it reports against the server only (read from each
#: module: S2C ``violate`` calls, answer tables, the server's rows of per-direction tables).
SERVER_ONLY = {
    "blipmq": {"BLIP-HELLO-001", "BLIP-HELLO-002", "BLIP-HELLO-003", "BLIP-AUTH-004", "BLIP-AUTH-005",
               "BLIP-AUTH-006", "BLIP-AUTH-007", "BLIP-PUB-004", "BLIP-PUB-007", "BLIP-PUB-009", "BLIP-PUB-010",
               "BLIP-SUB-004", "BLIP-SUB-005", "BLIP-ACK-003", "BLIP-POLL-003", "BLIP-POLL-004", "BLIP-NACK-002",
               "BLIP-FRAME-004", "BLIP-FRAME-005", "BLIP-IO-001", "BLIP-QOS1-001", "BLIP-QOS1-003",
               "BLIP-QOS1-004"},
    "vibemq": {"VIBE-CONN-001", "VIBE-CONN-004", "VIBE-CONN-005", "VIBE-PING-001", "VIBE-PUB-001", "VIBE-PUB-002",
               "VIBE-SUB-001", "VIBE-SUB-002", "VIBE-QUEUE-001", "VIBE-QUEUE-003", "VIBE-QUEUE-004",
               "VIBE-QUEUE-005", "VIBE-ERR-001", "VIBE-ERR-003", "VIBE-COMP-001", "VIBE-COMP-002",
               "VIBE-COMP-003", "VIBE-COMP-004", "VIBE-COMP-006", "VIBE-DEL-001", "VIBE-DEL-002", "VIBE-ACK-001",
               "VIBE-RETRY-001", "VIBE-TTL-001", "VIBE-DLQ-001", "VIBE-OVER-001"},
    "micromessage2": {"MM2-HS-003", "MM2-HS-004", "MM2-HS-005", "MM2-HS-006", "MM2-HS-007", "MM2-HS-015",
                      "MM2-ACK-005", "MM2-ACK-008", "MM2-ACK-009", "MM2-ACK-010", "MM2-FRAME-003",
                      "MM2-CMD-002", "MM2-MSG-006", "MM2-PS-001", "MM2-ERR-002", "MM2-NET-001"},
    "rabbitmq-stream": {"RMQS-FRAME-001", "RMQS-FRAME-002", "RMQS-FRAME-012", "RMQS-FRAME-013", "RMQS-HS-001",
                        "RMQS-HS-002", "RMQS-HS-004", "RMQS-HS-006", "RMQS-HS-008", "RMQS-HS-009",
                        "RMQS-HS-011", "RMQS-HS-012", "RMQS-HS-014", "RMQS-HS-015", "RMQS-TUNE-001",
                        "RMQS-TYPE-002", "RMQS-CLOSE-001", "RMQS-CLOSE-002", "RMQS-NEW-001", "RMQS-NEW-009",
                        "RMQS-ROUTE-003", "RMQS-META-001", "RMQS-META-002", "RMQS-META-005", "RMQS-META-007",
                        "RMQS-META-008", "RMQS-PUB-003", "RMQS-PUB-005", "RMQS-PUB-006", "RMQS-PUB-007",
                        "RMQS-PUB-008", "RMQS-SUB-008", "RMQS-UNSUB-001", "RMQS-UNSUB-002", "RMQS-CREDIT-001",
                        "RMQS-CREDIT-002", "RMQS-CREDIT-003", "RMQS-CREDIT-004", "RMQS-DELIVER-001",
                        "RMQS-DELIVER-002", "RMQS-DELIVER-003", "RMQS-DELIVER-004", "RMQS-DELIVER-005",
                        "RMQS-DELIVER-006", "RMQS-DELIVER-007", "RMQS-DELIVER-008"},
    "signalr": {"SIGR-HS-002", "SIGR-HS-003", "SIGR-HS-004", "SIGR-HS-005", "SIGR-HS-007",
                "SIGR-INV-001", "SIGR-INV-007", "SIGR-V1-004", "SIGR-V1-005", "SIGR-V1-008",
                "SIGR-HTTP-001", "SIGR-HTTP-002", "SIGR-HTTP-005"},
}
#: IDs an observer reports against the client in some profiles only, so not listed (a run in
#: another profile would pass a rule it never judged): protocol -> {ID: (raising, silent profile)}.
PROFILE_ONLY = {"signalr": {"SIGR-ERR-002": ("draft", "v1")}}


# -- the tests -------------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_listed_id_is_in_the_catalogue(protocol):
    cat = catalogue(spec(protocol).requirements)
    assert listed(protocol) - set(cat) == set()
    assert framing(protocol) - set(cat) == set()
    assert all(isinstance(rids, tuple) for rids in table(protocol).values())


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_entry_is_witnessed_by_a_client_frame_of_its_type(protocol):
    witnessed = set()
    for w in WITNESSES[protocol]():
        obs = w.run(protocol)
        hits = [v for v in obs.violations if v.requirement == w.rule and v.direction == C2S
                and v.index >= w.position]
        assert hits, f"{protocol}: {w.kind} does not raise {w.rule} against the client: {obs.violations}"
        event = w.events[w.position]
        if event[0] == C2S and w.kind != "*":
            assert type_name(protocol, event[1]) == w.kind
        assert w.kind in table(protocol), f"{protocol}: witness for type {w.kind!r}, not in the table"
        witnessed.add((w.kind, w.rule))
    entries = {(kind, rid) for kind, rids in table(protocol).items() for rid in rids}
    assert entries - witnessed == set(), "table entries no conversation breaks"
    assert witnessed - entries == set(), "rules a client frame breaks that its type does not list"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_witnesses_raise_nothing_against_the_client_outside_the_table(protocol):
    allowed = listed(protocol) | framing(protocol)
    for w in WITNESSES[protocol]():
        raised = {v.requirement for v in w.run(protocol).violations if v.direction == C2S}
        assert raised - allowed == set(), f"{protocol}: {w.kind}/{w.rule} also raised {raised - allowed}"


def _c2s_literals(source: str) -> set:
    """The string IDs of every ``violate(<id>, C2S, ...)`` call (an ID written in the call)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "violate"
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Name) and node.args[1].id == "C2S"):
            for sub in ast.walk(node.args[0]):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    found.add(sub.value)
    return found


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_id_the_module_can_raise_against_the_client_is_listed(protocol):
    source = observer_source(protocol)
    covered = listed(protocol) | framing(protocol)
    assert _c2s_literals(source) - covered == set()
    named = set(ID_PATTERN.findall(source))
    server_only, profile_only = SERVER_ONLY[protocol], set(PROFILE_ONLY.get(protocol, {}))
    unclassified = named - covered - server_only - profile_only
    assert unclassified == set(), (f"{protocol}: the observer names {sorted(unclassified)}: list them in "
                                   "client_rules, or here as the server's alone")
    assert server_only & covered == set() and profile_only & covered == set()
    assert server_only - named == set(), "stale SERVER_ONLY entries"
    assert _c2s_literals(source) & server_only == set()


def test_signalr_book_rules_for_the_client_are_listed():
    from wirecheck.reference_impl.signalr.observer import BOOK_RULES, DRAFT_BOOK_RULES
    assert set(BOOK_RULES[C2S].values()) | set(DRAFT_BOOK_RULES.values()) <= listed("signalr")
    # the server's rows: the server's alone, but SIGR-STR-002, which _response also judges on the
    # client's Completion (v1)
    assert set(BOOK_RULES[S2C].values()) - listed("signalr") <= SERVER_ONLY["signalr"]


@pytest.mark.parametrize("protocol,rule,raising,silent",
                         [(p, r, a, b) for p, rules in PROFILE_ONLY.items() for r, (a, b) in rules.items()])
def test_profile_only_rules_are_judged_in_one_profile_only(protocol, rule, raising, silent):
    from wirecheck.reference_impl.signalr.messages import HandshakeRequest, HandshakeResponse
    events = [(C2S, HandshakeRequest("json", 1)), (S2C, HandshakeResponse()),
              ("bad", C2S, bad("an unknown field 'x'", Category.UNKNOWN_FIELD))]
    raised = {p: {v.requirement for v in Witness("*", rule, events, profile=p).run(protocol).violations
                  if v.direction == C2S} for p in (raising, silent)}
    assert rule in raised[raising] and rule not in raised[silent]


#: Each protocol's client frame types: every one has a row (perhaps empty) or is named here with
#: why it has none.
NO_ROW = {
    "signalr": {"HttpRequest": "HTTP (RFC 9112): no catalogue rule", "WebSocketClose": "RFC 6455",
                "WebSocketPing": "RFC 6455", "WebSocketPong": "RFC 6455"},
    "rabbitmq-stream": {"CreditResponse": "no correlation id: the observer cannot look it up"},
}


def _client_types(protocol) -> set:
    if protocol == "blipmq":
        from wirecheck.reference_impl.blipmq.codec import FrameType
        return {t.name for t in FrameType}
    if protocol == "vibemq":
        from wirecheck.reference_impl.vibemq.constants import TYPE_NAMES
        return set(TYPE_NAMES.values())
    if protocol == "micromessage2":
        return {"Handshake", "Message", "Command", "Extension", "Error"}
    if protocol == "rabbitmq-stream":
        import dataclasses
        from wirecheck.reference_impl.rabbitmq_stream import codec
        return {c.__name__ for c in vars(codec).values() if isinstance(c, type) and dataclasses.is_dataclass(c)
                and isinstance(getattr(c, "key", None), int)}
    from wirecheck.reference_impl.signalr import messages
    return {c.__name__ for c in vars(messages).values() if isinstance(c, type)
            and c.__module__ == messages.__name__ and c.__name__ != "HandshakeResponse"} | set(NO_ROW["signalr"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_table_has_a_row_for_each_client_frame_type(protocol):
    keys = set(table(protocol)) - {"*"}
    types = _client_types(protocol)
    assert keys - types == set(), "rows for types the decoders never name"
    assert types - keys - set(NO_ROW.get(protocol, {})) == set()
    assert keys & set(NO_ROW.get(protocol, {})) == set()


def test_exercised_requirements_reads_the_tables():
    obs = spec("blipmq").make_observer()
    got = exercised_requirements(obs, {"HELLO", "AUTH"})
    assert got == {"BLIP-FRAME-001", "BLIP-FRAME-002", "BLIP-FRAME-003", "BLIP-FRAME-006", "BLIP-HELLO-004",
                   "BLIP-AUTH-003", "BLIP-AUTH-001", "BLIP-AUTH-002"}
    assert exercised_requirements(spec("signalr").make_observer(), {"HttpRequest"}) == set()
