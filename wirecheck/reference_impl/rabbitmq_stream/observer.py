"""The RabbitMQ Stream observer (rabbitmq-stream-protocol.adoc; the real server's behaviour from
SPEC_NOTES.md, "RabbitMQ Stream"): both sides of a recorded conversation checked, sans-IO
(times are the capture's).

What it checks, with the catalogue's IDs (conformance/requirements/rabbitmq_stream.py):

- **framing** (:data:`FRAMING`, :data:`CHUNK_FRAMING`): a decode error is its sender's breach:
  a size below 4 (RMQS-FRAME-011 client, RMQS-FRAME-001 server), an unknown key or version
  (RMQS-FRAME-009 / RMQS-FRAME-010 client, RMQS-FRAME-002 server), content that breaks the
  Types (RMQS-TYPE-001), a Deliver chunk that breaks its layout, CRC or counts
  (RMQS-DELIVER-002/-003/-004/-007), a frame above the negotiated frame_max (RMQS-FRAME-007
  client, RMQS-TUNE-001 server). After a client's bad frame the server owes Close(13) (14 for
  frame_max): a Close with another code, an answer to the bad request, or (after Open, where
  the Close is mandatory) a disconnect without Close is the server's breach of the same rule
  (RMQS-FRAME-007/-009/-010/-011/-012/-013, RMQS-HS-014, RMQS-NEW-009).
- **order** ("Authentication"): the client's sequence PeerProperties, SaslHandshake,
  SaslAuthenticate, Tune answer, Open (RMQS-HS-016), a mechanism from the server's list
  (RMQS-HS-017); the server's Tune only after a successful SaslAuthenticate (RMQS-HS-004);
  no answer to a command sent before Open (RMQS-HS-006); handshake commands after Open get
  Close(13) (RMQS-HS-014); nothing more from the server after a failed SaslAuthenticate, a
  refused Open or its CloseResponse (RMQS-HS-009, RMQS-HS-011, RMQS-CLOSE-002); server frames
  of server-to-client types only, responses with bit 15 (RMQS-FRAME-002, RMQS-ROUTE-003).
- **correlation**: every response answers an outstanding request of the other side by
  correlation id, once (RMQS-FRAME-003), with the request's key (RMQS-FRAME-002); the server
  answers the client's Close (RMQS-CLOSE-001), the client the server's (RMQS-CLOSE-003) and
  every ConsumerUpdate before it closes (RMQS-NEW-010).
- **response codes**: codes of the document's table, each for the commands it belongs to
  (:data:`CODE_SCOPE`, RMQS-FRAME-003); codes the conversation decides (:data:`MUST_CODE`,
  RMQS-HS-001/-002/-008/-012, RMQS-TYPE-002, RMQS-CLOSE-001, RMQS-NEW-001, RMQS-SUB-008,
  RMQS-UNSUB-001/-002, RMQS-PUB-003/-005/-006/-008, RMQS-CREDIT-003/-004); Metadata entries
  (RMQS-META-001/-002/-005) and MetadataUpdate only for streams the connection uses
  (RMQS-META-008); the Open response's advertised host and port (RMQS-HS-015); references of
  at most 256 characters (RMQS-PUB-017, RMQS-OFFSET-008).
- **publish confirms**: every publishing id confirmed once (RMQS-PUB-007); an undeclared
  publisher gets PublishError 18 (RMQS-PUB-008).
- **credit and delivery** ("Credit", "Deliver"): a Deliver needs a subscription with credit:
  the Subscribe's initial credit plus the Credit frames seen, one per chunk (RMQS-CREDIT-001/
  -002), none after Unsubscribe (RMQS-UNSUB-001); version 1 until the client announced
  version 2 (RMQS-DELIVER-001); user chunks (RMQS-DELIVER-002) in offset order
  (RMQS-DELIVER-005) with timestamps that do not decrease (RMQS-DELIVER-008), no trailer
  (RMQS-DELIVER-006).

Rules whose source is SPEC_NOTES (the real server) apply unless the profile is ``document``.
A conversation whose first frame is not the client's handshake may be a capture that began
mid-connection: then only what needs no history is checked.
"""
from __future__ import annotations

from collections import Counter, deque
from typing import Optional

