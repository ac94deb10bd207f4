"""Boundaries of every length field and list, in both directions ("Binary encoding",
"MessagePack (MsgPack) encoding", "JSON Encoding", "Invocations"; SPEC_NOTES for headers).

Fields, what the suite already covered (before this module) and what is added here:

- the MessagePack record's VarInt length (1-5 bytes). Before: Echo texts of 127, 128, 200,
  16383, 16384 and 20000 characters (bodies a few bytes longer: no exact edge), a VarInt
  split across writes, invalid prefixes (test_encoding.py). Added: bodies of exactly 127/128,
  16383/16384 and 2097151/2097152 bytes (one VarInt byte more each), both ways: an Echo whose
  Invocation has that body, and a call whose Completion has it (the target writes that
  VarInt; 2 MiB ones come from Batched, the kit's message of 2 MiB may be refused: below).
- MessagePack str (fixstr/str8/str16/str32) and bin (bin8/16/32) lengths. Before: strings of
  the sizes above, one 9-byte bin. Added: strings of 31/32, 255/256, 65535/65536 bytes and
  binaries of 255/256, 65535/65536 bytes carried through.
- arrays (Arguments, values; fixarray/array16/array32 in MessagePack). Before: 0, 1, 2 and
  3 arguments, nested lists of a few items, Batched(5). Added: lists of 0, 1, 15, 16, 65535
  and 65536 items carried through (both encodings), Batched of those counts (the target
  builds the array), and 15 and 16 arguments (a binding error for Add, read whole).
- maps (values; Headers in v1; fixmap/map16/map32). Before: a few entries, one header.
  Added: maps of 0, 1, 15, 16, 65535 and 65536 entries carried through, 15 and 16 headers.
- Invocation ID (a string). Before: 1-200 characters echoed, 4096 (INV-010). Added: 31, 32,
  255 and 256 echoed, 65535 and 65536 (echoed, or the connection ended: INV-010).
- error text (Completion error, a string the target writes). Before: short ones. Added:
  Fail with 255- and 256-character messages (the document does not say the text carries
  the message: only an error is required).
- JSON records have no length field (0x1E separated): their lists and maps are above.

A message the kit sends above 32 KiB (ASP.NET Core's default receive size, which every
server is expected to read) may be refused by ending the connection (SIGR-FRAME-006).
"""
import pytest

from wirecheck.conformance.target.connection import TargetClosed, TargetError
from wirecheck.conformance.report.verdicts import unimplemented
from wirecheck.reference_impl.signalr.messages import Close, Completion, Invocation

from .conftest import only

#: What every server is expected to read (SIGR-FRAME-006).
READ_AT_LEAST = 32 * 1024


def _varint(wire: bytes) -> tuple[int, int]:
    """The VarInt at the start of ``wire``: (value, its length in bytes)."""
    value = shift = 0
    for i, byte in enumerate(wire[:5]):
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i + 1
    raise ValueError("no VarInt")


def _body(sig, message) -> int:
    return _varint(sig.encode(message))[0]


def _fit(sig, length: int, make) -> tuple:
    """(text, id) for which ``make(text, id)`` encodes to a body of exactly ``length`` bytes:
    the text fills it, the id's length takes up what a string header's step leaves over."""
    base = sig.new_id()
    guess = length - _body(sig, make("", base))
    for size in range(max(guess - 8, 0), guess + 1):
        for pad in range(6):
            iid = base + "p" * pad
            text = "t" * size
            if _body(sig, make(text, iid)) == length:
                return text, iid
    raise AssertionError(f"no text makes a {length}-byte body")


def _answer(sig, conn, size: int, what: str):
    """The next message, or None when the target refused the ``size``-byte message the kit
    sent by ending the connection (v1: a Close first), allowed above READ_AT_LEAST only."""
    try:
        message = sig.recv(conn, f"the answer to {what}")
        if not isinstance(message, Close):
            return message
        conn.expect_closed(reason=f"a Close after {what}")
    except TargetClosed:
        pass
    if size <= READ_AT_LEAST:
        raise TargetError(f"the target ended the connection on {what} ({size} bytes); every server "
                          f"reads messages of up to {READ_AT_LEAST} bytes")
    return None


