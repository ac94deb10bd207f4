"""Run each atheris target briefly: ``python -m wirecheck.fuzz.run_smoke [--runs N | --time S] [--target NAME]``.

Each target starts from a *copy* of its seed corpus in a temporary directory (libFuzzer writes
new inputs into its first corpus directory, and the repository's corpus must stay as reviewed),
with its dictionary. Crash inputs go to ``fuzz/findings/<target>/`` (git-ignored); move one to
``fuzz/crashers/<corpus>/`` (the target's corpus name) to have tests/fuzz/test_fuzz_corpus.py replay
it forever. Exit status: 0 when every target ran clean.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from wirecheck.fuzz.inprocess import command
from wirecheck.fuzz.targets import FINDINGS, TARGETS, FuzzTarget  # noqa: F401  (TARGETS: re-exported)

FUZZ = Path(__file__).resolve().parent


def run_target(target: FuzzTarget, *, runs: int | None = None, seconds: int | None = None,
               artifacts: Path | None = None, capture: bool = False) -> subprocess.CompletedProcess:
    artifacts = artifacts or FINDINGS / target.name
    artifacts.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"wirecheck-{target.name}-") as tmp:
        corpus = Path(tmp) / "corpus"
        shutil.copytree(FUZZ / "corpora" / target.corpus, corpus)
        return subprocess.run(command(target, corpus, artifacts, runs=runs, seconds=seconds),
                              capture_output=capture, text=True, check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wirecheck.fuzz.run_smoke", description=__doc__.splitlines()[0])
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--runs", type=int, help="inputs per target (default 20000 when no --time)")
    budget.add_argument("--time", type=int, metavar="S", help="seconds per target")
    parser.add_argument("--target", action="append", choices=sorted(TARGETS),
                        help="only this target (repeatable; default all)")
    parser.add_argument("--artifacts", type=Path,
                        help="where crash inputs go (default fuzz/findings/<target>)")
    args = parser.parse_args(argv)
    runs = args.runs if args.runs is not None or args.time is not None else 20000
    failed = []
    for name in args.target or sorted(TARGETS):
        print(f"== {name}", flush=True)
        artifacts = args.artifacts / name if args.artifacts else None
        result = run_target(TARGETS[name], runs=runs, seconds=args.time, artifacts=artifacts)
        if result.returncode != 0:
            failed.append(name)
            print(f"== {name}: exit {result.returncode} (crash inputs in "
                  f"{artifacts or FINDINGS / name})", flush=True)
    print("== all targets clean" if not failed else f"== failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