from ..core.errors import Category
from ..core.observer import C2S, S2C, Exchange, Observer
from . import codec, sasl
from .constants import Code, Key
from .session import _negotiate

from .observer_server import ServerCommands
from .observer_tables import (  # noqa: F401  (names other modules read here)
    ANSWER_GRACE,
    AUTH_FAILURES,
    BEFORE_OPEN_TOLERATED,
    CAPTURE_FRAME_LIMIT,
    CHUNK_FRAMING,
    CLOSE_ANSWER_WAIT,
    CODE_SCOPE,
    FRAMING,
    FRAMING_DEFAULT,
    HANDSHAKE_NEEDS,
    HANDSHAKE_ORDER,
    MAX_REFERENCE,
    MUST_CODE,
    OWED_AFTER_BAD_BODY,
    OWED_AFTER_MALFORMED,
    SERVER_COMMANDS,
    SERVER_REQUESTS,
    _AFTER_OPEN_COMMANDS,
    _Pub,
    _Publish,
    _Request,
    _SERVER_RESPONSES,
    _Sub,
    _profile,
    server_frame_requirement)


class StreamObserver(ServerCommands, Observer):
    #: What this observer judges on the client's frames, by type (the frame class's name, as
    #: ``codec.frame_to_dict`` gives it; conformance/clients/serve_check.py, ``exercised_requirements``).
    #: Derived from the C2S checks of this module: what :meth:`malformed` reports for a client
    #: frame that does not decode (:data:`FRAMING`, RMQS-FRAME-010 for a version, RMQS-FRAME-007
    #: above the agreed frame_max, :data:`FRAMING_DEFAULT`; this observer has no
    #: ``framing_requirements``, so they are listed under "*"), and every
    #: ``violate(..., C2S, ...)``: a server-only command from the client (RMQS-FRAME-009,
    #: :meth:`_client`), the handshake's order (RMQS-HS-016, :meth:`_order` and
    #: :meth:`_client_response` for the Tune answer), a response that answers no request of
    #: the server (RMQS-FRAME-003, :meth:`_client_response`), the per-command rules
    #: (``_c_*``: RMQS-HS-017, RMQS-PUB-017, RMQS-OFFSET-008, RMQS-FRAME-007 for Publish) and
    #: the Close the client owes (RMQS-CLOSE-003, :meth:`closed`: judged when the server sent a
    #: Close, which the client's CloseResponse answers). A rule is listed under a type when a
    #: frame of that type may break it (most need a conversation seen from its start).
    client_rules = {
        "*": ("RMQS-FRAME-007", "RMQS-FRAME-009", "RMQS-FRAME-010", "RMQS-FRAME-011", "RMQS-TYPE-001"),
        # the handshake
        "PeerProperties": (),
        "SaslHandshake": ("RMQS-HS-016",),
        "SaslAuthenticate": ("RMQS-HS-016", "RMQS-HS-017"),
        "Tune": ("RMQS-HS-016",),
        "TuneResponse": ("RMQS-HS-016",),
        "Open": ("RMQS-HS-016",),
        # commands
        **{name: ("RMQS-HS-016",) for name in _AFTER_OPEN_COMMANDS},
        "DeclarePublisher": ("RMQS-HS-016", "RMQS-PUB-017"),
        "QueryPublisherSequence": ("RMQS-HS-016", "RMQS-PUB-017"),
        "StoreOffset": ("RMQS-HS-016", "RMQS-OFFSET-008"),
        "Publish": ("RMQS-HS-016", "RMQS-FRAME-007"),
        "Heartbeat": (),
        "Close": ("RMQS-NEW-010",),
        # answers to the server's requests
        "CloseResponse": ("RMQS-FRAME-003", "RMQS-CLOSE-003"),
        "ConsumerUpdateResponse": ("RMQS-FRAME-003", "RMQS-NEW-010"),
        # the server's commands and responses, from a client
        "PublishConfirm": ("RMQS-FRAME-009",),
        "PublishError": ("RMQS-FRAME-009",),
        "Deliver": ("RMQS-FRAME-009",),
        "MetadataUpdate": ("RMQS-FRAME-009",),
        "ConsumerUpdate": ("RMQS-FRAME-009",),
        **{name: ("RMQS-FRAME-003",) for name in _SERVER_RESPONSES},
    }

    def __init__(self, profile: Optional[str] = None) -> None:
        super().__init__(profile)
        self.keys, features, self.notes = _profile(profile)
        self.response_bit = features.get("route_response_bit", True)
        self.frame_max_enforced = features.get("frame_max_enforced", True)
        self.fresh: Optional[bool] = None          # the conversation seen from its start
        self.steps: set[int] = set()               # handshake commands the client sent
        self.open_sent = False
        self.opened = False                        # OpenResponse code 1 seen
        self.authenticated = False
        self.mechanisms: Optional[tuple] = None
        self.server_tune: Optional[tuple[codec.Tune, int, float]] = None
        self.tune_answered = False
        self.frame_max = 0                         # negotiated; 0 = unknown or no limit
        self.deliver_v2 = False
        #: Outstanding requests per side, by correlation id (a deque: ids may repeat).
        self.pending: dict[str, dict[int, deque]] = {C2S: {}, S2C: {}}
        self.subs: dict[int, _Sub] = {}
        self.gone_subs: set[int] = set()            # unsubscribed (code 1): nothing more for them
        self.sub_ops: Counter = Counter()           # unanswered Subscribe/Unsubscribe per id
        self.credits: dict[int, deque] = {}         # Credit frames that may be answered
        self.pubs: dict[int, _Pub] = {}
        self.pub_ops: Counter = Counter()
        self.undeclared: dict[int, dict] = {}       # publisher id -> publishing id -> deque
        self.used_streams: set[str] = set()
        self.owed: Optional[tuple[str, int, bool]] = None   # the server's owed Close
        self.ended: dict[str, Optional[str]] = {C2S: None, S2C: None}  # rule of the last word
        self.reported_after_end = False
        self.server_close: Optional[int] = None     # correlation id of the server's Close
        self.blind: set[str] = set()
        self.closed_dirs: set[str] = set()

    # -- the capture reader's calls ------------------------------------------------------------

    def frame(self, direction, frame, index, time) -> Optional[Exchange]:
        if self.fresh is None:
            # A capture that began mid-connection cannot be told from a client that skipped
            # the handshake; only the handshake's first frames say the start was seen.
            self.fresh = direction == C2S and getattr(frame, "key", None) in HANDSHAKE_ORDER \
                and not frame.response
        if direction == C2S:
            return self._client(frame, index, time)
        return self._server(frame, index, time)

    def malformed(self, direction, error, index, time) -> None:
        self.blind.add(direction)
        category = Category(getattr(error.category, "value", error.category))
        message = error.message
        if category is Category.LENGTH_TOO_LARGE:
            # The capture decoder's limit is the default frame_max; above a smaller agreed
            # frame_max the sender broke the Tune ("Tune"), else only the kit's limit.
            if not (self.frame_max and self.frame_max <= CAPTURE_FRAME_LIMIT):
                return
            requirement = "RMQS-FRAME-007" if direction == C2S else "RMQS-TUNE-001"
        elif category is Category.UNKNOWN_TYPE and direction == C2S and error.part == "version":
            requirement = "RMQS-FRAME-010"
        else:
            requirement = FRAMING[direction].get(category, "")
            if not requirement and direction == S2C:
                # A Deliver's chunk: the rule of the part that is wrong.
                requirement = next((r for m, r in CHUNK_FRAMING if m in message), "")
            requirement = requirement or FRAMING_DEFAULT
        self.violate(requirement, direction, index, f"{category}: {message}")
        if direction == C2S:
            rule, code, mandatory = OWED_AFTER_MALFORMED.get(category, OWED_AFTER_BAD_BODY)
            if category is Category.UNKNOWN_TYPE:
                rule = requirement
            if category is not Category.LENGTH_TOO_LARGE or self.frame_max_enforced:
                self._owe(rule, code, mandatory)

    def closed(self, direction, how, index, time) -> None:
        self.closed_dirs.add(direction)
        if how not in ("fin", "rst") or not self.fresh:
            return                      # the capture ended: nothing is known of either side
        if direction == S2C:
            if self.owed is not None and self.owed[2] and self.opened:
                self.violate(self.owed[0], S2C, index, "the server ended the connection without "
                             f"the Close({self.owed[1]}) it owed")
                self.owed = None
            if C2S not in self.blind:
                for reqs in self.pending[C2S].values():
                    for req in reqs:
                        if req.key == Key.CLOSE and not req.before_open:
                            self.violate("RMQS-CLOSE-001", S2C, index, "the server ended the "
                                         "connection without answering the client's Close")
            if S2C not in self.blind and C2S not in self.closed_dirs:
                # The server gave up waiting: a client that let CLOSE_ANSWER_WAIT pass without
                # answering its Close broke RMQS-CLOSE-003 as surely as one that left first.
                for reqs in self.pending[S2C].values():
                    for req in reqs:
                        if req.key == Key.CLOSE and time - req.time >= CLOSE_ANSWER_WAIT:
                            self.violate("RMQS-CLOSE-003", C2S, index, "the client did not answer "
                                         f"the server's Close within {time - req.time:.1f} s; the "
                                         "server ended the connection")
        else:
            if (self.server_close is not None and S2C not in self.closed_dirs
                    and S2C not in self.blind):
                # "Close ... Expects response? Yes": a client that leaves first without it.
                self.violate("RMQS-CLOSE-003", C2S, index, "the client ended the connection "
                             "without answering the server's Close")
            self._unanswered_updates(index, time, "ended the connection")

    def _unanswered_updates(self, index, time, doing: str) -> None:
        """RMQS-NEW-010: ConsumerUpdates the client leaves unanswered as it closes. One sent
        less than :data:`ANSWER_GRACE` ago may have crossed the client's close on the wire."""
        if not (self.notes and self.fresh) or S2C in self.blind or S2C in self.closed_dirs:
            return
        for correlation, reqs in list(self.pending[S2C].items()):
            for req in list(reqs):
                if req.key == Key.CONSUMER_UPDATE and time - req.time >= ANSWER_GRACE:
                    reqs.remove(req)
                    self.violate("RMQS-NEW-010", C2S, index, f"the client {doing} without answering "
                                 f"the server's ConsumerUpdate (correlation id {correlation})")
            if not reqs:
                del self.pending[S2C][correlation]

    # -- client frames -------------------------------------------------------------------------

    def _client(self, frame, index, time) -> Optional[Exchange]:
        key = frame.key
        if frame.response or (key == Key.TUNE):
            return self._client_response(frame, index, time)
        if key in SERVER_COMMANDS - {Key.CLOSE, Key.HEARTBEAT}:
            # A command the "Commands" table has from the server only: the server knows no
            # such request (Close 13); ConsumerUpdate has its own rule.
            self.violate("RMQS-FRAME-009", C2S, index, f"{type(frame).__name__} is a server-to-"
                         "client command")
            rule = "RMQS-NEW-009" if key == Key.CONSUMER_UPDATE and self.notes else "RMQS-FRAME-009"
            self._owe(rule, Code.UNKNOWN_FRAME, True)
            return None
        req = _Request(key, frame, index, time, not self.open_sent)
        if key == Key.CLOSE:
            self._unanswered_updates(index, time, "sent Close")
        if self.fresh:
            self._order(req)
        if key not in self.keys:
            # A command newer than the profile's server: it answers Close(13) (SPEC_NOTES:
            # RabbitMQ 3.10 and keys 27, 29); the client may probe, that is no breach.
            req.refuse = "RMQS-FRAME-009"
            self._owe("RMQS-FRAME-009", Code.UNKNOWN_FRAME, True)
        handler = getattr(self, "_c_" + Key(key).name.lower(), None)
        if handler is not None and self.fresh:
            handler(req, frame)
        if hasattr(frame, "correlation_id"):
            self.pending[C2S].setdefault(frame.correlation_id, deque()).append(req)
        return None

    def _order(self, req: _Request) -> None:
        """The handshake's order, from the client's side ("Authentication")."""
        key, index = req.key, req.index
        if key in HANDSHAKE_ORDER:
            if self.opened or (self.open_sent and key != Key.OPEN):
                if self.notes:
                    req.refuse = "RMQS-HS-014"
                    self._owe("RMQS-HS-014", Code.UNKNOWN_FRAME, True)
                return
            need = HANDSHAKE_NEEDS.get(key)
            if need is not None and need not in self.steps:
                self.violate("RMQS-HS-016", C2S, index, f"{type(req.frame).__name__} before "
                             f"{Key(need).name} (the order is PeerProperties, SaslHandshake, "
                             "SaslAuthenticate, Tune, Open)")
            self.steps.add(key)
            if key == Key.OPEN:
                self.open_sent = True
            return
        if not self.open_sent:
            req.refuse = "RMQS-HS-006"
            if key not in BEFORE_OPEN_TOLERATED:
                self.violate("RMQS-HS-016", C2S, index, f"{type(req.frame).__name__} before Open "
                             "(the client starts with the handshake)")
            self._owe("RMQS-HS-006", Code.UNKNOWN_FRAME, False)

    def _client_response(self, frame, index, time) -> Optional[Exchange]:
        if isinstance(frame, codec.CreditResponse):
            # The server's error answer to Credit ("Commands": server to client), with no
            # correlation id to look up: like any server-to-client command from the client.
            self.violate("RMQS-FRAME-009", C2S, index, "CreditResponse is a server-to-client command")
            self._owe("RMQS-FRAME-009", Code.UNKNOWN_FRAME, True)
            return None
        if frame.key == Key.TUNE:
            # The answer to the server's Tune, as key 0x8014 or 0x0014 (SPEC_NOTES).
            if self.server_tune is None:
                if self.fresh:
                    self.violate("RMQS-HS-016", C2S, index, "the client's Tune before the server's")
                return None
            if self.opened or self.open_sent:
                if self.notes and self.fresh:
                    self._owe("RMQS-HS-014", Code.UNKNOWN_FRAME, True)
                return None
            tune, at, sent = self.server_tune
            self.steps.add(Key.TUNE)
            # "The client answers with a Tune frame with the settings he agrees on".
            self.frame_max = _negotiate(tune.frame_max, frame.frame_max)
            if self.tune_answered:
                return None
            self.tune_answered = True
            return self.answered(at, index, "Tune", time - sent)
        req = self._take(S2C, frame)
        if req is None:
            if self.fresh and S2C not in self.blind:
                self.violate("RMQS-FRAME-003", C2S, index, f"{type(frame).__name__} answers no "
                             "request of the server")
                if self.notes:
                    self._owe("RMQS-FRAME-012", Code.UNKNOWN_FRAME, True)
            return None
        if req.key == Key.CLOSE:
            self.server_close = None
        return self.answered(req.index, index, type(req.frame).__name__, time - req.time)

    # per-command client rules (only for conversations seen from the start)

    def _c_sasl_authenticate(self, req, f) -> None:
        if self.mechanisms is not None and f.mechanism not in self.mechanisms:
            self.violate("RMQS-HS-017", C2S, req.index, f"mechanism {f.mechanism!r} is not in the "
                         f"server's list {list(self.mechanisms)}")
            req.expect = ("RMQS-HS-008", Code.SASL_MECHANISM_NOT_SUPPORTED, True)
        elif f.data is None:
            req.expect = ("RMQS-TYPE-002", Code.OK, False)        # null data cannot authenticate
        elif f.mechanism == "PLAIN" and sasl.plain(f.data) is None and self.notes:
            req.expect = ("RMQS-HS-012", Code.SASL_ERROR, True)

    def _c_declare_publisher(self, req, f) -> None:
        self.used_streams.add(f.stream)
        if len(f.reference) > MAX_REFERENCE:
            self.violate("RMQS-PUB-017", C2S, req.index, f"publisher reference of {len(f.reference)} "
                         "characters")
        state = self._pub_state(f.publisher_id)
        if state == "active" and self.notes:
            req.expect = ("RMQS-PUB-003", Code.PRECONDITION_FAILED, True)
        if f.publisher_id not in self.pubs:
            self.pubs[f.publisher_id] = _Pub(f.stream)
        self.pub_ops[f.publisher_id] += 1

    def _c_delete_publisher(self, req, f) -> None:
        state = self._pub_state(f.publisher_id)
        if state == "absent":
            req.expect = ("RMQS-PUB-006", Code.PUBLISHER_DOES_NOT_EXIST, True)
        elif state == "active":
            req.expect = ("RMQS-PUB-005", Code.PUBLISHER_DOES_NOT_EXIST, False)
        self.pub_ops[f.publisher_id] += 1

    def _c_publish(self, req, f) -> None:
        state = self._pub_state(f.publisher_id)
        if self.frame_max:
            self._size_check(C2S, f, req.index)
        publish = _Publish(req.index, req.time, len(f.messages), state == "absent")
        pub = self.pubs.get(f.publisher_id)
        inflight = self.undeclared.setdefault(f.publisher_id, {}) if pub is None else pub.inflight
        for m in f.messages:
            inflight.setdefault(m.publishing_id, deque()).append(publish)

    def _c_query_publisher_sequence(self, req, f) -> None:
        if len(f.reference) > MAX_REFERENCE:
            self.violate("RMQS-PUB-017", C2S, req.index, f"publisher reference of {len(f.reference)} "
                         "characters")

    def _c_store_offset(self, req, f) -> None:
        if len(f.reference) > MAX_REFERENCE:
            self.violate("RMQS-OFFSET-008", C2S, req.index, f"offset reference of {len(f.reference)} "
                         "characters")

    def _c_subscribe(self, req, f) -> None:
        self.used_streams.add(f.stream)
        state = self._sub_state(f.subscription_id)
        if state == "active":
            req.expect = ("RMQS-SUB-008", Code.SUBSCRIPTION_ID_ALREADY_EXISTS, True)
        elif state == "absent":
            req.expect = ("RMQS-SUB-008", Code.SUBSCRIPTION_ID_ALREADY_EXISTS, False)
            self.subs[f.subscription_id] = _Sub(f.stream, f.credit, credited=f.credit > 0)
            self.gone_subs.discard(f.subscription_id)
        self.sub_ops[f.subscription_id] += 1

    def _c_unsubscribe(self, req, f) -> None:
        state = self._sub_state(f.subscription_id)
        if state == "absent":
            req.expect = ("RMQS-UNSUB-002", Code.SUBSCRIPTION_ID_DOES_NOT_EXIST, True)
        elif state == "active":
            req.expect = ("RMQS-UNSUB-001", Code.SUBSCRIPTION_ID_DOES_NOT_EXIST, False)
        self.sub_ops[f.subscription_id] += 1

    def _c_credit(self, req, f) -> None:
        sub = self.subs.get(f.subscription_id)
        if sub is not None:
            sub.credit += f.credit        # an upper bound of what the server has (see _deliver)
            sub.credited = sub.credited or f.credit > 0
        self.credits.setdefault(f.subscription_id, deque()).append(req)

    def _c_exchange_command_versions(self, req, f) -> None:
        # Deliver v2 once the client announces it (SPEC_NOTES: ExchangeCommandVersions).
        self.deliver_v2 = self.deliver_v2 or any(k == Key.DELIVER and hi >= 2 for k, _, hi in f.versions)

    # -- server frames ---------------------------------------------------------------------------

    def _server(self, frame, index, time) -> Optional[Exchange]:
        if self.ended[S2C] is not None:
            # After its CloseResponse, a failed SaslAuthenticate or a refused Open the server
            # closes the connection (SPEC_NOTES): nothing more comes from it.
            if not self.reported_after_end and not isinstance(frame, codec.Close):
                self.reported_after_end = True
                self.violate(self.ended[S2C], S2C, index, f"{type(frame).__name__} after the server "
                             "should have closed the connection")
            return None
        key = frame.key
        if isinstance(frame, codec.CreditResponse):
            return self._credit_response(frame, index, time)
        if frame.response:
            return self._response(frame, index, time)
        if key not in SERVER_COMMANDS:
            # "Commands ... From": only responses and the server's commands come from it; a
            # request key is a response that lost its bit 15.
            self.violate("RMQS-FRAME-002", S2C, index, f"{type(frame).__name__} (key 0x"
                         f"{frame.wire_key:04x}) is neither a response nor a server command")
            return None
        if isinstance(frame, codec.Close):
            self._server_close(frame, index)
        if hasattr(frame, "correlation_id") and key in SERVER_REQUESTS:
            self.pending[S2C].setdefault(frame.correlation_id, deque()).append(
                _Request(key, frame, index, time, not self.opened))
        handler = getattr(self, "_s_" + Key(key).name.lower(), None)
        return None if handler is None else handler(frame, index, time)

    def _server_close(self, frame, index) -> None:
        self.server_close = frame.correlation_id
        if self.owed is not None:
            rule, code, _ = self.owed
            self.owed = None
            if frame.code != code:
                self.violate(rule, S2C, index, f"Close({frame.code}) where Close({code}) was owed")

    def _response(self, frame, index, time) -> Optional[Exchange]:
        if isinstance(frame, (codec.TuneResponse, codec.ConsumerUpdateResponse)):
            self.violate("RMQS-FRAME-002", S2C, index, f"{type(frame).__name__} is the client's")
            return None
        req = self._take(C2S, frame)
        if req is None:
            if self.fresh and C2S not in self.blind:
                self.violate("RMQS-FRAME-003", S2C, index, f"{type(frame).__name__} with correlation "
                             f"id {frame.correlation_id} answers no outstanding request")
            return None
        self._judge(req, frame, index)
        return self.answered(req.index, index, type(req.frame).__name__, time - req.time)

    def _judge(self, req: _Request, frame, index) -> None:
        """The answer to ``req`` against what the conversation decides."""
        key = req.key
        code = getattr(frame, "code", None)
        name = type(req.frame).__name__
        if req.refuse is not None:
            self.violate(req.refuse, S2C, index, f"{name} answered; it must get Close(13) or nothing")
            return
        if frame.key != key:
            self.violate("RMQS-FRAME-002", S2C, index, f"{type(frame).__name__} answers {name} "
                         f"(correlation id {req.frame.correlation_id})")
            return
        if not getattr(frame, "response_bit", True) and self.response_bit:
            self.violate("RMQS-ROUTE-003", S2C, index, f"{type(frame).__name__} without the "
                         "response bit")
        if code is not None:
            self._judge_code(req, frame, code, index)
        getattr(self, "_r_" + Key(key).name.lower(), lambda *a: None)(req, frame, index)

    def _judge_code(self, req, frame, code, index) -> None:
        key, name = req.key, type(req.frame).__name__
        try:
            known = Code(code)
        except ValueError:
            self.violate("RMQS-FRAME-003", S2C, index, f"code {code} is not in the Response Codes table")
            return
        scope = CODE_SCOPE.get(known)
        if scope is not None and key not in scope:
            self.violate("RMQS-FRAME-003", S2C, index, f"code {code} ({known.name}) does not "
                         f"answer {name}")
        must = MUST_CODE.get(key)
        if must is not None and code != must[0] and not (key == Key.CLOSE and req.before_open):
            self.violate(must[1], S2C, index, f"{name} answered with code {code}, not {int(must[0])}")
        if req.expect is not None and self.fresh:
            rule, want, equal = req.expect
            if (code == want) != equal:
                self.violate(rule, S2C, index, f"{name} answered with code {code}: "
                             f"{'expected' if equal else 'not'} {int(want)}")

    # per-command server rules (the answer's effect on what the observer knows)

    def _r_sasl_handshake(self, req, frame, index) -> None:
        self.mechanisms = tuple(frame.mechanisms)
        if frame.code == Code.OK and "PLAIN" not in self.mechanisms:
            self.violate("RMQS-HS-002", S2C, index, f"mechanisms {list(self.mechanisms)} lack PLAIN")

    def _r_sasl_authenticate(self, req, frame, index) -> None:
        if frame.code == Code.OK:
            self.authenticated = True
        elif frame.code in AUTH_FAILURES and self.notes:
            self.ended[S2C] = "RMQS-HS-009"

    def _r_open(self, req, frame, index) -> None:
        if frame.code == Code.OK:
            self.opened = True
            if self.notes and not {"advertised_host", "advertised_port"} <= set(frame.properties):
                self.violate("RMQS-HS-015", S2C, index, "the Open response lacks advertised_host "
                             "or advertised_port")
        elif self.notes:
            self.ended[S2C] = "RMQS-HS-011"

    def _r_close(self, req, frame, index) -> None:
        if self.notes and not req.before_open:
            self.ended[S2C] = "RMQS-CLOSE-002"

    def _r_metadata(self, req, frame, index) -> None:
        asked = set(req.frame.streams)
        names = [m.stream for m in frame.streams]
        if set(names) != asked or len(names) != len(asked):
            self.violate("RMQS-META-001", S2C, index, f"entries for {sorted(names)}, asked for "
                         f"{sorted(asked)}")
        brokers = {b.reference for b in frame.brokers}
        for m in frame.streams:
            if m.code == Code.OK and m.leader not in brokers:
                self.violate("RMQS-META-002", S2C, index, f"stream {m.stream!r}: leader {m.leader} is "
                             "not a broker of the response")
            elif m.code == Code.STREAM_DOES_NOT_EXIST and m.leader != 0xFFFF and self.notes:
                self.violate("RMQS-META-005", S2C, index, f"missing stream {m.stream!r}: leader "
                             f"{m.leader}, not 0xFFFF")

    def _r_declare_publisher(self, req, frame, index) -> None:
        pid = req.frame.publisher_id
        self.pub_ops[pid] -= 1
        pub = self.pubs.get(pid)
        if frame.code == Code.OK and pub is not None:
            pub.state, pub.stream = "active", req.frame.stream
        elif pub is not None and pub.state == "pending":
            del self.pubs[pid]

    def _r_delete_publisher(self, req, frame, index) -> None:
        pid = req.frame.publisher_id
        self.pub_ops[pid] -= 1
        if frame.code in (Code.OK, Code.PUBLISHER_DOES_NOT_EXIST) and pid in self.pubs:
            # Confirms still owed stay answerable under the publisher id.
            self.undeclared.setdefault(pid, {}).update(self.pubs.pop(pid).inflight)

    def _r_subscribe(self, req, frame, index) -> None:
        sid = req.frame.subscription_id
        self.sub_ops[sid] -= 1
        sub = self.subs.get(sid)
        if sub is None or sub.state != "pending":
            return
        if frame.code == Code.OK:
            sub.state = "active"
        else:
            del self.subs[sid]

    def _r_unsubscribe(self, req, frame, index) -> None:
        sid = req.frame.subscription_id
        self.sub_ops[sid] -= 1
        if frame.code in (Code.OK, Code.SUBSCRIPTION_ID_DOES_NOT_EXIST):
            self.subs.pop(sid, None)
            if frame.code == Code.OK:
                self.gone_subs.add(sid)

    # -- helpers ---------------------------------------------------------------------------------

    def _take(self, side: str, frame) -> Optional[_Request]:
        """The outstanding request of ``side`` this response answers (same correlation id; the
        one with the same key first)."""
        reqs = self.pending[side].get(frame.correlation_id)
        if not reqs:
            return None
        req = next((r for r in reqs if r.key == frame.key), reqs[0])
        reqs.remove(req)
        if not reqs:
            del self.pending[side][frame.correlation_id]
        return req

    def _owe(self, rule: str, code: int, mandatory: bool) -> None:
        if self.owed is None:
            self.owed = (rule, code, mandatory and self.opened)

    def _sub_state(self, sid: int) -> str:
        if self.sub_ops[sid]:
            return "unknown"
        sub = self.subs.get(sid)
        return sub.state if sub is not None else ("absent" if C2S not in self.blind else "unknown")

    def _pub_state(self, pid: int) -> str:
        if self.pub_ops[pid]:
            return "unknown"
        pub = self.pubs.get(pid)
        return pub.state if pub is not None else "absent"

    def _size_check(self, direction, frame, index) -> None:
        size = _wire_size(frame)
        if size > self.frame_max:
            if direction == C2S:
                self.violate("RMQS-FRAME-007", C2S, index, f"frame of {size} bytes above the "
                             f"negotiated frame_max {self.frame_max}")
                if self.frame_max_enforced:
                    self._owe("RMQS-FRAME-007", Code.FRAME_TOO_LARGE, True)
            else:
                self.violate("RMQS-TUNE-001", S2C, index, f"frame of {size} bytes above the "
                             f"negotiated frame_max {self.frame_max}")


def _wire_size(frame) -> int:
    """The frame's Size field (key, version and body)."""
    if isinstance(frame, codec.Deliver):
        c = frame.chunk
        return 4 + 1 + (8 if frame.version >= 2 else 0) + 48 + len(c.bloom) + len(c.data) + len(c.trailer)
    return len(codec.encode(frame)) - 4

