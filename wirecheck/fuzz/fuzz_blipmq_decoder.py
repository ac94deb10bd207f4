"""atheris target: the BlipMQ frame decoder, whole vs chunked reads (fuzz/harnesses/base.py). Re-encoding
the frames is fuzz_blipmq_roundtrip.py's, on the same corpus.

Run: ``python wirecheck/fuzz/fuzz_blipmq_decoder.py NEW_DIR wirecheck/fuzz/corpora/blipmq -dict=wirecheck/fuzz/dictionaries/blipmq.dict``
(``python -m wirecheck.fuzz.run_smoke`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import UNDER_TEST, fuzz, instrumented  # noqa: E402

with instrumented(__name__, UNDER_TEST):
    from wirecheck.fuzz.harnesses.base import decoder_one_input, decoder_untraced
    from wirecheck.reference_impl.core import registry

SPEC = registry.get("blipmq")
UNTRACED = decoder_untraced(SPEC)


def TestOneInput(data: bytes) -> None:
    decoder_one_input(SPEC, data, UNTRACED)


if __name__ == "__main__":
    fuzz(TestOneInput)
