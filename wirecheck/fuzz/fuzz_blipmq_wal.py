"""atheris target: BlipMQ's recovery from its write-ahead log (reference_impl/blipmq/wal.py),
over fuzz/harnesses/wal.py: the input is the log file.

Checks: recovery refuses the file (WalCorruption) or succeeds; the log it compacts reads back
and recovers to the same state; appends go on after it.

Run: ``python wirecheck/fuzz/fuzz_blipmq_wal.py NEW_DIR wirecheck/fuzz/corpora/blipmq-wal -dict=wirecheck/fuzz/dictionaries/blipmq-wal.dict``
(``python -m wirecheck.fuzz.run_smoke --target blipmq_wal`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.wal import wal_one_input


def TestOneInput(data: bytes) -> None:
    wal_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
