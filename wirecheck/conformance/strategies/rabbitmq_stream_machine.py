"""A hypothesis state machine for one RabbitMQ Stream connection, run against any server through a driver.

The machine keeps a model of what the server must do (rabbitmq-stream-protocol.adoc
"Authentication", "DeclarePublisher", "Publish", "Subscribe", "Credit", "StoreOffset",
"QueryOffset", "Create", "Delete"; SPEC_NOTES.md, RabbitMQ Stream, for the real server's rules)
and checks every answer against it: response codes, publish confirms, and each Deliver's
subscription, first offset and messages. It reaches the server through a *driver*:
``exchange(frames: list[bytes], barrier: bool, names=(), done=None) -> list[frame]`` sends the
bytes; ``done(answers)`` says whether everything the request must cause has come (publish
confirms and deliveries come asynchronously from a real server, so a driver over the wire reads
until then, every read bounded by the target timeout); then, with ``barrier`` (once the
connection is open: Metadata is refused before), a barrier Metadata request for ``names``
follows, and the driver returns every frame answered before the barrier's answer (kept as
``barrier_answer``), so "no answer" (StoreOffset, Credit, Heartbeat) is proven, never waited
for. :class:`~.rabbitmq_stream_drivers.SessionDriver` runs the reference :class:`StreamSession` in memory (every frame it
sends must be one whole frame of a class the server sends: "nothing but documented frames comes
out"); :class:`WireDriver` speaks to a target over a :class:`wirecheck.conformance.target.connection.Connection`.

Every answer is checked as it arrives: a response must be the one its request expects (matched
by correlation id; CreditResponse by subscription, MetadataUpdate by stream), each publishing
id of a Publish is confirmed exactly once (or errored once, for an unknown publisher), a
Deliver must be the model's next chunk for its subscription and within its credit. After every
step each subscription must have had every chunk its credit allows; the barrier's Metadata
agrees with the model about which streams exist; the connection stays open.

Chunks. The model keeps each stream as the entries stored, in order, grouped by the Publish
that stored them; where a chunk ends inside a group it learns from the deliveries. The document
does not tie chunks to Publish frames and RabbitMQ 3.10.8 splits a Publish of several messages
over several chunks when busy, so any cut between the entries of one Publish is accepted, as
long as every subscription sees the same chunks (credit counts chunks, "Credit"). A sub-batch
entry is never cut, and a chunk never holds entries of two Publish frames: the machine waits
for a Publish's confirms before it sends the next request.

Offsets: a user entry takes one offset per record (a sub-batch of N records takes N,
SPEC_NOTES.md). Each StoreOffset takes one of its own on RabbitMQ ("each StoreOffset occupies
an offset of its own in the stream"), which the document does not say: the SHOULD-level
machine expects it; the MUST-level one learns whether the target does it (``width`` 1 or 0)
from the first delivery that shows it, and until then does not subscribe at an offset of a
stream that has had a StoreOffset.

Time is kept out: the in-memory driver passes a fixed ``now`` and clock, and the machine never
subscribes by timestamp. Publishing ids start at 1 and increase per publisher, as a
deduplicating client's do; re-sending old ids under a reference is deduplicated (confirmed,
not stored).

Coverage: :data:`MATRIX` is every (phase x client command of the document) pair; each frame
a rule sends is counted in ``StreamMachine.reached`` under the phase it was sent in (the
barrier Metadata included: its answer is checked). Frames out of the handshake's order, and
those that end the connection (an unknown key, a malformed frame, Close, a handshake command
after Open), are sent on *probes*: a new connection the driver brings to a phase, sends one
frame on, and drops (``driver.probe``).

``should`` (set by subclasses): also check what only SPEC_NOTES.md says (SHOULD-level):
PreconditionFailed (17) for a second Create with other arguments, a second DeclarePublisher
with a publisher id in use or a reference held on the stream; deduplication; sub-batches;
QueryPublisherSequence of an unknown reference (1, 0); NoOffset (19); Subscribe beyond the end;
StoreOffset to a missing stream ignored; publishers and subscriptions gone after their stream's
MetadataUpdate; Tune answered as 0x0014; Publish/Deliver version 2. With ``should = False`` the
machine avoids or tolerates those, and checks MUSTs only.
"""
from __future__ import annotations

from collections import Counter

from hypothesis import strategies as st
from hypothesis.stateful import (Bundle, RuleBasedStateMachine, initialize, invariant,
                                 multiple, rule)

from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.chunk import ChunkType, SubBatchEntry
from wirecheck.reference_impl.rabbitmq_stream.codec import PublishedMessage
from wirecheck.reference_impl.rabbitmq_stream.constants import Code, Compression, Key, OffsetType
from wirecheck.conformance.report.verdicts import Breach

