"""Shared bodies of the Micromessage2 atheris targets (STYLE.md point 8), over fuzz/harnesses/base.py's
read sizes.

A stream seed (fuzz/corpora/micromessage2/) is frames as they follow the handshake; a handshake
seed (fuzz/corpora/micromessage2-handshake/) is a client's or a server's side from its first
byte; a session seed (fuzz/corpora/micromessage2-session/) is a client's side, handshakes first,
then frames, with an optional profile marker (:func:`profile_of`).

Decoding here goes on past an error the codec recovers from (codec.py: a frame whose boundaries
are sound but whose fields are not "raises once, after the frame is consumed: the stream goes
on") and stops at one it does not (raised again by the next call), so whole and chunked reads
are compared over the whole stream, not only up to the first error as
conformance/strategies/invariants.py does. :class:`FrameError` is the only exception a decoder
may raise (:class:`.negotiation.Refusal` the only one the negotiation may, and
:class:`.filters.FilterError` the only one a filter may); anything else propagates, and the
fuzzer reports it as a crash. Each helper raises AssertionError when two ways of doing the same
thing disagree.
"""
from __future__ import annotations

import struct
from collections import deque
from itertools import accumulate, chain, compress, repeat

from wirecheck.fuzz.harnesses.base import NOTHING, SIZE_BYTES, read_sizes, split_sizes
from wirecheck.reference_impl.core.errors import Category, FrameError
from wirecheck.reference_impl.micromessage2 import codec, filters, syntax
from wirecheck.reference_impl.micromessage2.codec import Command, Error, ExtensionFrame, Handshake, Message
from wirecheck.reference_impl.micromessage2.constants import (ACK, BATCH_ACK, DOTNET, MAJOR_VERSION,
                                                    SEQUENCE_MAX, FrameFlags as F)
from wirecheck.reference_impl.micromessage2.negotiation import Refusal, ServerPolicy, agree, reply_to
from wirecheck.reference_impl.micromessage2.session import MM2Session, Phase, SessionConfig
from wirecheck.reference_impl.micromessage2.state import BrokerState
from wirecheck.reference_impl.micromessage2.window import next_sequence

PROFILES = ("document", "sharpmessaging")
_U16 = struct.Struct(">H")
#: "Flag values" as plain ints (the IntFlag's ``&`` builds an enum member each time: slow).
_TYPED = int(F.COMMAND | F.EXTENSION | F.ERROR)
_EXTENSION, _LARGE, _CONTINUED = int(F.EXTENSION), int(F.LARGE_PAYLOAD), int(F.CONTINUED)


# --- decoding, past the errors the codec recovers from -----------------------------------------

def decode_events(data: bytes, sizes, make_decoder) -> list[tuple]:
    """``data`` fed in ``sizes`` (then the rest, if they fall short) to ``make_decoder()``:
    ``("frame", frame, end)`` for each frame (``end``: the stream offset where its bytes end)
    and ``("error", category, offset)`` for each error, going on after an error the decoder
    recovers from, stopping at one it raises again (the stream is broken); the end of the
    stream last (a partial frame is TRUNCATED). Bounded: a recovered error consumed its frame,
    so the same error is never raised twice. ``next_frame`` is called only after a read its
    ``receive`` says can complete something (codec.Decoder.receive: else it would answer None
    at once): with reads of a byte or two, those calls were most of the time."""
    decoder = make_decoder()
    out, last = [], None                           # last: the error before, if no frame since
    next_frame = decoder.next_frame
    n = len(data)
    ends = list(map(min, accumulate(sizes), repeat(n)))
    if not ends or ends[-1] < n:
        ends.append(n)                             # sizes fell short: the rest in one read
    # The reads are cut and received from C (map), and compress keeps the ends of those whose
    # receive answered True: Python sees only the reads that can complete something.
    pieces = map(data.__getitem__, map(slice, chain((0,), ends), ends))
    for fed in compress(ends, map(decoder.receive, pieces)):
        while True:
            try:
                frame = next_frame()
            except FrameError as exc:
                error = ("error", exc.category, exc.offset)
                if error == last:
                    return out                     # raised again: the stream is broken
                out.append(error)
                last = error
                continue
            if frame is None:
                break
            last = None
            out.append(("frame", frame, fed - decoder.buffered))
    try:
        decoder.eof()
    except FrameError as exc:
        out.append(("error", exc.category, exc.offset))
    return out


