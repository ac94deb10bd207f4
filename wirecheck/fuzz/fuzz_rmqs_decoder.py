"""atheris target: the RabbitMQ Stream frame decoder, whole vs chunked reads (fuzz/harnesses/base.py).
Re-encoding the frames is fuzz_rmqs_roundtrip.py's, on the same corpus.

Run: ``python wirecheck/fuzz/fuzz_rmqs_decoder.py NEW_DIR wirecheck/fuzz/corpora/rabbitmq-stream -dict=wirecheck/fuzz/dictionaries/rabbitmq-stream.dict``
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
    from wirecheck.reference_impl.rabbitmq_stream import chunk, requests, responses, wire

SPEC = registry.get("rabbitmq-stream")
#: The modules the whole reading (the reference) runs, untraced (fuzz/harnesses/untraced.py): the
#: decoder's (codec.py, core/decoding.py), the frame classes' and field types' it calls, and
#: the Osiris chunk reader's (a Deliver's chunk).
UNTRACED = decoder_untraced(SPEC, wire, requests, responses, chunk)


def TestOneInput(data: bytes) -> None:
    decoder_one_input(SPEC, data, UNTRACED)


if __name__ == "__main__":
    fuzz(TestOneInput)
