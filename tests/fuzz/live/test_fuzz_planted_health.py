"""Spin and growth findings of the network fuzzer (wirecheck/fuzz/live/health.py, live_replay.py)
against tests/support/planted_servers.py: a thread that keeps a core busy after the input, and 32 MiB
kept for good per input, are found while fuzzing, replayed on fresh targets 3 of 3, measured
as the suites measure them (conformance/target/health.py)."""
from __future__ import annotations

import json
import sys

import pytest

from wirecheck.conformance.target import health as target_health
from tests.fuzz.live.test_fuzz_planted import BLIP, TRIGGERS, assert_all_reproduced, meta, planted
from wirecheck.fuzz.live.fuzzer import LiveFuzzer, LiveOptions

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _until_found(target, tmp_path, seed: int) -> dict:
    fuzzer = LiveFuzzer(BLIP, target.host, target.port, LiveOptions(timeout=1.0, seed=seed, findings=tmp_path),
                        managed=target)
    return fuzzer.run(240, max_cases=3000, stop_on_finding=True)


def _the_finding(tmp_path, effect: str) -> dict:
    """The one finding, of kind ``effect``'s, of a campaign against the server that has it."""
    target = planted("--on", ",".join(TRIGGERS), "--effect", effect)
    try:
        summary = _until_found(target, tmp_path, seed=1)
    finally:
        target.close()
    assert_all_reproduced(summary)
    kind = {"spin": "spin", "grow": "growth"}[effect]
    assert [f["kind"] for f in summary["findings"]] == [kind], json.dumps(
        {k: summary[k] for k in ("findings", "not_reproduced", "execs", "elapsed_s") if k in summary}, default=str)
    return summary["findings"][0]


def test_spinning_thread_is_a_spin_finding(tmp_path):
    found = _the_finding(tmp_path, "spin")
    assert found["signature"] == "spin: thread python" and found["connections"] == 1
    assert f"for {target_health.IDLE:g} s with nothing sent" in found["reason"]
    assert meta(found)["replayed"] is True


def test_memory_kept_for_good_is_a_growth_finding(tmp_path):
    found = _the_finding(tmp_path, "grow")
    assert found["signature"] == "growth: memory" and "resident memory rose by" in found["reason"]
    # each of the three rounds of the same connection kept about 32 MiB more
    rises = [int(x) for x in found["reason"].split("[")[1].split("]")[0].split(",")]
    assert len(rises) == 3 and all(r >= 24 for r in rises), found["reason"]


def test_a_growth_lead_points_at_the_latest_large_rise(monkeypatch):
    """Two inputs that each keep 32 MiB rise by amounts that differ by noise; the lead's moment
    is the later one (the campaign may no longer hold the connections before the earlier): a CI
    run filed "growth: ?" with nothing to replay when the first rise was the larger."""
    from wirecheck.fuzz.live import health as live_health
    watch = live_health.HealthWatch()
    kb = iter([100_000, 133_000, 133_500, 166_000])
    monkeypatch.setattr(live_health.health, "resources", lambda pgid: {"rss_kb": next(kb), "fds": 5})
    clock = iter([10.0, 20.0, 30.0, 40.0])
    monkeypatch.setattr(live_health.time, "time", lambda: next(clock))
    leads = [watch._growth(1) for _ in range(4)]
    assert leads[:3] == [None, None, None]
    assert leads[3].kind == "growth" and leads[3].until == 40.0, leads[3]
