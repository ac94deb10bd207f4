"""The SignalR server session (wirecheck/reference_impl/signalr/session.py) in memory: handshake paths,
timers with a fake clock, streams played on ticks, client streams, bounds, protocol errors,
and the draft profile's readings."""
import pytest

from wirecheck.reference_impl.signalr import codec
from wirecheck.reference_impl.signalr.messages import (CancelInvocation, Close, Completion,
                                             HandshakeRequest, HandshakeResponse, Invocation,
                                             Ping, StreamCompletion, StreamInvocation, StreamItem)
from wirecheck.reference_impl.signalr.session import HubConfig, HubSession


class Peer:
    """A client speaking to one session: encodes, feeds, decodes what comes back."""

    def __init__(self, protocol="json", profile="v1", handshake=True, **config):
        self.protocol, self.profile = protocol, profile
        self.session = HubSession(HubConfig(profile=profile, **config))
        self.decoder = codec.Decoder(origin="server", protocol=protocol, profile=profile)
        self.now = 100.0
        self.records: list[bytes] = []
        if handshake:
            out = self.send(HandshakeRequest(protocol, None if profile == "draft" else 1))
            assert out == ([] if profile == "draft" else [HandshakeResponse()])

    def _decode(self, records):
        self.records += records
        out = []
        for r in records:
            got = self.decoder.feed(r)
            assert len(got) == 1, f"one record, one message: {r!r}"
            out += got
        return out

    def send(self, *messages, raw: bytes = b""):
        wire = b"".join(codec.encode(m, self.protocol, self.profile) for m in messages) + raw
        return self._decode(self.session.receive(wire, self.now))

    def tick(self, at: float):
        self.now = at
        return self._decode(self.session.tick(at))


@pytest.mark.parametrize("protocol", ["json", "messagepack"])
def test_handshake_response_is_json_then_protocol_records(protocol):
    peer = Peer(protocol)
    assert peer.records == [b"{}\x1e"]
    assert peer.session.binary is (protocol == "messagepack")
    assert peer.send(Invocation("Echo", ["x"], "1")) == [Completion.with_result("1", "x")]


@pytest.mark.parametrize("request_bytes,error", [
    (b'{"protocol":"xml","version":1}\x1e', "The protocol 'xml' is not supported."),
    (b'{"protocol":"json","version":2}\x1e', "The server does not support version 2 of the 'json' protocol."),
    (b'{"protocol":"json"}\x1e', "Handshake was rejected: handshake request has no 'version'"),
    (b'not json\x1e', None),
])
def test_handshake_failures_answer_an_error_and_close(request_bytes, error):
    session = HubSession()
    out = session.receive(request_bytes, 0.0)
    assert session.closed and len(out) == 1
    answer = codec.Decoder(origin="server").feed(out[0])
    assert isinstance(answer[0], HandshakeResponse) and answer[0].error
    if error:
        assert answer[0].error == error
    assert session.receive(b'{"type":6}\x1e', 1.0) == []


def test_draft_handshake_has_no_answer_and_failure_closes_silently():
    session = HubSession(HubConfig(profile="draft"))
    assert session.receive(b'{"protocol":"json"}\x1e', 0.0) == [] and not session.closed
    session = HubSession(HubConfig(profile="draft"))
    assert session.receive(b'{"protocol":"xml"}\x1e', 0.0) == [] and session.closed


def test_handshake_timeout_and_first_tick():
    session = HubSession(HubConfig(handshake_timeout=2.0))
    assert session.next_deadline() == 0.0              # tick once to learn the time
    assert session.tick(10.0) == [] and session.next_deadline() == 12.0
    assert session.tick(11.9) == [] and not session.closed
    assert session.tick(12.0) == [] and session.closed
    assert session.next_deadline() is None


def test_keep_alive_ping_and_client_timeout():
    peer = Peer(keep_alive_interval=1.0, client_timeout=3.0)
    assert peer.session.next_deadline() == 101.0
    assert peer.tick(100.5) == []
    assert peer.tick(101.0) == [Ping()]
    assert peer.tick(101.5) == []                      # a Ping counts as sent
    assert peer.tick(102.0) == [Ping()]
    peer.now = 102.5
    peer.send(Ping())                                  # the client is alive
    assert peer.session.next_deadline() == 103.0
    assert peer.tick(105.4) == [Ping()] and not peer.session.closed
    assert peer.tick(105.5) == [] and peer.session.closed


def test_draft_sends_no_ping():
    peer = Peer(profile="draft", keep_alive_interval=1.0, client_timeout=30.0)
    assert peer.tick(110.0) == []


@pytest.mark.parametrize("protocol", ["json", "messagepack"])
def test_stream_items_follow_the_clock(protocol):
    peer = Peer(protocol)
    assert peer.send(StreamInvocation("c", "Counter", [3, 100])) == [StreamItem("c", 0)]
    assert peer.session.next_deadline() == pytest.approx(100.1)
    assert peer.tick(100.05) == []
    assert peer.tick(100.1) == [StreamItem("c", 1)]
    assert peer.tick(100.3) == [StreamItem("c", 2), Completion("c")]
    assert peer.tick(100.4) == []


