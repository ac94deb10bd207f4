"""Helpers of the SignalR suite: connections over raw TCP or HTTP + WebSocket (``--target
HOST:PORT`` or ``--target http://HOST:PORT/hub``) that run the handshake in the encoding under
test, calls to the wirecheck test hub, the Echo barrier, and the accepted shapes of a
protocol error.

Every test runs once per hub protocol (``json``, ``messagepack``) through the ``sig``
fixture. The reading (``draft`` or ``v1``) is the profile's base.
"""
from __future__ import annotations

import itertools
import os
import uuid

import pytest

from wirecheck.conformance.target import websocket
from wirecheck.conformance.target.connection import Connection, TargetClosed, TargetError, TargetTimeout
from wirecheck.conformance.report.verdicts import Breach
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.signalr import codec
from wirecheck.reference_impl.signalr.messages import (Close, Completion, HandshakeRequest, HandshakeResponse,
                                             Invocation, Ping, StreamCompletion, StreamInvocation,
                                             StreamItem)
from wirecheck.reference_impl.signalr.observer import hub_framing_requirement

#: What the suite accepts from a target (a bound of its own, not the protocol's 2 GB).
MAX_INCOMING = 64 * 1024 * 1024
#: Keep-alive Pings one receive reads past before the suite calls the target a flood and drops
#: the connection (:meth:`Sig.recv`). A sound server sends one Ping per keep-alive interval
#: (15 s by default, seconds in any profile) and a receive waits seconds, so it sees a handful;
#: an endless stream of Pings brings thousands per read. Without this bound a receive reads the
#: stream for its whole timeout (and a loop of receives, the test's whole budget), each read
#: another transcript entry the report keeps.
MAX_PINGS = 1000
ENCODINGS = ("json", "messagepack")


def pytest_generate_tests(metafunc):
    if "encoding" in metafunc.fixturenames:
        wanted = getattr(metafunc.function, "encodings", ENCODINGS)
        metafunc.parametrize("encoding", wanted)


class NonBlockingWatch:
    """What one connection sent without asking for an answer, and the answers that came anyway
    (SIGR-INV-007: "It is a protocol error for a Caller to send a StreamItem, Completion or
    StreamCompletion message in response to a Non-Blocking Invocation"). Whatever test reads
    such an answer fails on that requirement, not its own: a value carried through by
    Remember/Recall is not at fault when Remember's id-less Completion comes first. It also
    charges any other hub message that does not decode to the rule it breaks (the capture
    observer's reading: observer.hub_framing_requirement)."""

    def __init__(self, draft: bool, encoding: str, outgoing: codec.Decoder) -> None:
        self.draft, self.encoding = draft, encoding
        self.sent = 0                   # non-blocking invocations sent
        self.ids: set[str] = set()      # the draft's: they carry an id, and nonblocking true
        self._outgoing: codec.Decoder | None = outgoing

    def sent_bytes(self, data: bytes) -> None:
        """What the kit sent (encoded messages and raw bytes alike), read as the target reads it;
        once it sends what does not decode (on purpose), the rest is followed only as far as
        the encoder sees it (:meth:`note`: messages the suite built)."""
        if self._outgoing is None:
            return
        try:
            messages = self._outgoing.feed(data)
        except FrameError as exc:
            messages, self._outgoing = exc.frames or [], None
        for message in messages:
            self.note(message)

    def note(self, message) -> None:
        """An outgoing message."""
        if not isinstance(message, (Invocation, StreamInvocation)):
            return
        iid = message.invocation_id
        if iid is None or getattr(message, "nonblocking", False):
            self.sent += 1
            if iid:
                self.ids.add(iid)
        else:
            self.ids.discard(iid)       # the id used again for a call: its answers are due

    def check(self, message) -> None:
        """An incoming, decoded message: an answer to a non-blocking invocation is a breach."""
        if self.ids and isinstance(message, (Completion, StreamItem, StreamCompletion)) \
                and message.invocation_id in self.ids:
            raise Breach(f"the target answered a non-blocking invocation, which nothing may get: "
                         f"{type(message).__name__} for {message.invocation_id!r}", "SIGR-INV-007")

    def malformed(self, error) -> tuple[tuple[str, ...], str]:
        """The rules a hub message from the target that does not decode breaks, and what it
        means (target.Connection.breach_of)."""
        if self.sent and (getattr(error, "part", "") or "").lower() == "invocationid":
            # an answer without an id, after an invocation that wanted none: the answer is the fault
            return ("SIGR-INV-007",), ("the target sent a message without an invocation id after a non-blocking "
                                       "invocation: an answer to it, which nothing may get")
        rid = hub_framing_requirement(error.category, self.draft, self.encoding)
        return ((rid,) if rid else ()), ""


def only(*encodings):
    """Decorator: run a test for these encodings only (its subject is one encoding's)."""
    def mark(fn):
        fn.encodings = encodings
        return fn
    return mark


