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


#: Share of the test's remaining I/O budget the examples may take (the rest: shrinking a
#: failure, and slack). Examples cost a round trip per step, so on a slow link fewer fit.
EXAMPLES_SHARE = 0.4
#: Examples run first to measure what one costs on this link.
PROBE_EXAMPLES = 3


def run_machine(factory, wire: settings, budget=None) -> None:
    """``run_state_machine_as_test``, except that a test whose budget ran out (target.Budget)
    ends with that :class:`~conformance.target.BudgetSpent`: hypothesis, stopped in the middle
    of an example it was replaying, reports an inconsistent-data error of its own instead.

    With ``budget``, the number of examples fits the link: a few run first, to measure, then
    the whole run when it fits :data:`EXAMPLES_SHARE` of the budget left at the start at the
    cost those took, else as many examples as fit. A slow link or a busy machine then means fewer examples, never a TIMEOUT (no
    verdict may depend on how fast bytes travel)."""
    if budget is None or wire.derandomize:
        # A derandomized run draws fixed examples: run twice, it would replay the first ones,
        # and a target whose answers vary with timing then reads as inconsistent data
        # generation. It keeps its examples, as configured.
        _run(factory, wire)
        return
    import math
    import time
    left = budget.left()
    allowance = EXAMPLES_SHARE * left if math.isfinite(left) else math.inf
    first = min(PROBE_EXAMPLES, wire.max_examples)
    started = time.monotonic()
    _run(factory, settings(wire, max_examples=first))
    spent = time.monotonic() - started
    if first >= wire.max_examples:
        return
    # Then the whole run as configured when it fits, else as many examples as fit.
    count = wire.max_examples
    if math.isfinite(allowance):
        count = min(count, int((allowance - spent) / max(spent / first, 1e-3)))
    if count > first:
        _run(factory, settings(wire, max_examples=count))


def _run(factory, wire: settings) -> None:
    try:
        run_state_machine_as_test(factory, settings=wire)
    except BaseException as exc:
        spent = spent_in(exc)
        if spent is None or spent is exc:
            raise
        raise spent from None
