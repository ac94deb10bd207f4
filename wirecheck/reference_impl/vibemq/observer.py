"""The VibeMQ observer (vibemq-protocol.rst; the real server's behaviour from SPEC_NOTES.md,
"VibeMQ"): both sides of a recorded conversation checked, sans-IO (times are the capture's).

How it pairs answers with requests: an answer carries its request's id in the document's
examples ("Exchange Examples": Pong, PublishAck, SubscribeAck, QueueInfo ... echo the id), but
the real server gives ConnectAck and the errors it raises before dispatch (rate limit,
validation, authentication) a new id (SPEC_NOTES), and the document's own Error example has an
id of its own. So an answer is paired with the oldest outstanding request with its id whose
answer type it is; else, the answer types being distinct per request
(:data:`ANSWERS`), with the oldest outstanding request it can answer (an Error: the oldest
that expects an answer). The real server handles one connection's messages in turn, so the
requests before the one answered were handled before it; the document does not promise that
order, so a request passed over is not reported as unanswered, and a late answer to it is
still paired (:attr:`VibeObserver.late`). Deliver is not an answer: the broker pushes it.

What it checks, with the catalogue's IDs (conformance/requirements/vibemq.py):

- **framing** (:data:`FRAMING_BY_PART`, then :data:`FRAMING`): body length bounds
  (VIBE-FRAME-004/-005), compression flags (VIBE-FRAME-003), bombs (VIBE-FRAME-006), corrupt
  compressed bodies (VIBE-COMP-007), the message layout (VIBE-MSG-001), the JSON payload
  (VIBE-MSG-002), command types (VIBE-MSG-006), empty ids (VIBE-MSG-007); and the version
  byte of every message, both sides (VIBE-MSG-003).
- **order**: before Connect only Connect and Ping (VIBE-CONN-003, the client's frame and the
  server's answer, which must be Error NOT_AUTHENTICATED); after a Disconnect the server
  handles nothing more (VIBE-CONN-004: an answer to a later request).
- **answers**: each request's answer type (:data:`ANSWERS`, else Error) and rule
  (:data:`RULES`): Connect VIBE-CONN-001, Ping VIBE-PING-001 (same id), Publish VIBE-PUB-001
  (the message's id), Subscribe VIBE-SUB-001, Unsubscribe VIBE-SUB-002, the queue commands
  VIBE-QUEUE-001/-003/-004/-005; an answer no request is waiting for, a second one included,
  breaks the same rule. A command that names no queue is refused (VIBE-ERR-006, and the
  client's frame too); an Error has errorCode and errorMessage (VIBE-ERR-001); QueueInfo's
  payload has the document's six fields (VIBE-QUEUE-004), ListQueues' is a list of names
  (VIBE-QUEUE-005). Profile ``document`` (the default): the answers' headers of the document's
  examples (VIBE-CONN-005, VIBE-PUB-002, VIBE-SUB-001, VIBE-SUB-002), Deliver's priority and
  deliveryAttempts (VIBE-DEL-002), a redelivery's deliveryAttempts growing (VIBE-RETRY-001);
  the real profiles (``vibemq-1.8``, ``vibemq-1.0``) send none of these headers (SPEC_NOTES).
- **compression** ("Negotiation"): ConnectAck names an algorithm the client offered, or none
  when it offered none (VIBE-COMP-001/-002); the server compresses nothing before or without an
  agreement (VIBE-COMP-002) and only with the agreed algorithm after it (VIBE-COMP-003); the
  client likewise (VIBE-CLIENT-001).
- **deliveries and acks**: a Deliver is for a queue the client subscribed to on this
  connection (VIBE-DEL-001); a message the client acknowledged, once the server has handled
  the Ack (it answered a later request), is not delivered again (VIBE-ACK-001). The Ack names
  the message by ``headers.messageId`` (document) or by its own id (the real client): both
  are read.

Not checked (passively undecidable, or no catalogue ID): missing answers (the capture may
end; order is not promised); passwords and queue existence (AUTH_FAILED, QUEUE_EXISTS,
QUEUE_NOT_FOUND, implicit queues: server configuration and other connections); the threshold
(VIBE-COMP-004, VIBE-CLIENT-001's size part: it is configurable); which algorithm the server
prefers (VIBE-COMP-006: its supported set is unknown); delivery modes, TTL, dead letters,
rate limits and queue sizes (VIBE-MODE-*, VIBE-TTL-001, VIBE-DLQ-001, VIBE-ERR-003,
VIBE-OVER-001: other connections and timers); whether the server closed after Disconnect
(the capture may end first); error codes outside the table and frames of the other side's
types (a server sending Publish, a client sending Pong): no catalogue ID.
"""
from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Optional

