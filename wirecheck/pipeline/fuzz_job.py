"""``wirecheck analyze-fuzz``: fuzz campaign summaries (fuzz/campaign.py, ``"kind":
"fuzz-campaign"``) from many nights aggregated on Spark.

Summaries are parsed on the executors (one task per group of files) into rows of three
tables; two more are aggregated from them in Spark SQL. Each is a Parquet directory
``OUT/<table>/``:

- ``fuzz_jobs``: one row per job of a campaign: target, kind, protocol, execs, exec/s,
  coverage, features, corpus size, peak memory, findings, error;
- ``fuzz_timeline``: the coverage-over-time points of each job (seconds into the job, execs,
  coverage, features, corpus size);
- ``fuzz_findings``: each campaign's deduplicated findings (signature, kind, target, count);
- ``fuzz_signatures``: findings by signature over all campaigns: first and last campaign
  that saw it, in how many, total count, the targets that found it;
- ``fuzz_trends``: per target and campaign, in time order: exec/s, coverage and corpus size
  with the change since the target's previous campaign (corpus growth, coverage gained).
"""
from __future__ import annotations

import glob
import json
import os
import time
from typing import Iterable, Iterator, Optional

CAMPAIGN = "fuzz-campaign"

JOBS = (("run", "string"), ("started", "double"), ("target", "string"), ("kind", "string"),
        ("protocol", "string"), ("mode", "string"), ("seconds", "double"), ("execs", "bigint"),
        ("exec_per_s", "double"), ("coverage", "bigint"), ("features", "bigint"),
        ("corpus_size", "bigint"), ("peak_rss_mb", "double"), ("findings", "bigint"), ("error", "string"))
TIMELINE = (("run", "string"), ("started", "double"), ("target", "string"), ("t", "double"),
            ("execs", "bigint"), ("coverage", "bigint"), ("features", "bigint"), ("corpus_size", "bigint"))
FINDINGS = (("run", "string"), ("started", "double"), ("signature", "string"), ("kind", "string"),
            ("target", "string"), ("found_by", "array<string>"), ("count", "bigint"), ("file", "string"))
ROW_TABLES = {"fuzz_jobs": JOBS, "fuzz_timeline": TIMELINE, "fuzz_findings": FINDINGS}


class CampaignError(ValueError):
    """A path names nothing, or a named file is not a campaign summary."""


def _is_campaign(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("kind") == CAMPAIGN


def campaign_files(paths: Iterable[str]) -> list[str]:
    """Campaign summaries under ``paths``: files named directly must be summaries; directories
    (walked) and globs contribute the ``*.json`` files that are."""
    out: list[str] = []
    for path in paths:
        if glob.has_magic(path):
            matches = sorted(glob.glob(path, recursive=True))
            if not matches:
                raise CampaignError(f"{path}: no such file or directory")
            out += [m for m in matches if os.path.isfile(m) and _is_campaign(m)]
        elif os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                out += [os.path.join(root, f) for f in sorted(files)
                        if f.endswith(".json") and _is_campaign(os.path.join(root, f))]
        elif not os.path.exists(path):
            raise CampaignError(f"{path}: no such file or directory")
        elif not _is_campaign(path):
            raise CampaignError(f"{path}: not a fuzz campaign summary (no \"kind\": \"{CAMPAIGN}\"; "
                                "wirecheck fuzz --all writes those)")
        else:
            out.append(path)
    return sorted(dict.fromkeys(os.path.abspath(p) for p in out))


def _int(value) -> Optional[int]:
    return int(value) if isinstance(value, (int, float)) else None


def _float(value) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) else None


