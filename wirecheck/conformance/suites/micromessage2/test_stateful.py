"""The Micromessage2 ack-window state machine over the wire: three connections, each with its own
handshake terms (ack, batch-ack with each spelling of its count, none; required or optional),
subscriptions to topics and queues, SEND batches, cumulative and early acks, acks of nothing in
flight, waits for the target's acks of the SENDs, and reconnects; every MESSAGE checked against
the model (sequence numbers from 1, the window, topic fan-out, queue order, redelivery of what
an ended connection had not acked), "no more frames" proven by the ERROR of an unknown-command
barrier on every connection after every step. The machine is in
conformance/strategies/micromessage2_machine.py, its driver here
(:class:`~conformance.strategies.micromessage2_drivers.TargetDriver`) talks to ``--target``
through the reference asyncio client; tests/reference_impl/micromessage2/test_mm2_stateful.py runs the same machine in
memory and against a reference broker of its own (starting near the 65535 -> 1 wrap).

Two runs: the MUST rules; and with probes on top (connections brought to each phase of the
handshake that send a malformed frame, or an ERROR after the handshake: the kit's readings,
SHOULD IDs only). Destinations carry a prefix unique to each example (runs share the target).
The clients' frames are not kept as transcripts (the machine's messages say what was seen).
"""
import uuid

import pytest

from wirecheck.conformance.strategies.micromessage2_drivers import TargetDriver, WaitExpired
from wirecheck.conformance.strategies.micromessage2_machine import WindowMachine
from wirecheck.conformance.strategies.wire_settings import run_machine, wire_settings

WIRE = wire_settings(25, 20, report_multiple_bugs=False)


def _run(mm2, probes: bool) -> None:
    mm2.needs("pubsub", "batch_ack")         # the machine subscribes, and draws batch-ack terms
    target = mm2.target

    class Machine(WindowMachine):
        profile = mm2.reading

    Machine.probes = probes

    class Driver(TargetDriver):
        # The driver speaks through the reference client, not conformance.target: count its
        # timeouts against the test's budget here (target.Budget: hypothesis would otherwise
        # repeat every timeout while shrinking).
        def _run(self, coro, what: str):
            try:
                return super()._run(coro, what)
            except WaitExpired as exc:
                target.budget.timed_out(str(exc))
                raise

    def fresh_machine():
        target.budget.left()              # the wall-clock budget, and one connection per example
        target.budget.opened()
        return Machine(lambda first, send: Driver(
            target.host, target.port, mm2.reading, send, f"wirecheck-sm-{uuid.uuid4().hex[:8]}",
            timeout=target.timeout))
    run_machine(fresh_machine, WIRE, mm2.target.budget)


@pytest.mark.requirement("MM2-ACK-001", "MM2-ACK-002", "MM2-ACK-003", "MM2-ACK-004", "MM2-ACK-005",
                         "MM2-ACK-006", "MM2-ACK-007", "MM2-ACK-008", "MM2-ACK-009", "MM2-ACK-010",
                         "MM2-MSG-001", "MM2-MSG-005", "MM2-HS-011", "MM2-PS-002",
                         "MM2-PS-003", "MM2-CMD-002", "MM2-FRAME-001")
def test_state_machine_must(mm2):
    # Not MM2-MSG-003 (the server's numbers wrap at 65535): that needs 65,535 deliveries on one
    # connection, so it stays untestable here (tests/reference_impl/micromessage2/test_mm2_stateful.py covers it in memory).
    _run(mm2, probes=False)


@pytest.mark.requirement("MM2-FRAME-003", "MM2-ERR-002")
def test_state_machine_should(mm2):
    _run(mm2, probes=True)
