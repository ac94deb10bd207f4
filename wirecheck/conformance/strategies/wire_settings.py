"""Hypothesis settings, and the runner, shared by the state machines the suites run over the wire.

No explain phase: it traces every line the failing examples run (sys.settrace) and keeps the
branch sets of each one, which over a network conversation is slow and grows without bound
against a target that floods (an endless stream of frames: hundreds of megabytes in a minute),
and its output ("these lines ran only in failing examples") means little when the target's
timing, not the example, picks the branches. No database: runs share nothing between targets.
"""
from __future__ import annotations

from contextlib import contextmanager

from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import Frozen, StopTest, UnsatisfiedAssumption
from hypothesis.stateful import run_state_machine_as_test

from wirecheck.conformance.target.connection import raised_in, spent_in

PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)


def wire_settings(max_examples: int, steps: int, **extra) -> settings:
    """Derandomized: every run draws the same examples (a fixed seed), so a verdict is the same
    run after run and with any number of workers; exploring further is the fuzzers' job."""
    return settings(max_examples=max_examples, stateful_step_count=steps, deadline=None, database=None,
                    phases=PHASES, suppress_health_check=[HealthCheck.too_slow], derandomize=True, **extra)


#: Share of the test's remaining I/O budget the examples may take (the rest: shrinking a
#: failure, and slack). Examples cost a round trip per step, so on a slow link fewer fit.
EXAMPLES_SHARE = 0.4
#: Examples that run whatever the link's speed.
MIN_EXAMPLES = 3

#: What hypothesis raises inside a test for its own bookkeeping: no failure of the target.
_BOOKKEEPING = (UnsatisfiedAssumption, StopTest, Frozen)


class _ExamplesCut(BaseException):
    """Raised at the start of an example once the examples' share of the budget is spent and
    no example has failed: a ``BaseException``, so that hypothesis does not take it for a
    failure (to shrink and replay) but stops; :func:`run_machine` ends the run there."""


def run_machine(factory, wire: settings, budget=None) -> int:
    """``run_state_machine_as_test``, except that a test whose budget ran out (target.Budget)
    ends with that :class:`~conformance.target.BudgetSpent`: hypothesis, stopped in the middle
    of an example it was replaying, reports an inconsistent-data error of its own instead.

    One run, derandomized (:func:`wire_settings`), so that the examples are the same run after
    run and with any number of workers. With ``budget``, an example that would start after
    :data:`EXAMPLES_SHARE` of the budget left at the start is spent (at least
    :data:`MIN_EXAMPLES` run) does not start, unless an example has failed (its shrinking and
    replay go on): a slow link or a busy machine then means the first examples of the same
    sequence, never a TIMEOUT (no verdict may depend on how fast bytes travel), and on a
    sound link every example runs. (A probe run first, to measure, then a second run would
    draw the same first examples again, and a target whose answers vary with timing then
    reads to hypothesis as flaky data generation.) Returns the number of examples started."""
    import math
    import sys
    import time
    left = budget.left() if budget is not None else math.inf
    allowance = EXAMPLES_SHARE * left if math.isfinite(left) else math.inf
    started = time.monotonic()
    state = {"examples": 0, "failed": None}

    def guarded():
        if (state["failed"] is None and state["examples"] >= MIN_EXAMPLES
                and time.monotonic() - started > allowance):
            raise _ExamplesCut()
        machine = factory()
        state["examples"] += 1
        teardown = machine.teardown

        def noting_teardown():
            # hypothesis calls teardown in a ``finally``: an exception on its way out is a
            # failed example (CPython shows it to code called from there)
            failure = sys.exc_info()[1]
            if isinstance(failure, Exception) and not isinstance(failure, _BOOKKEEPING):
                state["failed"] = failure
            teardown()
        machine.teardown = noting_teardown
        return machine

    try:
        with _without_local_constants():
            _run(guarded, wire)
    except BaseException as exc:
        if raised_in(exc, _ExamplesCut) is not None:
            return state["examples"]
        failure = state["failed"]
        if failure is not None and spent_in(exc) is not None:
            # The budget ran out while hypothesis shrank (or replayed) a failure: the verdict
            # is that failure, as far as it was shrunk, not a timeout of the test.
            failure.add_note(f"(not shrunk further: {spent_in(exc)})")
            raise failure from None
        raise
    return state["examples"]


@contextmanager
def _without_local_constants():
    """Hypothesis draws, now and then, a constant found in the source of the "local" modules
    loaded so far (those outside site-packages: the checkout, a user's conftest), even when
    derandomized: which modules a process has loaded (an xdist worker, the tests run before)
    would then change the examples. Within the run the pool is empty; hypothesis versions
    without it are left alone."""
    try:
        from hypothesis.internal.conjecture import providers
        get, cache, empty = providers._get_local_constants, providers.CONSTANTS_CACHE.cache, providers.Constants()
    except (ImportError, AttributeError):
        yield
        return
    providers._get_local_constants = lambda: empty
    cache.clear()                        # allowed choices, cached with the pool they came from
    try:
        yield
    finally:
        providers._get_local_constants = get
        cache.clear()


def _run(factory, wire: settings) -> None:
    try:
        run_state_machine_as_test(factory, settings=wire)
    except BaseException as exc:
        spent = spent_in(exc)
        if spent is None or spent is exc:
            raise
        raise spent from None
