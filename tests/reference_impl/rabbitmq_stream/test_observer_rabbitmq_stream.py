"""The RabbitMQ Stream observer (wirecheck/reference_impl/rabbitmq_stream/observer.py): each rule on frames
fed straight in, a pcap with injected violations through the pipeline, and the repository's
captures (the reference ones and RabbitMQ 3.10.8 with rstream)."""
from __future__ import annotations

from pathlib import Path

import pytest

from wirecheck.conformance.captures.pcapfile import PcapWriter, TcpConversation
from wirecheck.pipeline.local import analyze
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.core.observer import C2S, S2C
from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.chunk import SimpleEntry, build_chunk
from wirecheck.reference_impl.rabbitmq_stream.codec import (
    BrokerInfo, Close, CloseResponse, Create, CreateResponse, Credit, CreditResponse, DeclarePublisher,
    DeclarePublisherResponse, DeletePublisher, DeletePublisherResponse, Deliver, Metadata,
    MetadataResponse, MetadataUpdate, Open, OpenResponse, PeerProperties, PeerPropertiesResponse,
    Publish, PublishConfirm, PublishError, PublishedMessage, Route, RouteResponse, SaslAuthenticate,
    SaslAuthenticateResponse, SaslHandshake, SaslHandshakeResponse, StreamMetadata, Subscribe,
    SubscribeResponse, Tune, TuneResponse, Unsubscribe, UnsubscribeResponse)
from wirecheck.reference_impl.rabbitmq_stream.observer import StreamObserver

SPEC = registry.get("rabbitmq-stream")
CAPTURES = Path(__file__).resolve().parents[3] / "captures" / "rabbitmq-stream"
REAL = CAPTURES / "real"
OPEN_PROPS = {"advertised_host": "127.0.0.1", "advertised_port": "5552"}


def handshake(frame_max: int = 1_048_576) -> list:
    """Indices 0-9: the document's sequence, Open accepted."""
    return [(C2S, PeerProperties(1, {})), (S2C, PeerPropertiesResponse(1, 1, {})),
            (C2S, SaslHandshake(2)), (S2C, SaslHandshakeResponse(2, 1, ("PLAIN",))),
            (C2S, SaslAuthenticate(3, "PLAIN", b"\0guest\0guest")), (S2C, SaslAuthenticateResponse(3, 1)),
            (S2C, Tune(frame_max, 60)), (C2S, TuneResponse(frame_max, 60)),
            (C2S, Open(4, "/")), (S2C, OpenResponse(4, 1, OPEN_PROPS))]


H = len(handshake())


def deliver(sub: int, first: int = 0, records: int = 1, timestamp: int = 1000, version: int = 1) -> Deliver:
    chunk = build_chunk([SimpleEntry(b"m%d" % i) for i in range(records)], first, timestamp)
    return Deliver(sub, chunk, 0 if version == 2 else None, version)


def run(frames, profile=None, closes=()):
    """Feed ``(direction, frame)`` pairs (index = position, time = index / 100); ``closes``:
    ``(direction, how)`` calls of ``closed`` after the last frame. Returns (observer,
    [(requirement, direction, index)])."""
    obs = StreamObserver(profile)
    for i, (direction, frame) in enumerate(frames):
        obs.frame(direction, frame, i, i / 100)
    for direction, how in closes:
        obs.closed(direction, how, len(frames), len(frames) / 100)
    return obs, [(v.requirement, v.direction, v.index) for v in obs.violations]


def found(frames, profile=None, closes=()):
    return run(frames, profile, closes)[1]


def after_open(*frames):
    return handshake() + list(frames)


# --- a correct conversation ---------------------------------------------------------------------

