"""atheris target: the VibeMQ frame decoder in both framings (one per input, by the input's
length: fuzz/harnesses/vibemq.py ``framing_of``), whole vs chunked reads agree (fuzz/harnesses/base.py
``decoder_one_input``). The re-framing of the decoded messages is fuzz_vibemq_roundtrip.py's,
on the same corpus.

Run: ``python wirecheck/fuzz/fuzz_vibemq_decoder.py NEW_DIR wirecheck/fuzz/corpora/vibemq -dict=wirecheck/fuzz/dictionaries/vibemq.dict``
(``python -m wirecheck.fuzz.run_smoke --target vibemq_decoder`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import UNDER_TEST, fuzz, instrumented  # noqa: E402

with instrumented(__name__, UNDER_TEST):
    from wirecheck.fuzz.harnesses.base import decoder_untraced
    from wirecheck.fuzz.harnesses.vibemq import SPECS, decoder_one_input
    from wirecheck.reference_impl.core import framebuffer, strict_json
    from wirecheck.reference_impl.vibemq import compression

#: The modules the whole reading (the reference) runs, untraced (fuzz/harnesses/untraced.py).
UNTRACED = decoder_untraced(next(iter(SPECS.values())), compression, framebuffer, strict_json)


def TestOneInput(data: bytes) -> None:
    decoder_one_input(data, UNTRACED)


if __name__ == "__main__":
    fuzz(TestOneInput)