class Sig:
    """Suite-side vocabulary for SignalR; does no I/O until a test calls it."""

    def __init__(self, target, encoding: str) -> None:
        self.target = target
        self.encoding = encoding
        self.reading = target.profile.base if target.profile.base in ("v1", "draft") else "v1"
        self.draft = self.reading == "draft"
        self._ids = itertools.count(1)
        self._prefix = f"{os.getpid() % 10000}-{uuid.uuid4().hex[:6]}-"

    def has(self, feature: str) -> bool:
        """Whether the profile says the hub has ``feature`` (the built-in profiles: every v1
        feature in ``v1``, none in ``draft``; a profile file may turn one off)."""
        return self.target.profile.feature(feature, not self.draft)

    # -- ids and messages ------------------------------------------------------------------

    def new_id(self) -> str:
        return f"{self._prefix}{next(self._ids)}"

    def encode(self, message, encoding: str | None = None) -> bytes:
        return codec.encode(message, encoding or self.encoding, self.reading)

    def decoder(self, encoding: str | None = None, handshake: bool = True) -> codec.Decoder:
        return codec.Decoder(codec.SignalRLimits(max_frame_size=MAX_INCOMING), origin="server",
                             protocol=encoding or self.encoding, profile=self.reading,
                             handshake=handshake)

    def invocation(self, target: str, *args, invocation_id: str | None = None) -> Invocation:
        return Invocation(target, list(args), invocation_id or self.new_id())

    def stream_request(self, target: str, *args, invocation_id: str | None = None):
        """A call whose results stream: StreamInvocation in v1, a plain Invocation in the draft."""
        iid = invocation_id or self.new_id()
        if self.draft:
            return Invocation(target, list(args), iid)
        return StreamInvocation(iid, target, list(args))

    def nonblocking(self, target: str, *args) -> Invocation:
        if self.draft:
            return Invocation(target, list(args), self.new_id(), nonblocking=True)
        return Invocation(target, list(args))

    def is_stream_end(self, message, iid: str) -> bool:
        if self.draft:
            return isinstance(message, StreamCompletion) and message.invocation_id == iid
        return isinstance(message, Completion) and message.invocation_id == iid

    # -- connections -----------------------------------------------------------------------

    def open(self, *, encoding: str | None = None, name: str = "", negotiate: bool = True,
             url: str | None = None) -> Connection:
        """A connection with no handshake sent yet."""
        encoding = encoding or self.encoding
        decoder = self.decoder(encoding)
        watch = NonBlockingWatch(self.draft, encoding, codec.Decoder(
            codec.SignalRLimits(max_frame_size=MAX_INCOMING), origin="client", protocol=encoding,
            profile=self.reading, handshake=True))

        def encode(message):
            watch.note(message)         # also once raw bytes it could not read stopped its reading
            return self.encode(message, encoding)
        target = self.target
        if target.url is None:
            return self._watched(target.connect(name, decoder=decoder, encode=encode), watch, decoder)
        ws_url = url or target.url
        if negotiate and url is None:
            try:
                answer = websocket.negotiate(target.url, target.timeout, 1)
            except (TimeoutError, websocket.WebSocketTimeout) as exc:
                raise TargetTimeout(f"negotiate failed: {exc or 'timed out'}") from None
            except (OSError, websocket.WebSocketError) as exc:
                raise TargetError(f"negotiate failed: {exc}") from None
            token = answer.get("connectionToken") or answer.get("connectionId")
            if not isinstance(token, str):
                raise TargetError(f"negotiate answer without a connection token: {answer!r}")
            ws_url = f"{target.url}{'&' if '?' in target.url else '?'}id={token}"
        return self._watched(target.connect_websocket(ws_url, name, decoder=decoder, encode=encode,
                                                      binary=encoding == "messagepack"), watch, decoder)

    @classmethod
    def _watched(cls, conn, watch: NonBlockingWatch, decoder):
        """Past the handshake, a message that does not decode, or answers a non-blocking
        invocation, is charged to the rule it breaks (:class:`NonBlockingWatch`)."""
        conn.breach_of = lambda error: watch.malformed(error) if decoder.handshake_done else ((), "")
        conn.check_frame = watch.check
        conn.on_send = watch.sent_bytes
        return cls._pings_pass(conn)

    @staticmethod
    def _pings_pass(conn):
        """Keep-alive Pings may come at any moment (SPEC_NOTES: KeepAliveInterval): every
        receive passes over them (Connection.unsolicited), a test of Pings asks for them, and
        more than :data:`MAX_PINGS` in a row is a flood."""
        conn.unsolicited, conn.unsolicited_what, conn.unsolicited_limit = (Ping,), "keep-alive Pings", MAX_PINGS
        return conn

    def connect(self, *, encoding: str | None = None, name: str = "", **options) -> Connection:
        """A connection past the handshake (v1: ``{}`` received; the draft answers nothing)."""
        encoding = encoding or self.encoding
        conn = self.open(encoding=encoding, name=name, **options)
        conn.send(HandshakeRequest(encoding, None if self.draft else 1))
        if not self.draft:
            conn.expect(HandshakeResponse, error=None)
        return conn

    # -- receiving -------------------------------------------------------------------------

    def recv(self, conn, expecting: str = "a message", timeout: float | None = None):
        """The next message other than a keep-alive Ping, within one timeout however many Pings
        come first; more than :data:`MAX_PINGS` in a row is a flood, and the connection is
        dropped (Connection.recv with the Pings as ``unsolicited``: :meth:`_pings_pass`)."""
        return conn.recv(timeout, expecting=expecting)

    def collect(self, conn, iid: str, *, end=None) -> list:
        """Messages for ``iid`` until the one ``end`` accepts (default: a Completion, or the
        draft's StreamCompletion). Any message for another id is a failure."""
        end = end or (lambda m: isinstance(m, (Completion, StreamCompletion)) and m.invocation_id == iid)
        out = []
        while True:
            message = self.recv(conn, f"the messages of invocation {iid!r}")
            if getattr(message, "invocation_id", iid) != iid:
                raise TargetError(f"expected messages for {iid!r}, got {message!r}")
            out.append(message)
            if end(message):
                return out

    def call(self, conn, target: str, *args):
        """Invoke and return the Completion (asserting no StreamItem came first)."""
        request = self.invocation(target, *args)
        conn.send(request)
        got = self.collect(conn, request.invocation_id)
        items = [m for m in got if isinstance(m, StreamItem)]
        assert not items, f"a single-result call got StreamItems: {items}"
        return got[-1]

    def barrier(self, conn, after: str = "") -> None:
        """Prove nothing else is queued: an Echo whose Completion must be the next message."""
        token = f"barrier-{uuid.uuid4().hex[:8]}"
        request = self.invocation("Echo", token)
        conn.send(request)
        message = self.recv(conn, f"the barrier's Completion{' after ' + after if after else ''}")
        if not (isinstance(message, Completion) and message.invocation_id == request.invocation_id
                and message.result == token):
            raise TargetError(f"expected only the barrier's Completion{' after ' + after if after else ''}"
                              f", got {message!r}")

    def expect_protocol_error(self, conn, reason: str) -> Close | None:
        """The target treats what was sent as a protocol error: it closes the connection,
        after a Close message (v1 servers) or at once. Returns the Close, if any.

        Ending the connection is what the document allows ("the other endpoint may
        immediately terminate", SIGR-ERR-010, a MAY): a target that goes on (proven by an Echo
        sent behind, answered) is not charged with the test's MUST (which says what the
        client's message is, not what the server must do) but with that MAY not taken,
        INFORMATIONAL (verdicts.classify)."""
        token = f"after-error-{uuid.uuid4().hex[:8]}"
        echo = self.invocation("Echo", token)
        try:
            conn.send(echo)
            seen = []
            while len(seen) < MAX_PINGS:
                message = self.recv(conn, f"the connection to close ({reason})")
                if isinstance(message, Close):
                    conn.expect_closed(reason=reason)
                    return message
                seen.append(message)
                if isinstance(message, Completion) and message.invocation_id == echo.invocation_id:
                    break
        except TargetClosed:
            return None
        raise Breach(f"the target went on after a protocol error ({reason}): {seen[0]!r}"
                     + (f" and {len(seen) - 1} more" if len(seen) > 1 else "")
                     + "; the document allows it to end the connection, and does not require it", "SIGR-ERR-010")

    def expect_closed_or_error(self, conn, iid: str | None, reason: str) -> str:
        """Accepted: the connection closes (protocol error), or ``iid`` completes with an error.
        Returns which ("closed" or "error")."""
        try:
            message = self.recv(conn, f"an error or the connection to close ({reason})")
        except TargetClosed:
            return "closed"
        if isinstance(message, Close):
            conn.expect_closed(reason=reason)
            return "closed"
        if iid is not None and isinstance(message, Completion) and message.invocation_id == iid \
                and message.error is not None:
            return "error"
        raise TargetError(f"expected an error Completion or the connection to close ({reason}), "
                          f"got {message!r}")


@pytest.fixture
def sig(target, encoding):
    return Sig(target, encoding)


def raw_json(text: str) -> bytes:
    """A JSON record as the suite writes it by hand (for messages the encoder refuses)."""
    return text.encode("utf-8") + b"\x1e"


def raw_msgpack(items) -> bytes:
    import msgpack
    from wirecheck.reference_impl.signalr.framing import frame_binary
    return frame_binary(msgpack.packb(items, use_bin_type=True))
