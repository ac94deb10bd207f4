"""The (session state x incoming client frame type) matrix of a protocol's state machine, as
data, and the record of which pairs a machine's steps sent (STYLE.md 5: "the exhaustive
``state x input`` hypothesis test").

Each machine module defines one :class:`Matrix` next to its machine: the states as its model
names them, the client-to-server frame types of the document (plus ``unknown type`` and
``malformed`` where the machine sends those), and the pairs it does not send, each with the
reason. The machine counts every frame it sends and checks, by (state, frame type), in a
class-level :class:`collections.Counter` (``reached``); tests/conformance/strategies/test_stateful_coverage.py runs
each machine in memory with a fixed seed and asserts that every other pair was reached.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

from wirecheck.conformance.report.verdicts import Breach

UNKNOWN = "unknown type"
MALFORMED = "malformed"


@dataclass(frozen=True)
class Matrix:
    protocol: str
    states: tuple[str, ...]
    frames: tuple[str, ...]
    #: (state, frame type) -> why the machine never sends that pair (impossible, or not sent).
    excluded: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for state, frame in self.excluded:
            assert state in self.states and frame in self.frames, (state, frame)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return [(s, f) for s in self.states for f in self.frames]

    @property
    def reachable(self) -> list[tuple[str, str]]:
        return [p for p in self.pairs if p not in self.excluded]

    def missing(self, reached: Counter) -> list[tuple[str, str]]:
        return [p for p in self.reachable if not reached[p]]

    def unexpected(self, reached: Counter) -> list[tuple[str, str]]:
        """Pairs recorded that the matrix does not have, or says are never sent."""
        return sorted(p for p in reached if p not in self.pairs or p in self.excluded)

    def render(self, reached: Counter | None = None) -> str:
        """A Markdown table: ``x`` reached (or reachable, without ``reached``), ``-`` excluded."""
        head = "| state | " + " | ".join(self.frames) + " |"
        rows = [head, "|" + "---|" * (len(self.frames) + 1)]
        for s in self.states:
            cells = []
            for f in self.frames:
                if (s, f) in self.excluded:
                    cells.append("-")
                elif reached is None:
                    cells.append("x")
                else:
                    cells.append(str(reached[(s, f)]) if reached[(s, f)] else "MISSING")
            rows.append(f"| {s} | " + " | ".join(cells) + " |")
        return "\n".join(rows)


def excluding(states, frames, reason: str) -> dict:
    """Every (state, frame) pair of ``states`` x ``frames``, with one reason."""
    return {(s, f): reason for s in states for f in frames}


def probe_answers(recv, is_barrier, limit: int, on_answer=None) -> tuple[list, object]:
    """What a probe connection answers, over the wire: frames from ``recv()`` until the one
    ``is_barrier`` accepts -> (the frames before it, that frame), or until the target closes ->
    (the frames, None). More than ``limit`` answers without the barrier's is a TargetError;
    ``on_answer(frame)`` may reply to an answer (a Close wants its CloseResponse)."""
    from wirecheck.conformance.target.connection import TargetClosed, TargetError
    answers: list = []
    try:
        while True:
            frame = recv()
            if is_barrier(frame):
                return answers, frame
            answers.append(frame)
            if on_answer is not None:
                on_answer(frame)
            if len(answers) > limit:
                raise TargetError(f"{len(answers)} answers on a probe connection and no barrier answer")
    except TargetClosed:
        return answers, None


def holds(condition, text: str, rule: str | None) -> None:
    """A check of a state machine's: failing, a :class:`~conformance.verdicts.Breach` of
    ``rule`` (the requirement the step checks, charged alone), or without one a plain failure
    of the run's requirements, all of them."""
    if not condition:
        if rule is None:
            raise AssertionError(text)
        raise Breach(text, rule)
