"""SignalR: the server behaviours of today's protocol a client must cope with
(conformance/clients/scripted). The document (signalr-hub-protocol.md) is an early draft; these follow
the current protocol, the ``v1`` profile the checker judges by default (SPEC_NOTES.md,
"SignalR"; signalr-real-clients.md). Every message sent is built with the reference codec
(reference_impl/signalr/codec.py).

Both transports reach the checker, and :class:`HubSplitter` cuts both:

- HTTP (``port``): the negotiate ``POST``, then ``GET {hub}?id=..`` with ``Upgrade:
  websocket``, on a connection of its own or on the negotiate's (HTTP/1.1 keeps a connection
  for the next request: signalr-async's aiohttp sends its upgrade there). HTTP messages pass
  untouched, cut whole (head and ``Content-Length`` body) until the upgrade's ``101``; one
  whose end the head does not give (chunked, or a response read until the close) passes on,
  with the rest of the connection, as it comes.
  After the upgrade the units are WebSocket frames (RFC 6455 5.2; server frames unmasked,
  client frames masked: sized, and unmasked only while the scenario reads the client). The
  hub's records are read from the data frames' payloads (a message may hold several records,
  a record may span frames); a rewritten or added record goes out as a WebSocket message of its
  own, text for JSON, binary for MessagePack, as the reference hub and today's servers send
  them (SIGR-HTTP-005). A frame whose records do not begin and end with it passes unchanged.
- raw TCP (``raw_port``): the units are the records themselves: the JSON handshake (ending in
  0x1E) both ways, then JSON records ending in 0x1E or MessagePack records behind a VarInt
  length ("Binary encoding"). Which one only the client's handshake request says ("Overview":
  the negotiation message names the protocol), so the client's side is read first; the server
  answers only after it has passed through.

Scenarios (options in parentheses, with their defaults):

- ``ping``: a Ping (type 6) as soon as the server has answered the handshake, then every
  ``interval`` s (0.3). Ping is today's keep-alive, sent by either side whenever it likes
  (SPEC_NOTES: "6 Ping"; servers send one every 15 s): a client must accept any number,
  between any two messages, and must not take one for an answer.
- ``error-response``: the Completion of the first Invocation the client sends with an id (or
  the first naming ``method``) carries ``error`` ("wirecheck scripted error") instead of its
  result: "Single Result with Error" ("Errors": "Errors are indicated by the presence of the
  error field in a Completion"). The client must surface it as that invocation's error and go
  on; the hub did run the method, so a later call sees its effect. Completions ending a
  StreamInvocation are left alone (an error there is a stream's failure, "Streamed Result
  with Error").
- ``unknown-fields``: every hub message after the handshake carries what the client does not
  know, where the protocol leaves room. JSON: an unknown property ``x-wirecheck-unknown`` (an
  object), which v1 readers ignore for forward compatibility (SIGR-ERR-002: only the draft
  makes an unrecognized field a protocol error; the current protocol grew by optional fields,
  such as Close's ``allowReconnect`` and Invocation's ``streamIds``, that a reader of the older
  shape meets as unknown ones), and an unknown header. MessagePack: fields are positions, not
  names, and no document says that items past a type's own are ignored, so only the headers
  map takes one: an entry ``x-wirecheck-unknown`` in the headers of Invocation, StreamItem,
  Completion, StreamInvocation and CancelInvocation (SPEC_NOTES: "``headers`` on all but
  Ping"; the map's keys are the application's, open-ended). Ping and Close have no headers
  and go unchanged in MessagePack.
- ``max-size``: the first message that carries headers (an Invocation's Completion in the
  usual session) is padded with a header ``x-wirecheck-padding`` to exactly ``size`` bytes
  (32,768) of record body (the JSON text without its 0x1E, or the MessagePack body without its
  VarInt: what ``SignalRLimits.max_frame_size`` counts). The protocol has no negotiated
  maximum: the handshake carries only ``protocol`` and ``version``, and "Binary encoding" sets
  the ceiling at 2 GB. So this is a size, not a limit to honour: 32 KiB is ASP.NET Core's
  default MaximumReceiveMessageSize (``constants.DEFAULT_MAX_RECEIVE``, what the reference hub
  accepts), the size today's deployments are set up around, and the least a client should
  read, since a default server lets it send that much. It needs a 3-byte VarInt and a 16-bit
  WebSocket length; a ``size`` over 65,535 exercises the 64-bit one.
- ``close-message``: after the first Completion (or ``after`` s after the handshake, when
  given), a Close (type 7) carrying ``error`` ("wirecheck scripted close") and, when
  ``allow_reconnect`` is given, ``allowReconnect``; ``linger`` s (0) later, the server ends the
  connection (a WebSocket close 1000, then its FIN), as today's servers do right after a Close
  (SPEC_NOTES: "7 Close"; SIGR-ERR-010: v1 servers send a Close carrying the error first).
  Nothing the broker sends after the Close reaches the client; once the server has ended the
  connection, what the client still sends is recorded and judged but not passed to the broker
  (only its FIN is). The client must surface the error and end the connection: one that never
  closes its side shows as ``hung``; with a ``linger`` the client has that long to end it
  first.

Of the issue's list, these do not apply to SignalR: a heartbeat other than Ping (Ping is the
protocol's only keep-alive); metadata and consumer updates (the hub protocol has no
server-side resources a client subscribes to: "Communication between the Caller and the
Callee" knows only invocations, streams and their completions). A server-to-client Invocation
is an ordinary part of the protocol (SIGR-V1-007) and the reference hub makes them on demand
(CallMe, AskMe), so it needs no scenario.

The scenarios are v1 behaviour: Ping, Close and headers do not exist in the draft. A client
whose handshake has no ``version`` (the draft's), a server that answers no handshake (the
``draft`` profile: its first message is a hub message), and a connection whose handshake fails
get the broker's bytes untouched; the connection's report says "scenario not played" and why.
"""
from __future__ import annotations