def make(profile: str, handshakes: int = 0):
    return lambda: codec.Decoder(None, handshakes, strict=profile != "sharpmessaging")


def split_agrees(data: bytes, profile: str, handshakes: int = 0, untraced=NOTHING) -> list[tuple]:
    """Whole and chunked (reads chosen by ``data``'s first bytes) decoding give the same events;
    returns them. The whole reading, the reference, runs in ``untraced`` (:data:`UNTRACED` in
    the frame-decoder target: fuzz/harnesses/untraced.py)."""
    with untraced:
        whole = decode_events(data, [len(data)], make(profile, handshakes))
    chunked = decode_events(data, split_sizes(data), make(profile, handshakes))
    if chunked != whole:
        first = next((i for i, (a, b) in enumerate(zip(whole, chunked)) if a != b),
                     min(len(whole), len(chunked)))
        raise AssertionError(f"{profile}: chunked decoding disagrees with whole decoding from "
                             f"event #{first}: {chunked[first:first + 1]} vs {whole[first:first + 1]}")
    return whole


def lenient_reads_more(strict: list[tuple], lenient: list[tuple]) -> None:
    """The profiles differ only in the FIELD rule for names and keys (syntax.py): where the
    document's reading refuses a name (BAD_VALUE, a recovered error) the sharpmessaging reading
    may read the frame (or fail later in it); every other event is the same."""
    assert len(strict) == len(lenient), f"{len(strict)} events strict, {len(lenient)} lenient"
    for a, b in zip(strict, lenient):
        if a != b:
            assert a[:2] == ("error", Category.BAD_VALUE), f"strict {a} vs lenient {b}"
            assert b[0] == "error" or isinstance(b[1], (Command, Handshake)), f"strict {a} vs lenient {b}"


def _fits(frame) -> bool:
    """Whether ``frame`` can be written back: a text read from the wire may grow past its u16
    length prefix (properties gain the trailing ';', extension values are URL-encoded anew,
    "!" as "%21"), and the encoder refuses that (ValueError, as documented)."""
    if isinstance(frame, Message):
        return len(syntax.format_properties(frame.properties).encode("utf-8")) <= 0xFFFF
    if isinstance(frame, Handshake):
        return all(len(syntax.format_extensions(x)) <= 0xFFFF for x in (frame.required, frame.optional))
    return True


def survives(frame, profile: str, in_place: bool = False) -> None:
    """``frame`` re-encodes to bytes its profile's decoder reads back, whole, as the same frame
    (a handshake, or with ``in_place`` the ERROR read in place of one, with a decoder expecting
    a handshake)."""
    codec.frame_to_dict(frame)
    if not _fits(frame):
        return
    wire = codec.encode(frame)
    again = decode_events(wire, [len(wire)], make(profile, int(in_place or isinstance(frame, Handshake))))
    assert again == [("frame", frame, len(wire))], f"{frame} does not survive encode/decode: {again}"


def all_survive(frames: list, profile: str, data: bytes | None = None,
                whole: list | None = None) -> None:
    """:func:`survives` for every frame of a stream after the handshake, with one decoder: the
    frames re-encoded back to back read back as the same frames, each ending where its bytes
    end. The same check (after a whole frame the decoder holds nothing: no partial CONTINUED
    message, as the encoder ends every message with a frame without CONTINUED, and no error)
    at a fraction of the cost of one decoder per frame. ``whole``: the events of ``data``
    read whole in ``profile`` (:func:`decode_events`), if known: when the frames re-encode to
    ``data`` itself (a canonical stream), that reading is the one asked for (the decoder is
    a function of its bytes), and is not done twice."""
    wires, expected, end = [], [], 0
    for frame in frames:
        codec.frame_to_dict(frame)
        if not _fits(frame):
            continue
        wire = codec.encode(frame)
        wires.append(wire)
        end += len(wire)
        expected.append(("frame", frame, end))
    if not wires:
        return
    wire = b"".join(wires)
    if whole is not None and wire == data:
        again = whole
    else:
        again = decode_events(wire, [len(wire)], make(profile))
    if again != expected:
        for frame in frames:
            survives(frame, profile)             # names the frame that does not survive
        raise AssertionError(f"frames re-encoded back to back read back differently: {again} vs {expected}")


