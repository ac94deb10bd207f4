"""The BlipMQ observer (blipmq-protocol.md; the real daemon's behaviour from SPEC_NOTES.md,
"BlipMQ"): both sides of a recorded conversation checked against the server's rules, sans-IO
(times are the capture's).

How it pairs answers with requests: the server handles one connection's frames in order and
writes its answers in order ("Backpressure & Batching": the read loop dispatches each frame;
BLIP-IO-001), and an answer carries its request's correlation id ("Frame Layout"). So an ACK,
NACK or PONG answers the oldest outstanding request with its correlation id (the first one the
answer suits, when a client reused an id), and a delivery (a server PUBLISH) answers an
outstanding POLL ("Server behavior when sending PUBLISH as delivery": a QoS1 delivery carries
its delivery tag, not the POLL's id). The requests before the one answered were handled
before it: those that got no answer got silence, which is a breach when the request needed an
answer. The phase a request was handled in (HELLO, AUTH, ready) is the one the answers so far
establish, as the session's own table says (``session.HANDLERS``/``TRANSITIONS``).

What it checks, with the catalogue's IDs (conformance/requirements/blipmq.py):

- **framing**: bad lengths (BLIP-FRAME-002/-003), unknown types (BLIP-FRAME-006), and a payload
  that does not fit its type's layout, by the type the decoder names (:data:`PAYLOAD_RULES`).
- **the client's order**: AUTH before HELLO (BLIP-AUTH-001), a second AUTH (BLIP-AUTH-002),
  anything but HELLO/AUTH before AUTH completed (BLIP-CLIENT-006, read from BLIP-AUTH-007:
  what the client may send after HELLO+AUTH). A frame pipelined behind an AUTH still unanswered is not judged.
- **the client's requests**: empty topics and QoS values outside {0,1} (BLIP-PUB-002/-003,
  BLIP-SUB-002/-003), subscription id 0 in ACK and POLL (BLIP-ACK-002, BLIP-POLL-002).
- **the server's answers** (:func:`expectation`: request and phase -> the answers allowed and
  the rule): HELLO (BLIP-HELLO-001/-002, second HELLO BLIP-HELLO-003), AUTH (BLIP-AUTH-001/
  -002/-004/-005), 401 before AUTH (BLIP-AUTH-006), PUBLISH (BLIP-PUB-002/-003/-004),
  SUBSCRIBE (BLIP-SUB-002/-003/-004), ACK (BLIP-ACK-002/-003), POLL (BLIP-POLL-002/-003), PING
  (BLIP-PING-001); NACK codes from the table (BLIP-NACK-002); an answer that matches no
  outstanding request, a second answer included (BLIP-FRAME-005; a delivery without a POLL:
  BLIP-PUB-007); a request with no answer although a later one was answered.
- **subscriptions and QoS**: each SUBSCRIBE gets its own id (BLIP-SUB-005); a delivery's qos is
  0 or 1 (BLIP-PUB-001) and 1 only on a QoS1 subscription (BLIP-PUB-010), its topic is the
  subscription's (BLIP-PUB-007); a QoS0 delivery carries the POLL's correlation id
  (BLIP-PUB-009); a QoS1 message acknowledged (and not refused) is not delivered again
  (BLIP-QOS1-004).

Not checked (passively undecidable, or no catalogue ID): a missing answer at the end of a
capture (it may just have ended); API keys (BLIP-AUTH-004/-005 beyond the answer's shape);
redelivery timing and retry counts (BLIP-QOS1-001/-002: the server's configuration); delivery
tags and publish order (BLIP-QOS1-003, BLIP-POLL-004: other connections publish and poll the
same subscriptions); whether the server closed after a stream error (it may do so after the
capture); NACK message texts (implementations word them differently); the type direction of
the "Frame Types" table (a server sending HELLO, a client sending NACK or PONG after AUTH): no
catalogue ID.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Optional

from ..core.errors import Category
from ..core.observer import C2S, S2C, Exchange, Observer
from .codec import PROTOCOL_VERSION, FrameType, NackCode
from .session import HANDLERS, TRANSITIONS, Phase

#: Stream errors ("Frame Layout", "Frame Types").
FRAMING = {
    Category.LENGTH_TOO_SMALL: "BLIP-FRAME-002",
    Category.LENGTH_TOO_LARGE: "BLIP-FRAME-003",
    Category.UNKNOWN_TYPE: "BLIP-FRAME-006",
}
#: Payload errors, by the frame type the decoder's message starts with ("Payload Formats").
PAYLOAD_RULES = {
    FrameType.HELLO: "BLIP-HELLO-004",
    FrameType.AUTH: "BLIP-AUTH-003",
    FrameType.PUBLISH: "BLIP-PUB-001",
    FrameType.SUBSCRIBE: "BLIP-SUB-001",
    FrameType.ACK: "BLIP-ACK-001",
    FrameType.NACK: "BLIP-NACK-001",
    FrameType.PING: "BLIP-PING-001",
    FrameType.PONG: "BLIP-PING-001",
    FrameType.POLL: "BLIP-POLL-001",
}
#: A frame from the server that does not decode, by category: the rule its sender broke. Not
#: FRAMING's lengths (BLIP-FRAME-002/003 bind the server as the receiver: it must close); a
#: type byte outside the table is the frame BLIP-FRAME-006 calls an error (it binds both).
SENT_BY_SERVER = {
    Category.LENGTH_TOO_SMALL: "BLIP-FRAME-004",      # "Must be >= 1 + 8 and <= 16 MiB"
    Category.LENGTH_TOO_LARGE: "BLIP-FRAME-004",
    Category.UNKNOWN_TYPE: "BLIP-FRAME-006",
}


def server_frame_requirement(error) -> str:
    """The rule a frame the server sent that does not decode breaks (the live suites'
    target.Connection.breach_of): its length's, else its payload format's by frame type."""
    category = Category(getattr(error.category, "value", error.category))
    if category in SENT_BY_SERVER:
        return SENT_BY_SERVER[category]
    word = error.message.split(" ", 1)[0]
    return PAYLOAD_RULES.get(FrameType.__members__.get(word), "BLIP-FRAME-001")


#: What the server sends ("Frame Types": Server -> Client or Both); the rest it never sends,
#: which has no catalogue ID, so such frames are left alone.
SERVER_TYPES = frozenset({FrameType.ACK, FrameType.NACK, FrameType.PONG, FrameType.PUBLISH})
#: "Error Codes".
NACK_CODES = frozenset(int(c) for c in NackCode)

#: Answer shapes an expectation lists: no frame, ACK with subscription id 0 (handshake) or a
#: new one (SUBSCRIBE), a NACK with its code, a PONG, a delivery.
SILENCE, ACK_ZERO, ACK_NEW, PONG, DELIVERY = "no answer", "ACK(0)", "ACK(new id)", "PONG", "PUBLISH"


def nack(code: int) -> str:
    return f"NACK {code}"


def shape(frame) -> str:
    """The answer shape of a server frame."""
    t = frame.type
    if t is FrameType.ACK:
        return ACK_ZERO if frame.subscription_id == 0 else ACK_NEW
    if t is FrameType.NACK:
        return nack(frame.code)
    return PONG if t is FrameType.PONG else DELIVERY


@dataclass(frozen=True, slots=True)
class Expectation:
    allowed: frozenset       # answer shapes the document allows
    rule: str                # the requirement an answer outside ``allowed`` breaks
    rule_if_nack: str = ""   # ... when that answer is a NACK or silence, if another rule


def _expect(rule: str, *allowed: str, rule_if_nack: str = "") -> Expectation:
    return Expectation(frozenset(allowed), rule, rule_if_nack)


def expectation(phase: Phase, req) -> Optional[Expectation]:
    """The answers the document allows to ``req`` handled in ``phase``; None: not judged (a
    client NACK or PONG after AUTH: the document says nothing; the real server ignores it)."""
    t = req.type
    if HANDLERS.get((phase, t)) is None and phase is not Phase.READY:
        # "Non-HELLO/AUTH frames before auth complete yield NACK(401)" (PING included).
        return _expect("BLIP-AUTH-006", nack(401))
    if t is FrameType.HELLO:
        if phase is not Phase.AWAIT_HELLO:
            return _expect("BLIP-HELLO-003", nack(400))           # SPEC_NOTES
        if req.protocol_version == PROTOCOL_VERSION:
            return _expect("BLIP-HELLO-001", ACK_ZERO)
        return _expect("BLIP-HELLO-002", nack(426))
    if t is FrameType.AUTH:
        if phase is Phase.AWAIT_HELLO:
            return _expect("BLIP-AUTH-001", nack(400))
        if phase is Phase.READY:
            return _expect("BLIP-AUTH-002", nack(400))
        # A well-formed key is either valid (ACK) or not (401); which, the observer cannot know.
        return _expect("BLIP-AUTH-005", ACK_ZERO, nack(401), rule_if_nack="BLIP-AUTH-004")
    if t in (FrameType.PUBLISH, FrameType.SUBSCRIBE):
        pub = t is FrameType.PUBLISH
        if not req.topic:
            return _expect("BLIP-PUB-002" if pub else "BLIP-SUB-002", nack(400))
        if req.qos not in (0, 1):
            return _expect("BLIP-PUB-003" if pub else "BLIP-SUB-003", nack(400))
        if not pub:
            return _expect("BLIP-SUB-004", ACK_NEW)
        # "On success: No response frame"; a QoS1 publish may fail in the WAL with 500.
        if req.qos == 1:
            return _expect("BLIP-PUB-004", SILENCE, nack(500), rule_if_nack="BLIP-PUB-004")
        return _expect("BLIP-PUB-004", SILENCE)
    if t is FrameType.ACK:
        if req.subscription_id == 0:
            return _expect("BLIP-ACK-002", nack(400))
        return _expect("BLIP-ACK-003", SILENCE, nack(404))
    if t is FrameType.POLL:
        if req.subscription_id == 0:
            return _expect("BLIP-POLL-002", nack(400))
        # "If no message available: Returns no frame"; 404: an unknown subscription ("Error
        # Codes": unknown resource, e.g. an expired subscription).
        return _expect("BLIP-POLL-003", SILENCE, DELIVERY, nack(404))
    if t is FrameType.PING:
        return _expect("BLIP-PING-001", PONG)
    return None


@dataclass(slots=True)
class _Request:
    seq: int                 # order among the client's frames
    index: int
    time: float
    frame: object


class _Outstanding:
    """The client's requests not yet known to be handled, in order, with lookups by
    correlation id and of POLLs; requests leave from the front only (answers come in order),
    so every operation is cheap however long the conversation."""

    def __init__(self) -> None:
        self.queue: deque[_Request] = deque()
        self.by_cid: dict[int, deque[_Request]] = {}
        self.polls: deque[_Request] = deque()
        self.counts = {FrameType.HELLO: 0, FrameType.AUTH: 0}
        self._seq = 0

    def add(self, index: int, time: float, frame) -> None:
        req = _Request(self._seq, index, time, frame)
        self._seq += 1
        self.queue.append(req)
        self.by_cid.setdefault(frame.correlation_id, deque()).append(req)
        if frame.type is FrameType.POLL:
            self.polls.append(req)
        elif frame.type in self.counts:
            self.counts[frame.type] += 1

    def has(self, frame_type: FrameType) -> bool:
        return self.counts[frame_type] > 0

    def same_cid(self, cid: int):
        return self.by_cid.get(cid, ())

    def pop_through(self, last: _Request) -> list[_Request]:
        """Remove and return every request up to ``last`` (included), in order."""
        out = []
        while self.queue and self.queue[0].seq <= last.seq:
            req = self.queue.popleft()
            out.append(req)
            same = self.by_cid[req.frame.correlation_id]
            same.popleft()
            if not same:
                del self.by_cid[req.frame.correlation_id]
            if req.frame.type is FrameType.POLL:
                self.polls.popleft()
            elif req.frame.type in self.counts:
                self.counts[req.frame.type] -= 1
        return out


class BlipObserver(Observer):
    """Observer of one BlipMQ connection (profiles ``document`` and ``blipmq-daemon`` read the
    wire the same way)."""

    framing_requirements = {str(k): v for k, v in FRAMING.items()}

    #: What this observer judges on the client's frames, by frame type (conformance/
    #: clients/serve_check.py, ``exercised_requirements``; the :data:`FRAMING` rules come from
    #: ``framing_requirements``). Derived from the C2S checks of this module: the payload rule
    #: :meth:`malformed` reports for a frame of that type that does not decode
    #: (:data:`PAYLOAD_RULES`; its fallback BLIP-FRAME-001 for any frame), and every
    #: ``violate(..., C2S, ...)`` of :meth:`_client` (AUTH's order, anything but HELLO/AUTH
    #: before HELLO+AUTH, empty topics and QoS, subscription id 0). A rule is listed under a
    #: type when a frame of that type may break it, not when every such frame does (AUTH-001
    #: only before HELLO, AUTH-002 only after AUTH).
    client_rules = {
        "*": ("BLIP-FRAME-001",),
        "HELLO": ("BLIP-HELLO-004",),
        "AUTH": ("BLIP-AUTH-003", "BLIP-AUTH-001", "BLIP-AUTH-002"),
        "PUBLISH": ("BLIP-PUB-001", "BLIP-CLIENT-006", "BLIP-PUB-002", "BLIP-PUB-003"),
        "SUBSCRIBE": ("BLIP-SUB-001", "BLIP-CLIENT-006", "BLIP-SUB-002", "BLIP-SUB-003"),
        "ACK": ("BLIP-ACK-001", "BLIP-CLIENT-006", "BLIP-ACK-002"),
        "NACK": ("BLIP-NACK-001", "BLIP-CLIENT-006"),
        "PING": ("BLIP-PING-001", "BLIP-CLIENT-006"),
        "PONG": ("BLIP-PING-001", "BLIP-CLIENT-006"),
        "POLL": ("BLIP-POLL-001", "BLIP-CLIENT-006", "BLIP-POLL-002"),
    }

    def __init__(self, profile: Optional[str] = None) -> None:
        super().__init__(profile)
        self.phase = Phase.AWAIT_HELLO
        self.pending = _Outstanding()
        #: subscription id -> (topic, qos), for the subscriptions created on this connection.
        self.subscriptions: dict[int, tuple[str, int]] = {}
        #: (subscription id, delivery tag) acknowledged without a refusal.
        self.settled: set[tuple[int, int]] = set()
        #: Directions no longer decoded (the capture reader stops at a decode error).
        self.blind: set[str] = set()

    # -- the capture reader's calls ------------------------------------------------------------

    def frame(self, direction, frame, index, time) -> Optional[Exchange]:
        if direction == C2S:
            self._client(frame, index)
            self.pending.add(index, time, frame)
            return None
        if frame.type not in SERVER_TYPES:
            return None
        return self._answer(frame, index, time)

    def malformed(self, direction, error, index, time) -> None:
        self.blind.add(direction)
        if direction == S2C:
            requirement = server_frame_requirement(error)
            if requirement:
                self.violate(requirement, direction, index, f"{error.category}: {error.message}")
            return
        requirement = FRAMING.get(error.category)
        if requirement is None:
            # Payload errors name the frame type first ("HELLO payload must be 2 bytes").
            word = error.message.split(" ", 1)[0]
            requirement = PAYLOAD_RULES.get(FrameType.__members__.get(word), "BLIP-FRAME-001")
        self.violate(requirement, direction, index, f"{error.category}: {error.message}")

    def answered_request(self, frame, skip: frozenset = frozenset()) -> Optional[_Request]:
        """The outstanding client request the server frame ``frame`` would answer, or None,
        without judging or changing anything; requests whose order (``seq``) is in ``skip`` are
        left out. A scripted scenario that answers a request itself, in the server's stead
        (conformance/clients/scripted/blipmq.py), asks which of the other requests a server frame
        answers, and puts its own answer before the frame when that request came later."""
        if frame.type not in SERVER_TYPES:
            return None
        if frame.type is FrameType.PUBLISH:
            return self._poll_for(frame, skip)[0]
        return self._request_for(frame, shape(frame), skip)

    def outstanding(self) -> list[_Request]:
        """The client's requests not yet known to be handled, oldest first."""
        return list(self.pending.queue)

    # -- the client's frames ---------------------------------------------------------------------

    def _client(self, frame, index: int) -> None:
        t = frame.type
        if t is FrameType.AUTH:
            if self.phase is Phase.AWAIT_HELLO and not self.pending.has(FrameType.HELLO):
                self.violate("BLIP-AUTH-001", C2S, index, "AUTH before HELLO")
            elif self.phase is Phase.READY:
                self.violate("BLIP-AUTH-002", C2S, index, "AUTH after authentication completed")
        elif t is not FrameType.HELLO and self.phase is not Phase.READY \
                and not self.pending.has(FrameType.AUTH):
            # "After successful HELLO+AUTH: Client may send PUBLISH, SUBSCRIBE, POLL, and PING"
            # (a frame pipelined behind an unanswered AUTH may be in time: not judged).
            self.violate("BLIP-CLIENT-006", C2S, index, f"{t.name} before HELLO+AUTH completed")
        if t in (FrameType.PUBLISH, FrameType.SUBSCRIBE):
            pub = t is FrameType.PUBLISH
            if not frame.topic:
                self.violate("BLIP-PUB-002" if pub else "BLIP-SUB-002", C2S, index,
                             f"{t.name} with an empty topic")
            if frame.qos not in (0, 1):
                self.violate("BLIP-PUB-003" if pub else "BLIP-SUB-003", C2S, index,
                             f"{t.name} with qos {frame.qos} (0 or 1)")
        elif t in (FrameType.ACK, FrameType.POLL) and frame.subscription_id == 0:
            self.violate("BLIP-ACK-002" if t is FrameType.ACK else "BLIP-POLL-002", C2S, index,
                         f"{t.name} with subscription_id 0")

    # -- the server's frames ---------------------------------------------------------------------

    def _answer(self, frame, index: int, time: float) -> Optional[Exchange]:
        answer = shape(frame)
        if frame.type is FrameType.NACK and frame.code not in NACK_CODES:
            self.violate("BLIP-NACK-002", S2C, index,
                         f"NACK code {frame.code} is not in the Error Codes table")
        certain = True
        if frame.type is FrameType.PUBLISH:
            req, certain = self._poll_for(frame)
        else:
            req = self._request_for(frame, answer)
        if req is None:
            if C2S not in self.blind:           # else it may answer a frame not decoded
                if frame.type is FrameType.PUBLISH:
                    self.violate("BLIP-PUB-007", S2C, index, "a delivery (PUBLISH) with no POLL outstanding")
                else:
                    self.violate("BLIP-FRAME-005", S2C, index, f"{frame.type.name} with correlation_id "
                                 f"{frame.correlation_id}, which no outstanding request has")
            return None
        cid_polled = any(r.frame.correlation_id == frame.correlation_id for r in self.pending.polls)
        handled = self.pending.pop_through(req)
        for earlier in handled[:-1]:            # handled before the one answered: silence
            self._judge(earlier, SILENCE, index)
        self._judge(req, answer, index, frame)
        if frame.type is FrameType.PUBLISH:
            self._delivery(req.frame, frame, index, certain, cid_polled)
        return self.answered(req.index, index, req.frame.type.name, time - req.time)

    def _request_for(self, frame, answer: str, skip: frozenset = frozenset()) -> Optional[_Request]:
        """The outstanding request an ACK/NACK/PONG answers: same correlation id, the first one
        the answer suits, else the first one the document sets no answer for (a client's NACK
        or PONG), else the first one (whose answer is then wrong)."""
        same = self.pending.same_cid(frame.correlation_id)
        if skip:
            same = [r for r in same if r.seq not in skip]
        unjudged = None
        for req in same:
            expected = expectation(self.phase, req.frame)
            if expected is None:
                unjudged = unjudged or req
            elif answer in expected.allowed:
                return req
        if unjudged is not None:
            return unjudged
        if same and C2S not in self.blind:
            return same[0]
        return None

    def _poll_for(self, frame, skip: frozenset = frozenset()) -> tuple[Optional[_Request], bool]:
        """The outstanding POLL a delivery answers: one whose subscription (when known) has the
        delivery's topic, for QoS0 preferably one with the delivery's correlation id; and
        whether that is certain (every such POLL names the same subscription)."""
        polls = self.pending.polls
        if skip:
            polls = [r for r in polls if r.seq not in skip]
        if not polls:
            return None, False
        fitting = [r for r in polls if self._topic_of(r.frame) in (None, frame.topic)]
        if not fitting:     # every POLL's subscription has another topic: the delivery is wrong
            return (polls[0], True) if C2S not in self.blind else (None, False)
        if frame.qos == 0:
            fitting = [r for r in fitting if r.frame.correlation_id == frame.correlation_id] or fitting
        return fitting[0], len({r.frame.subscription_id for r in fitting}) == 1

    def _topic_of(self, poll) -> Optional[str]:
        sub = self.subscriptions.get(poll.subscription_id)
        return None if sub is None else sub[0]

    def _judge(self, req: _Request, answer: str, index: int, frame=None) -> None:
        """Check ``answer`` (a shape, or silence) to ``req`` against the document; keep the
        phase, the subscriptions and the settled deliveries up to date."""
        r = req.frame
        expected = expectation(self.phase, r)
        if expected is not None and answer not in expected.allowed:
            as_nack = answer == SILENCE or answer.startswith("NACK")
            rule = expected.rule_if_nack if expected.rule_if_nack and as_nack else expected.rule
            allowed = " or ".join(sorted(expected.allowed))
            if answer == SILENCE:
                self.violate(rule, S2C, req.index, f"{r.type.name} (#{req.index}) got no answer "
                             f"(#{index} answers a later request); expected {allowed}")
            else:
                self.violate(rule, S2C, index, f"{answer} to {r.type.name} (#{req.index}); "
                             f"expected {allowed}")
        if answer == ACK_ZERO and self.phase is not Phase.READY:
            step = {FrameType.HELLO: "hello", FrameType.AUTH: "auth"}.get(r.type)
            self.phase = TRANSITIONS.get((self.phase, step), self.phase)
        elif answer == ACK_NEW and r.type is FrameType.SUBSCRIBE and self.phase is Phase.READY:
            if frame.subscription_id in self.subscriptions:
                # "Creates a subscription and returns ACK(subscription_id = new_id)".
                self.violate("BLIP-SUB-005", S2C, index, f"subscription id {frame.subscription_id} "
                             "was already given to an earlier SUBSCRIBE")
            self.subscriptions[frame.subscription_id] = (r.topic, r.qos)
        elif answer == SILENCE and r.type is FrameType.ACK and self.phase is Phase.READY \
                and r.subscription_id:
            # Handled without a NACK: acknowledged ("Removes message from inflight tracking").
            self.settled.add((r.subscription_id, r.correlation_id))

    def _delivery(self, poll, frame, index: int, certain: bool, cid_polled: bool) -> None:
        if self.phase is not Phase.READY or poll.type is not FrameType.POLL:
            return
        if frame.qos not in (0, 1):
            self.violate("BLIP-PUB-001", S2C, index, f"a delivery with qos {frame.qos} (0 or 1)")
            return
        if frame.qos == 0 and not cid_polled and C2S not in self.blind:
            # "For QoS0: usually matches the POLL correlation id."
            self.violate("BLIP-PUB-009", S2C, index, f"a QoS0 delivery with correlation_id "
                         f"{frame.correlation_id}, which no outstanding POLL has")
        sub = self.subscriptions.get(poll.subscription_id)
        if not certain or sub is None:
            return
        topic, qos = sub
        if frame.topic != topic:
            self.violate("BLIP-PUB-007", S2C, index, f"a delivery of topic {frame.topic!r} to a POLL "
                         f"of subscription {poll.subscription_id} (topic {topic!r})")
        if frame.qos == 1 and qos == 0:
            # SPEC_NOTES: "Effective QoS of a delivery = 1 only if both subscription and message
            # are QoS 1".
            self.violate("BLIP-PUB-010", S2C, index, f"a QoS1 delivery on QoS0 subscription "
                         f"{poll.subscription_id}")
        if frame.qos == 1 and (poll.subscription_id, frame.correlation_id) in self.settled:
            self.violate("BLIP-QOS1-004", S2C, index, f"delivery tag {frame.correlation_id} of "
                         f"subscription {poll.subscription_id} delivered again after its ACK")