def test_a_correct_conversation_has_no_violations_and_pairs_every_answer():
    frames = after_open(
        (C2S, Create(5, "s", {})), (S2C, CreateResponse(5, 1)),                        # 10, 11
        (C2S, DeclarePublisher(6, 1, "", "s")), (S2C, DeclarePublisherResponse(6, 1)),  # 12, 13
        (C2S, Publish(1, (PublishedMessage(1, b"a"), PublishedMessage(2, b"b")))),      # 14
        (C2S, Publish(1, (PublishedMessage(3, b"c"),))),                                # 15
        (S2C, PublishConfirm(1, (1,))), (S2C, PublishConfirm(1, (2, 3))),               # 16, 17
        (C2S, Subscribe(7, 0, "s", 1, None, 1)), (S2C, SubscribeResponse(7, 1)),        # 18, 19
        (S2C, deliver(0, 0, 2)), (C2S, Credit(0, 2)),                                   # 20, 21
        (S2C, deliver(0, 2, 1)), (S2C, deliver(0, 3, 1)),                               # 22, 23
        (C2S, Metadata(8, ("s", "t"))),                                                 # 24
        (S2C, MetadataResponse(8, (BrokerInfo(0, "h", 5552),),
                               (StreamMetadata("s", 1, 0), StreamMetadata("t", 2, 0xFFFF)))),
        (S2C, MetadataUpdate(6, "s")),                                                  # 26
        (C2S, Unsubscribe(9, 0)), (S2C, UnsubscribeResponse(9, 1)),                     # 27, 28
        (C2S, Close(10, 1, "bye")), (S2C, CloseResponse(10, 1)))                        # 29, 30
    obs, violations = run(frames, closes=[(S2C, "fin"), (C2S, "fin")])
    assert violations == []
    pairs = [(e.request, e.response, e.kind) for e in obs.exchanges]
    assert pairs == [(0, 1, "PeerProperties"), (2, 3, "SaslHandshake"), (4, 5, "SaslAuthenticate"),
                     (6, 7, "Tune"), (8, 9, "Open"), (10, 11, "Create"), (12, 13, "DeclarePublisher"),
                     (14, 17, "Publish"), (15, 17, "Publish"), (18, 19, "Subscribe"),
                     (24, 25, "Metadata"), (27, 28, "Unsubscribe"), (29, 30, "Close")]
    assert obs.exchanges[7].latency == pytest.approx(0.03)


def test_frame_returns_the_exchange_it_completes():
    obs = StreamObserver()
    assert obs.frame(C2S, PeerProperties(1, {}), 0, 1.0) is None
    exchange = obs.frame(S2C, PeerPropertiesResponse(1, 1, {}), 1, 1.25)
    assert (exchange.request, exchange.response, exchange.kind) == (0, 1, "PeerProperties")
    assert exchange.latency == pytest.approx(0.25)


# --- order ----------------------------------------------------------------------------------------

def test_the_handshake_order_of_the_client():
    hs = handshake()
    # SaslHandshake before PeerProperties (the late PeerProperties itself breaks no order)
    assert found([hs[2], hs[3], hs[0], hs[1]]) == [("RMQS-HS-016", C2S, 0)]
    # Open before the client's Tune answer
    assert found(hs[:7] + [hs[8]]) == [("RMQS-HS-016", C2S, 7)]
    # the client's Tune before the server's
    assert found(hs[:6] + [hs[7]]) == [("RMQS-HS-016", C2S, 6)]


def test_a_command_before_open_is_the_clients_fault_and_gets_no_answer():
    frames = handshake()[:6] + [(C2S, Create(9, "s", {})), (S2C, CreateResponse(9, 1))]
    assert found(frames) == [("RMQS-HS-016", C2S, 6), ("RMQS-HS-006", S2C, 7)]
    # Heartbeat / Close before Open: no client rule, but the server must not answer Close
    frames = handshake()[:6] + [(C2S, Close(9, 1, "x")), (S2C, CloseResponse(9, 1))]
    assert found(frames) == [("RMQS-HS-006", S2C, 7)]
    # a command pipelined after Open (before its answer) is after Open
    frames = handshake()[:9] + [(C2S, Create(5, "s", {})), handshake()[9], (S2C, CreateResponse(5, 1))]
    assert found(frames) == []


def test_tune_only_after_a_successful_authentication():
    hs = handshake()
    assert found(hs[:4] + [(S2C, Tune(1024, 60))]) == [("RMQS-HS-004", S2C, 4)]


