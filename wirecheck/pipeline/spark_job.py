"""``wirecheck analyze``: passive conformance checking of capture corpora on Spark.

The job, in three steps (the unit of parallelism is the TCP conversation, not the file):

1. **Read** (one task per capture file): the file is streamed segment by segment
   (conformance/captures/pcapfile.py; never loaded whole) and every TCP segment on a protocol port is
   keyed by its file, its address pair and its place in the file.
2. **Shuffle** by (file, address pair), each partition sorted by that key and the place in
   the file (``repartitionAndSortWithinPartitions``: Spark's external sort, which spills to
   disk): a partition holds whole conversations, each in capture order, and one huge capture's
   conversations spread over every partition.
3. **Analyze** (one task per partition): each address pair's segments go through TCP
   reassembly, the capture decoders and the protocol's observer (conformance/captures/flows.py, the code
   the plain ``wirecheck.pipeline.local`` runs), one conversation at a time, giving rows of ``frames``,
   ``violations`` and ``flows``, which the task writes as its own Parquet files
   (pipeline/parquet_parts.py: pyarrow, no row crosses into the JVM), and the figures of
   ``stats`` (pipeline/stats.py), which the driver merges and writes.

Memory per task is bounded by the largest conversation's reassembly state (early segments,
the decoders' partial frames), not by the input's size.
"""
from __future__ import annotations

import itertools
import os
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Iterable, Iterator, Optional

from wirecheck.pipeline import parquet_parts, schema
from wirecheck.conformance.captures.flows import iter_rows, level, specs_by_port
from wirecheck.pipeline.inputs import InputError, capture_files, protocols
from wirecheck.pipeline.stats import Stats

#: The installed ``wirecheck`` package (what a cluster's executors are sent).
PACKAGE = Path(__file__).resolve().parent.parent
#: Capture bytes per conversation partition at most (by default): a task's sort buffer and
#: rows follow its partition's size, so more input means more partitions, not bigger ones
#: (memory stays flat as the input grows).
PARTITION_BYTES = 32 << 20


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


def read_file(file: str, ports: frozenset, damaged: list | None = None) -> Iterator[tuple]:
    """Step 1: ``((file, pair, n), [segment fields, ...])`` for the TCP segments of ``file``
    on ``ports``, a pair's consecutive segments in batches; ``n`` is the place in the file of
    a batch's first segment, so sorting by the key puts each pair's segments in file order.
    A file broken past its header gives what precedes the break, one that is no capture
    nothing; either appends ``{"file", "error", "whole"}`` to ``damaged`` (whole: nothing of
    it could be read)."""
    from wirecheck.conformance.captures.pcapfile import CaptureFormatError, PcapReader
    held: dict[str, tuple[int, list]] = {}
    held_bytes = 0
    try:
        reader = PcapReader(file, tolerant=True)
    except (OSError, CaptureFormatError) as exc:
        if damaged is None:
            raise
        damaged.append({"file": file, "error": str(exc), "whole": True})
        return
    with reader:
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
    if reader.damage is not None:
        if damaged is None:
            raise CaptureFormatError(reader.damage)
        damaged.append({"file": file, "error": reader.damage, "whole": False})


def analyze_partition(items: Iterable[tuple], protocol: Optional[str], extra_ports: tuple,
                      profile: Optional[str]) -> Iterator[tuple]:
    """Step 3: ``(table, row)`` for the conversations of one sorted partition."""
    from wirecheck.conformance.captures.pcapfile import Segment
    by_port = specs_by_port(protocols(protocol), extra_ports)
    for (file, _pair), group in itertools.groupby(items, key=lambda kv: kv[0][:2]):
        segments = (Segment(*fields) for _key, batch in group for fields in batch)
        yield from iter_rows(file, segments, by_port, profile, level)


def counted_read(file: str, ports: frozenset, counters) -> Iterator[tuple]:
    """:func:`read_file`, adding the file and its bytes to the progress counters at its end,
    and what could not be read of it to ``counters.damaged``."""
    damaged: list = []
    yield from read_file(file, ports, damaged)
    if damaged:
        counters.damaged.add(damaged)
    counters.files.add(1)
    counters.bytes.add(os.path.getsize(file))


def write_partition(out: str, part: int, items, protocol, extra_ports, profile, counters):
    """Step 3 of one partition, written; its rows added to the progress counters."""
    counts, stats = parquet_parts.write_parts(out, part, analyze_partition(items, protocol, extra_ports, profile))
    counters.frames.add(counts["frames"])
    counters.flows.add(counts["flows"])
    counters.violations.add(counts["violations"])
    return counts, stats


def _pair_partition(key: tuple) -> int:
    from pyspark.rdd import portable_hash
    return portable_hash(key[:2])


