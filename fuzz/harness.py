"""Shared bodies of the atheris targets (STYLE.md point 8): each target is a few lines over these.

Both helpers take the fuzzer's bytes as they come and use their first bytes as *parameters*
(read sizes, clock steps) while still feeding all of them, so a seed that is a real BlipMQ
stream (fuzz/corpora/blipmq/) stays a real stream. They raise AssertionError when two ways of
doing the same thing disagree; :class:`FrameError` is the only exception a decoder may raise and
is turned into a result; anything else propagates, and the fuzzer reports it as a crash.
"""
from __future__ import annotations

from conformance.strategies.invariants import assert_same, decode_chunked, decode_whole
from reference_impl.blipmq import codec
from reference_impl.blipmq.codec import FrameType, NackCode
from reference_impl.blipmq.session import BlipSession
from reference_impl.blipmq.state import BrokerState
from reference_impl.core.errors import FrameError

#: How many leading bytes choose the read sizes; a read is 1..MAX_READ bytes.
SIZE_BYTES = 4
MAX_READ = 64
#: Frame types a BlipMQ server may send (blipmq-protocol.md "Frame Types", Direction column).
SERVER_TYPES = {FrameType.PUBLISH, FrameType.ACK, FrameType.NACK, FrameType.PONG}


def read_sizes(data: bytes, total: int | None = None) -> list[int]:
    """Read sizes covering ``total`` (default ``len(data)``) bytes, cycling over sizes taken
    from ``data``'s first bytes; no leading bytes means 1-byte reads."""
    total = len(data) if total is None else total
    pattern = [1 + b % MAX_READ for b in data[:SIZE_BYTES]] or [1]
    sizes, pos, i = [], 0, 0
    while pos < total:
        sizes.append(pattern[i % len(pattern)])
        pos += sizes[-1]
        i += 1
    return sizes


def decoder_one_input(spec, data: bytes) -> None:
    """Decode ``data`` whole and in reads chosen by its first bytes; both must agree. Every
    decoded frame must re-encode to bytes that decode to the same frame."""
    whole = decode_whole(data, spec)
    assert_same(whole, decode_chunked(data, read_sizes(data), spec), "chunked")
    for frame in whole.frames:
        spec.frame_to_dict(frame)
        again = decode_whole(spec.encode(frame), spec)
        assert again == ([frame], None, None), f"{frame} does not survive encode/decode: {again}"


def session_one_input(data: bytes) -> None:
    """Feed ``data`` to a BlipSession (fresh BrokerState) in a few reads chosen by its first
    bytes, the clock advancing by an amount its 5th byte chooses after each read (so QoS1
    redelivery timers fire). Every answer must be one whole frame the reference decoder
    accepts, of a server-to-client type, never more answers than requests, and nothing at
    all once the session closed."""
    session = BlipSession(BrokerState())
    envelopes = codec.Decoder(parse=False)      # counts whole requests, as the session sees them
    step = (data[SIZE_BYTES] if len(data) > SIZE_BYTES else 0) / 100.0
    now, requests, answers = 1000.0, 0, 0
    for chunk in _reads(data):
        was_closed = session.closed
        out = session.receive(chunk, now)
        if was_closed:
            assert out == [], f"a closed session answered {out}"
        requests += _count_envelopes(envelopes, chunk)
        answers += len(out)
        assert answers <= requests, f"{answers} answers to {requests} requests"
        for wire in out:
            _check_answer(wire)
        now += step


def _reads(data: bytes):
    pos = 0
    for size in read_sizes(data):
        yield data[pos:pos + size]
        pos += size


def _count_envelopes(decoder, chunk: bytes) -> int:
    try:
        return len(decoder.feed(chunk))
    except FrameError as exc:
        return len(exc.frames)


def _check_answer(wire: bytes) -> None:
    result = decode_whole(wire, "blipmq")
    assert result.ok and len(result.frames) == 1, f"session sent {wire.hex()}: {result}"
    frame = result.frames[0]
    assert frame.type in SERVER_TYPES, f"session sent a {frame.type.name}"
    if frame.type is FrameType.NACK:
        assert frame.code in {int(c) for c in NackCode}, f"NACK code {frame.code} not in the table"
