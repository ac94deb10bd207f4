"""atheris target: a whole BlipMQ server session in memory, fed in chunks (fuzz/harnesses/base.py).

Run: ``python wirecheck/fuzz/fuzz_blipmq_session.py NEW_DIR wirecheck/fuzz/corpora/blipmq -dict=wirecheck/fuzz/dictionaries/blipmq.dict``
(``python -m wirecheck.fuzz.run_smoke`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.base import session_one_input


def TestOneInput(data: bytes) -> None:
    session_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
