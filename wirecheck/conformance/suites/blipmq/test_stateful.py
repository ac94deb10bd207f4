"""The BlipMQ state machine over the wire: random sequences of HELLO/AUTH/PUBLISH/SUBSCRIBE/
POLL/ACK/PING on one connection, every answer checked against a model (exact NACK codes and
messages), "no answer" proven with a PING barrier. The machine and its model are in
conformance/strategies/blipmq_machine.py; tests/reference_impl/blipmq/test_blipmq_stateful.py runs the same machine
in memory against the reference session.

Two runs: the MUST rules only (FAIL when broken), and the real server's SHOULD-level rules on
top (SPEC_NOTES.md: retries, effective QoS, QoS0 delivery ids, tag numbering), marked with
SHOULD IDs only so that a target following the document alone is NON-STRICT there. Both send
malformed payloads in every phase (the SHOULD run every type, the MUST run those of MUST requirements) and
unknown frame types on probe connections brought to the machine's phase (the close). Each example
opens a fresh connection and uses its own topics; QoS1 deliveries are acked at once, so the
target's redelivery timer rarely fires between steps; when a poll and its ack outlast the
profile's ``retry_backoff`` all the same (a slow link, a busy machine), the redelivery that may
follow is accepted and expected.
"""
import pytest

from wirecheck.conformance.strategies.blipmq_machine import BlipMachine, WireDriver
from wirecheck.conformance.strategies.wire_settings import run_machine, wire_settings

WIRE = wire_settings(15, 30)


class MustMachine(BlipMachine):
    should = False
    defer_acks = False


class ShouldMachine(BlipMachine):
    should = True
    defer_acks = False


def _run(blip, machine_class) -> None:
    transcripts = blip.target.transcripts
    first = len(transcripts)

    def fresh_machine():
        # Keep the transcript of the current example only: hypothesis runs the (shrunk)
        # failing example last, so that is the one a failing report shows.
        del transcripts[first:]
        conn = blip.connect(hello=False, auth=False, name="state machine")
        return machine_class(WireDriver(conn, api_key=blip.api_key, topic_prefix=blip.topic("sm"),
                                        connect=lambda: blip.connect(hello=False, auth=False, name="probe"),
                                        retry_backoff=blip.retry_backoff, max_retries=blip.max_retries))
    run_machine(fresh_machine, WIRE, blip.target.budget)


@pytest.mark.requirement(
    "BLIP-HELLO-001", "BLIP-AUTH-001", "BLIP-AUTH-002", "BLIP-AUTH-005", "BLIP-AUTH-006",
    "BLIP-PUB-002", "BLIP-PUB-003", "BLIP-PUB-004", "BLIP-PUB-007", "BLIP-PUB-008",
    "BLIP-SUB-002", "BLIP-SUB-003", "BLIP-SUB-004", "BLIP-SUB-005",
    "BLIP-ACK-002", "BLIP-ACK-003", "BLIP-ACK-004", "BLIP-QOS1-004",
    "BLIP-POLL-002", "BLIP-POLL-003", "BLIP-POLL-004",
    "BLIP-PING-001", "BLIP-FRAME-005", "BLIP-FRAME-006", "BLIP-FRAME-007",
    "BLIP-AUTH-003", "BLIP-SUB-001", "BLIP-ACK-001", "BLIP-POLL-001")
def test_state_machine_must(blip):
    _run(blip, MustMachine)


@pytest.mark.requirement(
    "BLIP-HELLO-003", "BLIP-HELLO-004", "BLIP-HELLO-005", "BLIP-AUTH-008", "BLIP-PUB-006",
    "BLIP-PUB-009", "BLIP-PUB-010", "BLIP-PUB-011", "BLIP-QOS1-003")
def test_state_machine_should(blip):
    _run(blip, ShouldMachine)
