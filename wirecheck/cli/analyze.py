"""``wirecheck analyze`` and ``wirecheck analyze-fuzz``: arguments and entry points (the
jobs are pipeline/spark_job.py and pipeline/fuzz_job.py).

Exit status of ``analyze``: 0 no violation found, 1 violations found (the tables have them),
2 the job could not run (no Spark or Java, no captures, bad arguments). ``analyze-fuzz``: 0,
or 2 when it could not run.
"""
from __future__ import annotations

import argparse
import json
import sys

EXIT_OK, EXIT_VIOLATIONS, EXIT_HARNESS = 0, 1, 2
DEFAULT_MASTER = "local[*]"


def add_analyze_arguments(s, protocol_type) -> None:
    s.add_argument("captures", nargs="+", metavar="CAPTURES",
                   help="pcap/pcapng files (gzip too), directories (walked) or globs")
    s.add_argument("--out", required=True, metavar="DIR",
                   help="output directory: one Parquet table per subdirectory, and summary.json")
    s.add_argument("--master", default=DEFAULT_MASTER, metavar="URL",
                   help=f"Spark master (default {DEFAULT_MASTER}: embedded, every core; "
                        "spark://HOST:7077, yarn, k8s://... for a cluster)")
    s.add_argument("--protocol", type=protocol_type,
                   help="only this protocol's conversations (default: every registered protocol, "
                        "each by its well-known ports)")
    s.add_argument("--port", type=int, action="append", default=[],
                   help="another server port of --protocol (repeatable)")
    s.add_argument("--profile", help="the --protocol's profile the observer judges by")
    s.add_argument("--partitions", type=int, default=None,
                   help="conversation partitions (default: 4 per core of the cluster, or one per 32 MB of capture when that is more)")
    s.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting, as spark-submit's --conf (repeatable), e.g. "
                        "spark.driver.memory=512m or spark.executor.memory=2g")
    s.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    s.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="files read, MB, frames, conversations and violations so far, on stderr "
                        "(default: when stderr is a terminal)")


def add_fuzz_arguments(s) -> None:
    s.add_argument("runs", nargs="+", metavar="RUNS",
                   help="campaign summaries (reports/fuzz/campaign-*.json), directories or globs")
    s.add_argument("--out", required=True, metavar="DIR")
    s.add_argument("--master", default=DEFAULT_MASTER, metavar="URL")
    s.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting, as spark-submit's --conf (repeatable)")
    s.add_argument("--json", action="store_true", help="print the summary as one JSON line")


def spark_conf(pairs: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` arguments as a dict; ValueError names a malformed one."""
    from wirecheck.cli.support import key_values
    return key_values(pairs, "--conf", "spark.driver.memory=1g")


def run_analyze(args) -> int:
    from wirecheck.pipeline.inputs import InputError
    from wirecheck.pipeline.spark_job import SparkUnavailable, analyze
    spec = args.protocol
    if (args.profile or args.port) and spec is None:
        print("wirecheck analyze: --profile and --port need --protocol", file=sys.stderr)
        return EXIT_HARNESS
    try:
        conf = spark_conf(args.conf)
    except ValueError as exc:
        print(f"wirecheck analyze: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    profile = None
    if args.profile:
        from wirecheck.conformance.profiles import ProfileError, load_profile
        try:
            profile = load_profile(spec, args.profile).base
        except ProfileError as exc:
            print(f"wirecheck analyze: {exc}", file=sys.stderr)
            return EXIT_HARNESS
    from wirecheck.pipeline.progress import enabled
    try:
        summary = analyze(args.captures, args.out, master=args.master,
                          protocol=spec.id if spec else None, ports=args.port, profile=profile,
                          partitions=args.partitions, conf=conf, progress=enabled(args.progress))
    except (InputError, SparkUnavailable, ValueError) as exc:
        print(f"wirecheck analyze: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    if summary.get("interrupted"):
        from wirecheck.conformance import cli_signals
        print(f"wirecheck analyze: {summary['interrupted']['signal']}: stopped; the tables in {summary['out']} "
              "are incomplete (summary.json says so)", file=sys.stderr)
        return cli_signals.exit_status()
    for d in summary.get("damaged", []):
        # one line per input not read whole; the others are analysed all the same
        what = "not read" if d["whole"] else "read up to there, the rest is lost"
        print(f"wirecheck analyze: {d['file']}: {d['error']}: {what}", file=sys.stderr)
    _print(summary, args.json, f"{summary['files']} capture(s), {summary['input_bytes']} bytes")
    if any(d["whole"] for d in summary.get("damaged", [])):
        return EXIT_HARNESS                  # an input could not be read at all
    return EXIT_VIOLATIONS if summary["rows"]["violations"] else EXIT_OK


def run_analyze_fuzz(args) -> int:
    from wirecheck.pipeline.fuzz_job import CampaignError, analyze_fuzz
    from wirecheck.pipeline.spark_job import SparkUnavailable
    try:
        summary = analyze_fuzz(args.runs, args.out, master=args.master, conf=spark_conf(args.conf))
    except (CampaignError, SparkUnavailable, ValueError) as exc:
        print(f"wirecheck analyze-fuzz: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    _print(summary, args.json, f"{summary['campaigns']} campaign(s)")
    return EXIT_OK


def _print(summary: dict, as_json: bool, what: str) -> None:
    if as_json:
        print(json.dumps(summary), flush=True)
        return
    tables = ", ".join(f"{t} {n}" for t, n in summary["rows"].items())
    print(f"{what} on {summary['master']} in {summary['seconds']} s: {tables}; tables in {summary['out']}")
