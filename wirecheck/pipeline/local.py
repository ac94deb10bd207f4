"""The pipeline's per-flow analysis without Spark: one process, one file after another, the
capture streamed through one reassembler (as ``wirecheck decode --pcap`` reads it).

It is the yardstick the Spark job is tested against (same rows, other grouping), and a quick
way to see an observer's verdicts on a capture::

    python -m wirecheck.pipeline.local [--protocol P] [--port N] [--profile NAME] CAPTURES...

prints each violation and a count of rows per table.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from typing import Iterable, Optional

from wirecheck.conformance.captures.flows import analyze_file, specs_by_port
from wirecheck.pipeline.inputs import capture_files, protocols
from wirecheck.pipeline.schema import ROW_TABLES
from wirecheck.pipeline.stats import of_rows


def analyze(paths: Iterable[str], protocol: Optional[str] = None, ports: Iterable[int] = (),
            profile: Optional[str] = None) -> dict[str, list[dict]]:
    """Every row of every capture under ``paths``, by table (``stats`` too)."""
    by_port = specs_by_port(protocols(protocol), ports)
    tables: dict[str, list[dict]] = defaultdict(list)
    unread: list = []
    for path in capture_files(paths, unread):
        for table, rows in analyze_file(path, by_port, profile).items():
            tables[table] += rows
    tables["stats"] = of_rows((t, row) for t in ROW_TABLES for row in tables[t]).rows()
    tables["damaged"] = unread + tables.get("damaged", [])
    return tables


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m wirecheck.pipeline.local", description=__doc__.split("\n\n")[0])
    p.add_argument("captures", nargs="+")
    p.add_argument("--protocol")
    p.add_argument("--port", type=int, action="append", default=[])
    p.add_argument("--profile")
    args = p.parse_args(argv)
    tables = analyze(args.captures, args.protocol, args.port, args.profile)
    for d in tables["damaged"]:
        print(f"{d['file']}: {d['error']}: " + ("not read" if d["whole"] else "read up to there, the rest is lost"),
              file=sys.stderr)
    for v in tables["violations"]:
        print(f"{v['file']} {v['flow']} #{v['index']} {v['direction']} {v['requirement']} "
              f"({v['level']}): {v['message']}")
    print({t: len(rows) for t, rows in sorted(tables.items())})
    if any(d["whole"] for d in tables["damaged"]):
        return 2
    return 1 if tables["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
