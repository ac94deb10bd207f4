"""How long a suite may take: a test's wall-clock I/O budget and the whole run's allowance when
the user gives none (--test-budget, --run-budget), from the receive timeout and the profile's
protocol timers. A sound target is far inside them; a hostile one is stopped at them
(docs/start/server.md: a run never takes longer than cases x timeout + 60 s plus the timer wait).
"""
from __future__ import annotations

from wirecheck.conformance.run import lifecycle

#: The run's slack over ``cases x timeout``: a minute, less 5 s kept for start-up, the report
#: and the exit.
RUN_SLACK = 55.0

#: What names a timer among a profile's ``[timing]`` values (seconds); the others are rates
#: and counts (VibeMQ's ``max_messages_per_second``).
_TIMER_WORDS = ("timeout", "delay", "interval", "expire")


def longest_timer(profile) -> float:
    """The longest of the profile's protocol timers, in seconds (0 without any)."""
    timers = [float(v) for k, v in profile.timing.items()
              if any(w in k for w in _TIMER_WORDS) and isinstance(v, (int, float)) and not isinstance(v, bool)]
    return max(timers, default=0.0)


def default_budget(timeout: float, profile) -> float:
    """A test's wall-clock I/O budget when none is given: room for any test against a slow but
    sound target (a few dozen receives, and the protocol timers the profile says the suite waits
    for: a redelivery test waits about three ack timeouts), never unbounded."""
    return 60.0 + 30.0 * timeout + 5.0 * longest_timer(profile)


#: What the run's allowance adds per test that kills the target (``target_process``): two
#: restarts (each up to lifecycle.START_TIMEOUT) and the wait for what the target recovered.
KILLING_CASE_SECONDS = 2 * lifecycle.START_TIMEOUT + 30.0


def default_run_budget(cases: int, timeout: float, profile, killing_cases: int = 0) -> float:
    """The whole run's wall-clock I/O allowance when none is given: each case's receive timeout,
    the time a timer test waits (5 x the profile's longest timer), and :data:`RUN_SLACK`. A sound
    target is far inside it (most tests take a small part of their timeout); a hostile one (a
    flood, answers that never end, a failure hypothesis keeps replaying) is stopped at it, so
    that no run takes longer than ``cases x timeout + 60 s`` plus that timer wait."""
    return cases * timeout + RUN_SLACK + 5.0 * longest_timer(profile) + killing_cases * KILLING_CASE_SECONDS
