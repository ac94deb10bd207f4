"""atheris target: every message the VibeMQ decoder reads from an input, whole, in the framing
the input's length picks (fuzz/harnesses/vibemq.py ``framing_of``), survives re-framing: same
fields, same compression, read back by one decoder that holds nothing after each frame
(fuzz/harnesses/vibemq.py ``roundtrip_one_input``); the frame-decoder target's corpus.

Run: ``python wirecheck/fuzz/fuzz_vibemq_roundtrip.py NEW_DIR wirecheck/fuzz/corpora/vibemq -dict=wirecheck/fuzz/dictionaries/vibemq.dict``
(``python -m wirecheck.fuzz.run_smoke --target vibemq_roundtrip`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.vibemq import roundtrip_one_input


def TestOneInput(data: bytes) -> None:
    roundtrip_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
