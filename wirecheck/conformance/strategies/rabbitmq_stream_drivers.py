"""Drivers that carry the RabbitMQ Stream state machine's requests to a server
(:mod:`wirecheck.conformance.strategies.rabbitmq_stream_machine` explains the interface):
:class:`SessionDriver` runs the reference session in memory, :class:`WireDriver` speaks to a
target over a :class:`wirecheck.conformance.target.connection.Connection`. Both end each exchange with a barrier
Metadata request whose answer must come next, so "no answer" is proven, never waited for.
"""
from __future__ import annotations

import itertools

from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.codec import PublishedMessage
from wirecheck.reference_impl.rabbitmq_stream.constants import Code, OffsetType
from wirecheck.reference_impl.rabbitmq_stream.session import SessionConfig, StreamSession
from wirecheck.reference_impl.rabbitmq_stream.state import BrokerState
from wirecheck.reference_impl.rabbitmq_stream.store import StreamStore

from .rabbitmq_stream import SERVER_CLASSES
from .state_matrix import UNKNOWN, probe_answers

#: Barrier Metadata requests use correlation ids above every id the machine draws.
BARRIER_BASE = 0xB000_0000
SERVER_FRAMES = frozenset(SERVER_CLASSES)
STREAM_NAMES = ("s1", "s2")              # few, so creates, deletes and uses meet
#: Connection phases, as :class:`~reference_impl.rabbitmq_stream.session.Phase` names them.
HANDSHAKE, TUNING, OPENING, OPEN = "handshake", "tuning", "opening", "open"
PHASES = (HANDSHAKE, TUNING, OPENING, OPEN)


def setup_frames(phase: str, user: str, password: str, vhost: str) -> list:
    """(frame, answers it gets) that bring a new connection to ``phase``, one write each."""
    steps = [(codec.PeerProperties(BARRIER_BASE - 4, {"product": "probe"}), 1),
             (codec.SaslHandshake(BARRIER_BASE - 3), 1),
             (codec.SaslAuthenticate(BARRIER_BASE - 2, "PLAIN", b"\0" + user.encode() + b"\0" + password.encode()), 2),
             (codec.TuneResponse(0, 0), 0),
             (codec.Open(BARRIER_BASE - 1, vhost), 1)]
    return steps[:{HANDSHAKE: 0, TUNING: 3, OPENING: 4, OPEN: 5}[phase]]


#: The pseudo-phase after a SaslHandshake before Open: RabbitMQ 3.10 has moved on to the SASL
#: exchange and closes on a PeerProperties there, but answers another SaslHandshake.
AFTER_SASL_HANDSHAKE = "after-sasl-handshake"


def probe_barrier(phase: str, cid: int, names=()):
    """A request answered in ``phase`` that changes nothing: Metadata once open, SaslHandshake
    after a SaslHandshake, else PeerProperties (answered in every phase before Open)."""
    if phase == OPEN:
        return codec.Metadata(cid, tuple(names))
    return codec.SaslHandshake(cid) if phase == AFTER_SASL_HANDSHAKE else codec.PeerProperties(cid, {})


PROBE_STREAM = "wirecheck-no-such-stream"
#: Key 200 (no such command), and Create (13) cut inside its correlation id.
UNKNOWN_FRAME = bytes.fromhex("00000004 00c8 0001")
MALFORMED_FRAME = bytes.fromhex("00000006 000d 0001 0000")


def probe_frame(name: str, cid: int, user: str, password: str, vhost: str) -> bytes:
    s = PROBE_STREAM
    frame = {
        "DeclarePublisher": lambda: codec.DeclarePublisher(cid, 0, "", s),
        "Publish": lambda: codec.Publish(0, (PublishedMessage(1, b"x", None),), 1),
        "QueryPublisherSequence": lambda: codec.QueryPublisherSequence(cid, "", s),
        "DeletePublisher": lambda: codec.DeletePublisher(cid, 0),
        "Subscribe": lambda: codec.Subscribe(cid, 0, s, OffsetType.FIRST, None, 1),
        "Credit": lambda: codec.Credit(0, 1), "StoreOffset": lambda: codec.StoreOffset("ref-a", s, 0),
        "QueryOffset": lambda: codec.QueryOffset(cid, "ref-a", s), "Unsubscribe": lambda: codec.Unsubscribe(cid, 0),
        "Create": lambda: codec.Create(cid, s, {}), "Delete": lambda: codec.Delete(cid, s),
        "Metadata": lambda: codec.Metadata(cid, (s,)), "PeerProperties": lambda: codec.PeerProperties(cid, {}),
        "SaslHandshake": lambda: codec.SaslHandshake(cid),
        "SaslAuthenticate": lambda: codec.SaslAuthenticate(
            cid, "PLAIN", b"\0" + user.encode() + b"\0" + password.encode()),
        "Tune": lambda: codec.TuneResponse(0, 0), "Open": lambda: codec.Open(cid, vhost),
        "Close": lambda: codec.Close(cid, Code.OK, "probe"), "Heartbeat": lambda: codec.Heartbeat(),
        "Route": lambda: codec.Route(cid, "k", s), "Partitions": lambda: codec.Partitions(cid, s),
    }.get(name)
    if frame is not None:
        return codec.encode(frame())
    return UNKNOWN_FRAME if name == UNKNOWN else MALFORMED_FRAME


