"""RabbitMQ Stream: the server-initiated frames and answers a client must cope with
(conformance/clients/scripted). Frames are the document's: a 4-byte size, then key, version and body
("Frame structure"), cut with :class:`StreamSplitter` and built with the reference codec.

- ``heartbeat``: a Heartbeat every ``interval`` s (default 0.3) once the connection is open. The
  document lets either peer send one at any time ("Heartbeat"); a client must accept them
  whatever it negotiated, and must not take them for answers.
- ``metadata-update``: after the first publisher or subscription the broker accepts, a
  MetadataUpdate (code ``code``, default 6, stream not available) for its stream, as a server
  sends when a stream it uses goes away (RMQS-META-007/-008).
- ``consumer-update``: for a single-active-consumer subscription (Subscribe properties
  ``single-active-consumer=true``, ``name``) that the broker made active (its own
  ConsumerUpdate, answered): ``after`` s later (default 0.3) a ConsumerUpdate that deactivates
  it, and once that is answered, another that activates it again, as a server does when the
  group's activity moves (SPEC_NOTES.md, command 26). The client must answer each
  ("Expects response? Yes", RMQS-NEW-010); its answers are recorded and judged, and held back
  from the broker, which never asked. While the subscription is inactive its Delivers are held
  (an inactive consumer gets nothing, RMQS-NEW-008) and sent after the reactivation. The broker
  is not told: deliveries go on from where it was, not from the answer's offset. A client that
  never subscribes that way sees nothing of this scenario.
- ``error-response``: the first answer to a valid request after Open (or the first to the
  command named by ``command``, e.g. ``DECLARE_PUBLISHER``) carries response code ``code``
  (default 16, access refused) instead of OK: only an answer the document lets carry that code
  (:func:`may_fail_with`; ExchangeCommandVersions, for one, is always OK).
- ``unknown-fields``: the PeerProperties and Open answers carry server properties no client
  knows ("x-wirecheck-*"); property maps are open-ended, so a client must ignore them.
- ``server-close``: ``after`` s (default 0.5) after Open, the server closes the connection the
  protocol's way: a Close (code ``code``, default 1, reason "server shutting down"). The client
  must answer it with a CloseResponse (RMQS-CLOSE-003; held back from the broker), and then the
  server ends the TCP connection (FIN), as it does after any Close it sent ("Close"). Whatever
  the broker writes after the Close is dropped: a closing server sends nothing more. Without an
  answer within ``wait`` s (default 2: past the observer's 1 s for RMQS-CLOSE-003, and within a
  short ``--duration``) the FIN comes anyway.
- ``max-size``: the Open answer is padded (a long property) to exactly the frame_max the two
  sides agreed in Tune (or ``size``), the largest frame the client said it accepts.
"""
from __future__ import annotations

import struct

from wirecheck.conformance.clients.scripted import FrameShaper, LengthPrefixed
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.constants import DEFAULT_FRAME_MAX, RESPONSE_BIT, Code, Key

_SIZE = struct.Struct(">I")
_HEAD = struct.Struct(">IHH")
#: Correlation ids of the ConsumerUpdates this module sends: far above a broker's own counter.
INJECTED_CORRELATION = 0xFFFF0000
class StreamSplitter(LengthPrefixed):
    header = 4

    def total(self, header: bytes) -> int:
        return 4 + _SIZE.unpack(header)[0]


def parse(frame: bytes, origin: str):
    """The typed frame of one whole frame's bytes, or None when the codec does not know it."""
    if len(frame) < 8:
        return None
    _, key, version = _HEAD.unpack_from(frame)
    try:
        return codec.parse_frame(codec.RawFrame(key, version, frame[8:], 0), origin=origin)
    except FrameError:
        return None


