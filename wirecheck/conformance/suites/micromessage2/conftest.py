"""Helpers of the Micromessage2 suite: connections that run the three-step handshake with the
extensions a test asks for, the barrier, unique destinations, and reading past the target's
acks of the suite's own SENDs.

The barrier (DESIGN: "nothing comes back" is proven, not slept on): an unknown command
``x-wirecheck-barrier`` whose ERROR frame must be the next frame (MM2-CMD-002, the kit's
reading). A target that answers no COMMAND at all (profile feature ``commands = false``: the
real SharpMessaging server, whose reader stalls on a COMMAND frame) gets the other barrier its
own rules allow: every connection agrees ``ack:MessagesPerAck=1`` (unless the test agrees an
ack extension itself) and the barrier is a SEND to a topic nobody reads, whose ack must come
before any other frame. A target that acks the suite's SENDs may do so at any time (its ack
delay): those ack frames are set aside in ``conn.acks`` wherever the suite expects something
else.

Features a profile can turn off (``[features]``), making the tests that need them
UNIMPLEMENTED: ``commands`` (COMMAND frames answered), ``pubsub``, ``batch_ack``, ``json``.
"""
from __future__ import annotations

import struct
import uuid

import pytest

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.target.connection import Connection, TargetClosed, TargetError
from wirecheck.reference_impl.micromessage2 import codec
from wirecheck.reference_impl.micromessage2.codec import Command, Error, ExtensionFrame, Handshake, Message
from wirecheck.reference_impl.micromessage2.observer import frame_requirement
from wirecheck.reference_impl.micromessage2.constants import ACK, BATCH_ACK, JSON, PUBSUB, SEQUENCE_MAX
from wirecheck.reference_impl.micromessage2.syntax import Extension, parse_extensions

BARRIER = "x-wirecheck-barrier"
#: The ack barrier's extension, an ``ack`` with a window of one so the target acks each SEND at
#: once: the document's ``ack`` has that window; the real implementation's needs
#: ``MessagesPerAck=1`` (SPEC_NOTES: it acks when MessagesPerAck messages arrived).
BARRIER_ACK = {"document": Extension(ACK), "sharpmessaging": Extension(ACK, (("MessagesPerAck", "1"),))}
_SEQ = struct.Struct(">H")
#: Extensions a profile can say the target lacks, and the feature that says so.
_EXTENSION_FEATURES = {PUBSUB: "pubsub", BATCH_ACK: "batch_ack", JSON: "json"}


