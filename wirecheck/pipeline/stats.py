"""The ``stats`` table and the report's block, aggregated as rows are made: each task keeps a
:class:`Stats` of its own rows, the driver merges them (a few hundred entries each).

Aggregating in the tasks, not in Spark SQL over the written tables, keeps the work in the
parallel part of the job: the SQL queries cost seconds of query compilation and JVM time per
run whatever the input, which a two-core machine pays beside the Python workers.

Latency percentiles come from a histogram of 100 logarithmic buckets per decade (each bucket's
upper edge is 2.33% above its lower edge), so p50/p90/p99 are within that of the exact value;
count, mean and max are exact.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Iterable

from wirecheck.pipeline.schema import size_bucket

#: Logarithmic latency buckets per decade.
PER_DECADE = 100
PERCENTILES = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99))
#: Example violations kept per requirement.
EXAMPLES = 3
FLOW_TOTALS = ("flows", "frames", "bytes", "errors", "violations")


class Latency:
    __slots__ = ("buckets", "count", "total", "max", "min")

    def __init__(self) -> None:
        self.buckets: Counter = Counter()
        self.count, self.total, self.max, self.min = 0, 0.0, 0.0, math.inf

    def add(self, value: float) -> None:
        self.buckets[math.floor(math.log10(value) * PER_DECADE) if value > 0 else None] += 1
        self.count += 1
        self.total += value
        self.max = max(self.max, value)
        self.min = min(self.min, value)

    def merge(self, other: "Latency") -> None:
        self.buckets.update(other.buckets)
        self.count += other.count
        self.total += other.total
        self.max = max(self.max, other.max)
        self.min = min(self.min, other.min)

    def percentile(self, q: float) -> float:
        """Nearest rank: the bucket holding the ``ceil(q * count)``-th value, as its geometric
        middle, kept within the values seen."""
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for bucket in sorted(self.buckets, key=lambda b: -math.inf if b is None else b):
            seen += self.buckets[bucket]
            if seen >= rank:
                if bucket is None:
                    return 0.0
                middle = 10 ** ((bucket + 0.5) / PER_DECADE)
                return min(max(middle, self.min), self.max)
        return self.max


class Stats:
    """Figures of some frames, violations and flows rows (dicts as conformance/captures/flows.py emits)."""

    def __init__(self) -> None:
        self.types: Counter = Counter()          # (protocol, type) -> frames
        self.type_bytes: Counter = Counter()     # (protocol, type) -> bytes
        self.sizes: Counter = Counter()          # (protocol, bucket) -> frames
        self.codes: Counter = Counter()          # (protocol, "TYPE CODE") -> frames
        self.latency: dict[str, Latency] = {}
        self.violations: Counter = Counter()     # (protocol, requirement, level) -> count
        self.violation_flows: dict[tuple, set] = {}
        self.examples: dict[tuple, list] = {}    # same key -> the first EXAMPLES by place
        self.flows: dict[str, Counter] = {}

    def add(self, table: str, row: dict) -> None:
        protocol = row["protocol"]
        if table == "frames":
            key = (protocol, row["type"])
            self.types[key] += 1
            self.type_bytes[key] += row["size"]
            self.sizes[(protocol, size_bucket(row["size"]))] += 1
            if row["code"] is not None:
                self.codes[(protocol, f"{row['type']} {row['code']}")] += 1
            if row["latency"] is not None:
                self.latency.setdefault(protocol, Latency()).add(row["latency"])
        elif table == "violations":
            key = (protocol, row["requirement"], row["level"])
            self.violations[key] += 1
            self.violation_flows.setdefault(key, set()).add((row["file"], row["flow"]))
            self._example(key, {c: row[c] for c in ("file", "flow", "index", "direction", "message")})
        elif table == "flows":
            totals = self.flows.setdefault(protocol, Counter())
            totals.update({"flows": 1, "frames": row["frames"], "bytes": row["bytes_c2s"] + row["bytes_s2c"],
                           "errors": row["errors"], "violations": row["violations"]})

    def _example(self, key: tuple, example: dict) -> None:
        kept = self.examples.setdefault(key, [])
        kept.append(example)
        kept.sort(key=lambda e: (e["file"], e["flow"], e["index"]))
        del kept[EXAMPLES:]

    def merge(self, other: "Stats") -> "Stats":
        for name in ("types", "type_bytes", "sizes", "codes", "violations"):
            getattr(self, name).update(getattr(other, name))
        for protocol, lat in other.latency.items():
            self.latency.setdefault(protocol, Latency()).merge(lat)
        for key, flows in other.violation_flows.items():
            self.violation_flows.setdefault(key, set()).update(flows)
        for key, examples in other.examples.items():
            for example in examples:
                self._example(key, example)
        for protocol, totals in other.flows.items():
            self.flows.setdefault(protocol, Counter()).update(totals)
        return self

    def rows(self) -> list[dict]:
        """The ``stats`` table (pipeline/schema.py STATS), sorted."""
        out = []
        def row(protocol, metric, key, count, value=None):
            out.append({"protocol": protocol, "metric": metric, "key": str(key), "count": int(count),
                        "value": None if value is None else float(value)})
        for (protocol, type_), n in self.types.items():
            row(protocol, "type", type_, n, self.type_bytes[(protocol, type_)])
        for (protocol, bucket), n in self.sizes.items():
            row(protocol, "size", bucket, n)
        for (protocol, code), n in self.codes.items():
            row(protocol, "code", code, n)
        for protocol, lat in self.latency.items():
            for name, q in PERCENTILES:
                row(protocol, "latency", name, lat.count, lat.percentile(q))
            row(protocol, "latency", "max", lat.count, lat.max)
            row(protocol, "latency", "mean", lat.count, lat.total / lat.count)
        for (protocol, requirement, _level), n in self.violations.items():
            row(protocol, "violation", requirement, n)
        for protocol, totals in self.flows.items():
            for key in FLOW_TOTALS:
                row(protocol, "flows", key, totals["flows"], totals[key])
        return sorted(out, key=lambda r: (r["protocol"], r["metric"], r["key"]))

    def report(self) -> dict:
        """summary.json's ``"report"``: what ``wirecheck report`` draws, so it needs no Parquet
        reader: violations by requirement (count, conversations, the first examples) and the
        stats rows."""
        return {"violations": [{"protocol": p, "requirement": r, "level": lv, "count": n,
                                "flows": len(self.violation_flows[(p, r, lv)]),
                                "examples": self.examples.get((p, r, lv), [])}
                               for (p, r, lv), n in sorted(self.violations.items())],
                "stats": self.rows()}


def of_rows(rows: Iterable[tuple[str, dict]]) -> Stats:
    stats = Stats()
    for table, row in rows:
        stats.add(table, row)
    return stats
