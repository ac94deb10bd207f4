"""Queues, subscriptions, in-flight deliveries and dead letters of a VibeMQ broker, sans-IO.

Shared by every connection's :class:`~.session.VibeSession`. Time is passed in (``now``, the
broker's monotonic clock); ``wall_offset`` turns it into the wall-clock ``createdAt`` of
QueueInfo. Nothing here does I/O: a delivery is handed to the connection's consumer object
(``consumer.deliver(message, attempts)``), which encodes and sends it.

Behaviour, where the document ("Command Descriptions", "Queue Headers") leaves it open, follows
the real server (VibeMQ v1.8: ``Queues/QueueManager.cs``, ``Queues/MessageQueue.cs``,
``Delivery/AckTracker.cs``, ``Configuration/QueueOptions.cs``):

- queue defaults: RoundRobin, at most 10,000 messages, no TTL, no DLQ, DropOldest, 3 attempts;
  publish and subscribe create an unknown queue when ``auto_create`` is on (real default);
- RoundRobin and PriorityBased give each message to one subscriber in turn, PriorityBased
  taking the highest priority first (Critical > High > Normal > Low; FIFO within a priority,
  where the real server's unstable sort leaves it open); FanOutWithAck gives each message to
  every current subscriber and tracks an ack from each; FanOutWithoutAck gives it to every
  subscriber and forgets it. Messages wait in the queue while nobody is subscribed (real);
  unlike the real server (which dequeues one message per publish) the backlog is also handed
  out on subscribe, on ack and on requeue;
- an ack-tracked delivery not acked within ``ack_timeout`` (real: 30 s) is sent again to the
  same connection with ``deliveryAttempts`` + 1; the next retry waits
  ``retry_base_delay * 2**(attempts-1)`` capped at ``retry_max_delay`` (real: 2 s, 2 min);
  once ``maxRetryAttempts`` deliveries are unacked it is dropped, or dead-lettered when the
  queue has a DLQ (AckTracker "Max retries exhausted");
- a connection that goes away gives its unacked RoundRobin/PriorityBased messages back to
  their queue (real ``RemoveAllForClient`` + ``RequeueMessages``); its FanOutWithAck copies
  are dropped (they were its own copies);
- overflow at ``maxQueueSize``: DropOldest (real default) evicts the oldest waiting message;
  DropNewest and BlockPublisher refuse the new one; RedirectToDlq sends it to the DLQ (real
  ``ApplyOverflowStrategy``); the publisher still gets its PublishAck (real);
- TTL (``messageTtl``, "Queue Headers": milliseconds): a waiting message older than the TTL is
  removed, into the DLQ when enabled (``QueueOptions.MessageTtl``: "discarded or moved to
  DLQ"; the real server stores but never enforces it). Heads of the queue expire on a timer;
  a requeued message behind fresher ones expires when it reaches the head;
- the dead-letter queue is an ordinary queue named ``deadLetterQueueName`` or
  ``<queue>.dlq`` (created on demand, without a DLQ of its own), so clients can subscribe to it
  and read it with QueueInfo; dead letters carry ``x-dead-letter-reason``
  (``MaxRetriesExceeded``, ``MessageExpired``, ``QueueFull``) and ``x-original-queue``.

Everything is bounded: queues (``max_queues``), messages per queue, in-flight deliveries per
connection (``max_inflight``; a full connection gets nothing more until it acks), the timer
heap (one entry per in-flight delivery plus one per queue with a TTL).
"""
from __future__ import annotations

import heapq
import itertools
from collections import deque
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, Optional, Protocol

from .constants import PRIORITIES, DeliveryMode

#: "Message Headers" priority names -> rank (MessagePriority.cs: Low=0 .. Critical=3).
PRIORITY_RANK = {name.lower(): rank for rank, name in enumerate(PRIORITIES)}
NORMAL = 1


class Overflow(IntEnum):
    """OverflowStrategy.cs."""
    DropOldest = 0
    DropNewest = 1
    BlockPublisher = 2
    RedirectToDlq = 3