def kit_zip(dest: str) -> str:
    """The ``wirecheck`` package as one zip for the executors of a cluster (its Python and
    settings files; ``SparkContext.addPyFile``)."""
    path = os.path.join(dest, "wirecheck-kit.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in sorted(PACKAGE.rglob("*")):
            if file.is_file() and file.suffix in (".py", ".toml", ".ini", ".json"):
                zf.write(file, file.relative_to(PACKAGE.parent).as_posix())
    return path


def ship_kit(spark) -> Optional[str]:
    """On a cluster, send the kit to the executors with the job (``addPyFile``): their machines
    need Python, pyspark and the kit's dependencies (msgpack, orjson, brotli, pyarrow), not the
    kit itself. Embedded (local) Spark runs this interpreter, which has it. Returns the
    temporary folder of the zip (None in local mode): the driver serves the file from there
    until the session stops, then :func:`drop_kit` removes it."""
    sc = spark.sparkContext
    if is_local(sc.master):
        return None
    folder = tempfile.mkdtemp(prefix="wirecheck-kit-")
    try:
        sc.addPyFile(kit_zip(folder))
    except BaseException:
        drop_kit(folder)
        raise
    return folder


def drop_kit(folder: Optional[str]) -> None:
    """Remove what :func:`ship_kit` made (after the session stopped, or was stopped by a signal)."""
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def _active_session():
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    return SparkSession.getActiveSession()


def session(master: str = "local[*]", app: str = "wirecheck", conf: Optional[dict] = None):
    """A SparkSession on ``master``; the executors' Python is this one in local mode (the kit's
    venv). Raises :class:`SparkUnavailable` with what to install when pyspark or Java is missing."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise SparkUnavailable("pyspark is not installed: pip install 'wirecheck[spark]' "
                               "(or `make install`)") from exc
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        raise SparkUnavailable("no Java runtime: Spark needs Java 17 or 21 (`make spark` installs "
                               "Debian's default-jre-headless), or set JAVA_HOME")
    log4j = os.environ.get("WIRECHECK_SPARK_LOG4J") or str(Path(__file__).with_name("log4j2.properties"))
    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile=file:{log4j}")
               .config("spark.executor.extraJavaOptions", f"-Dlog4j.configurationFile=file:{log4j}")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC"))
    # pyspark takes the Python workers' command from PYSPARK_PYTHON when the context starts
    # (default: python3 on PATH); spark-submit turns --conf spark.pyspark.python into it, and so
    # must the kit, which starts the driver itself (without this the setting was ignored).
    # Embedded Spark: this interpreter (the kit's venv), unless the setting names another.
    python = (conf or {}).get("spark.pyspark.python")
    if python:
        os.environ["PYSPARK_PYTHON"] = python
    elif is_local(master):
        os.environ["PYSPARK_PYTHON"] = sys.executable
    if is_local(master):
        builder = (builder.config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    import signal
    import threading
    # SparkContext puts a SIGINT handler of its own in place (cancel the jobs, raise
    # KeyboardInterrupt); the command's (conformance/cli_signals.py) is put back: it also
    # notes which signal came, and a second one stops at once
    handler = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    try:
        spark = builder.getOrCreate()
    except Exception as exc:          # the JVM did not start (py4j raises its own types)
        raise SparkUnavailable(f"Spark did not start on {master}: {exc}") from exc
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
    spark.sparkContext.setLogLevel("ERROR")
    # py4j logs a broken connection to the JVM with its traceback before it raises it: the
    # raised error is what the kit reports (a stopped run's broken connection is no news)
    # (some of it through the root logger: "KeyboardInterrupt while sending command")
    import logging
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    if _not_py4j not in logging.getLogger().filters:
        logging.getLogger().addFilter(_not_py4j)
    return spark


def _not_py4j(record) -> bool:
    return "py4j" not in (record.pathname or "")


def analyze(paths: Iterable[str], out: str, master: str = "local[*]", protocol: Optional[str] = None,
            ports: Iterable[int] = (), profile: Optional[str] = None, partitions: Optional[int] = None,
            spark=None, conf: Optional[dict] = None, progress: bool = False) -> dict:
    """Run the job; write ``out/<table>/`` for each table of pipeline/schema.py and
    ``out/summary.json``; return the summary. ``progress``: show the figures so far on stderr
    (pipeline/progress.py)."""
    from wirecheck.pipeline.progress import Counters, Display
    t0, wall_start = time.monotonic(), time.time()
    unread: list = []
    files = [os.path.abspath(f) for f in capture_files(paths, unread)]
    if unread and not files:
        # nothing that can be read: refused before Spark starts
        raise InputError(f"{unread[0]['file']}: {unread[0]['error']}")
    extra_ports = tuple(ports)
    by_port = specs_by_port(protocols(protocol), extra_ports)     # checks --port/--protocol
    port_set = frozenset(by_port)
    # A session this call makes is stopped at its end; one already running in this process
    # (getOrCreate would hand it back) is left running for whoever made it.
    own = spark is None and _active_session() is None
    spark = spark or session(master, conf=conf)
    started = time.monotonic()
    sc = spark.sparkContext
    kit = None
    try:
        kit = ship_kit(spark)
        input_bytes = sum(os.path.getsize(f) for f in files)
        n = partitions or max(sc.defaultParallelism * 4, -(-input_bytes // PARTITION_BYTES), 1)
        out_abs = os.path.abspath(out)
        parquet_parts.prepare(out_abs)
        counters = Counters(sc)
        with Display(counters, len(files), input_bytes, progress):
            written = (sc.parallelize(files, max(len(files), 1))
                       .flatMap(lambda f: counted_read(f, port_set, counters))
                       .repartitionAndSortWithinPartitions(n, _pair_partition)
                       .mapPartitionsWithIndex(lambda part, items: [write_partition(
                           out_abs, part, items, protocol, extra_ports, profile, counters)])
                       .collect())
        counts = {t: sum(c[t] for c, _ in written) for t in schema.ROW_TABLES}
        stats = Stats()
        for _, part in written:
            stats.merge(part)
        report = stats.report()
        counts["stats"] = parquet_parts.write_table(out_abs, "stats", report["stats"])
        for table in schema.TABLES:
            Path(out_abs, table, "_SUCCESS").touch()
        # The settings as Spark holds them (a --conf Spark did not take shows as None).
        settings = {key: sc.getConf().get(key) for key in (conf or {})}
        summary = {"kind": "capture-analysis", "started": wall_start, "master": sc.master, "out": os.path.abspath(out), "partitions": n,
                   "conf": settings,
                   "files": len(files), "input_bytes": input_bytes,
                   "protocol": protocol, "profile": profile, "rows": counts,
                   "seconds": round(time.monotonic() - started, 2),
                   "startup_seconds": round(started - t0, 2), "report": report,
                   "damaged": sorted([dict(d, file=os.path.abspath(d["file"])) for d in unread]
                                     + counters.damaged.value, key=lambda d: d["file"])}
    except (KeyboardInterrupt, Exception) as exc:
        # SIGINT or SIGTERM (conformance/cli_signals.py): Spark is stopped below; the tables
        # are incomplete (no _SUCCESS marker), and summary.json says so. Sent to the process
        # group, the signal reaches Spark's JVM too, and the job may fail with a Py4J error
        # before the KeyboardInterrupt comes: that is the signal as well.
        from wirecheck.conformance import cli_signals
        if not isinstance(exc, KeyboardInterrupt) and cli_signals.received() is None:
            raise
        _quiet(sc)
        summary = {"kind": "capture-analysis", "started": wall_start, "master": sc.master,
                   "out": os.path.abspath(out), "files": len(files), "protocol": protocol, "profile": profile,
                   "seconds": round(time.monotonic() - started, 2),
                   "interrupted": {"signal": cli_signals.signal_name(),
                                   "tables": "incomplete: partitions written before the signal only"}}
    finally:
        late = _stop(spark) if own else False
        if own:                  # a session of the caller's may still serve the zip to its executors
            drop_kit(kit)
    if "interrupted" in summary:
        parquet_parts.drop_unfinished(os.path.abspath(out))
    write_summary(out, summary)
    if late:                 # the signal came while Spark stopped: the analysis is whole, written
        raise KeyboardInterrupt("stopped while Spark stopped")
    return summary


def _quiet(sc) -> None:
    """A stopped job: its running tasks cancelled, and the JVM's log of what that breaks (every
    task's stack) silenced; the user asked for the stop and is told in one line."""
    try:
        sc.setLogLevel("OFF")
        sc.cancelAllJobs()
    except Exception:                      # the JVM may be going already
        pass


def _stop(spark) -> bool:
    """Stop the session; True when a signal (KeyboardInterrupt) came meanwhile, after it was
    asked to stop (the second signal exits at once: conformance/cli_signals.py)."""
    try:
        spark.stop()
        return False
    except KeyboardInterrupt:
        try:
            spark.stop()
        except Exception:                  # the JVM may be gone already: the sweep ends it
            pass
        return True


def write_summary(out: str, summary: dict) -> dict:
    """``out/summary.json`` (what ``wirecheck report`` reads), returning ``summary``."""
    Path(out).mkdir(parents=True, exist_ok=True)
    from wirecheck.conformance.atomic_file import write_json
    write_json(Path(out, "summary.json"), summary)
    return summary
