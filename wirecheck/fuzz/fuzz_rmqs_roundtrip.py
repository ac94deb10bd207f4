"""atheris target: every frame the RabbitMQ Stream decoder reads from an input re-encodes to bytes
that decode, whole, to the same frame and nothing else (fuzz/harnesses/base.py ``all_survive``); the
frame-decoder target's corpus.

Run: ``python wirecheck/fuzz/fuzz_rmqs_roundtrip.py NEW_DIR wirecheck/fuzz/corpora/rabbitmq-stream -dict=wirecheck/fuzz/dictionaries/rabbitmq-stream.dict``
(``python -m wirecheck.fuzz.run_smoke --target rmqs_roundtrip`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.base import roundtrip_one_input
    from wirecheck.reference_impl.core import registry

SPEC = registry.get("rabbitmq-stream")


def TestOneInput(data: bytes) -> None:
    roundtrip_one_input(SPEC, data)


if __name__ == "__main__":
    fuzz(TestOneInput)
