"""The BlipMQ state machine (wirecheck/conformance/strategies/blipmq_machine.py) against the reference
session in memory: every rule's answer checked against the model, SHOULD-level rules included.
The same machine runs over the wire in wirecheck/conformance/suites/blipmq/test_stateful.py."""
from hypothesis import HealthCheck, settings

from wirecheck.conformance.strategies.blipmq_machine import BlipMachine


class SessionMachine(BlipMachine):
    """Reference semantics, QoS1 deliveries kept in flight across steps (time is frozen)."""


class SessionMachineWireRules(BlipMachine):
    """The configuration the wire suite's MUST run uses (no SHOULD checks, immediate acks),
    so a mistake in it shows up here first and without a network."""
    should = False
    defer_acks = False


_SETTINGS = {"deadline": None, "stateful_step_count": 30, "suppress_health_check": [HealthCheck.too_slow]}
SessionMachine.TestCase.settings = settings(max_examples=100, **_SETTINGS)
SessionMachineWireRules.TestCase.settings = settings(max_examples=30, **_SETTINGS)

TestSessionMachine = SessionMachine.TestCase
TestSessionMachineWireRules = SessionMachineWireRules.TestCase
