"""Run every hardening soak: ``python -m soak.run [--quick] [--only NAME ...] [--out FILE]``.

Each module (``soak.hostile_targets``, ``soak.hostile_clients``, ``soak.durability``,
``soak.load``, ``soak.transport``) runs in turn; its result goes to ``reports/soak/<name>.json`` and all of them,
with the machine, to ``reports/soak.json``. The exit code is non-zero when any module's ``ok``
is false or a module raised (its traceback is kept in the summary, and the others still run:
one broken run must not hide the others' results). ``make soak`` runs the full versions;
``make test`` runs the quick ones through tests/soak/test_hardening_*.py.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:          # runnable as a script from the repository root
    sys.path.insert(0, str(ROOT))

from benchmarks.run import machine  # noqa: E402
from soak.common import write_result  # noqa: E402
from wirecheck.conformance import cli_signals  # noqa: E402

#: In the order they run: the kit first (it needs no broker), then the brokers.
MODULES = ("hostile_targets", "hostile_clients", "durability", "load", "transport", "culprits")


def run_one(name: str, quick: bool, outdir: str) -> dict:
    started = time.monotonic()
    try:
        result = importlib.import_module(f"soak.{name}").run(quick=quick)
    except Exception:                      # noqa: BLE001 - reported, and the next module runs
        result = {"ok": False, "error": traceback.format_exc()}
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    write_result(os.path.join(outdir, f"{name}.json"), result)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m soak.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the small versions (as in make test)")
    parser.add_argument("--only", action="append", choices=MODULES, help="run only these (repeatable)")
    parser.add_argument("--out", default="reports/soak.json")
    args = parser.parse_args(argv)
    outdir = os.path.join(os.path.dirname(os.path.abspath(args.out)), "soak")
    summary = {"machine": machine(), "quick": args.quick, "runs": {}}
    chosen = args.only or MODULES
    # SIGINT or SIGTERM (a cancelled job, Ctrl-C): the module under way is stopped (its own
    # cleanup, then whatever it left is ended), the results so far are written marked
    # ``interrupted`` with the modules not run, exit 128 + the signal
    cli_signals.install()
    for i, name in enumerate(chosen, 1):
        print(f"soak: [{i}/{len(chosen)}] {name} ...", flush=True)
        try:
            result = run_one(name, args.quick, outdir)
        except KeyboardInterrupt:
            summary["interrupted"] = cli_signals.interrupted(list(chosen[i - 1:]), "modules")
            print(f"soak: {summary['interrupted']['signal']}: stopped during {name}", file=sys.stderr, flush=True)
            break
        summary["runs"][name] = result
        print(f"soak: {name}: {'ok' if result.get('ok') else 'FAILED'} in {result['elapsed_s']} s",
              flush=True)
    summary["ok"] = all(r.get("ok") for r in summary["runs"].values()) and "interrupted" not in summary
    write_result(args.out, summary)
    if "interrupted" in summary:
        cli_signals.sweep()
        print(f"soak: stopped; the results so far in {args.out}", file=sys.stderr, flush=True)
        return cli_signals.exit_status()
    print(f"soak: {'all goals met' if summary['ok'] else 'FAILED'}; results in {args.out} and {outdir}/")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
