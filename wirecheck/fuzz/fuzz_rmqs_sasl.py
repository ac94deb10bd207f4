"""atheris target: the SASL responses a RabbitMQ Stream broker reads from SaslAuthenticate,
PLAIN and AMQPLAIN (reference_impl/rabbitmq_stream/sasl.py), over fuzz/harnesses/nested.py.

Checks: malformed data is None (answered with SASL error), never an exception; what parses is
two strings.

Run: ``python wirecheck/fuzz/fuzz_rmqs_sasl.py NEW_DIR wirecheck/fuzz/corpora/rabbitmq-stream-sasl -dict=wirecheck/fuzz/dictionaries/rabbitmq-stream.dict``
(``python -m wirecheck.fuzz.run_smoke --target rmqs_sasl`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.nested import rmqs_sasl_one_input


def TestOneInput(data: bytes) -> None:
    rmqs_sasl_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
