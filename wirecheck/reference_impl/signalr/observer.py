"""The SignalR observer (signalr-hub-protocol.md, an early draft; today's protocol from
SPEC_NOTES.md, "SignalR"): both sides of a recorded conversation, over HTTP + WebSocket (as real
clients connect: reference_impl/signalr/http_transport.py) or raw TCP, checked sans-IO.

What it checks, with the catalogue's IDs (conformance/requirements/signalr.py):

- **framing**: a hub message that does not decode is the sender's breach, by category
  (:data:`HUB_FRAMING`): a missing field SIGR-ERR-001, an unknown one SIGR-ERR-002 (the draft
  only: v1 decoders ignore them), result and error together SIGR-ERR-006, bad JSON/MessagePack
  or wrong field types SIGR-ERR-011, a VarInt too wide SIGR-FRAME-003; an unknown message type
  only in the draft (v1: forward compatibility, SIGR-V1-004). HTTP and WebSocket errors (RFC
  9112/6455) have no catalogue ID and are not reported.
- **handshake** ("Overview"; SPEC_NOTES): the client's first hub message is the negotiation
  message (SIGR-HS-001); the server answers only after it (SIGR-HS-004), refuses a client whose
  first message was not one (SIGR-HS-003), answers v1 failures with ``{"error"}`` and then
  closes (SIGR-HS-005).
- **invocations** ("Completion and results", "Errors"): the rules of :mod:`.rules` run in two
  :class:`~.rules.InvocationBook`\\ s, one per endpoint: responses for ids never invoked
  (server: SIGR-INV-001; client: SIGR-ERR-003), for non-blocking calls (SIGR-INV-007 /
  SIGR-ERR-004), after the Completion (SIGR-ERR-009), StreamItems for a single result
  (SIGR-INV-003), a Completion with a result ending a stream (SIGR-STR-002 v1, SIGR-ERR-005
  draft), a reused invocation id (SIGR-ERR-007: any reuse in the draft, an id still in use in
  v1). Client-to-server streams (v1 ``streamIds``) are the client's own ids, not responses.
- **protocol-error close** (v1): a server that closes after a client's malformed message sends
  a Close message first (SIGR-V1-005, SHOULD).
- **negotiate** (SPEC_NOTES, "Transport used by real clients"): a 200 answer to ``POST
  .../negotiate`` carries ``connectionToken``, ``connectionId``, ``negotiateVersion`` and
  ``availableTransports`` offering WebSockets for version 1 (SIGR-HTTP-001), a
  ``connectionId`` for version 0 (SIGR-HTTP-002).

Exchanges: each HTTP request with its response (in order, HTTP/1.1), the handshake request with
its response, and each invocation with an id with its *first* response (a stream's first item,
or the Completion): kind is the request's type name.

Not checked: what a method returns (the hub's business), timers (SIGR-HS-007, SIGR-V1-008/-009:
a capture's gaps say nothing certain), a server's tolerance of what v1 servers ignore, the
message type of each WebSocket frame (SIGR-HTTP-005: the transport decoder does not pass it on),
whether a server supports a protocol or version (SIGR-HS-002/-006: ASP.NET Core also speaks
``blazorpack``), and anything sent after a hub Close or a CancelInvocation (no rule forbids it).
"""
from __future__ import annotations

import json
from typing import Optional
from urllib.parse import parse_qs, urlsplit

from ..core.errors import Category
from ..core.observer import C2S, S2C, Exchange, Observer
from .constants import JSON
from .http_transport import HttpRequest, HttpResponse, WebSocketClose, header_values
from .messages import (CancelInvocation, Close, Completion, HandshakeRequest, HandshakeResponse,
                       Invocation, StreamCompletion, StreamInvocation, StreamItem)
from .rules import HubProtocolError, InvocationBook, Violation

