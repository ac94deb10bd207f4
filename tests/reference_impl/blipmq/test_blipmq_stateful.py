"""The BlipMQ state machine (wirecheck/conformance/strategies/blipmq_machine.py) against the reference
session in memory: every rule's answer checked against the model, SHOULD-level rules included.
The same machine runs over the wire in wirecheck/conformance/suites/blipmq/test_stateful.py."""
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from wirecheck.conformance.strategies.blipmq_machine import BlipMachine, SessionDriver, split_at_barrier
from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import Ping


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


class TickingDriver(SessionDriver):
    """The reference session with a clock that moves a second before every frame: each POLL
    finds the deliveries before it past their redelivery backoff (0.1 s), as over a slow link
    or on a busy machine, where an exchange can outlast a target's timer."""

    def __init__(self, retry_backoff) -> None:
        super().__init__()
        self.retry_backoff = retry_backoff
        self.max_retries = self.session.state.max_retries if retry_backoff is not None else None

    def exchange(self, frames: list[bytes]) -> list:
        out = []
        for frame in frames:
            self.now += 1.0
            out.append(self.session.receive(frame, self.now))
        barrier = next(self._barriers)
        out.append(self.session.receive(codec.encode(Ping(barrier)), self.now))
        answers, self.barrier_answer = split_at_barrier(
            self.decoder.feed(b"".join(b"".join(chunk) for chunk in out)), barrier)
        return answers


class TickingMachine(BlipMachine):
    """The wire suite's SHOULD run, told the target's backoff (the profile's ``retry_backoff``):
    redeliveries between pipelined POLLs and a NACK(404) for an ack that came after the timer
    took the delivery back are expected, and the message again later."""
    should = True
    defer_acks = False
    driver_factory = staticmethod(lambda: TickingDriver(retry_backoff=0.1))


TickingMachine.TestCase.settings = settings(max_examples=60, **_SETTINGS)
TestTickingMachine = TickingMachine.TestCase


def test_a_machine_told_no_timer_fires_flags_the_redeliveries():
    """The control: the same clock, a machine that believes no timer can fire (retry_backoff
    None, as in memory) finds the redeliveries against its model."""
    class Unaware(TickingMachine):
        driver_factory = staticmethod(lambda: TickingDriver(retry_backoff=None))
    with pytest.raises(AssertionError):
        run_state_machine_as_test(Unaware, settings=settings(max_examples=200, derandomize=True, report_multiple_bugs=False,
                                                             phases=[Phase.generate],
                                                             database=None, **_SETTINGS))


class WrongAckPayloadText(SessionDriver):
    """The reference session, except that a malformed ACK gets NACK(400) with another text."""

    def exchange(self, frames: list[bytes]) -> list:
        return [codec.Nack(f.correlation_id, 400, "bad ACK") if f == codec.Nack(f.correlation_id, 400,
                "invalid ACK payload") else f for f in super().exchange(frames)]


def test_a_broken_step_names_the_rule_it_checks():
    """A target whose one defect is the text of the NACK for a malformed ACK fails the MUST run
    on BLIP-ACK-001 alone (a Breach), not on the run's thirty requirements."""
    from wirecheck.conformance.report.verdicts import Breach

    class Machine(SessionMachineWireRules):
        driver_factory = WrongAckPayloadText
    with pytest.raises(Breach) as failed:
        run_state_machine_as_test(Machine, settings=settings(max_examples=200, database=None, derandomize=True,
                                                             phases=(Phase.generate, Phase.shrink), **_SETTINGS))
    assert failed.value.requirements == ("BLIP-ACK-001",), failed.value
