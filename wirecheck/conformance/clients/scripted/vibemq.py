"""VibeMQ: the answers and frames a server may send that a client must cope with
(conformance/clients/scripted). Frames are the document's: ``[u32 body length][u8 compression
flags][body]`` ("Framing"; protocol 1.0 has no flags byte, "Protocol Versions"), the body a
binary message with a JSON payload ("Message Format"); cut with :class:`VibeSplitter`, built
and read with the reference codec. Which framing a connection speaks is read from the client's
first frame (its Connect or Ping is never compressed, so byte 4 is the flags byte 0 in 1.1 and
the version byte 1 in 1.0); the body style (errorCode/errorMessage written in every message, as
the document shows, or only in Error, as the real codec: SPEC_NOTES) is kept as the broker
wrote it.

- ``error-response``: the first request of the kind ``command`` names (default ``publish``;
  also ``subscribe``, ``unsubscribe``, ``createQueue``, ``deleteQueue``, ``queueInfo``,
  ``listQueues``) after the ConnectAck is answered with an Error ``code`` (default
  ``SERVER_ERROR``, "Internal server error", a code of the document's "Error Codes" table)
  carrying the request's id, as the document's answers do. The request is recorded as the
  client's but held back from the broker, so a refused publish is not delivered and a refused
  subscription does not exist. The Error goes out when the broker has answered the requests
  before it (it answers one connection's requests in turn, SPEC_NOTES), or after ``grace``
  seconds (default 0.2); the document does not promise the order anyway.
- ``unknown-fields``: every server message but Deliver carries headers no client knows
  (``x-wirecheck-unknown``, and ``x-wirecheck-empty`` with an empty value), and QueueInfo's
  payload a property no client knows. Headers are an open map ("Headers": common, message and
  queue headers, each message carrying some); the payload is a ``JsonElement`` ("Message
  Fields"), and the real server's QueueInfo already has fields beyond the document's six
  (SPEC_NOTES). Deliver is left alone: its headers are the publisher's (VIBE-DEL-003).
- ``max-size``: the ConnectAck is padded (headers ``x-wirecheck-padding-N``) to a body of
  exactly ``size`` bytes (default 1,048,576, the largest body the real implementation reads:
  SPEC_NOTES "max body 1,048,576 bytes"; the document sets no limit). It is sent
  uncompressed: compression applies after the handshake ("Negotiation").
- ``compress-all``: once a compression algorithm is agreed, every server frame is compressed
  with it, small ones included (a Pong of 20 bytes). The threshold is the server's own setting
  ("Threshold", "Configuration": ``CompressionThreshold``), so a server configured with the
  smallest one does exactly this, and "FrameReader always reads the compression flag directly
  from each frame" ("Negotiation"): the client must read each frame by its own flag
  (VIBE-COMP-005). Nothing happens when no algorithm was agreed, or in protocol 1.0.

Not offered, because VibeMQ has no such thing:
- ``heartbeat`` / a server Ping: Ping is "Direction: Client -> Server" and Pong is the
  "Response to Ping" ("Keep-alive"); a server never pings.
- a server Disconnect or other server-initiated close frame: Disconnect is "Client -> Server"
  ("Connection Management"); the byte-level ``close`` scenario ends the connection from the
  server's side.
- ``metadata-update``, ``consumer-update``: no such commands ("Command Types").
"""
from __future__ import annotations

import dataclasses
import logging
import struct
from collections import deque

from wirecheck.conformance.clients.scripted import FrameShaper, Splitter
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq import compression as comp
from wirecheck.reference_impl.vibemq.constants import (COMPRESSION_BY_NAME, COMPRESSION_THRESHOLD,
                                             DEFAULT_MAX_BODY, DEFAULT_MAX_DECOMPRESSED,
                                             DOCUMENT_ERROR_CODES, MIN_BODY, PROTOCOL_VERSION,
                                             TYPE_BY_NAME, CommandType, Compression, ErrorCode)
from wirecheck.reference_impl.vibemq.observer import ANSWERS, SILENT

log = logging.getLogger(__name__)

_U32 = struct.Struct(">I")
_HEAD = struct.Struct(">IB")
_TYPES = frozenset(int(t) for t in CommandType)
#: Seconds after which a held request's Error goes out although the broker has not answered
#: every request before it (the reference broker answers within milliseconds).
GRACE = 0.2
#: Requests ``error-response`` may refuse: those with an answer ("Command Descriptions"), but
#: Connect (its refusal is an authentication failure, not a refused request) and Ping (a Pong
#: or, at most, RATE_LIMITED: VIBE-PING-001).
REFUSABLE = frozenset(ANSWERS) - {CommandType.CONNECT, CommandType.PING}
EXTRA_HEADERS = {"x-wirecheck-unknown": "ignore me", "x-wirecheck-empty": ""}
EXTRA_PROPERTY = ("x-wirecheck-unknown", {"nested": [1, "two", None], "ignore": True})
#: A header value is a u16-length string ("Binary Protocol Structure").
_PIECE = 0xFFFF


