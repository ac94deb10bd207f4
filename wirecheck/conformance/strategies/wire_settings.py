"""Hypothesis settings, and the runner, shared by the state machines the suites run over the wire.

No explain phase: it traces every line the failing examples run (sys.settrace) and keeps the
branch sets of each one, which over a network conversation is slow and grows without bound
against a target that floods (an endless stream of frames: hundreds of megabytes in a minute),
and its output ("these lines ran only in failing examples") means little when the target's
timing, not the example, picks the branches. No database: runs share nothing between targets.
"""
from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from wirecheck.conformance.target import spent_in

PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)


def wire_settings(max_examples: int, steps: int, **extra) -> settings:
    return settings(max_examples=max_examples, stateful_step_count=steps, deadline=None, database=None,
                    phases=PHASES, suppress_health_check=[HealthCheck.too_slow], **extra)


def run_machine(factory, wire: settings) -> None:
    """``run_state_machine_as_test``, except that a test whose budget ran out (target.Budget)
    ends with that :class:`~conformance.target.BudgetSpent`: hypothesis, stopped in the middle
    of an example it was replaying, reports an inconsistent-data error of its own instead."""
    try:
        run_state_machine_as_test(factory, settings=wire)
    except BaseException as exc:
        spent = spent_in(exc)
        if spent is None or spent is exc:
            raise
        raise spent from None
