"""Run the benchmarks: ``python benchmarks/run.py --out reports/bench.json [--quick]``.

Writes ``{"machine": {...}, "results": [{"name", "value", "unit", "peer", "ratio", "goal",
"met"}, ...]}`` and prints the same figures as a Markdown table (the docs' benchmark page is generated from the JSON). ``peer`` is
what a result is compared with (the whole-buffer figure, the 1x time, the codec's frames/s),
``ratio`` the comparison, ``goal`` the target for that ratio, ``met`` whether it is reached.
A full run takes about seven minutes on two cores (a third of it the atheris targets, five
seconds each, two at a time: benchmarks/bench_fuzz.py; a fifth the pipeline's six Spark jobs);
``--quick`` (smaller inputs, 3 repetitions, two fuzz targets, BlipMQ's quick suite alone, no
pipeline) about half a minute, for smoke tests. Timings are figures to read, not assertions.
Each step says on stderr when it starts and how long it took (``bench: [3/12] ...``).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:          # runnable as a script from the repository root
    sys.path.insert(0, str(ROOT))

from benchmarks import (bench_blipmq_decode, bench_brokers, bench_fuzz, bench_pipeline,  # noqa: E402
                        bench_protocols, bench_replay, bench_report, bench_rmqs_broker,
                        bench_rmqs_decode, bench_signalr_decode, bench_suite, bench_vibemq_decode,
                        calibration)
from wirecheck.conformance import cli_signals  # noqa: E402
from wirecheck.conformance.atomic_file import write_json  # noqa: E402

#: MB of pcap the full run's pipeline figures use (benchmarks/bench_pipeline.py alone defaults
#: to 500 MB, about nine minutes, where its goals apply; this keeps ``make bench`` within its
#: ten). --quick leaves
#: the pipeline out: three Spark start-ups are more than a smoke run's budget
#: (tests/project/test_bench_pipeline.py runs it small).
PIPELINE_MB = 150.0


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Processor", "cpu model"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict:
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        # One fixed Python workload's time (benchmarks/calibration.py): compares two runs'
        # machines, which the absolute goals (fuzz exec/s) depend on.
        "calibration_us": calibration.calibration_us(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    try:
        import scapy
        info["scapy"] = scapy.__version__
    except ImportError:
        pass
    return info


def _num(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "**no**"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.4f}"


def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']} "
             f"({m['implementation']}), {m['platform']}; calibration {m.get('calibration_us')} µs "
             "(benchmarks/calibration.py: lower is faster)", "",
             "| benchmark | value | unit | peer | ratio | goal | met |",
             "|---|---:|---|---:|---:|---|---|"]
    for r in report["results"]:
        lines.append(f"| {r['name']} | {_num(r['value'])} | {r['unit']} | {_num(r['peer'])} | "
                     f"{_num(r['ratio'])} | {r['goal'] or ''} | "
                     f"{'' if r['met'] is None else _num(r['met'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="reports/bench.json", help="JSON result file")
    p.add_argument("--quick", action="store_true", help="small inputs (smoke test)")
    args = p.parse_args(argv)

    start = time.perf_counter()
    steps = [(m.__name__.rsplit(".", 1)[-1], lambda m=m: m.run(quick=args.quick))
             for m in (bench_blipmq_decode, bench_rmqs_decode, bench_rmqs_broker, bench_brokers,
                       bench_signalr_decode, bench_vibemq_decode, bench_protocols, bench_report,
                       bench_replay, bench_suite, bench_fuzz)]
    if not args.quick:
        steps.append(("bench_pipeline", lambda: bench_pipeline.run(mb=PIPELINE_MB)))
    report = {"machine": machine(), "quick": args.quick, "results": []}
    # SIGINT or SIGTERM (make passes SIGTERM on): the step in progress is dropped, the results
    # so far are written marked ``interrupted``, and whatever the step started is ended
    cli_signals.install()
    for n, (name, run) in enumerate(steps, 1):
        # a line per step on stderr: a slow run is told from a hung one
        print(f"bench: [{n}/{len(steps)}] {name} ... ({time.perf_counter() - start:.0f} s so far)",
              file=sys.stderr, flush=True)
        step_start = time.perf_counter()
        try:
            results = list(run())
        except KeyboardInterrupt:
            report["interrupted"] = cli_signals.interrupted([s for s, _ in steps[n - 1:]], "steps")
            print(f"bench: {report['interrupted']['signal']}: stopped during {name}", file=sys.stderr, flush=True)
            break
        report["results"] += results
        print(f"bench: [{n}/{len(steps)}] {name}: {len(results)} result(s) in "
              f"{time.perf_counter() - step_start:.0f} s", file=sys.stderr, flush=True)
    report["seconds"] = round(time.perf_counter() - start, 2)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, report)
    print(markdown(report))
    print(f"\n{len(report['results'])} results in {report['seconds']} s -> {out}")
    if "interrupted" in report:
        cli_signals.sweep()
        return cli_signals.exit_status()
    return 0


if __name__ == "__main__":
    sys.exit(main())
