"""A hypothesis state machine for invocation and stream lifecycles on one SignalR connection,
run against any hub through a driver.

The model is what the document requires of a Callee ("Invocations", "Streaming", "Completion
and results", "Non-Blocking Invocations"): one Completion per blocking call with its result,
void or error; nothing for a non-blocking call; each stream item in its own StreamItem, in
order, then the end; client streams (v1) collecting items until their Completion; an id still
in use refused (v1) while a finished one may be reused. Every step sends its messages followed
by an Echo barrier and receives everything up to the barrier's Completion, so "no answer" is
proven, not waited for (the hub answers in order, as today's servers do with one invocation at
a time). :class:`SessionDriver` runs the reference :class:`HubSession` in memory;
:class:`WireDriver` speaks to a target over a suite connection.

Uploads (client streams) travel in a Bundle; no rule filters.
"""
from __future__ import annotations

import itertools

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, initialize, rule

from reference_impl.signalr import codec
from reference_impl.signalr.messages import (CancelInvocation, Completion, HandshakeRequest,
                                             HandshakeResponse, Invocation, Ping, StreamCompletion,
                                             StreamInvocation, StreamItem)
from reference_impl.signalr.session import HubConfig, HubSession

TEXT = st.text(max_size=12)
SMALL = st.integers(-1000, 1000)
VALUES = st.recursive(st.none() | st.booleans() | SMALL | TEXT,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                      max_leaves=6)


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


class WireDriver:
    """A target over one suite connection (past the handshake); ``sig`` is the suite's helper."""

    def __init__(self, sig, conn, max_answers: int = 64) -> None:
        self.sig, self.conn = sig, conn
        self.profile, self.encoding = sig.reading, sig.encoding
        self.max_answers = max_answers
        self._barriers = itertools.count()

    @property
    def closed(self) -> bool:
        return self.conn.closed_by_peer

    def exchange(self, messages: list) -> list:
        from conformance.target import TargetError
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


def _any_error(message):
    if isinstance(message, (Completion, StreamCompletion)) and message.error:
        return type(message)(**{**{f: getattr(message, f) for f in message.__slots__}, "error": "<error>"})
    return message


