"""A hypothesis state machine for invocation and stream lifecycles on one SignalR connection,
run against any hub through a driver.

The model is what the document requires of a Callee ("Invocations", "Streaming", "Completion
and results", "Non-Blocking Invocations"): one Completion per blocking call with its result,
void or error; nothing for a non-blocking call; each stream item in its own StreamItem, in
order, then the end; client streams (v1) collecting items until their Completion; a stream started with an id
still in use refused (v1) while a finished one may be reused. Every step sends its messages followed
by an Echo barrier and receives everything up to the barrier's Completion, so "no answer" is
proven, not waited for (the hub answers in order, as today's servers do with one invocation at
a time). :class:`SessionDriver` runs the reference :class:`HubSession` in memory;
:class:`WireDriver` speaks to a target over a suite connection.

Uploads (client streams) travel in a Bundle; no rule filters.

Coverage: :data:`MATRIX` (``v1``) and :data:`DRAFT_MATRIX` are every (phase x client message
type) pair; each message a rule sends is counted in ``HubMachine.reached`` under the phase it
was sent in (the Echo barriers are not). Messages before the handshake, and those that end the
connection (Close, a malformed record, a second handshake; an unknown type in the draft), are
sent on *probes*: a fresh connection the driver opens (past the handshake, for ``open``) and
drops (``driver.probe``).
"""
from __future__ import annotations

import itertools
import sys
from collections import Counter

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, initialize, rule

from wirecheck.conformance.report.verdicts import Breach
from wirecheck.reference_impl.signalr import codec
from wirecheck.reference_impl.signalr.messages import (Ack, CancelInvocation, Close, Completion,
                                             HandshakeRequest, HandshakeResponse, Invocation, Ping,
                                             Sequence, StreamCompletion, StreamInvocation, StreamItem)
from wirecheck.reference_impl.signalr.session import HubConfig, HubSession

from .state_matrix import MALFORMED, UNKNOWN, Matrix, excluding, probe_answers

TEXT = st.text(max_size=12)
SMALL = st.integers(-1000, 1000)
VALUES = st.recursive(st.none() | st.booleans() | SMALL | TEXT,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                      max_leaves=6)


AWAIT_HANDSHAKE, OPEN = "await-handshake", "open"
HANDSHAKE = "HandshakeRequest"
_V1_TYPES = ("Invocation", "StreamInvocation", "StreamItem", "Completion", "CancelInvocation",
             "Ping", "Close", "Ack", "Sequence")
MATRIX = Matrix("signalr", (AWAIT_HANDSHAKE, OPEN), (HANDSHAKE,) + _V1_TYPES + (UNKNOWN, MALFORMED))
#: The draft document: types 1-5 (its client sends no StreamItem or Completion: it has no
#: client-to-server streams, and StreamCompletion is server-to-client).
DRAFT_MATRIX = Matrix(
    "signalr (draft)", (AWAIT_HANDSHAKE, OPEN), (HANDSHAKE,) + _V1_TYPES + (UNKNOWN, MALFORMED),
    {**excluding((AWAIT_HANDSHAKE, OPEN), ("StreamInvocation", "Ping", "Close", "Ack", "Sequence"),
                 "not a message of the draft (types 6-9 and StreamInvocation are v1, SPEC_NOTES.md)"),
     **excluding((AWAIT_HANDSHAKE, OPEN), ("StreamItem", "Completion"),
                 "the draft has no client-to-server streams: its client sends neither")})
# Not a state of the matrices: "closed" (after a Close, a failed handshake or a protocol error
# the server has closed the connection; nothing sent afterwards is read).
PROBE_KINDS = (HANDSHAKE,) + _V1_TYPES + (UNKNOWN, MALFORMED)
#: Before the handshake the connection speaks JSON text records whatever the hub protocol.
_SAMPLES = {
    "Invocation": Invocation("Echo", ["x"], "probe-1"),
    "StreamInvocation": StreamInvocation("probe-1", "Counter", [1, 0]),
    "StreamItem": StreamItem("probe-1", 1), "Completion": Completion("probe-1"),
    "CancelInvocation": CancelInvocation("probe-1"), "Ping": Ping(), "Close": Close(),
    "Ack": Ack(1), "Sequence": Sequence(1)}
