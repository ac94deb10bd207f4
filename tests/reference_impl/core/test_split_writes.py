"""A frame sent in pieces reaches the target in pieces (conformance/target/connection.py ``SPLIT_PAUSE``):
a server that reads a connection's first frame in one read or never (tests/support/planted_servers.py
``--whole-first-read``) fails the byte-by-byte handshake test on an idle machine and on one
with every core busy; the same test passes against the same server without the defect. Written
back to back, the pieces arrived as one read when the machine was idle, and that server passed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TEST = "blipmq/test_framing.py::test_handshake_sent_one_byte_at_a_time"


def _verdict(tmp_path: Path, name: str, *options: str) -> str:
    report = tmp_path / f"{name}.json"
    command = f"{sys.executable} {ROOT / 'tests' / 'support' / 'planted_servers.py'} --port {{port}} --on '' {' '.join(options)}"
    got = subprocess.run([sys.executable, "-m", "wirecheck", "check", "--protocol", "blipmq", "--target-command",
                          command, "--report", str(report), "--timeout", "2", "--", "-k",
                          "test_handshake_sent_one_byte_at_a_time or test_document_hello_sample"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    doc = json.loads(report.read_text())
    verdicts = {t["nodeid"]: t["verdict"] for t in doc["tests"]}
    # the server answers a HELLO that comes whole: only the split one is its defect
    assert verdicts["blipmq/test_handshake.py::test_document_hello_sample_gets_ack_zero"] == "PASS", got.stdout
    return verdicts[TEST]


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "busy"])
def test_a_handshake_sent_byte_by_byte_arrives_in_pieces(tmp_path, busy):
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(2 * (os.cpu_count() or 1))] if busy else []
    try:
        defective = _verdict(tmp_path, "defective", "--whole-first-read")
        sound = _verdict(tmp_path, "sound")
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert defective in ("FAIL", "TIMEOUT") and sound == "PASS", (defective, sound)