def _sent(conn, size: int, what: str, *items) -> bool:
    """Send ``items``; False when the target ended the connection while the kit was still
    sending a message above READ_AT_LEAST (a refusal, as in :func:`_answer`: a server that stops
    reading and closes resets the kit's unsent bytes)."""
    try:
        conn.send(*items)
    except TargetClosed:
        if size <= READ_AT_LEAST:
            raise TargetError(f"the target ended the connection on {what} ({size} bytes); every server "
                              f"reads messages of up to {READ_AT_LEAST} bytes") from None
        return False
    return True


def _echo_or_refusal(sig, conn, request: Invocation, expected):
    wire = sig.encode(request)
    if not _sent(conn, len(wire), f"a {len(wire)}-byte {request.target}", wire):
        return
    done = _answer(sig, conn, len(wire), f"a {len(wire)}-byte {request.target}")
    if done is None:
        return
    assert isinstance(done, Completion) and done.invocation_id == request.invocation_id, repr(done)[:300]
    assert done.error is None and done.result == expected, \
        f"{request.target} answered {repr(done.result)[:80]} (error {done.error!r})"


def _carry(sig, conn, value):
    """Remember(value) then Recall(): the target reads the value and writes it back."""
    remember = sig.nonblocking("Remember", value)
    wire = sig.encode(remember)
    recall = sig.invocation("Recall")
    if not _sent(conn, len(wire), f"Remember of a {len(wire)}-byte value", wire, recall):
        return
    done = _answer(sig, conn, len(wire), f"Remember of a {len(wire)}-byte value")
    if done is None:
        return
    assert isinstance(done, Completion) and done.invocation_id == recall.invocation_id, repr(done)[:300]
    assert done.result == value, f"Recall gave {repr(done.result)[:80]}, Remember had {repr(value)[:80]}"


VARINT_EDGES = [127, 128, 16383, 16384, 2097151, 2097152]


@pytest.mark.requirement("SIGR-FRAME-001", "SIGR-FRAME-006")
@only("messagepack")
@pytest.mark.parametrize("length", VARINT_EDGES)
def test_varint_edges_from_the_kit(sig, length):
    conn = sig.connect()
    text, iid = _fit(sig, length, lambda t, i: Invocation("Echo", [t], i))
    _echo_or_refusal(sig, conn, Invocation("Echo", [text], iid), text)


