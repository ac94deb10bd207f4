"""The SignalR invocation/stream state machine over the wire: random sequences of calls,
streams, client streams, fire-and-forget, Ping and id reuse on one connection, every answer
checked against the model, "no answer" proven by an Echo barrier. The machine is in
conformance/strategies/signalr_machine.py; tests/test_signalr_stateful.py runs it in memory.
Error texts are not compared (only that an error is there)."""
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from conformance.strategies.signalr_machine import HubMachine, WireDriver

WIRE = settings(max_examples=10, stateful_step_count=25, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


class WireMachine(HubMachine):
    exact_errors = False


@pytest.mark.requirement("SIGR-INV-001", "SIGR-INV-003", "SIGR-INV-004", "SIGR-INV-005",
                         "SIGR-INV-006", "SIGR-INV-007", "SIGR-INV-008", "SIGR-INV-009",
                         "SIGR-INV-012", "SIGR-STR-001", "SIGR-STR-003", "SIGR-STR-008",
                         "SIGR-STR-009", "SIGR-ERR-007")
def test_invocation_lifecycles(sig):
    transcripts = sig.target.transcripts
    first = len(transcripts)

    def fresh_machine():
        del transcripts[first:]          # keep the (shrunk) failing example's transcript only
        return WireMachine(WireDriver(sig, sig.connect(name="state machine")))
    run_state_machine_as_test(fresh_machine, settings=WIRE)