from ..core.errors import Category
from ..core.observer import C2S, S2C, Exchange, Observer
from .constants import (COMPRESSION_BY_NAME, PRIORITIES, PROTOCOL_VERSION, CommandType,
                        Compression, ErrorCode)
from .session import BEFORE_CONNECT, HANDLERS

T = CommandType

#: Request type -> the answer type when it succeeds ("Command Descriptions"; CreateQueue and
#: DeleteQueue are answered with their own type, as the real server does). Ack and Disconnect
#: get none (an Error at most).
ANSWERS = {
    T.CONNECT: T.CONNECT_ACK, T.PING: T.PONG, T.PUBLISH: T.PUBLISH_ACK,
    T.SUBSCRIBE: T.SUBSCRIBE_ACK, T.UNSUBSCRIBE: T.UNSUBSCRIBE_ACK,
    T.CREATE_QUEUE: T.CREATE_QUEUE, T.DELETE_QUEUE: T.DELETE_QUEUE,
    T.QUEUE_INFO: T.QUEUE_INFO, T.LIST_QUEUES: T.LIST_QUEUES,
}
#: The rule an answer (or a missing or wrong one) of each request type breaks.
RULES = {
    T.CONNECT: "VIBE-CONN-001", T.PING: "VIBE-PING-001", T.PUBLISH: "VIBE-PUB-001",
    T.SUBSCRIBE: "VIBE-SUB-001", T.UNSUBSCRIBE: "VIBE-SUB-002",
    T.CREATE_QUEUE: "VIBE-QUEUE-001", T.DELETE_QUEUE: "VIBE-QUEUE-003",
    T.QUEUE_INFO: "VIBE-QUEUE-004", T.LIST_QUEUES: "VIBE-QUEUE-005",
}
#: Answer type -> the request types it answers.
ANSWERED_BY = {answer: frozenset(r for r, a in ANSWERS.items() if a == answer)
               for answer in set(ANSWERS.values())}
#: Answers whose id must be the request's ("Ping"/"Pong": the same id; "Publish is answered
#: with PublishAck carrying the message's id").
SAME_ID = frozenset({T.PONG, T.PUBLISH_ACK})
#: Requests handled without an answer once connected ("Ack", "Disconnect").
SILENT = frozenset({T.ACK, T.DISCONNECT})
#: Commands that name a queue (the session's ``_need_queue``; "Publish message to queue"...).
QUEUE_COMMANDS = frozenset({T.PUBLISH, T.SUBSCRIBE, T.UNSUBSCRIBE, T.CREATE_QUEUE,
                            T.DELETE_QUEUE, T.QUEUE_INFO})
#: Codes an Error may carry whatever the request (SPEC_NOTES: the rate limiter and the
#: message validator run before anything else).
ANY_TIME = frozenset({ErrorCode.RATE_LIMITED, ErrorCode.INVALID_MESSAGE})
#: "QueueInfo" response payload.
QUEUE_INFO_FIELDS = ("name", "messageCount", "subscriberCount", "deliveryMode", "maxSize", "createdAt")
#: Profile ``document``: the headers of the document's answers, by answer type, and which must
#: equal a field of the request ("queue" or "id").
DOCUMENT_HEADERS = {
    T.CONNECT_ACK: (("VIBE-CONN-005", "serverVersion", None), ("VIBE-CONN-005", "connectionId", None)),
    T.PUBLISH_ACK: (("VIBE-PUB-002", "messageId", "id"), ("VIBE-PUB-002", "queueName", "queue")),
    T.SUBSCRIBE_ACK: (("VIBE-SUB-001", "queueName", "queue"), ("VIBE-SUB-001", "subscriptionId", None)),
    T.UNSUBSCRIBE_ACK: (("VIBE-SUB-002", "queueName", "queue"),),
}

