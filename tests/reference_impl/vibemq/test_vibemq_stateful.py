"""The VibeMQ queue/subscription state machine (wirecheck/conformance/strategies/vibemq_machine.py)
against reference sessions in memory, over one shared broker state with a frozen clock that
only the machine moves (redelivery, retries exhausted), for the ``document`` and
``vibemq-1.8`` profiles. The same machine runs over the wire in
wirecheck/conformance/suites/vibemq/test_stateful.py."""
from hypothesis import HealthCheck, settings

from wirecheck.conformance.strategies.vibemq_machine import SessionDriver, VibeMachine

_SETTINGS = settings(max_examples=80, stateful_step_count=30, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


def _machine(profile: str):
    class Machine(VibeMachine):
        def make_driver(self):
            return SessionDriver(profile)
    Machine.TestCase.settings = _SETTINGS
    return Machine.TestCase


TestDocument = _machine("document")
TestVibeMQ18 = _machine("vibemq-1.8")


class _ListsNoQueues(SessionDriver):
    """The reference session, except that ListQueues always answers an empty list."""

    def exchange(self, slot, messages):
        from wirecheck.reference_impl.vibemq.constants import CommandType as T
        return [m.__class__(T.LIST_QUEUES, m.id, m.queue, [], m.headers)
                if m.type == T.LIST_QUEUES else m for m in super().exchange(slot, messages)]


def test_a_broken_step_names_the_rule_it_checks():
    """A target whose one defect is an empty ListQueues fails the run on VIBE-QUEUE-005 alone
    (a Breach), not on the run's twenty-five requirements."""
    import pytest
    from hypothesis import Phase
    from hypothesis.stateful import run_state_machine_as_test

    from wirecheck.conformance.report.verdicts import Breach

    class Machine(VibeMachine):
        def make_driver(self):
            return _ListsNoQueues("document")
    with pytest.raises(Breach) as failed:
        run_state_machine_as_test(Machine, settings=settings(_SETTINGS, max_examples=200, database=None,
                                                             derandomize=True, phases=(Phase.generate, Phase.shrink)))
    assert failed.value.requirements == ("VIBE-QUEUE-005",), failed.value