class LimitError(Exception):
    """A broker-wide bound was reached (answered with SERVER_ERROR)."""


def parse_priority(value: Optional[str]) -> int:
    """Like .NET ``Enum.TryParse(value, ignoreCase: true)``: a name or a defined number; anything
    else is Normal (PublishHandler.cs)."""
    if value is None:
        return NORMAL
    text = value.strip()
    if text.lower() in PRIORITY_RANK:
        return PRIORITY_RANK[text.lower()]
    if text.isdigit() and int(text) < len(PRIORITIES):
        return int(text)
    return NORMAL


@dataclass(frozen=True, slots=True)
class QueueOptions:
    """QueueOptions.cs, with ``ttl`` in seconds (None: never expires)."""
    mode: DeliveryMode = DeliveryMode.ROUND_ROBIN
    max_size: int = 10_000
    ttl: Optional[float] = None
    dead_letter: bool = False
    dead_letter_name: Optional[str] = None
    overflow: Overflow = Overflow.DropOldest
    max_retries: int = 3


@dataclass(slots=True)
class StoredMessage:
    id: str
    queue: str
    payload: Any
    headers: Optional[dict]
    priority: int
    seq: int
    expires_at: Optional[float] = None
    attempts: int = 0            # deliveries so far (RoundRobin/PriorityBased)


class Consumer(Protocol):
    def deliver(self, message: StoredMessage, attempts: int) -> None: ...


class Queue:
    """One queue: waiting messages (one deque per priority), subscribers in subscription order."""

    def __init__(self, name: str, options: QueueOptions, created_at: float) -> None:
        self.name = name
        self.options = options
        self.created_at = created_at
        self.lanes: tuple[deque, ...] = tuple(deque() for _ in PRIORITIES)
        self.count = 0
        self.subscribers: dict[int, None] = {}      # connection id -> None, ordered
        self.rr = 0
        self.ttl_armed: Optional[float] = None

    def __len__(self) -> int:
        return self.count

    def _lane(self, message: StoredMessage) -> deque:
        if self.options.mode is DeliveryMode.PRIORITY_BASED:
            return self.lanes[message.priority]
        return self.lanes[NORMAL]

    def push(self, message: StoredMessage) -> None:
        self._lane(message).append(message)
        self.count += 1

    def pop(self) -> Optional[StoredMessage]:
        """The next message to hand out: highest priority first, FIFO within one."""
        for lane in reversed(self.lanes):
            if lane:
                self.count -= 1
                return lane.popleft()
        return None

    def pop_oldest(self) -> Optional[StoredMessage]:
        heads = [lane for lane in self.lanes if lane]
        if not heads:
            return None
        self.count -= 1
        return min(heads, key=lambda lane: lane[0].seq).popleft()

    def pop_expired_heads(self, now: float) -> list[StoredMessage]:
        out = []
        for lane in self.lanes:
            while lane and lane[0].expires_at is not None and lane[0].expires_at <= now:
                out.append(lane.popleft())
                self.count -= 1
        return out

    def next_expiry(self) -> Optional[float]:
        times = [lane[0].expires_at for lane in self.lanes if lane and lane[0].expires_at is not None]
        return min(times) if times else None


@dataclass(slots=True)
class InFlight:
    message: StoredMessage
    conn: int
    attempts: int
    max_retries: int
    due: float
    requeue: bool                # give it back to the queue if the connection goes away


@dataclass
class StateConfig:
    ack_timeout: float = 30.0
    retry_base_delay: float = 2.0
    retry_max_delay: float = 120.0
    auto_create: bool = True
    max_queues: int = 10_000
    max_connections: int = 1000
    max_inflight: int = 10_000
    #: Largest ``maxQueueSize`` a CreateQueue may ask for.
    max_queue_size_limit: int = 1_000_000
    default_options: QueueOptions = field(default_factory=QueueOptions)


