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
