"""`wirecheck analyze` and `analyze-fuzz` on a real Spark standalone cluster (tests/support/spark_cluster.py):
a master and two workers as separate processes on 127.0.0.1, the executors' Python a virtualenv
without the kit, the job shipping the kit itself; the tables equal the local run's, row for row."""
from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from wirecheck.pipeline import schema
from wirecheck.pipeline.fuzz_job import ROW_TABLES, analyze_fuzz
from wirecheck.pipeline.local import analyze as analyze_plain

from tests.support.spark_cluster import StandaloneCluster, analyze_command, driver_env, executor_starts, workers_python
from tests.cli.test_command_signals import _printed, _stopped_run
from tests.pipeline.test_damaged_inputs import damaged_captures
from tests.pipeline.test_pipeline import CAPTURES, _rows, _same_rows
from tests.pipeline.test_pipeline_fuzz import _campaign, _job

pytestmark = pytest.mark.slow

#: Captures of two protocols (a few hundred kB): the point is where the job runs, not how much.
INPUTS = [str(CAPTURES / "blipmq"), str(CAPTURES / "vibemq")]


def _run(args: list[str], scratch: Path, status: int = 0) -> dict:
    """Run the command; its summary. ``status``: its exit status (analyze: 1 when the tables
    have violations, as the repository's captures have). Its temporary files (the kit's zip for
    the executors) go to ``scratch`` and must be gone at its end."""
    scratch.mkdir()
    result = subprocess.run(analyze_command(*args, "--json"), capture_output=True, text=True, timeout=600,
                            env=dict(driver_env(), TMPDIR=str(scratch)))
    assert result.returncode == status, result.stdout[-3000:] + result.stderr[-5000:]
    assert list(scratch.iterdir()) == []
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_analyze_and_analyze_fuzz_on_a_standalone_cluster(spark, tmp_path):
    python = workers_python(tmp_path / "executors-venv")
    runs = tmp_path / "campaigns"
    runs.mkdir()
    _campaign(runs, "campaign-1.json", 1000.0, [_job("blipmq_decoder", "decoder", 10000, 100, 50, ["crash A"])],
              [("crash A", 1, "blipmq_decoder", ["blipmq_decoder"])])
    _campaign(runs, "campaign-2.json", 2000.0, [_job("blipmq_decoder", "decoder", 12000, 110, 58, ["crash A"])],
              [("crash A", 2, "blipmq_decoder", ["blipmq_decoder"])])
    conf = ["--conf", f"spark.pyspark.python={python}", "--conf", "spark.driver.host=127.0.0.1",
            "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.executor.memory=512m",
            "--conf", "spark.executor.cores=1"]
    out, fuzz_out = tmp_path / "cluster", tmp_path / "cluster-fuzz"
    with StandaloneCluster(tmp_path / "spark") as cluster:
        summary = _run(["analyze", *INPUTS, "--out", str(out), "--master", cluster.master_url,
                        "--partitions", "4", *conf], tmp_path / "tmp-analyze", 1)
        fuzz = _run(["analyze-fuzz", str(runs), "--out", str(fuzz_out), "--master", cluster.master_url, *conf],
                    tmp_path / "tmp-analyze-fuzz")
        # damaged inputs among a good one, read on the cluster's executors: what precedes each
        # break is analysed, one line per damaged file, exit 2 (one is no capture at all)
        damaged = damaged_captures(tmp_path / "damaged")
        broken = subprocess.run(analyze_command("analyze", *map(str, damaged), "--out", str(tmp_path / "damaged-out"),
                                                "--master", cluster.master_url, "--protocol", "blipmq", *conf),
                                capture_output=True, text=True, timeout=600, env=driver_env())
        work = [p for i in range(cluster.workers) for p in (tmp_path / "spark" / f"work-{i}").rglob("*")]
        stopped = _stopped_on_the_cluster(cluster, tmp_path, conf)
    assert summary["master"] == cluster.master_url and fuzz["master"] == cluster.master_url
    assert stopped["interrupted"]["signal"] == "SIGINT" and stopped["master"] == cluster.master_url, stopped
    lines = [line for line in broken.stderr.splitlines() if line.startswith("wirecheck analyze:")]
    assert broken.returncode == 2 and len(lines) == 3 and "Traceback" not in broken.stderr, broken.stderr[-3000:]
    read = json.loads((tmp_path / "damaged-out" / "summary.json").read_text())
    assert {Path(d["file"]).name for d in read["damaged"]} == {"cut.pcap", "corrupt.pcap", "notes.pcap"}
    assert read["rows"]["frames"] > 0 and read["master"] == cluster.master_url
    # the executors ran on both workers, in their own Python (which has no kit), with the kit
    # the job sent them
    assert executor_starts(python) >= 2
    shipped = {p.parts[-4] for p in work if p.name == "wirecheck-kit.zip"}
    assert shipped == {"work-0", "work-1"}, sorted(str(p) for p in work)[:40]
    # the same rows as the plain analysis on this machine
    plain = analyze_plain(INPUTS)
    for table in schema.TABLES:
        _same_rows(spark, str(out), plain, table)
    local_fuzz = tmp_path / "local-fuzz"
    analyze_fuzz([str(runs)], str(local_fuzz), spark=spark)
    for table in (*ROW_TABLES, "fuzz_signatures", "fuzz_trends"):
        def rows(where: Path) -> list[str]:
            return sorted(json.dumps(r, sort_keys=True, default=str) for r in _rows(spark, str(where), table))
        assert rows(fuzz_out) == rows(local_fuzz) and rows(local_fuzz), table


def _stopped_on_the_cluster(cluster: StandaloneCluster, tmp_path: Path, conf: list[str]) -> dict:
    """Ctrl-C (SIGINT to the process group) while the cluster's executors analyse: the command
    ends with 130, nothing of the driver is left (tests/cli/test_command_signals.py's checks), the
    master has no application running and no executor is left on the workers within moments, and
    the summary is marked interrupted."""
    out = tmp_path / "stopped"
    argv = analyze_command("analyze", str(CAPTURES), "--out", str(out), "--master", cluster.master_url,
                           "--partitions", "8", "--progress", *conf)
    _stopped_run(argv, tmp_path, _printed(r"^analyze: \d+/\d+ file"), signal.SIGINT, True, env=driver_env())
    deadline = time.monotonic() + 30
    while (cluster.active_apps() or cluster.executors()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert cluster.active_apps() == [] and cluster.executors() == [], (cluster.active_apps(), cluster.executors())
    return json.loads((out / "summary.json").read_text())