class _StreamShaper(FrameShaper):
    """Knows where the connection is: open or not, the agreed frame_max, and which client
    request each correlation id belongs to."""

    def __init__(self, relay, options: dict) -> None:
        super().__init__(relay, options)
        self.opened = False
        self.frame_max = 0
        self.requests: dict[int, object] = {}       # correlation id -> the client's request

    def make_splitter(self, direction: str) -> StreamSplitter:
        return StreamSplitter()

    def client_frame(self, frame: bytes) -> None:
        parsed = parse(frame, "client")
        if isinstance(parsed, codec.TuneResponse):
            self.frame_max = parsed.frame_max          # what the client agreed to ("Tune")
        if parsed is not None and hasattr(parsed, "correlation_id") and not parsed.response:
            self.requests[parsed.correlation_id] = parsed
        self.pass_on(frame)

    def server_frame(self, frame: bytes) -> None:
        parsed = parse(frame, "server")
        request = None
        if parsed is not None and parsed.response and hasattr(parsed, "correlation_id"):
            request = self.requests.pop(parsed.correlation_id, None)
        self.on_server(frame, parsed, request)
        if isinstance(parsed, codec.OpenResponse) and parsed.code == Code.OK:
            self.opened = True
            self.on_open()

    def on_server(self, frame: bytes, parsed, request) -> None:
        self.send(frame)

    def on_open(self) -> None:
        pass

    def accepted(self, parsed, request) -> str | None:
        """The stream of a publisher or subscription the broker just accepted, else None."""
        if (isinstance(request, (codec.DeclarePublisher, codec.Subscribe))
                and getattr(parsed, "code", None) == Code.OK):
            return request.stream
        return None


class Heartbeat(_StreamShaper):
    name = "heartbeat"
    client_outcome = "success"
    summary = "a Heartbeat every 0.3 s once the connection is open"

    def on_open(self) -> None:
        self.every(float(self.options.get("interval", 0.3)), self._beat, first=0.0)

    def _beat(self) -> None:
        self.note("Heartbeat")
        self.send(codec.encode(codec.Heartbeat()))


class MetadataUpdate(_StreamShaper):
    name = "metadata-update"
    client_outcome = "either"
    summary = "a MetadataUpdate (stream not available) for the first stream the client uses"

    def on_server(self, frame: bytes, parsed, request) -> None:
        self.send(frame)
        stream = self.accepted(parsed, request)
        if stream is not None and not self.log:
            code = int(self.options.get("code", Code.STREAM_NOT_AVAILABLE))
            self.note(f"MetadataUpdate {stream!r} code {code}")
            self.send(codec.encode(codec.MetadataUpdate(code, stream)))


class ConsumerUpdate(_StreamShaper):
    name = "consumer-update"
    client_outcome = "success"
    summary = ("a single-active consumer deactivated, then activated again, by ConsumerUpdate; "
               "the client must answer each")

    def __init__(self, relay, options: dict) -> None:
        super().__init__(relay, options)
        self.sac: set[int] = set()                 # single-active-consumer subscription ids
        self.broker_updates: dict[int, int] = {}   # the broker's ConsumerUpdates: corr -> sub
        self.asked: dict[int, tuple[int, int]] = {}  # ours: correlation -> (sub, active)
        self.inactive: dict[int, list[bytes]] = {}   # deactivated sub -> its Delivers held
        self.answered = 0

    def client_frame(self, frame: bytes) -> None:
        parsed = parse(frame, "client")
        if isinstance(parsed, codec.Subscribe) and (parsed.properties or {}).get("single-active-consumer") == "true":
            self.sac.add(parsed.subscription_id)
        if isinstance(parsed, codec.ConsumerUpdateResponse):
            if parsed.correlation_id in self.asked:
                self.hold(frame)                   # the broker never asked
                self.answered += 1
                sub, active = self.asked.pop(parsed.correlation_id)
                self.note(f"ConsumerUpdateResponse (active={active}) held back", acted=False)
                if active:
                    self._release(sub)
                else:
                    self.later(float(self.options.get("after", 0.3)), lambda: self._update(sub, 1))
                return
            sub = self.broker_updates.pop(parsed.correlation_id, None)
            if sub is not None and not self.asked and not self.log:
                # the broker made it the active one and the client answered: now the server
                # moves the group's activity away from it, and later back
                self.later(float(self.options.get("after", 0.3)), lambda: self._update(sub, 0))
        super().client_frame(frame)

    def on_server(self, frame: bytes, parsed, request) -> None:
        if isinstance(parsed, codec.ConsumerUpdate) and parsed.subscription_id in self.sac:
            self.broker_updates[parsed.correlation_id] = parsed.subscription_id
        if isinstance(parsed, codec.Deliver) and parsed.subscription_id in self.inactive:
            # an inactive consumer gets nothing until promoted (RMQS-NEW-008): kept for later
            self.inactive[parsed.subscription_id].append(frame)
            return
        self.send(frame)

    def _update(self, sub: int, active: int) -> None:
        correlation = INJECTED_CORRELATION + len(self.log)
        self.asked[correlation] = (sub, active)
        if not active:
            self.inactive.setdefault(sub, [])
        self.note(f"ConsumerUpdate subscription {sub} active={active}")
        self.send(codec.encode(codec.ConsumerUpdate(correlation, sub, active)))

    def _release(self, sub: int) -> None:
        for frame in self.inactive.pop(sub, []):
            self.send(frame)