import struct
from collections import deque
from dataclasses import replace
from typing import Optional

from wirecheck.conformance.clients.scripted import MAX_HELD_FRAME, FrameShaper, Splitter
from wirecheck.conformance.target.websocket import encode_server_frame, frame_header, unmask
from wirecheck.reference_impl.core import strict_json
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.signalr import codec, json_protocol, msgpack_protocol
from wirecheck.reference_impl.signalr.constants import DEFAULT_MAX_RECEIVE, HUB_PROTOCOLS, JSON, MAX_VARINT_BYTES
from wirecheck.reference_impl.signalr.framing import BINARY, TEXT, RecordReader, frame_binary, frame_text
from wirecheck.reference_impl.signalr.http_transport import SNIFF_LIMIT, sniff
from wirecheck.reference_impl.signalr.messages import Close, Completion, Invocation, Ping

# RFC 6455 5.2 opcodes.
OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE = 0x0, 0x1, 0x2, 0x8
#: RFC 6455 7.4.1: normal closure.
CLOSE_NORMAL = 1000
#: An HTTP head longer than this is not a hub connection's: the rest passes as it comes.
MAX_HEAD = 64 * 1024

# What a cut unit is: an HTTP message, a WebSocket frame, a raw-TCP record.
HTTP, WS, RECORD = "http", "ws", "record"
# A splitter's state: deciding the transport, an HTTP head, WebSocket frames, the raw
# transport's handshake record, its hub records.
_SNIFF, _HEAD, _FRAMES, _HANDSHAKE, _RECORDS = "sniff", "head", "frames", "handshake", "records"

#: Bytes a JSON text may start with (whitespace, then the object).
_JSON_START = (b"{", b" ", b"\t", b"\r", b"\n")

UNKNOWN = "x-wirecheck-unknown"
PADDING = "x-wirecheck-padding"