def campaign_rows(path: str) -> Iterator[tuple[str, tuple]]:
    """``(table, row tuple)`` for one campaign summary (column order of the tables above)."""
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    run, started = os.path.basename(path), _float(doc.get("started"))
    for job in doc.get("jobs", []):
        # The job's name is the target's identity across campaigns: a live job's "target" is
        # the address of that night's broker.
        target = job.get("name") or job.get("target")
        kind = job.get("kind") or ("live" if job.get("mode") == "live" else None)
        yield "fuzz_jobs", (run, started, target, kind, job.get("protocol"), job.get("mode"),
                            _float(job.get("seconds")), _int(job.get("execs")), _float(job.get("exec_per_s")),
                            _int(job.get("coverage")), _int(job.get("features")), _int(job.get("corpus_size")),
                            _float(job.get("peak_rss_mb")), len(job.get("findings") or []),
                            job.get("error") or None)
        for point in job.get("timeline") or []:
            t, execs, cov, ft, corpus = (list(point) + [None] * 5)[:5]
            yield "fuzz_timeline", (run, started, target, _float(t), _int(execs), _int(cov), _int(ft), _int(corpus))
    for f in doc.get("findings", []):
        yield "fuzz_findings", (run, started, f.get("signature"), f.get("kind"), f.get("target"),
                                [str(x) for x in f.get("found_by") or []], _int(f.get("count")) or 1,
                                f.get("file"))


def analyze_fuzz(paths: Iterable[str], out: str, master: str = "local[*]", spark=None,
                 conf: Optional[dict] = None) -> dict:
    """Run the job; write the five tables and ``out/summary.json``; return the summary."""
    from wirecheck.pipeline import schema
    from wirecheck.pipeline.spark_job import drop_kit, session, ship_kit, write_summary
    t0 = time.monotonic()
    files = campaign_files(paths)
    if not files:
        raise CampaignError("no fuzz campaign summaries found (wirecheck fuzz --all writes "
                            "reports/fuzz/campaign-*.json)")
    own = spark is None
    spark = spark or session(master, app="wirecheck-analyze-fuzz", conf=conf)
    kit = None
    try:
        from pyspark import StorageLevel
        from pyspark.sql import Window
        from pyspark.sql import functions as F
        sc = spark.sparkContext
        kit = ship_kit(spark)     # campaign_rows runs on the executors
        rows = sc.parallelize(files, min(len(files), sc.defaultParallelism * 4)).flatMap(campaign_rows)
        rows.persist(StorageLevel.MEMORY_AND_DISK)
        frames = {}
        for table, columns in ROW_TABLES.items():
            data = rows.filter(lambda tr, t=table: tr[0] == t).map(lambda tr: tr[1])
            spark.createDataFrame(data, schema.ddl(columns)).write.mode("overwrite").parquet(os.path.join(out, table))
            frames[table] = spark.read.parquet(os.path.join(out, table))
        rows.unpersist()
        findings, jobs = frames["fuzz_findings"], frames["fuzz_jobs"]
        signatures = findings.groupBy("signature").agg(
            F.first("kind").alias("kind"), F.min("started").alias("first_seen"),
            F.max("started").alias("last_seen"), F.countDistinct("run").alias("runs"),
            F.sum("count").alias("total_count"),
            F.array_sort(F.array_distinct(F.flatten(F.collect_list("found_by")))).alias("targets"))
        signatures.write.mode("overwrite").parquet(os.path.join(out, "fuzz_signatures"))
        by_target = Window.partitionBy("target").orderBy("started", "run")
        trends = (jobs.where(F.col("error").isNull())
                  .select("target", "kind", "protocol", "run", "started", "exec_per_s", "coverage", "corpus_size")
                  .withColumn("coverage_gain", F.col("coverage") - F.lag("coverage").over(by_target))
                  .withColumn("corpus_growth", F.col("corpus_size") - F.lag("corpus_size").over(by_target)))
        trends.write.mode("overwrite").parquet(os.path.join(out, "fuzz_trends"))
        counts = {t: spark.read.parquet(os.path.join(out, t)).count()
                  for t in (*ROW_TABLES, "fuzz_signatures", "fuzz_trends")}
        summary = {"kind": "fuzz-analysis", "master": sc.master, "out": os.path.abspath(out), "campaigns": len(files), "rows": counts,
                   "seconds": round(time.monotonic() - t0, 2)}
    finally:
        if own:
            spark.stop()
            drop_kit(kit)
    return write_summary(out, summary)