def frames_of(events) -> list:
    return [e[1] for e in events if e[0] == "frame"]


# --- the frame decoder ---------------------------------------------------------------------------

def _spans(data: bytes) -> list[tuple]:
    """The whole frames of ``data`` as the document lays them out ("Frames", "MESSAGE",
    "COMMAND", "EXTENSION"), read from the length fields alone: ``(end, flags, sequence,
    payload)``, sequence None but for MESSAGE frames. A second, independent reading to check
    the decoder's CONTINUED reassembly against."""
    out, pos, n = [], 0, len(data)
    while pos < n:
        flags, at, seq = data[pos], pos + 1, None
        if flags & _TYPED == 0:
            if at + 3 > n:
                break
            seq = _U16.unpack_from(data, at)[0]
            at += 3 + data[at + 2]
            if at + 2 > n:
                break
            at += 2 + _U16.unpack_from(data, at)[0]
        elif flags & _EXTENSION:
            at += 1                                    # the extension id
        size = 4 if flags & _LARGE else 1
        if at + size > n:
            break
        length = int.from_bytes(data[at:at + size], "big")
        at += size
        if at + length > n:
            break
        out.append((at + length, flags, seq, data[at:at + length]))
        pos = at + length
    return out


def reassembled_as_sent(data: bytes, events) -> None:
    """Every message the decoder yields is its frame's payload after those of the CONTINUED
    frames right before it ("MESSAGE": CONTINUED on all but the last frame of a payload), with
    that frame's sequence number: no piece lost, none taken from another message."""
    ends = None
    for event in events:
        if event[0] != "frame" or not isinstance(event[1], Message):
            continue
        if ends is None:                           # only for a stream with messages
            spans = _spans(data)
            ends = {span[0]: i for i, span in enumerate(spans)}
        message, i = event[1], ends.get(event[2])
        assert i is not None, f"{message} ends at {event[2]}, where no frame ends"
        first = i
        while first > 0 and spans[first - 1][1] & _CONTINUED:
            first -= 1
        payload = b"".join(s[3] for s in spans[first:i + 1])
        assert (message.sequence, message.payload, message.pieces) == (spans[i][2], payload, i + 1 - first), \
            f"{message} (ending at {event[2]}) is not frames {first}..{i} reassembled"


def _nested(frames: list, profile: str) -> None:
    """The separate parsers inside frames: every property value as a FILTER_VALUE ("N", "D",
    "T" or none: never an exception); every ``filter`` argument of a COMMAND as a filter
    (FilterError or a filter) matched against every message's properties, typed and untyped;
    and every ERROR text (free UTF-8) handed to each text parser directly, whose results
    must write back to text that reads the same."""
    strict = profile != "sharpmessaging"
    found = []
    for frame in frames:
        if isinstance(frame, Message):
            for _, value in frame.properties:
                filters.parse_value(value)
        elif isinstance(frame, Command) and frame.arg("filter") is not None:
            try:
                found.append(filters.parse_filter(frame.arg("filter")))
            except filters.FilterError:
                pass
        elif isinstance(frame, Error):
            _texts(frame.text, strict, found)
    for flt in found:
        assert flt.conditions
        for m in frames:
            if isinstance(m, Message):
                assert flt.matches(m.properties, True) in (True, False)
                assert flt.matches(m.properties, False) in (True, False)


def _texts(text: str, strict: bool, found: list) -> None:
    try:
        exts = syntax.parse_extensions(text, strict)
    except FrameError:
        pass
    else:
        assert syntax.parse_extensions(syntax.format_extensions(exts), strict) == exts, exts
    try:
        name, args = syntax.parse_command(text, strict)
    except FrameError:
        pass
    else:
        assert syntax.parse_command(syntax.format_command(name, args), strict) == (name, args)
    try:
        props = syntax.parse_properties(text)
    except FrameError:
        pass
    else:
        assert syntax.parse_properties(syntax.format_properties(props)) == props, props
    filters.parse_value(text)
    try:
        found.append(filters.parse_filter(text))
    except filters.FilterError:
        pass


