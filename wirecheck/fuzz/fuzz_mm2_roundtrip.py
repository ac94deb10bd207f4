"""atheris target: the Micromessage2 frames an input decodes to, whole, after the handshake in the
document's profile (past the errors the codec recovers from): every message the decoder yields is
its frame's payload after those of the CONTINUED frames right before it, with that frame's
sequence number; every frame re-encodes to bytes that decode, whole, to the same frame, the
frames re-encoded back to back to the same frames, each ending where its bytes end
(fuzz/harnesses/mm2.py ``roundtrip_one_input``); the frame-decoder target's corpus.

Run: ``python wirecheck/fuzz/fuzz_mm2_roundtrip.py NEW_DIR wirecheck/fuzz/corpora/micromessage2 -dict=wirecheck/fuzz/dictionaries/micromessage2.dict``
(``python -m wirecheck.fuzz.run_smoke --target mm2_roundtrip`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.mm2 import roundtrip_one_input


def TestOneInput(data: bytes) -> None:
    roundtrip_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