#: Decode errors by the part the decoder says is wrong (FrameError.part: codec.py, compression.py),
#: then by category. "" : not reported (a bound of the kit's own, or JSON the document does not
#: rule out).
FRAMING_BY_PART = {
    "compression-flag": "VIBE-FRAME-003",
    "command-type": "VIBE-MSG-006",
    "bomb": "VIBE-FRAME-006",
    "compressed-body": "VIBE-COMP-007",
    "id": "VIBE-MSG-007",
    "json-depth": "",
    "json-surrogate": "",
    "payload": "VIBE-MSG-002",
}
FRAMING = {
    Category.LENGTH_TOO_SMALL: "VIBE-FRAME-004",
    Category.LENGTH_TOO_LARGE: "VIBE-FRAME-005",
    Category.UNKNOWN_TYPE: "VIBE-MSG-006",
    Category.TRUNCATED: "VIBE-MSG-001",
    Category.TRAILING_BYTES: "VIBE-MSG-001",
    Category.BAD_ENCODING: "VIBE-MSG-001",
    Category.BAD_VALUE: "VIBE-MSG-001",
}
#: The same for a frame the server sent (the live suites): rules that bind the sender, not the
#: receiver's SHOULDs (VIBE-FRAME-004/005/006, VIBE-MSG-006, VIBE-COMP-007 are what a server
#: does with what it receives).
SENT_BY_PART = {**FRAMING_BY_PART, "command-type": "VIBE-MSG-001", "bomb": "", "compressed-body": "VIBE-COMP-003"}
SENT_FRAMING = {**FRAMING, Category.LENGTH_TOO_SMALL: "VIBE-FRAME-001", Category.LENGTH_TOO_LARGE: "",
                Category.UNKNOWN_TYPE: "VIBE-MSG-001"}


def server_frame_requirement(error) -> str:
    """The rule a frame the server sent that does not decode breaks ("": a bound of the kit's
    own): target.Connection.breach_of."""
    requirement = SENT_BY_PART.get(error.part)
    return requirement if requirement is not None else SENT_FRAMING.get(error.category, "VIBE-FRAME-001")


#: How many passed-over requests are kept for a late answer.
LATE_LIMIT = 1024


@dataclass(slots=True)
class _Request:
    seq: int
    index: int
    time: float
    message: object


