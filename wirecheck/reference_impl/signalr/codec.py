"""The SignalR codec: a handshake, then hub messages in the negotiated protocol.

``Decoder`` reads one direction of a connection (raw TCP, or the payloads of a WebSocket's
messages concatenated). It starts with the JSON handshake record unless told otherwise, then
switches to the hub protocol: the one the handshake request names (bytes from the client), or
the one it is given (bytes from the server, whose ``{}`` does not say). Reading the server side
without knowing the protocol, it looks at the first byte after the handshake: JSON messages
begin with ``{`` then a quote or whitespace; a MessagePack record never does (its body starts
with an array header).

Errors (:mod:`wirecheck.reference_impl.core.errors`): framing errors (too long, VarInt too wide) are
sticky, a bad message is not (the records around it are intact), so the session decides
whether to close. Nothing else escapes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..core.fieldnames import field_names
from ..core.decoding import IncrementalDecoder, decode_all as _decode_all
from ..core.errors import Category, FrameError, PayloadError
from ..core.limits import Limits
from . import fastpath, json_protocol, msgpack_protocol
from .constants import HUB_PROTOCOLS, JSON, MAX_PAYLOAD, MESSAGEPACK, PROTOCOL, RS
from .framing import BINARY, TEXT, RecordReader
from .messages import HandshakeRequest, HandshakeResponse


@dataclass(frozen=True, slots=True)
class SignalRLimits(Limits):
    """``max_frame_size``: the longest record (JSON text without its separator, or MessagePack
    body). The document's ceiling is 2 GB; the reference hub lowers it (its receive limit).
    ``strict_varint``: refuse non-minimal VarInt lengths."""
    max_frame_size: int = MAX_PAYLOAD
    strict_varint: bool = False


_DEFAULT_LIMITS = SignalRLimits()     # frozen: one instance serves every decoder

#: Bytes a JSON text may start with (whitespace, then the object).
_JSON_START = (b"{", b" ", b"\t", b"\r", b"\n")

_PARSERS = {JSON: json_protocol.parse_message, MESSAGEPACK: msgpack_protocol.parse_message}
_ENCODERS = {JSON: json_protocol.encode_message, MESSAGEPACK: msgpack_protocol.encode_message}


def encode(message, protocol: str = JSON, profile: str = "v1") -> bytes:
    """One message with its framing (handshake messages are always JSON)."""
    if isinstance(message, (HandshakeRequest, HandshakeResponse)):
        return json_protocol.encode_handshake(message)
    try:
        return _ENCODERS[protocol](message, profile)
    except KeyError:
        raise ValueError(f"unknown hub protocol {protocol!r}") from None


def parse_record(record: bytes, protocol: str, profile: str = "v1", offset: int = 0):
    """One record's body (without framing) as a hub message."""
    return _PARSERS[protocol](record, offset, profile)


