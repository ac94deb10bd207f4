"""Micromessage2 codec: the vectors of SPEC_NOTES and the document (errata applied), every error
category, each input decoded whole, byte by byte and in random chunks."""
import pytest

from wirecheck.conformance.strategies.micromessage2 import (DOCUMENT_FINAL, DOCUMENT_OFFER,
                                                  DOCUMENT_OFFER_MISPRINTED, DOCUMENT_REPLY,
                                                  EXTENSION_LIST_EXAMPLES, HANDSHAKE_ERROR,
                                                  REAL_SERVER_ACK, REAL_SERVER_REPLY, SHARP_PLAIN,
                                                  SHARP_WITH_PROPERTIES)
from wirecheck.reference_impl.core.errors import Category, FrameError
from wirecheck.reference_impl.micromessage2 import codec, syntax
from wirecheck.reference_impl.micromessage2.codec import Command, Error, ExtensionFrame, Handshake, Message
from wirecheck.reference_impl.micromessage2.syntax import Extension
from tests.helpers import decode_three_ways


def three(data, **kw):
    return decode_three_ways(lambda: codec.make_decoder(**kw), data)


def test_sharpmessaging_vectors():
    # SPEC_NOTES "Micromessage2": vectors from the real implementation's tests.
    plain, with_props = SHARP_PLAIN, SHARP_WITH_PROPERTIES
    assert three(plain, profile="sharpmessaging") == ([Message(2, "", b"mother")], None)
    assert three(with_props, profile="sharpmessaging") == (
        [Message(2, "MQ", b"mother", (("last_name", "kalle"),))], None)
    assert codec.encode(Message(2, "MQ", b"mother", (("last_name", "kalle"),))) == with_props
    assert codec.encode(Message(2, "", b"mother")) == plain


def test_document_handshake_examples_with_erratum_1():
    offer, reply, final = DOCUMENT_OFFER, DOCUMENT_REPLY, DOCUMENT_FINAL
    frames, err = three(offer + final, origin="client")
    assert err is None
    assert frames[0] == Handshake("hulk", (Extension("json"), Extension("dotnet")))
    assert frames[1].names() == ("json", "dotnet", "batch-ack")        # ids 1, 2, 3
    assert three(reply, origin="server") == ([Handshake("srver", (), (Extension("batch-ack"),))], None)
    assert codec.encode(frames[1]) == final
    # As printed (RequiredLen 10) the list ends at "json;dotne" and "t\x00" is read as an
    # OptionalLen of 29,696: the handshake never completes.
    assert three(DOCUMENT_OFFER_MISPRINTED, origin="client") == ([], (Category.TRUNCATED, 0))


def test_real_server_reply_and_ack():
    # SPEC_NOTES: the real server's reply to a client requiring "ack", then its ack of message 1.
    data = REAL_SERVER_REPLY + REAL_SERVER_ACK
    frames, err = three(data, origin="server", profile="sharpmessaging")
    assert err is None
    assert frames == [Handshake("FastSocket v1.1", (Extension("ack"),), (Extension("dotnet"),), 1, 1),
                      ExtensionFrame(1, b"\x00\x01")]


def test_error_during_the_handshake():
    assert three(HANDSHAKE_ERROR, origin="server") == ([Error("nope!")], None)


def test_extension_syntax():
    text = EXTENSION_LIST_EXAMPLES[0]
    exts = syntax.parse_extensions(text, strict=False)
    assert exts[0].properties == (("propName1", "propValue2"), ("propName2", "Hello % there!"))
    assert exts[2] == Extension("batch-ack", (("max-count", "100"),))              # erratum 3
    assert syntax.parse_extensions("json;xml;protobuf;") == tuple(map(Extension, ("json", "xml", "protobuf")))
    with pytest.raises(Exception) as info:
        syntax.parse_extensions("Json")                                             # not a FIELD
    assert info.value.category == Category.BAD_VALUE
    assert syntax.parse_extensions(syntax.format_extensions(exts), strict=False) == exts


@pytest.mark.parametrize("frame", [
    Command("subscribe", (("destination", "topic/a;b,c=d%"),)),
    Command("x-y"), ExtensionFrame(3, b"\x00\x04"), Error("bad things: ünïcode"),
    Message(65535, "topic/domain-events", b"x" * 300, (("first-name", "Tjonas"), ("n", "N-1"))),
    Message(1, "q", b"", large=True)])
def test_round_trip(frame):
    wire = codec.encode(frame)
    assert three(wire) == ([frame], None)


