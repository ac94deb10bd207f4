"""A task's rows written straight to Parquet with pyarrow: ``OUT/<table>/part-NNNNN.parquet``,
one file per table and partition, row groups of :data:`ROW_GROUP` rows.

Why not Spark's writer: handing rows from the Python workers to the JVM converts every row
twice (pickled, then unpickled into Java objects, then into Spark's rows), and that JVM work
runs beside the Python workers, so it does not scale with the cores given to the job (on two
cores, ``local[1]`` already used one and a half). Arrow builds the columns and Parquet
encodes them in C++ inside the task's own process.

Each file is written under a temporary name and renamed when complete, and its name depends
only on the partition, so a retried task replaces its own earlier attempt; a partition with
no rows writes a file with the schema and no rows, so every table is readable even when
empty.
"""
from __future__ import annotations

import os
from typing import Iterable

from wirecheck.pipeline import schema
from wirecheck.pipeline.stats import Stats

#: Rows buffered per table before a row group is written (bounds a task's memory).
ROW_GROUP = 50_000


def arrow_type(ddl: str):
    import pyarrow as pa
    simple = {"string": pa.string(), "bigint": pa.int64(), "double": pa.float64(), "boolean": pa.bool_()}
    if ddl in simple:
        return simple[ddl]
    if ddl == "map<string,string>":
        return pa.map_(pa.string(), pa.string())
    if ddl == "array<string>":
        return pa.list_(pa.string())
    raise ValueError(f"no Arrow type for {ddl!r}")


def arrow_schema(columns):
    import pyarrow as pa
    return pa.schema([pa.field(name, arrow_type(kind)) for name, kind in columns])


class PartWriter:
    """The Parquet file of one table for one partition."""

    def __init__(self, out: str, table: str, part: int) -> None:
        import pyarrow.parquet as pq
        self.columns = schema.TABLES[table]
        self.schema = arrow_schema(self.columns)
        self.path = os.path.join(out, table, f"part-{part:05d}.parquet")
        self.tmp = os.path.join(out, table, f".part-{part:05d}.parquet.{os.getpid()}.tmp")
        self.maps = [i for i, (_, kind) in enumerate(self.columns) if kind.startswith("map<")]
        self.rows: list[tuple] = []
        self.count = 0
        self.writer = pq.ParquetWriter(self.tmp, self.schema, compression="snappy")

    def add(self, row: tuple) -> None:
        self.rows.append(row)
        if len(self.rows) >= ROW_GROUP:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa
        if not self.rows:
            return
        cols = list(zip(*self.rows))
        for i in self.maps:                     # Arrow reads a map from (key, value) pairs
            cols[i] = [list(m.items()) if m is not None else None for m in cols[i]]
        arrays = [pa.array(values, type=field.type) for values, field in zip(cols, self.schema)]
        self.writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema))
        self.count += len(self.rows)
        self.rows = []

    def close(self) -> int:
        self.flush()
        self.writer.close()
        os.replace(self.tmp, self.path)
        return self.count

    def abort(self) -> None:
        self.writer.close()
        try:
            os.unlink(self.tmp)
        except OSError:
            pass


def write_parts(out: str, part: int, rows: Iterable[tuple[str, dict]],
                tables=schema.ROW_TABLES) -> tuple[dict[str, int], Stats]:
    """Write ``(table, row)`` pairs to the partition's files; rows per table, and their
    :class:`~pipeline.stats.Stats`."""
    writers = {t: PartWriter(out, t, part) for t in tables}
    stats = Stats()
    try:
        for table, row in rows:
            writers[table].add(schema.as_tuple(table, row))
            stats.add(table, row)
    except BaseException:
        for w in writers.values():
            w.abort()
        raise
    return {t: w.close() for t, w in writers.items()}, stats


def write_table(out: str, table: str, rows: Iterable[dict]) -> int:
    """A small table (``stats``) as one file, from the driver."""
    prepare(out, (table,))
    writer = PartWriter(out, table, 0)
    for row in rows:
        writer.add(schema.as_tuple(table, row))
    return writer.close()


def prepare(out: str, tables=schema.ROW_TABLES) -> None:
    """Empty table directories under ``out`` (an earlier run's parts removed)."""
    import shutil
    for table in tables:
        path = os.path.join(out, table)
        if os.path.isdir(path):
            shutil.rmtree(path)
        os.makedirs(path)


def drop_unfinished(out: str, tables=schema.ROW_TABLES) -> None:
    """Remove the temporary files of partitions a stopped run did not finish (a killed Python
    worker leaves its ``.tmp``); the finished parts stay, readable."""
    for table in tables:
        path = os.path.join(out, table)
        if not os.path.isdir(path):
            continue
        for name in os.listdir(path):
            if name.startswith(".part-") and name.endswith(".tmp"):
                try:
                    os.unlink(os.path.join(path, name))
                except OSError:
                    pass
