"""Shared bodies of the atheris targets (STYLE.md point 8): each target is a few lines over these.

The decoder and session helpers take the fuzzer's bytes as they come and use their first bytes
as *parameters* (read sizes, clock steps) while still feeding all of them, so a seed that is a
real stream (fuzz/corpora/blipmq/, fuzz/corpora/rabbitmq-stream/) stays a real stream; the
Osiris chunk helper takes one chunk as it is (fuzz/corpora/rabbitmq-stream-chunk/). They raise
AssertionError when two ways of doing the same thing disagree; :class:`FrameError` is the only
exception a decoder may raise and is turned into a result; anything else propagates, and the
fuzzer reports it as a crash.
"""
from __future__ import annotations

import sys
import zlib
from contextlib import nullcontext
from itertools import accumulate, chain

from wirecheck.conformance.strategies.invariants import DecodeResult, assert_same, decode_whole
from wirecheck.conformance.strategies.rabbitmq_stream import SERVER_CLASSES as RMQS_SERVER_CLASSES
from wirecheck.fuzz.harnesses.untraced import Untraced
from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import FrameType, NackCode
from wirecheck.reference_impl.blipmq.session import BlipSession
from wirecheck.reference_impl.blipmq.state import BrokerState
from wirecheck.reference_impl.core import errors
from wirecheck.reference_impl.core.errors import Category, FrameError
from wirecheck.reference_impl.rabbitmq_stream import codec as rmqs
from wirecheck.reference_impl.rabbitmq_stream.chunk import (ChunkType, encode_tracking, parse_chunk,
                                                  parse_tracking)
from wirecheck.reference_impl.rabbitmq_stream.session import SessionConfig, StreamSession
from wirecheck.reference_impl.rabbitmq_stream.state import BrokerState as StreamBrokerState
from wirecheck.reference_impl.rabbitmq_stream.store import StreamStore

#: How many leading bytes choose the read sizes; a read is 1..MAX_READ bytes.
SIZE_BYTES = 4
MAX_READ = 64
#: Frame types a BlipMQ server may send (blipmq-protocol.md "Frame Types", Direction column).
SERVER_TYPES = {FrameType.PUBLISH, FrameType.ACK, FrameType.NACK, FrameType.PONG}


#: Read size of a leading byte, for the decoder checks (:func:`split_sizes`): ``b`` gives
#: ``1 + (37 * b + 24) % 64``. 37 is odd, so this is a permutation of the 64 residues: every
#: size 1..64 stays one byte value away (a 1-byte read is 0x08, 0x48, 0x88 or 0xc8). But the
#: bytes real streams start with (0x00, the high bytes of a length prefix; small lengths)
#: give reads of 25 bytes, about a frame, rather than 1: a stream cut into 1-byte reads cost
#: about 60 ``feed`` calls per input, most of a decoder target's time, and byte-by-byte
#: feeding is the unit tests' (tests/reference_impl/<protocol>/test_*_codec.py), every input,
#: every run. (An offset of 11, 12-byte reads, still cut a BlipMQ input in ~13 reads: 17% of
#: that target's time.)
SPREAD = bytes((37 * b + 24) % 64 for b in range(256))
#: The plain mapping, ``1 + b % 64``, which the session and transport targets keep (their
#: kept crash inputs were found with it and must still cut their streams the same way).
PLAIN = bytes(b % 64 for b in range(256))
#: A context that changes nothing: the reference reading of a check run outside a target.
NOTHING = nullcontext()