class _Wire:
    """What both directions of one connection know: the hub protocol the client's handshake
    named, and whether the scenario stands aside (a draft or refused handshake)."""

    def __init__(self, note=None) -> None:
        self.transport: Optional[str] = None      # "http" or "raw"
        self.protocol: Optional[str] = None
        self.passive = False
        self.why = ""
        self._note = note

    def learn(self, record: bytes) -> None:
        """The client's handshake request (its record body)."""
        if self.protocol is not None or self.passive:
            return
        try:
            obj = json_protocol.load_object(record, 0, "handshake request")
        except FrameError as exc:
            self.stand_aside(f"no handshake request ({exc.message})")
            return
        protocol = obj.get("protocol")
        if protocol not in HUB_PROTOCOLS:
            self.stand_aside(f"hub protocol {protocol!r}: the server refuses it")
        elif "version" not in obj:
            self.stand_aside("a handshake without version (the draft): no Ping, Close or headers")
        else:
            self.protocol = protocol

    def stand_aside(self, why: str) -> None:
        if not self.passive:
            self.passive, self.why = True, why
            if self._note is not None:
                self._note(f"scenario not played: {why}")


class HubSplitter(Splitter):
    """One direction of a SignalR connection, either transport, cut into units (see the module
    docstring). ``kinds`` has one entry per unit cut, in order: ``(HTTP,)``, ``(WS, opcode, fin,
    header length, masked)`` or ``(RECORD,)``."""

    def __init__(self, direction: str, wire: _Wire) -> None:
        super().__init__()
        self.direction = direction
        self.wire = wire
        self.mode = _SNIFF
        self.kinds: deque = deque()
        self._scanned = 0                  # bytes already searched (the head's end, a 0x1E)

    def size(self, buf: bytearray) -> Optional[int]:
        if self.mode == _SNIFF:
            kind = sniff(bytes(buf[:SNIFF_LIMIT]))
            if kind is None:
                return None
            self.wire.transport = self.wire.transport or kind
            self.mode = _HEAD if kind == "http" else _HANDSHAKE
        if self.mode == _HEAD:
            return self._head(buf)
        if self.mode == _FRAMES:
            return self._frame(buf)
        return self._record(buf)

    def _cut(self, buf: bytearray, n: int, unit: tuple, mode: Optional[str] = None) -> int:
        """``n``; when ``buf`` holds it whole, it is cut right after this call (Splitter.feed):
        its kind is recorded and the state moves on."""
        if len(buf) >= n:
            self.kinds.append(unit)
            if mode is not None:
                self.mode = mode
        return n

    def _head(self, buf: bytearray) -> Optional[int]:
        end = buf.find(b"\r\n\r\n", max(0, self._scanned - 3))
        if end < 0:
            self._scanned = len(buf)
            if len(buf) > MAX_HEAD:
                raise ValueError("no end of an HTTP head")
            return None
        self._scanned = 0
        lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        upgrade = "websocket" in fields.get("upgrade", "").lower()
        length = fields.get("content-length")
        if "chunked" in fields.get("transfer-encoding", "").lower() or (length is not None and not length.isdigit()):
            raise ValueError("an HTTP message whose end its head does not give: passed on as it comes")
        if self.direction == "s2c":
            parts = lines[0].split(" ")
            if len(parts) >= 2 and parts[1] == "101" and upgrade:
                return self._cut(buf, end + 4, (HTTP,), _FRAMES)
            if length is None and not (len(parts) >= 2 and parts[1] in ("204", "304")):
                raise ValueError("a response read until the connection closes: passed on as it comes")
            # negotiate's answer, or a refused upgrade: the connection may carry another request
            return self._cut(buf, end + 4 + int(length or 0), (HTTP,))
        # a request without Content-Length has no body (RFC 9112 6.3); after an upgrade request
        # the client waits for the 101 before it sends frames
        return self._cut(buf, end + 4 + int(length or 0), (HTTP,), _FRAMES if upgrade else None)

    def _frame(self, buf: bytearray) -> Optional[int]:
        header = frame_header(buf)
        if header is None:
            return None
        fin, opcode, masked, length, at = header
        return self._cut(buf, at + length, (WS, opcode, fin, at, masked))

    def _record(self, buf: bytearray) -> Optional[int]:
        wire = self.wire
        if wire.passive:
            raise ValueError(f"scenario not played: {wire.why}")
        if self.mode == _HANDSHAKE and buf[:1] not in _JSON_START:
            # the handshake is always JSON ("Overview"); a draft server sends none at all
            wire.stand_aside("the connection does not start with a JSON handshake")
            raise ValueError(wire.why)
        if self.mode == _HANDSHAKE or wire.protocol == JSON:
            end = buf.find(b"\x1e", self._scanned)
            if end < 0:
                self._scanned = len(buf)
                if len(buf) > self.limit:
                    raise ValueError("no record separator")
                return None
            self._scanned = 0
            if self.mode == _HANDSHAKE and self.direction == "c2s":
                wire.learn(bytes(buf[:end]))
            return self._cut(buf, end + 1, (RECORD,), _RECORDS)
        if wire.protocol is None:
            raise ValueError("the hub protocol is unknown")
        size = 0
        for i in range(min(len(buf), MAX_VARINT_BYTES)):
            size |= (buf[i] & 0x7F) << (7 * i)
            if not buf[i] & 0x80:
                return self._cut(buf, i + 1 + size, (RECORD,))
        if len(buf) >= MAX_VARINT_BYTES:
            raise ValueError("a VarInt longer than 5 bytes")
        return None


