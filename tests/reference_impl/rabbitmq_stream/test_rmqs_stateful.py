"""The RabbitMQ Stream state machine (wirecheck/conformance/strategies/rabbitmq_stream_machine.py) against
the reference session in memory: handshake, streams, publishers, publishes with confirms and
deduplication, subscriptions with credit, stored offsets; every answer checked against the
model, every Deliver's offsets and messages too."""
from hypothesis import HealthCheck, settings

from wirecheck.conformance.strategies.rabbitmq_stream_machine import StreamMachine


class SessionMachine(StreamMachine):
    """Reference semantics, over an in-memory store; time is frozen."""


SessionMachine.TestCase.settings = settings(max_examples=100, deadline=None, stateful_step_count=30,
                                            suppress_health_check=[HealthCheck.too_slow])

TestSessionMachine = SessionMachine.TestCase


def test_a_broken_step_names_the_rule_it_checks():
    """A server whose one defect is to answer DeletePublisher of a publisher it does not have
    with OK fails the machine on RMQS-PUB-006 ("Publisher does not exist 18") alone, a Breach,
    not on the run's fifty requirements."""
    import dataclasses

    import pytest
    from hypothesis import Phase
    from hypothesis.stateful import run_state_machine_as_test

    from wirecheck.conformance.strategies.rabbitmq_stream_drivers import SessionDriver
    from wirecheck.conformance.report.verdicts import Breach
    from wirecheck.reference_impl.rabbitmq_stream import codec
    from wirecheck.reference_impl.rabbitmq_stream.constants import Code

    class Lenient(SessionDriver):
        def exchange(self, frames, barrier, names=(), done=None):
            return [dataclasses.replace(f, code=Code.OK)
                    if isinstance(f, codec.DeletePublisherResponse) and f.code == Code.PUBLISHER_DOES_NOT_EXIST
                    else f for f in super().exchange(frames, barrier, names, done)]

    class Machine(StreamMachine):
        driver_factory = Lenient
    with pytest.raises(Breach) as failed:
        run_state_machine_as_test(Machine, settings=settings(max_examples=300, deadline=None, stateful_step_count=30,
                                                             database=None, derandomize=True,
                                                             phases=(Phase.generate, Phase.shrink),
                                                             suppress_health_check=[HealthCheck.too_slow]))
    assert failed.value.requirements == ("RMQS-PUB-006",), failed.value