def may_fail_with(key: int, code: int) -> bool:
    """Whether the document lets the answer to a request ``key`` carry ``code``: not a request
    always answered OK (``MUST_CODE``: PeerProperties, SaslHandshake, Close,
    ExchangeCommandVersions), and within the code's scope where the "Response Codes" table ties
    it to some commands (``CODE_SCOPE``). The observer holds the server to the same tables, so a
    rewritten answer outside them would be the kit's own breach (a HARNESS-ERROR)."""
    from wirecheck.reference_impl.rabbitmq_stream.observer import CODE_SCOPE, MUST_CODE
    if key in MUST_CODE or code == Code.OK:
        return False
    scope = CODE_SCOPE.get(code)
    return scope is None or key in scope


class ErrorResponse(_StreamShaper):
    name = "error-response"
    client_outcome = "error"
    summary = ("the first answer after Open that the document lets fail with the code (option code, "
               "default 16; option command: which request) carries it")

    def __init__(self, relay, options: dict) -> None:
        super().__init__(relay, options)
        self.code = int(options.get("code", Code.ACCESS_REFUSED))
        wanted = options.get("command")
        try:
            self.wanted = Key[str(wanted).upper()] if wanted is not None else None
        except KeyError:
            raise ValueError(f"unknown command {wanted!r}") from None
        if self.wanted is not None and not may_fail_with(self.wanted, self.code):
            raise ValueError(f"the document does not let {Key(self.wanted).name} answer with code {self.code}")
        #: Subscriptions whose Subscribe the scenario refused: the broker behind it accepted them
        #: and delivers to them; the client must not see that (a Deliver for a subscription it
        #: was refused would be the kit's own breach of RMQS-CREDIT-001).
        self.refused: set[int] = set()

    #: Codes that say the request's end state holds already ("stream already exists" for a
    #: Create): a library may take them as success, so the client may do either.
    IDEMPOTENT_CODES = frozenset({Code.STREAM_ALREADY_EXISTS})

    @classmethod
    def expected_outcome(cls, options: dict) -> str:
        return "either" if int(options.get("code", Code.ACCESS_REFUSED)) in cls.IDEMPOTENT_CODES else cls.client_outcome

    def on_server(self, frame: bytes, parsed, request) -> None:
        wanted = self.wanted
        if isinstance(parsed, codec.Deliver) and parsed.subscription_id in self.refused:
            self.note(f"Deliver to refused subscription {parsed.subscription_id} dropped", acted=False)
            return
        if (self.opened and not self.rewritten and request is not None
                and getattr(parsed, "code", None) == Code.OK and _code_second(parsed)
                and (wanted is None or wanted == request.key) and may_fail_with(request.key, self.code)):
            code = self.code
            # the code field follows the correlation id in every such answer ("Response codes")
            frame = frame[:12] + struct.pack(">H", code) + frame[14:]
            self.note(f"{codec.key_name(parsed.wire_key)} code {code}")
            if isinstance(request, codec.Subscribe):
                self.refused.add(request.subscription_id)
        self.send(frame)

    @property
    def rewritten(self) -> bool:
        return any(" code " in what for _, what in self.log)


class UnknownFields(_StreamShaper):
    name = "unknown-fields"
    client_outcome = "success"
    summary = "server properties no client knows in the PeerProperties and Open answers"

    def on_server(self, frame: bytes, parsed, request) -> None:
        if isinstance(parsed, (codec.PeerPropertiesResponse, codec.OpenResponse)) and parsed.code == Code.OK:
            extra = {"x-wirecheck-unknown": "ignore me", "x-wirecheck-empty": ""}
            parsed = _with_properties(parsed, {**parsed.properties, **extra})
            self.note(f"{type(parsed).__name__} with unknown properties")
            frame = codec.encode(parsed)
        self.send(frame)