class HubMachine(RuleBasedStateMachine):
    """Subclasses (or the wire suite) provide ``make_driver()``."""

    uploads = Bundle("uploads")

    def make_driver(self):
        return SessionDriver()

    def __init__(self, driver=None) -> None:
        super().__init__()
        self.driver = driver if driver is not None else self.make_driver()
        self.draft = self.driver.profile == "draft"
        self._ids = itertools.count(1)
        self.remembered = None
        self.finished: list[str] = []           # ids whose Completion came (reusable in v1)
        self.open_uploads: dict[str, list] = {}  # stream id -> items

    def new_id(self) -> str:
        return f"m{next(self._ids)}"

    #: Compare error texts exactly (the reference hub's, ASP.NET Core's wording); a target under
    #: test only has to send *an* error where one is due.
    exact_errors = True

    def expect(self, sent: list, want: list) -> None:
        got = self.driver.exchange(sent)
        if not self.exact_errors:
            got, want = [_any_error(m) for m in got], [_any_error(m) for m in want]
        assert got == want, f"sent {sent!r}\n  got {got!r}\n want {want!r}"

    # -- single results --------------------------------------------------------------------

    @initialize()
    def start(self) -> None:
        assert not self.driver.closed

    @rule(text=TEXT)
    def echo(self, text):
        iid = self.new_id()
        self.expect([Invocation("Echo", [text], iid)], [Completion.with_result(iid, text)])
        self.finished.append(iid)

    @rule(x=SMALL, y=SMALL)
    def add(self, x, y):
        iid = self.new_id()
        self.expect([Invocation("Add", [x, y], iid)], [Completion.with_result(iid, x + y)])
        self.finished.append(iid)

    @rule(n=st.integers(0, 4))
    def batched(self, n):
        iid = self.new_id()
        self.expect([Invocation("Batched", [n], iid)], [Completion.with_result(iid, list(range(n)))])

    @rule()
    def nothing(self):
        iid = self.new_id()
        self.expect([Invocation("Nothing", [], iid)], [Completion(iid)])

    @rule(text=TEXT)
    def fail(self, text):
        iid = self.new_id()
        self.expect([Invocation("Fail", [text], iid)], [Completion.with_error(iid, text)])

    @rule(value=VALUES)
    def remember(self, value):
        call = (Invocation("Remember", [value], self.new_id(), nonblocking=True) if self.draft
                else Invocation("Remember", [value]))
        self.expect([call], [])
        self.remembered = value

    @rule()
    def recall(self):
        iid = self.new_id()
        self.expect([Invocation("Recall", [], iid)], [Completion.with_result(iid, self.remembered)])

    @rule(name=st.sampled_from(["echo", "NoSuch", "add"]))
    def unknown_method(self, name):
        iid = self.new_id()
        self.expect([Invocation(name, ["x"], iid)], [Completion.with_error(iid, f"Unknown hub method '{name}'")])

    # -- streams ---------------------------------------------------------------------------

    @rule(n=st.integers(0, 5))
    def counter(self, n):
        iid = self.new_id()
        request = Invocation("Counter", [n, 0], iid) if self.draft else StreamInvocation(iid, "Counter", [n, 0])
        end = StreamCompletion(iid) if self.draft else Completion(iid)
        self.expect([request], [StreamItem(iid, i) for i in range(n)] + [end])

    @rule(n=st.integers(0, 3))
    def stream_failure(self, n):
        iid = self.new_id()
        request = (Invocation("StreamFailure", [n], iid) if self.draft
                   else StreamInvocation(iid, "StreamFailure", [n]))
        error = "Ran out of data!"
        end = StreamCompletion(iid, error) if self.draft else Completion.with_error(iid, error)
        self.expect([request], [StreamItem(iid, i) for i in range(n)] + [end])

    @rule()
    def cancel_unknown(self):
        self.expect([CancelInvocation(f"none-{self.new_id()}")], [])

    # -- v1: Ping, client streams, id reuse ------------------------------------------------

    @rule()
    def ping(self):
        if not self.draft:
            self.expect([Ping()], [])

    @rule(target=uploads)
    def start_sum(self):
        if self.draft:
            return ("", "")                   # the draft has no client streams: a no-op token
        iid, sid = self.new_id(), self.new_id()
        self.expect([Invocation("Sum", [], iid, stream_ids=[sid])], [])
        self.open_uploads[sid] = []
        return (iid, sid)

    @rule(upload=uploads, value=SMALL)
    def push(self, upload, value):
        iid, sid = upload
        if sid not in self.open_uploads:
            return
        self.expect([StreamItem(sid, value)], [])
        self.open_uploads[sid].append(value)

    @rule(upload=consumes(uploads))
    def finish_sum(self, upload):
        iid, sid = upload
        if sid not in self.open_uploads:
            return
        items = self.open_uploads.pop(sid)
        self.expect([Completion(sid)], [Completion.with_result(iid, sum(items))])
        self.finished.append(iid)

    @rule(upload=uploads)
    def reuse_active_id(self, upload):
        iid, sid = upload
        if sid not in self.open_uploads:
            return
        self.expect([Invocation("Echo", ["dup"], iid)],
                    [Completion.with_error(iid, f"Invocation ID '{iid}' is already in use.")])

    @rule(data=st.data())
    def reuse_finished_id(self, data):
        if self.draft or not self.finished:
            return
        iid = data.draw(st.sampled_from(self.finished))
        self.expect([Invocation("Echo", ["again"], iid)], [Completion.with_result(iid, "again")])

    def teardown(self) -> None:
        assert not self.driver.closed, "the connection closed during valid traffic"
