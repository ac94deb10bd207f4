"""Boundaries of every length field and list, in both directions ("Handshake", "Frames",
"MESSAGE", "COMMAND", "EXTENSION", ".NET"; SPEC_NOTES for the ERROR layout).

Fields, what the suite already covered (before this module) and what is added here:

- handshake ``Identity length`` (u8). Before: 4 and 9 bytes ("hulk", "wirecheck"). Added: 0,
  1 and 255 (the limit), each answered with a handshake and completed.
- ``RequiredExtensionsLength`` / ``OptionalExtensionsLength`` (u16) and their lists. Before:
  0 (HS-002), one and several entries, lists of ~30 bytes (test_handshake.py). Added: lists
  of 255, 256 and 65535 bytes (the limit): unknown optional vendor extensions are read past
  and left out of the reply, unknown required ones get the ERROR frame (HS-005).
- MESSAGE ``DestinationLength`` (u8). Before: 0 (ERROR, MSG-006), ~30-byte names. Added: 127,
  128 and 255 (the limit) both ways; a one-byte name cannot be kept to one test.
- MESSAGE ``PropertiesLength`` (u16) and the property list. Before: none, several (2)
  entries. Added: one entry, 255, 256 and 65535 bytes (the limit), both ways.
- MESSAGE ``Payload length`` (1 or 4 bytes). Before: 0, 5, 255, 256 and 70,000 both ways
  (LARGE_PAYLOAD at and below 256), CONTINUED above 1 MiB (test_framing.py). Added: exactly
  1 MiB and 1 MiB + 1 (the CONTINUED switch of MM2-FRAME-006), both ways and acked.
- COMMAND ``Payload length`` (1 or 4 bytes). Before: short commands only (the small form).
  Added: subscribe commands of 255 and 256 bytes (the switch to LARGE_PAYLOAD) and a short
  one with LARGE_PAYLOAD, each proven by a delivery to the subscription.
- EXTENSION ``Payload length`` (1 or 4 bytes). Before: 2-byte acks, a 50-byte .NET type name.
  Added: type names of 255 and 256 bytes and a short one with LARGE_PAYLOAD, echoed before
  the MESSAGE to a subscriber (the target writes the length).
- ERROR ``length`` (1 or 4 bytes): the target's text; the suite makes it name a 300-byte
  command (a text that may need the 4-byte length: the decoder reads either form).
- COMMAND key/value list: none (the barrier command), one (destination) and two (filter)
  entries were covered; batch-ack properties: none and one (test_acks.py). Nothing added.
"""
import pytest

from wirecheck.conformance.target.connection import TargetError
from wirecheck.reference_impl.micromessage2 import codec
from wirecheck.reference_impl.micromessage2.codec import Command, Error, ExtensionFrame, Handshake, Message
from wirecheck.reference_impl.micromessage2.constants import CONTINUATION_SIZE
from wirecheck.reference_impl.micromessage2.syntax import (
    format_command,
    format_properties,
    parse_extensions,
)


def _destination(mm2, length: int, kind: str = "topic") -> str:
    """A destination of exactly ``length`` bytes, unique to the test (a short queue name is
    the tail of the random part; a topic keeps its "topic/" prefix, so is at least 26)."""
    base = mm2.destination(kind, "edge")
    if length < len(base) and kind != "topic":
        return base[-length:]
    return (base + "d" * length)[:length]


def _properties(length: int):
    """One property whose text ("key:value;") is exactly ``length`` bytes; the value is a text
    FILTER_VALUE (``T`` + letters), which an untyped reading takes as it is."""
    return (("pad", "T" + "v" * (length - len(format_properties((("pad", "T"),))))),)