def test_the_server_is_silent_after_a_failed_authentication_or_refused_open():
    hs = handshake()
    failed = hs[:5] + [(S2C, SaslAuthenticateResponse(3, 8)), (S2C, Tune(1024, 60)), (S2C, Tune(1024, 60))]
    assert found(failed) == [("RMQS-HS-009", S2C, 6)]
    # a SPEC_NOTES SHOULD; the document's own rule still sees the Tunes
    assert found(failed, profile="document") == [("RMQS-HS-004", S2C, 6), ("RMQS-HS-004", S2C, 7)]
    refused = hs[:9] + [(S2C, OpenResponse(4, 12)), (S2C, codec.Heartbeat())]
    assert found(refused) == [("RMQS-HS-011", S2C, 10)]


def test_a_handshake_command_after_open_gets_close_13():
    base = after_open((C2S, PeerProperties(5, {})))
    assert found(base + [(S2C, PeerPropertiesResponse(5, 1, {}))]) == [("RMQS-HS-014", S2C, 11)]
    assert found(base + [(S2C, Close(1, 13, "unknown frame"))]) == []
    assert found(base + [(S2C, Close(1, 15, "?"))]) == [("RMQS-HS-014", S2C, 11)]
    assert found(base, closes=[(S2C, "fin")]) == [("RMQS-HS-014", S2C, 11)]
    assert found(base, closes=[(S2C, "end")]) == []                 # the capture ended


def test_after_its_close_response_the_server_sends_nothing():
    frames = after_open((C2S, Close(5, 1, "bye")), (S2C, CloseResponse(5, 1)), (S2C, codec.Heartbeat()))
    assert found(frames) == [("RMQS-CLOSE-002", S2C, 12)]


def test_server_frames_of_client_types():
    frames = after_open((S2C, Create(1, "s", {})), (S2C, TuneResponse(1, 1)))
    assert found(frames) == [("RMQS-FRAME-002", S2C, 10), ("RMQS-FRAME-002", S2C, 11)]


def test_a_client_sending_a_server_command_gets_close_13():
    frames = after_open((C2S, PublishConfirm(1, (1,))), (S2C, Close(1, 13, "unknown frame")))
    assert found(frames) == [("RMQS-FRAME-009", C2S, 10)]
    assert found(frames[:-1], closes=[(S2C, "fin")]) == [("RMQS-FRAME-009", C2S, 10),
                                                        ("RMQS-FRAME-009", S2C, 11)]
    # CreditResponse has no correlation id: the same rule, not a lookup by one
    frames = after_open((C2S, CreditResponse(4, 2)), (S2C, Close(1, 13, "unknown frame")))
    assert found(frames) == [("RMQS-FRAME-009", C2S, 10)]


# --- correlation -----------------------------------------------------------------------------------

def test_responses_match_outstanding_requests():
    frames = after_open((C2S, Create(5, "s", {})), (S2C, CreateResponse(6, 1)),     # wrong id
                        (S2C, CreateResponse(5, 1)), (S2C, CreateResponse(5, 1)))   # then twice
    assert found(frames) == [("RMQS-FRAME-003", S2C, 11), ("RMQS-FRAME-003", S2C, 13)]
    frames = after_open((C2S, Create(5, "s", {})), (S2C, DeclarePublisherResponse(5, 1)))
    assert found(frames) == [("RMQS-FRAME-002", S2C, 11)]


def test_a_client_response_to_nothing():
    frames = after_open((C2S, SubscribeResponse(3, 1)), (S2C, Close(1, 13, "unknown frame")))
    assert found(frames) == [("RMQS-FRAME-003", C2S, 10)]
    assert found(frames[:-1] + [(S2C, Close(1, 1, "x"))]) == [("RMQS-FRAME-003", C2S, 10),
                                                             ("RMQS-FRAME-012", S2C, 11)]


