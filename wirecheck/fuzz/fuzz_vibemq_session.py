"""atheris target: a whole VibeMQ server session (reference_impl/vibemq/session.py) in memory
over its own broker state, fed in reads chosen by the input's first bytes (fuzz/harnesses/base.py
``read_sizes``), the fake clock advancing by a step its 10th byte chooses (in a seed, the
first character of the Connect's id: a byte the fuzzer can change without breaking the
framing, unlike the 5th, the flags byte), with a tick after every read (ack timeouts, retries, dead letters, TTL run on it). A last byte ``R`` picks the
real server's profile (``vibemq-1.8``), ``0`` protocol 1.0 framing (``vibemq-1.0``); else the
document's.

Checks: nothing but the session's own handling meets the input (no exception escapes
``receive``/``tick``); every frame it sends is one whole frame the reference decoder reads in
that profile, of a server-to-client type, an Error with its errorCode; before ConnectAck only
Pong and Error; a closed session sends nothing.

Run: ``python wirecheck/fuzz/fuzz_vibemq_session.py NEW_DIR wirecheck/fuzz/corpora/vibemq-session -dict=wirecheck/fuzz/dictionaries/vibemq.dict``
(``python -m wirecheck.fuzz.run_smoke --target vibemq_session`` does it on a copy of the corpus; the
seeds are written by ``python -m wirecheck.fuzz.builders.vibemq_session_corpus``).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.base import read_sizes
    from wirecheck.reference_impl.vibemq import codec
    from wirecheck.reference_impl.vibemq.constants import CommandType as T
    from wirecheck.reference_impl.vibemq.session import SessionConfig, VibeSession
    from wirecheck.reference_impl.vibemq.state import BrokerState, StateConfig

#: What a server sends ("Command Types", the Direction of each).
SERVER_TYPES = frozenset({T.CONNECT_ACK, T.PONG, T.PUBLISH_ACK, T.SUBSCRIBE_ACK, T.UNSUBSCRIBE_ACK,
                          T.DELIVER, T.CREATE_QUEUE, T.DELETE_QUEUE, T.QUEUE_INFO, T.LIST_QUEUES,
                          T.ERROR})
#: A compressed client frame may inflate to this much here (the default, 64 MiB, is slow).
LIMITS = codec.VibeLimits(max_decompressed=64 * 1024)
#: Frames the session sends are read without a practical bound: a Deliver may be longer than
#: the Publish it came from (the document's headers are added).
OUTPUT_LIMITS = codec.VibeLimits(max_frame_size=1 << 31, max_decompressed=1 << 31)
MARKERS = {b"R": "vibemq-1.8", b"0": "vibemq-1.0"}
STEP_BYTE = 9


def profile_of(data: bytes) -> str:
    return MARKERS.get(data[-1:], "document")


def session_one_input(data: bytes) -> None:
    profile = profile_of(data)
    state = BrokerState(StateConfig(ack_timeout=1.0, retry_base_delay=0.5, retry_max_delay=2.0,
                                    max_queues=64, max_inflight=64))
    session = VibeSession(state, SessionConfig(profile=profile, limits=LIMITS))
    decoder = codec.Decoder(OUTPUT_LIMITS, profile=profile, origin="server")
    step = (data[STEP_BYTE] if len(data) > STEP_BYTE else 0) / 100.0
    now, pos, ready = 1000.0, 0, False
    for size in read_sizes(data):
        chunk = data[pos:pos + size]
        pos += size
        was_closed = session.closed
        out = session.receive(chunk, now)
        now += step
        out += session.tick(now)
        if was_closed:
            assert out == [], f"a closed session answered {out}"
            return
        for record in out:
            messages = decoder.feed(record)
            assert len(messages) == 1 and decoder.buffered == 0, f"session sent {record.hex()}"
            message = messages[0]
            assert message.type in SERVER_TYPES, f"session sent a {message.type_name}"
            assert message.type != T.ERROR or message.error_code, f"Error without a code: {message}"
            assert ready or message.type in (T.CONNECT_ACK, T.PONG, T.ERROR), \
                f"{message.type_name} before ConnectAck"
            ready = ready or message.type == T.CONNECT_ACK
    if session.closed:
        assert session.tick(now + 3600.0) == [], "a closed session's timers sent frames"


def TestOneInput(data: bytes) -> None:
    session_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
