"""The RabbitMQ Stream state machine's model: streams as the entries stored (grouped by the
Publish that stored them, chunk boundaries learned from deliveries), publishers,
subscriptions, and the answers a request may get (:class:`Want`). The rules that use it are in
:mod:`wirecheck.conformance.strategies.rabbitmq_stream_machine`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.constants import Code


@dataclass
class ModelEntry:
    records: list | None          # None: a tracking chunk (StoreOffset), never delivered
    group: int                    # index of the first entry its Publish stored (tracking: its own)
    before: int                   # records stored before it
    trackings: int                # tracking chunks before it


@dataclass
class ModelStream:
    arguments: dict
    entries: list = field(default_factory=list)
    #: Entry indices known to start a chunk, and known to be inside one (learned or given).
    cuts: set = field(default_factory=set)
    inside: set = field(default_factory=set)
    records: int = 0
    trackings: int = 0
    sequences: dict = field(default_factory=dict)     # publisher reference -> last id
    offsets: dict = field(default_factory=dict)       # consumer reference -> stored offset
    #: The connection stored or queried an offset of it: see ``StreamMachine.delete``.
    tracked: bool = False

    def add_group(self, groups: list[list[bytes]]) -> None:
        """One Publish's stored entries (each a list of records): they start a chunk."""
        start = len(self.entries)
        self.cuts.add(start)
        for recs in groups:
            self.entries.append(ModelEntry(list(recs), start, self.records, self.trackings))
            self.records += len(recs)

    def add_tracking(self) -> None:
        index = len(self.entries)
        self.entries.append(ModelEntry(None, index, self.records, self.trackings))
        self.trackings += 1
        self.cuts.add(index)

    def offset(self, index: int, width: int) -> int:
        """The offset of entry ``index`` (``len(entries)``: the next one) when each tracking
        chunk takes ``width`` offsets."""
        if index == len(self.entries):
            return self.records + width * self.trackings
        e = self.entries[index]
        return e.before + width * e.trackings

    def group_end(self, index: int) -> int:
        """The index after the last entry of entry ``index``'s Publish."""
        end = index
        while end < len(self.entries) and self.entries[end].group == self.entries[index].group:
            end += 1
        return end

    def next_user(self, index: int) -> int | None:
        """The first user entry at or after ``index``."""
        for i in range(index, len(self.entries)):
            if self.entries[i].records is not None:
                return i
        return None

    def last_user_end(self) -> int | None:
        """The index after the last user entry, if any."""
        for i in range(len(self.entries) - 1, -1, -1):
            if self.entries[i].records is not None:
                return i + 1
        return None

    def chunk(self, start: int, count: int) -> list | None:
        """The records of a chunk of ``count`` entries from ``start``, if such a chunk can exist
        here: user entries of one Publish, agreeing with the chunk cuts learned so far."""
        end = start + count
        if count < 1 or start < 0 or end > len(self.entries):
            return None
        first = self.entries[start]
        if first.records is None or start in self.inside:
            return None
        if any(self.entries[i].group != first.group for i in range(start, end)):
            return None
        if any(i in self.cuts for i in range(start + 1, end)):
            return None
        if end < len(self.entries) and self.entries[end].group == first.group and end in self.inside:
            return None
        return [r for i in range(start, end) for r in self.entries[i].records]

    def learn(self, start: int, count: int) -> None:
        """A chunk of ``count`` entries from ``start`` was delivered: its edges are cuts."""
        end = start + count
        self.cuts.add(start)
        self.inside.update(range(start + 1, end))
        if end < len(self.entries):
            self.cuts.add(end)


@dataclass
class ModelPublisher:
    stream: str
    reference: str
    next_id: int = 1


@dataclass
class ModelSubscription:
    """Where the next chunk is: ``mode`` "at": the chunk starting at the first user entry at
    or after ``next``; "containing": the chunk holding user entry ``next`` (it may start
    earlier, "Subscribe" with an offset); "last": the chunk ending before entry ``next``, the
    stream's last user chunk when the subscription was made."""
    stream: str
    credit: int
    granted: int                      # credit given in total
    next: int = 0
    mode: str = "at"
    delivered: int = 0                # chunks delivered in total
    last_offset: int = -1             # first offset of the last chunk delivered


