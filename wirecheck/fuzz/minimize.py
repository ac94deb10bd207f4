"""Shrink an in-process crash input: ``python -m wirecheck.fuzz.minimize TARGET INPUT [--out F] [--time S]``.

The target's ``TestOneInput`` is called plainly (no atheris), so the crash must be an
exception; its signature is the exception type and the innermost frame of the kit's code. A
smaller input counts only when it raises with the same signature. Delta debugging over the
bytes: remove chunks of half the input, then quarters, ... down to single bytes, keeping every
removal that still crashes; bounded by ``--time``. Writes ``<INPUT>.min`` (or ``--out``) and
prints one JSON line: ``{"before": n, "after": m, "signature": ..., "file": ...}``.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from pathlib import Path


def crash_signature(test_one_input, data: bytes) -> str | None:
    try:
        test_one_input(data)
    except Exception as exc:           # the finding itself: any exception is what is looked for
        where = harness = ""
        for frame in traceback.extract_tb(exc.__traceback__):
            if "reference_impl" in frame.filename or "conformance" in frame.filename:
                where = f"{Path(frame.filename).name}:{frame.name}"
            elif "/fuzz/" in frame.filename:          # a harness check that failed
                harness = f"{Path(frame.filename).name}:{frame.name}"
        return f"{type(exc).__name__} at {where or harness or '?'}"
    return None


def minimize(test_one_input, data: bytes, seconds: float) -> tuple[bytes, str | None]:
    wanted = crash_signature(test_one_input, data)
    if wanted is None:
        return data, None
    deadline = time.monotonic() + seconds
    chunk = max(1, len(data) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        pos, shrunk = 0, False
        while pos < len(data) and time.monotonic() < deadline:
            trial = data[:pos] + data[pos + chunk:]
            if trial != data and crash_signature(test_one_input, trial) == wanted:
                data, shrunk = trial, True
            else:
                pos += chunk
        if not shrunk:
            chunk //= 2
    return data, wanted


def main(argv: list[str] | None = None) -> int:
    from wirecheck.fuzz.targets import TARGETS
    p = argparse.ArgumentParser(prog="python -m wirecheck.fuzz.minimize", description=__doc__.splitlines()[0])
    p.add_argument("target", choices=sorted(TARGETS))
    p.add_argument("input", type=Path)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--time", type=float, default=30.0)
    args = p.parse_args(argv)
    test_one_input = importlib.import_module(TARGETS[args.target].module).TestOneInput
    data = args.input.read_bytes()
    small, sig = minimize(test_one_input, data, args.time)
    out = args.out or args.input.with_name(args.input.name + ".min")
    if sig is not None:
        out.write_bytes(small)
    print(json.dumps({"before": len(data), "after": len(small), "signature": sig,
                      "file": str(out) if sig is not None else None}))
    return 0 if sig is not None else 1


if __name__ == "__main__":
    sys.exit(main())
