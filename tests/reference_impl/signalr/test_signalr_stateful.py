"""The SignalR invocation/stream state machine (wirecheck/conformance/strategies/signalr_machine.py)
against the reference session in memory, both encodings and both profiles. The same machine
runs over the wire in wirecheck/conformance/suites/signalr/test_stateful.py."""
from hypothesis import HealthCheck, settings

from wirecheck.conformance.strategies.signalr_machine import HubMachine, SessionDriver

_SETTINGS = settings(max_examples=60, stateful_step_count=25, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


def _machine(profile: str, encoding: str):
    class Machine(HubMachine):
        def make_driver(self):
            return SessionDriver(profile, encoding)
    Machine.TestCase.settings = _SETTINGS
    return Machine.TestCase


TestV1Json = _machine("v1", "json")
TestV1MessagePack = _machine("v1", "messagepack")
TestDraftJson = _machine("draft", "json")
TestDraftMessagePack = _machine("draft", "messagepack")