@pytest.mark.requirement("SIGR-FRAME-001", "SIGR-INV-001", "SIGR-INV-006")
@only("messagepack")
@pytest.mark.parametrize("length", VARINT_EDGES)
def test_varint_edges_from_the_target(sig, length):
    """The Completion's body, as the profile's layout writes it, is exactly ``length``: Echo
    below 32 KiB, Batched above (its list's size is the target's; the id evens it out)."""
    conn = sig.connect()
    if length <= READ_AT_LEAST:
        text, iid = _fit(sig, length, lambda t, i: Completion(i, t, has_result=True))
        request, expected = Invocation("Echo", [text], iid), text
    else:
        # Past 65,535 each item is a 5-byte uint32: the list grows 5 bytes an item from the
        # body of 65,536 items with an empty id; the id (a fixstr, under 32) takes the rest.
        base = _body(sig, Completion("", list(range(1 << 16)), has_result=True))
        iid = sig.new_id()
        rest = length - base - len(iid)
        iid += "b" * (rest % 5)
        expected = list(range((1 << 16) + rest // 5))
        assert _body(sig, Completion(iid, expected, has_result=True)) == length
        request = Invocation("Batched", [len(expected)], iid)
    conn.send(request)
    done = sig.recv(conn, f"a Completion of {length} bytes")
    assert isinstance(done, Completion) and done.invocation_id == request.invocation_id, repr(done)[:300]
    assert done.error is None and done.result == expected, f"{request.target}: {repr(done.result)[:80]}"


@pytest.mark.requirement("SIGR-MSGPACK-005", "SIGR-JSON-005", "SIGR-FRAME-006")
@pytest.mark.parametrize("length", [31, 32, 255, 256, 65535, 65536])
def test_string_length(sig, length):
    """fixstr/str8/str16/str32 in MessagePack (the same texts in JSON)."""
    conn = sig.connect()
    text = ("s" * length)
    _echo_or_refusal(sig, conn, sig.invocation("Echo", text), text)


@pytest.mark.requirement("SIGR-MSGPACK-005", "SIGR-FRAME-006")
@only("messagepack")
@pytest.mark.parametrize("length", [255, 256, 65535, 65536])
def test_binary_length(sig, length):
    _carry(sig, sig.connect(), bytes(i % 256 for i in range(length)))


COUNTS = [0, 1, 15, 16, 65535, 65536]


@pytest.mark.requirement("SIGR-MSGPACK-005", "SIGR-JSON-005", "SIGR-INV-008", "SIGR-FRAME-006")
@pytest.mark.parametrize("count", COUNTS)
def test_array_length_carried_through(sig, count):
    _carry(sig, sig.connect(), [i % 100 for i in range(count)])


@pytest.mark.requirement("SIGR-INV-006", "SIGR-MSGPACK-005", "SIGR-JSON-005")
@pytest.mark.parametrize("count", COUNTS)
def test_array_length_written_by_the_target(sig, count):
    conn = sig.connect()
    assert sig.call(conn, "Batched", count).result == list(range(count))


@pytest.mark.requirement("SIGR-MSGPACK-005", "SIGR-JSON-005", "SIGR-INV-008", "SIGR-FRAME-006")
@pytest.mark.parametrize("count", COUNTS)
def test_map_size_carried_through(sig, count):
    _carry(sig, sig.connect(), {f"k{i}": i % 100 for i in range(count)})


@pytest.mark.requirement("SIGR-INV-011")
@pytest.mark.parametrize("count", [15, 16])
def test_argument_count(sig, count):
    """An Arguments array past a fixarray: Add with that many arguments is a binding error."""
    conn = sig.connect()
    done = sig.call(conn, "Add", *range(count))
    assert done.error and not done.has_result, f"Add with {count} arguments must fail, got {done!r}"
    sig.barrier(conn, f"an Invocation with {count} arguments")


@pytest.mark.requirement("SIGR-V1-003")
@pytest.mark.parametrize("count", [15, 16])
def test_header_count(sig, count):
    if sig.draft or not sig.has("headers"):
        unimplemented("headers (v1)")
    conn = sig.connect()
    iid = sig.new_id()
    conn.send(Invocation("Echo", ["headers"], iid, headers={f"h{i}": "v" for i in range(count)}))
    conn.expect(Completion, invocation_id=iid, result="headers")


@pytest.mark.requirement("SIGR-INV-001")
@pytest.mark.parametrize("length", [31, 32, 255, 256])
def test_invocation_id_length(sig, length):
    conn = sig.connect()
    iid = ("i" + sig.new_id() + "x" * length)[:length]
    conn.send(Invocation("Echo", ["id"], iid))
    conn.expect(Completion, invocation_id=iid, result="id")


@pytest.mark.requirement("SIGR-INV-010")
@pytest.mark.parametrize("length", [65535, 65536])
def test_invocation_id_at_the_string_limits(sig, length):
    """str16's last length and str32's first: echoed, or the connection ended (a Callee may
    limit Invocation ID lengths and terminate the connection)."""
    conn = sig.connect()
    iid = "L" * length
    conn.send(Invocation("Echo", ["long id"], iid))
    try:
        done = sig.recv(conn, "a Completion with the long id, or the connection ended")
    except TargetClosed:
        return
    if isinstance(done, Close):
        conn.expect_closed(reason=f"a Close after a {length}-character id")
        return
    assert isinstance(done, Completion) and done.invocation_id == iid and done.result == "long id", \
        repr(done)[:300]


@pytest.mark.requirement("SIGR-INV-005")
@pytest.mark.parametrize("length", [255, 256])
def test_error_text_length(sig, length):
    conn = sig.connect()
    done = sig.call(conn, "Fail", "e" * length)
    assert isinstance(done.error, str) and done.error and not done.has_result, repr(done)[:300]
    sig.barrier(conn, "an error Completion")