def decoder_one_input(data: bytes, untraced=NOTHING) -> None:
    """``data`` as frames after the handshake, in the document's profile: whole and chunked
    decoding agree, and nothing else (the frame-decoder target, at its full speed: the
    reassembly and the re-encoding are :func:`roundtrip_one_input`'s, the other profile and
    the parsers inside frames :func:`profiles_one_input`'s, all on the same corpus)."""
    split_agrees(data, PROFILES[0], untraced=untraced)


def roundtrip_one_input(data: bytes) -> None:
    """``data`` as frames after the handshake, read whole in the document's profile: CONTINUED
    messages are reassembled from exactly their frames, and every frame survives
    encode/decode (the frames re-encoded back to back read back the same)."""
    whole = decode_events(data, [len(data)], make(PROFILES[0]))
    reassembled_as_sent(data, whole)
    all_survive(frames_of(whole), PROFILES[0], data, whole)


def profiles_one_input(data: bytes) -> None:
    """``data`` as frames after the handshake, in both profiles: whole and chunked decoding
    agree, the lenient profile reads what the strict one reads, its CONTINUED messages are
    reassembled from exactly their frames and its frames survive encode/decode (the document's
    profile: :func:`roundtrip_one_input`), and the nested parsers hold on both profiles' frames."""
    per_profile = []
    for profile in PROFILES:
        events = split_agrees(data, profile)
        frames = frames_of(events)
        if profile != PROFILES[0]:
            reassembled_as_sent(data, events)
            all_survive(frames, profile)
        _nested(frames, profile)
        per_profile.append(events)
    lenient_reads_more(*per_profile)


# --- the handshakes ------------------------------------------------------------------------------

def _negotiate(events, profile: str) -> None:
    """A client's offer answered by the profile's server policy (only Refusal may say no): the
    reply re-encodes to bytes the client's decoder reads back equal; its final handshake
    checked by ``agree`` (only Refusal), and what is agreed is a window the sequence numbers
    can hold, on an ack extension's id."""
    shakes = [e[1] for e in events[:2] if e[0] == "frame" and isinstance(e[1], Handshake)]
    if not shakes or events[0][1] is not shakes[0]:
        return
    policy = ServerPolicy.for_profile(profile)
    try:
        reply = reply_to(policy, shakes[0])
    except Refusal as exc:
        assert exc.text
        return
    assert reply.major == MAJOR_VERSION
    survives(reply, profile)
    if len(shakes) < 2:
        return
    try:
        agreement = agree(policy, shakes[0], reply, shakes[1])
    except Refusal as exc:
        assert exc.text
        return
    if agreement.window is not None:
        assert 1 <= agreement.window < SEQUENCE_MAX, agreement
        assert agreement.by_id[agreement.ack_id] in (ACK, BATCH_ACK), agreement


def handshake_one_input(data: bytes) -> None:
    """``data`` from its first byte as a client's side (two handshakes, then frames) and as a
    server's (one), in both profiles: whole and chunked decoding agree, the lenient profile
    reads what the strict one reads, everything decoded survives encode/decode, and a client's
    handshakes go through the negotiation."""
    for origin, handshakes in (("client", 2), ("server", 1)):
        per_profile = []
        for profile in PROFILES:
            events = split_agrees(data, profile, handshakes)
            for i, frame in enumerate(frames_of(events)):
                survives(frame, profile, in_place=i == 0 and isinstance(frame, Error))
            if origin == "client":
                _negotiate(events, profile)
            per_profile.append(events)
        lenient_reads_more(*per_profile)


# --- the session ---------------------------------------------------------------------------------

#: A last byte "S" picks the sharpmessaging profile.
MARKER = b"S"
#: Small bounds, so that a fuzzer's input reaches them: messages waiting for a slow subscriber's
#: acks, and a queue's length (the defaults, 10,000 and 100,000, are out of its reach).
MAX_PENDING = 16
MAX_QUEUE = 16
#: A session may answer one SEND with many MESSAGE frames (one per subscription): bound what one
#: input makes it send.
MAX_OUTPUT = 2000
#: The byte of a session input (the offer's reserved Flags, "Handshake") whose lowest bit starts
#: the session's sequence numbers after this one, so its MESSAGEs wrap 65535 -> 1 after five
#: (as tests/reference_impl/micromessage2/test_mm2_session.py does) instead of after 65,535.
WRAP_BYTE = 2
WRAP_FROM = 65530


