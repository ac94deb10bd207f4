"""Sequence numbers and the ack window ("MESSAGE" sequence number, "batch-ack"): pure.

Sequence numbers are u16, start at 1 and wrap 65535 -> 1 (0 is never used: SPEC_NOTES, the
real implementation). An ack is cumulative: it acknowledges every message up to and including
its sequence number, across the wrap ("no matter if the sequence number have been wrapped").
"""
from __future__ import annotations

from collections import deque
from typing import Any, Optional

from .constants import SEQUENCE_FIRST, SEQUENCE_MAX


def next_sequence(seq: int) -> int:
    """The number after ``seq`` (65535 -> 1; 0, "none yet", -> 1)."""
    return SEQUENCE_FIRST if seq >= SEQUENCE_MAX or seq < SEQUENCE_FIRST else seq + 1


def acked_range(last_acked: int, upto: int) -> list[int]:
    """The sequence numbers an ack of ``upto`` covers after ``last_acked`` (the document's
    "simplistic example"): from the one after ``last_acked`` to ``upto``, wrapping."""
    if not SEQUENCE_FIRST <= upto <= SEQUENCE_MAX:
        raise ValueError(f"{upto} is not a sequence number (1..65535)")
    out = [n := next_sequence(last_acked)]
    while n != upto:
        n = next_sequence(n)
        out.append(n)
    return out


class AckError(ValueError):
    """An ack for a sequence number that is not in flight."""


class Outbox:
    """The pusher's side: sequence numbers handed out and not yet acked, at most ``window``
    (None: no acks negotiated, nothing is tracked). ``first``: the first sequence number to
    hand out (1, SPEC_NOTES; a test starts near 65535 to reach the wrap without 65,535
    messages first)."""

    __slots__ = ("window", "inflight", "last")

    def __init__(self, window: Optional[int], first: int = SEQUENCE_FIRST) -> None:
        if not SEQUENCE_FIRST <= first <= SEQUENCE_MAX:
            raise ValueError(f"{first} is not a sequence number (1..65535)")
        self.window = window
        self.inflight: deque[tuple[int, Any]] = deque()
        self.last = first - 1                 # the last sequence number handed out (0: none yet)

    def has_room(self) -> bool:
        return self.window is None or len(self.inflight) < self.window

    def send(self, item: Any = None) -> int:
        """The next sequence number, tracked with ``item`` until acked."""
        self.last = next_sequence(self.last)
        if self.window is not None:
            self.inflight.append((self.last, item))
        return self.last

    def ack(self, seq: int) -> list:
        """Release everything up to ``seq``; the items released, oldest first."""
        if all(s != seq for s, _ in self.inflight):
            raise AckError(f"ack of {seq}: not in flight "
                           f"({', '.join(str(s) for s, _ in self.inflight) or 'nothing is'})")
        released = []
        while True:
            s, item = self.inflight.popleft()
            released.append(item)
            if s == seq:
                return released

    def unacked(self) -> list:
        return [item for _, item in self.inflight]


class Inbox:
    """The receiver's side: messages received since the last ack sent."""

    __slots__ = ("window", "pending", "last")

    def __init__(self, window: Optional[int]) -> None:
        self.window = window
        self.pending = 0
        self.last = 0                         # sequence number of the last message received

    def received(self, seq: int) -> bool:
        """Count one message; True when the window is full (an ack is due now)."""
        self.last = seq
        if self.window is None:
            return False
        self.pending += 1
        return self.pending >= self.window

    def take_ack(self) -> Optional[int]:
        """The sequence number to ack now (None: nothing to ack)."""
        if not self.pending:
            return None
        self.pending = 0
        return self.last