class Framing:
    """Which framing the connection speaks: ``flags`` is None until the first frame says."""

    def __init__(self) -> None:
        self.flags: bool | None = None

    def decide(self, buf: bytearray) -> None:
        # 1.1: [length][flags 0][version 1][type]...; 1.0: [length][version 1][type][id]...
        # A 1.1 first frame compressed with gzip (flags 1, illegal before the agreement) has
        # the gzip magic 0x1f after it, which is no command type.
        self.flags = not (buf[4] == PROTOCOL_VERSION and buf[5] in _TYPES)


class VibeSplitter(Splitter):
    def __init__(self, framing: Framing) -> None:
        super().__init__()
        self.framing = framing

    def size(self, buf: bytearray) -> int | None:
        if self.framing.flags is None:
            if len(buf) < 6:
                return None
            self.framing.decide(buf)
        if len(buf) < 4:
            return None
        (n,) = _U32.unpack_from(buf)
        if n < MIN_BODY:
            raise ValueError(f"body length {n}")       # not a frame: pass the rest through
        return (5 if self.framing.flags else 4) + n


class _VibeShaper(FrameShaper):
    """Reads both directions' messages; knows whether the client is connected and which
    compression was agreed."""

    def __init__(self, relay, options: dict) -> None:
        self.framing = Framing()
        super().__init__(relay, options)
        self.connected = False
        self.agreed = Compression.NONE

    def make_splitter(self, direction: str) -> VibeSplitter:
        return VibeSplitter(self.framing)

    # -- reading and writing with the reference codec --------------------------------------------

    def read(self, frame: bytes):
        """(message, compression flag, body style) of one whole frame, or None when the codec
        does not read it."""
        head = 5 if self.framing.flags else 4
        flag = frame[4] if self.framing.flags else Compression.NONE
        try:
            body = comp.decompress(frame[head:], flag, DEFAULT_MAX_DECOMPRESSED)
            message = codec.parse_message(bytes(body))
        except (FrameError, ValueError):
            return None
        style = "document" if codec.encode_body(message, "document") == body else "vibemq-1.8"
        return message, flag, style

    def write(self, message: codec.Message, flag: int, style: str, *, grown: bool = True) -> bytes:
        """One frame of ``message``, compressed with ``flag``; with ``grown``, a body that has
        reached the threshold is compressed with the agreed algorithm ("Threshold": from the
        threshold on, bodies are compressed once an algorithm is agreed)."""
        body = codec.encode_body(message, style)
        if not self.framing.flags:
            return _U32.pack(len(body)) + body
        if grown and flag == Compression.NONE and self.agreed and len(body) >= COMPRESSION_THRESHOLD:
            flag = self.agreed
        if flag != Compression.NONE:
            body = comp.compress(body, flag)
        return _HEAD.pack(len(body), flag) + body

    # -- the relay's side --------------------------------------------------------------------------

    def server_frame(self, frame: bytes) -> None:
        got = self.read(frame)
        self.on_server(frame, got)
        if got is not None and got[0].type == CommandType.CONNECT_ACK:
            self.connected = True
            name = (got[0].header("negotiated-compression") or "").strip().lower()
            self.agreed = COMPRESSION_BY_NAME.get(name, Compression.NONE) if self.framing.flags \
                else Compression.NONE

    def on_server(self, frame: bytes, got) -> None:
        self.send(frame)