def test_close_in_both_directions_is_answered():
    frames = after_open((C2S, Close(5, 1, "bye")))
    assert found(frames, closes=[(S2C, "fin")]) == [("RMQS-CLOSE-001", S2C, 11)]
    assert found(frames + [(S2C, CloseResponse(5, 2))]) == [("RMQS-CLOSE-001", S2C, 11)]
    server = after_open((S2C, Close(1, 13, "unknown frame")))
    assert found(server, closes=[(C2S, "fin")]) == [("RMQS-CLOSE-003", C2S, 11)]
    assert found(server + [(C2S, CloseResponse(1, 1))], closes=[(C2S, "fin")]) == []
    assert found(server, closes=[(S2C, "fin"), (C2S, "fin")]) == []     # the server left first


def test_route_response_bit_depends_on_the_profile():
    import dataclasses
    quirk = dataclasses.replace(RouteResponse(5, 2, ()), response_bit=False)
    frames = after_open((C2S, Route(5, "k", "sup")), (S2C, quirk))
    assert found(frames) == [("RMQS-ROUTE-003", S2C, 11)]
    assert found(frames, profile="rabbitmq-3.10") == []


# --- response codes ----------------------------------------------------------------------------------

def test_codes_of_the_table_for_their_commands():
    assert found(after_open((C2S, Create(5, "s", {})), (S2C, CreateResponse(5, 99)))) == \
        [("RMQS-FRAME-003", S2C, 11)]
    assert found(after_open((C2S, Create(5, "s", {})), (S2C, CreateResponse(5, 12)))) == \
        [("RMQS-FRAME-003", S2C, 11)]
    assert found(after_open((C2S, Create(5, "s", {})), (S2C, CreateResponse(5, 5)))) == []


def test_handshake_answers_the_conversation_decides():
    hs = handshake()
    assert found([hs[0], (S2C, PeerPropertiesResponse(1, 2, {}))]) == [("RMQS-HS-001", S2C, 1)]
    assert found(hs[:3] + [(S2C, SaslHandshakeResponse(2, 1, ("AMQPLAIN",)))]) == [("RMQS-HS-002", S2C, 3)]
    other = hs[:4] + [(C2S, SaslAuthenticate(3, "EXTERNAL", b""))]
    assert found(other + [(S2C, SaslAuthenticateResponse(3, 7))]) == [("RMQS-HS-017", C2S, 4)]
    assert found(other + [(S2C, SaslAuthenticateResponse(3, 8))]) == [("RMQS-HS-017", C2S, 4),
                                                                      ("RMQS-HS-008", S2C, 5)]
    bad = hs[:4] + [(C2S, SaslAuthenticate(3, "PLAIN", b"guest:guest"))]
    assert found(bad + [(S2C, SaslAuthenticateResponse(3, 8))]) == [("RMQS-HS-012", S2C, 5)]
    null = hs[:4] + [(C2S, SaslAuthenticate(3, "PLAIN", None))]
    assert found(null + [(S2C, SaslAuthenticateResponse(3, 1))]) == [("RMQS-TYPE-002", S2C, 5)]
    bare = hs[:9] + [(S2C, OpenResponse(4, 1, {}))]
    assert found(bare) == [("RMQS-HS-015", S2C, 9)]
    assert found(bare, profile="document") == []


def test_subscription_ids_decide_subscribe_and_unsubscribe_codes():
    sub = [(C2S, Subscribe(5, 0, "s", 1, None, 0)), (S2C, SubscribeResponse(5, 1))]
    assert found(after_open(*sub, (C2S, Subscribe(6, 0, "s", 1, None, 0)),
                            (S2C, SubscribeResponse(6, 1)))) == [("RMQS-SUB-008", S2C, 13)]
    assert found(after_open((C2S, Subscribe(5, 0, "s", 1, None, 0)), (S2C, SubscribeResponse(5, 3)))) == \
        [("RMQS-SUB-008", S2C, 11)]
    assert found(after_open((C2S, Unsubscribe(5, 0)), (S2C, UnsubscribeResponse(5, 1)))) == \
        [("RMQS-UNSUB-002", S2C, 11)]
    assert found(after_open(*sub, (C2S, Unsubscribe(6, 0)), (S2C, UnsubscribeResponse(6, 4)))) == \
        [("RMQS-UNSUB-001", S2C, 13)]
    # after a MetadataUpdate for its stream the server may have dropped it (RMQS-META-007)
    assert found(after_open(*sub, (S2C, MetadataUpdate(6, "s")), (C2S, Unsubscribe(6, 0)),
                            (S2C, UnsubscribeResponse(6, 4)))) == []