#: A type number no message has, and a record that is no message, per encoding.
UNKNOWN_RECORDS = {"json": b'{"type":99}\x1e', "messagepack": b"\x02\x91\x63"}
MALFORMED_RECORDS = {"json": b"{not json\x1e", "messagepack": b"\x01\xc1"}


def matrix_for(profile: str, encoding: str) -> Matrix:
    """The matrix of one configuration of the machine."""
    base = DRAFT_MATRIX if profile == "draft" else MATRIX
    if encoding != "messagepack":
        return base
    return Matrix(base.protocol + " messagepack", base.states, base.frames, {
        **base.excluded, (OPEN, HANDSHAKE):
            "a JSON handshake record read as MessagePack starts with a VarInt length of 123 ('{'): "
            "the server waits for the rest, there is nothing to observe"})


def sample(kind: str, encoding: str, profile: str) -> bytes:
    """The bytes of one message of ``kind`` in ``encoding``."""
    if kind == HANDSHAKE:
        return codec.encode(HandshakeRequest(encoding, None if profile == "draft" else 1))
    if kind == UNKNOWN:
        return UNKNOWN_RECORDS[encoding]
    if kind == MALFORMED:
        return MALFORMED_RECORDS[encoding]
    return codec.encode(_SAMPLES[kind], encoding, "v1")


def split_at_barrier(answers: list, barrier_id: str, token: str):
    for i, message in enumerate(answers):
        if isinstance(message, Completion) and message.invocation_id == barrier_id:
            assert message.result == token, f"barrier answered {message!r}"
            assert i == len(answers) - 1, f"messages after the barrier's answer: {answers[i + 1:]}"
            return answers[:i]
    raise AssertionError(f"no answer to the barrier {barrier_id!r} in {answers}")


class SessionDriver:
    """The reference session in memory; its clock moves only when the machine says so."""

    def __init__(self, profile: str = "v1", encoding: str = "json") -> None:
        self.profile, self.encoding = profile, encoding
        self.session = HubSession(HubConfig(profile=profile))
        self.decoder = codec.Decoder(origin="server", protocol=encoding, profile=profile)
        self.now = 1000.0
        self._barriers = itertools.count()
        out = self._feed(codec.encode(HandshakeRequest(encoding, None if profile == "draft" else 1)))
        if profile != "draft":
            assert out == [HandshakeResponse()], out

    @property
    def closed(self) -> bool:
        return self.session.closed

    def _feed(self, data: bytes) -> list:
        out = []
        for record in self.session.receive(data, self.now):
            out += self.decoder.feed(record)
        return out

    def exchange(self, messages: list) -> list:
        token = f"b{next(self._barriers)}"
        barrier = Invocation("Echo", [token], f"barrier-{token}")
        wire = b"".join(m if isinstance(m, bytes) else codec.encode(m, self.encoding, self.profile)
                        for m in messages + [barrier])
        answers = [m for m in self._feed(wire) if not isinstance(m, Ping)]
        return split_at_barrier(answers, barrier.invocation_id, token)

    def probe(self, handshake: bool, wire: bytes) -> tuple[list, bool]:
        """A fresh session, past the handshake with ``handshake``: ``wire`` (then, past the
        handshake, an Echo barrier); (the answers before the barrier's, closed)."""
        session = HubSession(HubConfig(profile=self.profile))
        decoder = codec.Decoder(origin="server", protocol=self.encoding, profile=self.profile)

        def feed(data: bytes) -> list:
            return [m for out in session.receive(data, self.now) for m in decoder.feed(out)]
        try:
            token = f"p{next(self._barriers)}"
            barrier = Invocation("Echo", [token], f"barrier-{token}")
            if handshake:
                feed(sample(HANDSHAKE, self.encoding, self.profile))
                wire += codec.encode(barrier, self.encoding, self.profile)
            answers = [m for m in feed(wire) if not isinstance(m, Ping)]
            if session.closed or not handshake:
                return answers, session.closed
            return split_at_barrier(answers, barrier.invocation_id, token), False
        finally:
            session.connection_lost()


