"""The SignalR invocation/stream state machine over the wire: random sequences of calls,
streams, client streams, fire-and-forget, Ping and id reuse on one connection, every answer
checked against the model, "no answer" proven by an Echo barrier. The machine is in
conformance/strategies/signalr_machine.py; tests/reference_impl/signalr/test_signalr_stateful.py runs it in memory.
Error texts are not compared (only that an error is there). Probe connections (opened, used for
one message, dropped) send every message type before the handshake (a failed handshake and the
close) and, past it, what ends a connection (Close, a second handshake, a malformed record).
The SHOULD run also checks the v1 rules of SPEC_NOTES.md (Ack, Sequence and unknown types
ignored; a Close with the error before a protocol error's close), marked with SHOULD IDs only."""
import pytest
from hypothesis.stateful import initialize

from wirecheck.conformance.strategies.signalr_machine import HubMachine, WireDriver
from wirecheck.conformance.strategies.state_matrix import UNKNOWN
from wirecheck.conformance.strategies.wire_settings import run_machine, wire_settings
from wirecheck.conformance.report.verdicts import unimplemented

WIRE = wire_settings(10, 25)


class WireMachine(HubMachine):
    exact_errors = False
    should = False


class ShouldMachine(HubMachine):
    exact_errors = False

    @initialize()
    def should_checks_first(self):
        """Each example makes the SHOULD run's own checks once before its random steps: Ack,
        Sequence and an unknown type ignored (V1-004, V1-006), and the probes past the
        handshake (a Close before the close, V1-005). Drawn only as rules, they could be
        missed in the few examples a slow link or a busy machine leaves time for, and the
        verdict on them would depend on the machine's load."""
        for kind in ("Ack", "Sequence", UNKNOWN):
            self.ignored(kind, 1)
        self.probe(True)


@pytest.mark.requirement("SIGR-INV-001", "SIGR-INV-003", "SIGR-INV-004", "SIGR-INV-005",
                         "SIGR-INV-006", "SIGR-INV-007", "SIGR-INV-008", "SIGR-INV-009",
                         "SIGR-INV-012", "SIGR-STR-001", "SIGR-STR-003", "SIGR-STR-008",
                         "SIGR-STR-009", "SIGR-ERR-007", "SIGR-HS-001", "SIGR-HS-003",
                         "SIGR-ERR-011")
def test_invocation_lifecycles(sig, request):
    if not sig.draft:
        request.node.add_marker(pytest.mark.requirement("SIGR-HS-004", "SIGR-HS-005", "SIGR-V1-002"))
    _run(sig, WireMachine)


@pytest.mark.requirement("SIGR-V1-004", "SIGR-V1-005", "SIGR-V1-006")
def test_state_machine_should(sig):
    if sig.draft:
        unimplemented("the v1 rules of SPEC_NOTES.md (v1)")
    _run(sig, ShouldMachine)


def _run(sig, machine_class) -> None:
    transcripts = sig.target.transcripts
    first = len(transcripts)

    def fresh_machine():
        del transcripts[first:]          # keep the (shrunk) failing example's transcript only
        return machine_class(WireDriver(sig, sig.connect(name="state machine")))
    run_machine(fresh_machine, WIRE, sig.target.budget)
