"""Topics, subscriptions and per-subscription queues of a BlipMQ broker, sans-IO.

Shared by every connection's :class:`~.session.BlipSession`. Time is passed in; durability
goes through an injected :class:`Journal` (the WAL in ``wal.py``, or nothing), so this module
does no I/O.

Semantics (blipmq-protocol.md "PUBLISH", "POLL", "ACK"; SPEC_NOTES.md BlipMQ):
- a publish reaches only the subscriptions of its topic that exist at that moment;
- subscription ids are global, from 1; delivery tags are per subscription, from 1, assigned at
  enqueue (QoS0 messages use tags too) and kept across redeliveries;
- the effective QoS of a delivery is 1 only if both subscription and message are QoS1;
- an unacked QoS1 delivery is queued again after ``retry_backoff * 2**(deliveries-1)`` and
  dropped after ``max_retries`` deliveries;
- each queue holds at most ``max_queue`` pending messages; the oldest pending is evicted;
- at most ``max_subscriptions`` subscriptions exist broker-wide (they outlive connections);
  past it subscribe raises :class:`LimitError`.
"""
from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol


log = logging.getLogger(__name__)

#: Journal record ids and subscription ids are given from 1, one at a time; above this one
#: they would not be told from damage (wal.py) nor fit the u64 fields that carry them.
MAX_ID = (1 << 63) - 1


class JournalError(Exception):
    """The durable log could not record a publish (answered with NACK 500)."""


class LimitError(Exception):
    """A broker-wide bound was reached (answered with NACK 400)."""


class Journal(Protocol):
    def publish(self, qos: int, topic: str, message: bytes, targets: list[int]) -> int: ...
    def subscribe(self, sub_id: int, topic: str, qos: int) -> None: ...
    def settle(self, sub_id: int, msg_id: int) -> None: ...


@dataclass(slots=True)
class QueuedMessage:
    tag: int
    qos: int                 # effective QoS of this delivery
    topic: str
    message: bytes
    msg_id: int = 0          # journal id; 0 when not journaled
    deliveries: int = 0
    retry_at: float = 0.0


@dataclass(slots=True)
class Subscription:
    id: int
    topic: str
    qos: int
    pending: deque = field(default_factory=deque)
    inflight: dict = field(default_factory=dict)    # tag -> QueuedMessage
    next_tag: int = 1


@dataclass(frozen=True, slots=True)
class Delivery:
    subscription_id: int
    tag: int
    qos: int
    topic: str
    message: bytes


class BrokerState:
    def __init__(self, journal: Journal | None = None, *, retry_backoff: float = 0.1,
                 max_retries: int = 3, max_queue: int = 1024,
                 max_subscriptions: int = 10_000) -> None:
        self.journal = journal
        self.max_subscriptions = max_subscriptions
        self.retry_backoff = retry_backoff
        self.max_retries = max_retries
        self.max_queue = max_queue
        self.subscriptions: dict[int, Subscription] = {}
        self.topics: dict[str, list[Subscription]] = {}
        self.next_subscription_id = 1

    # -- commands ----------------------------------------------------------------------------

    def subscribe(self, topic: str, qos: int) -> int:
        if len(self.subscriptions) >= self.max_subscriptions:
            raise LimitError(f"subscription limit reached ({self.max_subscriptions})")
        if self.next_subscription_id > MAX_ID:
            raise LimitError("subscription ids exhausted")
        sub = Subscription(self.next_subscription_id, topic, qos)
        self.next_subscription_id += 1
        if self.journal is not None:
            self.journal.subscribe(sub.id, topic, qos)
        self._add(sub)
        return sub.id

    def publish(self, qos: int, topic: str, message: bytes) -> None:
        """Fan out to the topic's current subscriptions; QoS1 is journaled first (may raise
        :class:`JournalError`, and then nothing is enqueued)."""
        subs = self.topics.get(topic, ())
        msg_id = 0
        if qos == 1 and self.journal is not None:
            targets = [s.id for s in subs if s.qos == 1]
            msg_id = self.journal.publish(qos, topic, message, targets)
        for sub in subs:
            self._enqueue(sub, min(qos, sub.qos), topic, message, msg_id)

    def poll(self, sub_id: int, now: float) -> Delivery | None:
        sub = self.subscriptions.get(sub_id)
        if sub is None:
            return None
        self._requeue_expired(sub, now)
        if not sub.pending:
            return None
        item: QueuedMessage = sub.pending.popleft()
        item.deliveries += 1
        if item.qos == 1:
            item.retry_at = now + self.retry_backoff * (2 ** (item.deliveries - 1))
            sub.inflight[item.tag] = item
        else:
            self._settle(sub, item)
        return Delivery(sub.id, item.tag, item.qos, item.topic, item.message)

    def ack(self, sub_id: int, tag: int) -> bool:
        sub = self.subscriptions.get(sub_id)
        if sub is None:
            return False
        item = sub.inflight.pop(tag, None)
        if item is None:
            return False
        self._settle(sub, item)
        return True

    # -- recovery (wal.py) -------------------------------------------------------------------

    def restore_subscription(self, sub_id: int, topic: str, qos: int) -> None:
        self._add(Subscription(sub_id, topic, qos))
        self.next_subscription_id = max(self.next_subscription_id, sub_id + 1)

    def restore_message(self, sub_id: int, msg_id: int, topic: str, message: bytes) -> None:
        sub = self.subscriptions.get(sub_id)
        if sub is not None:
            self._enqueue(sub, 1, topic, message, msg_id)

    # -- internals ---------------------------------------------------------------------------

    def _add(self, sub: Subscription) -> None:
        self.subscriptions[sub.id] = sub
        self.topics.setdefault(sub.topic, []).append(sub)

    def _enqueue(self, sub: Subscription, qos: int, topic: str, message: bytes, msg_id: int) -> None:
        if len(sub.pending) >= self.max_queue:
            self._settle(sub, sub.pending.popleft())
        sub.pending.append(QueuedMessage(sub.next_tag, qos, topic, message, msg_id if qos == 1 else 0))
        sub.next_tag += 1

    def _requeue_expired(self, sub: Subscription, now: float) -> None:
        if not sub.inflight:
            return
        expired = [item for item in sub.inflight.values() if item.retry_at <= now]
        for item in sorted(expired, key=lambda i: i.retry_at):
            del sub.inflight[item.tag]
            if item.deliveries >= self.max_retries:
                self._settle(sub, item)        # dropped after max retries
            else:
                sub.pending.append(item)       # same tag, back of the queue

    def _settle(self, sub: Subscription, item: QueuedMessage) -> None:
        if item.msg_id and self.journal is not None:
            try:
                self.journal.settle(sub.id, item.msg_id)
            except JournalError as exc:
                # an unjournaled settlement costs at most a delivery again after a restart
                # (at-least-once holds); the ack or poll that caused it is not refused
                log.warning("settlement of message %d not journaled: %s", item.msg_id, exc)
