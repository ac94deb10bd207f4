"""Drivers that carry the RabbitMQ Stream state machine's requests to a server
(:mod:`conformance.strategies.rabbitmq_stream_machine` explains the interface):
:class:`SessionDriver` runs the reference session in memory, :class:`WireDriver` speaks to a
target over a :class:`conformance.target.Connection`. Both end each exchange with a barrier
Metadata request whose answer must come next, so "no answer" is proven, never waited for.
"""
from __future__ import annotations

import itertools

from reference_impl.core.errors import FrameError
from reference_impl.rabbitmq_stream import codec
from reference_impl.rabbitmq_stream.session import SessionConfig, StreamSession
from reference_impl.rabbitmq_stream.state import BrokerState
from reference_impl.rabbitmq_stream.store import StreamStore

from .rabbitmq_stream import SERVER_CLASSES

#: Barrier Metadata requests use correlation ids above every id the machine draws.
BARRIER_BASE = 0xB000_0000
SERVER_FRAMES = frozenset(SERVER_CLASSES)
STREAM_NAMES = ("s1", "s2")              # few, so creates, deletes and uses meet


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

    def close(self) -> None:
        self.session.connection_lost()


class WireDriver:
    """A target over one :class:`conformance.target.Connection` (connected, no handshake yet).

    Stream names get ``prefix`` (unique per connection: runs share a broker, and each run
    starts with no stream). ``created`` (a list, e.g. the suite helper's) holds the names this
    driver may have created until :meth:`close` has deleted them."""

    def __init__(self, conn, *, user: str, password: str, vhost: str, prefix: str,
                 keys_26_30: bool = True, created: list | None = None,
                 max_answers: int = 1000) -> None:
        self.conn = conn
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
        from conformance.target import TargetError
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