def test_publisher_ids_decide_declare_and_delete_codes():
    decl = [(C2S, DeclarePublisher(5, 1, "", "s")), (S2C, DeclarePublisherResponse(5, 1))]
    assert found(after_open(*decl, (C2S, DeclarePublisher(6, 1, "", "s")),
                            (S2C, DeclarePublisherResponse(6, 1)))) == [("RMQS-PUB-003", S2C, 13)]
    assert found(after_open((C2S, DeletePublisher(5, 1)), (S2C, DeletePublisherResponse(5, 1)))) == \
        [("RMQS-PUB-006", S2C, 11)]
    assert found(after_open(*decl, (C2S, DeletePublisher(6, 1)), (S2C, DeletePublisherResponse(6, 18)))) == \
        [("RMQS-PUB-005", S2C, 13)]
    assert found(after_open((C2S, DeclarePublisher(5, 1, "r" * 257, "s")))) == [("RMQS-PUB-017", C2S, 10)]


def test_metadata_entries():
    ask = (C2S, Metadata(5, ("a", "b")))
    brokers = (BrokerInfo(0, "h", 5552),)
    assert found(after_open(ask, (S2C, MetadataResponse(5, brokers, (StreamMetadata("a", 1, 0),))))) == \
        [("RMQS-META-001", S2C, 11)]
    entries = (StreamMetadata("a", 1, 3), StreamMetadata("b", 2, 0))
    assert found(after_open(ask, (S2C, MetadataResponse(5, brokers, entries)))) == \
        [("RMQS-META-002", S2C, 11), ("RMQS-META-005", S2C, 11)]


def test_metadata_update_only_for_streams_in_use():
    assert found(after_open((S2C, MetadataUpdate(6, "other")))) == [("RMQS-META-008", S2C, 10)]
    assert found(after_open((C2S, DeclarePublisher(5, 1, "", "s")), (S2C, DeclarePublisherResponse(5, 1)),
                            (S2C, MetadataUpdate(6, "s")))) == []


# --- publish confirms ----------------------------------------------------------------------------------

def test_every_publishing_id_is_confirmed_once():
    decl = [(C2S, DeclarePublisher(5, 1, "", "s")), (S2C, DeclarePublisherResponse(5, 1))]
    frames = after_open(*decl, (C2S, Publish(1, (PublishedMessage(7, b"x"),))),
                        (S2C, PublishConfirm(1, (7,))), (S2C, PublishConfirm(1, (7,))),
                        (S2C, PublishConfirm(1, (8,))))
    assert found(frames) == [("RMQS-PUB-007", S2C, 14), ("RMQS-PUB-007", S2C, 15)]


def test_an_undeclared_publisher_gets_publish_error_18():
    publish = (C2S, Publish(3, (PublishedMessage(1, b"x"), PublishedMessage(2, b"y"))))
    obs, violations = run(after_open(publish, (S2C, PublishError(3, ((1, 18), (2, 18))))))
    assert violations == []
    assert [(e.request, e.response, e.kind) for e in obs.exchanges[-1:]] == [(10, 11, "Publish")]
    assert found(after_open(publish, (S2C, PublishConfirm(3, (1, 2))))) == [("RMQS-PUB-008", S2C, 11)]
    assert found(after_open(publish, (S2C, PublishError(3, ((1, 2), (2, 18)))))) == [("RMQS-PUB-008", S2C, 11)]


# --- credit and delivery -------------------------------------------------------------------------------

def subscribed(credit: int):
    return [(C2S, Subscribe(5, 0, "s", 1, None, credit)), (S2C, SubscribeResponse(5, 1))]


def test_nothing_is_delivered_without_credit():
    assert found(after_open(*subscribed(0), (S2C, deliver(0)))) == [("RMQS-CREDIT-001", S2C, 12)]
    assert found(after_open(*subscribed(0), (C2S, Credit(0, 1)), (S2C, deliver(0)))) == []


