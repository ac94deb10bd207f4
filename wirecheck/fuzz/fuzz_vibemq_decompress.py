"""atheris target: VibeMQ's bounded gzip and brotli decompression of a first frame's body,
against a decompression fed in pieces and the decoder (fuzz/harnesses/vibemq.py).

Run: ``python wirecheck/fuzz/fuzz_vibemq_decompress.py NEW_DIR wirecheck/fuzz/corpora/vibemq -dict=wirecheck/fuzz/dictionaries/vibemq.dict``
(``python -m wirecheck.fuzz.run_smoke --target vibemq_decompress`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.vibemq import decompress_one_input


def TestOneInput(data: bytes) -> None:
    decompress_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