class BrokerState:
    def __init__(self, config: Optional[StateConfig] = None, *, wall_offset: float = 0.0) -> None:
        self.config = config or StateConfig()
        self.wall_offset = wall_offset
        self.queues: dict[str, Queue] = {}
        self.consumers: dict[int, Consumer] = {}
        self.inflight: dict[tuple[int, int], InFlight] = {}          # (conn, seq) -> delivery
        self._by_id: dict[tuple[int, str], deque] = {}                # (conn, message id) -> seqs
        self._conn_inflight: dict[int, int] = {}
        self._heap: list = []                                         # (when, n, kind, key)
        self._n = itertools.count()
        self._seq = itertools.count(1)
        self._conn_ids = itertools.count(1)
        self._fresh = itertools.count(1)
        self.dead_lettered = 0

    # -- connections -------------------------------------------------------------------------

    def new_id(self) -> str:
        """A fresh message id (32 hex digits, the shape of the real server's Guid "N")."""
        return f"{next(self._fresh):032x}"

    def connect(self, consumer: Consumer) -> Optional[int]:
        """A connection id, or None when ``max_connections`` are open (ConnectionManager.TryAdd)."""
        if len(self.consumers) >= self.config.max_connections:
            return None
        conn = next(self._conn_ids)
        self.consumers[conn] = consumer
        self._conn_inflight[conn] = 0
        return conn

    def disconnect(self, conn: int, now: float) -> None:
        if self.consumers.pop(conn, None) is None:
            return
        touched = []
        for queue in self.queues.values():
            if conn in queue.subscribers:
                del queue.subscribers[conn]
                touched.append(queue)
        for key in [k for k in self.inflight if k[0] == conn]:
            item = self._untrack(key)
            if item.requeue and (queue := self.queues.get(item.message.queue)) is not None:
                self._enqueue(queue, item.message, now)
                touched.append(queue)
        self._conn_inflight.pop(conn, None)
        for queue in touched:
            if queue.name in self.queues:
                self._pump(queue, now)

    # -- queues ------------------------------------------------------------------------------

    def create_queue(self, name: str, options: Optional[QueueOptions], now: float) -> bool:
        """False if it exists (the real server then keeps the old one and still answers)."""
        if name in self.queues:
            return False
        if len(self.queues) >= self.config.max_queues:
            raise LimitError(f"at most {self.config.max_queues} queues")
        self.queues[name] = Queue(name, options or self.config.default_options, now)
        return True

    def delete_queue(self, name: str) -> bool:
        """Waiting messages go with the queue; its subscribers are unsubscribed; deliveries in
        flight can still be acked (and are dropped if they come back)."""
        return self.queues.pop(name, None) is not None

    def queue_snapshot(self, name: str, now: float) -> Optional[dict]:
        queue = self.queues.get(name)
        if queue is None:
            return None
        self._expire(queue, now)
        o = queue.options
        return {"name": name, "messageCount": len(queue),
                "subscriberCount": len(queue.subscribers), "deliveryMode": o.mode,
                "maxSize": o.max_size, "createdAt": queue.created_at + self.wall_offset,
                "messageTtl": o.ttl, "enableDeadLetterQueue": o.dead_letter,
                "deadLetterQueueName": o.dead_letter_name, "overflowStrategy": o.overflow,
                "maxRetryAttempts": o.max_retries}

    def list_queues(self) -> list[str]:
        return list(self.queues)

    def _ensure(self, name: str, now: float) -> Optional[Queue]:
        queue = self.queues.get(name)
        if queue is None and self.config.auto_create:
            self.create_queue(name, None, now)
            queue = self.queues[name]
        return queue

    # -- messages ----------------------------------------------------------------------------

    def publish(self, queue_name: str, message_id: str, payload: Any, headers: Optional[dict],
                now: float) -> Optional[bool]:
        """None: no such queue (auto_create off); True: queued; False: refused by overflow."""
        queue = self._ensure(queue_name, now)
        if queue is None:
            return None
        priority = parse_priority((headers or {}).get("priority"))
        ttl = queue.options.ttl
        message = StoredMessage(message_id, queue_name, payload, headers, priority,
                                next(self._seq), now + ttl if ttl is not None else None)
        accepted = self._enqueue(queue, message, now)
        self._pump(queue, now)
        return accepted

    def subscribe(self, conn: int, queue_name: str, now: float) -> Optional[Queue]:
        """Register only: the caller answers SubscribeAck, then calls :meth:`pump` so the
        backlog follows the ack."""
        queue = self._ensure(queue_name, now)
        if queue is None:
            return None
        queue.subscribers.setdefault(conn, None)
        return queue

    def pump(self, queue_name: str, now: float) -> None:
        queue = self.queues.get(queue_name)
        if queue is not None:
            self._pump(queue, now)

    def unsubscribe(self, conn: int, queue_name: str) -> None:
        queue = self.queues.get(queue_name)
        if queue is not None:
            queue.subscribers.pop(conn, None)

    def ack(self, conn: int, message_id: str, now: float) -> bool:
        """Settle the oldest unacked delivery of ``message_id`` to ``conn``."""
        seqs = self._by_id.get((conn, message_id))
        if not seqs:
            return False
        item = self._untrack((conn, seqs[0]))
        queue = self.queues.get(item.message.queue)
        if queue is not None:
            self._pump(queue, now)
        else:
            self._pump_all(now)
        return True

    def inflight_count(self, conn: int) -> int:
        return self._conn_inflight.get(conn, 0)

    # -- timers ------------------------------------------------------------------------------

    def next_deadline(self) -> Optional[float]:
        heap = self._heap
        while heap and not self._live(heap[0]):
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def tick(self, now: float) -> None:
        heap = self._heap
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            if not self._live(entry):
                continue
            when, _, kind, key = entry
            if kind == "retry":
                self._retry(key, now)
            else:
                queue = self.queues[key]
                queue.ttl_armed = None
                self._expire(queue, now)

    def _live(self, entry) -> bool:
        when, _, kind, key = entry
        if kind == "retry":
            item = self.inflight.get(key)
            return item is not None and item.due == when
        queue = self.queues.get(key)
        return queue is not None and queue.ttl_armed == when

    def _arm(self, when: float, kind: str, key) -> None:
        heapq.heappush(self._heap, (when, next(self._n), kind, key))

    def _retry(self, key: tuple[int, int], now: float) -> None:
        item = self.inflight[key]
        if item.attempts >= item.max_retries:
            self._untrack(key)
            self._dead_letter(item.message, "MaxRetriesExceeded", now)
            self._pump_all(now)
            return
        item.attempts += 1
        if item.requeue:
            item.message.attempts = item.attempts
        delay = self.config.retry_base_delay * (2 ** min(item.attempts - 1, 30))
        item.due = now + min(delay, self.config.retry_max_delay)
        self._arm(item.due, "retry", key)
        self.consumers[item.conn].deliver(item.message, item.attempts)

    # -- internals ---------------------------------------------------------------------------

    def _enqueue(self, queue: Queue, message: StoredMessage, now: float) -> bool:
        if len(queue) >= queue.options.max_size:
            strategy = queue.options.overflow
            if strategy is Overflow.DropOldest:
                queue.pop_oldest()
            else:
                if strategy is Overflow.RedirectToDlq:
                    self._dead_letter(message, "QueueFull", now, queue)
                return False
        queue.push(message)
        if message.expires_at is not None and (queue.ttl_armed is None or message.expires_at < queue.ttl_armed):
            queue.ttl_armed = message.expires_at
            self._arm(message.expires_at, "ttl", queue.name)
        return True

    def _expire(self, queue: Queue, now: float) -> None:
        for message in queue.pop_expired_heads(now):
            self._dead_letter(message, "MessageExpired", now, queue)
        if queue.ttl_armed is None and (when := queue.next_expiry()) is not None:
            queue.ttl_armed = when
            self._arm(when, "ttl", queue.name)

    def _dead_letter(self, message: StoredMessage, reason: str, now: float,
                     source: Optional[Queue] = None) -> None:
        source = source or self.queues.get(message.queue)
        if source is None or not source.options.dead_letter:
            return
        name = source.options.dead_letter_name or f"{source.name}.dlq"
        target = self.queues.get(name)
        if target is None:
            try:
                self.create_queue(name, QueueOptions(), now)
            except LimitError:
                return
            target = self.queues[name]
        if target is source:
            return
        headers = dict(message.headers or {})
        headers.update({"x-dead-letter-reason": reason, "x-original-queue": source.name})
        dead = replace(message, queue=name, headers=headers, seq=next(self._seq), attempts=0,
                       expires_at=None if target.options.ttl is None else now + target.options.ttl)
        if self._enqueue(target, dead, now):
            self.dead_lettered += 1
        self._pump(target, now)

    def _track(self, conn: int, message: StoredMessage, attempts: int, requeue: bool,
               max_retries: int, now: float) -> None:
        key = (conn, message.seq)
        item = InFlight(message, conn, attempts, max_retries, now + self.config.ack_timeout, requeue)
        self.inflight[key] = item
        self._by_id.setdefault((conn, message.id), deque()).append(message.seq)
        self._conn_inflight[conn] += 1
        self._arm(item.due, "retry", key)

    def _untrack(self, key: tuple[int, int]) -> InFlight:
        item = self.inflight.pop(key)
        ids = self._by_id[(item.conn, item.message.id)]
        ids.remove(key[1])
        if not ids:
            del self._by_id[(item.conn, item.message.id)]
        if item.conn in self._conn_inflight:
            self._conn_inflight[item.conn] -= 1
        return item

    def _has_room(self, conn: int) -> bool:
        return self._conn_inflight.get(conn, 0) < self.config.max_inflight

    def _pop_live(self, queue: Queue, now: float) -> Optional[StoredMessage]:
        while (message := queue.pop()) is not None:
            if message.expires_at is not None and message.expires_at <= now:
                self._dead_letter(message, "MessageExpired", now, queue)
                continue
            return message
        return None

    def _next_subscriber(self, queue: Queue) -> Optional[int]:
        subs = list(queue.subscribers)
        for i in range(len(subs)):
            conn = subs[(queue.rr + i) % len(subs)]
            if self._has_room(conn):
                queue.rr = (queue.rr + i + 1) % len(subs)
                return conn
        return None

    def _pump(self, queue: Queue, now: float) -> None:
        """Hand waiting messages to subscribers as the queue's delivery mode says."""
        if not queue.subscribers or not len(queue):
            return
        mode = queue.options.mode
        while len(queue):
            if mode is DeliveryMode.FAN_OUT_WITHOUT_ACK:
                message = self._pop_live(queue, now)
                if message is None:
                    return
                message.attempts += 1
                for conn in list(queue.subscribers):
                    self.consumers[conn].deliver(message, message.attempts)
            elif mode is DeliveryMode.FAN_OUT_WITH_ACK:
                subs = list(queue.subscribers)
                if not all(self._has_room(c) for c in subs):
                    return
                message = self._pop_live(queue, now)
                if message is None:
                    return
                attempts = message.attempts + 1
                for conn in subs:
                    self._track(conn, message, attempts, False, queue.options.max_retries, now)
                    self.consumers[conn].deliver(message, attempts)
            else:
                conn = self._next_subscriber(queue)
                if conn is None:
                    return
                message = self._pop_live(queue, now)
                if message is None:
                    return
                message.attempts += 1
                self._track(conn, message, message.attempts, True, queue.options.max_retries, now)
                self.consumers[conn].deliver(message, message.attempts)

    def _pump_all(self, now: float) -> None:
        for queue in list(self.queues.values()):
            self._pump(queue, now)