class MaxSize(_StreamShaper):
    name = "max-size"
    client_outcome = "success"
    summary = "the Open answer padded to exactly the agreed frame_max"

    def on_server(self, frame: bytes, parsed, request) -> None:
        if isinstance(parsed, codec.OpenResponse) and parsed.code == Code.OK:
            limit = int(self.options.get("size", 0)) or self.frame_max or DEFAULT_FRAME_MAX
            padded = _padded_to(parsed, limit)
            if padded is not None:
                frame = padded
                self.note(f"OpenResponse of {len(frame) - 4} bytes (frame_max {limit})")
        self.send(frame)


def _code_second(frame) -> bool:
    """The answer's layout is correlation id then response code (most answers; Metadata's
    has none, Close's is the connection's end)."""
    return frame.key != Key.CLOSE and type(frame).FIELDS[:2] == (codec.CORR, codec.CODE)


def _with_properties(frame, properties: dict):
    return type(frame)(frame.correlation_id, frame.code, properties, frame.version)


#: A property value is a 16-bit-length string ("string => int16 size, then bytes").
_PAD_PIECE = 30000


def _padded_to(frame, limit: int) -> bytes | None:
    """``frame`` with ``x-wirecheck-padding-N`` properties making its Size field exactly
    ``limit``, or None if there is not room for one."""
    props = dict(frame.properties)
    size = len(codec.encode(_with_properties(frame, props))) - 4 + (0 if props else 4)  # + count
    n = 0
    while True:
        key = f"x-wirecheck-padding-{n}"
        room = limit - size - (4 + len(key))             # two 16-bit lengths and the key
        if room < 0:
            return None
        if room <= _PAD_PIECE + 64:
            props[key] = "x" * room
            break
        props[key] = "x" * _PAD_PIECE
        size += 4 + len(key) + _PAD_PIECE
        n += 1
    out = codec.encode(_with_properties(frame, props))
    assert len(out) - 4 == limit, (len(out), limit)
    return out


class ServerClose(_StreamShaper):
    name = "server-close"
    client_outcome = "either"
    summary = ("a Close from the server 0.5 s after Open (or right after its Nth answer after "
               "Open: option answers); the client must answer, then the FIN")

    def __init__(self, relay, options: dict) -> None:
        super().__init__(relay, options)
        self.closing: int | None = None          # the Close's correlation id, once sent
        #: the Close follows the server's Nth answer after Open (a point in the conversation,
        #: whatever its pace) instead of a time
        self.answers = int(options.get("answers", 0))
        if self.answers < 0:
            raise ValueError("answers must be at least 1")
        self.answered = 0

    def on_open(self) -> None:
        if not self.answers:
            self.later(float(self.options.get("after", 0.5)), self._close)

    def _close(self) -> None:
        self.closing = INJECTED_CORRELATION
        code = int(self.options.get("code", Code.OK))
        self.note(f"Close code {code}")
        self.send(codec.encode(codec.Close(self.closing, code, "server shutting down")))
        self.later(float(self.options.get("wait", 2.0)), self._end)

    def on_server(self, frame: bytes, parsed, request) -> None:
        if self.closing is None:
            self.send(frame)                     # after its Close the server sends nothing more
            if self.answers and self.opened and request is not None:
                self.answered += 1
                if self.answered >= self.answers:
                    self._close()

    def client_frame(self, frame: bytes) -> None:
        if self.closing is not None and len(frame) >= 12:
            _, key, _ = _HEAD.unpack_from(frame)
            if key == Key.CLOSE | RESPONSE_BIT and _SIZE.unpack_from(frame, 8)[0] == self.closing:
                self.note("CloseResponse held back", acted=False)
                self.hold(frame)
                self._end()
                return
        super().client_frame(frame)

    def _end(self) -> None:
        if not self.ended and not self.relay.finished:
            self.ended = True
            self.cancel()
            self.relay.server_close()


SCENARIOS = {cls.name: cls for cls in (Heartbeat, MetadataUpdate, ConsumerUpdate, ErrorResponse,
                                       UnknownFields, MaxSize, ServerClose)}
