"""atheris target: the Micromessage2 frame decoder (MESSAGE/SEND, COMMAND, EXTENSION, ERROR,
LARGE_PAYLOAD, CONTINUED reassembly) in the document's profile, whole vs chunked reads, past the
errors the codec recovers from, and nothing else (fuzz/harnesses/mm2.py ``decoder_one_input``).
Reassembled messages being exactly their frames and frames surviving encode/decode are
fuzz_mm2_roundtrip.py's; the other profile and the parsers inside frames (property values,
filters, texts) fuzz_mm2_nested.py's; all on the same corpus.

Run: ``python wirecheck/fuzz/fuzz_mm2_decoder.py NEW_DIR wirecheck/fuzz/corpora/micromessage2 -dict=wirecheck/fuzz/dictionaries/micromessage2.dict``
(``python -m wirecheck.fuzz.run_smoke --target mm2_decoder`` does it on a copy of the corpus; the seeds
are written by ``python -m wirecheck.fuzz.builders.mm2_corpora``).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import UNDER_TEST, fuzz, instrumented  # noqa: E402

with instrumented(__name__, UNDER_TEST):
    from wirecheck.fuzz.harnesses.mm2 import decoder_one_input
    from wirecheck.fuzz.harnesses.untraced import Untraced
    from wirecheck.reference_impl.core import decoding, errors
    from wirecheck.reference_impl.micromessage2 import codec, syntax

#: The modules the whole reading (the reference) runs, untraced (fuzz/harnesses/untraced.py).
UNTRACED = Untraced(codec, syntax, decoding, errors)


def TestOneInput(data: bytes) -> None:
    decoder_one_input(data, UNTRACED)


if __name__ == "__main__":
    fuzz(TestOneInput)