def test_zero_interval_stream_is_sent_in_bounded_batches():
    peer = Peer(max_items_per_tick=10)
    first = peer.send(StreamInvocation("e", "Counter", [25, 0]))
    assert first == [StreamItem("e", i) for i in range(10)]
    assert peer.session.next_deadline() == peer.now          # the rest at once, in the next tick
    assert peer.tick(peer.now) == [StreamItem("e", i) for i in range(10, 20)]
    assert peer.tick(peer.now) == [StreamItem("e", i) for i in range(20, 25)] + [Completion("e")]
    # An endless stream never goes faster than one item per millisecond.
    assert peer.send(StreamInvocation("f", "Endless", [0])) == [StreamItem("f", 0)]
    assert peer.tick(peer.now + 0.0035) == [StreamItem("f", i) for i in (1, 2, 3)]
    peer.send(CancelInvocation("f"))
    assert peer.tick(200.0) == []


def test_draft_streams_end_with_stream_completion_and_reuse_is_an_error():
    peer = Peer(profile="draft")
    got = peer.send(Invocation("StreamFailure", [1], "s"))
    assert got == [StreamItem("s", 0), StreamCompletion("s", "Ran out of data!")]
    assert peer.send(Invocation("Echo", ["again"], "s")) == [] and peer.session.closed


def test_v1_a_stream_started_with_an_id_in_use_is_refused_but_finished_ids_are_reusable():
    peer = Peer()
    assert peer.send(StreamInvocation("x", "Endless", [1000]))[0] == StreamItem("x", 0)
    assert peer.send(StreamInvocation("x", "Counter", [1, 0])) == [
        Completion.with_error("x", "Invocation ID 'x' is already in use.")]
    # a plain Invocation with that id is run: ASP.NET Core's dispatcher checks the id only
    # when a stream starts
    assert peer.send(Invocation("Echo", ["a"], "x")) == [Completion.with_result("x", "a")]
    peer.send(CancelInvocation("x"))
    assert peer.send(Invocation("Echo", ["b"], "x")) == [Completion.with_result("x", "b")]


def test_client_stream_with_error_completion_fails_the_call():
    peer = Peer("messagepack")
    assert peer.send(Invocation("Sum", [], "1", stream_ids=["a"]), StreamItem("a", 5)) == []
    assert peer.send(Completion.with_error("a", "client gave up")) == [
        Completion.with_error("1", "Client stream failed: client gave up")]


def test_upload_items_are_bounded():
    peer = Peer(max_upload_items=3)
    peer.send(Invocation("Sum", [], "1", stream_ids=["a"]))
    assert peer.send(*[StreamItem("a", i) for i in range(3)]) == []
    out = peer.send(StreamItem("a", 3))
    assert isinstance(out[-1], Close) and out[-1].error and peer.session.closed


def test_active_streams_are_bounded():
    peer = Peer(max_streams=2)
    peer.send(StreamInvocation("1", "Endless", [1000]), StreamInvocation("2", "Endless", [1000]))
    got = peer.send(StreamInvocation("3", "Endless", [1000]))
    assert got == [Completion.with_error("3", "Too many active streams on this connection.")]


def test_record_over_the_receive_limit_closes_with_an_error():
    peer = Peer("messagepack", max_receive=100)
    out = peer.send(Invocation("Echo", ["x" * 200], "big"))
    assert isinstance(out[-1], Close) and "LENGTH_TOO_LARGE" in out[-1].error and peer.session.closed


@pytest.mark.parametrize("raw,category", [
    (b'{"type":3,"invocationId":"1","result":1,"error":"x"}\x1e', "CONFLICTING_FIELDS"),
    (b'{"type":1,"invocationId":"1"}\x1e', "MISSING_FIELD"),
    (b'{"type":1,"invocationId":"1","target":5,"arguments":[]}\x1e', "BAD_VALUE"),
    (b'{"type":1,\x1e', "BAD_ENCODING"),
])
def test_protocol_errors_close_with_the_category(raw, category):
    peer = Peer()
    out = peer.send(raw=raw)
    assert out == [Close(error=out[0].error)] and category in out[0].error
    assert peer.session.errors[0][0] == category and peer.session.closed


def test_unknown_types_are_ignored_in_v1_and_fatal_in_the_draft():
    v1 = Peer()
    assert v1.send(Invocation("Echo", ["x"], "1"), raw=b'{"type":42}\x1e') == [Completion.with_result("1", "x")]
    assert not v1.session.closed
    draft = Peer(profile="draft")
    assert draft.send(raw=b'{"type":6}\x1e') == [] and draft.session.closed


def test_draft_responses_for_unknown_ids_are_protocol_errors():
    peer = Peer(profile="draft")
    assert peer.send(Completion("never")) == [] and peer.session.closed
    assert peer.session.errors[0][0] == "UNKNOWN_INVOCATION_ID"


def test_client_results_and_server_ids():
    peer = Peer()
    out = peer.send(Invocation("AskMe", ["Q", 1], "1"))
    assert out == [Invocation("Q", [1], "s0")]
    assert peer.send(Completion.with_result("s0", 2)) == [Completion.with_result("1", 2)]
    # A second answer for a finished server invocation: ignored in v1.
    assert peer.send(Completion.with_result("s0", 3)) == [] and not peer.session.closed


def test_close_from_client_ends_the_session_and_connection_lost_is_idempotent():
    peer = Peer()
    assert peer.send(Close()) == [] and peer.session.closed
    state = peer.session.state
    peer.session.connection_lost()
    peer.session.connection_lost()
    assert state.connections == 0