#: Hub decode errors after the handshake, by category ("Errors"; "Binary encoding").
HUB_FRAMING = {
    Category.MISSING_FIELD: "SIGR-ERR-001",
    Category.UNKNOWN_FIELD: "SIGR-ERR-002",
    Category.CONFLICTING_FIELDS: "SIGR-ERR-006",
    Category.BAD_VALUE: "SIGR-ERR-011",
    Category.BAD_ENCODING: "SIGR-ERR-011",
    Category.UNKNOWN_TYPE: "SIGR-ERR-011",
    Category.LENGTH_TOO_LARGE: "SIGR-FRAME-003",
    Category.LENGTH_TOO_SMALL: "SIGR-MSGPACK-001",
    Category.TRAILING_BYTES: "SIGR-MSGPACK-001",
}
#: A record cut short by its sender's close, by hub protocol.
TRUNCATED_FRAMING = {JSON: "SIGR-JSON-002"}
TRUNCATED_DEFAULT = "SIGR-MSGPACK-001"
#: v1 tolerates these (SPEC_NOTES; SIGR-V1-004): not breaches in that profile.
V1_TOLERATED = frozenset({Category.UNKNOWN_TYPE, Category.UNKNOWN_FIELD})

#: The invocation rules' breaches by the side that broke them (rules.Violation -> ID).
BOOK_RULES = {
    S2C: {Violation.UNKNOWN_INVOCATION_ID: "SIGR-INV-001",
          Violation.RESPONSE_TO_NONBLOCKING: "SIGR-INV-007",
          Violation.AFTER_COMPLETION: "SIGR-ERR-009",
          Violation.STREAM_ITEM_FOR_SINGLE_RESULT: "SIGR-INV-003",
          Violation.COMPLETION_AFTER_STREAM_ITEM: "SIGR-STR-002",
          Violation.DUPLICATE_INVOCATION_ID: "SIGR-ERR-007"},
    C2S: {Violation.UNKNOWN_INVOCATION_ID: "SIGR-ERR-003",
          Violation.RESPONSE_TO_NONBLOCKING: "SIGR-ERR-004",
          Violation.AFTER_COMPLETION: "SIGR-ERR-009",
          Violation.STREAM_ITEM_FOR_SINGLE_RESULT: "SIGR-INV-003",
          Violation.COMPLETION_AFTER_STREAM_ITEM: "SIGR-ERR-005",
          Violation.DUPLICATE_INVOCATION_ID: "SIGR-ERR-007"},
}
#: The draft's own rule for a Completion after items ("Errors").
DRAFT_BOOK_RULES = {Violation.COMPLETION_AFTER_STREAM_ITEM: "SIGR-ERR-005"}

#: What a negotiate answer holds (SPEC_NOTES), by negotiateVersion.
NEGOTIATE_FIELDS = {1: ("connectionToken", "connectionId", "negotiateVersion", "availableTransports"),
                    0: ("connectionId",)}
NEGOTIATE_RULES = {1: "SIGR-HTTP-001", 0: "SIGR-HTTP-002"}

# Phases of a direction's hub stream.
HANDSHAKE, OPEN, FAILED = "handshake", "open", "failed"


#: Decode rules of a client's hub message after the handshake (:data:`HUB_FRAMING`,
#: :data:`TRUNCATED_FRAMING`, :data:`TRUNCATED_DEFAULT`), as the profile ``v1`` applies them:
#: SIGR-ERR-002 is the draft's alone (v1 tolerates unknown fields, :data:`V1_TOLERATED`), so a
#: v1 run that listed it would pass a rule it never judged.
_CLIENT_HUB_FRAMING = ("SIGR-ERR-001", "SIGR-ERR-006", "SIGR-ERR-011", "SIGR-FRAME-003",
                       "SIGR-MSGPACK-001", "SIGR-JSON-002")