def test_large_payload_and_continued():
    m = Message(9, "q", bytes(range(256)) * 9000)                   # > 1 MiB: two pieces
    wire = codec.encode(m)
    assert wire[0] == 0x18                                            # CONTINUED | LARGE_PAYLOAD
    frames, err = three(wire)
    assert err is None and frames == [m] and frames[0].pieces == 3
    small = codec.encode(Message(1, "q", b"abc", large=True))
    assert small[0] == 0x08 and small[-7:-3] == b"\x00\x00\x00\x03"


@pytest.mark.parametrize("data,category,offset", [
    (b"\x20\x00", Category.UNKNOWN_TYPE, 0),
    (b"\x03\x00", Category.BAD_VALUE, 0),
    (b"\x11\x01a", Category.BAD_VALUE, 0),                           # CONTINUED on a COMMAND
    (b"\x0c\xff\xff\xff\xff", Category.LENGTH_TOO_LARGE, 1),
    (b"\x01\x03A;b", Category.BAD_VALUE, 2),                          # not a FIELD
    (b"\x01\x0fsub;destination", Category.BAD_VALUE, 6),               # no '='
    (b"\x01\x05a;b=%", Category.BAD_ENCODING, 6),
    (b"\x04\x01\xff", Category.BAD_ENCODING, 2),
    (b"\x00\x00\x01\x00\x00\x02ab\x00", Category.BAD_VALUE, 0),       # property without ':'
    (b"\x00\x00\x01\x01\xff\x00\x00\x00", Category.BAD_ENCODING, 4),  # destination not UTF-8
    (b"\x01\x05ab", Category.TRUNCATED, 0),
    (b"\x10\x00\x01\x00\x00\x00\x01a", Category.TRUNCATED, 8),        # CONTINUED, no last piece
    (b"\x10\x00\x01\x00\x00\x00\x01a\x00\x00\x02\x00\x00\x00\x01b", Category.BAD_VALUE, 8),
])
def test_errors(data, category, offset):
    frames, err = three(data)
    assert err == (category, offset)


def test_field_errors_do_not_break_the_stream():
    decoder = codec.make_decoder()
    good = codec.encode(Command("x"))
    decoder.receive(b"\x01\x01X" + good)
    with pytest.raises(Exception) as info:
        decoder.next_frame()
    assert info.value.category == Category.BAD_VALUE
    assert decoder.next_frame() == Command("x")


def test_limits_before_buffering():
    decoder = codec.make_decoder(limits=codec.MM2Limits(max_frame_size=100, max_message_size=150))
    with pytest.raises(Exception) as info:
        decoder.feed(b"\x04\x65")                                     # 101 > 100: no wait for the body
    assert info.value.category == Category.LENGTH_TOO_LARGE
    decoder = codec.make_decoder(limits=codec.MM2Limits(max_frame_size=100, max_message_size=150))
    wire = codec.encode_message(Message(1, "q", b"z" * 200), piece_size=80)
    with pytest.raises(Exception) as info:
        decoder.feed(wire)
    assert info.value.category == Category.LENGTH_TOO_LARGE


@pytest.mark.parametrize("bad", [0, 1, 2])
def test_unreadable_continued_piece_breaks_the_stream(bad):
    # Found by wirecheck/fuzz/fuzz_mm2_decoder.py (wirecheck/fuzz/crashers/micromessage2/continued-piece-unreadable-
    # properties): a CONTINUED piece whose properties were not UTF-8 raised a recoverable error,
    # and the message was then reassembled without that piece. "MESSAGE": the pieces make one
    # payload, so a piece that cannot be read breaks the stream.
    wire = bytearray(codec.encode_message(Message(1, "q", b"AABBCC", (("n", "N1"),)), piece_size=2))
    size = len(wire) // 3
    wire[bad * size + 9] = 0xD0                                        # "n:N1;" -> "n:\xd01;"
    data = bytes(wire) + codec.encode(Command("x"))
    assert three(data) == ([], (Category.BAD_ENCODING, bad * size + 9))
    decoder = codec.make_decoder()
    decoder.receive(data)
    with pytest.raises(FrameError) as first:
        decoder.next_frame()
    with pytest.raises(FrameError) as again:                           # sticky: no message, no x
        decoder.next_frame()
    assert again.value is first.value


def test_long_error_during_the_handshake():
    # Found by wirecheck/fuzz/fuzz_mm2_session.py (wirecheck/fuzz/crashers/micromessage2-session/long-refusal-text):
    # an ERROR text above 255 bytes is written with LARGE_PAYLOAD (flags 12), and in the
    # handshake phase only flags 4 was read as an ERROR: the client read the refusal as a
    # handshake.
    wire = codec.encode(Error("x" * 300))
    assert wire[0] == 0x0C
    assert three(wire, origin="server") == ([Error("x" * 300)], None)
    assert three(wire + wire, origin="client") == ([Error("x" * 300)] * 2, None)
