"""atheris target: the SignalR MessagePack hub protocol's messages alone (what follows a client's
handshake in a seed), in both profiles (v1, draft), as sent by a client and by a server; whole vs
chunked reads, messages re-encode (fuzz/harnesses/signalr.py). The checks fuzz_signalr_msgpack.py
leaves out to stay fast; same corpus.

Run: ``python wirecheck/fuzz/fuzz_signalr_msgpack_body.py NEW_DIR wirecheck/fuzz/corpora/signalr-msgpack -dict=wirecheck/fuzz/dictionaries/signalr.dict``
(``python -m wirecheck.fuzz.run_smoke --target signalr_msgpack_body`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.signalr import body_one_input
    from wirecheck.reference_impl.signalr.constants import MESSAGEPACK


def TestOneInput(data: bytes) -> None:
    body_one_input(data, MESSAGEPACK)


if __name__ == "__main__":
    fuzz(TestOneInput)