def _vendor_list(length: int) -> str:
    """Unknown vendor extensions ("x-" prefix), joined by ';', exactly ``length`` bytes."""
    count = max(1, length // 64)
    room = length - (count - 1)                     # the separators
    names = [f"x-wirecheck-{i}-" for i in range(count)]
    sizes = [room // count] * (count - 1) + [room - room // count * (count - 1)]
    text = ";".join((n + "p" * size)[:size] for n, size in zip(names, sizes))
    assert len(text) == length
    return text


def _pair(mm2, required="pubsub", kind="topic", length: int | None = None):
    """A subscriber of a new destination (of ``length`` bytes if given) and that destination."""
    mm2.needs("pubsub")
    sub = mm2.connect(required=required, name="subscriber")
    dest = mm2.destination(kind) if length is None else _destination(mm2, length, kind)
    mm2.subscribe(sub, dest)
    mm2.barrier(sub, "subscribe")
    return sub, dest


@pytest.mark.requirement("MM2-HS-001", "MM2-HS-011")
@pytest.mark.parametrize("length", [0, 1, 255])
def test_identity_length(mm2, length):
    conn = mm2.open()
    identity = "i" * length
    conn.send(mm2.offer(identity=identity))
    reply = mm2.reply(conn, f"the reply to an offer with a {length}-byte identity")
    mm2.final(conn, tuple(reply.required), identity=identity)
    mm2.barrier(conn, f"a final handshake with a {length}-byte identity")


@pytest.mark.requirement("MM2-HS-001", "MM2-HS-013")
@pytest.mark.parametrize("length", [255, 256, 65535])
def test_optional_extension_list_length(mm2, length):
    """An OptionalExtensions field of that many bytes, every entry an unknown vendor one: the
    server reads it whole and answers with a handshake (whether it suggests them back is
    MM2-HS-014's matter, test_handshake.py), and the connection goes on."""
    conn = mm2.open()
    offer = Handshake("wirecheck", (), parse_extensions(_vendor_list(length), strict=False))
    conn.send(offer)
    reply = mm2.reply(conn, f"the reply to a {length}-byte optional extension list")
    mm2.final(conn, tuple(reply.required))
    mm2.barrier(conn, f"a handshake after a {length}-byte optional list")


@pytest.mark.requirement("MM2-HS-005", "MM2-HS-013")
@pytest.mark.parametrize("length", [255, 256, 65535])
def test_required_extension_list_length(mm2, length):
    conn = mm2.open()
    conn.send(Handshake("wirecheck", parse_extensions(_vendor_list(length), strict=False)))
    mm2.expect_error(conn, f"an ERROR for a {length}-byte list of required extensions the server lacks")


@pytest.mark.requirement("MM2-MSG-001", "MM2-PS-001", "MM2-PS-002")
@pytest.mark.parametrize("length", [127, 128, 255])
def test_destination_length_both_ways(mm2, length):
    """A DestinationLength (u8) past a signed byte and at its limit: subscribed (a command of
    more than 255 bytes there), sent, and pushed back with the same destination."""
    sub, dest = _pair(mm2, length=length)
    mm2.send(sub, dest, b"to a long destination")
    got = mm2.expect(sub, Message, f"the MESSAGE to a {length}-byte destination")
    assert (got.destination, got.payload) == (dest, b"to a long destination")
    mm2.barrier(sub)


@pytest.mark.requirement("MM2-MSG-001", "MM2-MSG-004")
@pytest.mark.parametrize("length", ["one", 255, 256, 65535])
def test_properties_length_both_ways(mm2, length):
    sub, topic = _pair(mm2)
    props = (("k", "N1"),) if length == "one" else _properties(length)
    mm2.send(sub, topic, b"props", props)
    got = mm2.expect(sub, Message, f"the MESSAGE with {length} bytes of properties")
    assert got.properties == props, (f"{len(format_properties(got.properties))} bytes of properties "
                                     f"pushed, {len(format_properties(props))} sent")
    mm2.barrier(sub)


@pytest.mark.requirement("MM2-FRAME-002", "MM2-FRAME-004", "MM2-FRAME-006")
@pytest.mark.parametrize("size", [CONTINUATION_SIZE, CONTINUATION_SIZE + 1], ids=["1MiB", "1MiB+1"])
def test_payload_at_the_continued_switch_both_ways(mm2, size):
    """1 MiB fits one frame; one byte more is "larger than 1 MiB", which should be split into
    CONTINUED frames (the kit's encoder does, and the target should too)."""
    sub, topic = _pair(mm2)
    payload = bytes(i % 253 for i in range(size))
    sub.send(Message(1, topic, payload))
    got = mm2.expect(sub, Message, f"the {size}-byte message")
    assert got.payload == payload, f"{len(got.payload)} bytes pushed, {size} sent"
    assert size <= CONTINUATION_SIZE or got.pieces >= 2, \
        f"a {size}-byte payload (above 1 MiB) came in one frame, not CONTINUED frames"
    mm2.barrier(sub)


@pytest.mark.requirement("MM2-MSG-001", "MM2-FRAME-002", "MM2-FRAME-004")
@pytest.mark.parametrize("case", ["destination-255", "properties-65535", "payload-1MiB", "payload-1MiB+1"])
def test_long_fields_in_sends_are_acked(mm2, case):
    """The same edges sent to a target that only receives (no pubsub to push them back): with
    a window of one, the target's ack of each SEND's number proves it read the frame whole."""
    conn = mm2.connect(required=mm2.window_extension(1))
    dest, props, payload = mm2.destination("queue"), (), b"x"
    if case == "destination-255":
        dest = _destination(mm2, 255, "queue")
    elif case == "properties-65535":
        props = _properties(65535)
    else:
        payload = bytes(CONTINUATION_SIZE + (case == "payload-1MiB+1"))
    mm2.send(conn, dest, payload, props)
    mm2.send(conn, mm2.destination("queue"), b"after")
    assert mm2.expect_acks(conn, 2, f"the acks of a SEND with {case} and the one after it") == [1, 2]


@pytest.mark.requirement("MM2-MSG-001", "MM2-MSG-004")
@pytest.mark.parametrize("case", ["one", "two", "255", "256"])
def test_properties_in_sends_are_acked(mm2, case):
    """Properties in a SEND, to a target that only receives (no pubsub to push them back; the
    pushed form is test_properties_length_both_ways): acked with a window of one, the SEND after
    it too. Two properties are a list with a separator, which one independent server's parser
    died on."""
    conn = mm2.connect(required=mm2.window_extension(1))
    props = {"one": (("k", "N1"),), "two": (("price", "N12"), ("city", "TOslo"))}.get(case) \
        or _properties(int(case))
    mm2.send(conn, mm2.destination("queue"), b"props", props)
    mm2.send(conn, mm2.destination("queue"), b"after")
    assert mm2.expect_acks(conn, 2, f"the acks of a SEND with {case} properties and the one after it") == [1, 2]


def _subscribe_command_of(dest_room: int, mm2, length: int):
    dest = _destination(mm2, length - dest_room, "queue")        # no character to escape
    text = format_command("subscribe", (("destination", dest),))
    assert len(text.encode()) == length
    return dest


@pytest.mark.requirement("MM2-CMD-001", "MM2-FRAME-002", "MM2-PS-001")
@pytest.mark.parametrize("length,large", [(255, False), (256, False), (40, True)],
                         ids=["255", "256", "short-with-LARGE_PAYLOAD"])
def test_command_length(mm2, length, large):
    """A COMMAND's payload at the switch to the 4-byte length, and a short one in the 4-byte
    form: the subscription it makes is proven by a message pushed to it."""
    mm2.needs("pubsub")
    conn = mm2.connect(name="subscriber")
    room = len(format_command("subscribe", (("destination", ""),)))
    dest = _subscribe_command_of(room, mm2, length)
    conn.send(Command("subscribe", (("destination", dest),), large=large))
    mm2.barrier(conn, f"a {length}-byte subscribe command")
    mm2.send(conn, dest, b"subscribed")
    got = mm2.expect(conn, Message, f"the MESSAGE to the subscription of a {length}-byte command")
    assert (got.destination, got.payload) == (dest, b"subscribed")


@pytest.mark.requirement("MM2-NET-001", "MM2-FRAME-002")
@pytest.mark.parametrize("length,large", [(255, False), (256, False), (10, True)],
                         ids=["255", "256", "short-with-LARGE_PAYLOAD"])
def test_extension_payload_length_both_ways(mm2, length, large):
    """A .NET type frame (an EXTENSION) at the switch to the 4-byte length: pushed to the
    subscriber before the MESSAGE with the same type name."""
    sub, topic = _pair(mm2, required="pubsub;dotnet")
    pub = mm2.connect(required="pubsub;dotnet", name="publisher")
    type_name = ("Wirecheck.Boundary" + "T" * length)[:length]
    pub.send(ExtensionFrame(pub.ids["dotnet"], type_name.encode(), large=large))
    mm2.send(pub, topic, b"typed")
    mm2.barrier(pub)
    frame = mm2.next(sub, f"the {length}-byte .NET type frame")
    assert frame == ExtensionFrame(sub.ids["dotnet"], type_name.encode()), \
        f"expected the {length}-byte type frame, got {codec.frame_to_dict(frame)}"
    assert mm2.expect(sub, Message).payload == b"typed"
    mm2.barrier(sub)


@pytest.mark.requirement("MM2-CMD-002", "MM2-ERR-001")
def test_error_for_a_long_command_name(mm2):
    mm2.needs("commands")
    conn = mm2.connect()
    name = ("x-wirecheck-" + "c" * 300)[:300]
    conn.send(Command(name))
    error = mm2.expect(conn, Error, "an ERROR for a 300-byte unknown command")
    if not error.text:
        raise TargetError("the ERROR frame has no text")
    mm2.barrier(conn, "a 300-byte unknown command")