def test_each_deliver_uses_one_credit():
    frames = after_open(*subscribed(1), (S2C, deliver(0, 0)), (S2C, deliver(0, 1)))
    assert found(frames) == [("RMQS-CREDIT-002", S2C, 13)]
    frames = after_open(*subscribed(1), (S2C, deliver(0, 0)), (C2S, Credit(0, 1)), (S2C, deliver(0, 1)))
    assert found(frames) == []


def test_nothing_is_delivered_after_unsubscribe_or_to_no_subscription():
    frames = after_open(*subscribed(5), (C2S, Unsubscribe(6, 0)), (S2C, UnsubscribeResponse(6, 1)),
                        (S2C, deliver(0)))
    assert found(frames) == [("RMQS-UNSUB-001", S2C, 14)]
    assert found(after_open((S2C, deliver(3)))) == [("RMQS-CREDIT-001", S2C, 10)]


def test_credit_responses():
    # success gets no response; an unknown subscription gets code 4
    assert found(after_open(*subscribed(1), (C2S, Credit(0, 1)), (S2C, CreditResponse(4, 0)))) == \
        [("RMQS-CREDIT-003", S2C, 13)]
    obs, violations = run(after_open((C2S, Credit(2, 1)), (S2C, CreditResponse(4, 2))))
    assert violations == [] and obs.exchanges[-1].kind == "Credit"
    assert found(after_open((C2S, Credit(2, 1)), (S2C, CreditResponse(6, 2)))) == [("RMQS-CREDIT-004", S2C, 11)]
    assert found(after_open((S2C, CreditResponse(4, 2)))) == [("RMQS-FRAME-003", S2C, 10)]


def test_chunks_in_offset_order_with_time_going_forward():
    frames = after_open(*subscribed(9), (S2C, deliver(0, 10, 5, 2000)), (S2C, deliver(0, 12, 1, 2000)),
                        (S2C, deliver(0, 20, 1, 1000)))
    assert found(frames) == [("RMQS-DELIVER-005", S2C, 13), ("RMQS-DELIVER-008", S2C, 14)]


def test_deliver_version_2_only_after_the_client_announced_it():
    frames = after_open(*subscribed(9), (S2C, deliver(0, version=2)))
    assert found(frames) == [("RMQS-DELIVER-001", S2C, 12)]
    announce = [(C2S, codec.ExchangeCommandVersions(5, ((8, 1, 2),))),
                (S2C, codec.ExchangeCommandVersionsResponse(5, 1, ((8, 1, 2),)))]
    frames = after_open(*announce, (C2S, Subscribe(6, 0, "s", 1, None, 9)), (S2C, SubscribeResponse(6, 1)),
                        (S2C, deliver(0, version=2)))
    assert found(frames) == []


def test_frames_above_the_negotiated_frame_max():
    big = (C2S, Publish(1, (PublishedMessage(1, b"x" * 5000),)))
    frames = handshake(4096) + [big, (S2C, Close(1, 14, "frame too large"))]
    assert found(frames) == [("RMQS-FRAME-007", C2S, 10)]
    frames = handshake(4096) + [big, (S2C, Close(1, 13, "unknown frame"))]
    assert found(frames) == [("RMQS-FRAME-007", C2S, 10), ("RMQS-FRAME-007", S2C, 11)]
    # RabbitMQ 3.10 does not enforce it (SPEC_NOTES): the client's breach only
    assert found(handshake(4096) + [big], "rabbitmq-3.10", closes=[(S2C, "fin")]) == [("RMQS-FRAME-007", C2S, 10)]
    frames = handshake(4096) + subscribed(1) + [(S2C, Deliver(0, build_chunk([SimpleEntry(b"y" * 5000)], 0, 1)))]
    assert found(frames) == [("RMQS-TUNE-001", S2C, 12)]


# --- framing -------------------------------------------------------------------------------------------

def _error_of(data: bytes, origin: str) -> FrameError:
    with pytest.raises(FrameError) as info:
        codec.Decoder(origin=origin).feed(data)
    return info.value


GOOD_CHUNK = build_chunk([SimpleEntry(b"abc")], 0, 1).encode()