def profile_of(data: bytes) -> tuple[str, bytes]:
    """The profile and the client's bytes: a last byte ``S`` picks ``sharpmessaging`` and is
    not fed (fed, it would be a flags byte with an unknown bit, and every such seed would end
    on an error path)."""
    if data[-1:] == MARKER:
        return "sharpmessaging", data[:-1]
    return "document", data


class Conversation:
    """What the client sent and the session answered, checked against the rules as a model.

    The model reads the client's bytes with its own decoder and cuts each read after every
    whole client frame, so each ``receive`` completes at most one frame and the model knows
    which frame each answer answers (the reads still split frames anywhere). Before the
    handshake completes its decoder expects as many handshakes as the session's does (the
    sharpmessaging server waits for a new offer after a refusal: SPEC_NOTES).
    """

    def __init__(self, session: MM2Session, profile: str) -> None:
        self.session, self.profile = session, profile
        limits = session.config.limits
        self.client = codec.Decoder(limits, 2, strict=profile != "sharpmessaging")
        self.server = codec.Decoder(None, 1, strict=profile != "sharpmessaging")
        self.frame = None            # the client frame the last piece completed
        self.broken = False          # the client's bytes broke the codec: the session must close
        self.replied = False
        self.inflight: deque[int] = deque()     # the session's MESSAGEs not acked yet
        self.last_seq = 0                       # the session's last MESSAGE sequence number
        self.unacked_sends = 0                  # the client's SENDs since the session's last ack
        self.last_send = 0
        self.first_unacked_at = 0.0
        self.sent = 0

    def cut(self, chunk: bytes):
        """``chunk`` in pieces, each ending where a client frame ends (the last one where
        ``chunk`` ends); ``self.frame`` is the frame the piece completed."""
        if self.broken or self.session.closed:
            self.frame = None
            yield chunk
            return
        self.client.receive(chunk)
        start = 0
        while True:
            try:
                frame = self.client.next_frame()
            except FrameError:
                self.broken, self.frame = True, None
                yield chunk[start:]
                return
            if frame is None:
                self.frame = None
                if start < len(chunk):
                    yield chunk[start:]
                return
            end = len(chunk) - self.client.buffered
            assert end > start, "a frame the bytes before this read already held"
            self.frame = frame
            yield chunk[start:end]
            start = end
            # The session's decoder has read exactly what ours has: follow its handshake count.
            self.client.handshakes = self.session.decoder.handshakes

    def answered(self, out: list[bytes], now: float, was_closed: bool) -> None:
        """``out``: what the session sent for the piece just received (``self.frame`` done)."""
        session, frame, a = self.session, self.frame, self.session.agreement
        if was_closed:
            assert out == [], f"a closed session answered {out}"
            return
        if self.broken:
            assert session.closed, "a frame the codec refuses did not end the connection"
        if a is not None and isinstance(frame, ExtensionFrame) and frame.extension_id == a.ack_id \
                and len(frame.payload) == 2:
            seq = _U16.unpack(frame.payload)[0]
            if seq in self.inflight:                    # cumulative ("batch-ack")
                while self.inflight.popleft() != seq:
                    pass
        if a is not None and a.window is not None and isinstance(frame, Message):
            self.unacked_sends += 1
            self.last_send = frame.sequence
            if self.unacked_sends == 1:
                self.first_unacked_at = now
        last = self._records(out)
        if session.closed:
            # The session closes after an ERROR of its own, or silently on the client's ERROR.
            assert not out or isinstance(last, Error), f"closed after {last}"
        elif a is not None and a.window is not None:
            # "The sender MUST NOT send any more messages until ... ACKed": the receiver acks
            # when the window is full, or the client could never send again.
            assert self.unacked_sends < a.window, f"{self.unacked_sends} SENDs unacked, window {a.window}"
            assert not self.unacked_sends or session.next_deadline() is not None, \
                "unacked SENDs and no deadline to ack them by"

    def ticked(self, out: list[bytes], now: float, was_closed: bool) -> None:
        session, a = self.session, self.session.agreement
        if was_closed:
            assert out == [], f"a closed session's timer sent {out}"
            return
        self._records(out)
        if session.closed:
            return
        deadline = session.next_deadline()
        assert deadline is None or deadline > now, f"tick({now}) left the deadline {deadline} due"
        if self.unacked_sends:
            delay = a.ack_expire if a.ack_expire is not None else session.config.ack_delay
            assert now < self.first_unacked_at + delay, \
                f"{self.unacked_sends} SENDs unacked {now - self.first_unacked_at:.2f}s after the first"

    def _records(self, out: list[bytes]):
        """Decode and check each record; the last frame."""
        session, a = self.session, self.session.agreement
        self.sent += len(out)
        frame = None
        for i, record in enumerate(out):
            frames = self.server.feed(record)
            assert len(frames) == 1 and self.server.buffered == 0, f"session sent {record.hex()}"
            frame = frames[0]
            if isinstance(frame, Handshake):
                assert not self.replied and frame.major == MAJOR_VERSION, f"handshake {frame}"
                self.replied = True
            elif isinstance(frame, Error):
                if session.phase is Phase.AWAIT_OFFER:
                    # A refused offer and the connection kept (sharpmessaging, SPEC_NOTES): the
                    # server answers the client's next offer with a handshake again.
                    self.server.handshakes, self.replied = 1, False
            elif isinstance(frame, Message):
                assert a is not None, "a MESSAGE before the handshake completed"
                assert frame.sequence == next_sequence(self.last_seq), \
                    f"MESSAGE {frame.sequence} after {self.last_seq}"
                self.last_seq = frame.sequence
                if a.window is not None:
                    self.inflight.append(frame.sequence)
                    assert len(self.inflight) <= a.window, \
                        f"{len(self.inflight)} MESSAGEs unacked, window {a.window}"
            elif isinstance(frame, ExtensionFrame) and a is not None and frame.extension_id == a.ack_id:
                assert self.unacked_sends and frame.payload == _U16.pack(self.last_send), \
                    f"ack {frame.payload.hex()}: last SEND {self.last_send}, {self.unacked_sends} unacked"
                self.unacked_sends = 0
            elif isinstance(frame, ExtensionFrame) and a is not None \
                    and frame.extension_id == a.id_of(DOTNET):
                assert i + 1 < len(out) and out[i + 1][0] & (F.COMMAND | F.EXTENSION | F.ERROR) == 0, \
                    "a dotnet type frame not followed by its MESSAGE"
            else:
                raise AssertionError(f"the session sent {frame}")
        return frame


