"""atheris target: the suite's WebSocket frame reader (conformance/target/websocket.py ``FrameReader``),
which reads whatever a SignalR target sends after its ``101``, over fuzz/harnesses/transport.py.

Checks: only WebSocketError escapes; whole and chunked reads give the same frames and error;
the frames read, re-encoded, read back the same.

Run: ``python wirecheck/fuzz/fuzz_websocket_reader.py NEW_DIR wirecheck/fuzz/corpora/signalr-http -dict=wirecheck/fuzz/dictionaries/signalr-http.dict``
(``python -m wirecheck.fuzz.run_smoke --target websocket_reader`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.transport import websocket_reader_one_input


def TestOneInput(data: bytes) -> None:
    websocket_reader_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
