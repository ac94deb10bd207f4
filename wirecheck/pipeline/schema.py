"""Column lists of the pipeline's Parquet tables, one place for the Spark job, the tests and
the report. Each table is a directory ``OUT/<table>/`` of Parquet files.

Types are Spark SQL DDL strings, so this module imports nothing from Spark (the plain
analysis and the report use it without a JVM).
"""
from __future__ import annotations

#: A decoded frame. ``index`` counts the conversation's frames, both directions, from 0;
#: ``timestamp`` is the capture time (seconds since the epoch) of the segment that completed
#: the frame; ``size`` the capture bytes it took (for SignalR, whose decoders do not say where
#: each frame ends, frames that came in one read share its bytes evenly); ``code`` a response/error code field when the frame has one;
#: ``latency`` seconds since the request this frame answers; ``fields`` its other scalar
#: fields, as short strings.
FRAMES = (("file", "string"), ("flow", "string"), ("direction", "string"), ("index", "bigint"),
          ("timestamp", "double"), ("protocol", "string"), ("type", "string"), ("size", "bigint"),
          ("code", "string"), ("latency", "double"), ("fields", "map<string,string>"))

#: A rule broken: the frame ``index`` of the conversation, the side at fault (``direction``:
#: c2s = the client), the catalogue's requirement ID and level.
VIOLATIONS = (("file", "string"), ("flow", "string"), ("protocol", "string"), ("direction", "string"),
              ("index", "bigint"), ("requirement", "string"), ("level", "string"), ("message", "string"))

#: One TCP conversation. ``errors``: decode errors and capture problems (each ends its
#: direction's decoding), ``error`` the first of them; ``end_c2s``/``end_s2c`` how each
#: direction ended (fin, rst, reused, end = end of capture); latency over its exchanges.
FLOWS = (("file", "string"), ("flow", "string"), ("protocol", "string"), ("client", "string"),
         ("server", "string"), ("start", "double"), ("end", "double"), ("duration", "double"),
         ("frames", "bigint"), ("frames_c2s", "bigint"), ("frames_s2c", "bigint"),
         ("bytes_c2s", "bigint"), ("bytes_s2c", "bigint"), ("end_c2s", "string"), ("end_s2c", "string"),
         ("mid_stream", "boolean"), ("errors", "bigint"), ("error", "string"), ("violations", "bigint"),
         ("exchanges", "bigint"), ("latency_mean", "double"), ("latency_p50", "double"),
         ("latency_max", "double"))

#: Per protocol, long format: ``metric`` is ``type`` (key: frame type; count frames, value
#: bytes), ``size`` (key: size bucket "<=N" bytes; count), ``code`` (key: "TYPE CODE"; count),
#: ``latency`` (key: p50, p90, p99, max, mean; value seconds, count exchanges), ``violation``
#: (key: requirement ID; count), ``flows`` (key: flows, frames, bytes, errors, violations;
#: value the total).
STATS = (("protocol", "string"), ("metric", "string"), ("key", "string"), ("count", "bigint"),
         ("value", "double"))

TABLES = {"frames": FRAMES, "violations": VIOLATIONS, "flows": FLOWS, "stats": STATS}
#: The tables a task's rows go to (stats is computed from them).
ROW_TABLES = ("frames", "violations", "flows")


def ddl(columns) -> str:
    """Columns as a Spark DDL schema string (``createDataFrame``; analyze-fuzz's tables)."""
    return ", ".join(f"`{name}` {kind}" for name, kind in columns)


def as_tuple(table: str, row: dict) -> tuple:
    """A row dict as a tuple in the table's column order."""
    return tuple(row.get(name) for name, _ in TABLES[table])


#: Upper bounds of the size buckets of ``stats`` (bytes); larger frames are "">N"".
SIZE_BUCKETS = tuple(1 << k for k in range(4, 25, 2))      # 16 B .. 16 MiB by 4x


def size_bucket(size: int) -> str:
    for bound in SIZE_BUCKETS:
        if size <= bound:
            return f"<={bound}"
    return f">{SIZE_BUCKETS[-1]}"
