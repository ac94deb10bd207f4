"""The Micromessage2 ack-window state machine (wirecheck/conformance/strategies/micromessage2_machine.py):
in memory against reference sessions over one broker state with a fake clock (every ack of a
SEND predicted, delayed acks on the clock), and over the wire against the reference broker
through the asyncio client, in both profiles. Sequence numbers start near 65535 on both sides
(SessionConfig.first_sequence, MM2Client's first_sequence), so runs cross the wrap."""
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from wirecheck.conformance.strategies.micromessage2_drivers import WireDriver
from wirecheck.conformance.strategies.micromessage2_machine import WindowMachine

MEMORY = settings(max_examples=100, stateful_step_count=30, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow])
# Over the wire: a fresh broker and three loopback connections per example, a barrier per
# connection per step; kept small so the file runs in seconds on two cores. A failing example
# may wait out a receive timeout (an ERROR that never comes): one bug is shrunk, not each.
WIRE = settings(max_examples=50, stateful_step_count=30, deadline=None, database=None,
                report_multiple_bugs=False, suppress_health_check=[HealthCheck.too_slow])
#: Seconds any single wait may take: the broker runs on the driver's own event loop, on
#: loopback, so a second is ample even on a loaded machine.
TIMEOUT = 1.0


class DocumentMachine(WindowMachine):
    profile = "document"


class SharpMessagingMachine(WindowMachine):
    profile = "sharpmessaging"


DocumentMachine.TestCase.settings = MEMORY
SharpMessagingMachine.TestCase.settings = MEMORY
TestInMemoryDocument = DocumentMachine.TestCase
TestInMemorySharpMessaging = SharpMessagingMachine.TestCase


@pytest.mark.requirement("MM2-ACK-001", "MM2-ACK-002", "MM2-ACK-003", "MM2-ACK-004", "MM2-ACK-005",
                         "MM2-ACK-006", "MM2-ACK-007", "MM2-ACK-008", "MM2-ACK-009", "MM2-ACK-010",
                         "MM2-MSG-001", "MM2-MSG-003", "MM2-MSG-005", "MM2-HS-011", "MM2-PS-002",
                         "MM2-PS-003", "MM2-CMD-002")
@pytest.mark.parametrize("machine", [DocumentMachine, SharpMessagingMachine], ids=["document", "sharpmessaging"])
def test_over_the_wire(machine):
    def fresh_machine():
        return machine(lambda first, send: WireDriver(machine.profile, first, send, timeout=TIMEOUT))
    run_state_machine_as_test(fresh_machine, settings=WIRE)


def test_a_broken_step_names_the_rule_it_checks():
    """A server whose one defect is a destination spelled otherwise in the MESSAGE frames it
    pushes fails the machine on MM2-MSG-001 alone (a Breach), not on its seventeen requirements."""
    from hypothesis import Phase

    from wirecheck.conformance.strategies.micromessage2_drivers import SessionDriver
    from wirecheck.conformance.report.verdicts import Breach
    from wirecheck.reference_impl.micromessage2.codec import Message

    class Renaming(SessionDriver):
        def collect(self, slot, errors):
            return [Message(f.sequence, f.destination + "x", f.payload, f.properties) if isinstance(f, Message)
                    else f for f in super().collect(slot, errors)]

    class Machine(WindowMachine):
        profile = "document"

        def __init__(self):
            super().__init__(lambda first, send: Renaming("document", first, send))
    with pytest.raises(Breach) as failed:
        run_state_machine_as_test(Machine, settings=settings(MEMORY, max_examples=200, database=None,
                                                             derandomize=True, phases=(Phase.generate, Phase.shrink)))
    assert failed.value.requirements == ("MM2-MSG-001",), failed.value
