"""A frame from the target that does not decode is charged to the rule its sender broke, in
every live suite (target.Connection.breach_of, set from the protocol's
``server_frame_rules``, or by the suite's conftest where the rule depends on the
connection's state): not to the test's own requirement, and not to a rule that binds the
server as the receiver of such a frame (BLIP-FRAME-002, VIBE-FRAME-004 say what the server
must do with a client's bad frame)."""
from __future__ import annotations

import socket
import threading

import pytest

from wirecheck.conformance.profiles import load_profile
from wirecheck.conformance.requirements import catalogue
from wirecheck.conformance.target.connection import Target, TargetMalformed
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import Category, FrameError
from wirecheck.reference_impl.micromessage2.observer import frame_requirement

CASES = [
    ("blipmq", bytes.fromhex("00000003 010203"), "BLIP-FRAME-004"),           # length < 1 + 8
    ("vibemq", bytes.fromhex("00000001 00"), "VIBE-FRAME-001"),               # body length < 2
    ("rabbitmq-stream", bytes.fromhex("00000002 0000"), "RMQS-FRAME-001"),     # no key, no version
]


def _server(data: bytes):
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        conn, _ = listener.accept()
        with conn:
            conn.sendall(data)
            conn.recv(1)                   # until the kit closes
        listener.close()
    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1]


@pytest.mark.parametrize(("protocol", "data", "rule"), CASES, ids=[c[0] for c in CASES])
def test_a_malformed_frame_from_the_target_breaks_its_senders_rule(protocol, data, rule):
    spec = registry.get(protocol)
    target = Target("127.0.0.1", _server(data), spec, load_profile(spec, None), timeout=2)
    conn = target.connect("probe")
    try:
        with pytest.raises(TargetMalformed) as got:
            conn.recv(expecting="anything")
    finally:
        target.close_all()
    assert got.value.requirements == (rule,), (got.value.requirements, str(got.value))
    req = catalogue(spec.requirements)[rule]
    assert req.binds in ("both", "server"), req                # a rule the sender is bound by


def test_micromessage2_reads_a_servers_frame_by_its_handshake():
    def error(category, part=""):
        return FrameError("x", category=category, protocol="micromessage2", offset=0, part=part)
    assert frame_requirement(error(Category.BAD_VALUE), in_handshake=True) == "MM2-HS-013"
    assert frame_requirement(error(Category.BAD_VALUE), in_handshake=False) == "MM2-FRAME-001"
    assert frame_requirement(error(Category.TRUNCATED, "identity"), in_handshake=True) == "MM2-HS-001"
    assert frame_requirement(error(Category.BAD_VALUE, "properties"), in_handshake=False) == "MM2-MSG-004"