def read_sizes(data: bytes, total: int | None = None, table: bytes = PLAIN) -> list[int]:
    """Read sizes covering ``total`` (default ``len(data)``) bytes, cycling over sizes taken
    from ``data``'s first bytes (``1 + table[b]``); no leading bytes means 1-byte reads."""
    total = len(data) if total is None else total
    pattern = [1 + table[b] for b in data[:SIZE_BYTES]] or [1]
    # Whole cycles of the pattern at once, then the last partial one: a loop per read would
    # cost the fuzzers (atheris traces every pass) more than the decoding of a 1-byte read.
    cycle = sum(pattern)
    sizes = pattern * (total // cycle)
    pos = cycle * (total // cycle)
    for size in pattern:
        if pos >= total:
            break
        sizes.append(size)
        pos += size
    return sizes


def split_sizes(data: bytes, total: int | None = None) -> list[int]:
    """The read sizes of the decoder checks (whole vs chunked): :func:`read_sizes` through
    :data:`SPREAD`."""
    return read_sizes(data, total, SPREAD)


def reads(data: bytes):
    """The reads of ``data`` (:func:`split_sizes`), as an iterator made in C: no Python loop per
    read (atheris traces every pass of one, and reads are mostly a byte or two)."""
    ends = list(accumulate(split_sizes(data)))
    return map(data.__getitem__, map(slice, chain((0,), ends), ends))


def decode_in_reads(data: bytes, spec) -> DecodeResult:
    """``decode_chunked(data, split_sizes(data), spec)`` (conformance/strategies/invariants.py):
    the decoder's ``feed`` called once per read, in order, stopping at the first error. The
    calls are made by ``list.extend`` over ``map`` (C), which keeps the batches of the reads
    before an error: the harness adds no Python code per read, the decoder does all of it."""
    decoder = spec.make_decoder()
    batches: list = []
    try:
        batches.extend(map(decoder.feed, reads(data)))
        decoder.eof()
    except FrameError as exc:
        return DecodeResult(list(chain.from_iterable(batches)) + exc.frames, exc.category, exc.offset)
    return DecodeResult(list(chain.from_iterable(batches)), None, None)


def all_survive(frames: list, spec) -> None:
    """Every frame re-encodes to bytes that decode, whole, to the same frame and nothing else.
    One decoder for all of them, fed each frame's bytes in turn: after a whole frame it holds
    nothing and no error (checked), the state a fresh one starts in, so this is the check of a
    fresh decoder per frame at a fraction of its cost (the frames carry no stream offsets)."""
    decoder = spec.make_decoder()
    for frame in frames:
        spec.frame_to_dict(frame)
        wire = spec.encode(frame)
        try:
            again = decoder.feed(wire)
        except FrameError:
            again = None
        if again != [frame] or decoder.buffered:
            again = decode_whole(wire, spec)         # the fresh decoder's reading, for the message
            assert again == ([frame], None, None), f"{frame} does not survive encode/decode: {again}"
            raise AssertionError(f"{frame} survives encode/decode alone, not after the frames before it")


def decoder_untraced(spec, *more) -> Untraced:
    """:class:`wirecheck.fuzz.harnesses.untraced.Untraced` over the modules of ``spec``'s decoder class and its bases,
    the errors' (core/errors.py) and ``spec.make_decoder`` (and ``more``): what a frame-decoder
    target runs its whole reading on."""
    classes = type(spec.make_decoder()).__mro__
    modules = dict.fromkeys(sys.modules[c.__module__] for c in classes if c.__module__ != "builtins")
    return Untraced(*modules, errors, spec.make_decoder, *more)


def decoder_one_input(spec, data: bytes, untraced=NOTHING) -> None:
    """Decode ``data`` whole and in reads chosen by its first bytes; both must agree (the
    frame-decoder targets: the re-encoding is :func:`roundtrip_one_input`'s, on the same
    corpus, so each target does one thing at its full speed). The whole reading is the
    reference and runs in ``untraced`` (:func:`decoder_untraced`: untraced under atheris)."""
    with untraced:
        whole = decode_whole(data, spec)
    assert_same(whole, decode_in_reads(data, spec), "chunked")


def roundtrip_one_input(spec, data: bytes) -> None:
    """Every frame ``data`` decodes to, whole, re-encodes to bytes that decode to the same
    frame (:func:`all_survive`)."""
    all_survive(decode_whole(data, spec).frames, spec)


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


# --- RabbitMQ Stream ----------------------------------------------------------------------------

#: Bound on a sub-batch's inflated size while fuzzing (the codec's default is 64 MiB): a seed
#: whose gzip body inflates further is refused quickly (BAD_VALUE) instead of slowly.
RMQS_MAX_UNCOMPRESSED = 1 << 20


def rmqs_chunk_one_input(data: bytes) -> None:
    """``data`` as one Osiris chunk (reference_impl/rabbitmq_stream/chunk.py). Parsed without
    the CRC check (so mutated entries are reached) and with it: they agree but for the CRC; a
    chunk that parses re-encodes to one that parses equal; a user chunk's entries re-encode to
    its data and expand to ``num_records`` records (gzip bounded), or a FrameError; a tracking
    chunk's records re-encode to its data, or a FrameError."""
    try:
        chunk = parse_chunk(data, check_crc=False)
    except FrameError:
        try:
            parse_chunk(data)
        except FrameError:
            return
        raise AssertionError("the CRC-checked parse accepted a chunk the unchecked one refused") from None
    crc_ok = zlib.crc32(chunk.data) == chunk.crc
    try:
        checked = parse_chunk(data)
    except FrameError as exc:
        assert not crc_ok and exc.category is Category.BAD_VALUE, f"with the CRC check: {exc!r}"
    else:
        assert crc_ok and checked == chunk, "a chunk with a wrong CRC was accepted"
    assert parse_chunk(chunk.encode(), check_crc=False) == chunk, "re-encoded chunk differs"
    if chunk.chunk_type != ChunkType.USER:
        try:
            records = parse_tracking(chunk.data)
        except FrameError:
            return
        assert encode_tracking(records) == chunk.data, "tracking records re-encode differently"
        return
    entries = chunk.entries()
    assert b"".join(e.encode() for e in entries) == chunk.data, "entries re-encode differently"
    try:
        messages = chunk.messages(RMQS_MAX_UNCOMPRESSED)
    except FrameError:
        return
    assert len(messages) == chunk.num_records, f"{len(messages)} records, header says {chunk.num_records}"


def rmqs_session_one_input(data: bytes) -> None:
    """Feed ``data`` to a RabbitMQ Stream session (fresh in-memory store) in reads chosen by
    its first bytes, a fake clock advancing by an amount its 5th byte chooses after each read,
    with a ``tick`` then (heartbeats and the handshake timeout fire). Every item the session
    sends must be one whole frame the reference decoder accepts (a Deliver's chunk with its
    CRC, entries and record count; what a sub-batch holds is the publisher's and is passed on
    unread, as the real server does), of a class a server sends; a Close ends the output;
    nothing at all once the session closed."""
    clock = [1_700_000_000.0]
    session = StreamSession(StreamBrokerState(StreamStore(None)), SessionConfig(),
                            clock=lambda: clock[0])
    step = (data[SIZE_BYTES] if len(data) > SIZE_BYTES else 0) / 100.0
    for chunk in _reads(data):
        was_closed = session.closed
        out = session.receive(chunk, clock[0])
        clock[0] += step
        out += session.tick(clock[0])
        if was_closed:
            assert out == [], f"a closed session answered {out}"
            return                 # one read after the close shows it; more would show nothing new
        for i, wire in enumerate(out):
            # A Deliver may exceed the tuned frame_max: decode without a size limit.
            decoder = rmqs.Decoder(rmqs.StreamConfig(max_frame_size=0), origin="server")
            frames = decoder.feed(wire)
            assert len(frames) == 1 and decoder.buffered == 0, f"session sent {wire.hex()}"
            frame = frames[0]
            assert type(frame) in RMQS_SERVER_CLASSES, f"session sent a {type(frame).__name__}"
            if isinstance(frame, rmqs.Close):
                assert i == len(out) - 1 and session.closed, "frames after the server's Close"