@dataclass
class Want:
    """An answer the step expects: identified by ``key``, judged by ``test``; ``rule``: the
    requirement a wrong or missing answer breaks (None: the run's, all of them)."""
    key: tuple
    test: Callable
    text: str
    rule: str | None = None


#: The rule an answer is checked against, by its type, then (type, code) where the code names
#: a rule of its own ("Stream does not exist 2", ...).
ANSWER_RULES = {
    "PeerPropertiesResponse": "RMQS-HS-001", "SaslHandshakeResponse": "RMQS-HS-002",
    "SaslAuthenticateResponse": "RMQS-HS-003", "Tune": "RMQS-HS-004", "OpenResponse": "RMQS-HS-005",
    "CreateResponse": "RMQS-STREAM-001", "DeleteResponse": "RMQS-STREAM-007",
    "DeclarePublisherResponse": "RMQS-PUB-001", "DeletePublisherResponse": "RMQS-PUB-005",
    "QueryPublisherSequenceResponse": "RMQS-PUB-011", "PublishConfirm": "RMQS-PUB-007",
    "PublishError": "RMQS-PUB-008", "SubscribeResponse": "RMQS-SUB-001", "UnsubscribeResponse": "RMQS-UNSUB-001",
    "CreditResponse": "RMQS-CREDIT-003", "QueryOffsetResponse": "RMQS-OFFSET-002",
    "MetadataResponse": "RMQS-META-001", "MetadataUpdate": "RMQS-META-006", "RouteResponse": "RMQS-ROUTE-001",
    "PartitionsResponse": "RMQS-PART-001", "Deliver": "RMQS-DELIVER-001", "CloseResponse": "RMQS-CLOSE-001",
}
CODE_RULES = {
    ("CreateResponse", Code.STREAM_ALREADY_EXISTS): "RMQS-STREAM-002",
    ("CreateResponse", Code.PRECONDITION_FAILED): "RMQS-STREAM-003",
    ("DeleteResponse", Code.STREAM_DOES_NOT_EXIST): "RMQS-STREAM-008",
    ("DeclarePublisherResponse", Code.STREAM_DOES_NOT_EXIST): "RMQS-PUB-002",
    ("DeletePublisherResponse", Code.PUBLISHER_DOES_NOT_EXIST): "RMQS-PUB-006",
    ("QueryPublisherSequenceResponse", Code.STREAM_DOES_NOT_EXIST): "RMQS-PUB-013",
    ("SubscribeResponse", Code.SUBSCRIPTION_ID_ALREADY_EXISTS): "RMQS-SUB-008",
    ("SubscribeResponse", Code.STREAM_DOES_NOT_EXIST): "RMQS-SUB-009",
    ("UnsubscribeResponse", Code.SUBSCRIPTION_ID_DOES_NOT_EXIST): "RMQS-UNSUB-002",
    ("QueryOffsetResponse", Code.STREAM_DOES_NOT_EXIST): "RMQS-OFFSET-006",
}


def answer_rule(frame) -> str | None:
    """The requirement ``frame`` (an answer the model expects or the target sent) is checked
    against."""
    name = type(frame).__name__
    return CODE_RULES.get((name, getattr(frame, "code", None))) or ANSWER_RULES.get(name)


def answer_key(frame) -> tuple:
    if isinstance(frame, codec.CreditResponse):       # no correlation id (SPEC_NOTES.md)
        return ("credit", frame.subscription_id)
    if isinstance(frame, codec.MetadataUpdate):
        return ("update", frame.stream)
    if hasattr(frame, "correlation_id"):
        return ("cid", frame.correlation_id)
    return ("frame", type(frame).__name__)


def exactly(frame) -> Want:
    return Want(answer_key(frame), lambda got: got == frame, f"expected {frame}", answer_rule(frame))


def one_of(frames: list) -> Want:
    """Any of ``frames`` (one key): a request with two defects may get either's code, the
    document does not say which check comes first."""
    if len(frames) == 1:
        return exactly(frames[0])
    return Want(answer_key(frames[0]), lambda got: got in frames, f"expected one of {frames}", answer_rule(frames[0]))
