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
