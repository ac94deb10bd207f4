"""The VibeMQ state machine's model (strategies/vibemq_machine.py): what a queue holds and who
gets its messages, and the rule each difference between the target's answers and the model's
breaks (by the request's type, an expected Error's code, the queue's delivery mode)."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Optional

from wirecheck.reference_impl.vibemq.constants import CommandType as T, DeliveryMode

#: Deliveries of a message before it is dropped, unless CreateQueue says otherwise.
DEFAULT_RETRIES = 3


@dataclass
class Msg:
    id: str
    queue: str
    payload: Any
    headers: Optional[dict]
    priority: int
    seq: int
    attempts: int = 0            # deliveries so far (RoundRobin/PriorityBased, as the broker counts)


#: The rule a request's answer is checked against, by the request's type.
REPLY_RULES = {T.CREATE_QUEUE: "VIBE-QUEUE-001", T.DELETE_QUEUE: "VIBE-QUEUE-003", T.QUEUE_INFO: "VIBE-QUEUE-004",
               T.LIST_QUEUES: "VIBE-QUEUE-005", T.SUBSCRIBE: "VIBE-SUB-001", T.UNSUBSCRIBE: "VIBE-SUB-002",
               T.PUBLISH: "VIBE-PUB-001", T.PING: "VIBE-PING-001", T.ACK: "VIBE-ACK-001", T.CONNECT: "VIBE-CONN-001"}
#: An Error the model expects, by its code.
ERROR_RULES = {"QUEUE_EXISTS": "VIBE-QUEUE-002", "QUEUE_NOT_FOUND": "VIBE-ERR-002",
               "INVALID_MESSAGE": "VIBE-MSG-006", "UNKNOWN_COMMAND": "VIBE-MSG-006"}
#: Who gets a delivery, by the queue's mode (tests/vibemq suite test_delivery.py).
MODE_RULES = {"RoundRobin": "VIBE-MODE-001", "FanOutWithAck": "VIBE-MODE-002", "FanOutWithoutAck": "VIBE-MODE-003",
              "PriorityBased": "VIBE-MODE-004"}


def reply_rule(messages: list, got: list, want: list):
    """The rule a difference between the answers ``got`` and the model's ``want`` to
    ``messages`` breaks: at the first answer that differs, an expected Error's by its code,
    else the rule of the request it answers; an answer where none is due, the request's."""
    for i, w in enumerate(want):
        g = got[i] if i < len(got) else None
        if g is not None and (g.type, g.id, g.error_code) == (w.type, w.id, w.error_code) and g == w:
            continue
        if w.type == T.ERROR:
            return ERROR_RULES.get(w.error_code, "VIBE-ERR-001")
        request = next((m for m in messages if getattr(m, "id", None) == w.id), None)
        return REPLY_RULES.get(getattr(request, "type", None))
    kinds = {getattr(m, "type", None) for m in messages}
    return REPLY_RULES.get(next(iter(kinds))) if len(kinds) == 1 else None


@dataclass
class MQueue:
    mode: str
    max_size: int
    max_retries: int = DEFAULT_RETRIES
    waiting: list = field(default_factory=list)      # Msg, publish (or requeue) order
    subscribers: list = field(default_factory=list)  # connection keys, subscription order
    recent: deque = field(default_factory=deque)     # RoundRobin recipients since the set changed

    def changed(self) -> None:
        self.recent = deque(maxlen=max(len(self.subscribers) - 1, 0))

    def _heads(self) -> list:
        """The first waiting message of each priority (PriorityBased), else the first."""
        if self.mode != DeliveryMode.PRIORITY_BASED.value:
            return self.waiting[:1]
        heads: dict = {}
        for m in self.waiting:
            heads.setdefault(m.priority, m)
        return list(heads.values())

    def pop(self) -> Msg:
        """The next to hand out: the highest priority first (PriorityBased), in order within one."""
        best = max(self._heads(), key=lambda m: m.priority)
        self.waiting.remove(best)
        return best

    def drop_oldest(self) -> None:
        """DropOldest: the oldest of the heads (a requeued message waits at the back)."""
        self.waiting.remove(min(self._heads(), key=lambda m: m.seq))


@dataclass
class Flight:
    message: Msg
    attempts: int
    max_retries: int
    requeue: bool


@dataclass
class Slot:
    """Expected: ``message`` delivered with ``attempts`` to one of ``candidates`` (one, unless
    RoundRobin chooses)."""
    message: Msg
    attempts: int
    candidates: tuple
    track: Optional[Flight] = None     # template: becomes in flight at the recipient
    queue: Optional[MQueue] = None     # RoundRobin: whose turn rotation to check