class _Records:
    """The hub records of one direction's bytes (a WebSocket's payloads, or the raw stream's
    records): the JSON handshake record, then the hub protocol's records (the reference
    codec's record cutter)."""

    def __init__(self) -> None:
        self.reader = RecordReader(MAX_HELD_FRAME)
        self.handshake = True

    @property
    def partial(self) -> bool:
        return len(self.reader) > 0

    def feed(self, data: bytes, protocol_after) -> list[tuple[bool, bytes]]:
        """``(is the handshake, body)`` of each record ``data`` completes. ``protocol_after
        (handshake body)`` gives the hub protocol once the handshake is read (None: stop)."""
        self.reader.feed(data)
        out = []
        while (got := self.reader.next_record()) is not None:
            body = got[1]
            out.append((self.handshake, body))
            if self.handshake:
                self.handshake = False
                protocol = protocol_after(body)
                if protocol is None:
                    break
                self.reader.mode = TEXT if protocol == JSON else BINARY
        return out


def framed(body: bytes, protocol: str) -> bytes:
    return frame_text(body) if protocol == JSON else frame_binary(body)


def record_body(message, protocol: str) -> bytes:
    """The record of ``message`` without its framing (reference codec)."""
    if protocol == JSON:
        return json_protocol.encode_message(message)[:-1]
    return msgpack_protocol.encode_body(message)


