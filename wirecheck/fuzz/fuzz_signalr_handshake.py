"""atheris target: the SignalR handshake read as a client's, a server's or either's (guessed), in
both profiles, and whatever follows it; whole vs chunked reads, messages re-encode
(fuzz/harnesses/signalr.py).

Run: ``python wirecheck/fuzz/fuzz_signalr_handshake.py NEW_DIR wirecheck/fuzz/corpora/signalr-json -dict=wirecheck/fuzz/dictionaries/signalr.dict``
(``python -m wirecheck.fuzz.run_smoke --target signalr_handshake`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.signalr import handshake_one_input


def TestOneInput(data: bytes) -> None:
    handshake_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
