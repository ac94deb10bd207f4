"""``wirecheck analyze``: passive conformance checking of capture corpora on Spark.

The job, in three steps (the unit of parallelism is the TCP conversation, not the file):

1. **Read** (one task per capture file): the file is streamed segment by segment
   (conformance/pcapfile.py; never loaded whole) and every TCP segment on a protocol port is
   keyed by its file, its address pair and its place in the file.
2. **Shuffle** by (file, address pair), each partition sorted by that key and the place in
   the file (``repartitionAndSortWithinPartitions``: Spark's external sort, which spills to
   disk): a partition holds whole conversations, each in capture order, and one huge capture's
   conversations spread over every partition.
3. **Analyze** (one task per partition): each address pair's segments go through TCP
   reassembly, the capture decoders and the protocol's observer (pipeline/flows.py, the code
   the plain ``pipeline.local`` runs), one conversation at a time, giving rows of ``frames``,
   ``violations`` and ``flows``. Rows are kept (memory and disk) while the three tables are
   written; ``stats`` is then aggregated from them in Spark SQL.

Memory per task is bounded by the largest conversation's reassembly state (early segments,
the decoders' partial frames), not by the input's size.
"""
from __future__ import annotations

import itertools
import json
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Iterable, Iterator, Optional

from pipeline import schema
from pipeline.flows import iter_rows, specs_by_port
from pipeline.inputs import capture_files, level, protocols

ROOT = Path(__file__).resolve().parent.parent
#: The kit's packages shipped to a cluster's executors (``SparkContext.addPyFile``).
KIT_PACKAGES = ("reference_impl", "conformance", "pipeline", "fuzz")


class SparkUnavailable(RuntimeError):
    """pyspark or a Java runtime is missing."""


def _segment_key(seg) -> str:
    a, b = sorted((seg.src, seg.dst))
    return f"{a[0]}|{a[1]}|{b[0]}|{b[1]}"


#: Segments of one address pair sent through the shuffle as one record (fewer, larger
#: records: the shuffle's cost is per record), and the bytes held for all pairs at most
#: before every batch is sent as it is.
BATCH_SEGMENTS = 64
BATCH_HOLD_BYTES = 32 << 20


def read_file(file: str, ports: frozenset) -> Iterator[tuple]:
    """Step 1: ``((file, pair, n), [segment fields, ...])`` for the TCP segments of ``file``
    on ``ports``, a pair's consecutive segments in batches; ``n`` is the place in the file of
    a batch's first segment, so sorting by the key puts each pair's segments in file order."""
    from conformance.pcapfile import PcapReader
    held: dict[str, tuple[int, list]] = {}
    held_bytes = 0
    with PcapReader(file) as reader:
        for n, seg in enumerate(reader):
            if seg.src[1] not in ports and seg.dst[1] not in ports:
                continue
            pair = _segment_key(seg)
            batch = held.get(pair)
            if batch is None:
                batch = held[pair] = (n, [])
            batch[1].append((seg.time, seg.src, seg.dst, seg.seq, seg.ack, seg.flags, seg.data))
            held_bytes += len(seg.data)
            if len(batch[1]) >= BATCH_SEGMENTS:
                del held[pair]
                held_bytes -= sum(len(f[6]) for f in batch[1])
                yield (file, pair, batch[0]), batch[1]
            elif held_bytes > BATCH_HOLD_BYTES:
                for key, (first, segs) in held.items():
                    yield (file, key, first), segs
                held.clear()
                held_bytes = 0
    for key, (first, segs) in held.items():
        yield (file, key, first), segs


def analyze_partition(items: Iterable[tuple], protocol: Optional[str], extra_ports: tuple,
                      profile: Optional[str]) -> Iterator[tuple]:
    """Step 3: ``(table, row tuple)`` for the conversations of one sorted partition."""
    from conformance.pcapfile import Segment
    by_port = specs_by_port(protocols(protocol), extra_ports)
    for (file, _pair), group in itertools.groupby(items, key=lambda kv: kv[0][:2]):
        segments = (Segment(*fields) for _key, batch in group for fields in batch)
        for table, row in iter_rows(file, segments, by_port, profile, level):
            yield table, schema.as_tuple(table, row)


def _pair_partition(key: tuple) -> int:
    from pyspark.rdd import portable_hash
    return portable_hash(key[:2])


