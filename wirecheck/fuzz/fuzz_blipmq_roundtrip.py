"""atheris target: every frame the BlipMQ decoder reads from an input re-encodes to bytes
that decode, whole, to the same frame and nothing else (fuzz/harnesses/base.py ``all_survive``); the
frame-decoder target's corpus.

Run: ``python wirecheck/fuzz/fuzz_blipmq_roundtrip.py NEW_DIR wirecheck/fuzz/corpora/blipmq -dict=wirecheck/fuzz/dictionaries/blipmq.dict``
(``python -m wirecheck.fuzz.run_smoke --target blipmq_roundtrip`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.base import roundtrip_one_input
    from wirecheck.reference_impl.core import registry

SPEC = registry.get("blipmq")


def TestOneInput(data: bytes) -> None:
    roundtrip_one_input(SPEC, data)


if __name__ == "__main__":
    fuzz(TestOneInput)
