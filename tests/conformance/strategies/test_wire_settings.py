"""The runner of the suites' state machines (conformance/strategies/wire_settings.py): the same
examples run after run, every example on a sound link, the first examples of that same sequence
when the budget's share runs out, and a failure found before that is shrunk and reported."""
from __future__ import annotations

import time

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from wirecheck.conformance.strategies import wire_settings as ws
from wirecheck.conformance.target.connection import Budget, BudgetSpent


def _machine(log: list, fail_on=None, sleep=0.0, spend=None):
    class Toy(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            log.append([])

        @rule(n=st.integers(0, 1000))
        def step(self, n):
            if spend is not None:
                spend()
            time.sleep(sleep)
            log[-1].append(n)
            assert fail_on is None or n < fail_on, n
    return Toy


def test_the_same_examples_run_after_run():
    runs = []
    for _ in range(2):
        log: list = []
        assert ws.run_machine(_machine(log), ws.wire_settings(8, 5), Budget(60.0)) == 8
        runs.append(log)
    assert runs[0] == runs[1] and len(runs[0]) == 8


def test_a_slow_link_runs_the_first_examples_of_the_same_sequence():
    fast: list = []
    ws.run_machine(_machine(fast), ws.wire_settings(20, 5), Budget(60.0))
    slow: list = []
    # 0.4 x 1 s for the examples; each takes 5 x 0.03 s
    count = ws.run_machine(_machine(slow, sleep=0.03), ws.wire_settings(20, 5), Budget(1.0))
    assert ws.MIN_EXAMPLES <= count < 20 and len(slow) == count
    assert slow == fast[:count]


def test_a_failure_found_before_the_cut_is_still_shrunk_and_reported():
    log: list = []
    with pytest.raises(AssertionError) as failed:
        # found in the first examples; shrinking it goes on well past the examples' 0.4 s
        ws.run_machine(_machine(log, fail_on=10, sleep=0.02), ws.wire_settings(50, 5), Budget(1.0))
    assert str(failed.value).splitlines()[0] == "10"   # shrunk to the smallest failing value
    assert len(log) > 0.4 / (5 * 0.02)


def test_a_spent_budget_is_reported_as_such():
    budget = Budget(0.2)

    def spend():
        if time.monotonic() > budget.deadline:
            raise BudgetSpent("spent")
    with pytest.raises(BudgetSpent):
        ws.run_machine(_machine([], sleep=0.05, spend=spend), ws.wire_settings(50, 5), Budget(60.0))


def test_a_failure_whose_shrinking_outlasts_the_budget_is_reported_as_that_failure():
    """A target that fails the machine's checks, and whose every connection costs, spends the
    test's budget while hypothesis shrinks: the verdict is the failure, as far as it was shrunk."""
    budget = Budget(60.0, max_connections=12)
    log: list = []

    def spend():
        if len(log[-1]) == 0:
            budget.opened()                 # a connection per example
    with pytest.raises(AssertionError) as failed:
        ws.run_machine(_machine(log, fail_on=10, spend=spend), ws.wire_settings(50, 5), budget)
    assert any("not shrunk further" in note for note in getattr(failed.value, "__notes__", [])), failed.value


def test_the_examples_do_not_depend_on_the_modules_loaded(tmp_path, monkeypatch):
    """Hypothesis draws now and then a constant from the source of the "local" modules loaded
    so far; an xdist worker loads other modules than a serial run. The runner's examples are
    the same whatever has been imported."""
    import importlib
    import sys
    before: list = []
    ws.run_machine(_machine(before), ws.wire_settings(30, 10), Budget(60.0))
    (tmp_path / "wirecheck_many_constants.py").write_text(
        "VALUES = (" + ", ".join(str(1000 - 7 * i) for i in range(120)) + ")\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("wirecheck_many_constants")
    try:
        after: list = []
        ws.run_machine(_machine(after), ws.wire_settings(30, 10), Budget(60.0))
    finally:
        sys.modules.pop(module.__name__, None)
    assert before == after
