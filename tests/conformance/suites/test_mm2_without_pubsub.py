"""A Micromessage2 server without pubsub, declared so by its profile, is still sent what its
parser must survive: a SEND with a list of properties (tests/support/planted_mm2.py dies on one, as an
independent server did) is found, charged to the one test that sends it, and the split
handshake (MM2-HS-012, a MUST) is tested through acks instead of a subscription."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_a_server_without_pubsub_is_sent_properties_and_a_split_handshake(tmp_path):
    profile = tmp_path / "nopubsub.toml"
    profile.write_text('extends = "document"\n[features]\npubsub = false\n')
    report = tmp_path / "r.json"
    got = subprocess.run(
        [sys.executable, "-m", "wirecheck", "check", "--protocol", "micromessage2", "--target", "127.0.0.1:0",
         "--target-command", f"{sys.executable} {ROOT / 'tests' / 'support' / 'planted_mm2.py'} --port {{port}}",
         "--profile", str(profile), "--report", str(report), "-n", "2"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    doc = json.loads(report.read_text())
    verdicts = {t["nodeid"].split("::")[-1]: t for t in doc["tests"]}
    assert got.returncode == 1, got.stdout[-3000:]
    crashed = sorted(n for n, t in verdicts.items() if t["verdict"] == "CRASH")
    assert crashed == ["test_properties_in_sends_are_acked[two]"], (crashed, got.stdout[-3000:])
    assert "planted crash: a SEND with a list of properties" in verdicts[crashed[0]]["message"]
    failing = {n: t["verdict"] for n, t in verdicts.items() if t["verdict"] in ("FAIL", "TIMEOUT", "HARNESS-ERROR")}
    assert not failing, failing
    split = [t for n, t in verdicts.items() if n.startswith("test_handshake_and_send_split_and_pipelined")]
    assert len(split) == 3 and all(t["verdict"] == "PASS" for t in split), split
    assert "MM2-HS-012" not in doc["summary"]["micromessage2"]["unimplemented_requirements"]
