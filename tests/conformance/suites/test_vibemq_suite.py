"""The VibeMQ suite as a CI gate: it fails, naming the requirement, against brokers that break
one rule each (the embedded run of wirecheck/conformance/suites/vibemq shows it passes against the
reference broker in every profile)."""
import json
import os
import subprocess
import sys

import pytest

from wirecheck.reference_impl.core.server import ThreadedServer
from wirecheck.reference_impl.vibemq import codec, make_broker
from wirecheck.reference_impl.vibemq.constants import CommandType
from wirecheck.reference_impl.vibemq.session import VibeSession

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class WrongPongId(VibeSession):
    """Answers Ping with another id (VIBE-PING-001)."""

    def _on_ping(self, message):
        self._send(codec.Message(CommandType.PONG, message.id + "-x"))


class CreatesTwice(VibeSession):
    """Acknowledges a second CreateQueue of the same name in the document profile (VIBE-QUEUE-002)."""

    def _on_create_queue(self, message):
        self._send(codec.Message(CommandType.CREATE_QUEUE, message.id, message.queue))


def broker_with(session_class):
    broker = make_broker()
    broker.server.make_session = lambda: session_class(broker.state, broker.session_config)
    return broker


@pytest.mark.parametrize("session_class,selection,requirement", [
    (WrongPongId, "test_pong_carries_the_ping_id", "VIBE-PING-001"),
    (CreatesTwice, "test_create_existing_queue", "VIBE-QUEUE-002"),
])
def test_one_broken_rule_fails_and_names_the_requirement(tmp_path, session_class, selection, requirement):
    report = tmp_path / "r.json"
    with ThreadedServer(broker_with(session_class)) as server:
        cmd = [sys.executable, "-m", "wirecheck", "check", "--protocol", "vibemq", "--target",
               f"127.0.0.1:{server.address[1]}", "--timeout", "0.5", "--report", str(report),
               "--", "-k", selection]
        result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert result.returncode == 1, result.stdout[-3000:]
    doc = json.loads(report.read_text())
    failed = [t for t in doc["tests"] if t["verdict"] in ("FAIL", "TIMEOUT")]
    assert failed and all(requirement in t["requirements"] for t in failed), doc["tests"]
    assert all(t["transcript"] for t in failed)
    assert requirement in doc["summary"]["vibemq"]["failing_requirements"]