@pytest.mark.parametrize("direction,data,rule", [
    (C2S, codec.encode_raw(0x0042, 1, b"\0\0\0\1"), "RMQS-FRAME-009"),
    (C2S, codec.encode_raw(15, 7, b"\0\0\0\1\0\0\0\0"), "RMQS-FRAME-010"),
    (C2S, b"\0\0\0\2\0\1", "RMQS-FRAME-011"),
    (C2S, codec.encode_raw(14, 1, b"\0\0\0\1\0\x09ab"), "RMQS-TYPE-001"),
    (S2C, b"\0\0\0\1\0", "RMQS-FRAME-001"),
    (S2C, codec.encode_raw(0x8002, 1, b"\0\0\0\1\0\1"), "RMQS-FRAME-002"),
    (S2C, codec.encode_raw(0x8001, 1, b"\0\0\0\1\0"), "RMQS-TYPE-001"),
    (S2C, codec.encode_raw(8, 1, b"\0" + GOOD_CHUNK[:32] + b"\0\0\0\0" + GOOD_CHUNK[36:]), "RMQS-DELIVER-003"),
    (S2C, codec.encode_raw(8, 1, b"\0" + b"\x60" + GOOD_CHUNK[1:]), "RMQS-DELIVER-002"),
])
def test_decode_errors_map_to_their_rule(direction, data, rule):
    obs = StreamObserver()
    for i, (d, f) in enumerate(handshake()):
        obs.frame(d, f, i, 0.0)
    obs.malformed(direction, _error_of(data, "client" if direction == C2S else "server"), H, 0.0)
    assert [(v.requirement, v.direction, v.index) for v in obs.violations] == [(rule, direction, H)]


def test_after_a_bad_client_frame_the_server_owes_close_13():
    def observer():
        obs = StreamObserver()
        for i, (d, f) in enumerate(handshake()):
            obs.frame(d, f, i, 0.0)
        obs.malformed(C2S, _error_of(codec.encode_raw(0x0042, 1, b""), "client"), H, 0.0)
        return obs
    obs = observer()
    obs.frame(S2C, Close(1, 13, "unknown frame"), H, 0.0)
    obs.closed(S2C, "fin", H + 1, 0.0)
    assert [v.requirement for v in obs.violations] == ["RMQS-FRAME-009"]
    obs = observer()
    obs.frame(S2C, Close(1, 14, "?"), H, 0.0)
    assert [(v.requirement, v.direction) for v in obs.violations] == [("RMQS-FRAME-009", C2S),
                                                                      ("RMQS-FRAME-009", S2C)]
    obs = observer()
    obs.closed(S2C, "rst", H, 0.0)
    assert [(v.requirement, v.direction) for v in obs.violations] == [("RMQS-FRAME-009", C2S),
                                                                      ("RMQS-FRAME-009", S2C)]


def test_a_capture_that_starts_mid_connection_is_judged_on_what_needs_no_history():
    # first frame a response: responses to unseen requests, deliveries to unseen subscriptions
    frames = [(S2C, CreateResponse(5, 1)), (S2C, deliver(0)), (C2S, Create(6, "s", {})),
              (S2C, CreateResponse(6, 99))]
    assert found(frames) == [("RMQS-FRAME-003", S2C, 3)]


# --- a pcap with injected violations ----------------------------------------------------------------