class _HubShaper(FrameShaper):
    """Knows where the connection is (the transport, the hub protocol, whether the server has
    answered the handshake) and hands subclasses whole hub messages: :meth:`on_server` for
    each server message (what to send instead: framed records), :meth:`on_client` for each
    client message while ``reads_client``, :meth:`on_open` once the handshake is answered.
    :meth:`inject` sends a message of the scenario's own at the next record boundary."""

    #: Read the client's messages after the handshake (unmasking its frames).
    reads_client = False

    def __init__(self, relay, options: dict) -> None:
        self.wire = _Wire(self.note)          # before the splitters, which share it
        super().__init__(relay, options)
        self.s2c, self.c2s = _Records(), _Records()
        self.open = False
        self.fragmented = False          # inside a fragmented server data message
        self.queued: list[bytes] = []    # records waiting for a boundary
        self.closing = False             # the scenario sent a Close: the broker's hub data stops
        self.server_closed_ws = False    # a WebSocket close frame went to the client
        self.cut = False                 # the scenario ended the connection

    def make_splitter(self, direction: str) -> HubSplitter:
        return HubSplitter(direction, self.wire)

    @property
    def protocol(self) -> Optional[str]:
        return self.wire.protocol

    # -- the client's side ---------------------------------------------------------------------

    def client_frame(self, frame: bytes) -> None:
        unit = self.up.kinds.popleft()
        if not self.wire.passive and (self.c2s.handshake or self.reads_client):
            payload = self._payload(frame, unit)
            if payload is not None:
                self._client_records(payload)
        self.pass_on(frame)

    def _client_records(self, payload: bytes) -> None:
        def learned(body: bytes) -> Optional[str]:
            self.wire.learn(body)
            return self.protocol
        try:
            records = self.c2s.feed(payload, learned)
        except FrameError as exc:
            self.reads_client = False        # the broker judges it; the scenario reads no more
            if self.c2s.handshake or self.protocol is None:
                self.wire.stand_aside(f"the client's handshake did not decode ({exc.message})")
            return
        for handshake, body in records:
            if handshake or self.protocol is None:
                continue
            try:
                message = codec.parse_record(body, self.protocol)
            except FrameError:
                continue                     # the observer reports it; nothing to learn
            self.on_client(message)

    # -- the server's side ---------------------------------------------------------------------

    def server_frame(self, frame: bytes) -> None:
        unit = self.down.kinds.popleft()
        if unit[0] == WS and unit[1] == OP_CLOSE:
            self.server_closed_ws = True
        payload = None if self.wire.passive else self._payload(frame, unit)
        if payload is None:
            self.send(frame)                 # HTTP heads, control frames, a passive connection
            return
        if self.closing:
            return                           # after its Close the server sends no hub message
        aligned = not self.s2c.partial and (unit[0] == RECORD or (unit[1] != OP_CONTINUATION and unit[2]))
        if unit[0] == WS:
            self.fragmented = not unit[2]
        try:
            records = self.s2c.feed(payload, self._answered)
        except FrameError as exc:
            self.wire.stand_aside(f"the server's records did not decode ({exc.message})")
            self.send(frame)
            return
        aligned = aligned and not self.s2c.partial
        out: list[tuple[bytes, int]] = []     # (framed record, WebSocket opcode)
        changed = opened = False
        for handshake, body in records:
            if handshake:
                out.append((frame_text(body), OP_TEXT))
                opened = self.open
                continue
            if self.closing:
                changed = True               # after the scenario's Close: dropped
                continue
            original = framed(body, self.protocol)
            replies = [original]
            if aligned:
                try:
                    message = codec.parse_record(body, self.protocol)
                except FrameError:
                    message = None           # the observer reports it; passed on as it is
                if message is not None:
                    replies = self.on_server(message, original)
            changed = changed or replies != [original]
            out += [(r, self._opcode()) for r in replies]
        if changed:
            for record, opcode in out:
                self._emit(record, opcode)
        else:
            self.send(frame)
        if opened:
            self.on_open()
        self._flush()

    def _answered(self, body: bytes) -> Optional[str]:
        """The server's handshake response: the hub protocol from here on (None: the
        scenario stands aside)."""
        try:
            obj = json_protocol.load_object(body, 0, "handshake response")
            response = json_protocol.parse_handshake_response(body, obj=obj)
        except FrameError as exc:
            self.wire.stand_aside(f"the handshake response did not decode ({exc.message})")
            return None
        if "type" in obj:
            # a hub message where the answer belongs: a draft server answers nothing
            self.wire.stand_aside("the server sent no handshake response (the draft)")
            return None
        if response.error is not None:
            self.wire.stand_aside(f"the server refused the handshake: {response.error}")
            return None
        if self.protocol is None:
            self.wire.stand_aside("no handshake request was read")
            return None
        self.open = True
        return self.protocol

    def _payload(self, frame: bytes, unit: tuple) -> Optional[bytes]:
        """The hub bytes of a unit: a raw record, or a WebSocket data frame's payload."""
        if unit[0] == RECORD:
            return frame
        if unit[0] != WS or unit[1] not in (OP_CONTINUATION, OP_TEXT, OP_BINARY):
            return None
        at, masked = unit[3], unit[4]
        return unmask(frame[at:], frame[at - 4:at]) if masked else frame[at:]

    def _opcode(self) -> int:
        return OP_TEXT if self.protocol == JSON else OP_BINARY

    def _emit(self, record: bytes, opcode: Optional[int] = None) -> None:
        if self.wire.transport == "http":
            self.send(encode_server_frame(self._opcode() if opcode is None else opcode, record))
        else:
            self.send(record)

    def _flush(self) -> None:
        if self.queued and self.open and not self.fragmented and not self.s2c.partial:
            queued, self.queued = self.queued, []
            for record in queued:
                self._emit(record)

    def inject(self, message) -> None:
        """``message`` to the client between two of the server's records."""
        if self.wire.passive or self.closing:
            return
        self.queued.append(codec.encode(message, self.protocol))
        self._flush()

    def end(self) -> None:
        """End the connection from the server's side: a WebSocket close (1000), then a FIN."""
        if self.ended or self.relay.finished:
            return
        if self.wire.transport == "http" and not self.server_closed_ws:
            self.server_closed_ws = True
            self.send(encode_server_frame(OP_CLOSE, struct.pack("!H", CLOSE_NORMAL)))
        self.note("the server ends the connection")
        self.cut = self.ended = True
        self.cancel()
        self.relay.server_close()      # recorded even when the client's socket is already gone

    def pass_on(self, frame: bytes) -> None:
        if self.cut:
            # the server has ended the connection: what the client still sends (its WebSocket
            # close, say) is recorded and judged, but the broker, which never ended it, must not
            # answer it (nor reset on it): only the client's FIN goes on, to end the broker's side
            self.hold(frame)
        else:
            super().pass_on(frame)

    def eof(self) -> None:
        if self.cut:                         # the client already had the server's FIN
            self.cancel()
            return
        super().eof()

    # -- what scenarios change -----------------------------------------------------------------

    def on_server(self, message, record: bytes) -> list[bytes]:
        return [record]

    def on_client(self, message) -> None:
        pass

    def on_open(self) -> None:
        pass


