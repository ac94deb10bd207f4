"""Drivers that carry the Micromessage2 ack-window machine's requests to a broker
(:mod:`wirecheck.conformance.strategies.micromessage2_machine` explains the interface):
:class:`SessionDriver` runs reference sessions in memory over one shared broker state with a
fake clock; :class:`WireDriver` starts the reference broker and speaks to it over TCP through
the asyncio client (:class:`~reference_impl.micromessage2.client.MM2Client`).

Both end every exchange with a barrier: an unknown command, ``x-wirecheck-barrier``, whose
ERROR frame the server must answer after everything the connection's earlier frames caused
(MM2-CMD-002, the kit's reading: the document has no ping). A driver returns the frames that
came before it, so "no more messages" is proven, never waited for.

Interface (both drivers): ``exact`` (every ack of a SEND is predicted, and the session's
deadline checked), ``clock_control`` (time moves only in ``advance``), ``ack_delay`` (the
broker's delay before acking SENDs below the window), ``expire_choices`` (AckExpireTime values
the machine may ask for in the ``sharpmessaging`` profile; None: the default, 500 ms),
``suggested_expire`` (the AckExpireTime of the ``ack`` the ``sharpmessaging`` broker suggests);
``open(slot, terms) -> extension names in id order``, ``publish(slot, destination, payload)
-> sequence number``, ``subscribe``, ``ack``, ``collect(slot, errors) -> frames``,
``advance(seconds) -> now`` (in memory), ``settle(slot)`` (over the wire: wait until the
broker has acked every SEND of ``slot``), ``drop(slot)``, ``deadline(slot)`` (in memory),
``probe(phase, wire) -> (frames, closed)`` (a new connection brought to ``phase``, then
``wire`` on it, read until the close), ``destination(name)`` (the name on the wire),
``first_sequence`` (None: the machine's draw; else the broker's own), ``close()``.
:class:`TargetDriver` is :class:`WireDriver` against any target (``--target``).
"""
from __future__ import annotations

import asyncio
import struct
from collections import deque
from typing import Optional

from wirecheck.reference_impl.micromessage2 import codec
from wirecheck.reference_impl.micromessage2.broker import MM2Broker
from wirecheck.reference_impl.micromessage2.client import MM2Client, final_handshake
from wirecheck.reference_impl.micromessage2.codec import Command, Error, ExtensionFrame, Handshake, Message
from wirecheck.reference_impl.micromessage2.constants import (ACK, ACK_EXPIRE_TIME, BATCH_ACK, DOTNET,
                                                    MESSAGES_PER_ACK, SUBSCRIBE)
from wirecheck.reference_impl.micromessage2.negotiation import ServerPolicy
from wirecheck.reference_impl.micromessage2.session import MM2Session, SessionConfig
from wirecheck.reference_impl.micromessage2.state import BrokerState
from wirecheck.reference_impl.micromessage2.syntax import Extension, parse_extensions
from wirecheck.reference_impl.micromessage2.window import next_sequence

AWAIT_OFFER, AWAIT_FINAL, OPEN = "await-offer", "await-final", "open"
#: The probe connection's offer: no extensions, which every server accepts.
PROBE_OFFER = Handshake("wirecheck-probe", (), ())

#: The barrier: a command no server knows; its ERROR is the last answer of an exchange.
BARRIER = "x-wirecheck-barrier"
#: More frames than this before the barrier's ERROR: the server floods (the machine never
#: has that many messages in play).
MAX_ANSWERS = 512
#: Frames a connection may hold unread before the driver calls it a flood and drops it (a
#: machine step reads at most MAX_ANSWERS; between steps only the broker's timers add frames).
MAX_UNREAD = 8 * MAX_ANSWERS
_SEQ = struct.Struct(">H")


class WaitExpired(AssertionError):
    """A bounded wait on the broker ran out (the suite counts these against the test's budget:
    hypothesis would otherwise repeat each one while shrinking)."""


