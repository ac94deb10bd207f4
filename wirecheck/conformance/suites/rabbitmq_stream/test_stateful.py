"""The RabbitMQ Stream state machine over the wire: random sequences of Create/Delete,
DeclarePublisher/Publish/DeletePublisher, Subscribe/Credit/Unsubscribe, StoreOffset/QueryOffset,
QueryPublisherSequence and Heartbeat on one connection, every answer checked against a model
(response codes, confirms, each Deliver's offsets and messages), "no answer" proven with a
Metadata barrier. The machine and its model are in
conformance/strategies/rabbitmq_stream_machine.py; tests/reference_impl/rabbitmq_stream/test_rmqs_stateful.py runs the same
machine in memory against the reference session.

Two runs: the MUST rules only (FAIL when broken), and the real server's SHOULD-level rules on
top (SPEC_NOTES.md: PreconditionFailed cases, deduplication, sub-batches, NoOffset, offsets of
StoreOffset, subscribing beyond the end, what a stream's deletion leaves), marked with SHOULD
IDs only so that a target following the document alone is NON-STRICT there. Each example opens
a fresh connection, uses streams of its own and deletes them when it ends; the suite helper
deletes whatever an example could not. The examples are derandomized: a run is reproducible.
Probe connections, brought to a phase of the handshake or past Open, send one command each:
out of the handshake's order, before Open, unknown keys, Close, malformed frames (SHOULD run).
"""
import pytest

from wirecheck.conformance.strategies.rabbitmq_stream_drivers import WireDriver
from wirecheck.conformance.strategies.rabbitmq_stream_machine import StreamMachine
from wirecheck.conformance.strategies.wire_settings import run_machine, wire_settings

WIRE = wire_settings(15, 30)


class MustMachine(StreamMachine):
    should = False
    # No probe connections in the MUST run: against RabbitMQ 3.10 a probe's barrier after some
    # handshake commands is itself out of turn there (the in-memory run covers the matrix;
    # the close, unknown-key and before-Open rules have tests of their own).
    probe_sweep = 0


class ShouldMachine(StreamMachine):
    should = True
    probe_sweep = 3


def _run(rmqs, machine_class) -> None:
    transcripts = rmqs.target.transcripts
    first = len(transcripts)

    def fresh_machine():
        # Keep the transcript of the current example only: hypothesis runs the (shrunk)
        # failing example last, so that is the one a failing report shows.
        del transcripts[first:]
        conn = rmqs.connect("tcp", name="state machine")
        driver = WireDriver(conn, user=rmqs.user, password=rmqs.password, vhost=rmqs.vhost,
                            prefix=rmqs.name("sm"), created=rmqs.created,
                            # Keys 26-30 only where the target has them (profile rabbitmq-3.10
                            # lacks them): ExchangeCommandVersions, Publish/Deliver version 2.
                            keys_26_30=rmqs.profile.feature("keys_26_30"),
                            connect=lambda: rmqs.connect("tcp", name="probe"))
        return machine_class(driver)
    run_machine(fresh_machine, WIRE, rmqs.target.budget)


@pytest.mark.requirement(
    "RMQS-FRAME-002", "RMQS-FRAME-003", "RMQS-FRAME-004", "RMQS-FRAME-006",
    "RMQS-HS-001", "RMQS-HS-002", "RMQS-HS-003", "RMQS-HS-004", "RMQS-HS-005",
    "RMQS-HB-001", "RMQS-ROUTE-001", "RMQS-PART-001",
    "RMQS-STREAM-001", "RMQS-STREAM-002", "RMQS-STREAM-005", "RMQS-STREAM-007", "RMQS-STREAM-008",
    "RMQS-META-001", "RMQS-META-002", "RMQS-META-003", "RMQS-META-006",
    "RMQS-PUB-001", "RMQS-PUB-002", "RMQS-PUB-005", "RMQS-PUB-006", "RMQS-PUB-007", "RMQS-PUB-008",
    "RMQS-PUB-009", "RMQS-PUB-011", "RMQS-PUB-013",
    "RMQS-SUB-001", "RMQS-SUB-002", "RMQS-SUB-003", "RMQS-SUB-004", "RMQS-SUB-005", "RMQS-SUB-008",
    "RMQS-SUB-009", "RMQS-CREDIT-001", "RMQS-CREDIT-002", "RMQS-CREDIT-003", "RMQS-CREDIT-004",
    "RMQS-UNSUB-001", "RMQS-UNSUB-002",
    "RMQS-DELIVER-001", "RMQS-DELIVER-002", "RMQS-DELIVER-003", "RMQS-DELIVER-004", "RMQS-DELIVER-005",
    "RMQS-OFFSET-001", "RMQS-OFFSET-002", "RMQS-OFFSET-003", "RMQS-OFFSET-004", "RMQS-OFFSET-006")
def test_state_machine_must(rmqs):
    _run(rmqs, MustMachine)


@pytest.mark.requirement(
    "RMQS-HS-013", "RMQS-HS-014", "RMQS-FRAME-013", "RMQS-ROUTE-002", "RMQS-STREAM-003", "RMQS-META-007", "RMQS-PUB-003", "RMQS-PUB-004",
    "RMQS-PUB-010", "RMQS-PUB-012", "RMQS-PUB-014", "RMQS-PUB-015", "RMQS-PUB-016",
    "RMQS-SUB-006", "RMQS-OFFSET-005", "RMQS-OFFSET-007")
def test_state_machine_should(rmqs, request):
    if rmqs.profile.feature("keys_26_30"):
        # Only then does the machine negotiate and check Publish/Deliver version 2.
        request.node.add_marker(pytest.mark.requirement("RMQS-NEW-002", "RMQS-NEW-003"))
    _run(rmqs, ShouldMachine)
