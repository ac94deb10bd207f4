"""Drivers that carry the VibeMQ machine's steps to a broker
(:mod:`wirecheck.conformance.strategies.vibemq_machine` explains the interface): :class:`SessionDriver`
runs reference sessions in memory over one broker state with a frozen clock,
:class:`WireDriver` talks to a target through the suite's ``Vibe`` helper. Both end every
exchange with a Ping barrier, and open probe connections (``probe``) for the machine's
(phase x command) matrix.
"""
from __future__ import annotations

import itertools
import time
from collections import deque

from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import CommandType as T
from wirecheck.reference_impl.vibemq.session import DEFAULT_PASSWORD, SessionConfig, VibeSession
from wirecheck.reference_impl.vibemq.state import BrokerState, StateConfig

from .state_matrix import probe_answers

QUEUE_POOL = 3                 # few names, so creates collide and deleted queues come back


class SessionDriver:
    """Reference sessions in memory over one BrokerState; the clock moves only in ``advance``."""

    exact = True                 # compare whole messages
    clock_control = True
    payload_options = True       # CreateQueue options may travel in the payload (real client)

    def __init__(self, profile: str = "document", *, ack_timeout: float = 10.0,
                 retry_base_delay: float = 1.0, retry_max_delay: float = 4.0) -> None:
        from wirecheck.conformance.profiles import load_profile
        from wirecheck.reference_impl.vibemq import SPEC
        self.profile = load_profile(SPEC, profile)
        self.reading = profile
        self.state = BrokerState(StateConfig(ack_timeout=ack_timeout, retry_base_delay=retry_base_delay,
                                             retry_max_delay=retry_max_delay))
        self.config = SessionConfig(profile=profile)
        self.all_due = ack_timeout + retry_max_delay + 1.0
        self.now = 1000.0
        self.sessions: list[VibeSession] = []
        self.decoders: list[codec.Decoder] = []
        self.pending: list[list[Message]] = []
        self._ids = itertools.count(1)
        self.queue_names = [f"q{i}" for i in range(QUEUE_POOL)]
        self.exclusive = True        # no queues but the machine's

    def feature(self, name: str, default: bool = True) -> bool:
        return self.profile.feature(name, default)

    def _encode(self, message: Message) -> bytes:
        return codec.encode(message, self.reading)

    def _feed(self, slot: int, out: list[bytes]) -> list[Message]:
        return self.decoders[slot].feed(b"".join(out))

    def open(self, slot: int) -> None:
        session = VibeSession(self.state, self.config)
        decoder = codec.Decoder(profile=self.reading, origin="server")
        if slot == len(self.sessions):
            self.sessions.append(session)
            self.decoders.append(decoder)
            self.pending.append([])
        else:
            self.sessions[slot], self.decoders[slot], self.pending[slot] = session, decoder, []
        cid = f"conn-{next(self._ids)}"
        [ack] = self._feed(slot, session.receive(self._encode(
            Message(T.CONNECT, cid, headers={"authPassword": DEFAULT_PASSWORD})), self.now))
        assert ack.type == T.CONNECT_ACK, ack

    def exchange(self, slot: int, messages: list[Message]) -> list[Message]:
        pid = f"barrier-{next(self._ids)}"
        data = b"".join(self._encode(m) if isinstance(m, Message) else m
                        for m in messages + [Message(T.PING, pid)])
        session = self.sessions[slot]
        answers = self.pending[slot] + self._feed(slot, session.receive(data, self.now))
        self.pending[slot] = []
        assert not session.closed, f"the session closed: {session.close_reason!r}"
        return split_at_barrier(answers, pid)

    def disconnect(self, slot: int, message: Message) -> list[Message]:
        session = self.sessions[slot]
        out = self.pending[slot] + self._feed(slot, session.receive(self._encode(message), self.now))
        assert session.closed, "Disconnect did not close the session"
        return out

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.pending[0] += self._feed(0, self.sessions[0].tick(self.now))

    def probe(self, connect: bool, messages: list) -> tuple[list, bool]:
        """A fresh session over the same state (past Connect with ``connect``): ``messages``
        (Message or bytes) and a barrier Ping; (the answers before the Pong, closed)."""
        session = VibeSession(self.state, self.config)
        decoder = codec.Decoder(profile=self.reading, origin="server")
        try:
            if connect:
                [ack] = decoder.feed(b"".join(session.receive(self._encode(
                    Message(T.CONNECT, "probe-connect", headers={"authPassword": DEFAULT_PASSWORD})), self.now)))
                assert ack.type == T.CONNECT_ACK, ack
            pid = f"barrier-{next(self._ids)}"
            data = b"".join(m if isinstance(m, bytes) else self._encode(m) for m in messages)
            got = decoder.feed(b"".join(session.receive(data + self._encode(Message(T.PING, pid)), self.now)))
            if session.closed:
                return got, True
            return split_at_barrier(got, pid), False
        finally:
            session.connection_lost()

    def pace(self) -> None:
        pass

    def close(self) -> None:
        for session in self.sessions:
            session.connection_lost()