def split_at_barrier(frames: list, errors: int) -> tuple[list, list]:
    """(the frames before the barrier's ERROR, the frames after it). ``errors``: how many ERROR
    frames answer the exchange's own requests before the barrier's."""
    seen = 0
    for i, frame in enumerate(frames):
        if isinstance(frame, Error):
            if seen == errors:
                return frames[:i], frames[i + 1:]
            seen += 1
    raise AssertionError(f"no ERROR answering the barrier ({errors} other ERROR frame(s) expected "
                         f"first) in {[codec.frame_to_dict(f) for f in frames]}")


def _ack_id(names) -> Optional[int]:
    return next((i for i, n in enumerate(names, 1) if n in (ACK, BATCH_ACK)), None)


# --- in memory ----------------------------------------------------------------------------------

class _Peer:
    """One in-memory connection: the session, a decoder of what it sends, what it has sent."""

    def __init__(self, session: MM2Session, profile: str, first_send: int) -> None:
        self.session = session
        self.decoder = codec.make_decoder(origin="server", profile=profile)
        self.got: list = []
        self.last_send = first_send - 1
        self.ack_id: Optional[int] = None
        # Deliveries caused by other connections' frames arrive through the push callback.
        session.attach(self.take, lambda: None)

    def take(self, out: list[bytes]) -> None:
        self.got.extend(self.decoder.feed(b"".join(out)))


class SessionDriver:
    """Reference sessions in memory over one :class:`BrokerState`; the clock moves only in
    :meth:`advance`, and each session is ticked when its ``next_deadline()`` has come, as the
    broker's glue does (reference_impl/core/server.py)."""

    exact = True
    clock_control = True
    first_sequence = None
    #: Binary fractions, so that ``now + delay`` is exact and the model's deadlines are the
    #: session's to the bit.
    ack_delay = 0.25
    expire_choices = (None, 125, 250)
    suggested_expire = 500               # the real server's suggestion (SPEC_NOTES)

    def __init__(self, profile: str, first_sequence: int, first_send: int, now: float = 1000.0) -> None:
        self.profile = profile
        self.config = SessionConfig.for_profile(profile, ack_delay=self.ack_delay,
                                                first_sequence=first_sequence)
        self.state = BrokerState()
        self.first_send = first_send
        self.now = now
        self.peers: list[_Peer] = []

    def _feed(self, peer: _Peer, frame) -> None:
        peer.take(peer.session.receive(codec.encode(frame), self.now))
        self._tick(peer)

    def _tick(self, peer: _Peer) -> None:
        due = peer.session.next_deadline()
        if peer.session.closed or due is None or due > self.now:
            return
        peer.take(peer.session.tick(self.now))
        # The glue would re-arm its timer at once for a deadline still past: a busy loop.
        later = peer.session.next_deadline()
        assert later is None or later > self.now, \
            f"the session's deadline {later} is still past (now {self.now}) after its tick"

    def open(self, slot: int, terms) -> tuple[str, ...]:
        peer = _Peer(MM2Session(self.state, self.config), self.profile, self.first_send)
        if slot == len(self.peers):
            self.peers.append(peer)
        else:
            self.peers[slot] = peer
        offer = Handshake(f"machine-{slot}", parse_extensions(terms.required, strict=False),
                          parse_extensions(terms.optional, strict=False))
        self._feed(peer, offer)
        assert len(peer.got) == 1 and isinstance(peer.got[0], Handshake), \
            f"the reply to {codec.frame_to_dict(offer)}: {[codec.frame_to_dict(f) for f in peer.got]}"
        final = final_handshake(offer, peer.got.pop(), terms.accept)
        self._feed(peer, final)
        assert not peer.session.closed, "the session refused the final handshake"
        peer.ack_id = _ack_id(final.names())
        return final.names()

    def publish(self, slot: int, destination: str, payload: bytes) -> int:
        peer = self.peers[slot]
        peer.last_send = next_sequence(peer.last_send)
        self._feed(peer, Message(peer.last_send, destination, payload))
        return peer.last_send

    def subscribe(self, slot: int, destination: str) -> None:
        self._feed(self.peers[slot], Command(SUBSCRIBE, (("destination", destination),)))

    def ack(self, slot: int, sequence: int) -> None:
        peer = self.peers[slot]
        self._feed(peer, ExtensionFrame(peer.ack_id, _SEQ.pack(sequence)))

    def collect(self, slot: int, errors: int) -> list:
        peer = self.peers[slot]
        self._feed(peer, Command(BARRIER))
        assert not peer.session.closed, f"the session of connection {slot} closed"
        frames, after = split_at_barrier(peer.got, errors)
        # In memory nothing can be in transit: the barrier's ERROR must be the last frame.
        assert not after, f"frames after the barrier's ERROR: {[codec.frame_to_dict(f) for f in after]}"
        peer.got = []
        return frames

    def advance(self, seconds: float) -> float:
        self.now += seconds
        for peer in self.peers:
            self._tick(peer)
        return self.now

    def settle(self, slot: int) -> None:
        raise AssertionError("in memory the machine moves the clock instead")

    def deadline(self, slot: int) -> Optional[float]:
        return self.peers[slot].session.next_deadline()

    def drop(self, slot: int) -> None:
        self.peers[slot].session.connection_lost()

    @staticmethod
    def destination(name: str) -> str:
        return name

    def probe(self, phase: str, wire: bytes) -> tuple[list, bool]:
        """A new session over the same state, brought to ``phase``, then ``wire``:
        (its answers, closed)."""
        session = MM2Session(self.state, self.config)
        decoder = codec.make_decoder(origin="server", profile=self.profile)

        def feed(data: bytes) -> list:
            return decoder.feed(b"".join(session.receive(data, self.now)))
        try:
            if phase != AWAIT_OFFER:
                [reply] = feed(codec.encode(PROBE_OFFER))
                if phase == OPEN:
                    assert feed(codec.encode(final_handshake(PROBE_OFFER, reply, ()))) == []
            answers = feed(wire)
            return answers, session.closed
        finally:
            if not session.closed:
                session.connection_lost()

    def close(self) -> None:
        for peer in self.peers:
            if not peer.session.closed:
                peer.session.connection_lost()


