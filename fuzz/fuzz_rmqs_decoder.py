"""atheris target: the RabbitMQ Stream frame decoder, whole vs chunked reads (fuzz/harness.py).
Re-encoding the frames is fuzz_rmqs_roundtrip.py's, on the same corpus.

Run: ``python fuzz/fuzz_rmqs_decoder.py NEW_DIR fuzz/corpora/rabbitmq-stream -dict=fuzz/dictionaries/rabbitmq-stream.dict``
(``python -m fuzz.run_smoke`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.target_setup import UNDER_TEST, fuzz, instrumented  # noqa: E402

with instrumented(__name__, UNDER_TEST):
    from fuzz.harness import decoder_one_input, decoder_untraced
    from reference_impl.core import registry

SPEC = registry.get("rabbitmq-stream")
UNTRACED = decoder_untraced(SPEC)


def TestOneInput(data: bytes) -> None:
    decoder_one_input(SPEC, data, UNTRACED)


if __name__ == "__main__":
    fuzz(TestOneInput)
