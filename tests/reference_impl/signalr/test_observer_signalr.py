"""The SignalR observer (wirecheck/reference_impl/signalr/observer.py): each rule on messages fed straight
in, a pcap with injected violations through the pipeline, and the repository's captures (the
reference client, the suite, and the real clients of signalr-real-clients.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from wirecheck.conformance.captures.pcapfile import PcapWriter, TcpConversation
from wirecheck.pipeline.local import analyze
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import Category, PayloadError
from wirecheck.reference_impl.core.observer import C2S, S2C
from wirecheck.reference_impl.signalr import codec
from wirecheck.reference_impl.signalr.http_transport import HttpRequest, HttpResponse, WebSocketClose
from wirecheck.reference_impl.signalr.messages import (CancelInvocation, Close, Completion, HandshakeRequest,
                                             HandshakeResponse, Invocation, Ping, StreamCompletion,
                                             StreamInvocation, StreamItem)
from wirecheck.reference_impl.signalr.observer import SignalRObserver

SPEC = registry.get("signalr")
CAPTURES = Path(__file__).resolve().parents[3] / "captures" / "signalr"
OPEN = [(C2S, HandshakeRequest("json", 1)), (S2C, HandshakeResponse())]


def run(items, profile=None):
    """Feed ``(direction, frame)`` pairs, ``(direction, FrameError)`` for a decode error, or
    ``(direction, "fin")`` for an end (index = position, time = index / 100)."""
    obs = SignalRObserver(profile)
    for i, (direction, item) in enumerate(items):
        if isinstance(item, str):
            obs.closed(direction, item, i, i / 100)
        elif isinstance(item, PayloadError):
            obs.malformed(direction, item, i, i / 100)
        else:
            obs.frame(direction, item, i, i / 100)
    return obs, [(v.requirement, v.direction, v.index) for v in obs.violations]


def bad(category: Category, text: str = "bad message") -> PayloadError:
    return PayloadError(text, category=category, protocol="signalr")


# --- a correct conversation ---------------------------------------------------------------------

def test_a_correct_conversation_has_no_violations_and_pairs_responses():
    frames = OPEN + [
        (C2S, Ping()),
        (C2S, Invocation("Echo", ["hi"], "1")),                       # 3
        (S2C, Completion.with_result("1", "hi")),                     # 4
        (C2S, StreamInvocation("2", "Counter", [3])),                 # 5
        (S2C, StreamItem("2", 0)), (S2C, StreamItem("2", 1)),         # 6, 7
        (S2C, Completion("2")),                                       # 8
        (C2S, Invocation("Sum", [], "4", stream_ids=["3"])),          # 9: a client stream
        (C2S, StreamItem("3", 1)), (C2S, Completion("3")),            # 10, 11
        (S2C, Completion.with_result("4", 1)),                        # 12
        (C2S, Invocation("AskMe", [], "5")),                          # 13
        (S2C, Invocation("Question", [], "s0")),                      # 14: the server asks
        (C2S, Completion.with_result("s0", 42)),                      # 15
        (S2C, Completion.with_result("5", 42)),                       # 16
        (C2S, Invocation("Remember", ["x"])),                         # 17: non-blocking
        (C2S, StreamInvocation("6", "Endless", [])),                  # 18
        (S2C, StreamItem("6", 0)), (C2S, CancelInvocation("6")),      # 19, 20
        (S2C, StreamItem("6", 1)),                                    # 21: may still come
        (C2S, Invocation("Echo", ["again"], "1")),                    # 22: "1" is done: reusable
        (S2C, Completion.with_result("1", "again")),                  # 23
        (C2S, Close()), (S2C, WebSocketClose(1000, "")),
    ]
    obs, found = run(frames)
    assert found == []
    pairs = [(e.request, e.response, e.kind) for e in obs.exchanges]
    assert pairs == [(0, 1, "HandshakeRequest"), (3, 4, "Invocation"), (5, 6, "StreamInvocation"),
                     (9, 12, "Invocation"), (14, 15, "Invocation"), (13, 16, "Invocation"),
                     (18, 19, "StreamInvocation"), (22, 23, "Invocation")]
    assert obs.exchanges[1].latency == pytest.approx(0.01)


# --- handshake ------------------------------------------------------------------------------------

def test_the_server_answers_a_handshake_it_was_not_sent():
    assert run([(S2C, HandshakeResponse()), (C2S, HandshakeRequest("json", 1))])[1] == \
        [("SIGR-HS-004", S2C, 0)]


def test_a_first_message_that_is_no_handshake():
    no_handshake = bad(Category.MISSING_FIELD, "handshake request has no 'protocol'")
    # accepted anyway: the server must close (SIGR-HS-003)
    assert run([(C2S, no_handshake), (S2C, HandshakeResponse())])[1] == \
        [("SIGR-HS-001", C2S, 0), ("SIGR-HS-003", S2C, 1)]
    # v1: refused with {"error"} then closed: right
    assert run([(C2S, no_handshake), (S2C, HandshakeResponse("no")), (S2C, WebSocketClose(1000, ""))])[1] == \
        [("SIGR-HS-001", C2S, 0)]
    # v1: closed without the error response (SIGR-HS-005); the draft has no response
    assert run([(C2S, no_handshake), (S2C, "fin")])[1] == [("SIGR-HS-001", C2S, 0), ("SIGR-HS-005", S2C, 1)]
    assert run([(C2S, no_handshake), (S2C, "fin")], profile="draft")[1] == [("SIGR-HS-001", C2S, 0)]


def test_messages_after_a_failed_handshake():
    after = bad(Category.TRAILING_BYTES, "12 bytes after a failed handshake")
    assert run([(C2S, HandshakeRequest("json", 1)), (S2C, HandshakeResponse("no")), (S2C, after)])[1] == \
        [("SIGR-HS-005", S2C, 2)]


# --- invocation rules ----------------------------------------------------------------------------

@pytest.mark.parametrize("frames,expected", [
    ([(S2C, Completion("9"))], ("SIGR-INV-001", S2C, 2)),
    ([(C2S, Invocation("Echo", [], "1")), (S2C, StreamItem("1", 0))], ("SIGR-INV-003", S2C, 3)),
    ([(C2S, Invocation("Echo", [], "1")), (S2C, Completion("1")), (S2C, Completion("1"))],
     ("SIGR-ERR-009", S2C, 4)),
    ([(C2S, StreamInvocation("1", "Counter", [])), (S2C, StreamItem("1", 0)),
      (S2C, Completion.with_result("1", 1))], ("SIGR-STR-002", S2C, 4)),
    ([(C2S, StreamInvocation("1", "Counter", [])), (S2C, Completion.with_result("1", 1))],
     ("SIGR-STR-002", S2C, 3)),
    ([(C2S, Completion("s9"))], ("SIGR-ERR-003", C2S, 2)),
    ([(S2C, Invocation("Ask", [], "s0")), (C2S, StreamItem("s0", 1))], ("SIGR-INV-003", C2S, 3)),
    ([(C2S, Invocation("Sum", [], "2", stream_ids=["1"])), (C2S, Completion("1")),
      (C2S, StreamItem("1", 5))], ("SIGR-ERR-009", C2S, 4)),
])
def test_invocation_rules_v1(frames, expected):
    assert run(OPEN + frames)[1] == [expected]


def test_an_id_still_in_use_is_reused():
    frames = OPEN + [(C2S, StreamInvocation("1", "Endless", [])), (C2S, Invocation("Echo", [], "1")),
                     (S2C, Completion.with_error("1", "Invocation ID '1' is already in use.")),
                     (S2C, StreamItem("1", 0)), (S2C, Completion("1"))]
    # the responses of two calls sharing an id cannot be told apart: only the client's breach
    assert run(frames)[1] == [("SIGR-ERR-007", C2S, 3)]


@pytest.mark.parametrize("frames,expected", [
    ([(C2S, Invocation("Note", [], "1", nonblocking=True)), (S2C, Completion("1"))],
     ("SIGR-INV-007", S2C, 1)),
    ([(C2S, Invocation("Echo", [], "1")), (S2C, Completion("1")), (C2S, Invocation("Echo", [], "1"))],
     ("SIGR-ERR-007", C2S, 2)),
    ([(C2S, Invocation("Echo", [], "1")), (S2C, StreamItem("1", 0)), (S2C, Completion("1"))],
     ("SIGR-ERR-005", S2C, 2)),
    ([(S2C, Invocation("Ask", [], "s0", nonblocking=True)), (C2S, Completion("s0"))],
     ("SIGR-ERR-004", C2S, 1)),
])
def test_invocation_rules_draft(frames, expected):
    assert run(frames, profile="draft")[1] == [expected]


def test_a_draft_stream_ends_with_stream_completion():
    frames = [(C2S, Invocation("Stream", [], "1")), (S2C, StreamItem("1", 0)), (S2C, StreamCompletion("1"))]
    assert run(frames, profile="draft")[1] == []


# --- framing and the v1 close rule ------------------------------------------------------------------

@pytest.mark.parametrize("category,v1,draft", [
    (Category.MISSING_FIELD, "SIGR-ERR-001", "SIGR-ERR-001"),
    (Category.UNKNOWN_FIELD, None, "SIGR-ERR-002"),
    (Category.CONFLICTING_FIELDS, "SIGR-ERR-006", "SIGR-ERR-006"),
    (Category.BAD_VALUE, "SIGR-ERR-011", "SIGR-ERR-011"),
    (Category.UNKNOWN_TYPE, None, "SIGR-ERR-011"),
    (Category.LENGTH_TOO_LARGE, "SIGR-FRAME-003", "SIGR-FRAME-003"),
])
def test_hub_decode_errors(category, v1, draft):
    for profile, rule in (("v1", v1), ("draft", draft)):
        opening = OPEN if profile == "v1" else OPEN[:1]
        found = run(opening + [(C2S, bad(category))], profile=profile)[1]
        assert found == ([(rule, C2S, len(opening))] if rule else [])


UPGRADE = [(C2S, HttpRequest("GET", "/hub?id=x", "HTTP/1.1", (("Upgrade", "websocket"),), b"")),
           (S2C, HttpResponse("HTTP/1.1", 101, "Switching Protocols", (("Upgrade", "websocket"),), b""))]


def test_transport_errors_have_no_catalogue_rule():
    error = bad(Category.BAD_VALUE, "unmasked client frame (RFC 6455 5.1)")
    error.transport = True                  # as the HTTP/WebSocket reader marks its errors
    assert run(UPGRADE + OPEN + [(C2S, error)])[1] == []


def test_a_hub_error_over_a_websocket_has_its_rule_whatever_its_text():
    """The WebSocket layer's errors are told apart by the reader that raised them, not by
    words in their text: a hub message whose headers are wrong says "headers" (it was taken
    for a WebSocket error, and its rule was lost)."""
    error = bad(Category.BAD_VALUE, "'headers' must be a map, not a number")
    assert run(UPGRADE + OPEN + [(C2S, error)])[1] == [("SIGR-ERR-011", C2S, 4)]


def test_a_server_closing_for_a_protocol_error_sends_close_first():
    broken = [(C2S, bad(Category.MISSING_FIELD, "Invocation has no 'target'"))]
    assert run(OPEN + broken + [(S2C, WebSocketClose(1000, ""))])[1] == \
        [("SIGR-ERR-001", C2S, 2), ("SIGR-V1-005", S2C, 3)]
    assert run(OPEN + broken + [(S2C, Close("error")), (S2C, WebSocketClose(1000, ""))])[1] == \
        [("SIGR-ERR-001", C2S, 2)]
    assert run(OPEN[:1] + broken + [(S2C, "fin")], profile="draft")[1] == [("SIGR-ERR-001", C2S, 1)]


def test_a_direction_no_longer_decoded_leaves_the_answers_unjudged():
    # v1 tolerates an unknown type, but the capture reader stops there: the invocation that
    # followed it is unseen, so its Completion is not "never invoked"
    unknown = bad(Category.UNKNOWN_TYPE, "unknown message type 99 (v1 profile)")
    assert run(OPEN + [(C2S, unknown), (S2C, Completion.with_result("b1", "barrier"))])[1] == []


# --- negotiate ------------------------------------------------------------------------------------

def _negotiate(target: str, body: dict, status: int = 200):
    return [(C2S, HttpRequest("POST", target, "HTTP/1.1", (), b"")),
            (S2C, HttpResponse("HTTP/1.1", status, "OK", (), json.dumps(body).encode()))]


def test_negotiate_answers():
    v1 = {"negotiateVersion": 1, "connectionToken": "t", "connectionId": "i",
          "availableTransports": [{"transport": "WebSockets", "transferFormats": ["Text", "Binary"]}]}
    obs, found = run(_negotiate("/hub/negotiate?negotiateVersion=1", v1))
    assert found == [] and [(e.request, e.response, e.kind) for e in obs.exchanges] == [(0, 1, "HttpRequest")]
    lacking = {k: v for k, v in v1.items() if k != "connectionToken"}
    assert run(_negotiate("/hub/negotiate?negotiateVersion=1", lacking))[1] == [("SIGR-HTTP-001", S2C, 1)]
    no_ws = dict(v1, availableTransports=[{"transport": "LongPolling"}])
    assert run(_negotiate("/hub/negotiate?negotiateVersion=1", no_ws))[1] == [("SIGR-HTTP-001", S2C, 1)]
    assert run(_negotiate("/hub/negotiate", {"connectionId": "i"}))[1] == []
    assert run(_negotiate("/hub/negotiate", {"connectionToken": "t"}))[1] == [("SIGR-HTTP-002", S2C, 1)]
    assert run(_negotiate("/hub/negotiate", {}, status=401))[1] == []      # refusals: not judged


# --- a pcap with injected violations --------------------------------------------------------------

def test_a_pcap_with_injected_violations(tmp_path):
    def e(message):
        return codec.encode(message, "json")
    path = tmp_path / "signalr.pcap"
    raw_port = SPEC.default_port + 1                     # the raw TCP transport
    with PcapWriter(str(path)) as w:
        conv = TcpConversation(w, ("10.0.0.1", 40000), ("10.0.0.2", raw_port), 10.0)
        conv.data(C2S, e(HandshakeRequest("json", 1)), 10.0)                   # 0
        conv.data(S2C, e(HandshakeResponse()), 10.1)                           # 1
        conv.data(C2S, e(Invocation("Echo", ["a"], "1")), 10.2)                # 2
        conv.data(S2C, e(StreamItem("1", "a")), 10.3)                          # 3 injected: INV-003
        conv.data(S2C, e(Completion.with_result("1", "a")), 10.4)             # 4
        conv.data(C2S, e(StreamInvocation("2", "Counter", [2])), 10.5)         # 5
        conv.data(S2C, e(StreamItem("2", 0)), 10.75)                           # 6
        conv.data(S2C, e(Completion("2")), 10.8)                               # 7
        conv.data(S2C, e(Completion.with_result("7", 0)), 10.9)                # 8 injected: INV-001
        conv.data(C2S, e(Completion("s5")), 11.0)                              # 9 injected: ERR-003
        conv.close(C2S, 11.1)
        conv.close(S2C, 11.2)
    tables = analyze([str(path)], "signalr")
    found = sorted((v["requirement"], v["direction"], v["index"]) for v in tables["violations"])
    assert found == [("SIGR-ERR-003", C2S, 9), ("SIGR-INV-001", S2C, 8), ("SIGR-INV-003", S2C, 3)]
    latency = {r["index"]: r["latency"] for r in tables["frames"]}
    assert latency[1] == pytest.approx(0.1)
    # the first valid response of each invocation answers it (the StreamItem breaking
    # SIGR-INV-003 does not)
    assert latency[4] == pytest.approx(0.2)
    assert latency[6] == pytest.approx(0.25)
    assert latency[3] is None and latency[7] is None and latency[8] is None


# --- the repository's captures --------------------------------------------------------------------

def _violations(name: str) -> list[tuple]:
    tables = analyze([str(CAPTURES / name)], "signalr")
    return [(v["requirement"], v["direction"], v["index"]) for v in tables["violations"]]


@pytest.mark.parametrize("name", ["client.pcap.gz", "real-js-json.pcap.gz", "real-js-messagepack.pcap.gz",
                                  "real-pysignalr.pcap.gz", "real-signalrcore-json.pcap.gz"])
def test_captures_without_violations(name):
    # The real clients' quirks (signalr-real-clients.md) break no rule: the JS client's Ping
    # before its first call, pysignalr's and signalrcore's client streams without an
    # invocationId (their items carry the stream id the Invocation announced), signalrcore's
    # handshake version 0 and headers, pysignalr's WebSocket close 1011 without a Close.
    assert _violations(name) == []


def test_signalrcore_messagepack_client_stream_is_malformed():
    # A true breach (signalr-real-clients.md, "MessagePack hub messages", signalrcore): its
    # client-stream Invocation [1, {}, "Sum", [], [id]] has no invocationId slot, so an array
    # sits where the Target string belongs ("Invocation Message Encoding"). The server's Close
    # before closing (SIGR-V1-005) is right, so nothing is reported on its side. Decoding goes
    # on past that message (a payload error): the items of the stream it announced are not
    # blamed (their id came in the lost message), and the stream's end, a Completion without
    # its ResultKind ([3, {}, id] with nothing after the id), is a second breach.
    assert _violations("real-signalrcore-messagepack.pcap.gz") == [("SIGR-ERR-011", C2S, 24),
                                                                   ("SIGR-ERR-001", C2S, 29)]


def test_the_suite_capture_has_no_server_violations():
    tables = analyze([str(CAPTURES / "suite.pcap.gz")], "signalr")
    assert [v for v in tables["violations"] if v["direction"] == S2C] == []
    found = {v["requirement"] for v in tables["violations"]}
    assert {"SIGR-HS-001", "SIGR-ERR-001", "SIGR-ERR-003", "SIGR-ERR-007", "SIGR-FRAME-003"} <= found