class WireDriver:
    """A target over one suite connection (past the handshake); ``sig`` is the suite's helper."""

    #: The document does not say that a server runs invocations concurrently: over the wire no
    #: call waits on another that is still open (HubMachine.interleave).
    concurrent = False

    def __init__(self, sig, conn, max_answers: int = 64) -> None:
        self.sig, self.conn = sig, conn
        self.client_streams = sig.has("client_streams")
        self.profile, self.encoding = sig.reading, sig.encoding
        self.max_answers = max_answers
        self._barriers = itertools.count()

    @property
    def closed(self) -> bool:
        return self.conn.closed_by_peer

    def exchange(self, messages: list) -> list:
        from wirecheck.conformance.target.connection import TargetError
        token = f"b{next(self._barriers)}-{self.sig.new_id()}"
        barrier = Invocation("Echo", [token], f"barrier-{token}")
        self.conn.send(*messages, barrier)
        answers = []
        while True:
            message = self.sig.recv(self.conn, f"answers, then the barrier {barrier.invocation_id}")
            answers.append(message)
            if isinstance(message, Completion) and message.invocation_id == barrier.invocation_id:
                return split_at_barrier(answers, barrier.invocation_id, token)
            if len(answers) > len(messages) + self.max_answers:
                raise TargetError(f"{len(answers)} answers to {len(messages)} messages and no barrier")

    def probe(self, handshake: bool, wire: bytes) -> tuple[list, bool]:
        """As :meth:`SessionDriver.probe`, on a new connection. Before the handshake there is
        no barrier: the machine probes there only what must close the connection."""
        conn = self.sig.connect(name="probe") if handshake else self.sig.open(name="probe")
        token = f"p{next(self._barriers)}-{self.sig.new_id()}"
        barrier = Invocation("Echo", [token], f"barrier-{token}")
        try:
            conn.send(wire, *([barrier] if handshake else []))
            answers, answer = probe_answers(
                lambda: self.sig.recv(conn, "the close, or answers then the barrier"),
                lambda m: isinstance(m, Completion) and m.invocation_id == barrier.invocation_id,
                self.max_answers)
            if answer is None:
                return answers, True
            return split_at_barrier(answers + [answer], barrier.invocation_id, token), False
        finally:
            conn.close()


def _any_error(message):
    if isinstance(message, (Completion, StreamCompletion)) and message.error:
        return type(message)(**{**{f: getattr(message, f) for f in message.__slots__}, "error": "<error>"})
    return message


def broken_rule(sent: list, got: list, want: list) -> str | None:
    """The rule a difference between the answers and the model shows whatever the step was:
    an answer under an id none of ``sent`` carried and none expected (the Callee "is expected
    to use the same string in all response messages", SIGR-INV-001), or StreamItems where a
    single result was due (SIGR-INV-003); else None."""
    if any(isinstance(m, Invocation) and (m.invocation_id is None or getattr(m, "nonblocking", False))
           for m in sent):
        return None                 # whatever answers a non-blocking call breaks the step's rule
    ids = {getattr(m, "invocation_id", None) for m in [*sent, *want]}
    ids |= {s for m in sent for s in (getattr(m, "stream_ids", None) or ())}
    if any(getattr(m, "invocation_id", None) not in ids | {None} for m in got):
        return "SIGR-INV-001"
    singles = {m.invocation_id for m in want if isinstance(m, Completion)} - \
        {m.invocation_id for m in want if isinstance(m, StreamItem)}
    if any(isinstance(m, StreamItem) and m.invocation_id in singles for m in got):
        return "SIGR-INV-003"
    return None