def _is_barrier_answer(frame, cid: int) -> bool:
    return isinstance(frame, (codec.MetadataResponse, codec.PeerPropertiesResponse, codec.SaslHandshakeResponse)) \
        and frame.correlation_id == cid


def split_at_barrier(answers: list, barrier: int) -> tuple[list, object]:
    """(answers before the barrier's answer, the barrier's answer); it must come last."""
    for i, frame in enumerate(answers):
        if isinstance(frame, codec.MetadataResponse) and frame.correlation_id == barrier:
            if i != len(answers) - 1:
                raise AssertionError(f"frames after the barrier's answer: {answers[i + 1:]}")
            return answers[:i], frame
    raise AssertionError(f"no answer to the barrier Metadata({barrier}) in {answers}")


class SessionDriver:
    """The reference session in memory, over a fresh in-memory store; time stands still.

    The session answers at once, so everything a request causes precedes the barrier's answer
    and ``done`` is not needed."""

    user, password, vhost = "guest", "guest", "/"
    keys_26_30 = True                  # the reference session knows keys 26-30

    def __init__(self, now: float = 1_700_000_000.0, config: SessionConfig | None = None) -> None:
        self.now = now
        self.session = StreamSession(BrokerState(StreamStore(None)), config or SessionConfig(),
                                     clock=lambda: self.now)
        # Server-to-client bytes, whatever the tuned frame_max (a Deliver may exceed it).
        self.decoder = codec.Decoder(codec.StreamConfig(max_frame_size=0), origin="server")
        self.barrier_answer = None
        self._barriers = itertools.count(BARRIER_BASE)

    @property
    def closed(self) -> bool:
        return self.session.closed

    def stream(self, name: str) -> str:
        return name

    def exchange(self, frames: list[bytes], barrier: bool, names=(), done=None) -> list:
        wire = b"".join(frames)
        cid = next(self._barriers)
        if barrier:
            wire += codec.encode(codec.Metadata(cid, tuple(names)))
        answers = []
        for out in self.session.receive(wire, self.now):
            got = self.decoder.feed(out)
            # The session hands out whole frames, one per item.
            assert len(got) == 1 and self.decoder.buffered == 0, f"not one whole frame: {out.hex()}"
            assert type(got[0]) in SERVER_FRAMES, f"the server sent a {type(got[0]).__name__}"
            answers.append(got[0])
        if not barrier:
            return answers
        answers, self.barrier_answer = split_at_barrier(answers, cid)
        return answers

    def probe(self, phase: str, wire: bytes, closes: bool, after: str | None = None) -> tuple[list, bool]:
        """A new session over the same state, brought to ``phase``; ``wire``; then, unless the
        model expects the close, a barrier (:func:`probe_barrier`) for phase ``after`` (default
        ``phase``: where ``wire`` leaves the connection). (The answers, closed.)"""
        session = StreamSession(self.session.state, self.session.config, clock=lambda: self.now)
        decoder = codec.Decoder(codec.StreamConfig(max_frame_size=0), origin="server")

        def feed(data: bytes) -> list:
            return [f for out in session.receive(data, self.now) for f in decoder.feed(out)]
        try:
            for frame, count in setup_frames(phase, self.user, self.password, self.vhost):
                got = feed(codec.encode(frame))
                assert len(got) == count and not session.closed, f"probe set-up {frame}: {got}"
            answers = feed(wire)
            if session.closed or closes:
                return answers, session.closed
            cid = next(self._barriers)
            got = feed(codec.encode(probe_barrier(after or phase, cid)))
            assert got and _is_barrier_answer(got[-1], cid), f"no answer to the probe's barrier: {got}"
            return answers + got[:-1], session.closed
        finally:
            session.connection_lost()

    def close(self) -> None:
        self.session.connection_lost()


