"""The Micromessage2 server's rules for one connection, sans-IO: ``receive(data, now) -> [bytes]``.

Phases: the client's offer -> the server's reply (:func:`.negotiation.reply_to`) -> the
client's final handshake (:func:`.negotiation.agree`) -> frames. After the handshake:

- SEND (a MESSAGE frame from the client) publishes to its destination (:mod:`.state`). With
  ``json`` agreed its payload must be JSON; with ``dotnet`` the last type frame names its type.
  With ``ack``/``batch-ack`` the server, as receiver, acks cumulatively: as soon as the window
  is full, else ``ack_delay`` seconds after the first unacked message (the real
  implementation's ``AckExpireTime``).
- MESSAGE frames to the client are pushed with sequence numbers from 1 (wrapping 65535 -> 1);
  with an ack extension the pusher stops when ``window`` messages are unacked and goes on as
  acks arrive (cumulative, across the wrap). With ``dotnet`` each MESSAGE whose type is known
  is preceded by a type frame.
- COMMAND ``subscribe;destination=D[,filter=F]`` (needs ``pubsub``).

Errors: a frame the codec refuses, or an ERROR from the client, ends the connection (after an
ERROR frame from the server in the first case: the stream cannot be trusted). A well-formed but
unacceptable request (an unknown command, a bad filter, an ack for nothing in flight, an
extension frame for an unknown id) gets an ERROR frame and the connection stays open: the
frame boundaries are intact. The handshake's failures follow :mod:`.negotiation`.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Optional

from ..core import strict_json
from ..core.errors import FrameError
from . import codec
from .codec import Command, Error, ExtensionFrame, Handshake, Message, MM2Limits
from .constants import ACK, BATCH_ACK, DOTNET, JSON, PUBSUB, SEQUENCE_FIRST, SUBSCRIBE
from .filters import FilterError, parse_filter
from .negotiation import Agreement, Refusal, ServerPolicy, agree, reply_to
from .state import BrokerState, QueueFull, Stored, is_topic
from .window import AckError, Inbox, Outbox

_SEQ = __import__("struct").Struct(">H")


class Phase(Enum):
    AWAIT_OFFER = "await-offer"
    AWAIT_FINAL = "await-final"
    OPEN = "open"
    CLOSED = "closed"


@dataclass
class SessionConfig:
    profile: str = "document"
    policy: ServerPolicy = field(default_factory=ServerPolicy)
    limits: MM2Limits = field(default_factory=MM2Limits)
    #: Seconds after the first unacked SEND before the server acks it (batch-ack; the real
    #: ``ack`` extension gives its own ``AckExpireTime``).
    ack_delay: float = 0.2
    #: MESSAGE frames queued for a slow subscriber before it is disconnected.
    max_pending: int = 10_000
    #: The first sequence number pushed on a connection: 1 ("MESSAGE" sequence number,
    #: SPEC_NOTES: the real implementation starts at 1). A test hook: tests start near 65535
    #: so that the 65535 -> 1 wrap comes after a few messages instead of 65,535.
    first_sequence: int = SEQUENCE_FIRST

    @classmethod
    def for_profile(cls, profile: str = "document", **overrides) -> "SessionConfig":
        return cls(profile=profile, policy=ServerPolicy.for_profile(profile), **overrides)


class MM2Session:
    def __init__(self, state: BrokerState, config: Optional[SessionConfig] = None) -> None:
        self.state = state
        self.config = cfg = config or SessionConfig()
        self.typed = cfg.profile != "sharpmessaging"        # FILTER_VALUE-typed properties
        self.decoder = codec.Decoder(cfg.limits, handshakes=2, strict=self.typed)
        self.phase = Phase.AWAIT_OFFER
        self.offer: Optional[Handshake] = None
        self.reply: Optional[Handshake] = None
        self.agreement: Optional[Agreement] = None
        self.outbox = Outbox(None)
        self.inbox = Inbox(None)
        self.pending: deque[Stored] = deque()      # topic messages waiting for window room
        self.dotnet_type: Optional[str] = None     # the client's last type frame
        self.ack_due: Optional[float] = None
        self.now = 0.0
        self._out: list[bytes] = []
        self._in_call = False
        self._push: Optional[Callable[[list[bytes]], None]] = None
        self._close: Optional[Callable[[], None]] = None

    # -- glue ----------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.phase is Phase.CLOSED

    @property
    def established(self) -> bool:
        """The 3-step handshake is complete (the glue's handshake timeout and byte budget
        stop here)."""
        return self.phase is Phase.OPEN

    def attach(self, push, close) -> None:
        self._push, self._close = push, close

    def _emit(self, frame) -> None:
        data = codec.encode(frame)
        if self._in_call or self._push is None:
            self._out.append(data)
        else:
            self._push([data])

    def _run(self, body) -> list[bytes]:
        self._in_call = True
        try:
            body()
        finally:
            self._in_call = False
        out, self._out = self._out, []
        return out

    def receive(self, data: bytes, now: float) -> list[bytes]:
        self.now = now
        if self.closed:
            return []
        return self._run(lambda: self._receive(data))

    def tick(self, now: float) -> list[bytes]:
        self.now = now
        return self._run(self._tick)

    def next_deadline(self) -> Optional[float]:
        return self.ack_due

    def connection_lost(self) -> None:
        self.phase = Phase.CLOSED
        self.state.drop(self)
        unacked = [m for m in self.outbox.unacked() if m is not None]
        self.outbox.inflight.clear()
        if unacked:
            self.state.requeue(unacked)

    # -- input ---------------------------------------------------------------------------------

    def _receive(self, data: bytes) -> None:
        self.decoder.receive(data)
        while not self.closed:
            try:
                frame = self.decoder.next_frame()
            except FrameError as exc:
                self._fail(f"{exc.category}: {exc.message}")
                return
            if frame is None:
                return
            self._handle(frame)

    def _fail(self, text: str, close: bool = True) -> None:
        self._emit(Error(text))
        if close:
            self._shut()

    def _shut(self) -> None:
        if not self.closed:
            self.connection_lost()

    def _handle(self, frame) -> None:
        if isinstance(frame, Error):               # the client gives up
            self._shut()
            return
        if self.phase is Phase.AWAIT_OFFER:
            self._on_offer(frame)
        elif self.phase is Phase.AWAIT_FINAL:
            self._on_final(frame)
        elif isinstance(frame, Message):
            self._on_send(frame)
        elif isinstance(frame, Command):
            self._on_command(frame)
        elif isinstance(frame, ExtensionFrame):
            self._on_extension(frame)
        else:                                      # a handshake after the handshake
            self._fail("the handshake is complete: frames expected")

    def _on_offer(self, offer: Handshake) -> None:
        try:
            reply = reply_to(self.config.policy, offer)
        except Refusal as exc:
            self._fail(exc.text, exc.close)
            if not exc.close:                      # the real server waits for a new offer
                self.decoder.handshakes = 2
            return
        self.offer, self.reply = offer, reply
        self.phase = Phase.AWAIT_FINAL
        self._emit(reply)

    def _on_final(self, final: Handshake) -> None:
        try:
            self.agreement = a = agree(self.config.policy, self.offer, self.reply, final)
        except Refusal as exc:
            self._fail(exc.text)
            return
        self.outbox = Outbox(a.window, self.config.first_sequence)
        self.inbox = Inbox(a.window)
        self.phase = Phase.OPEN

    def _on_send(self, message: Message) -> None:
        a = self.agreement
        if a.window is not None:
            if self.inbox.received(message.sequence):
                self._send_ack()
            elif self.ack_due is None:
                self.ack_due = self.now + (a.ack_expire if a.ack_expire is not None else self.config.ack_delay)
        if not message.destination:
            self._fail("a SEND needs a destination", close=False)
            return
        if a.has(JSON):
            try:
                strict_json.loads(message.payload.decode("utf-8"))
            except (UnicodeDecodeError, strict_json.JSONProblem):
                self._fail(f"message {message.sequence}: the json extension is agreed but the "
                           "payload is not JSON", close=False)
                return
        stored = Stored(message.destination, message.payload, message.properties,
                        self.dotnet_type if a.has(DOTNET) else None)
        try:
            self.state.publish(stored)
        except QueueFull as exc:
            self._fail(str(exc), close=False)

    def _send_ack(self) -> None:
        seq = self.inbox.take_ack()
        self.ack_due = None
        if seq is not None:
            self._emit(ExtensionFrame(self.agreement.ack_id, _SEQ.pack(seq)))

    def _tick(self) -> None:
        if self.ack_due is not None and self.now >= self.ack_due and not self.closed:
            self._send_ack()

    def _on_command(self, command: Command) -> None:
        if command.name != SUBSCRIBE:
            self._fail(f"unknown command {command.name!r}", close=False)
            return
        if not self.agreement.has(PUBSUB):
            self._fail("subscribe needs the pubsub extension (not agreed in the handshake)", close=False)
            return
        destination = command.arg("destination")
        if not destination:
            self._fail("subscribe needs destination=<name>", close=False)
            return
        filter_text = command.arg("filter")
        try:
            flt = parse_filter(filter_text) if filter_text is not None else None
        except FilterError as exc:
            self._fail(f"bad filter: {exc}", close=False)
            return
        self.state.subscribe(self, destination, flt)

    def _on_extension(self, frame: ExtensionFrame) -> None:
        a = self.agreement
        name = a.by_id.get(frame.extension_id)
        if name in (ACK, BATCH_ACK):
            if len(frame.payload) != 2:
                self._fail(f"an {name} frame carries a 2-byte sequence number, not "
                           f"{len(frame.payload)} bytes", close=False)
                return
            try:
                self.outbox.ack(_SEQ.unpack(frame.payload)[0])
            except AckError as exc:
                self._fail(str(exc), close=False)
                return
            self._pump()
            self.state.room_freed(self)
        elif name == DOTNET:
            try:
                self.dotnet_type = frame.payload.decode("utf-8")
            except UnicodeDecodeError:
                self._fail("the dotnet type name is not UTF-8", close=False)
        elif name is None:
            self._fail(f"no extension has id {frame.extension_id} (the final handshake gave "
                       f"{len(a.extensions)})", close=False)
        else:
            self._fail(f"the {name} extension defines no frames", close=False)

    # -- output (subscriber side, called by the state) ---------------------------------------

    def has_room(self) -> bool:
        return not self.closed and not self.pending and self.outbox.has_room()

    def deliver(self, message: Stored) -> None:
        if self.closed:
            return
        if self.outbox.has_room() and not self.pending:
            self._send_message(message)
            return
        if len(self.pending) >= self.config.max_pending:
            self._fail(f"more than {self.config.max_pending} messages waiting for acks: "
                       "disconnected as too slow")
            if self._close is not None and not self._in_call:
                self._close()
            return
        self.pending.append(message)

    def _pump(self) -> None:
        while self.pending and self.outbox.has_room():
            self._send_message(self.pending.popleft())

    def _send_message(self, message: Stored) -> None:
        a = self.agreement
        # Topic messages are not redelivered, so only queue messages are kept in flight.
        seq = self.outbox.send(None if is_topic(message.destination) else message)
        dotnet = a.id_of(DOTNET)
        if dotnet is not None and message.dotnet_type:
            self._emit(ExtensionFrame(dotnet, message.dotnet_type.encode("utf-8")))
        self._emit(Message(seq, message.destination, message.payload, message.properties))