class SignalRObserver(Observer):
    #: What this observer judges on the client's frames, by type (the message or transport
    #: class's name, as ``http_transport.frame_to_dict`` gives it; conformance/clients/serve_check.py,
    #: ``exercised_requirements``). Derived from the C2S checks of this module and of the
    #: invocation rules it runs (rules.py, through :data:`BOOK_RULES` ``[C2S]``): the
    #: handshake's decode rule (SIGR-HS-001, :meth:`_framing_requirement`), the hub decode
    #: rules (:data:`_CLIENT_HUB_FRAMING`) for each hub message, an invocation id the client
    #: reuses (SIGR-ERR-007, :meth:`_invocation`), the client's responses to the server's
    #: invocations (:meth:`_response`: SIGR-ERR-003/-004/-005/-009, SIGR-INV-003, and
    #: SIGR-STR-002, which only v1 judges) and the items of a client stream after its
    #: Completion (SIGR-ERR-009, :meth:`_upload`). HTTP and WebSocket frames break no rule of
    #: the catalogue. A rule is listed under a type when a message of that type may break it.
    client_rules = {
        "HandshakeRequest": ("SIGR-HS-001",),
        "Invocation": _CLIENT_HUB_FRAMING + ("SIGR-ERR-007",),
        "StreamInvocation": _CLIENT_HUB_FRAMING + ("SIGR-ERR-007",),
        "StreamItem": _CLIENT_HUB_FRAMING + ("SIGR-ERR-003", "SIGR-ERR-004", "SIGR-ERR-009",
                                             "SIGR-INV-003"),
        "Completion": _CLIENT_HUB_FRAMING + ("SIGR-ERR-003", "SIGR-ERR-004", "SIGR-ERR-009",
                                             "SIGR-ERR-005", "SIGR-STR-002"),
        "StreamCompletion": _CLIENT_HUB_FRAMING + ("SIGR-ERR-003", "SIGR-ERR-004", "SIGR-ERR-009"),
        "CancelInvocation": _CLIENT_HUB_FRAMING,
        "Ping": _CLIENT_HUB_FRAMING,
        "Close": _CLIENT_HUB_FRAMING,
        "Ack": _CLIENT_HUB_FRAMING,
        "Sequence": _CLIENT_HUB_FRAMING,
    }

    def __init__(self, profile: Optional[str] = None) -> None:
        super().__init__(profile)
        self.draft = profile == "draft"
        book_profile = "draft" if self.draft else "v1"
        #: Invocations each endpoint sent, judged against the other side's responses.
        self.books = {C2S: InvocationBook(book_profile), S2C: InvocationBook(book_profile)}
        self.phase = {C2S: HANDSHAKE, S2C: OPEN if self.draft else HANDSHAKE}
        self.websocket = {C2S: False, S2C: False}
        self.http = {C2S: False, S2C: False}
        self.hub_protocol: Optional[str] = None
        self.handshake_at: Optional[tuple[int, float]] = None
        self.bad_first = False                   # the client's first hub message was no handshake
        self.client_error_at: Optional[int] = None   # a malformed client message (v1 close rule)
        self.server_closed_hub = False            # the server sent a hub Close
        self.requests: list[tuple[int, float, HttpRequest]] = []
        #: Invocations awaiting their first response: id -> (index, time, kind), per invoker.
        self.awaiting = {C2S: {}, S2C: {}}
        self.streaming = {C2S: set(), S2C: set()}    # ids invoked by StreamInvocation
        self.uploads: set[str] = set()               # open client-to-server streams
        self.uploads_done: set[str] = set()
        #: Ids whose responses cannot be told apart (the invoker reused an active id).
        self.muddled = {C2S: set(), S2C: set()}
        #: Directions that sent a message that did not decode: what it said is unknown (the
        #: ids it announced, the stream ids it opened; after a stream error, all it sent
        #: later), so the other side's answers are not judged, nor ids this side uses that
        #: the lost message may have announced.
        self.blind: set[str] = set()

    # -- the capture reader's calls ------------------------------------------------------------

    def frame(self, direction, frame, index, time) -> Optional[Exchange]:
        handler = _HANDLERS.get(type(frame))
        if handler is None:
            return None             # WebSocket ping/pong, Ping, Ack, Sequence: nothing to check
        return handler(self, direction, frame, index, time)

    def malformed(self, direction, error, index, time) -> None:
        self.blind.add(direction)
        requirement = self._framing_requirement(direction, error)
        if requirement:
            self.violate(requirement, direction, index, f"{error.category}: {error.message}")
        if direction == C2S:
            if self.phase[C2S] == HANDSHAKE:
                self.bad_first = True
            elif requirement:
                self.client_error_at = index

    def closed(self, direction, how, index, time) -> None:
        if direction == S2C and how in ("fin", "rst"):
            self._server_ends(index)

    # -- transport -------------------------------------------------------------------------------

    def _http_request(self, direction, request: HttpRequest, index, time) -> None:
        self.http[direction] = True
        self.requests.append((index, time, request))
        if any("websocket" in v.lower() for v in header_values(request.headers, "upgrade")):
            self.websocket[C2S] = True

    def _http_response(self, direction, response: HttpResponse, index, time) -> Optional[Exchange]:
        self.http[direction] = True
        if response.status == 101:
            self.websocket[S2C] = True
        if not self.requests or 100 <= response.status < 200 and response.status != 101:
            return None
        at, sent, request = self.requests.pop(0)
        if response.status == 200 and request.method == "POST":
            self._check_negotiate(request, response, index)
        return self.answered(at, index, "HttpRequest", time - sent)

    def _check_negotiate(self, request: HttpRequest, response: HttpResponse, index) -> None:
        url = urlsplit(request.target)
        if not url.path.rstrip("/").endswith("/negotiate"):
            return
        asked = parse_qs(url.query).get("negotiateVersion", ["0"])[0]
        version = 1 if asked.strip() not in ("", "0") else 0
        rule = NEGOTIATE_RULES[version]
        try:
            body = json.loads(response.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            self.violate(rule, S2C, index, "the negotiate answer is not JSON")
            return
        if not isinstance(body, dict):
            self.violate(rule, S2C, index, "the negotiate answer is not a JSON object")
            return
        missing = [k for k in NEGOTIATE_FIELDS[version] if k not in body]
        if missing:
            self.violate(rule, S2C, index, f"the negotiate answer (version {version}) lacks "
                         f"{', '.join(missing)}")
        elif version == 1 and not any(isinstance(t, dict) and t.get("transport") == "WebSockets"
                                      for t in body.get("availableTransports") or ()):
            self.violate(rule, S2C, index, "the negotiate answer offers no WebSockets transport")

    def _websocket_close(self, direction, frame: WebSocketClose, index, time) -> None:
        if direction == S2C:
            self._server_ends(index)

    def _server_ends(self, index) -> None:
        """The server ends the connection: after a client's malformed message, v1 servers send
        a Close carrying the error first (SIGR-V1-005); after a client's first message that was
        no handshake, a v1 server answers {"error"} first (SIGR-HS-005)."""
        if self.draft:
            return
        if self.bad_first and self.phase[S2C] == HANDSHAKE:
            self.bad_first = False
            self.violate("SIGR-HS-005", S2C, index, "the handshake failed and the server closed "
                         "without a handshake response carrying the error")
        if self.client_error_at is not None and not self.server_closed_hub:
            self.violate("SIGR-V1-005", S2C, index, f"the server closed after the client's "
                         f"protocol error (#{self.client_error_at}) without a Close message")
        self.client_error_at = None

    # -- handshake -------------------------------------------------------------------------------

    def _handshake_request(self, direction, message: HandshakeRequest, index, time) -> None:
        self.phase[C2S] = OPEN
        self.hub_protocol = message.protocol
        self.handshake_at = (index, time)

    def _handshake_response(self, direction, message: HandshakeResponse, index, time) -> Optional[Exchange]:
        self.phase[S2C] = OPEN if message.error is None else FAILED
        if self.handshake_at is None:
            if self.bad_first:
                self.bad_first = False
                if message.error is None:
                    self.violate("SIGR-HS-003", S2C, index, "the client's first message was not a "
                                 "negotiation message, yet the server accepted the handshake")
            else:
                self.violate("SIGR-HS-004", S2C, index, "the server answered a handshake the "
                             "client had not sent")
            return None
        at, sent = self.handshake_at
        self.handshake_at = None
        return self.answered(at, index, "HandshakeRequest", time - sent)

    # -- hub messages ----------------------------------------------------------------------------

    def _invocation(self, direction, message, index, time) -> None:
        iid = message.invocation_id
        streaming = isinstance(message, StreamInvocation)
        nonblocking = iid is None or getattr(message, "nonblocking", False)
        if direction == C2S:
            for sid in message.stream_ids or ():
                self.uploads.add(sid)        # the client's own stream ids (v1 client streams)
        if iid is None:
            return
        mine, peer = self.books[direction], self.books[_other(direction)]
        active = mine.outstanding(iid)
        try:
            peer.peer_invocation(iid, active=active)
        except HubProtocolError as exc:
            self._book_violation(direction, exc, index)
            if active:
                # Two calls share the id: their responses cannot be told apart.
                self.muddled[direction].add(iid)
                return
        mine.sent_invocation(iid, streaming=streaming, nonblocking=nonblocking)
        self.muddled[direction].discard(iid)
        if streaming:
            self.streaming[direction].add(iid)
        else:
            self.streaming[direction].discard(iid)
        if not nonblocking:
            self.awaiting[direction][iid] = (index, time, type(message).__name__)

    def _response(self, direction, message, index, time) -> Optional[Exchange]:
        iid = message.invocation_id
        if direction == C2S and (iid in self.uploads or iid in self.uploads_done):
            self._upload(message, index)
            return None
        invoker = _other(direction)
        if iid in self.muddled[invoker] or invoker in self.blind:
            return None
        kind = ("item" if isinstance(message, StreamItem) else
                "stream_completion" if isinstance(message, StreamCompletion) else "completion")
        has_result = isinstance(message, Completion) and message.has_result
        try:
            self.books[invoker].peer_response(kind, iid, has_result)
        except HubProtocolError as exc:
            if exc.violation == Violation.UNKNOWN_INVOCATION_ID and direction in self.blind:
                return None         # maybe a stream the lost message opened (its streamIds)
            self._book_violation(direction, exc, index)
            return None
        if (not self.draft and kind == "completion" and has_result
                and iid in self.streaming[invoker]):
            # v1: "a stream is not ended with a Completion carrying the last result".
            self.violate("SIGR-STR-002", direction, index, f"Completion with a result for the "
                         f"stream {iid!r} (StreamInvocation)")
        pending = self.awaiting[invoker].pop(iid, None)
        if pending is None:
            return None
        at, sent, what = pending
        return self.answered(at, index, what, time - sent)

    def _upload(self, message, index) -> None:
        """An item or the end of a client-to-server stream (v1 ``streamIds``)."""
        iid = message.invocation_id
        if iid in self.uploads_done:
            self.violate("SIGR-ERR-009", C2S, index, f"{type(message).__name__} for the client "
                         f"stream {iid!r} after its Completion")
            return
        if not isinstance(message, StreamItem):
            self.uploads.discard(iid)
            self.uploads_done.add(iid)

    def _close(self, direction, message: Close, index, time) -> None:
        if direction == S2C:
            self.server_closed_hub = True

    def _cancel(self, direction, message: CancelInvocation, index, time) -> None:
        pass            # "It is possible to receive StreamItem ... after a CancelInvocation"

    def _book_violation(self, direction, exc: HubProtocolError, index) -> None:
        rules = BOOK_RULES[direction]
        requirement = (DRAFT_BOOK_RULES.get(exc.violation) if self.draft else None) or rules[exc.violation]
        self.violate(requirement, direction, index, exc.message)

    # -- framing ---------------------------------------------------------------------------------

    def _framing_requirement(self, direction, error) -> str:
        category = Category(getattr(error.category, "value", error.category))
        if self.http[direction] and not self.websocket[direction]:
            return ""               # an HTTP message (RFC 9112): no catalogue rule
        if self.websocket[direction] and error.transport:
            return ""               # the WebSocket layer (RFC 6455): FrameError.transport
        phase = self.phase[direction]
        if phase == HANDSHAKE:
            # "the client must send a Negotiation message to the server as its first message";
            # v1: the server answers with {} or {"error"} (SPEC_NOTES).
            return "SIGR-HS-001" if direction == C2S else "SIGR-HS-004"
        if phase == FAILED and category == Category.TRAILING_BYTES:
            return "SIGR-HS-005" if direction == S2C else ""
        return hub_framing_requirement(category, self.draft, self.hub_protocol)


def hub_framing_requirement(category: Category, draft: bool, hub_protocol: str | None) -> str:
    """The rule a hub message that does not decode breaks, by the decoder's category (past the
    handshake; "" for what the profile tolerates): the observer's and the live suite's reading."""
    if not draft and category in V1_TOLERATED:
        return ""
    if category == Category.TRUNCATED:
        return TRUNCATED_FRAMING.get(hub_protocol, TRUNCATED_DEFAULT)
    return HUB_FRAMING.get(category, "")


def _other(direction: str) -> str:
    return S2C if direction == C2S else C2S


_HANDLERS = {
    HttpRequest: SignalRObserver._http_request,
    HttpResponse: SignalRObserver._http_response,
    WebSocketClose: SignalRObserver._websocket_close,
    HandshakeRequest: SignalRObserver._handshake_request,
    HandshakeResponse: SignalRObserver._handshake_response,
    Invocation: SignalRObserver._invocation,
    StreamInvocation: SignalRObserver._invocation,
    StreamItem: SignalRObserver._response,
    Completion: SignalRObserver._response,
    StreamCompletion: SignalRObserver._response,
    CancelInvocation: SignalRObserver._cancel,
    Close: SignalRObserver._close,
}