class PingScenario(_HubShaper):
    name = "ping"
    client_outcome = "success"
    summary = "a Ping (type 6) once the handshake is answered, then every 0.3 s"

    def on_open(self) -> None:
        interval = float(self.options.get("interval", 0.3))
        self.every(interval, self._ping, first=0.0)

    def _ping(self) -> None:
        self.note("Ping")
        self.inject(Ping())


class ErrorResponse(_HubShaper):
    name = "error-response"
    client_outcome = "error"
    summary = "the first Invocation's Completion carries an error instead of its result"
    reads_client = True

    #: Invocations remembered while their Completion is due (a bound: memory).
    MAX_CALLS = 10_000

    def __init__(self, relay, options: dict) -> None:
        super().__init__(relay, options)
        self.calls: dict[str, str] = {}        # invocation id -> target, for Invocations only

    def on_client(self, message) -> None:
        if isinstance(message, Invocation) and message.invocation_id is not None:
            wanted = self.options.get("method")
            if (wanted is None or message.target == wanted) and len(self.calls) < self.MAX_CALLS:
                self.calls[message.invocation_id] = message.target

    def on_server(self, message, record: bytes) -> list[bytes]:
        if not isinstance(message, Completion):
            return [record]
        target = self.calls.pop(message.invocation_id, None)
        if target is None or message.error is not None:
            return [record]
        error = str(self.options.get("error", "wirecheck scripted error"))
        self.note(f"Completion of {target} ({message.invocation_id!r}) with an error")
        self.reads_client = False              # done: the client's frames need no unmasking
        self.calls.clear()
        return [codec.encode(Completion.with_error(message.invocation_id, error, message.headers),
                             self.protocol)]