class MM2:
    """Suite-side vocabulary for Micromessage2; does no I/O until a test calls it."""

    def __init__(self, target) -> None:
        self.target = target
        self.profile = target.profile
        self.reading = target.profile.base or "document"
        self.typed = self.reading != "sharpmessaging"
        self.commands = self.feature("commands")

    def timing(self, name: str, default: float) -> float:
        return float(self.profile.timing.get(name, default))

    def feature(self, name: str, default: bool = True) -> bool:
        return self.profile.feature(name, default)

    def has(self, name: str) -> bool:
        """Whether the profile says the target has feature ``name`` (``pubsub`` is reached
        through commands, so a target without ``commands`` has no ``pubsub`` either)."""
        if name == "pubsub" and not self.feature("commands"):
            return False
        return self.feature(name)

    def needs(self, *names: str) -> None:
        """UNIMPLEMENTED unless the profile says the target has every feature in ``names``."""
        for name in names:
            if not self.has(name):
                off = "commands" if name == "pubsub" and not self.feature("commands") else name
                verdicts.unimplemented(f"the profile says the target has no {name!r} "
                                       f"(features.{off} = false)")

    def window_extension(self, size: int) -> str:
        """An ack extension with a window of ``size``: ``batch-ack:max-count=N``, or where the
        target has no batch-ack and reads ``ack`` as SharpMessaging does, ``ack:MessagesPerAck=N``;
        without either, for a window of one, the document's plain ``ack`` (as the barrier)."""
        if self.has("batch_ack"):
            return f"batch-ack:max-count={size}"
        if self.reading == "sharpmessaging":
            return f"ack:MessagesPerAck={size}"
        if size == 1:
            return "ack"                # the document's ack: every message acked, a window of one
        self.needs("batch_ack")

    def _check_extensions(self, *lists) -> None:
        self.needs(*(_EXTENSION_FEATURES[e.name] for exts in lists for e in exts
                     if e.name in _EXTENSION_FEATURES))

    @staticmethod
    def destination(kind: str = "queue", label: str = "d") -> str:
        name = f"wirecheck-{label}-{uuid.uuid4().hex[:10]}"
        return f"topic/{name}" if kind == "topic" else name

    # -- connections -----------------------------------------------------------------------

    def open(self, name: str = "", handshakes: int = 1) -> Connection:
        decoder = codec.Decoder(handshakes=handshakes, strict=self.typed)
        conn = self.target.connect(name, decoder=decoder, encode=codec.encode)
        # a frame of the target's that does not decode: the rule it breaks, by whether its
        # handshake was still due (the observer's reading)
        def breach_of(error):
            # Above the kit's own limit the frame is not read at all: what the test waited for
            # did not come (its own requirements), not only the SHOULD of splitting large
            # payloads (MM2-FRAME-006) that the capture observer charges it to.
            too_large = getattr(error.category, "value", error.category) == "LENGTH_TOO_LARGE"
            rule = "" if too_large else frame_requirement(error, decoder.handshakes > 0)
            return ((rule,) if rule else ()), ""
        conn.breach_of = breach_of
        conn.acks = []
        conn.ids = {}
        conn.first_seq = None            # the first MESSAGE's sequence number (the target's choice)
        conn.sent = 0
        conn.barrier_seq = 0
        return conn

    def final(self, conn, required=(), optional=(), identity: str = "wirecheck", **kw) -> Handshake:
        """Send the final handshake agreeing ``required`` and ``optional`` (Extension tuples),
        plus the ack barrier's extension where the target answers no command; set ``conn.ids``."""
        required, optional = tuple(required), tuple(optional)
        if not self.commands and not {e.name for e in required + optional} & {ACK, BATCH_ACK}:
            required += (BARRIER_ACK[self.reading],)
        hs = Handshake(identity, required, optional, 1, 0)
        conn.send(hs, **kw)
        conn.final = hs
        conn.ids = {e.name: i for i, e in enumerate(required + optional, 1)}
        return hs

    def offer(self, required="", optional="", identity: str = "wirecheck", minor: int = 0,
              major: int = 1) -> Handshake:
        return Handshake(identity, parse_extensions(required, strict=False),
                         parse_extensions(optional, strict=False), major, minor)

    def reply(self, conn, expecting: str = "the server's handshake") -> Handshake:
        frame = conn.recv(expecting=expecting)
        if not isinstance(frame, Handshake):
            raise TargetError(f"expected {expecting}, got {codec.frame_to_dict(frame)}")
        return frame

    def connect(self, required: str | None = None, optional: str = "", *, final_optional=None,
                name: str = "") -> Connection:
        """A connection past the handshake: the offer, the reply, then the final handshake
        with every required extension of both sides and the chosen optional ones (by default
        the suite's own optional ones the server suggests back). ``conn.ids``: name -> id.
        ``required`` defaults to ``pubsub`` where the target has it. A test asking for an
        extension the profile says the target lacks is UNIMPLEMENTED."""
        if required is None:
            required = "pubsub" if self.has("pubsub") else ""
        offer = self.offer(required, optional)
        self._check_extensions(offer.required, parse_extensions(final_optional or "", strict=False))
        conn = self.open(name)
        conn.send(offer)
        reply = self.reply(conn)
        req = list(offer.required) + [e for e in reply.required if e.name not in offer.names()]
        if final_optional is None:
            opt = [e for e in offer.optional if e.name in {r.name for r in reply.optional}]
            opt = [e for e in opt if e.name not in {r.name for r in req}]
        else:
            opt = list(parse_extensions(final_optional, strict=False))
        if any(e.name in (ACK, BATCH_ACK) for e in req):
            opt = [e for e in opt if e.name not in (ACK, BATCH_ACK)]      # alternatives
        self.final(conn, req, opt)
        conn.reply_hs = reply
        return conn

    # -- receiving -------------------------------------------------------------------------

    def _take_ack(self, conn, frame) -> int | None:
        """The sequence number ``frame`` acks (kept in ``conn.acks``), or None: not an ack of
        the suite's SENDs."""
        if not (isinstance(frame, ExtensionFrame) and len(frame.payload) == 2
                and frame.extension_id in {conn.ids.get(ACK), conn.ids.get(BATCH_ACK)} - {None}):
            return None
        conn.acks.append(_SEQ.unpack(frame.payload)[0])
        return conn.acks[-1]

    def next(self, conn, expecting: str = "a frame", timeout: float | None = None):
        """The next frame that is not an ack of the suite's SENDs (those go to ``conn.acks``)."""
        while True:
            frame = conn.recv(timeout, expecting=expecting)
            if self._take_ack(conn, frame) is None:
                if isinstance(frame, Message) and getattr(conn, "first_seq", 0) is None:
                    conn.first_seq = frame.sequence      # where the target starts its count
                return frame

    def expect(self, conn, kind, expecting: str = "", **fields):
        frame = self.next(conn, expecting or kind.__name__)
        if not isinstance(frame, kind):
            raise TargetError(f"expected {expecting or kind.__name__}, got {codec.frame_to_dict(frame)}")
        wrong = {k: getattr(frame, k) for k, v in fields.items() if getattr(frame, k) != v}
        if wrong:
            raise TargetError(f"expected {kind.__name__} with {fields}, got {codec.frame_to_dict(frame)}")
        return frame

    def expect_error(self, conn, expecting: str = "an ERROR frame") -> Error:
        return self.expect(conn, Error, expecting)

    def expect_error_then_close(self, conn, reason: str) -> None:
        self.expect(conn, Error, f"an ERROR frame ({reason})")
        self.expect_closed(conn, reason)

    def expect_closed(self, conn, reason: str) -> None:
        try:
            frame = self.next(conn, f"the connection to close ({reason})")
        except TargetClosed:
            return
        raise TargetError(f"expected the connection to close ({reason}), got {codec.frame_to_dict(frame)}")

    def barrier(self, conn, after: str = "") -> None:
        """The barrier's answer must be the next frame (acks of the suite's SENDs aside)."""
        what = self._send_barrier(conn)
        frame = self._barrier_frame(conn, what + (f" after {after}" if after else ""))
        if frame is not None:
            raise TargetError(f"expected only {what}{' after ' + after if after else ''}, "
                              f"got {codec.frame_to_dict(frame)}")

    def drain(self, conn, after: str = "") -> list[Message]:
        """Every MESSAGE before the barrier's answer (for when how many may come is the question)."""
        what = self._send_barrier(conn)
        got = []
        while True:
            frame = self._barrier_frame(conn, "messages, then " + what + (f" after {after}" if after else ""))
            if frame is None:
                return got
            if not isinstance(frame, Message):
                raise TargetError(f"expected messages or {what}, got {codec.frame_to_dict(frame)}")
            got.append(frame)

    def _send_barrier(self, conn) -> str:
        if self.commands:
            conn.send(Command(BARRIER))
            return "the barrier's ERROR"
        if self.ack_id(conn) is None:
            raise TargetError("harness: the target answers no command and this connection agreed no "
                              "ack extension, so nothing can prove that no more frames come")
        # "{}": valid where json was agreed; a topic nobody reads keeps nothing.
        conn.barrier_seq = self.send(conn, f"topic/wirecheck-barrier-{uuid.uuid4().hex[:8]}", b"{}")
        return f"the ack of the barrier SEND {conn.barrier_seq}"

    def _barrier_frame(self, conn, expecting: str):
        """None when the barrier's answer came; else the first other frame (acks aside)."""
        if self.commands:
            frame = self.next(conn, expecting)
            return None if isinstance(frame, Error) else frame
        # Acks are cumulative and the barrier is the last SEND, so only its own number covers
        # it. The ack may wait for the target's ack delay when the test agreed a window above 1.
        timeout = self.timing("ack_delay", 0.5) + conn.timeout
        while True:
            frame = conn.recv(timeout, expecting=expecting)
            seq = self._take_ack(conn, frame)
            if seq is None:
                return frame
            if seq == conn.barrier_seq:
                return None

    @staticmethod
    def ack_id(conn):
        """The id of the ack extension the connection agreed (batch-ack or ack), or None."""
        return conn.ids.get(BATCH_ACK) or conn.ids.get(ACK)

    # -- operations ------------------------------------------------------------------------

    def subscribe(self, conn, destination: str, filter: str | None = None) -> None:
        args = (("destination", destination),) + ((("filter", filter),) if filter is not None else ())
        conn.send(Command("subscribe", args))

    def send(self, conn, destination: str, payload: bytes = b"x", properties=(), **kw) -> int:
        conn.sent = 1 if conn.sent >= 0xFFFF else conn.sent + 1
        conn.send(Message(conn.sent, destination, payload, tuple(properties)), **kw)
        return conn.sent

    def numbers(self, conn, messages) -> list[int]:
        """The messages' places in the count of this connection's MESSAGEs, from 1: the
        document fixes that each number is one more than the one before (65535 -> 1, its ack
        algorithm), not where the count starts (MM2-MSG-007, a SHOULD of its own). The first
        MESSAGE seen on ``conn`` is 1."""
        out = []
        for m in messages:
            if conn.first_seq is None:
                conn.first_seq = m.sequence
            out.append((m.sequence - conn.first_seq) % SEQUENCE_MAX + 1)
        return out

    def ack(self, conn, n: int) -> None:
        """Ack the ``n``-th MESSAGE of the connection (:meth:`numbers`), by its sequence number;
        ``n`` itself before any MESSAGE came."""
        sequence = n if conn.first_seq is None else (conn.first_seq - 1 + n - 1) % SEQUENCE_MAX + 1
        conn.send(ExtensionFrame(self.ack_id(conn), _SEQ.pack(sequence)))

    def expect_acks(self, conn, upto: int, expecting: str = "") -> list[int]:
        """Ack frames (and nothing else) until one acks ``upto``; the sequence numbers acked.
        Each may wait for the target's ack delay."""
        timeout = self.timing("ack_delay", 0.5) + conn.timeout
        got = []
        while not got or got[-1] != upto:
            frame = conn.recv(timeout, expecting=expecting or f"the ack of SEND {upto}")
            seq = self._take_ack(conn, frame)
            if seq is None:
                raise TargetError(f"expected {expecting or f'the ack of SEND {upto}'}, got "
                                  f"{codec.frame_to_dict(frame)}")
            got.append(seq)
        return got

    def messages(self, conn, n: int, expecting: str = "a MESSAGE") -> list[Message]:
        return [self.expect(conn, Message, f"{expecting} ({i + 1} of {n})") for i in range(n)]


@pytest.fixture
def mm2(target):
    return MM2(target)
