"""Helpers of the Micromessage2 suite: connections that run the three-step handshake with the
extensions a test asks for, the barrier, unique destinations, and reading past the target's
acks of the suite's own SENDs.

The barrier (DESIGN: "nothing comes back" is proven, not slept on): an unknown command
``x-wirecheck-barrier`` whose ERROR frame must be the next frame (MM2-CMD-002, the kit's
reading). A target that acks the suite's SENDs may do so at any time (its ack delay): those
ack frames are set aside in ``conn.acks`` wherever the suite expects something else.
"""
from __future__ import annotations

import struct
import uuid

import pytest

from conformance.target import Connection, TargetClosed, TargetError
from reference_impl.micromessage2 import codec
from reference_impl.micromessage2.codec import Command, Error, ExtensionFrame, Handshake, Message
from reference_impl.micromessage2.constants import ACK, BATCH_ACK
from reference_impl.micromessage2.syntax import parse_extensions

BARRIER = "x-wirecheck-barrier"
_SEQ = struct.Struct(">H")


class MM2:
    """Suite-side vocabulary for Micromessage2; does no I/O until a test calls it."""

    def __init__(self, target) -> None:
        self.target = target
        self.profile = target.profile
        self.reading = target.profile.base or "document"
        self.typed = self.reading != "sharpmessaging"

    def timing(self, name: str, default: float) -> float:
        return float(self.profile.timing.get(name, default))

    def feature(self, name: str, default: bool = True) -> bool:
        return self.profile.feature(name, default)

    @staticmethod
    def destination(kind: str = "queue", label: str = "d") -> str:
        name = f"wirecheck-{label}-{uuid.uuid4().hex[:10]}"
        return f"topic/{name}" if kind == "topic" else name

    # -- connections -----------------------------------------------------------------------

    def open(self, name: str = "", handshakes: int = 1) -> Connection:
        decoder = codec.Decoder(handshakes=handshakes, strict=self.typed)
        conn = self.target.connect(name, decoder=decoder, encode=codec.encode)
        conn.acks = []
        conn.ids = {}
        conn.sent = 0
        return conn

    def offer(self, required="", optional="", identity: str = "wirecheck", minor: int = 0,
              major: int = 1) -> Handshake:
        return Handshake(identity, parse_extensions(required, strict=False),
                         parse_extensions(optional, strict=False), major, minor)

    def reply(self, conn, expecting: str = "the server's handshake") -> Handshake:
        frame = conn.recv(expecting=expecting)
        if not isinstance(frame, Handshake):
            raise TargetError(f"expected {expecting}, got {codec.frame_to_dict(frame)}")
        return frame

    def connect(self, required: str = "pubsub", optional: str = "", *, final_optional=None,
                name: str = "") -> Connection:
        """A connection past the handshake: the offer, the reply, then the final handshake
        with every required extension of both sides and the chosen optional ones (by default
        the suite's own optional ones the server suggests back). ``conn.ids``: name -> id."""
        conn = self.open(name)
        offer = self.offer(required, optional)
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
        final = Handshake("wirecheck", tuple(req), tuple(opt), 1, 0)
        conn.send(final)
        conn.final = final
        conn.reply_hs = reply
        conn.ids = {e.name: i for i, e in enumerate(final.required + final.optional, 1)}
        return conn

    # -- receiving -------------------------------------------------------------------------

    def _is_ack(self, conn, frame) -> bool:
        return (isinstance(frame, ExtensionFrame) and len(frame.payload) == 2
                and frame.extension_id in {conn.ids.get(ACK), conn.ids.get(BATCH_ACK)} - {None})

    def next(self, conn, expecting: str = "a frame", timeout: float | None = None):
        """The next frame that is not an ack of the suite's SENDs (those go to ``conn.acks``)."""
        while True:
            frame = conn.recv(timeout, expecting=expecting)
            if self._is_ack(conn, frame):
                conn.acks.append(_SEQ.unpack(frame.payload)[0])
                continue
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
        """The ERROR answering an unknown command must be the next frame (acks aside)."""
        conn.send(Command(BARRIER))
        frame = self.next(conn, "the barrier's ERROR" + (f" after {after}" if after else ""))
        if not isinstance(frame, Error):
            raise TargetError(f"expected only the barrier's ERROR{' after ' + after if after else ''}, "
                              f"got {codec.frame_to_dict(frame)}")

    def drain(self, conn, after: str = "") -> list[Message]:
        """Every MESSAGE before the barrier's ERROR (for when how many may come is the question)."""
        conn.send(Command(BARRIER))
        got = []
        while True:
            frame = self.next(conn, "messages, then the barrier's ERROR" + (f" after {after}" if after else ""))
            if isinstance(frame, Error):
                return got
            if not isinstance(frame, Message):
                raise TargetError(f"expected messages or the barrier's ERROR, got {codec.frame_to_dict(frame)}")
            got.append(frame)

    # -- operations ------------------------------------------------------------------------

    def subscribe(self, conn, destination: str, filter: str | None = None) -> None:
        args = (("destination", destination),) + ((("filter", filter),) if filter is not None else ())
        conn.send(Command("subscribe", args))

    def send(self, conn, destination: str, payload: bytes = b"x", properties=(), **kw) -> int:
        conn.sent = 1 if conn.sent >= 0xFFFF else conn.sent + 1
        conn.send(Message(conn.sent, destination, payload, tuple(properties)), **kw)
        return conn.sent

    def ack(self, conn, sequence: int) -> None:
        ext = conn.ids.get(BATCH_ACK) or conn.ids.get(ACK)
        conn.send(ExtensionFrame(ext, _SEQ.pack(sequence)))

    def messages(self, conn, n: int, expecting: str = "a MESSAGE") -> list[Message]:
        return [self.expect(conn, Message, f"{expecting} ({i + 1} of {n})") for i in range(n)]


@pytest.fixture
def mm2(target):
    return MM2(target)
