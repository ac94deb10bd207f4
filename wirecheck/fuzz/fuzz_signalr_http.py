"""atheris target: SignalR's capture decoder, HTTP/1.1 + WebSocket around the hub messages, or
the raw transport (reference_impl/signalr/http_transport.py), over fuzz/harnesses/transport.py.

Checks: only FrameError escapes; whole and chunked decoding give the same frames, hub messages
and errors (decoding goes on after a bad hub message) as client, server or either, in both hub
profiles; a direction given or guessed decodes alike; with small limits, what the decoder holds
between reads stays under them; every item has a JSON view.

Run: ``python wirecheck/fuzz/fuzz_signalr_http.py NEW_DIR wirecheck/fuzz/corpora/signalr-http -dict=wirecheck/fuzz/dictionaries/signalr-http.dict``
(``python -m wirecheck.fuzz.run_smoke --target signalr_http`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.transport import http_one_input


def TestOneInput(data: bytes) -> None:
    http_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
