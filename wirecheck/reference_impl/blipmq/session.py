"""The BlipMQ server's rules for one connection, sans-IO: ``receive(data, now) -> [bytes]``.

Order and answers follow blipmq-protocol.md ("HELLO / AUTH Handshake", "Payload Formats")
and the real server's extra NACKs (SPEC_NOTES.md): HELLO then AUTH, each retriable; before
AUTH completes every other frame (PING, and client-sent NACK/PONG, included) gets
``NACK(401, "unauthenticated")``; after it, client-sent NACK/PONG are ignored. A bad length or
an unknown frame type closes the connection without an answer (the frames before it in the
same read are still served). Every NACK carries the request's correlation id.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..core.errors import FrameError
from . import codec
from .codec import Ack, FrameType, Nack, Pong, Publish, RawFrame
from .state import BrokerState, JournalError, LimitError

DEFAULT_API_KEY = "dev-key"      # the document's AUTH sample; documented for local use


class Phase(Enum):
    AWAIT_HELLO = "await-hello"
    AWAIT_AUTH = "await-auth"
    READY = "ready"
    CLOSED = "closed"


#: (phase, frame type) -> the handler's name. A type missing for a phase gets the phase's
#: default: "unauthenticated" before READY, and after READY the frame is ignored.
HANDLERS: dict[tuple[Phase, FrameType], str] = {}
for _phase in (Phase.AWAIT_HELLO, Phase.AWAIT_AUTH, Phase.READY):
    HANDLERS[(_phase, FrameType.HELLO)] = "hello"
    HANDLERS[(_phase, FrameType.AUTH)] = "auth"
for _t, _name in ((FrameType.PUBLISH, "publish"), (FrameType.SUBSCRIBE, "subscribe"),
                  (FrameType.ACK, "ack"), (FrameType.POLL, "poll"), (FrameType.PING, "ping"),
                  (FrameType.NACK, "ignore"), (FrameType.PONG, "ignore")):
    HANDLERS[(Phase.READY, _t)] = _name

#: Phase after a successful HELLO / AUTH.
TRANSITIONS = {
    (Phase.AWAIT_HELLO, "hello"): Phase.AWAIT_AUTH,
    (Phase.AWAIT_AUTH, "auth"): Phase.READY,
}


@dataclass(slots=True)
class SessionConfig:
    api_keys: frozenset[str] = frozenset({DEFAULT_API_KEY})
    limits: codec.BlipConfig = field(default_factory=codec.BlipConfig)


class BlipSession:
    protocol = "blipmq"

    def __init__(self, state: BrokerState, config: SessionConfig | None = None) -> None:
        self.state = state
        self.config = config or SessionConfig()
        self.decoder = codec.Decoder(self.config.limits, parse=False)
        self.phase = Phase.AWAIT_HELLO
        self.close_reason: FrameError | None = None
        self._out: list[bytes] = []
        self._now = 0.0

    @property
    def closed(self) -> bool:
        return self.phase is Phase.CLOSED

    @property
    def established(self) -> bool:
        """HELLO and AUTH done (the glue's handshake timeout and byte budget stop here)."""
        return self.phase is Phase.READY

    def receive(self, data: bytes, now: float) -> list[bytes]:
        """Feed bytes from the client; returns the bytes to send back, in order. After a
        stream error, ``closed`` is True and the caller closes the connection."""
        if self.closed:
            return []
        self._now = now
        self.decoder.receive(data)
        try:
            while (raw := self.decoder.next_raw()) is not None:
                self._dispatch(raw)
        except FrameError as exc:   # bad length / unknown type: close, no NACK (document)
            self.close_reason = exc
            self.phase = Phase.CLOSED
        out, self._out = self._out, []
        return out

    # -- dispatch ------------------------------------------------------------------------------

    def _dispatch(self, raw: RawFrame) -> None:
        name = HANDLERS.get((self.phase, raw.type))
        if name is None:
            if self.phase is not Phase.READY:
                self._nack(raw, 401, "unauthenticated")
            return
        getattr(self, "_on_" + name)(raw)

    def _send(self, frame) -> None:
        self._out.append(codec.encode(frame))

    def _nack(self, raw: RawFrame, code: int, message: str) -> None:
        self._send(Nack(raw.correlation_id, code, message))

    def _parse(self, raw: RawFrame):
        """Typed frame, or None after answering ``invalid <TYPE> payload``."""
        try:
            return codec.parse_payload(raw)
        except FrameError:
            self._nack(raw, 400, f"invalid {raw.type.name} payload")
            return None

    # -- handlers ------------------------------------------------------------------------------

    def _on_hello(self, raw: RawFrame) -> None:
        if self.phase is not Phase.AWAIT_HELLO:
            return self._nack(raw, 400, "HELLO already performed")
        frame = self._parse(raw)
        if frame is None:
            return
        if frame.protocol_version != codec.PROTOCOL_VERSION:
            return self._nack(raw, 426, "unsupported protocol version")
        self.phase = TRANSITIONS[(self.phase, "hello")]
        self._send(Ack(raw.correlation_id, 0))

    def _on_auth(self, raw: RawFrame) -> None:
        if self.phase is Phase.AWAIT_HELLO:
            return self._nack(raw, 400, "HELLO not performed")
        if self.phase is Phase.READY:
            return self._nack(raw, 400, "already authenticated")
        frame = self._parse(raw)
        if frame is None:
            return
        if frame.api_key not in self.config.api_keys:
            return self._nack(raw, 401, "invalid API key")
        self.phase = TRANSITIONS[(self.phase, "auth")]
        self._send(Ack(raw.correlation_id, 0))

    def _parse_topic_qos(self, raw: RawFrame):
        """PUBLISH and SUBSCRIBE are checked in the same order: payload, empty topic, QoS."""
        frame = self._parse(raw)
        if frame is None:
            return None
        if not frame.topic:
            return self._nack(raw, 400, "empty topic")
        if frame.qos not in (0, 1):
            return self._nack(raw, 400, "invalid QoS value")
        return frame

    def _on_publish(self, raw: RawFrame) -> None:
        frame = self._parse_topic_qos(raw)
        if frame is None:
            return
        try:
            self.state.publish(frame.qos, frame.topic, frame.message)
        except JournalError as exc:
            self._nack(raw, 500, f"durable publish failed: {exc}")

    def _on_subscribe(self, raw: RawFrame) -> None:
        frame = self._parse_topic_qos(raw)
        if frame is None:
            return
        try:
            sub_id = self.state.subscribe(frame.topic, frame.qos)
        except LimitError as exc:        # the document has no code for it: a client error
            return self._nack(raw, 400, str(exc))
        except JournalError as exc:      # as a publish the log could not take
            return self._nack(raw, 500, f"durable subscribe failed: {exc}")
        self._send(Ack(raw.correlation_id, sub_id))

    def _on_ack(self, raw: RawFrame) -> None:
        frame = self._parse(raw)
        if frame is None:
            return
        if frame.subscription_id == 0:
            return self._nack(raw, 400, "subscription_id must be non-zero")
        # The delivery tag is the ACK's correlation id ("ACK for QoS1 delivery").
        if not self.state.ack(frame.subscription_id, raw.correlation_id):
            self._nack(raw, 404, "unknown subscription or delivery tag")

    def _on_poll(self, raw: RawFrame) -> None:
        frame = self._parse(raw)
        if frame is None:
            return
        if frame.subscription_id == 0:
            return self._nack(raw, 400, "subscription_id must be non-zero")
        delivery = self.state.poll(frame.subscription_id, self._now)
        if delivery is None:
            return      # "If no message available: Returns no frame"
        # QoS1: correlation id = delivery tag; QoS0: the POLL's correlation id.
        cid = delivery.tag if delivery.qos == 1 else raw.correlation_id
        self._send(Publish(cid, delivery.qos, delivery.topic, delivery.message))

    def _on_ping(self, raw: RawFrame) -> None:
        self._send(Pong(raw.correlation_id))

    def _on_ignore(self, raw: RawFrame) -> None:
        pass