def kit_zip(dest: str) -> str:
    """The kit's packages as one zip for the executors of a cluster (Python files only)."""
    path = os.path.join(dest, "wirecheck-kit.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in KIT_PACKAGES:
            for file in sorted((ROOT / package).rglob("*")):
                if file.is_file() and file.suffix in (".py", ".toml", ".ini", ".json"):
                    zf.write(file, file.relative_to(ROOT).as_posix())
    return path


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def session(master: str = "local[*]", app: str = "wirecheck", conf: Optional[dict] = None):
    """A SparkSession on ``master``; the executors' Python is this one in local mode (the kit's
    venv). Raises :class:`SparkUnavailable` with what to install when pyspark or Java is missing."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise SparkUnavailable("pyspark is not installed: pip install 'wirecheck[spark]' "
                               "(or `make install`)") from exc
    if not os.environ.get("JAVA_HOME") and not any(
            os.access(os.path.join(d, "java"), os.X_OK) for d in os.environ.get("PATH", "").split(os.pathsep)):
        raise SparkUnavailable("no Java runtime: Spark needs Java 17 or 21 (`make spark` installs "
                               "Debian's default-jre-headless), or set JAVA_HOME")
    log4j = os.environ.get("WIRECHECK_SPARK_LOG4J") or str(Path(__file__).with_name("log4j2.properties"))
    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile=file:{log4j}")
               .config("spark.executor.extraJavaOptions", f"-Dlog4j.configurationFile=file:{log4j}")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC"))
    if is_local(master):
        # The Python workers are this interpreter (the kit's venv): pyspark takes their
        # command from PYSPARK_PYTHON when the context starts (default: python3 on PATH).
        os.environ["PYSPARK_PYTHON"] = sys.executable
        builder = (builder.config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:          # the JVM did not start (py4j raises its own types)
        raise SparkUnavailable(f"Spark did not start on {master}: {exc}") from exc
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _stats(spark, out: str):
    """``stats`` from the written frames, violations and flows (see pipeline/schema.py)."""
    from pyspark.sql import functions as F
    frames = spark.read.parquet(os.path.join(out, "frames"))
    violations = spark.read.parquet(os.path.join(out, "violations"))
    flows = spark.read.parquet(os.path.join(out, "flows"))
    bucket = F.lit(f">{schema.SIZE_BUCKETS[-1]}")
    for bound in reversed(schema.SIZE_BUCKETS):
        bucket = F.when(F.col("size") <= bound, F.lit(f"<={bound}")).otherwise(bucket)
    long = lambda df, metric, key, count, value: df.select(   # noqa: E731
        "protocol", F.lit(metric).alias("metric"), key.cast("string").alias("key"),
        count.cast("bigint").alias("count"), value.cast("double").alias("value"))
    parts = [
        long(frames.groupBy("protocol", "type").agg(F.count("*").alias("n"), F.sum("size").alias("b")),
             "type", F.col("type"), F.col("n"), F.col("b")),
        long(frames.groupBy("protocol", bucket.alias("bucket")).count(),
             "size", F.col("bucket"), F.col("count"), F.lit(None)),
        long(frames.where(F.col("code").isNotNull())
             .groupBy("protocol", F.concat_ws(" ", "type", "code").alias("tc")).count(),
             "code", F.col("tc"), F.col("count"), F.lit(None)),
        long(violations.groupBy("protocol", "requirement").count(),
             "violation", F.col("requirement"), F.col("count"), F.lit(None)),
    ]
    lat = frames.where(F.col("latency").isNotNull()).groupBy("protocol").agg(
        F.count("*").alias("n"), F.mean("latency").alias("mean"), F.max("latency").alias("max"),
        F.percentile_approx("latency", [0.5, 0.9, 0.99], 10000).alias("p"))
    for key, value in (("p50", F.col("p")[0]), ("p90", F.col("p")[1]), ("p99", F.col("p")[2]),
                       ("max", F.col("max")), ("mean", F.col("mean"))):
        parts.append(long(lat, "latency", F.lit(key), F.col("n"), value))
    totals = flows.groupBy("protocol").agg(
        F.count("*").alias("flows"), F.sum("frames").alias("frames"),
        (F.sum("bytes_c2s") + F.sum("bytes_s2c")).alias("bytes"), F.sum("errors").alias("errors"),
        F.sum("violations").alias("violations"))
    for key in ("flows", "frames", "bytes", "errors", "violations"):
        parts.append(long(totals, "flows", F.lit(key), F.col("flows"), F.col(key)))
    stats = parts[0]
    for part in parts[1:]:
        stats = stats.unionByName(part)
    return stats


#: Example violations kept per requirement in the summary's report block.
EXAMPLES = 3


def report_block(spark, out: str) -> dict:
    """What ``wirecheck report`` shows of an analysis (summary.json's ``"report"``, so the
    report needs no Parquet reader): violations by requirement (count, conversations, the
    first :data:`EXAMPLES` of them) and the whole ``stats`` table (small: one row per
    protocol and type, size bucket, code, latency figure, requirement, total)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    violations = spark.read.parquet(os.path.join(out, "violations"))
    key = ("protocol", "requirement", "level")
    counts = violations.groupBy(*key).agg(
        F.count("*").alias("count"), F.countDistinct("file", "flow").alias("flows")).collect()
    first = Window.partitionBy(*key).orderBy("file", "flow", "index")
    examples: dict = {}
    for r in (violations.withColumn("n", F.row_number().over(first)).where(F.col("n") <= EXAMPLES)
              .orderBy(*key, "n").collect()):
        examples.setdefault((r["protocol"], r["requirement"], r["level"]), []).append(
            {c: r[c] for c in ("file", "flow", "index", "direction", "message")})
    stats = spark.read.parquet(os.path.join(out, "stats")).orderBy("protocol", "metric", "key").collect()
    return {"violations": [{**{c: r[c] for c in (*key, "count", "flows")},
                            "examples": examples.get(tuple(r[c] for c in key), [])}
                           for r in sorted(counts, key=lambda r: (r["protocol"], r["requirement"]))],
            "stats": [r.asDict() for r in stats]}


def analyze(paths: Iterable[str], out: str, master: str = "local[*]", protocol: Optional[str] = None,
            ports: Iterable[int] = (), profile: Optional[str] = None, partitions: Optional[int] = None,
            spark=None) -> dict:
    """Run the job; write ``out/<table>/`` for each table of pipeline/schema.py and
    ``out/summary.json``; return the summary."""
    t0 = time.monotonic()
    files = [os.path.abspath(f) for f in capture_files(paths)]
    extra_ports = tuple(ports)
    by_port = specs_by_port(protocols(protocol), extra_ports)     # checks --port/--protocol
    port_set = frozenset(by_port)
    own = spark is None
    spark = spark or session(master)
    sc = spark.sparkContext
    try:
        if not is_local(sc.master):
            ship = tempfile.mkdtemp(prefix="wirecheck-kit-")
            sc.addPyFile(kit_zip(ship))
        n = partitions or max(sc.defaultParallelism * 4, 1)
        rows = (sc.parallelize(files, max(len(files), 1))
                .flatMap(lambda f: read_file(f, port_set))
                .repartitionAndSortWithinPartitions(n, _pair_partition)
                .mapPartitions(lambda items: analyze_partition(items, protocol, extra_ports, profile)))
        from pyspark import StorageLevel
        rows.persist(StorageLevel.MEMORY_AND_DISK)
        counts = {}
        for table in schema.ROW_TABLES:
            data = rows.filter(lambda tr, t=table: tr[0] == t).map(lambda tr: tr[1])
            df = spark.createDataFrame(data, schema.ddl(schema.TABLES[table]))
            df.write.mode("overwrite").parquet(os.path.join(out, table))
            counts[table] = spark.read.parquet(os.path.join(out, table)).count()
        rows.unpersist()
        _stats(spark, out).coalesce(1).write.mode("overwrite").parquet(os.path.join(out, "stats"))
        counts["stats"] = spark.read.parquet(os.path.join(out, "stats")).count()
        report = report_block(spark, out)
        summary = {"kind": "capture-analysis", "master": sc.master, "out": os.path.abspath(out), "partitions": n,
                   "files": len(files), "input_bytes": sum(os.path.getsize(f) for f in files),
                   "protocol": protocol, "profile": profile, "rows": counts,
                   "seconds": round(time.monotonic() - t0, 2), "report": report}
    finally:
        if own:
            spark.stop()
    Path(out).mkdir(parents=True, exist_ok=True)
    Path(out, "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary
