"""Hypothesis strategies for Micromessage2 (micromessage2.md "Handshake", "Frames", "MESSAGE",
"COMMAND", "EXTENSION", "FILTER_VALUE").

Valid input: :func:`extensions` / :func:`handshakes` (FIELD names, properties with values
that need URL-encoding), :func:`messages` (sequence numbers over the whole u16 range,
destinations, FILTER_VALUE properties, payloads around the 255-byte LARGE_PAYLOAD edge),
:func:`commands`, :func:`extension_frames`, :func:`errors`, :func:`frames` (any of those four),
:func:`valid_streams` + :func:`stream_bytes`. Near-valid invalid input, drawn as ``(bytes,
expected Category)``: :func:`invalid_frames` (unknown flag bits, two type bits, CONTINUED on a
non-MESSAGE frame, a length over the limit, a command name that is not a FIELD, bad UTF-8,
bad percent-escapes, a property without ``:``). :func:`filter_cases` draws a filter and
properties for the filter-evaluation property, :func:`sequences` sequence numbers. At the
end, the document's examples and SPEC_NOTES' vectors as bytes and text (``SHARP_PLAIN``,
``DOCUMENT_OFFER``, ``REAL_SERVER_REPLY``, ...), shared by the codec tests and the fuzz corpora.

Strategies only: the properties are in ``tests/reference_impl/micromessage2/test_mm2_properties.py``.
"""
from __future__ import annotations

import struct

from hypothesis import strategies as st

from wirecheck.reference_impl.core.errors import Category
from wirecheck.reference_impl.micromessage2 import codec, filters
from wirecheck.reference_impl.micromessage2.codec import Command, Error, ExtensionFrame, Handshake, Message
from wirecheck.reference_impl.micromessage2.constants import OFFICIAL_EXTENSIONS, FrameFlags as F
from wirecheck.reference_impl.micromessage2.syntax import Extension

from .reads import chunkings  # noqa: F401  (re-exported: the properties draw reads from here)

#: FIELD: "7-bit lower case ASCII. letters, digits and hyphen".
field_names = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
#: Any text a URL-encoded value may carry.
values = st.text(st.characters(codec="utf-8"), max_size=12)
sequences = st.integers(1, 0xFFFF)


@st.composite
def extensions(draw, names=None):
    name = draw(st.sampled_from(OFFICIAL_EXTENSIONS) | field_names) if names is None else draw(names)
    keys = draw(st.lists(field_names, max_size=3, unique=True))
    return Extension(name, tuple((k, draw(values)) for k in keys))


def extension_lists(max_size: int = 4):
    return st.lists(extensions(), max_size=max_size, unique_by=lambda e: e.name).map(tuple)


#: Major versions a handshake can carry: in the handshake phase a first byte of 4 or 12 is an
#: ERROR frame (codec.HANDSHAKE_ERROR_FLAGS), not a handshake of major version 4 or 12.
majors = st.sampled_from([m for m in range(256) if m not in codec.HANDSHAKE_ERROR_FLAGS])


@st.composite
def handshakes(draw):
    return Handshake(draw(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20)),
                     draw(extension_lists()), draw(extension_lists()),
                     draw(majors), draw(st.integers(0, 255)), draw(st.integers(0, 255)))


@st.composite
def property_values(draw):
    kind = draw(st.sampled_from("NDT"))
    if kind == "N":
        return filters.format_value(draw(st.integers(-2**70, 2**70)))
    if kind == "D":
        return filters.date_value(draw(st.integers(0, 2**33)))
    return filters.format_value(draw(values))


@st.composite
def messages(draw):
    props = draw(st.lists(st.tuples(field_names, property_values()), max_size=3,
                          unique_by=lambda kv: kv[0]))
    size = draw(st.sampled_from((0, 1, 254, 255, 256, 300)) | st.integers(0, 40))
    payload = draw(st.binary(min_size=size, max_size=size))
    dest = draw(st.text(st.characters(codec="utf-8"), max_size=20).filter(lambda d: len(d.encode()) <= 255))
    return Message(draw(sequences), dest, payload, tuple(props), large=draw(st.booleans()))


@st.composite
def commands(draw):
    args = draw(st.lists(st.tuples(field_names, values), max_size=3))
    return Command(draw(field_names), tuple(args), large=draw(st.booleans()))


@st.composite
def extension_frames(draw):
    return ExtensionFrame(draw(st.integers(0, 255)), draw(st.binary(max_size=300)), large=draw(st.booleans()))


@st.composite
def errors(draw):
    return Error(draw(st.text(st.characters(codec="utf-8"), max_size=40)), large=draw(st.booleans()))


def frames():
    return st.one_of(messages(), commands(), extension_frames(), errors())


def valid_streams(min_size: int = 0, max_size: int = 6):
    return st.lists(frames(), min_size=min_size, max_size=max_size)


def stream_bytes(frame_list) -> bytes:
    return b"".join(codec.encode(f) for f in frame_list)


_U32 = struct.Struct(">I")


@st.composite
def invalid_frames(draw):
    case = draw(st.sampled_from(("unknown-bit", "two-types", "continued-command", "too-large",
                                 "bad-command-name", "bad-utf8", "bad-escape", "bad-property")))
    if case == "unknown-bit":
        flags = draw(st.sampled_from((32, 64, 128))) | draw(st.integers(0, 31))
        return bytes((flags,)) + draw(st.binary(max_size=8)), Category.UNKNOWN_TYPE
    if case == "two-types":
        flags = draw(st.sampled_from((3, 5, 6, 7))) | draw(st.sampled_from((0, 8, 16)))
        return bytes((flags,)) + draw(st.binary(max_size=8)), Category.BAD_VALUE
    if case == "continued-command":
        kind = draw(st.sampled_from((F.COMMAND, F.EXTENSION, F.ERROR)))
        return bytes((kind | F.CONTINUED, 1, 0x61)), Category.BAD_VALUE
    if case == "too-large":
        size = draw(st.integers(codec.MM2Limits().max_frame_size + 1, 2**32 - 1))
        kind = draw(st.sampled_from((F.COMMAND, F.ERROR)))
        return bytes((kind | F.LARGE_PAYLOAD,)) + _U32.pack(size), Category.LENGTH_TOO_LARGE
    if case == "bad-command-name":
        name = draw(st.sampled_from(("Subscribe", "SUB", "a_b", "x y", "")))
        text = name.encode() + b";a=1"
        return bytes((F.COMMAND, len(text))) + text, Category.BAD_VALUE
    if case == "bad-utf8":
        raw = draw(st.sampled_from((b"\xff", b"ok\xc3", b"\xed\xa0\x80")))
        return bytes((F.ERROR, len(raw))) + raw, Category.BAD_ENCODING
    if case == "bad-escape":
        text = b"subscribe;destination=" + draw(st.sampled_from((b"%", b"%4", b"%zz", b"a%g1")))
        return bytes((F.COMMAND, len(text))) + text, Category.BAD_ENCODING
    props = draw(st.sampled_from((b"novalue;", b":v;", b"a:1;b")))
    return (bytes((0,)) + b"\x00\x01\x00" + struct.pack(">H", len(props)) + props + b"\x00"), Category.BAD_VALUE


@st.composite
def filter_cases(draw):
    """(filter text, properties) over a few names so conditions often hit a property."""
    names = st.sampled_from(("a", "b", "c"))
    ops_num = st.sampled_from(sorted(filters.NUMERIC_OPERATORS))
    ops_text = st.sampled_from(sorted(filters.TEXT_OPERATORS))
    conditions = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            conditions.append(f"{draw(names)}{draw(ops_num)}N{draw(st.integers(-5, 5))}")
        else:
            conditions.append(f"{draw(names)}{draw(ops_text)}T{draw(st.text('xyz', max_size=3))}")
    props = draw(st.lists(st.tuples(names, st.one_of(
        st.integers(-5, 5).map(lambda n: f"N{n}"), st.text("xyz", max_size=4).map(lambda t: f"T{t}"))),
        max_size=3, unique_by=lambda kv: kv[0]))
    return ";".join(conditions), tuple(props)


