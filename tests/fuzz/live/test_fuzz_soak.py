"""The long network campaigns against tests/support/planted_servers.py (10 minutes per planted target, as
``wirecheck fuzz --command`` runs them): not part of ``make test``; run with
``WIRECHECK_FUZZ_SOAK=1 pytest tests/fuzz/live/test_fuzz_soak.py`` (``WIRECHECK_FUZZ_SOAK_TIME`` sets the
budget, default ``10m``). Every finding stands (reproduced N of N), one per root cause, no kit
error; the crash target's three triggers are all found."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.live.test_fuzz_planted import PLANTED, TRIGGERS

ROOT = Path(__file__).resolve().parents[3]
BUDGET = os.environ.get("WIRECHECK_FUZZ_SOAK_TIME", "10m")

pytestmark = pytest.mark.skipif(os.environ.get("WIRECHECK_FUZZ_SOAK") != "1",
                                reason="a soak run: WIRECHECK_FUZZ_SOAK=1")


@pytest.mark.parametrize("extra, kinds", [
    ("", {"crash"}),
    ("--delay 0.3", {"crash"}),
    ("--effect spin", {"spin"}),
    ("--effect grow", {"growth"}),
], ids=["crash", "late-crash", "spin", "grow"])
def test_ten_minute_campaign_against_a_planted_target(extra, kinds, tmp_path):
    command = f"{PLANTED} --on {','.join(TRIGGERS)} {extra}"
    from wirecheck.cli.fuzz import duration
    run = subprocess.run([sys.executable, "-m", "wirecheck", "fuzz", "--protocol", "blipmq", "--command", command,
                          "--time", BUDGET, "--seed", "1", "--timeout", "1", "--json",
                          "--findings", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=duration(BUDGET) + 600)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["kit_error"] is None
    assert {f["kind"] for f in summary["findings"]} == kinds, summary["findings"]
    for f in summary["findings"]:
        assert f["replayed"] and f["reproduced"] == f["replays"] == 3, f
    signatures = [f["signature"] for f in summary["findings"]]
    assert len(signatures) == len(set(signatures))
    if kinds == {"crash"}:
        assert len(signatures) == 3 and all(any(t.replace("0xee", "N") + ";" in s for s in signatures)
                                            for t in TRIGGERS), signatures
