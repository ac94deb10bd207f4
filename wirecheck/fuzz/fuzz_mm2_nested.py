"""atheris target: the Micromessage2 frames in both profiles and the parsers inside them: whole
vs chunked reads past the errors the codec recovers from; the lenient profile reads what the
strict one reads; its CONTINUED messages are reassembled from exactly their frames and its frames
survive encode/decode; property values, filters and (through ERROR texts) every text parser hold
(fuzz/harnesses/mm2.py). Checks fuzz_mm2_decoder.py and fuzz_mm2_roundtrip.py leave out to stay
fast; same corpus.

Run: ``python wirecheck/fuzz/fuzz_mm2_nested.py NEW_DIR wirecheck/fuzz/corpora/micromessage2 -dict=wirecheck/fuzz/dictionaries/micromessage2.dict``
(``python -m wirecheck.fuzz.run_smoke --target mm2_nested`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.mm2 import profiles_one_input


def TestOneInput(data: bytes) -> None:
    profiles_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
