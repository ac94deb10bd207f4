"""The VibeMQ queue/subscription state machine over the wire: random sequences of CreateQueue
(each delivery mode, maxQueueSize), Subscribe/Unsubscribe on three connections, Publish
batches with payloads and priorities, Ack, QueueInfo, ListQueues, DeleteQueue, Ping and
reconnects, every answer and every delivery checked against the model, "no answer" proven by a
Ping barrier on every connection after every step. Deliveries are acked within the step that
brought them (the target's ack timeout never runs out); error texts and headers beyond the
profile's are not compared. The machine is in conformance/strategies/vibemq_machine.py;
tests/reference_impl/vibemq/test_vibemq_stateful.py runs it in memory, with redelivery on a frozen clock."""
import pytest

from wirecheck.conformance.strategies.vibemq_machine import VibeMachine, WireDriver
from wirecheck.conformance.strategies.wire_settings import run_machine, wire_settings

WIRE = wire_settings(30, 30)


@pytest.mark.requirement("VIBE-PING-001", "VIBE-PUB-001", "VIBE-PUB-002", "VIBE-SUB-001",
                         "VIBE-SUB-002", "VIBE-DEL-001", "VIBE-DEL-002", "VIBE-DEL-003",
                         "VIBE-MSG-002", "VIBE-ACK-001", "VIBE-CONN-004", "VIBE-QUEUE-001",
                         "VIBE-QUEUE-002", "VIBE-QUEUE-003", "VIBE-QUEUE-004", "VIBE-QUEUE-005",
                         "VIBE-QUEUE-006", "VIBE-MODE-001", "VIBE-MODE-002", "VIBE-MODE-003",
                         "VIBE-MODE-004", "VIBE-OVER-001", "VIBE-ERR-001", "VIBE-ERR-002",
                         "VIBE-MSG-006")
def test_queue_and_subscription_lifecycles(vibe):
    _run(vibe, MustMachine)


@pytest.mark.requirement("VIBE-CONN-003")
def test_state_machine_should(vibe):
    _run(vibe, VibeMachine)


class MustMachine(VibeMachine):
    should = False


def _run(vibe, machine_class) -> None:
    transcripts = vibe.target.transcripts
    first = len(transcripts)

    def fresh_machine():
        del transcripts[first:]          # keep the (shrunk) failing example's transcript only
        return machine_class(WireDriver(vibe))
    run_machine(fresh_machine, WIRE, vibe.target.budget)