# --- over the wire ------------------------------------------------------------------------------

class _RecordingClient(MM2Client):
    """The reference client, also keeping every frame after the handshake in arrival order (the
    machine checks them all; the barrier's ERROR is found among them). Acks of its SENDs still
    go through the client's own window first."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.log: deque = deque()
        self.flooded = False
        self.arrived = asyncio.Event()
        self.ended = asyncio.Event()

    def on_frame(self, frame) -> None:
        if self.flooded:
            return
        if len(self.log) >= MAX_UNREAD:
            # A target that floods (an endless stream of valid frames) must not grow the kit's
            # memory without bound: stop reading, drop the connection, fail the next wait.
            self.flooded = True
            self.log.clear()
            while not self.messages.empty():   # held by failures' tracebacks otherwise
                self.messages.get_nowait()
            del self.errors[20:]
            self.writer.transport.abort()
            self.arrived.set()
            return
        super().on_frame(frame)
        if not isinstance(frame, Handshake):
            self.log.append(frame)
            self.arrived.set()

    def on_closed(self, exc) -> None:
        super().on_closed(exc)
        self.ended.set()
        self.arrived.set()

    async def wait_for_frames(self, timeout: float, what: str) -> None:
        """Wait (at most ``timeout`` seconds) for another frame or the end of the connection."""
        self.arrived.clear()
        try:
            await asyncio.wait_for(self.arrived.wait(), timeout)
        except TimeoutError:
            raise WaitExpired(f"nothing came within {timeout} s while waiting for {what}") from None


class WireDriver:
    """The reference broker (a fresh one per machine run, so that its ``first_sequence`` can be
    drawn) on an event loop of the driver's own, and one asyncio client per slot, on loopback.
    Each call runs the loop until its answer is there; every wait is bounded by ``timeout``."""

    exact = False                  # acks of SENDs come when the broker's timer fires
    clock_control = False
    first_sequence = None
    # Short delays: ``settle`` waits for the broker's delayed acks. The real server's 500 ms
    # (its default AckExpireTime, and the one it suggests) is run in memory.
    ack_delay = 0.03
    expire_choices = (20, 40)
    suggested_expire = 40

    def __init__(self, profile: str, first_sequence: int, first_send: int, timeout: float = 5.0) -> None:
        self.profile = profile
        self.first_send = first_send
        self.timeout = timeout
        self.loop = asyncio.new_event_loop()
        self.clients: list[_RecordingClient] = []
        policy = ServerPolicy.for_profile(profile)
        if policy.real:                # the real server's suggestion, with a short AckExpireTime
            policy = ServerPolicy.for_profile(profile, optional=(
                Extension(ACK, ((MESSAGES_PER_ACK, "10"), (ACK_EXPIRE_TIME, str(self.suggested_expire)))),
                Extension(DOTNET)))
        config = SessionConfig(profile=profile, policy=policy, ack_delay=self.ack_delay,
                               first_sequence=first_sequence)
        self.broker = MM2Broker(config)
        try:
            self._run(self.broker.start(), "starting the reference broker")
        except BaseException:
            self.loop.close()
            raise

    def _run(self, coro, what: str):
        # A bound on the whole call, over the bounds of its single waits; a wait that runs out
        # (the client's own, as in send() with its window full) fails naming what it waited for.
        try:
            return self.loop.run_until_complete(asyncio.wait_for(coro, 4 * self.timeout))
        except TimeoutError:
            raise WaitExpired(f"timed out: {what}") from None

    def open(self, slot: int, terms) -> tuple[str, ...]:
        host, port = self._address()
        client = self._run(_RecordingClient.connect(
            host, port, identity=f"machine-{slot}", required=terms.required,
            optional=terms.optional, accept=terms.accept, timeout=self.timeout, auto_ack=False,
            profile=self.profile, first_sequence=self.first_send), f"the handshake of connection {slot}")
        if slot == len(self.clients):
            self.clients.append(client)
        else:
            self.clients[slot] = client
        return tuple(e.name for e in client.agreement.extensions)

    def publish(self, slot: int, destination: str, payload: bytes) -> int:
        # The client waits while its window of SENDs is full (the broker acks a full window).
        return self._run(self.clients[slot].send(destination, payload),
                         f"SEND to {destination} on connection {slot} (waiting for the broker's ack "
                         "of a full window)")

    def subscribe(self, slot: int, destination: str) -> None:
        self._run(self.clients[slot].subscribe(destination), f"subscribe on connection {slot}")

    def ack(self, slot: int, sequence: int) -> None:
        self.clients[slot].ack(sequence)

    def collect(self, slot: int, errors: int) -> list:
        return self._run(self._collect(self.clients[slot], slot, errors),
                         f"the barrier's ERROR on connection {slot}")

    async def _collect(self, client: _RecordingClient, slot: int, errors: int) -> list:
        client.write(codec.encode(Command(BARRIER)))
        await client.writer.drain()
        frames: list = []
        seen = 0
        while True:
            while client.log:
                frame = client.log.popleft()
                if isinstance(frame, Error):
                    if seen == errors:
                        while not client.messages.empty():    # the log has them; keep it bounded
                            client.messages.get_nowait()
                        return frames
                    seen += 1
                frames.append(frame)
                if len(frames) > MAX_ANSWERS:
                    raise AssertionError(f"connection {slot}: {len(frames)} frames and no barrier ERROR")
            if client.flooded:
                raise AssertionError(f"connection {slot}: more than {MAX_UNREAD} frames came unasked; "
                                     "the driver dropped the connection")
            if client.ended.is_set():
                raise AssertionError(f"connection {slot} closed by the broker (errors: {client.errors[:20]})")
            await client.wait_for_frames(self.timeout, f"the barrier's ERROR on connection {slot} "
                                         f"({errors} other ERROR frame(s) expected first)")

    def settle(self, slot: int) -> None:
        self._run(self._settle(self.clients[slot], slot), f"the broker's acks of SENDs on connection {slot}")

    async def _settle(self, client: _RecordingClient, slot: int) -> None:
        # The broker's delayed ack (ack_delay, or the agreed AckExpireTime) frees the window.
        while client.outbox.inflight:
            if client.ended.is_set():
                raise AssertionError(f"connection {slot} closed while SENDs were unacked")
            await client.wait_for_frames(self.timeout, f"the ack of SENDs {list(s for s, _ in client.outbox.inflight)}")

    def drop(self, slot: int) -> None:
        self._run(self._drop(self.clients[slot], slot), f"closing connection {slot}")

    async def _drop(self, client: _RecordingClient, slot: int) -> None:
        # Half-close, then wait for the broker's FIN: asyncio closes the broker's socket only
        # after the session's connection_lost ran (requeue and redelivery included), so the
        # barriers on the other connections that follow are answered after any redelivery.
        client.writer.write_eof()
        try:
            await asyncio.wait_for(client.ended.wait(), self.timeout)
        except TimeoutError:
            raise WaitExpired(f"the broker did not close connection {slot} after its EOF") from None
        await client.close()

    @staticmethod
    def destination(name: str) -> str:
        return name

    def _address(self) -> tuple[str, int]:
        return "127.0.0.1", self.broker.port

    def probe(self, phase: str, wire: bytes) -> tuple[list, bool]:
        return self._run(self._probe(phase, wire), f"a probe connection in phase {phase}")

    async def _probe(self, phase: str, wire: bytes) -> tuple[list, bool]:
        host, port = self._address()
        reader, writer = await asyncio.open_connection(host, port)
        decoder = codec.make_decoder(origin="server", profile=self.profile)
        got: list = []

        async def read() -> bool:
            data = await asyncio.wait_for(reader.read(65536), self.timeout)
            got.extend(decoder.feed(data))
            return bool(data)
        try:
            if phase != AWAIT_OFFER:
                writer.write(codec.encode(PROBE_OFFER))
                while not got and await read():
                    pass
                assert len(got) == 1 and isinstance(got[0], Handshake), f"probe: the reply to the offer: {got}"
                if phase == OPEN:
                    writer.write(codec.encode(final_handshake(PROBE_OFFER, got[0], ())))
                got.clear()
            writer.write(wire)
            try:
                while await read():           # until the broker closes (bounded: the timeout)
                    pass
            except TimeoutError:
                return got, False
            except ConnectionError:
                pass
            return got, True
        finally:
            writer.close()

    def deadline(self, slot: int) -> Optional[float]:
        raise AssertionError("the broker's deadlines are not visible over the wire")

    def advance(self, seconds: float) -> float:
        raise AssertionError("time passes on its own over the wire")

    def close(self) -> None:
        try:
            for client in self.clients:
                self._run(client.close(), "closing a client")
            self._run(self.broker.stop(), "stopping the reference broker")
        finally:
            self.loop.close()


class TargetDriver(WireDriver):
    """:class:`WireDriver` against a target at ``host:port`` (the suite's ``--target``): its
    MESSAGE sequence numbers start at 1 ("MESSAGE" sequence number), its ack delays are its
    own, and destinations carry ``prefix`` (unique per machine run: runs share the target)."""

    first_sequence = 1
    #: the target numbers its MESSAGEs from where it likes (MM2-MSG-007 is a SHOULD, tested on
    #: its own): the machine takes each connection's first number from its first MESSAGE
    learns_first = True
    expire_choices = (None,)               # the target's own AckExpireTime (sharpmessaging)
    suggested_expire = 500                 # the real server's suggestion (SPEC_NOTES)

    def __init__(self, host: str, port: int, profile: str, first_send: int, prefix: str,
                 timeout: float = 5.0) -> None:
        self.profile = profile
        self.first_send = first_send
        self.timeout = timeout
        self.host, self.port, self.prefix = host, port, prefix
        self.loop = asyncio.new_event_loop()
        self.clients = []
        self.broker = None

    def destination(self, name: str) -> str:
        topic = name.startswith("topic/")
        bare = name[len("topic/"):] if topic else name
        return ("topic/" if topic else "") + f"{self.prefix}-{bare}"

    def _address(self) -> tuple[str, int]:
        return self.host, self.port

    def publish(self, slot: int, destination: str, payload: bytes) -> int:
        return super().publish(slot, self.destination(destination), payload)

    def subscribe(self, slot: int, destination: str) -> None:
        super().subscribe(slot, self.destination(destination))

    def close(self) -> None:
        try:
            for client in self.clients:
                self._run(client.close(), "closing a client")
        finally:
            self.loop.close()