class WireDriver:
    """A target over one :class:`wirecheck.conformance.target.connection.Connection` (connected, no handshake yet).

    Stream names get ``prefix`` (unique per connection: runs share a broker, and each run
    starts with no stream). ``created`` (a list, e.g. the suite helper's) holds the names this
    driver may have created until :meth:`close` has deleted them."""

    def __init__(self, conn, *, user: str, password: str, vhost: str, prefix: str,
                 keys_26_30: bool = True, created: list | None = None,
                 max_answers: int = 1000, connect=None) -> None:
        self.conn = conn
        self.connect = connect               # another connection, for probes
        self.user, self.password, self.vhost = user, password, vhost
        self.prefix = prefix
        self.keys_26_30 = keys_26_30
        self.created = created if created is not None else []
        self.created.extend(self.stream(n) for n in STREAM_NAMES)
        self.max_answers = max_answers
        self.barrier_answer = None
        self._barriers = itertools.count(BARRIER_BASE)

    @property
    def closed(self) -> bool:
        return self.conn.closed_by_peer

    def stream(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    def exchange(self, frames: list[bytes], barrier: bool, names=(), done=None) -> list:
        from wirecheck.conformance.target.connection import TargetError
        if frames:
            self.conn.send(*[_typed(f) for f in frames])
        answers: list = []
        # What the request must cause (confirms, deliveries) may come after a barrier's answer
        # would: read it first. Each read is bounded by the target timeout.
        while done is not None and not done(answers):
            answers.append(self.conn.recv(expecting="the answers the model expects"))
            if len(answers) > self.max_answers:
                raise TargetError(f"{len(answers)} answers to {len(frames)} frames")
        if not barrier:
            return answers
        cid = next(self._barriers)
        self.conn.send(codec.Metadata(cid, tuple(names)))
        while True:
            frame = self.conn.recv(expecting=f"MetadataResponse({cid}) to the barrier")
            if isinstance(frame, codec.MetadataResponse) and frame.correlation_id == cid:
                self.barrier_answer = frame
                return answers
            answers.append(frame)
            if len(answers) > self.max_answers:
                raise TargetError(f"{len(answers)} answers to {len(frames)} frames and no barrier answer")

    def probe(self, phase: str, wire: bytes, closes: bool, after: str | None = None) -> tuple[list, bool]:
        """As :meth:`SessionDriver.probe`, on a new connection, one frame per write (RabbitMQ
        3.10.8 drops a connection whose frames come pipelined before Open). A Close from the
        target is answered with a CloseResponse (it may wait for one, RMQS-FRAME-009)."""
        from wirecheck.conformance.target.connection import TargetError
        conn = self.connect()
        try:
            for frame, count in setup_frames(phase, self.user, self.password, self.vhost):
                conn.send(frame)
                got = [conn.recv(expecting=f"the answer to the probe's {type(frame).__name__}")
                       for _ in range(count)]
                if any(isinstance(f, codec.Close) for f in got):
                    raise TargetError(f"probe set-up {frame}: {got}")
            conn.send(wire)
            cid = next(self._barriers)
            if not closes:
                conn.send(probe_barrier(after or phase, cid))

            def answer_close(frame) -> None:
                if isinstance(frame, codec.Close):
                    conn.send(codec.CloseResponse(frame.correlation_id, 1))
            answers, answer = probe_answers(
                lambda: conn.recv(expecting="the close" if closes else "answers, then the barrier's"),
                lambda f: _is_barrier_answer(f, cid), self.max_answers, answer_close)
            return answers, answer is None
        finally:
            conn.close()

    def close(self) -> None:
        """Delete this connection's streams (best effort: the connection may be gone), then
        close it."""
        try:
            if not self.conn.closed_by_peer:
                for n, name in enumerate(self.stream(s) for s in STREAM_NAMES):
                    cid = BARRIER_BASE - 8 + n
                    self.conn.send(codec.Delete(cid, name))
                    for _ in range(self.max_answers):
                        frame = self.conn.recv(expecting=f"DeleteResponse({cid}) of {name}")
                        if isinstance(frame, codec.DeleteResponse) and frame.correlation_id == cid:
                            if name in self.created:
                                self.created.remove(name)
                            break
        except AssertionError:           # a TargetError: the suite helper's clean-up retries
            pass
        finally:
            self.conn.close()


def _typed(wire: bytes):
    """The frame ``wire`` encodes exactly, else ``wire``: transcripts then show it decoded."""
    try:
        frames = codec.decode_all(wire, codec.StreamConfig(max_frame_size=0), origin="client")
    except FrameError:
        return wire
    return frames[0] if len(frames) == 1 and codec.encode(frames[0]) == wire else wire
