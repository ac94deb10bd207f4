"""BlipMQ: the answers a server may give that a client must cope with (conformance/clients/scripted).
Frames are the document's: ``u32 length`` (type + correlation id + payload), ``u8 frame_type``,
``u64 correlation_id``, payload ("Frame Layout"), cut with :class:`BlipSplitter` and built with
the reference codec.

BlipMQ's server speaks only when spoken to: every server frame answers a client request, in
the order the requests came ("Backpressure & Batching": the read loop dispatches each frame in
turn; BLIP-IO-001), and several requests get no frame at all on success (PUBLISH, ACK, a POLL
with nothing to deliver). So both scenarios here *answer a request themselves*: the request is
recorded as the client's but held back from the broker (which then never handled it), and the
scenario's answer goes out exactly where the broker's would have: before the first broker frame
that answers a later request. Where that is, the observer itself decides
(``BlipObserver.answered_request``, fed with the same frames), so the judge and the scenario
cannot disagree on the order. When nothing later is answered, the answer goes after ``grace``
seconds (default 0.2), once every earlier request that certainly gets an answer has had it.

- ``error-response``: the first valid request of the kind ``command`` names (after HELLO+AUTH)
  is answered with the NACK the document allows for it instead of its normal outcome:
  ``PUBLISH`` (default; a QoS1 one): ``NACK(500, "durable publish failed: ...")``, a WAL
  failure ("PUBLISH": "If QoS1 and WAL configured ... On WAL error: NACK(500)"); ``POLL`` or
  ``ACK`` (of a non-zero subscription): ``NACK(404, "unknown subscription or delivery tag")``
  ("Error Codes": 404 is out-of-sync state, "e.g. expired subscription or duplicate ACK").
  The broker never sees the refused request, so the refused publish is not delivered, as a
  publish whose journal write failed is not ("On success: enqueue").
- ``max-size``: the first POLL of a subscription made on the connection is answered with a
  delivery whose ``length`` is exactly ``size`` (default 16 MiB, the largest the document
  allows: "Must be ... <= 16 * 1024 * 1024"). It is a QoS0 message on the subscription's topic
  with the POLL's correlation id ("Server behavior when sending PUBLISH as delivery"), as a
  message another client published there would be; QoS0 is legal whatever the subscription's
  QoS (SPEC_NOTES: effective QoS 1 only if both are 1). The message's bytes are 0, 1, ..., 255
  repeated, so a client can check what it got.

Not offered, because BlipMQ has no such thing:
- ``heartbeat``: PING is "Client -> Server" and PONG is "Sent as a direct response to PING"
  ("Frame Types", "PING / PONG"); a server never pings.
- ``metadata-update``, ``consumer-update``: there are no such frames ("Frame Types"); a server
  frame the client did not ask for is a protocol breach (BLIP-FRAME-005, BLIP-PUB-007).
- ``unknown-fields``: no server frame has an extensible part. ACK's payload is exactly 8 bytes,
  PONG's is empty, NACK's is ``code, message_len, message`` with nothing after it, and a
  delivery's message runs to the frame's end ("Payload Formats"; the real codec is strict,
  SPEC_NOTES); there are no flags, headers or property maps to add to.
- a server-initiated close: the byte-level ``close`` scenario already ends the connection from
  the server's side; the document has no goodbye frame to send first.
"""
from __future__ import annotations

import logging
import struct
import time
from collections import deque

from wirecheck.conformance.clients.scripted import FrameShaper, LengthPrefixed
from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import FrameType
from wirecheck.reference_impl.blipmq.observer import SILENCE, BlipObserver, expectation
from wirecheck.reference_impl.blipmq.session import Phase
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.core.observer import C2S, S2C

log = logging.getLogger(__name__)
_HEADER = struct.Struct(">IBQ")
_LEN = struct.Struct(">I")
#: Seconds after which a held request's answer goes out although no later request was answered
#: (the reference broker answers within milliseconds).
GRACE = 0.2
#: "durable publish failed: ..." ("PUBLISH"); the rest is ours.
PUBLISH_FAILED = "durable publish failed: injected by wirecheck (scenario error-response)"
UNKNOWN = "unknown subscription or delivery tag"
#: command -> (NACK code, message) the document allows for a valid request of that kind.
REFUSALS = {"PUBLISH": (500, PUBLISH_FAILED), "POLL": (404, UNKNOWN), "ACK": (404, UNKNOWN)}


class BlipSplitter(LengthPrefixed):
    header = 4

    def total(self, header: bytes) -> int:
        (length,) = _LEN.unpack(header)
        if not codec.MIN_FRAME_LENGTH <= length <= codec.MAX_FRAME_SIZE:
            raise ValueError(f"length {length}")       # not a frame: pass the rest through
        return 4 + length


def parse(frame: bytes):
    """The typed frame of one whole frame's bytes, or None when the codec does not read it."""
    if len(frame) < codec.HEADER_SIZE:
        return None
    _, type_byte, cid = _HEADER.unpack_from(frame)
    try:
        return codec.parse_payload(codec.RawFrame(FrameType(type_byte), cid, frame[codec.HEADER_SIZE:]))
    except (ValueError, FrameError):
        return None


