"""``wirecheck analyze-fuzz`` (wirecheck/pipeline/fuzz_job.py) over campaign summaries of three nights."""
from __future__ import annotations

import json
import os

import pytest

from wirecheck.pipeline.fuzz_job import CampaignError, analyze_fuzz, campaign_files

pytestmark = pytest.mark.slow


def _job(name, kind, execs, cov, corpus, findings=(), mode="inprocess", error=""):
    return {"name": name, "seconds_budget": 10.0, "error": error, "mode": mode,
            "target": name if mode == "inprocess" else "127.0.0.1:40001", "kind": kind if mode == "inprocess" else None,
            "protocol": "blipmq", "started": 0.0, "seconds": 10.0, "execs": execs, "exec_per_s": execs / 10,
            "coverage": cov, "features": cov * 3, "corpus_size": corpus, "peak_rss_mb": 70,
            "timeline": [[1.0, execs // 2, cov - 5, cov * 3 - 9, corpus - 2], [10.0, execs, cov, cov * 3, corpus]],
            "findings": [{"kind": "crash", "signature": s, "count": 1} for s in findings]}


def _campaign(tmp_path, name, started, jobs, findings):
    doc = {"kind": "fuzz-campaign", "started": started, "seconds": 20.0, "budget": 20.0, "workers": 2,
           "machine": {"cpus": 2}, "execs": sum(j["execs"] for j in jobs), "jobs": jobs,
           "findings": [{"kind": "crash", "signature": s, "count": n, "target": t, "found_by": by,
                         "file": f"/x/{s}"} for s, n, t, by in findings],
           "errors": [j["name"] for j in jobs if j["error"]]}
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.fixture
def nights(tmp_path):
    (tmp_path / "notes.json").write_text('{"kind": "replay"}')       # not a campaign: skipped
    return [
        _campaign(tmp_path, "campaign-1.json", 1000.0,
                  [_job("blipmq_decoder", "decoder", 10000, 100, 50, ["crash A"]),
                   _job("live_blipmq", None, 500, 30, 20, mode="live")],
                  [("crash A", 1, "blipmq_decoder", ["blipmq_decoder"])]),
        _campaign(tmp_path, "campaign-2.json", 2000.0,
                  [_job("blipmq_decoder", "decoder", 12000, 110, 58, ["crash A", "crash B"]),
                   _job("live_blipmq", None, 600, 31, 25, mode="live")],
                  [("crash A", 2, "blipmq_decoder", ["blipmq_decoder"]),
                   ("crash B", 1, "blipmq_decoder", ["blipmq_decoder", "live_blipmq"])]),
        _campaign(tmp_path, "campaign-3.json", 3000.0,
                  [_job("blipmq_decoder", "decoder", 9000, 111, 60),
                   _job("live_blipmq", None, 0, 0, 0, mode="live", error="broker did not start")],
                  []),
    ]


def test_campaign_files_from_a_directory_skip_other_json(nights, tmp_path):
    assert campaign_files([str(tmp_path)]) == sorted(nights)
    with pytest.raises(CampaignError, match="not a fuzz campaign"):
        campaign_files([str(tmp_path / "notes.json")])


def test_findings_by_signature_over_runs_and_trends(spark, nights, tmp_path):
    out = str(tmp_path / "out")
    summary = analyze_fuzz([os.path.dirname(nights[0])], out, spark=spark)
    assert summary["campaigns"] == 3
    assert summary["rows"] == {"fuzz_jobs": 6, "fuzz_timeline": 12, "fuzz_findings": 3,
                               "fuzz_signatures": 2, "fuzz_trends": 5}
    sigs = {r["signature"]: r.asDict() for r in spark.read.parquet(os.path.join(out, "fuzz_signatures")).collect()}
    assert sigs["crash A"]["first_seen"] == 1000.0 and sigs["crash A"]["last_seen"] == 2000.0
    assert sigs["crash A"]["runs"] == 2 and sigs["crash A"]["total_count"] == 3
    assert sigs["crash B"]["runs"] == 1 and sigs["crash B"]["targets"] == ["blipmq_decoder", "live_blipmq"]
    trends = sorted((r["target"], r["started"], r["coverage_gain"], r["corpus_growth"])
                    for r in spark.read.parquet(os.path.join(out, "fuzz_trends")).collect())
    assert trends == [("blipmq_decoder", 1000.0, None, None), ("blipmq_decoder", 2000.0, 10, 8),
                      ("blipmq_decoder", 3000.0, 1, 2),
                      ("live_blipmq", 1000.0, None, None), ("live_blipmq", 2000.0, 1, 5)]
    jobs = {(r["run"], r["target"]): r for r in spark.read.parquet(os.path.join(out, "fuzz_jobs")).collect()}
    assert jobs[("campaign-1.json", "live_blipmq")]["kind"] == "live"
    assert jobs[("campaign-3.json", "live_blipmq")]["error"] == "broker did not start"
    timeline = spark.read.parquet(os.path.join(out, "fuzz_timeline")).where("run = 'campaign-2.json'").collect()
    assert sorted((r["target"], r["t"], r["coverage"]) for r in timeline) == [
        ("blipmq_decoder", 1.0, 105), ("blipmq_decoder", 10.0, 110), ("live_blipmq", 1.0, 26), ("live_blipmq", 10.0, 31)]


def test_no_campaigns_is_an_error(tmp_path):
    with pytest.raises(CampaignError, match="no fuzz campaign summaries"):
        analyze_fuzz([str(tmp_path)], str(tmp_path / "out"))