# --- the document's examples and SPEC_NOTES' vectors (facts the codec tests and the fuzz corpora
# share: written once, here) --------------------------------------------------------------------

#: SPEC_NOTES "Micromessage2", vectors from the real implementation's tests: a plain MESSAGE
#: (sequence 2, no destination, no properties) and one to "MQ" with an untyped property.
SHARP_PLAIN = bytes.fromhex("00 00 02 00 00 00 06") + b"mother"
SHARP_WITH_PROPERTIES = bytes.fromhex("00 00 02 02 4D 51 00 10") + b"last_name:kalle;" + b"\x06mother"

#: "Handshake", the three examples with erratum 1 applied (RequiredLen of "json;dotnet" is 11):
#: the client's offer, the server's reply, the client's final handshake (ids json 1, dotnet 2,
#: batch-ack 3).
DOCUMENT_OFFER = bytes([1, 0, 0, 4]) + b"hulk" + bytes([0, 11]) + b"json;dotnet" + bytes([0, 0])
DOCUMENT_REPLY = bytes([1, 0, 0, 5]) + b"srver" + bytes([0, 0, 0, 9]) + b"batch-ack"
DOCUMENT_FINAL = (bytes([1, 0, 0, 4]) + b"hulk" + bytes([0, 11]) + b"json;dotnet"
                  + bytes([0, 9]) + b"batch-ack")
#: The offer as printed (RequiredLen 10): read so, the handshake never completes.
DOCUMENT_OFFER_MISPRINTED = bytes([1, 0, 0, 4]) + b"hulk" + bytes([0, 10]) + b"json;dotnet" + bytes([0, 0])

#: SPEC_NOTES, observed on loopback: the real client's offer (1.1, requires "ack"; it repeats it
#: as its final handshake), the real server's reply, and its delayed ack of message 1.
REAL_CLIENT_OFFER = bytes([1, 1, 0, 4]) + b"hulk" + bytes([0, 3]) + b"ack" + bytes([0, 0])
REAL_SERVER_REPLY = (bytes([1, 1, 0, 15]) + b"FastSocket v1.1" + bytes([0, 3]) + b"ack"
                     + bytes([0, 6]) + b"dotnet")
REAL_SERVER_ACK = bytes.fromhex("02 01 02 00 01")
#: SPEC_NOTES: what the real server offers a client that names no extension.
REAL_SERVER_SUGGESTS = "ack:MessagesPerAck=10,AckExpireTime=500;dotnet"

#: "batch-ack", the frame example with erratum 2 (flag 2, not 4; length 2): acks 1 to 4 on
#: extension id 2.
BATCH_ACK_EXAMPLE = bytes.fromhex("02 02 02 00 04")
#: ".NET", the type frame example's type name (erratum 4: sent as an EXTENSION frame with the
#: dotnet extension's id, not with flag 4 and no id).
DOTNET_TYPE_EXAMPLE = "OneTrueError.Contracts.Reports, OneTrueError.Client"
#: An ERROR frame in place of the server's handshake (the peer refuses).
HANDSHAKE_ERROR = bytes([4, 5]) + b"nope!"

#: "Handshake", the extension list examples (the first one's insult replaced by "there"), and
#: the ack count's spellings of erratum 3.
EXTENSION_LIST_EXAMPLES = (
    "extensionName1:propName1=propValue2,propName2=Hello%20%25%20there!;json;batch-ack:max-count:100",
    "json;xml;protobuf",
    "json;xml;protobuf;",
    "batch-ack:max-count=10;json;microauth",
    "batch-ack:count=10;json;dotnet",
    "batch-ack:batch-max=10",
    "batch-ack",
)
#: "FILTER_VALUE", the table's property values (number, date, text).
FILTER_VALUE_EXAMPLES = ("N1", "D1413198000.0", "THello%20%22world%22")