from .rabbitmq_stream_drivers import (BARRIER_BASE, HANDSHAKE, OPEN, OPENING, PROBE_STREAM, STREAM_NAMES, TUNING,
                                      SessionDriver)
from .rabbitmq_stream_model import (ModelPublisher, ModelStream, ModelSubscription, Want,
                                    answer_key, answer_rule, exactly, one_of)
from .rabbitmq_stream_probes import MATRIX, ProbeRules
from .state_matrix import holds

cids = st.integers(0, BARRIER_BASE - 16)     # the handshake uses cid .. cid + 4
#: Create arguments: none, or a retention the machine never reaches. Every value is one the
#: server can parse: RabbitMQ 3.10.8's stream manager crashes on a Create whose argument value
#: it cannot parse, taking every connection of the node with it.
ARGUMENTS = ({}, {"max-age": "7D"})
PUBLISHER_IDS = st.integers(0, 1)
SUBSCRIPTION_IDS = st.integers(0, 1)
UNKNOWN_ID = 255                          # never declared, never subscribed
REFERENCES = ("", "ref-a", "ref-b")       # "" = no deduplication
#: StoreOffset/QueryOffset references: never "", which the document gives no meaning; the
#: reference broker ignores a StoreOffset under it, RabbitMQ 3.10.8 stores it (and gives it an
#: offset) like any other.
OFFSET_REFERENCES = ("ref-a", "ref-b")

records = st.binary(max_size=16)
#: A message body, or a sub-batch of 1-3 records (uncompressed or gzip) spanning 1-3 offsets.
bodies = records | st.builds(SubBatchEntry.of, st.lists(records, min_size=1, max_size=3),
                             st.sampled_from((Compression.NONE, Compression.GZIP)))


# -- the model -----------------------------------------------------------------------------------

