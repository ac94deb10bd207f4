"""The observer: a protocol's session rules checking both directions of a conversation that
somebody else had (DESIGN.md "Sessions": "The same rules also run as an observer").

An observer is fed, in the order the bytes were seen, every frame each side sent
(``frame``), every decode error (``malformed``) and each direction's end (``closed``); it
answers nothing. It records a :class:`Violation` for each rule either side broke, with the
requirement ID of the protocol's catalogue (conformance/requirements/<protocol>.py), and an
:class:`Exchange` for each response it could pair with its request (latency). The capture
pipeline (pipeline/), replay and client checking all drive observers this one way.

Like a session, an observer does no I/O and never reads the clock: times are the capture's.
A protocol registers its subclass in the registry's ``observer`` slot.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .errors import FrameError

C2S, S2C = "c2s", "s2c"


@dataclass(frozen=True, slots=True)
class Violation:
    requirement: str     # catalogue ID, e.g. "BLIP-FRAME-002"
    direction: str       # the side at fault: "c2s" (the client sent it) or "s2c" (the server)
    index: int           # the frame's index in the conversation (both directions, from 0)
    message: str


@dataclass(frozen=True, slots=True)
class Exchange:
    request: int         # conversation index of the request frame
    response: int        # conversation index of the frame that answers it
    kind: str            # the request's type
    latency: float       # seconds from request to response (capture times)


class Observer:
    """Base observer: keeps the records and the indexes; checks nothing. A protocol's
    subclass overrides :meth:`frame` (and :meth:`malformed`, :meth:`closed`, :meth:`finish`
    where it has rules for them) and calls :meth:`violate` and :meth:`answered`."""

    #: Requirement IDs for decode errors by ``Category`` value (a protocol's table); a
    #: category not listed falls back to ``framing_requirement``.
    framing_requirements: dict[str, str] = {}
    framing_requirement: str = ""

    def __init__(self, profile: Optional[str] = None) -> None:
        self.profile = profile
        #: Set by the capture reader before the first frame when the capture lacks the
        #: connection's start (its SYN): rules that need the conversation's history (the
        #: handshake came first) cannot be judged.
        self.mid_stream = False
        self.violations: list[Violation] = []
        self.exchanges: list[Exchange] = []

    # -- what the capture reader calls ---------------------------------------------------------

    def frame(self, direction: str, frame: Any, index: int, time: float) -> Optional[Exchange]:
        """A whole frame ``direction``'s side sent. Returns the :class:`Exchange` when this
        frame answers a request seen before (the pipeline puts its latency on the frame)."""
        return None

    def malformed(self, direction: str, error: FrameError, index: int, time: float) -> None:
        """``direction``'s bytes do not decode (``index``: where the next frame would have
        been). Nothing more of that direction is decoded. The default records the protocol's
        framing requirement for the error's category."""
        category = getattr(error.category, "value", error.category)
        requirement = self.framing_requirements.get(str(category), self.framing_requirement)
        if requirement:
            self.violate(requirement, direction, index, f"{category}: {error}")

    def closed(self, direction: str, how: str, index: int, time: float) -> None:
        """``direction`` ended: ``how`` is "fin", "rst", "reused" or "end" (the capture ended,
        which says nothing about either side)."""

    def finish(self, time: float) -> None:
        """The conversation is over (both directions ended): final checks."""

    # -- what subclasses call --------------------------------------------------------------------

    def violate(self, requirement: str, direction: str, index: int, message: str) -> None:
        self.violations.append(Violation(requirement, direction, index, message))

    def answered(self, request: int, response: int, kind: str, latency: float) -> Exchange:
        exchange = Exchange(request, response, kind, latency)
        self.exchanges.append(exchange)
        return exchange