class _AnsweringShaper(FrameShaper):
    """Follows the conversation with an observer of its own and answers the requests
    :meth:`answer` picks, in their place in the order (see the module's docstring)."""

    def __init__(self, relay, options: dict) -> None:
        super().__init__(relay, options)
        self.grace = float(options.get("grace", GRACE))
        #: the judge's own pairing of answers with requests, fed the same frames
        self.shadow = BlipObserver()
        self.index = 0
        #: answers owed to held requests, oldest first: (the request's order, the answer)
        self.owed: deque[tuple[int, object]] = deque()
        #: a frame the codec does not read went by: the conversation is no longer followed
        self.lost = False

    def make_splitter(self, direction: str) -> BlipSplitter:
        return BlipSplitter()

    def answer(self, request):
        """The frame to answer ``request`` with in the broker's stead, or None: pass it on."""
        return None

    @property
    def ready(self) -> bool:
        return self.shadow.phase is Phase.READY

    def _see(self, direction: str, frame) -> None:
        self.shadow.frame(direction, frame, self.index, time.monotonic())
        self.index += 1

    def client_data(self, data: bytes) -> None:
        super().client_data(data)
        if self.up.raw and self.following:
            # a client frame too large to hold (conformance/clients/scripted: CLIENT_HELD_FRAME) went by
            # unread: the requests are no longer all known
            self._lose()

    @property
    def following(self) -> bool:
        """Whether the conversation is still followed: until the scenario has acted (it acts
        once) and been paid, and as long as every frame was read."""
        return not self.lost and (not self.log or bool(self.owed))

    def client_frame(self, frame: bytes) -> None:
        if not self.following:
            self.pass_on(frame)
            return
        parsed = parse(frame)
        if parsed is None:
            self._lose()
            self.pass_on(frame)
            return
        self._see(C2S, parsed)
        reply = self.answer(parsed)
        if reply is None:
            self.pass_on(frame)
            return
        self.hold(frame)                     # recorded as sent; the broker never handles it
        self.owed.append((self.shadow.outstanding()[-1].seq, reply))
        self.later(self.grace, self._due)

    def server_frame(self, frame: bytes) -> None:
        if not self.following:
            self.send(frame)
            return
        parsed = parse(frame)
        if parsed is None:
            self._lose()
            self.send(frame)
            return
        if self.owed:
            # the broker answers in order, and never saw the held requests: when this frame
            # answers a request that came after one of them, that one's answer goes first
            held = frozenset(seq for seq, _ in self.owed)
            req = self.shadow.answered_request(parsed, held)
            while self.owed and req is not None and self.owed[0][0] < req.seq:
                self._pay()
        self._see(S2C, parsed)
        self.send(frame)

    def eof(self) -> None:
        while self.owed and not self.lost:
            self._pay()                      # the server answers what it read before it closes
        super().eof()

    def _due(self) -> None:
        """``grace`` has passed: pay what is owed, unless an earlier request that certainly
        gets an answer (a PING, a SUBSCRIBE, ...) still waits for the broker's."""
        while self.owed:
            seq = self.owed[0][0]
            for req in self.shadow.outstanding():
                if req.seq >= seq:
                    break
                expected = expectation(self.shadow.phase, req.frame)
                if expected is not None and SILENCE not in expected.allowed:
                    self.later(self.grace, self._due)
                    return
            self._pay()

    def _pay(self) -> None:
        _, reply = self.owed.popleft()
        self._see(S2C, reply)
        self.send(codec.encode(reply))

    def _lose(self) -> None:
        if not self.lost:
            self.lost = True
            self.note("a frame the scenario cannot read (or too large to hold): no longer followed", acted=False)
            while self.owed:
                _, reply = self.owed.popleft()
                self.send(codec.encode(reply))


class ErrorResponse(_AnsweringShaper):
    name = "error-response"
    client_outcome = "error"
    summary = "the first valid QoS1 PUBLISH (or POLL, ACK: option command) refused with a NACK"

    def __init__(self, relay, options: dict) -> None:
        super().__init__(relay, options)
        self.command = str(options.get("command", "PUBLISH")).upper()
        if self.command not in REFUSALS:
            # a scenario option is not the client's fault: say so, and refuse nothing
            log.warning("error-response: unknown command %r (one of %s)", self.command, ", ".join(REFUSALS))
            self.note(f"unknown command {self.command!r}: nothing refused", acted=False)

    def answer(self, request):
        if self.log or not self.ready or request.type.name != self.command:
            return None
        if request.type is FrameType.PUBLISH:
            valid = request.qos == 1 and bool(request.topic)      # only a QoS1 publish is journaled
        else:
            valid = request.subscription_id != 0
        if not valid:
            return None
        code, message = REFUSALS[self.command]
        self.note(f"{self.command} (correlation id {request.correlation_id}) refused: NACK {code}")
        return codec.Nack(request.correlation_id, code, message)


class MaxSize(_AnsweringShaper):
    name = "max-size"
    client_outcome = "success"
    summary = "the first POLL answered with a delivery of exactly 16 MiB (length field)"

    def answer(self, request):
        if self.log or not self.ready or request.type is not FrameType.POLL:
            return None
        sub = self.shadow.subscriptions.get(request.subscription_id)
        if sub is None:
            return None                      # not a subscription of this connection: its topic?
        topic = sub[0]
        size = int(self.options.get("size", 0)) or codec.MAX_FRAME_SIZE
        room = size - codec.MIN_FRAME_LENGTH - 3 - len(topic.encode("utf-8"))
        if room < 0 or size > codec.MAX_FRAME_SIZE:
            return None
        self.note(f"POLL (correlation id {request.correlation_id}) answered with a delivery of "
                  f"length {size}")
        return codec.Publish(request.correlation_id, 0, topic, pattern(room))


def pattern(n: int) -> bytes:
    """``n`` bytes 0, 1, ..., 255, 0, 1, ..."""
    return (bytes(range(256)) * (n // 256 + 1))[:n]


SCENARIOS = {cls.name: cls for cls in (ErrorResponse, MaxSize)}