def test_a_pcap_with_injected_violations(tmp_path):
    e = codec.encode
    path = tmp_path / "rmqs.pcap"
    frames = handshake() + [
        (C2S, Create(5, "s", {})),                                        # 10
        (S2C, CreateResponse(5, 1)),                                      # 11
        (C2S, Subscribe(6, 0, "s", 1, None, 1)),                          # 12
        (S2C, SubscribeResponse(6, 1)),                                   # 13
        (S2C, deliver(0, 0)),                                             # 14
        (S2C, deliver(0, 1)),                                             # 15 injected: no credit left
        (C2S, Metadata(7, ("s",))),                                       # 16
        (S2C, SubscribeResponse(7, 1)),                                   # 17 injected: wrong key
        (C2S, Unsubscribe(8, 0)),                                         # 18
        (S2C, UnsubscribeResponse(9, 1)),                                 # 19 injected: unknown id
        (C2S, Close(10, 1, "bye")),                                       # 20
        (S2C, CloseResponse(10, 1)),                                      # 21
    ]
    with PcapWriter(str(path)) as w:
        conv = TcpConversation(w, ("10.0.0.1", 40000), ("10.0.0.2", SPEC.default_port), 10.0)
        for i, (direction, frame) in enumerate(frames):
            conv.data(direction, e(frame), 10.0 + i / 10)
        conv.close(C2S, 12.5)
        conv.close(S2C, 12.6)
    tables = analyze([str(path)], "rabbitmq-stream")
    violations = sorted((v["requirement"], v["direction"], v["index"]) for v in tables["violations"])
    assert violations == [("RMQS-CREDIT-002", S2C, 15), ("RMQS-FRAME-002", S2C, 17),
                          ("RMQS-FRAME-003", S2C, 19)]
    latency = {r["index"]: r["latency"] for r in tables["frames"]}
    assert latency[1] == pytest.approx(0.1)           # PeerProperties answered
    assert latency[7] == pytest.approx(0.1)           # the client's Tune answers the server's
    assert latency[11] == pytest.approx(0.1)
    assert latency[17] == pytest.approx(0.1)          # paired (wrong key) all the same
    assert latency[21] == pytest.approx(0.1)
    assert latency[14] is None and latency[19] is None
    assert tables["flows"][0]["exchanges"] == 9


# --- the repository's captures --------------------------------------------------------------------

def test_the_reference_client_capture_has_no_violations():
    tables = analyze([str(CAPTURES / "client.pcap.gz")], "rabbitmq-stream")
    assert tables["violations"] == []
    kinds = {r["type"] for r in tables["frames"] if r["latency"] is not None}
    assert {"PublishConfirm", "SubscribeResponse", "CloseResponse", "TuneResponse"} <= kinds


def test_the_suite_capture_has_no_server_violations():
    tables = analyze([str(CAPTURES / "suite.pcap.gz")], "rabbitmq-stream")
    assert [v for v in tables["violations"] if v["direction"] == S2C] == []
    # the suite's deliberately bad client frames are found
    rules = {v["requirement"] for v in tables["violations"]}
    assert {"RMQS-FRAME-007", "RMQS-FRAME-009", "RMQS-FRAME-010", "RMQS-FRAME-011", "RMQS-TYPE-001",
            "RMQS-HS-016", "RMQS-HS-017", "RMQS-FRAME-003"} <= rules


def test_real_rabbitmq_and_rstream_publish_and_consume_cleanly():
    tables = analyze([str(REAL / "rabbitmq-stream-rstream.pcap")], "rabbitmq-stream", profile="rabbitmq-3.10")
    assert tables["violations"] == []
    assert sum(1 for r in tables["frames"] if r["latency"] is not None) > 20


def test_real_rstream_leaves_without_answering_the_servers_close():
    tables = analyze([str(REAL / "rabbitmq-stream-rstream-probe-unknown-cmds.pcap")], "rabbitmq-stream",
                     profile="rabbitmq-3.10")
    # RabbitMQ 3.10.8 answers ExchangeCommandVersions (27) and CreateSuperStream (29), keys it
    # does not know, with Close(13) (SPEC_NOTES.md) and waits; rstream 1.1.1 never sends the
    # CloseResponse ("Close ... Expects response? Yes") and closes the socket 200 ms later,
    # before the server does: a true client breach of RMQS-CLOSE-003. The server is right.
    found_ = sorted((v["requirement"], v["direction"], v["index"]) for v in tables["violations"])
    assert found_ == [("RMQS-CLOSE-003", C2S, 13), ("RMQS-CLOSE-003", C2S, 13)]
    # under the current profile the same Close(13) answers a command the server should know
    # (RMQS-NEW-001): the observer does not hold a 3.10 server to that (no answer is paired)
    assert all(v["direction"] == C2S for v in analyze(
        [str(REAL / "rabbitmq-stream-rstream-probe-unknown-cmds.pcap")], "rabbitmq-stream")["violations"])