class WireDriver:
    """A target through the suite's ``Vibe`` helper: one connection per slot."""

    exact = False                # answers may carry more than the reference's headers
    clock_control = False
    payload_options = False      # options as headers, as the suite sends them
    exclusive = False            # other tests' queues may be listed too
    HEADROOM = 16                # more than one step sends on one connection

    def __init__(self, vibe, max_answers: int = 64) -> None:
        self.vibe = vibe
        self.reading = vibe.reading
        self.max_answers = max_answers
        self.conns: list = []
        self.sent: list[deque] = []
        self.queue_names = [vibe.queue(f"sm{i}") for i in range(QUEUE_POOL)]
        self.rate = int(vibe.timing("max_messages_per_second", 0))

    def feature(self, name: str, default: bool = True) -> bool:
        return self.vibe.feature(name, default)

    def open(self, slot: int) -> None:
        conn = self.vibe.connect(name=f"state machine {slot}")
        if slot == len(self.conns):
            self.conns.append(conn)
            self.sent.append(deque())
        else:
            self.conns[slot], self.sent[slot] = conn, deque()
        self.sent[slot].append(time.monotonic())

    def _send(self, slot: int, messages: list[Message]) -> None:
        self.conns[slot].send(*messages)
        now = time.monotonic()
        self.sent[slot].extend([now] * len(messages))

    def exchange(self, slot: int, messages: list[Message]) -> list[Message]:
        from wirecheck.conformance.target.connection import TargetError
        pid = self.vibe.new_id("barrier")
        self._send(slot, messages + [Message(T.PING, pid)])
        answers = []
        while True:
            message = self.vibe.recv(self.conns[slot], f"answers, then the barrier's Pong({pid})")
            answers.append(message)
            if message.type == T.PONG and message.id == pid:
                return split_at_barrier(answers, pid)
            if len(answers) > len(messages) + self.max_answers:
                raise TargetError(f"{len(answers)} answers to {len(messages)} messages and no barrier")

    def disconnect(self, slot: int, message: Message) -> list[Message]:
        from wirecheck.conformance.target.connection import TargetClosed, TargetError
        self._send(slot, [message])
        answers = []
        while True:
            try:
                answers.append(self.vibe.recv(self.conns[slot], "the connection to close after Disconnect"))
            except TargetClosed:
                return answers
            if len(answers) > self.max_answers:
                raise TargetError("the connection stays open after Disconnect")

    def advance(self, seconds: float) -> None:
        raise AssertionError("time_passes is only for drivers with clock_control")

    def probe(self, connect: bool, messages: list) -> tuple[list, bool]:
        """As :meth:`SessionDriver.probe`, on a new connection (not paced: one per step)."""
        conn = self.vibe.connect(name="probe") if connect else self.vibe.open("probe")
        pid = self.vibe.new_id("barrier")
        try:
            conn.send(*messages, Message(T.PING, pid))
            answers, answer = probe_answers(
                lambda: self.vibe.recv(conn, f"the close, or answers then the barrier's Pong({pid})"),
                lambda m: m.type == T.PONG and m.id == pid, len(messages) + self.max_answers)
            return answers, answer is None
        finally:
            conn.close()

    def pace(self) -> None:
        """Stay under the profile's ``max_messages_per_second`` (a one-second window per
        connection) with room for a whole step; called between steps only, never while a
        delivery waits for its ack."""
        if not self.rate:
            return
        room = min(self.HEADROOM, self.rate // 2)
        for window in self.sent:
            while True:
                now = time.monotonic()
                while window and window[0] < now - 1.0:
                    window.popleft()
                if len(window) + room <= self.rate:
                    break
                time.sleep(window[0] + 1.0 - now + 0.01)

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


def split_at_barrier(answers: list, pid: str) -> list:
    for i, message in enumerate(answers):
        if message.type == T.PONG and message.id == pid:
            assert i == len(answers) - 1, f"messages after the barrier's Pong: {answers[i + 1:]}"
            return answers[:i]
    raise AssertionError(f"no Pong({pid}) in {[codec.frame_to_dict(m) for m in answers]}")
