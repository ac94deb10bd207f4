"""atheris target: every message the SignalR registry's default decoder reads from a client's
stream (handshake, then JSON records), whole, re-encodes to bytes that decode to a message
encoding to the same bytes, alone and after the messages before it
(fuzz/harnesses/signalr.py ``stream_roundtrip_one_input``); the frame-decoder target's corpus.

Run: ``python wirecheck/fuzz/fuzz_signalr_json_roundtrip.py NEW_DIR wirecheck/fuzz/corpora/signalr-json -dict=wirecheck/fuzz/dictionaries/signalr.dict``
(``python -m wirecheck.fuzz.run_smoke --target signalr_json_roundtrip`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.signalr import stream_roundtrip_one_input
    from wirecheck.reference_impl.signalr.constants import JSON


def TestOneInput(data: bytes) -> None:
    stream_roundtrip_one_input(data, JSON)


if __name__ == "__main__":
    fuzz(TestOneInput)
