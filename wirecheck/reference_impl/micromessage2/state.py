"""What the Micromessage2 broker shares between connections: topics, queues, subscriptions.
Sans-IO: a subscriber is anything with ``has_room()``, ``deliver(message)`` and ``typed``.

Destinations (the kit's reading of the pubsub extension; the document's glossary): a name
starting with ``topic/`` is a TOPIC, every matching subscriber gets each message and a message
with no subscriber is dropped ("The order of messages is not important"); any other name is a
QUEUE, each message goes to one subscriber (round robin among those whose filter matches and
whose ack window has room), in order, and waits while none can take it. A queue message a
subscriber had not acked when it went away is given to another ("reliable": acks, not
transactions).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from .constants import TOPIC_PREFIX
from .filters import Filter


@dataclass(frozen=True, slots=True)
class Stored:
    """A message as the broker keeps it: what the publisher sent, plus the .NET type name the
    publisher's dotnet frame gave it (if any)."""
    destination: str
    payload: bytes
    properties: tuple[tuple[str, str], ...] = ()
    dotnet_type: Optional[str] = None


@dataclass(eq=False)
class Subscription:
    subscriber: object
    destination: str
    filter: Optional[Filter] = None

    def wants(self, message: Stored) -> bool:
        return self.filter is None or self.filter.matches(message.properties, self.subscriber.typed)


@dataclass
class Queue:
    messages: deque = field(default_factory=deque)
    subscriptions: list = field(default_factory=list)
    turn: int = 0                       # round-robin position


class QueueFull(Exception):
    pass


def is_topic(destination: str) -> bool:
    return destination.startswith(TOPIC_PREFIX)


class BrokerState:
    def __init__(self, max_queue_length: int = 100_000) -> None:
        self.max_queue_length = max_queue_length
        self.topics: dict[str, list[Subscription]] = {}
        self.queues: dict[str, Queue] = {}

    def subscribe(self, subscriber, destination: str, filter: Optional[Filter] = None) -> Subscription:
        sub = Subscription(subscriber, destination, filter)
        if is_topic(destination):
            self.topics.setdefault(destination, []).append(sub)
        else:
            self.queues.setdefault(destination, Queue()).subscriptions.append(sub)
            self.dispatch(destination)
        return sub

    def publish(self, message: Stored) -> int:
        """Route ``message``; the number of subscribers it went to (queues: 0 while it waits).
        :class:`QueueFull` when a queue is at its bound."""
        if is_topic(message.destination):
            subs = [s for s in self.topics.get(message.destination, ()) if s.wants(message)]
            for s in subs:
                s.subscriber.deliver(message)
            return len(subs)
        queue = self.queues.setdefault(message.destination, Queue())
        if len(queue.messages) >= self.max_queue_length:
            raise QueueFull(f"queue {message.destination!r} holds {self.max_queue_length} messages")
        # Every waiting message was already offered to every subscription as things stand (a
        # subscribe, freed room or a requeue dispatches again), and delivering one frees no
        # room: only the new message can go now, so the backlog is not rescanned.
        if self._hand_over(queue, message):
            return 1
        queue.messages.append(message)
        return 0

    def dispatch(self, destination: str) -> None:
        """Hand waiting queue messages, in order, to subscribers with room."""
        queue = self.queues.get(destination)
        if queue is None or not queue.messages or not queue.subscriptions:
            return
        kept = deque()
        while queue.messages:
            message = queue.messages.popleft()
            if not self._hand_over(queue, message):
                kept.append(message)
        queue.messages = kept

    @staticmethod
    def _hand_over(queue: "Queue", message: Stored) -> bool:
        """Deliver ``message`` to the next subscription (round robin) with room that wants it."""
        subs = queue.subscriptions
        n = len(subs)
        for k in range(n):
            sub = subs[(queue.turn + k) % n]
            if sub.subscriber.has_room() and sub.wants(message):
                queue.turn = (queue.turn + k + 1) % n
                sub.subscriber.deliver(message)
                return True
        return False

    def requeue(self, messages) -> None:
        """Queue messages a subscriber did not ack go back to the front of their queues."""
        for message in reversed(list(messages)):
            if not is_topic(message.destination):
                self.queues.setdefault(message.destination, Queue()).messages.appendleft(message)
        for name in {m.destination for m in messages}:
            self.dispatch(name)

    def room_freed(self, subscriber) -> None:
        """``subscriber``'s window has room again: queues it reads from may go on."""
        for name, queue in list(self.queues.items()):
            if any(s.subscriber is subscriber for s in queue.subscriptions):
                self.dispatch(name)

    def drop(self, subscriber) -> None:
        for subs in self.topics.values():
            subs[:] = [s for s in subs if s.subscriber is not subscriber]
        for queue in self.queues.values():
            queue.subscriptions[:] = [s for s in queue.subscriptions if s.subscriber is not subscriber]
            queue.turn = 0