def session_one_input(data: bytes) -> None:
    """Feed a client's side to a fresh session in reads chosen by its first bytes, the fake
    clock advancing by a step its 5th byte chooses (in a seed, the identity's first character:
    a byte the fuzzer can change without breaking the framing) after each read, with a tick
    at the session's deadline if it falls in the step (as the broker's timer) and one at the
    step's end (the receiver's delayed acks run on them); the 3rd byte's lowest bit starts the
    session's sequence numbers near the wrap (``WRAP_FROM``). Checks: nothing but the session's own
    handling meets the input; every record it sends is one whole server frame in its profile;
    a closed session sends nothing; the window is never exceeded; see :class:`Conversation`."""
    profile, stream = profile_of(data)
    session = MM2Session(BrokerState(MAX_QUEUE), SessionConfig.for_profile(profile, max_pending=MAX_PENDING))
    talk = Conversation(session, profile)
    step = (stream[SIZE_BYTES] if len(stream) > SIZE_BYTES else 0) / 100.0
    wrap = len(stream) > WRAP_BYTE and stream[WRAP_BYTE] & 1
    now, pos = 1000.0, 0
    for size in read_sizes(stream):
        chunk = stream[pos:pos + size]
        pos += size
        was_closed = session.closed
        for piece in talk.cut(chunk):
            before = session.closed
            talk.answered(session.receive(piece, now), now, before)
            if wrap and session.phase is Phase.OPEN and talk.last_seq == 0:
                # Just opened (a piece completes one frame: no MESSAGE was sent yet).
                session.outbox.last = talk.last_seq = WRAP_FROM
        now += step
        deadline = session.next_deadline()
        if deadline is not None and deadline <= now and not session.closed:
            talk.ticked(session.tick(deadline), deadline, False)    # the broker's timer fires
        before = session.closed
        talk.ticked(session.tick(now), now, before)
        if was_closed or talk.sent > MAX_OUTPUT:
            return                 # one read after the close shows it; more would show nothing new