class ErrorResponse(_VibeShaper):
    name = "error-response"
    client_outcome = "error"
    summary = "the first Publish (or option command) after Connect answered with Error SERVER_ERROR"

    def __init__(self, relay, options: dict) -> None:
        super().__init__(relay, options)
        self.grace = float(options.get("grace", GRACE))
        wanted = str(options.get("command", "publish"))
        self.command = TYPE_BY_NAME.get(wanted) or TYPE_BY_NAME.get(wanted[:1].lower() + wanted[1:]) \
            or getattr(CommandType, wanted.upper(), None)
        self.code = str(options.get("code", ErrorCode.SERVER_ERROR))
        if self.command not in REFUSABLE or self.code not in DOCUMENT_ERROR_CODES:
            # a scenario option is not the client's fault: say so, and refuse nothing
            log.warning("error-response: command %r / code %r not usable", wanted, self.code)
            self.note(f"command {wanted!r} / code {self.code!r} not usable: nothing refused", acted=False)
        #: answers the broker owes for requests passed on to it
        self.due = 0
        #: Errors owed to held requests: [answers the broker owes before it, the frame]
        self.owed: deque[list] = deque()

    def client_frame(self, frame: bytes) -> None:
        got = self.read(frame)
        message = got[0] if got is not None else None
        if (message is not None and self.connected and not self.log
                and message.type == self.command):
            self.hold(frame)                  # recorded as sent; the broker never handles it
            self.note(f"{message.type_name} {message.id!r} refused: Error {self.code}")
            reply = codec.Message(CommandType.ERROR, message.id, error_code=self.code,
                                  error_message="Internal server error (wirecheck scenario error-response)"
                                  if self.code == ErrorCode.SERVER_ERROR else
                                  f"{self.code} (wirecheck scenario error-response)")
            # an Error writes errorCode/errorMessage in either body style
            self.owed.append([self.due, self.write(reply, Compression.NONE, "document")])
            self._pay()
            if self.owed:
                self.later(self.grace, self._pay_all)
            return
        if message is None or not self.connected or message.type not in SILENT:
            self.due += 1                     # the broker answers it (an Error at least)
        self.pass_on(frame)

    def on_server(self, frame: bytes, got) -> None:
        self.send(frame)
        if got is not None and got[0].type != CommandType.DELIVER:
            self.due = max(0, self.due - 1)   # the broker answers in turn: one fewer before ours
            for item in self.owed:
                item[0] -= 1
            self._pay()

    def eof(self) -> None:
        self._pay_all()                       # the server answers what it read before it closes
        super().eof()

    def _pay(self) -> None:
        while self.owed and self.owed[0][0] <= 0:
            self.send(self.owed.popleft()[1])

    def _pay_all(self) -> None:
        while self.owed:
            self.send(self.owed.popleft()[1])


class UnknownFields(_VibeShaper):
    name = "unknown-fields"
    client_outcome = "success"
    summary = "headers no client knows on every server message but Deliver; a QueueInfo property"

    def on_server(self, frame: bytes, got) -> None:
        if got is None or got[0].type == CommandType.DELIVER:
            self.send(frame)
            return
        message, flag, style = got
        changes = {"headers": {**(message.headers or {}), **EXTRA_HEADERS}}
        if message.type == CommandType.QUEUE_INFO and isinstance(message.payload, dict):
            changes["payload"] = {**message.payload, EXTRA_PROPERTY[0]: EXTRA_PROPERTY[1]}
        self.note(f"{message.type_name} with unknown " + " and ".join(changes))
        self.send(self.write(dataclasses.replace(message, **changes), flag, style))


class MaxSize(_VibeShaper):
    name = "max-size"
    client_outcome = "success"
    summary = "the ConnectAck padded to a body of exactly 1,048,576 bytes"

    def on_server(self, frame: bytes, got) -> None:
        if got is not None and got[0].type == CommandType.CONNECT_ACK and not self.log:
            message, _, style = got
            size = int(self.options.get("size", 0)) or DEFAULT_MAX_BODY
            padded = _padded_to(message, size, style)
            if padded is not None:
                # the handshake's answer: not compressed, whatever is agreed ("Negotiation")
                frame = self.write(padded, Compression.NONE, style, grown=False)
                self.note(f"ConnectAck with a body of {size} bytes")
        self.send(frame)


class CompressAll(_VibeShaper):
    name = "compress-all"
    client_outcome = "success"
    summary = "every server frame after the ConnectAck compressed with the agreed algorithm"

    def on_server(self, frame: bytes, got) -> None:
        if (self.agreed and self.framing.flags and frame[4] == Compression.NONE
                and got is not None and got[0].type != CommandType.CONNECT_ACK):
            body = comp.compress(frame[5:], self.agreed)
            self.note(f"{got[0].type_name} of {len(frame) - 5} bytes compressed "
                      f"({Compression(self.agreed).name})")
            frame = _HEAD.pack(len(body), self.agreed) + body
        self.send(frame)


def _padded_to(message: codec.Message, size: int, style: str) -> codec.Message | None:
    """``message`` with ``x-wirecheck-padding-N`` headers making its body exactly ``size``
    bytes, or None if there is not room for one."""
    headers = dict(message.headers or {})
    body = len(codec.encode_body(dataclasses.replace(message, headers=headers or None), style))
    n = 0
    while True:
        key = f"x-wirecheck-padding-{n}"
        room = size - body - (4 + len(key))              # two u16 lengths and the key
        if room < 1:
            return None
        if room <= _PIECE:
            headers[key] = "x" * room
            break
        # leave room for at least one more header after this one
        piece = min(_PIECE, room - (4 + len(key) + 2))
        headers[key] = "x" * piece
        body += 4 + len(key) + piece
        n += 1
    out = dataclasses.replace(message, headers=headers)
    assert len(codec.encode_body(out, style)) == size, (len(codec.encode_body(out, style)), size)
    return out


SCENARIOS = {cls.name: cls for cls in (ErrorResponse, UnknownFields, MaxSize, CompressAll)}