class VibeObserver(Observer):
    """Observer of one VibeMQ connection; ``profile`` as the session's (``document``,
    ``vibemq-1.8``, ``vibemq-1.0``)."""

    #: What this observer judges on the client's messages, by type name (``type_name``, as the
    #: pipeline's frames rows; conformance/clients/serve_check.py, ``exercised_requirements``). Derived
    #: from the C2S checks of this module: on every message, the version byte (VIBE-MSG-003,
    #: :meth:`frame`), compression without an agreement or with another algorithm
    #: (VIBE-CLIENT-001, :meth:`_compression`) and what :meth:`malformed` reports for a message
    #: that does not decode (:data:`FRAMING_BY_PART`, :data:`FRAMING`, its fallback
    #: VIBE-FRAME-001; this observer has no ``framing_requirements``, so they are listed under
    #: "*"); by type, the ``violate(..., C2S, ...)`` of :meth:`_client`: anything but Connect and
    #: Ping before Connect (VIBE-CONN-003, the server's types included: a client sending them
    #: breaks it too) and a queue command without a queue (VIBE-ERR-006, :data:`QUEUE_COMMANDS`).
    #: A rule is listed under a type when a message of that type may break it.
    client_rules = {
        "*": ("VIBE-MSG-003", "VIBE-CLIENT-001", "VIBE-FRAME-001", "VIBE-FRAME-003", "VIBE-FRAME-004",
              "VIBE-FRAME-005", "VIBE-FRAME-006", "VIBE-COMP-007", "VIBE-MSG-001", "VIBE-MSG-002",
              "VIBE-MSG-006", "VIBE-MSG-007"),
        "connect": (),
        "ping": (),
        "disconnect": ("VIBE-CONN-003",),
        "ack": ("VIBE-CONN-003",),
        "publish": ("VIBE-CONN-003", "VIBE-ERR-006"),
        "subscribe": ("VIBE-CONN-003", "VIBE-ERR-006"),
        "unsubscribe": ("VIBE-CONN-003", "VIBE-ERR-006"),
        "createQueue": ("VIBE-CONN-003", "VIBE-ERR-006"),
        "deleteQueue": ("VIBE-CONN-003", "VIBE-ERR-006"),
        "queueInfo": ("VIBE-CONN-003", "VIBE-ERR-006"),
        "listQueues": ("VIBE-CONN-003",),
        # the server's types, from a client
        "connectAck": ("VIBE-CONN-003",),
        "pong": ("VIBE-CONN-003",),
        "publishAck": ("VIBE-CONN-003",),
        "subscribeAck": ("VIBE-CONN-003",),
        "unsubscribeAck": ("VIBE-CONN-003",),
        "deliver": ("VIBE-CONN-003",),
        "error": ("VIBE-CONN-003",),
    }

    def __init__(self, profile: Optional[str] = None) -> None:
        super().__init__(profile)
        self.document = profile in (None, "document")
        self.ready = False
        self.pending: deque[_Request] = deque()
        self.connects = 0               # Connects among ``pending``
        #: Passed-over requests by id, oldest first (a late answer is still paired).
        self.late: OrderedDict[tuple[str, int], _Request] = OrderedDict()
        self._seq = 0
        #: Compression agreed for each side's frames (None: none agreed).
        self.agreed: Optional[int] = None
        self.subscribed: set[str] = set()
        #: Delivered (id, queue) -> the last deliveryAttempts seen (document profile) or 0.
        self.delivered: dict[tuple[str, Optional[str]], int] = {}
        self.delivered_ids: set[str] = set()
        #: Acks not yet known handled: (seq, the ids they may name).
        self.acks: deque[tuple[int, tuple[str, ...]]] = deque()
        #: Message ids acknowledged and handled.
        self.acked: set[str] = set()
        #: The order of a Disconnect handled while connected (the server must stop there).
        self.disconnect: Optional[int] = None
        self.blind: set[str] = set()

    # -- the capture reader's calls ------------------------------------------------------------

    def frame(self, direction, message, index, time) -> Optional[Exchange]:
        if message.version != PROTOCOL_VERSION:
            self.violate("VIBE-MSG-003", direction, index, f"version byte {message.version} (1)")
        if direction == C2S:
            self._client(message, index, time)
            return None
        self._compression(S2C, message, index)
        kind = message.type
        if kind == T.DELIVER:
            self._deliver(message, index)
            return None
        if kind == T.ERROR:
            if not message.error_code or not message.error_message:
                self.violate("VIBE-ERR-001", S2C, index, "an Error without errorCode or errorMessage")
            return self._answer(message, index, time)
        if kind in ANSWERED_BY:
            return self._answer(message, index, time)
        return None           # a client-to-server type from the server: no catalogue ID

    def malformed(self, direction, error, index, time) -> None:
        self.blind.add(direction)
        text = error.message
        if direction == S2C:
            requirement = server_frame_requirement(error)
        else:
            requirement = FRAMING_BY_PART.get(error.part)
            if requirement is None:
                requirement = FRAMING.get(error.category, "VIBE-FRAME-001")
        if requirement:
            self.violate(requirement, direction, index, f"{error.category}: {text}")

    # -- the client's messages -------------------------------------------------------------------

    def _client(self, message, index: int, time: float) -> None:
        kind = message.type
        self._compression(C2S, message, index)
        if not self.ready and kind not in BEFORE_CONNECT and not self.connects:
            # SPEC_NOTES: "before Connect only Connect and Ping are allowed" (a message
            # pipelined behind an unanswered Connect may be in time: not judged).
            self.violate("VIBE-CONN-003", C2S, index, f"{message.type_name} before Connect")
        if kind in QUEUE_COMMANDS and not message.queue:
            self.violate("VIBE-ERR-006", C2S, index, f"{message.type_name} without a queue")
        req = _Request(self._seq, index, time, message)
        self._seq += 1
        self.pending.append(req)
        self.connects += kind == T.CONNECT
        if kind == T.ACK:
            named = (message.header("messageId"), message.id)
            self.acks.append((req.seq, tuple(i for i in named if i in self.delivered_ids)))

    def _compression(self, direction: str, message, index: int) -> None:
        """"After the handshake, FrameWriter on both sides uses the negotiated algorithm"; no
        algorithm agreed: nothing compressed."""
        flag = message.compression
        if flag == Compression.NONE or flag == self.agreed:
            return
        if direction == S2C and message.type == T.CONNECT_ACK:
            return          # judged with the agreement it carries (_connect_ack)
        agreed = "none was agreed" if self.agreed is None else f"{Compression(self.agreed).name} was agreed"
        rule = ("VIBE-COMP-002" if self.agreed is None else "VIBE-COMP-003") if direction == S2C \
            else "VIBE-CLIENT-001"
        self.violate(rule, direction, index, f"a frame compressed with {Compression(flag).name}; {agreed}")

    # -- the server's answers --------------------------------------------------------------------

    def _find(self, answer) -> tuple[Optional[_Request], bool]:
        """The request ``answer`` answers, and whether it was still outstanding (else late)."""
        kind = answer.type
        fits = (lambda r: True) if kind == T.ERROR else (lambda r: r.message.type in ANSWERED_BY[kind])
        for req in self.pending:                    # the same id
            if req.message.id == answer.id and fits(req):
                return req, True
        late = next((r for r in self.late.values() if r.message.id == answer.id and fits(r)), None)
        if late is not None:
            return late, False
        for req in self.pending:                    # by order
            if kind == T.ERROR:
                if req.message.type not in SILENT or not self.ready:
                    return req, True
            elif fits(req):
                return req, True
        if kind != T.ERROR:
            # Another request with its id: the answer is of the wrong type.
            for req in self.pending:
                if req.message.id == answer.id:
                    return req, True
        return None, False

    def _answer(self, answer, index: int, time: float) -> Optional[Exchange]:
        req, outstanding = self._find(answer)
        if req is None:
            if answer.type != T.ERROR and C2S not in self.blind:
                self.violate(RULES[next(iter(ANSWERED_BY[answer.type]))], S2C, index,
                             f"{answer.type_name} (id {answer.id!r}) answers no outstanding request")
            return None
        if outstanding:
            while self.pending[0] is not req:       # handled before it, without an answer
                self._passed(self._pop(), index)
            self._pop()
        else:
            del self.late[(req.message.id, req.seq)]
        self._acks_handled(req.seq)
        self._judge(req, answer, index)
        return self.answered(req.index, index, req.message.type_name, time - req.time)

    def _pop(self) -> _Request:
        req = self.pending.popleft()
        self.connects -= req.message.type == T.CONNECT
        return req

    def _passed(self, req: _Request, index: int) -> None:
        kind = req.message.type
        if kind == T.DISCONNECT and self.ready:
            self.disconnect = req.seq if self.disconnect is None else self.disconnect
        elif kind not in SILENT or not self.ready:
            self.late[(req.message.id, req.seq)] = req
            if len(self.late) > LATE_LIMIT:
                self.late.popitem(last=False)

    def _acks_handled(self, seq: int) -> None:
        """Acks sent before a request the server answered were handled (in turn): their
        messages are settled, unless an Error answered them (then they are not here)."""
        while self.acks and self.acks[0][0] < seq:
            self.acked.update(self.acks.popleft()[1])

    def _judge(self, req: _Request, answer, index: int) -> None:
        r, kind = req.message, req.message.type
        if self.disconnect is not None and req.seq > self.disconnect:
            self.violate("VIBE-CONN-004", S2C, index, f"{answer.type_name} to {r.type_name} "
                         f"(#{req.index}), sent after Disconnect: the server must close")
        if kind == T.ACK and answer.type == T.ERROR:
            self.acks = deque(a for a in self.acks if a[0] != req.seq)
        if answer.type == T.ERROR:
            code = answer.error_code
            if not self.ready and kind not in BEFORE_CONNECT:
                if code not in ANY_TIME and code != ErrorCode.NOT_AUTHENTICATED:
                    self.violate("VIBE-CONN-003", S2C, index, f"Error {code} to {r.type_name} "
                                 "before Connect (NOT_AUTHENTICATED)")
            elif kind == T.PING and code not in ANY_TIME:
                self.violate("VIBE-PING-001", S2C, index, f"Error {code} to Ping")
            return
        expected = ANSWERS.get(kind)
        if expected != answer.type:
            rule = RULES.get(kind) or RULES[next(iter(ANSWERED_BY[answer.type]))]
            self.violate(rule, S2C, index, f"{answer.type_name} to {r.type_name} (#{req.index})")
            return
        if not self.ready and kind not in BEFORE_CONNECT:
            self.violate("VIBE-CONN-003", S2C, index, f"{answer.type_name} to {r.type_name} before "
                         "Connect (Error NOT_AUTHENTICATED)")
        if kind in QUEUE_COMMANDS and not r.queue:
            self.violate("VIBE-ERR-006", S2C, index, f"{answer.type_name} to {r.type_name} without "
                         "a queue (it must be refused)")
        if answer.type in SAME_ID and answer.id != r.id:
            self.violate(RULES[kind], S2C, index, f"{answer.type_name} with id {answer.id!r} to "
                         f"{r.type_name} {r.id!r}")
        if self.document:
            for rule, name, field in DOCUMENT_HEADERS.get(answer.type, ()):
                value = answer.header(name)
                if value is None or (field is not None and value != getattr(r, field)):
                    self.violate(rule, S2C, index, f"{answer.type_name} header {name}={value!r}")
        check = getattr(self, "_on_" + HANDLERS.get(kind, ""), None)
        if check is not None:
            check(r, answer, index)

    # -- per answer ------------------------------------------------------------------------------

    def _on_connect(self, request, answer, index: int) -> None:
        offered = [p.strip().lower() for p in (request.header("supported-compression") or "").split(",")
                   if p.strip()]
        name = answer.header("negotiated-compression")
        agreed = None
        if name is not None:
            agreed = COMPRESSION_BY_NAME.get(name.strip().lower())
            if agreed is None or name.strip().lower() not in offered:
                rule = "VIBE-COMP-001" if offered else "VIBE-COMP-002"
                self.violate(rule, S2C, index, f"negotiated-compression {name!r}; the client offered "
                             f"{', '.join(offered) or 'none'}")
        if answer.compression not in (Compression.NONE, agreed):
            self.violate("VIBE-COMP-002" if agreed is None else "VIBE-COMP-003", S2C, index,
                         f"ConnectAck compressed with {Compression(answer.compression).name}")
        self.ready = True
        self.agreed = agreed

    def _on_subscribe(self, request, answer, index: int) -> None:
        if request.queue:
            self.subscribed.add(request.queue)

    def _on_queue_info(self, request, answer, index: int) -> None:
        info = answer.payload
        if info is None and not self.document:
            return            # the real server answers an unknown queue without a payload
        missing = [f for f in QUEUE_INFO_FIELDS if not isinstance(info, dict) or f not in info]
        if missing:
            self.violate("VIBE-QUEUE-004", S2C, index, f"QueueInfo payload lacks {', '.join(missing)}")

    def _on_list_queues(self, request, answer, index: int) -> None:
        names = answer.payload
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            self.violate("VIBE-QUEUE-005", S2C, index, "ListQueues payload is not a list of queue names")

    # -- deliveries ------------------------------------------------------------------------------

    def _deliver(self, message, index: int) -> None:
        queue = message.queue
        if C2S not in self.blind and (not queue or queue not in self.subscribed
                                      and not any(r.message.type == T.SUBSCRIBE and r.message.queue == queue
                                                  for r in self.pending)):
            self.violate("VIBE-DEL-001", S2C, index, f"Deliver for queue {queue!r}, which this "
                         "connection did not subscribe to")
        if message.id in self.acked:
            self.violate("VIBE-ACK-001", S2C, index, f"message {message.id!r} delivered again after "
                         "its Ack was handled")
        key = (message.id, queue)
        attempts = 0
        if self.document:
            priority, count = message.header("priority"), message.header("deliveryAttempts")
            if priority not in PRIORITIES or not (count or "").isdigit() or int(count) < 1:
                self.violate("VIBE-DEL-002", S2C, index, f"Deliver headers priority={priority!r} "
                             f"deliveryAttempts={count!r}")
            elif key in self.delivered and int(count) <= self.delivered[key]:
                self.violate("VIBE-RETRY-001", S2C, index, f"redelivery of {message.id!r} with "
                             f"deliveryAttempts {count} (was {self.delivered[key]})")
            if (count or "").isdigit():
                attempts = int(count)
        self.delivered[key] = max(attempts, self.delivered.get(key, 0))
        self.delivered_ids.add(message.id)
