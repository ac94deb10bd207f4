"""A receive timeout measures silence, not total time (Connection.recv): a frame whose bytes
keep coming, however slowly, is waited for (bounded by the test's budget); bytes that stop
half-way end in TIMEOUT naming how much of the frame came."""
import socket
import threading
import time

import pytest

from wirecheck.conformance.target.connection import Budget, BudgetSpent, Connection, TargetTimeout, Transcript
from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import Nack
from wirecheck.reference_impl.core import registry

SPEC = registry.get("blipmq")
TIMEOUT = 0.3


def _trickle(sock, data: bytes, every: float, stop_after: int | None = None) -> threading.Thread:
    def run():
        for i in range(len(data) if stop_after is None else stop_after):
            time.sleep(every)
            try:
                sock.sendall(data[i:i + 1])
            except OSError:
                return
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def pair():
    ours, theirs = socket.socketpair()
    yield ours, theirs
    ours.close()
    theirs.close()


def test_a_frame_trickled_slower_than_the_timeout_in_total_still_arrives(pair):
    ours, theirs = pair
    frame = codec.encode(Nack(7, 400, "a slow answer, one byte at a time"))
    conn = Connection(ours, SPEC, TIMEOUT, Transcript("t"), budget=Budget(30))
    started = time.monotonic()
    thread = _trickle(theirs, frame, every=TIMEOUT / 6)
    got = conn.recv(expecting="the NACK")
    thread.join()
    assert isinstance(got, Nack) and got.correlation_id == 7
    assert time.monotonic() - started > 2 * TIMEOUT          # longer than the timeout in all


def test_bytes_that_stop_half_way_are_a_timeout_naming_them(pair):
    ours, theirs = pair
    frame = codec.encode(Nack(7, 400, "half of it"))
    conn = Connection(ours, SPEC, TIMEOUT, Transcript("t"), budget=Budget(30))
    _trickle(theirs, frame, every=0.01, stop_after=10).join()
    with pytest.raises(TargetTimeout, match="no more bytes within 0.3 s with 10 bytes of a frame"):
        conn.recv(expecting="the NACK")


def test_an_endless_trickle_ends_with_the_tests_budget(pair):
    ours, theirs = pair
    huge = codec.encode(Nack(7, 400, "x" * 5000))
    conn = Connection(ours, SPEC, TIMEOUT, Transcript("t"), budget=Budget(1.5))
    _trickle(theirs, huge, every=TIMEOUT / 6)
    started = time.monotonic()
    with pytest.raises(BudgetSpent):
        conn.recv(expecting="the NACK")
    assert time.monotonic() - started < 5


def test_a_websocket_message_trickled_byte_by_byte_still_arrives(pair):
    """Over a WebSocket the frame's bytes arrive below the hub messages: still not silence.
    A ping between them is silence as far as the answer goes (it does not stretch the wait)."""
    from wirecheck.conformance.target.connection import WebSocketConnection
    from wirecheck.reference_impl.signalr import codec as signalr_codec
    from wirecheck.reference_impl.signalr.messages import Completion
    ours, theirs = pair
    record = signalr_codec.encode(Completion.with_result("i1", "x" * 60), "json")
    frame = bytes([0x81, len(record)]) + record            # a server's text frame (unmasked)
    decoder = signalr_codec.Decoder(origin="server", protocol="json", handshake=False)
    conn = WebSocketConnection(ours, registry.get("signalr"), TIMEOUT, Transcript("t"), decoder=decoder,
                               budget=Budget(30))
    thread = _trickle(theirs, frame, every=TIMEOUT / 6)
    got = conn.recv(expecting="the Completion")
    thread.join()
    assert isinstance(got, Completion) and got.result == "x" * 60
    def pings():                                           # whole control frames, no answer
        for _ in range(50):
            time.sleep(TIMEOUT / 6)
            try:
                theirs.sendall(bytes([0x89, 0]))
            except OSError:
                return
    threading.Thread(target=pings, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(TargetTimeout):
        conn.recv(expecting="an answer that never comes")
    assert time.monotonic() - started < 3 * TIMEOUT
