"""atheris target: a whole RabbitMQ Stream server session in memory, fed in chunks, with a fake
clock (fuzz/harnesses/base.py).

Run: ``python wirecheck/fuzz/fuzz_rmqs_session.py NEW_DIR wirecheck/fuzz/corpora/rabbitmq-stream -dict=wirecheck/fuzz/dictionaries/rabbitmq-stream.dict``
(``python -m wirecheck.fuzz.run_smoke`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.base import rmqs_session_one_input


def TestOneInput(data: bytes) -> None:
    rmqs_session_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