class Decoder(IncrementalDecoder):
    """``origin``: who sent the bytes ("client", "server" or None = guess from the handshake).
    ``protocol``: the hub protocol when known ("json"/"messagepack"); ``handshake=False`` reads
    hub messages from the first byte (a stream captured after the handshake)."""

    protocol = PROTOCOL

    def __init__(self, limits: Optional[SignalRLimits] = None, *, origin: Optional[str] = None,
                 protocol: Optional[str] = None, profile: str = "v1", handshake: bool = True) -> None:
        if protocol is not None and protocol not in HUB_PROTOCOLS:
            raise ValueError(f"unknown hub protocol {protocol!r}")
        self.limits = limits or _DEFAULT_LIMITS
        self.origin = origin
        self.profile = profile
        self.hub_protocol = protocol
        # The draft defines no handshake response: a draft server's first bytes are messages.
        self.handshake_done = not handshake or (profile == "draft" and origin == "server")
        self._buf = RecordReader(self.limits.max_frame_size, bool(self.limits.strict_varint))
        self._closed_by_handshake = False
        self._fast_known = False          # _fast() was once True (it stays so)
        # Records cut in one batch and not yet parsed: bodies, their offsets (binary) or the
        # first one's (text: the rest follow from the lengths), and the next index.
        self._pending: list[bytes] = []
        self._pending_messages: list = []
        self._pending_offsets: Optional[list[int]] = None
        self._pending_start = 0
        self._pending_next = 0
        if self.handshake_done:
            self._switch()

    @property
    def buffered(self) -> int:
        pending = sum(len(b) for b in self._pending[self._pending_next:])
        return len(self._buf) + pending

    @property
    def _error(self) -> Optional[FrameError]:
        """The sticky stream error (IncrementalDecoder.eof: no TRUNCATED after it)."""
        return self._buf.error

    @property
    def broken(self) -> bool:
        return self._buf.error is not None

    def receive(self, data) -> None:
        self._buf.feed(data)

    def _switch(self) -> None:
        if self.hub_protocol is not None:
            self._buf.mode = TEXT if self.hub_protocol == JSON else BINARY

    def feed(self, data) -> list:
        """Buffer ``data`` and return every whole message. After the handshake, records are
        cut in one pass and well-formed v1 messages take the fast path (:mod:`.fastpath`);
        anything else is parsed carefully, so messages and errors are the same either way. On
        an error, the messages before it are on the exception's ``frames`` and the records
        after it stay for the next call."""
        buf = self._buf
        # A read that leaves the record in hand partial answers nothing (most reads of a
        # chunked stream): the reader says so without cutting anything.
        if self._fast_known and not self._pending and buf.feed_partial(data):
            return []
        buf.feed(data)
        out: list = []
        try:
            while True:
                if self._pending:
                    self._parse_pending(out)
                    continue
                if self._fast_known or self._fast():
                    start, batch, offsets = buf.take_records()
                    if batch:
                        # Lazily: up to the first record the careful parser must read (the
                        # last answer then, None); _next_pending reads on from there.
                        if self.hub_protocol == JSON:
                            messages = fastpath.json_v1_batch(batch, lazy=True)
                        else:
                            messages = fastpath.msgpack_v1_batch(batch, lazy=True)
                        if messages[-1] is None:
                            self._pending = batch.split(RS) if self.hub_protocol == JSON else batch
                            self._pending_messages, self._pending_offsets = messages, offsets
                            self._pending_start, self._pending_next = start, 0
                            self._parse_pending(out)
                        else:
                            out += messages
                    # take_records cut every whole record it could: another call would cut
                    # nothing. What is left is partial, or a record next_record reads alone
                    # (an empty text one) or refuses. Inline, as most reads end here.
                    got = buf.next_record()
                    if got is None:
                        return out
                    out.append(_PARSERS[self.hub_protocol](got[1], got[0], self.profile))
                    continue
                message = self.next_frame()
                if message is None:
                    return out
                out.append(message)
        except FrameError as exc:
            exc.frames = out
            raise

    def _fast(self) -> bool:
        """Whether this stream's records now take the fast path (v1, after the handshake)."""
        fast = self.handshake_done and self.profile == "v1" and not self._closed_by_handshake \
            and self.hub_protocol is not None
        # Once True, always: handshake_done and _closed_by_handshake are set by the handshake
        # only, hub_protocol once (handshake or guess), profile never. feed asks for every
        # read, so the answer is kept (the fuzzers trace every call).
        self._fast_known = fast
        return fast

    def _parse_pending(self, out: list) -> None:
        while self._pending:
            out.append(self._next_pending())

    def _next_pending(self):
        """The next message of the batch cut earlier (its fast result, or the careful parse,
        which may raise: the index is past the record first, so the rest stays)."""
        bodies, messages, i = self._pending, self._pending_messages, self._pending_next
        self._pending_next = i + 1
        if i + 1 >= len(bodies):
            self._pending = []
        if i == len(messages):         # the lazy fast path stopped before this record: read on
            if self.hub_protocol == JSON:
                messages += fastpath.json_v1_batch(RS.join(bodies[i:]), lazy=True)
            else:
                messages += fastpath.msgpack_v1_batch(bodies[i:], lazy=True)
        message = messages[i]
        if message is None:
            if self._pending_offsets is not None:
                offset = self._pending_offsets[i]
            else:
                offset = self._pending_start + sum(len(b) + 1 for b in bodies[:i])
            message = _PARSERS[self.hub_protocol](bodies[i], offset, self.profile)
        return message

    def next_frame(self):
        if self._pending:
            return self._next_pending()
        buf = self._buf
        if self.handshake_done and self.hub_protocol is None:
            if not self._detect():
                return None
        if self._closed_by_handshake and len(buf):
            error = PayloadError(f"{len(buf)} bytes after a failed handshake",
                                 category=Category.TRAILING_BYTES, protocol=PROTOCOL, offset=buf.offset)
            buf.error = error
            raise error
        if not self.handshake_done and self.origin is None and len(buf) and buf.peek(1) not in _JSON_START:
            self.handshake_done = True            # unknown origin and not JSON: MessagePack, no handshake
            if not self._detect():
                return None
        got = buf.next_record()
        if got is None:
            return None
        offset, record = got
        if self.handshake_done:
            return _PARSERS[self.hub_protocol](record, offset, self.profile)
        return self._handshake(record, offset)

    def _handshake(self, record: bytes, offset: int):
        origin, obj = self.origin, None
        if origin is None:
            obj = json_protocol.load_object(record, offset, "handshake")
            if "type" in obj and "protocol" not in obj:
                # Not a handshake at all: a capture (or a pasted message) that starts after it.
                self.handshake_done = True
                self.hub_protocol = self.hub_protocol or JSON
                self._switch()
                return _PARSERS[self.hub_protocol](record, offset, self.profile)
            origin = "client" if json_protocol.guess_handshake(obj) == "request" else "server"
        if origin == "client":
            # The object read above, if any: loading the same record again gives the same.
            message = json_protocol.parse_handshake_request(record, offset, self.profile, obj)
            self.handshake_done = True
            if message.protocol in HUB_PROTOCOLS:
                self.hub_protocol = message.protocol
                self._switch()
            else:
                self._closed_by_handshake = True     # the server answers with an error and closes
            return message
        message = json_protocol.parse_handshake_response(record, offset, self.profile, obj)
        self.handshake_done = True
        if message.error is not None:
            self._closed_by_handshake = True
        self._switch()
        return message

    def _detect(self) -> bool:
        """Guess the server's hub protocol from the first bytes after its handshake."""
        head = self._buf.peek(2)
        if not head:
            return False
        if head[0:1] in (b"{", b" ", b"\t", b"\r", b"\n"):
            if len(head) < 2:
                return False
            # JSON text is whitespace then ``{`` then a quote, ``}`` or whitespace; a record
            # length of 9, 10, 13, 32 or 123 is followed by a MessagePack array header.
            follow = b'"} \t\r\n' if head[0:1] == b"{" else b"{ \t\r\n"
            self.hub_protocol = JSON if head[1:2] in follow else MESSAGEPACK
        else:
            self.hub_protocol = MESSAGEPACK
        self._switch()
        return True


def decode_all(data: bytes, limits: Optional[SignalRLimits] = None, **options) -> list:
    """Every message of a complete byte string; the first error raises (with ``frames``)."""
    return _decode_all(Decoder(limits, **options), data)


def make_decoder(limits=None, origin=None, protocol=None, profile=None, handshake: bool = True):
    """Registry factory: ``profile`` None means v1."""
    return Decoder(limits, origin=origin, protocol=protocol, profile=profile or "v1",
                   handshake=handshake)


# --- views ------------------------------------------------------------------------------------

#: Values _jsonable returns as they are, by exact type (most of a message's): one test first.
_PLAIN = frozenset((str, int, float, bool, type(None)))


def _jsonable(value):
    if type(value) in _PLAIN:
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"hex": bytes(value).hex()}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def frame_to_dict(message) -> dict:
    """JSON-friendly view for the CLI and transcripts."""
    out: dict = {"type": type(message).__name__}
    for name in field_names(message):
        value = getattr(message, name)
        if name in ("headers", "stream_ids", "allow_reconnect") and value is None:
            continue
        if name == "nonblocking" and not value:
            continue
        if type(message).__name__ == "Completion" and name == "result" and not message.has_result:
            continue
        out[name] = _jsonable(value)
    return out
