"""atheris target: a whole SignalR server session (reference_impl/signalr/session.py) in
memory, fed in reads chosen by the input's first bytes, with a fake clock and ticks (timers,
server streams).

Checks: nothing but the session's own handling meets the input (no exception escapes); every
record it sends decodes, whole, with the reference decoder (the handshake response first, in
the protocol the client chose after it); nothing follows a Close; a closed session sends
nothing.

Run: ``python wirecheck/fuzz/fuzz_signalr_session.py NEW_DIR wirecheck/fuzz/corpora/signalr-session -dict=wirecheck/fuzz/dictionaries/signalr.dict``
(``python -m wirecheck.fuzz.run_smoke`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.base import SIZE_BYTES, read_sizes
    from wirecheck.reference_impl.signalr import codec
    from wirecheck.reference_impl.signalr.messages import Close, HandshakeResponse
    from wirecheck.reference_impl.signalr.session import HubConfig, HubSession

#: Server streams may run long under a fuzzed clock: bound what one input can make them send.
MAX_OUTPUT = 2000


def session_one_input(data: bytes, profile: str = "v1") -> None:
    session = HubSession(HubConfig(profile=profile, max_items_per_tick=16))
    step = (data[SIZE_BYTES] if len(data) > SIZE_BYTES else 0) / 50.0
    now, pos, sent = 1000.0, 0, 0
    decoder = None
    for size in read_sizes(data):
        chunk = data[pos:pos + size]
        pos += size
        was_closed = session.closed
        out = session.receive(chunk, now) + session.tick(now + step)
        now += step
        if was_closed:
            assert out == [], f"a closed session answered {out}"
            return
        for i, record in enumerate(out):
            if decoder is None:
                decoder = codec.Decoder(origin="server", protocol=session.protocol, profile=profile)
            messages = decoder.feed(record)
            assert len(messages) == 1 and decoder.buffered == 0, f"session sent {record.hex()}"
            message = messages[0]
            if isinstance(message, HandshakeResponse) and message.error:
                assert session.closed and i == len(out) - 1, "records after a failed handshake"
            if isinstance(message, Close):
                assert session.closed and i == len(out) - 1, "records after the server's Close"
        sent += len(out)
        if sent > MAX_OUTPUT:
            return


def TestOneInput(data: bytes) -> None:
    session_one_input(data, "draft" if data[-1:] == b"D" else "v1")


if __name__ == "__main__":
    fuzz(TestOneInput)