class StreamMachine(ProbeRules, RuleBasedStateMachine):
    """Each rule updates the model with what its request must change, then sends it and checks
    the answers (and the barrier's Metadata) against the model."""
    driver_factory = SessionDriver
    should = True

    streams = Bundle("streams")                 # names created
    publishers = Bundle("publishers")           # publisher ids declared

    def __init__(self, driver=None) -> None:
        super().__init__()
        self.driver = driver if driver is not None else type(self).driver_factory()
        self.names = {n: self.driver.stream(n) for n in STREAM_NAMES}
        self.model: dict[str, ModelStream] = {}
        self.pubs: dict[int, ModelPublisher] = {}
        self.subs: dict[int, ModelSubscription] = {}
        self.v2 = False                         # Publish/Deliver version 2 negotiated
        self.heartbeat = 0
        #: Offsets a tracking chunk takes: RabbitMQ's 1 (SPEC_NOTES.md) when ``should``, else
        #: learned from the deliveries (None until then).
        self.width: int | None = 1 if self.should else None
        #: Without ``should``: publisher and subscription ids whose stream was deleted under them
        #: (what becomes of them is SHOULD-level, SPEC_NOTES.md), never used again.
        self.lost_pubs: set[int] = set()
        self.lost_subs: set[int] = set()
        self._wants: dict[tuple, Want] = {}
        self._confirms: Counter = Counter()     # (publisher id, publishing id) to confirm
        self._errors: Counter = Counter()       # (publisher id, publishing id, code) to report
        #: MetadataUpdates that may come, once each, for these (wire) stream names.
        self._may_update: Counter = Counter()

    #: (phase, command) -> frames sent (see :data:`MATRIX`); a subclass may have its own.
    reached: Counter = Counter()
    #: Commands per probe step (None: a whole row of the matrix, as in memory).
    probe_sweep: int | None = None

    def _record(self, phase: str, name: str) -> None:
        if name in MATRIX.frames:
            self.reached[(phase, name)] += 1

    def teardown(self) -> None:
        self.driver.close()

    # -- exchanging and checking -----------------------------------------------------------------

    def _exchange(self, *frames, wants=(), confirms=(), errors=()) -> None:
        """Send ``frames`` (one write); check every answer as it comes against ``wants``
        (responses), ``confirms`` ((publisher id, publishing id) pairs), ``errors`` ((publisher
        id, publishing id, code)) and the model's deliveries; then the barrier's Metadata."""
        self._wants = {w.key: w for w in wants}
        self._confirms = Counter(confirms)
        self._errors = Counter(errors)
        seen = 0

        def settle(answers: list) -> bool:
            nonlocal seen
            for frame in answers[seen:]:
                self._take(frame)
            seen = len(answers)
            return not self._missing()

        what = ", ".join(type(f).__name__ for f in frames)
        for f in frames + ("Metadata",):                 # the barrier's Metadata is checked too
            self._record(OPEN, f if isinstance(f, str) else type(f).__name__)
        answers = self.driver.exchange([codec.encode(f) for f in frames], True,
                                       tuple(self.names.values()), settle)
        settle(answers)
        missing = self._missing()
        holds(not missing, f"after {what}: " + "; ".join(missing), self._missing_rule())
        self._check_barrier(self.driver.barrier_answer)

    def _take(self, frame) -> None:
        """One answer, checked against what the step expects."""
        if isinstance(frame, codec.Deliver):
            return self._delivered(frame)
        if isinstance(frame, codec.PublishConfirm):
            for i in frame.publishing_ids:
                pair = (frame.publisher_id, i)
                holds(self._confirms[pair] > 0,
                      f"PublishConfirm of publisher {pair[0]} id {i}: never published, or confirmed already",
                      "RMQS-PUB-007")
                self._confirms[pair] -= 1
            return
        if isinstance(frame, codec.PublishError):
            for i, code in frame.errors:
                item = (frame.publisher_id, i, code)
                holds(self._errors[item] > 0,
                      f"PublishError publisher {item[0]} id {i} code {code}: expected {sorted(+self._errors)}",
                      "RMQS-PUB-008")
                self._errors[item] -= 1
            return
        if isinstance(frame, codec.Heartbeat) and self.heartbeat:
            return          # with a heartbeat negotiated the server may send one ("Heartbeat")
        want = self._wants.pop(answer_key(frame), None)
        if want is None and isinstance(frame, codec.MetadataUpdate) and self._may_update[frame.stream] > 0 \
                and frame.code == Code.STREAM_NOT_AVAILABLE:
            self._may_update[frame.stream] -= 1
            return
        holds(want is not None, f"unexpected {frame}", answer_rule(frame))
        holds(want.test(frame), f"{want.text}, got {frame}", want.rule)

    def _missing(self) -> list[str]:
        """What the step still waits for."""
        missing = [w.text for w in self._wants.values()]
        if +self._confirms:
            missing.append(f"no PublishConfirm yet for {sorted(+self._confirms)}")
        if +self._errors:
            missing.append(f"no PublishError yet for {sorted(+self._errors)}")
        for sub_id, sub in self.subs.items():
            if self._wants_more(sub):
                missing.append(f"subscription {sub_id} has {sub.credit} credit left and the stream "
                               f"has chunks for it ({sub.delivered} delivered)")
        return missing

    def _missing_rule(self) -> str | None:
        """The rule of what the step still waits for, when that is one rule."""
        rules = {w.rule for w in self._wants.values()}
        if +self._confirms:
            rules.add("RMQS-PUB-007")
        if +self._errors:
            rules.add("RMQS-PUB-008")
        if any(self._wants_more(sub) for sub in self.subs.values()):
            rules.add("RMQS-CREDIT-002")          # "the number of chunks that can be sent"
        return rules.pop() if len(rules) == 1 else None

    def _wants_more(self, sub: ModelSubscription) -> bool:
        if sub.credit <= 0:
            return False
        if sub.mode != "at":
            return True
        return self.model[sub.stream].next_user(sub.next) is not None

    def _check_barrier(self, barrier) -> None:
        codes = {m.stream: m.code for m in barrier.streams}
        expected = {self.names[n]: Code.OK if n in self.model else Code.STREAM_DOES_NOT_EXIST
                    for n in STREAM_NAMES}
        holds(codes == expected, f"Metadata says {codes}, the model {expected}", "RMQS-META-003")
        brokers = {b.reference: b for b in barrier.brokers}
        for m in barrier.streams:
            if m.code == Code.OK:
                leader = brokers.get(m.leader)
                holds(leader is not None and leader.host and 0 < leader.port < 65536,
                      f"Metadata: leader {m.leader} of {m.stream} is not a broker of {barrier.brokers}", "RMQS-META-002")

    def _delivered(self, frame) -> None:
        """A Deliver: it must be the next chunk of its subscription (see ModelSubscription)."""
        sub_id = frame.subscription_id
        sub = self.subs.get(sub_id)
        holds(sub is not None, f"Deliver for subscription {sub_id}, which does not exist: {frame}", "RMQS-DELIVER-001")
        holds(frame.version == (2 if self.v2 else 1), f"Deliver version {frame.version}",
              "RMQS-NEW-003" if self.v2 else "RMQS-DELIVER-001")
        chunk = frame.chunk
        if frame.version == 2:
            # A chunk is delivered once committed: the committed chunk id (a chunk's id is its
            # first offset) is at least this chunk's.
            holds(frame.committed_chunk_id >= chunk.first_offset, repr(frame), "RMQS-NEW-003")
        holds(chunk.chunk_type == ChunkType.USER, f"subscription {sub_id}: a chunk of type {chunk.chunk_type}",
              "RMQS-DELIVER-002")
        holds(sub.credit > 0, f"subscription {sub_id}: a chunk beyond its credit ({sub.granted} given, "
              f"{sub.delivered} delivered)", "RMQS-CREDIT-001")
        first = chunk.first_offset
        holds(first > sub.last_offset, f"subscription {sub_id}: offset {first} after {sub.last_offset}",
              "RMQS-DELIVER-005")
        stream = self.model[sub.stream]
        count = chunk.num_entries
        if sub.mode == "last":
            starts = [sub.next - count]
        elif sub.mode == "containing":
            group = stream.entries[sub.next].group
            starts = [s for s in range(group, sub.next + 1) if s + count > sub.next]
        else:
            start = stream.next_user(sub.next)
            holds(start is not None, f"subscription {sub_id}: a chunk at offset {first}, and the "
                  f"stream holds nothing more for it", "RMQS-DELIVER-005")
            starts = [start]
        got = chunk.messages()
        for start in starts:
            recs = stream.chunk(start, count)
            width = False if recs is None else self._width_of(stream, start, first)
            if width is not False and recs == got and chunk.num_records == len(recs):
                break
        else:
            # What a chunk could have been: where it starts, and the records of its Publish from
            # there (it holds all of them or the first few, whole entries each).
            room = [(self._offset_text(stream, s), [r for e in stream.entries[s:stream.group_end(s)]
                                                    for r in e.records or ()])
                    for s in starts if 0 <= s < len(stream.entries)]
            raise Breach(
                f"subscription {sub_id}: chunk at offset {first} with {count} entries, "
                f"{chunk.num_records} records {got}; expected a chunk at (offset, records of its "
                f"Publish from there) {room}", "RMQS-DELIVER-004")
        if width is not None:
            self.width = width
        stream.learn(start, count)
        sub.next, sub.mode = start + count, "at"
        sub.credit -= 1
        sub.delivered += 1
        sub.last_offset = first

    def _width_of(self, stream: ModelStream, index: int, first: int):
        """Whether entry ``index`` can be at offset ``first``: False if not, else the tracking
        width that this shows (None: any)."""
        if self.width is not None:
            return None if stream.offset(index, self.width) == first else False
        entry = stream.entries[index]
        if entry.trackings == 0:
            return None if entry.before == first else False
        if first == entry.before:
            return 0
        if first == entry.before + entry.trackings:
            return 1
        return False

    def _offset_text(self, stream: ModelStream, index: int):
        if self.width is not None or stream.entries[index].trackings == 0:
            return stream.offset(index, self.width or 0)
        return f"{stream.offset(index, 0)} or {stream.offset(index, 1)}"

    # -- handshake -------------------------------------------------------------------------------

    @initialize(target=publishers, steps=st.sampled_from((2, 2, 2, 1, 0)), cid=cids,
                tune=st.sampled_from(("response", "request")),
                frame_max=st.sampled_from((0, 131_072, 1_048_576)), heartbeat=st.sampled_from((0, 60)),
                versions=st.booleans(), reference=st.sampled_from(REFERENCES),
                offset_type=st.sampled_from((OffsetType.FIRST, OffsetType.NEXT)),
                credit=st.integers(1, 3), messages=st.lists(bodies, max_size=3))
    def start(self, steps, cid, tune, frame_max, heartbeat, versions, reference, offset_type,
              credit, messages):
        """The handshake, then (most runs: a run is short and the deeper rules need them) a
        stream, a publisher and a subscription on it, and a few messages published: some runs
        stop after creating the stream, or after the handshake."""
        self._handshake(cid, tune, frame_max, heartbeat, versions)
        if steps >= 1:
            self.create(cid, STREAM_NAMES[0], ARGUMENTS[0])
        if steps < 2:
            return multiple()
        self.subscribe(cid, 0, STREAM_NAMES[0], offset_type, 0, credit)
        self.declare_publisher(cid, 0, STREAM_NAMES[0], reference)
        if messages:
            self.publish(0, messages, [None], False)
        return 0

    def _handshake(self, cid, tune, frame_max, heartbeat, versions) -> None:
        """The handshake ("Authentication"): PeerProperties, SaslHandshake, SaslAuthenticate
        (PLAIN), the server's Tune, the client's (as 0x8014 or, with ``should``, as some clients
        send it, 0x0014), Open; then, with ``versions`` (and ``should``, where the target knows
        keys 26-30), ExchangeCommandVersions asking for Publish/Deliver version 2.

        One frame per write, each answered before the next: RabbitMQ 3.10.8 drops a connection
        whose frames come pipelined before Open (profile rabbitmq-3.10, waiver of RMQS-FRAME-014;
        the framing tests check that rule)."""
        d = self.driver

        def answers(frame, count: int) -> list:
            return d.exchange([codec.encode(frame)], False, (), lambda got: len(got) >= count)

        for name in ("PeerProperties", "SaslHandshake", "SaslAuthenticate"):
            self._record(HANDSHAKE, name)
        self._record(TUNING, "Tune")
        self._record(OPENING, "Open")
        got = answers(codec.PeerProperties(cid, {"product": "machine"}), 1)
        holds(len(got) == 1 and isinstance(got[0], codec.PeerPropertiesResponse)
              and (got[0].correlation_id, got[0].code) == (cid, Code.OK), repr(got), "RMQS-HS-001")
        got = answers(codec.SaslHandshake(cid + 1), 1)
        holds(len(got) == 1 and isinstance(got[0], codec.SaslHandshakeResponse)
              and (got[0].correlation_id, got[0].code) == (cid + 1, Code.OK) and "PLAIN" in got[0].mechanisms,
              repr(got), "RMQS-HS-002")
        got = answers(codec.SaslAuthenticate(
            cid + 2, "PLAIN", b"\0" + d.user.encode() + b"\0" + d.password.encode()), 2)
        holds(len(got) == 2 and got[0] == codec.SaslAuthenticateResponse(cid + 2, Code.OK), repr(got), "RMQS-HS-003")
        holds(isinstance(got[1], codec.Tune), f"no Tune after SaslAuthenticate: {got}", "RMQS-HS-004")
        as_request = tune == "request" and self.should
        answer = (codec.Tune if as_request else codec.TuneResponse)(frame_max, heartbeat)
        got = d.exchange([codec.encode(answer)], False)
        holds(got == [], f"answers to the client's {type(answer).__name__}: {got}",
              "RMQS-HS-013" if as_request else "RMQS-HS-004")
        self.heartbeat = heartbeat
        got = answers(codec.Open(cid + 3, d.vhost), 1)
        holds(len(got) == 1 and isinstance(got[0], codec.OpenResponse)
              and (got[0].correlation_id, got[0].code) == (cid + 3, Code.OK), repr(got), "RMQS-HS-005")
        if versions and self.should and d.keys_26_30:
            wanted = ((Key.PUBLISH, 1, 2), (Key.DELIVER, 1, 2))

            def offers_v2(frame) -> bool:
                if not isinstance(frame, codec.ExchangeCommandVersionsResponse) or frame.code != Code.OK:
                    return False
                offered = {k: (lo, hi) for k, lo, hi in frame.versions}
                return offered.get(Key.DELIVER, (1, 1))[1] >= 2 and offered.get(Key.PUBLISH, (1, 1))[1] >= 2

            self._exchange(codec.ExchangeCommandVersions(cid + 4, wanted), wants=[
                Want(("cid", cid + 4), offers_v2, "expected code 1 and Publish and Deliver up to version 2")])
            self.v2 = True

    @rule()
    def heartbeat_and_metadata(self):
        """A Heartbeat gets no answer; the barrier's Metadata is checked on every step."""
        self._exchange(codec.Heartbeat())

    @rule(cid=cids, which=st.sampled_from(("Route", "Partitions")))
    def route_unknown_super_stream(self, cid, which):
        """Route / Partitions of a super stream that does not exist: code 2 and no streams
        (RMQS-PART-001; for Route RMQS-ROUTE-002 is SHOULD: without ``should`` one response)."""
        if which == "Route":
            frame, kind = codec.Route(cid, "key", PROBE_STREAM), codec.RouteResponse
        else:
            frame, kind = codec.Partitions(cid, PROBE_STREAM), codec.PartitionsResponse
        if not self.should and which == "Route":    # one response (ROUTE-001); its content is SHOULD
            return self._exchange(frame, wants=[Want(("cid", cid), lambda f: isinstance(f, kind),
                                                     f"expected {kind.__name__}({cid})")])
        self._exchange(frame, wants=[Want(
            ("cid", cid), lambda f: isinstance(f, kind) and f.code == Code.STREAM_DOES_NOT_EXIST and not f.streams,
            f"expected {kind.__name__}({cid}) with code 2 and no streams")])

    # -- streams ---------------------------------------------------------------------------------

    @rule(target=streams, cid=cids, name=st.sampled_from(STREAM_NAMES),
          arguments=st.sampled_from(ARGUMENTS))
    def create(self, cid, name, arguments):
        existing = self.model.get(name)
        if existing is not None and not self.should:
            arguments = existing.arguments             # 17 for other ones is SPEC_NOTES.md
        if existing is None:
            code = Code.OK
        elif existing.arguments == arguments:
            code = Code.STREAM_ALREADY_EXISTS          # same arguments 5,
        else:
            code = Code.PRECONDITION_FAILED            # SPEC_NOTES.md: different ones 17
        if code == Code.OK:
            self.model[name] = ModelStream(dict(arguments))
        self._exchange(codec.Create(cid, self.names[name], dict(arguments)),
                       wants=[exactly(codec.CreateResponse(cid, code))])
        return name if code == Code.OK else multiple()

    @rule(cid=cids, name=streams | st.sampled_from(STREAM_NAMES))
    def delete(self, cid, name):
        wire = self.names[name]
        if name not in self.model:
            return self._exchange(codec.Delete(cid, wire),
                                  wants=[exactly(codec.DeleteResponse(cid, Code.STREAM_DOES_NOT_EXIST))])
        tracked = self.model[name].tracked
        gone_pubs = {i for i, p in self.pubs.items() if p.stream == name}
        gone_subs = {i for i, s in self.subs.items() if s.stream == name}
        if not self.should:
            self.lost_pubs |= gone_pubs
            self.lost_subs |= gone_subs
        # Its publishers and subscriptions go with it (the model changes first: the barrier's
        # Metadata is checked against it).
        del self.model[name]
        self.pubs = {i: p for i, p in self.pubs.items() if i not in gone_pubs}
        self.subs = {i: s for i, s in self.subs.items() if i not in gone_subs}
        # The connection that used the stream hears of it ("MetadataUpdate"); in which order
        # relative to the response the document does not say.
        wants = [exactly(codec.DeleteResponse(cid, Code.OK))]
        if gone_pubs or gone_subs:
            wants.append(exactly(codec.MetadataUpdate(Code.STREAM_NOT_AVAILABLE, wire)))
        if tracked:
            # A connection that stored or queried an offset of the stream gets the update too
            # on RabbitMQ 3.10.8 (it keeps the stream's leader for those requests), though it
            # neither publishes nor consumes (RMQS-META-008 is about a connection that never
            # used the stream): tolerated, not required (the reference broker sends none).
            self._may_update[wire] += 1
        self._exchange(codec.Delete(cid, wire), wants=wants)

    # -- publishing ------------------------------------------------------------------------------

    @rule(target=publishers, cid=cids, pid=PUBLISHER_IDS, name=streams | st.sampled_from(STREAM_NAMES),
          reference=st.sampled_from(REFERENCES))
    def declare_publisher(self, cid, pid, name, reference):
        stream = self.model.get(name)
        if not self.should:
            # 17 for an id in use or a reference held on the stream is SPEC_NOTES.md.
            if pid in self.pubs or pid in self.lost_pubs:
                free = [p for p in (0, 1) if p not in self.pubs and p not in self.lost_pubs]
                if not free:
                    return multiple()
                pid = free[0]
            if any(p.stream == name and p.reference == reference for p in self.pubs.values()):
                reference = ""
        codes = []
        if pid in self.pubs:
            codes.append(Code.PRECONDITION_FAILED)
        if stream is None:
            codes.append(Code.STREAM_DOES_NOT_EXIST)
        elif reference and any(p.stream == name and p.reference == reference for p in self.pubs.values()):
            codes.append(Code.PRECONDITION_FAILED)     # a reference has one publisher at a time
        if not codes:
            codes.append(Code.OK)
        code = codes[0]
        if code == Code.OK:
            # Without ``should`` ids never fall to the reference's stored sequence or below
            # (deduplication is SPEC_NOTES.md).
            first = 1 if self.should or not reference else stream.sequences.get(reference, 0) + 1
            self.pubs[pid] = ModelPublisher(name, reference, first)
        self._exchange(codec.DeclarePublisher(cid, pid, reference, self.names[name]),
                       wants=[one_of([codec.DeclarePublisherResponse(cid, c) for c in sorted(set(codes))])])
        return pid if code == Code.OK else multiple()

    @rule(cid=cids, pid=publishers)
    def delete_publisher(self, cid, pid):
        if pid in self.lost_pubs:
            return
        code = Code.OK if self.pubs.pop(pid, None) is not None else Code.PUBLISHER_DOES_NOT_EXIST
        self._exchange(codec.DeletePublisher(cid, pid),
                       wants=[exactly(codec.DeletePublisherResponse(cid, code))])

    @rule(pid=publishers, messages=st.lists(bodies, min_size=1, max_size=3),
          filters=st.lists(st.none() | st.text(max_size=4), min_size=3, max_size=3),
          again=st.booleans())
    def publish(self, pid, messages, filters, again):
        """One Publish; with ``again`` (and ``should``), the publisher's last ids are sent
        again (new ids when it has not sent that many): deduplicated under a reference, stored
        again without. Without ``should`` a sub-batch goes as its records (SPEC_NOTES.md)."""
        if pid in self.lost_pubs:
            return
        if not self.should:
            messages = [r for m in messages for r in (m.records() if isinstance(m, SubBatchEntry) else [m])]
            again = False
        pub = self.pubs.get(pid)
        first = pub.next_id if pub is not None else 1
        if again and pub is not None and pub.next_id > len(messages):
            first = pub.next_id - len(messages)
        ids = list(range(first, first + len(messages)))
        version = 2 if self.v2 else 1
        frame = codec.Publish(pid, tuple(
            PublishedMessage(i, body, filters[n % len(filters)] if version == 2 else None)
            for n, (i, body) in enumerate(zip(ids, messages))), version)
        if pub is None:
            return self._exchange(frame, errors=[(pid, i, Code.PUBLISHER_DOES_NOT_EXIST) for i in ids])
        pub.next_id = max(pub.next_id, ids[-1] + 1)
        stream = self.model[pub.stream]
        # Under a reference, ids at or below the last stored one are dropped, still confirmed.
        last = stream.sequences.get(pub.reference, 0) if pub.reference else None
        fresh = [m for i, m in zip(ids, messages) if last is None or i > last]
        if fresh:
            if pub.reference:
                stream.sequences[pub.reference] = max(i for i in ids if i > last)
            stream.add_group([m.records() if isinstance(m, SubBatchEntry) else [m] for m in fresh])
        # Each publishing id confirmed exactly once ("PublishConfirm").
        self._exchange(frame, confirms=[(pid, i) for i in ids])

    @rule(messages=st.lists(records, min_size=1, max_size=3))
    def publish_unknown_publisher(self, messages):
        """Publishing with an undeclared publisher id: PublishError 18 for each message."""
        self.publish(UNKNOWN_ID, messages, [None], False)

    @rule(cid=cids, reference=st.sampled_from(REFERENCES), name=streams | st.sampled_from(STREAM_NAMES))
    def query_publisher_sequence(self, cid, reference, name):
        stream = self.model.get(name)
        if stream is None:
            want = exactly(codec.QueryPublisherSequenceResponse(cid, Code.STREAM_DOES_NOT_EXIST, 0))
        elif reference in stream.sequences or self.should:
            # An unknown reference gets (1, 0): SPEC_NOTES.md.
            want = exactly(codec.QueryPublisherSequenceResponse(cid, Code.OK,
                                                                stream.sequences.get(reference, 0)))
        else:
            want = Want(("cid", cid), lambda f: isinstance(f, codec.QueryPublisherSequenceResponse),
                        f"expected QueryPublisherSequenceResponse({cid})")
        self._exchange(codec.QueryPublisherSequence(cid, reference, self.names[name]), wants=[want])

    # -- consuming -------------------------------------------------------------------------------

    @rule(cid=cids, sub_id=SUBSCRIPTION_IDS,
          name=streams | st.sampled_from(STREAM_NAMES),
          offset_type=st.sampled_from((OffsetType.FIRST, OffsetType.LAST, OffsetType.NEXT,
                                       OffsetType.OFFSET)),
          offset=st.integers(0, 24), credit=st.integers(0, 3))
    def subscribe(self, cid, sub_id, name, offset_type, offset, credit):
        if sub_id in self.lost_subs:
            return
        stream = self.model.get(name)
        codes = []
        if sub_id in self.subs:
            codes.append(Code.SUBSCRIPTION_ID_ALREADY_EXISTS)
        if stream is None:
            codes.append(Code.STREAM_DOES_NOT_EXIST)      # (RabbitMQ 3.10.8 checks this first)
        if not codes:
            codes.append(Code.OK)
            if offset_type == OffsetType.OFFSET and not self.should:
                # No offset beyond the end (SPEC_NOTES.md), none while the offsets are unknown.
                end = stream.offset(len(stream.entries), self.width or 0)
                if end == 0 or (self.width is None and stream.trackings):
                    offset_type = OffsetType.FIRST
                else:
                    offset %= end
            sub = ModelSubscription(name, credit, credit)
            sub.mode, sub.next = self._position(stream, offset_type, offset)
            self.subs[sub_id] = sub
        value = offset if offset_type == OffsetType.OFFSET else None
        self._exchange(codec.Subscribe(cid, sub_id, self.names[name], offset_type, value, credit),
                       wants=[one_of([codec.SubscribeResponse(cid, c) for c in codes])])

    def _position(self, stream: ModelStream, offset_type: int, offset: int) -> tuple[str, int]:
        """Where a new subscription starts ("Subscribe", OffsetSpecification)."""
        n = len(stream.entries)
        if offset_type == OffsetType.FIRST:
            return "at", 0
        if offset_type == OffsetType.LAST:            # the last user chunk (SPEC_NOTES.md)
            end = stream.last_user_end()
            return ("last", end) if end is not None else ("at", n)
        width = self.width or 0                       # (unknown only for a stream without tracking)
        if offset_type == OffsetType.NEXT or offset >= stream.offset(n, width):
            return "at", n
        # OFFSET: the chunk holding it; the client skips the records before it. An offset of a
        # tracking chunk: the next user chunk.
        for i, entry in enumerate(stream.entries):
            at = stream.offset(i, width)
            if entry.records is not None and at <= offset < at + len(entry.records):
                return "containing", i
            if entry.records is None and width and at == offset:
                return "at", i + 1
        raise AssertionError(f"offset {offset} not in the model")     # (unreachable)

    @rule(sub_id=SUBSCRIPTION_IDS, credit=st.integers(1, 3))
    def credit(self, sub_id, credit):
        """Credit gets no answer, unless the subscription does not exist (then a response
        without correlation id, SPEC_NOTES.md)."""
        if sub_id in self.lost_subs:
            return
        sub = self.subs.get(sub_id)
        wants = []
        if sub is None:
            wants.append(exactly(codec.CreditResponse(Code.SUBSCRIPTION_ID_DOES_NOT_EXIST, sub_id)))
        else:
            sub.credit = min(sub.credit + credit, 0xFFFF)
            sub.granted += credit
        self._exchange(codec.Credit(sub_id, credit), wants=wants)

    @rule(credit=st.integers(1, 3))
    def credit_unknown_subscription(self, credit):
        self.credit(UNKNOWN_ID, credit)

    @rule(cid=cids, sub_id=SUBSCRIPTION_IDS | st.just(UNKNOWN_ID))
    def unsubscribe(self, cid, sub_id):
        if sub_id in self.lost_subs:
            return
        code = Code.OK if self.subs.pop(sub_id, None) is not None else Code.SUBSCRIPTION_ID_DOES_NOT_EXIST
        self._exchange(codec.Unsubscribe(cid, sub_id), wants=[exactly(codec.UnsubscribeResponse(cid, code))])

    # -- offsets ---------------------------------------------------------------------------------

    @rule(cid=cids, reference=st.sampled_from(OFFSET_REFERENCES),
          name=streams | st.sampled_from(STREAM_NAMES),
          offset=st.integers(0, 2**64 - 1), then_query=st.booleans())
    def store_offset(self, cid, reference, name, offset, then_query):
        """StoreOffset has no response; it takes an offset of its own (SPEC_NOTES.md, see the
        module's docstring), so later chunks start one offset later. With ``then_query``, a
        QueryOffset for it follows in the same write. Without ``should`` no StoreOffset goes to
        a missing stream (that it is ignored is SPEC_NOTES.md)."""
        stream = self.model.get(name)
        frames = []
        if stream is not None or self.should:
            frames.append(codec.StoreOffset(reference, self.names[name], offset))
        if stream is not None:
            stream.offsets[reference] = offset
            stream.add_tracking()
            stream.tracked = True
        wants = []
        if then_query:
            frames.append(codec.QueryOffset(cid, reference, self.names[name]))
            wants.append(self._query_offset_answer(cid, reference, name))
        if frames:
            self._exchange(*frames, wants=wants)

    def _query_offset_answer(self, cid: int, reference: str, name: str) -> Want:
        stream = self.model.get(name)
        if stream is None:
            return exactly(codec.QueryOffsetResponse(cid, Code.STREAM_DOES_NOT_EXIST, 0))
        stream.tracked = True
        if reference in stream.offsets:
            return exactly(codec.QueryOffsetResponse(cid, Code.OK, stream.offsets[reference]))
        if self.should:
            return exactly(codec.QueryOffsetResponse(cid, Code.NO_OFFSET, 0))    # 19, SPEC_NOTES.md
        return Want(("cid", cid), lambda f: isinstance(f, codec.QueryOffsetResponse) and f.code != Code.OK,
                    f"expected QueryOffsetResponse({cid}) with a code other than 1 (no offset stored)")

    @rule(cid=cids, reference=st.sampled_from(OFFSET_REFERENCES),
          name=streams | st.sampled_from(STREAM_NAMES))
    def query_offset(self, cid, reference, name):
        self._exchange(codec.QueryOffset(cid, reference, self.names[name]),
                       wants=[self._query_offset_answer(cid, reference, name)])

    # -- invariants ------------------------------------------------------------------------------

    @invariant()
    def credit_never_exceeded(self):
        for sub_id, sub in self.subs.items():
            assert sub.delivered <= sub.granted, f"subscription {sub_id} got more chunks than credit"
            assert sub.credit == sub.granted - sub.delivered, f"subscription {sub_id}: credit mismatch"

    @invariant()
    def connection_open(self):
        assert not self.driver.closed, "the server closed the connection"