class HubMachine(RuleBasedStateMachine):
    """Subclasses (or the wire suite) provide ``make_driver()``."""

    uploads = Bundle("uploads")

    def make_driver(self):
        return SessionDriver()

    def __init__(self, driver=None) -> None:
        super().__init__()
        self.driver = driver if driver is not None else self.make_driver()
        self.draft = self.driver.profile == "draft"
        # whether the hub may match a Target without case (the profile's target_case_ignored)
        sig = getattr(self.driver, "sig", None)
        self.case_ignored = sig.has("target_case_ignored") if sig is not None else not self.draft
        self._ids = itertools.count(1)
        self.remembered = None
        self.finished: list[str] = []           # ids whose Completion came (reusable in v1)
        self.open_uploads: dict[str, list] = {}  # stream id -> items
        # Client-to-server streams where the target has them (v1; the profile's client_streams),
        # and whether other calls may run while one is open: the document does not say that a
        # server runs invocations concurrently, so over the wire an upload goes whole (the
        # in-memory model of the reference hub, which does, also interleaves them).
        self.client_streams = not self.draft and getattr(self.driver, "client_streams", True)
        self.interleave = self.client_streams and getattr(self.driver, "concurrent", True)

    def new_id(self) -> str:
        return f"m{next(self._ids)}"

    #: Also check the SHOULD-level v1 rules (SPEC_NOTES.md): Ack, Sequence and unknown types
    #: ignored (SIGR-V1-004, -006), a Close with the error before a protocol error's close
    #: (SIGR-V1-005). Without it those are not sent, and the Close is optional.
    should = True

    #: Compare error texts exactly (the reference hub's, ASP.NET Core's wording); a target under
    #: test only has to send *an* error where one is due.
    exact_errors = True

    #: (phase, message type) -> messages sent (see :data:`MATRIX`); a subclass may have its own.
    reached: Counter = Counter()

    def expect(self, sent: list, want: list, kind: str | None = None, rule: str | None = None) -> None:
        """Send ``sent``; the answers must be ``want``. A difference is a :class:`Breach` of the
        rule it shows (:func:`broken_rule`: an answer under another id SIGR-INV-001, StreamItems
        before a single result SIGR-INV-003), else of ``rule``, the one the step checks (None:
        the run's requirements, all of them)."""
        for m in sent:
            self.reached[(OPEN, kind or type(m).__name__)] += 1
        got = self.driver.exchange(sent)
        if not self.exact_errors:
            got, want = [_any_error(m) for m in got], [_any_error(m) for m in want]
        if got != want:
            text = f"sent {sent!r}\n  got {got!r}\n want {want!r}"
            broken = broken_rule(sent, got, want) or rule
            if broken is None:
                raise AssertionError(text)
            raise Breach(text, broken)

    # -- single results --------------------------------------------------------------------

    @initialize()
    def start(self) -> None:
        """The driver's connection is past the handshake (``{}`` checked, v1)."""
        self.reached[(AWAIT_HANDSHAKE, HANDSHAKE)] += 1
        assert not self.driver.closed

    @rule(text=TEXT)
    def echo(self, text):
        iid = self.new_id()
        self.expect([Invocation("Echo", [text], iid)], [Completion.with_result(iid, text)], rule="SIGR-INV-012")
        self.finished.append(iid)

    @rule(x=SMALL, y=SMALL)
    def add(self, x, y):
        iid = self.new_id()
        self.expect([Invocation("Add", [x, y], iid)], [Completion.with_result(iid, x + y)], rule="SIGR-INV-012")
        self.finished.append(iid)

    @rule(n=st.integers(0, 4))
    def batched(self, n):
        iid = self.new_id()
        self.expect([Invocation("Batched", [n], iid)], [Completion.with_result(iid, list(range(n)))],
                    rule="SIGR-INV-006")

    @rule()
    def nothing(self):
        iid = self.new_id()
        self.expect([Invocation("Nothing", [], iid)], [Completion(iid)], rule="SIGR-INV-004")

    @rule(text=TEXT)
    def fail(self, text):
        iid = self.new_id()
        self.expect([Invocation("Fail", [text], iid)], [Completion.with_error(iid, text)], rule="SIGR-INV-005")

    @rule(value=VALUES)
    def remember(self, value):
        call = (Invocation("Remember", [value], self.new_id(), nonblocking=True) if self.draft
                else Invocation("Remember", [value]))
        self.expect([call], [], rule="SIGR-INV-007")
        self.remembered = value

    @rule()
    def recall(self):
        iid = self.new_id()
        self.expect([Invocation("Recall", [], iid)], [Completion.with_result(iid, self.remembered)],
                    rule="SIGR-INV-012")

    @rule(name=st.sampled_from(["echo", "NoSuch", "add"]))
    def unknown_method(self, name):
        if self.case_ignored and name != "NoSuch":
            name = "No" + name          # v1 may dispatch "echo" to Echo (SIGR-INV-002 is read so)
        iid = self.new_id()
        self.expect([Invocation(name, ["x"], iid)], [Completion.with_error(iid, f"Unknown hub method '{name}'")],
                    rule="SIGR-INV-005")

    # -- streams ---------------------------------------------------------------------------

    @rule(n=st.integers(0, 5))
    def counter(self, n):
        iid = self.new_id()
        request = Invocation("Counter", [n, 0], iid) if self.draft else StreamInvocation(iid, "Counter", [n, 0])
        end = StreamCompletion(iid) if self.draft else Completion(iid)
        self.expect([request], [StreamItem(iid, i) for i in range(n)] + [end], rule="SIGR-STR-001")

    @rule(n=st.integers(0, 3))
    def stream_failure(self, n):
        iid = self.new_id()
        request = (Invocation("StreamFailure", [n], iid) if self.draft
                   else StreamInvocation(iid, "StreamFailure", [n]))
        error = "Ran out of data!"
        end = StreamCompletion(iid, error) if self.draft else Completion.with_error(iid, error)
        self.expect([request], [StreamItem(iid, i) for i in range(n)] + [end], rule="SIGR-STR-003")

    @rule()
    def cancel_unknown(self):
        self.expect([CancelInvocation(f"none-{self.new_id()}")], [], rule="SIGR-STR-009")

    # -- v1: Ping, client streams, id reuse ------------------------------------------------

    @rule()
    def ping(self):
        if not self.draft:
            self.expect([Ping()], [])

    @rule(values=st.lists(SMALL, max_size=4))
    def upload(self, values):
        """A whole client-to-server stream in one go: nothing else runs while it is open."""
        if not self.client_streams:
            return
        iid, sid = self.new_id(), self.new_id()
        self.expect([Invocation("Sum", [], iid, stream_ids=[sid])] + [StreamItem(sid, v) for v in values]
                    + [Completion(sid)], [Completion.with_result(iid, sum(values))], rule="SIGR-STR-006")
        self.finished.append(iid)

    @rule(target=uploads)
    def start_sum(self):
        if not self.interleave:
            return ("", "")                   # no interleaved uploads here: a no-op token
        iid, sid = self.new_id(), self.new_id()
        self.expect([Invocation("Sum", [], iid, stream_ids=[sid])], [], rule="SIGR-STR-006")
        self.open_uploads[sid] = []
        return (iid, sid)

    @rule(upload=uploads, value=SMALL)
    def push(self, upload, value):
        iid, sid = upload
        if sid not in self.open_uploads:
            return
        self.expect([StreamItem(sid, value)], [], rule="SIGR-STR-006")
        self.open_uploads[sid].append(value)

    @rule(upload=consumes(uploads))
    def finish_sum(self, upload):
        iid, sid = upload
        if sid not in self.open_uploads:
            return
        items = self.open_uploads.pop(sid)
        self.expect([Completion(sid)], [Completion.with_result(iid, sum(items))], rule="SIGR-STR-006")
        self.finished.append(iid)

    @rule(upload=uploads)
    def reuse_active_id(self, upload):
        iid, sid = upload
        if sid not in self.open_uploads:
            return
        # v1 (ASP.NET Core): a stream started with an id still in use is refused
        self.expect([StreamInvocation(iid, "Counter", [1, 0])],
                    [Completion.with_error(iid, f"Invocation ID '{iid}' is already in use.")], rule="SIGR-ERR-007")

    @rule(data=st.data())
    def reuse_finished_id(self, data):
        if self.draft or not self.finished:
            return
        iid = data.draw(st.sampled_from(self.finished))
        self.expect([Invocation("Echo", ["again"], iid)], [Completion.with_result(iid, "again")], rule="SIGR-ERR-007")

    # -- the other (phase, message type) pairs --------------------------------------------------

    @rule(kind=st.sampled_from(("Ack", "Sequence", UNKNOWN)), n=st.integers(1, 2**31 - 1))
    def ignored(self, kind, n):
        """v1: Ack and Sequence (stateful reconnect, which the hub does not offer) and a type it
        does not know are ignored, and the connection stays open (SIGR-ERR-003's "ignore")."""
        if self.draft or not self.should:
            return
        try:
            if kind == UNKNOWN:
                self.expect([UNKNOWN_RECORDS[self.driver.encoding]], [], kind=UNKNOWN)
            else:
                self.expect([Ack(n) if kind == "Ack" else Sequence(n)], [])
            assert not self.driver.closed, f"the connection closed after {kind}"
        except AssertionError as exc:
            # the one requirement this step checks is what broke, not the run's others
            what = "a message of an unknown type" if kind == UNKNOWN else f"{kind}({n})"
            rid = "SIGR-V1-004" if kind == UNKNOWN else "SIGR-V1-006"
            raise Breach(f"{what} was not ignored: {exc}", rid) from None

    def _probe_kinds(self, handshake: bool) -> list:
        """What a probe sends before the handshake, and past it (only what ends the connection)."""
        matrix = matrix_for(self.driver.profile, self.driver.encoding)
        if not handshake:
            return [k for k in PROBE_KINDS if k != HANDSHAKE and (AWAIT_HANDSHAKE, k) not in matrix.excluded]
        closing = (HANDSHAKE, MALFORMED) + ((UNKNOWN,) if self.draft else ("Close",))
        return [k for k in closing if (OPEN, k) not in matrix.excluded]

    @rule(handshake=st.booleans())
    def probe(self, handshake):
        """Every kind of :meth:`_probe_kinds` (a row of the matrix), each on a fresh connection
        of its own. Before the handshake (in JSON,
        which the connection speaks until then) anything but a HandshakeRequest fails the
        handshake: ``{"error": ...}`` (v1; the draft sends nothing) and the close. Past it, only
        what ends the connection is probed (the machine's connection sends the rest): a second
        HandshakeRequest, a malformed record, an unknown type (draft): a Close with an error (v1;
        the draft just closes) and the close; Close (v1): the close, no answer."""
        for kind in self._probe_kinds(handshake):
            self._probe(kind, handshake)

    def _probe(self, kind: str, handshake: bool) -> None:
        encoding, profile = self.driver.encoding, self.driver.profile
        if not handshake:
            wire, phase = sample(kind, "json", profile), AWAIT_HANDSHAKE
            want = [] if self.draft else [HandshakeResponse(error="<error>")]
        else:
            wire, phase = sample(kind, encoding, profile), OPEN
            want = [] if self.draft or kind == "Close" else [Close(error="<error>")]
        self.reached[(phase, kind)] += 1
        answers, closed = self.driver.probe(handshake, wire)
        got = [type(m)(**{**{f: getattr(m, f) for f in m.__slots__}, "error": "<error>"})
               if isinstance(m, (HandshakeResponse, Close)) and m.error else m for m in answers]
        if phase == OPEN and not self.should and got in ([], [Close(error="<error>")]):
            # announcing the close with a Close message is SIGR-V1-005, a SHOULD: the MUST run
            # takes a plain close too (the SHOULD run holds the target to the Close)
            want = got
        text = f"{kind} in {phase}: got {answers} ({'closed' if closed else 'open'}), expected {want} and the close"
        if self.should and phase == OPEN and closed and got == [] and want == [Close(error="<error>")]:
            # closed as it must, without the Close that SIGR-V1-005 (a SHOULD) asks for first
            raise Breach(text, "SIGR-V1-005")
        if phase == AWAIT_HANDSHAKE and closed and got == [] and want:
            # closed, as the first message that is not a handshake must be (SIGR-HS-003), but
            # without the v1 error response (SIGR-HS-005): that one alone is broken
            # (test_handshake.py::test_first_message_not_a_handshake_closes reads it the same)
            raise Breach(text, "SIGR-HS-005")
        assert closed and got == want, text

    def teardown(self) -> None:
        # hypothesis calls this in a ``finally``: after a step that failed, the connection's
        # state is that failure's consequence, and an assertion here would replace its report
        if sys.exc_info()[1] is None:
            assert not self.driver.closed, "the connection closed during valid traffic"