class UnknownFields(_HubShaper):
    name = "unknown-fields"
    client_outcome = "success"
    summary = "every hub message carries a header (and, in JSON, a property) no client knows"

    def on_server(self, message, record: bytes) -> list[bytes]:
        if hasattr(message, "headers"):
            message = replace(message, headers={**(message.headers or {}), UNKNOWN: "ignore me"})
        elif self.protocol != JSON:
            return [record]                    # MessagePack Ping/Close: no room
        if self.protocol == JSON:
            obj = json_protocol.to_object(message)
            obj[UNKNOWN] = {"nested": [1, None, "ignore me"]}
            out = frame_text(strict_json.dumps(obj).encode("utf-8"))
        else:
            out = codec.encode(message, self.protocol)
        if not self.log:
            self.note(f"unknown fields in every hub message (the first: {type(message).__name__})")
        return [out]


class MaxSize(_HubShaper):
    name = "max-size"
    client_outcome = "success"
    summary = "the first message with headers padded to 32 KiB of record body"

    def on_server(self, message, record: bytes) -> list[bytes]:
        if self.log or not hasattr(message, "headers"):
            return [record]
        size = int(self.options.get("size", DEFAULT_MAX_RECEIVE))
        body = padded(message, self.protocol, size)
        if body is None:
            self.note(f"{type(message).__name__} already over {size} bytes: not padded", acted=False)
            return [record]
        self.note(f"{type(message).__name__} padded to {size} bytes")
        return [framed(body, self.protocol)]


class CloseMessage(_HubShaper):
    name = "close-message"
    client_outcome = "either"
    summary = "a Close (type 7) with an error after the first Completion, then the end"

    def on_open(self) -> None:
        after = self.options.get("after")
        if after is not None:
            self.later(float(after), lambda: self._close([]))

    def on_server(self, message, record: bytes) -> list[bytes]:
        if self.options.get("after") is None and isinstance(message, Completion) and not self.log:
            out = [record]
            self._close(out)
            return out
        return [record]

    def _close(self, out: list) -> None:
        """The Close: appended to ``out`` (the records going out now), or injected."""
        allow = self.options.get("allow_reconnect")
        message = Close(str(self.options.get("error", "wirecheck scripted close")),
                        None if allow is None else bool(allow))
        self.note(f"Close (error {message.error!r}"
                  + ("" if allow is None else f", allowReconnect {message.allow_reconnect}") + ")")
        if out:
            out.append(codec.encode(message, self.protocol))
        else:
            self.inject(message)
        self.closing = True
        self.later(float(self.options.get("linger", 0.0)), self.end)


def padded(message, protocol: str, size: int) -> Optional[bytes]:
    """The record body of ``message`` with a header making it exactly ``size`` bytes, or None
    when it is larger already. The header's value is ``x``s; the key's length takes up what the
    value's own length prefix leaves over (MessagePack's str8/16/32 headers differ in size)."""
    headers = dict(message.headers or {})

    def body(key: str, n: int) -> bytes:
        return record_body(replace(message, headers={**headers, key: "x" * n}), protocol)
    n = size - len(body(PADDING, 0))
    if n < 0:
        return None
    got = body(PADDING, n)
    while len(got) > size and n > 0:
        n = max(0, n - (len(got) - size))
        got = body(PADDING, n)
    short = size - len(got)
    if short:
        # a longer key (MessagePack fixstr up to 31 bytes: one header byte whatever its length)
        got = body(PADDING + "-" * short, n)
    return got if len(got) == size else None


SCENARIOS = {cls.name: cls for cls in (PingScenario, ErrorResponse, UnknownFields, MaxSize, CloseMessage)}
