"""atheris target: VibeMQ's parse_message on one body, against a decoder reading it as a plain,
gzip and brotli frame; messages write back (fuzz/harnesses/vibemq.py).

Run: ``python wirecheck/fuzz/fuzz_vibemq_message.py NEW_DIR wirecheck/fuzz/corpora/vibemq-message -dict=wirecheck/fuzz/dictionaries/vibemq.dict``
(``python -m wirecheck.fuzz.run_smoke --target vibemq_message`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.vibemq import message_one_input


def TestOneInput(data: bytes) -> None:
    message_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
