"""The SignalR codec on the document's examples (signalr-hub-protocol.md, ``draft`` profile), on
the shapes today's clients send (SPEC_NOTES.md "SignalR", signalr-real-clients.md; ``v1``), on
each protocol error the document lists (each with its own category), and on the framing's
edges (VarInt width, limits checked before buffering, split reads). Every decode goes through
:func:`tests.helpers.decode_three_ways`: whole, one byte at a time and in random chunks agree."""
from __future__ import annotations

import msgpack
import pytest

from wirecheck.reference_impl.core.errors import Category, FrameError
from wirecheck.reference_impl.signalr import codec
from wirecheck.reference_impl.signalr.codec import SignalRLimits
from wirecheck.reference_impl.signalr.framing import (BINARY, RecordReader, decode_text_binary,
                                            encode_text_binary, encode_varint, frame_binary)
from wirecheck.reference_impl.signalr.messages import (Ack, CancelInvocation, Close, Completion,
                                             HandshakeRequest, HandshakeResponse, Invocation,
                                             Ping, Sequence, StreamCompletion, StreamInvocation,
                                             StreamItem)
from tests.helpers import decode_three_ways


def decode(data: bytes, **options):
    """(messages, (category, offset) or None), the same whatever the reads."""
    limits = options.pop("limits", None)
    return decode_three_ways(lambda: codec.Decoder(limits, **options), data)


def hub(data: bytes, protocol: str = "messagepack", profile: str = "v1", **options):
    return decode(data, protocol=protocol, profile=profile, handshake=False, **options)


def ok(data: bytes, **options) -> list:
    messages, error = hub(data, **options)
    assert error is None, error
    return messages


def refused(data: bytes, **options):
    messages, error = hub(data, **options)
    assert error is not None, messages
    return error[0]


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace("0x", "").replace(",", " "))


# --- the document's MessagePack examples (draft) -------------------------------------------------

DOC_EXAMPLES = [
    ("invocation", "0x95 0x01 0xa3 0x78 0x79 0x7a 0xc3 0xa6 0x6d 0x65 0x74 0x68 0x6f 0x64 0x91 0x2a",
     Invocation("method", [42], "xyz", nonblocking=True)),
    ("stream-item", "0x93 0x02 0xa3 0x78 0x79 0x7a 0x2a", StreamItem("xyz", 42)),
    ("completion-error", "0x94 0x03 0xa3 0x78 0x79 0x7a 0x01 0xa5 0x45 0x72 0x72 0x6f 0x72",
     Completion.with_error("xyz", "Error")),
    ("completion-void", "0x93 0x03 0xa3 0x78 0x79 0x7a 0x02", Completion("xyz")),
    ("completion-non-void", "0x94 0x03 0xa3 0x78 0x79 0x7a 0x03 0x2a", Completion.with_result("xyz", 42)),
    ("stream-completion", "0x92 0x04 0xa3 0x78 0x79 0x7a", StreamCompletion("xyz")),
    ("stream-completion-error", "0x93 0x04 0xa3 0x78 0x79 0x7a 0xa5 0x45 0x72 0x72 0x6f 0x72",
     StreamCompletion("xyz", "Error")),
    ("cancel", "0x92 0x05 0xa3 0x78 0x79 0x7a", CancelInvocation("xyz")),
]


@pytest.mark.parametrize("name, hexes, expected", DOC_EXAMPLES, ids=[e[0] for e in DOC_EXAMPLES])
def test_document_msgpack_examples(name, hexes, expected):
    body = h(hexes)
    assert codec.parse_record(body, "messagepack", "draft") == expected
    assert ok(frame_binary(body), profile="draft") == [expected]
    # The codec writes the same bytes back (the document's examples are canonical).
    assert codec.encode(expected, "messagepack", "draft") == frame_binary(body)


def test_document_examples_in_one_stream_after_a_draft_handshake():
    wire = b'{"protocol": "messagepack"}\x1e' + b"".join(frame_binary(h(x)) for _, x, _ in DOC_EXAMPLES)
    messages, error = decode(wire, profile="draft", origin="client")
    assert error is None
    assert messages == [HandshakeRequest("messagepack", None), *(e for _, _, e in DOC_EXAMPLES)]


DOC_JSON = [
    (b'{\n "type": 1,\n "invocationId": "123",\n "target": "Send",\n "arguments": [\n 42,\n "Test Message"\n ]\n}',
     Invocation("Send", [42, "Test Message"], "123")),
    (b'{"type": 1, "invocationId": "123", "nonblocking": true, "target": "Send", "arguments": [42, "Test Message"]}',
     Invocation("Send", [42, "Test Message"], "123", nonblocking=True)),
    (b'{"type": 2, "invocationId": "123", "item": 42}', StreamItem("123", 42)),
    (b'{"type": 3, "invocationId": "123"}', Completion("123")),
    (b'{"type": 3, "invocationId": "123", "result": 42}', Completion.with_result("123", 42)),
    (b'{"type": 3, "invocationId": "123", "error": "It didn\'t work!"}',
     Completion.with_error("123", "It didn't work!")),
    (b'{"type": 4, "invocationId": "123"}', StreamCompletion("123")),
    (b'{"type": 4, "invocationId": "123", "error": "It didn\'t work!"}',
     StreamCompletion("123", "It didn't work!")),
    (b'{"type": 5, "invocationId": "123"}', CancelInvocation("123")),
]


@pytest.mark.parametrize("text, expected", DOC_JSON, ids=[str(i) for i in range(len(DOC_JSON))])
def test_document_json_examples(text, expected):
    assert ok(text + b"\x1e", protocol="json", profile="draft") == [expected]


def test_document_json_result_and_error_is_conflicting():
    text = b'{"type": 3, "invocationId": "123", "result": 42, "error": "It didn\'t work!"}\x1e'
    assert refused(text, protocol="json", profile="draft") is Category.CONFLICTING_FIELDS
    assert refused(text, protocol="json") is Category.CONFLICTING_FIELDS


def test_document_negotiation_example():
    assert decode(b'{\n    "protocol": "messagepack"\n}\x1e', profile="draft") == (
        [HandshakeRequest("messagepack", None)], None)


# --- "Binary encoding": VarInt and framing ---------------------------------------------------------

@pytest.mark.parametrize("prefix, value", [(b"\x35", 53), (b"\x80\x29", 5248),
                                           (b"\xff\xff\xff\xff\x07", 0x7FFFFFFF)])
def test_document_varint_examples(prefix, value):
    # The document prints 0x80 0x25 for 5248; its bits (%00101001) and SPEC_NOTES say 0x80 0x29.
    assert encode_varint(value) == prefix
    reader = RecordReader(mode=BINARY)
    reader.feed(prefix + b"\x01")
    assert reader.next_record() is None and len(reader) == len(prefix) + 1


def test_document_hello_world_framing():
    wire = h("0x0B 0x68 0x65 0x6C 0x6C 0x6F 0x0A 0x77 0x6F 0x72 0x6C 0x64 0x02 0x01 0x02")
    # The text says "Hello\nWorld", its bytes spell 0x68 ('h') and 0x77 ('w'): the bytes rule.
    assert frame_binary(b"hello\nworld") + frame_binary(b"\x01\x02") == wire
    for cut in range(len(wire) + 1):                  # every split of the two records
        reader = RecordReader(mode=BINARY)
        got = []
        for piece in (wire[:cut], wire[cut:]):
            reader.feed(piece)
            while (record := reader.next_record()) is not None:
                got.append(record)
        assert got == [(0, b"hello\nworld"), (12, b"\x01\x02")]


def test_document_base64_text_example():
    payload = h("0x10 0x95 0x01 0xa1 0x31 0xc3 0xa8 0x4d 0x79 0x4d 0x65 0x74 0x68 0x6f 0x64 0x91 0x2a")
    assert encode_text_binary(payload) == "24:EJUBoTHDqE15TWV0aG9kkSo=;"
    assert decode_text_binary("24:EJUBoTHDqE15TWV0aG9kkSo=;") == payload
    assert ok(payload, profile="draft") == [Invocation("MyMethod", [42], "1", nonblocking=True)]


@pytest.mark.parametrize("text, category", [("24:EJUBoTHDqE15TWV0aG9kkSo=", Category.TRUNCATED),
                                            ("x:AA==;", Category.BAD_ENCODING),
                                            ("4:A!==;", Category.BAD_ENCODING)])
def test_base64_text_errors(text, category):
    with pytest.raises(FrameError) as err:
        decode_text_binary(text)
    assert err.value.category is category


def test_varint_longer_than_five_bytes():
    assert refused(b"\x80\x80\x80\x80\x80\x01") is Category.LENGTH_TOO_LARGE


def test_varint_fifth_byte_above_seven():
    assert refused(b"\xff\xff\xff\xff\x08") is Category.LENGTH_TOO_LARGE
    assert refused(b"\x80\x80\x80\x80\x7f") is Category.LENGTH_TOO_LARGE


def test_length_above_the_limit_refused_before_buffering():
    limits = SignalRLimits(max_frame_size=100)
    decoder = codec.Decoder(limits, protocol="messagepack", handshake=False)
    with pytest.raises(FrameError) as err:
        decoder.feed(b"\x65")                            # 101: no body byte is needed to say no
    assert err.value.category is Category.LENGTH_TOO_LARGE and err.value.offset == 0
    assert hub(b"\x65" + bytes(101), limits=limits)[1] == (Category.LENGTH_TOO_LARGE, 0)
    assert hub(frame_binary(msgpack.packb([6]) + bytes(98)), limits=limits)[1][0] is Category.TRAILING_BYTES


def test_non_minimal_varint_only_with_strict():
    wire = b"\x82\x00\x91\x06"                          # 2 in two bytes, then [6] (Ping)
    assert ok(wire) == [Ping()]
    strict = SignalRLimits(strict_varint=True)
    assert hub(wire, limits=strict)[1] == (Category.BAD_ENCODING, 0)
    assert ok(b"\x02\x91\x06", limits=strict) == [Ping()]


def test_varint_split_across_reads():
    body = codec.msgpack_protocol.encode_body(StreamItem("1", bytes(300)))
    wire = frame_binary(body)
    assert wire[:2] == encode_varint(len(body)) and len(encode_varint(len(body))) == 2
    decoder = codec.Decoder(protocol="messagepack", handshake=False)
    assert decoder.feed(wire[:1]) == [] and decoder.buffered == 1
    assert decoder.feed(wire[1:2]) == [] and decoder.buffered == 2
    assert decoder.feed(wire[2:]) == [StreamItem("1", bytes(300))]
    assert ok(wire) == [StreamItem("1", bytes(300))]


def test_record_separator_arriving_alone():
    decoder = codec.Decoder(protocol="json", handshake=False)
    assert decoder.feed(b'{"type":6}') == []
    assert decoder.feed(b"\x1e") == [Ping()]
    # An empty record (0x1E alone) is not JSON, and not sticky.
    with pytest.raises(FrameError) as err:
        decoder.feed(b"\x1e")
    assert err.value.category is Category.BAD_ENCODING and err.value.offset == 11
    assert decoder.feed(b'{"type":6}\x1e') == [Ping()]
    assert refused(b"\x1e", protocol="json") is Category.BAD_ENCODING
    assert decode(b'{"protocol":"json","version":1}' + b"\x1e")[0] == [HandshakeRequest("json", 1)]


def test_json_record_longer_than_the_limit_fails_before_its_separator():
    limits = SignalRLimits(max_frame_size=64)
    decoder = codec.Decoder(limits, protocol="json", handshake=False)
    fed = 0
    with pytest.raises(FrameError) as err:
        for _ in range(10_000):                          # bounded: fails at the 65th byte
            decoder.feed(b" ")
            fed += 1
    assert fed == 64 and err.value.category is Category.LENGTH_TOO_LARGE
    assert hub(b'{"type":6}' + b" " * 60 + b"\x1e", protocol="json", limits=limits)[1] == (
        Category.LENGTH_TOO_LARGE, 0)
    assert ok(b'{"type":6}' + b" " * 54 + b"\x1e", protocol="json", limits=limits) == [Ping()]


def test_truncated_stream_at_eof():
    assert hub(b"\x05\x95\x01")[1] == (Category.TRUNCATED, 0)
    assert hub(b'{"type":6}\x1e{"ty', protocol="json")[1] == (Category.TRUNCATED, 11)
    assert hub(b"\x80")[1] == (Category.TRUNCATED, 0)


# --- what today's clients send (v1) -----------------------------------------------------------------

HANDSHAKES = [
    (b'{"protocol":"json","version":1}\x1e', "json"),                        # JS
    (b'{"protocol":"messagepack","version":1}\x1e', "messagepack"),          # JS, pysignalr
    (b'{"protocol": "json", "version": 1}\x1e', "json"),                     # pysignalr, signalrcore
    (b'{"protocol": "messagepack", "version": 1}\x1e', "messagepack"),       # signalrcore
]


@pytest.mark.parametrize("wire, protocol", HANDSHAKES, ids=[str(len(w)) + p for w, p in HANDSHAKES])
def test_client_handshakes(wire, protocol):
    assert len(wire) in (32, 35, 39, 42)
    for origin in ("client", None):
        assert decode(wire, origin=origin) == ([HandshakeRequest(protocol, 1)], None)
    ping = b'{"type":6}\x1e' if protocol == "json" else h("02 91 06")
    assert decode(wire + ping) == ([HandshakeRequest(protocol, 1), Ping()], None)


def test_server_handshake_responses():
    assert decode(b"{}\x1e", origin="server") == ([HandshakeResponse()], None)
    assert decode(b'{"error":"Requested protocol \'x\' is not available."}\x1e') == (
        [HandshakeResponse("Requested protocol 'x' is not available.")], None)
    # The server closes after an error: bytes after it are not messages.
    assert decode(b'{"error":"no"}\x1e{"type":6}\x1e') == (
        [HandshakeResponse("no")], (Category.TRAILING_BYTES, 15))
    assert decode(b"{}\x1e" + h("02 91 06")) == ([HandshakeResponse(), Ping()], None)
    assert decode(b'{}\x1e{"type":6}\x1e') == ([HandshakeResponse(), Ping()], None)


def test_handshake_errors():
    assert decode(b'{"version":1}\x1e', origin="client")[1] == (Category.MISSING_FIELD, 0)
    assert decode(b'{"protocol":"json"}\x1e', origin="client")[1] == (Category.MISSING_FIELD, 0)
    assert decode(b'{"protocol":1,"version":1}\x1e', origin="client")[1] == (Category.BAD_VALUE, 0)
    assert decode(b'{"protocol":"json","version":1,"x":2}\x1e', origin="client", profile="draft")[1] == (
        Category.UNKNOWN_FIELD, 0)
    assert decode(b'{"protocol":"json"\x1e')[1][0] is Category.BAD_ENCODING
    assert decode(b'\xff{}\x1e', origin="client")[1][0] is Category.BAD_ENCODING


def test_js_ping_and_close():
    assert ok(h("02 91 06")) == [Ping()]
    assert ok(h("03 92 07 c0")) == [Close()]
    assert ok(b'{"type":6}\x1e{"type":7}\x1e', protocol="json") == [Ping(), Close()]


def test_js_json_messages():
    wire = (b'{"target":"Echo","arguments":["\xe2\x9c\x93"],"invocationId":"0","type":1}\x1e'
            b'{"target":"Sum","arguments":[],"invocationId":"4","streamIds":["3"],"type":1}\x1e'
            b'{"type":2,"invocationId":"3","item":1}\x1e'
            b'{"type":3,"invocationId":"3"}\x1e')
    assert ok(wire, protocol="json") == [Invocation("Echo", ["\u2713"], "0"),
                                         Invocation("Sum", [], "4", stream_ids=["3"]),
                                         StreamItem("3", 1), Completion("3")]


def test_js_msgpack_messages():
    echo = msgpack.packb([1, {}, "0", "Echo", ["hi"]])
    assert len(msgpack.unpackb(echo)) == 5
    assert ok(frame_binary(echo)) == [Invocation("Echo", ["hi"], "0")]
    fire = msgpack.packb([1, {}, None, "Notify", [1]])
    assert fire[3] == 0xC0 and ok(frame_binary(fire)) == [Invocation("Notify", [1])]
    stream = msgpack.packb([4, {}, "2", "Counter", [5, 10]])
    assert ok(frame_binary(stream)) == [StreamInvocation("2", "Counter", [5, 10])]
    assert ok(frame_binary(msgpack.packb([2, {}, "3", 1]))) == [StreamItem("3", 1)]
    assert ok(frame_binary(msgpack.packb([3, {}, "3", 2]))) == [Completion("3")]
    client_stream = msgpack.packb([1, {}, "4", "Sum", [], ["3"]])
    assert ok(frame_binary(client_stream)) == [Invocation("Sum", [], "4", stream_ids=["3"])]


def test_pysignalr_messages():
    uuid = "5b2f7f0e-8d4c-4c1a-9d55-0b8f3a0c2f11"
    text = (b'{"target": "Echo", "arguments": ["\\u2713"], "type": 1, "invocationId": "'
            + uuid.encode() + b'", "headers": {}}\x1e')
    assert ok(text, protocol="json") == [Invocation("Echo", ["\u2713"], uuid)]
    six = msgpack.packb([1, {}, uuid, "Echo", ["x"], []])
    assert six.endswith(b"\x90") and len(msgpack.unpackb(six)) == 6
    assert ok(frame_binary(six)) == [Invocation("Echo", ["x"], uuid, stream_ids=[])]
    no_id = b'{"target": "Sum", "arguments": [], "type": 1, "streamIds": ["s"], "headers": {}}\x1e'
    assert ok(no_id, protocol="json") == [Invocation("Sum", [], None, stream_ids=["s"])]
    assert ok(frame_binary(msgpack.packb([3, {}, uuid, 2]))) == [Completion(uuid)]


def test_signalrcore_messages():
    hdrs = {"Content-Type": "application/json"}
    text = (b'{"type": 1, "headers": {"Content-Type": "application/json"}, "target": "Echo", '
            b'"arguments": ["x"], "invocationId": "u1"}\x1e'
            b'{"type": 4, "headers": {}, "target": "Counter", "arguments": [5, 10], '
            b'"invocationId": "u2", "streamIds": []}\x1e')
    assert ok(text, protocol="json") == [Invocation("Echo", ["x"], "u1", hdrs),
                                         StreamInvocation("u2", "Counter", [5, 10], stream_ids=[])]
    five = msgpack.packb([1, hdrs, "u1", "Echo", ["x"]])
    assert five[2:4] == b"\x81\xac"                      # a map of one, "Content-Type"
    assert ok(frame_binary(five)) == [Invocation("Echo", ["x"], "u1", hdrs)]


def test_signalrcore_malformed_client_stream_is_rejected():
    # The invocationId slot is missing: [] sits where the target string belongs.
    invocation = frame_binary(msgpack.packb([1, {}, "Sum", [], ["s1"]]))
    assert refused(invocation) is Category.BAD_VALUE
    # The stream end has no ResultKind.
    end = frame_binary(msgpack.packb([3, {}, "s1"]))
    assert refused(end) is Category.MISSING_FIELD
    wire = b'{"protocol": "messagepack", "version": 1}\x1e' + invocation
    assert decode(wire) == ([HandshakeRequest("messagepack", 1)], (Category.BAD_VALUE, 42))


def test_v1_stateful_reconnect_and_close():
    assert ok(b'{"type":8,"sequenceId":5}\x1e{"type":9,"sequenceId":1}\x1e'
              b'{"type":7,"error":"bye","allowReconnect":true}\x1e', protocol="json") == [
        Ack(5), Sequence(1), Close("bye", True)]
    assert ok(frame_binary(msgpack.packb([7, "bye", False]))) == [Close("bye", False)]
    assert ok(frame_binary(msgpack.packb([8, 2 ** 40]))) == [Ack(2 ** 40)]


# --- each protocol error its own category ------------------------------------------------------------

ERRORS = [
    # missing required field
    ("json", "v1", b'{"type":1,"arguments":[]}', Category.MISSING_FIELD),
    ("json", "v1", b'{"target":"x","arguments":[]}', Category.MISSING_FIELD),
    ("json", "draft", b'{"type":1,"target":"x","arguments":[]}', Category.MISSING_FIELD),
    ("messagepack", "v1", msgpack.packb([2, {}, "1"]), Category.MISSING_FIELD),
    ("messagepack", "draft", msgpack.packb([3, "1", 3]), Category.MISSING_FIELD),
    ("messagepack", "v1", msgpack.packb([]), Category.MISSING_FIELD),
    # unknown field (draft only; v1 ignores them, as today's servers do)
    ("json", "draft", b'{"type":5,"invocationId":"1","headers":{}}', Category.UNKNOWN_FIELD),
    ("messagepack", "draft", msgpack.packb([5, "1", None]), Category.UNKNOWN_FIELD),
    ("messagepack", "draft", msgpack.packb([3, "1", 2, 42]), Category.UNKNOWN_FIELD),
    # both result and error
    ("json", "v1", b'{"type":3,"invocationId":"1","result":null,"error":"e"}', Category.CONFLICTING_FIELDS),
    ("json", "draft", b'{"type":3,"invocationId":"1","result":1,"error":"e"}', Category.CONFLICTING_FIELDS),
    # unknown type
    ("json", "v1", b'{"type":10}', Category.UNKNOWN_TYPE),
    ("json", "draft", b'{"type":6}', Category.UNKNOWN_TYPE),
    ("messagepack", "v1", msgpack.packb([0, {}, "1"]), Category.UNKNOWN_TYPE),
    ("messagepack", "draft", msgpack.packb([9, 1]), Category.UNKNOWN_TYPE),
    # bad UTF-8 / not JSON / not MessagePack
    ("json", "v1", b'{"type":1,"target":"\xff","arguments":[]}', Category.BAD_ENCODING),
    ("json", "v1", b'{"type":1,', Category.BAD_ENCODING),
    ("json", "v1", b'{"type":2,"invocationId":"1","item":"\\ud800"}', Category.BAD_ENCODING),
    ("messagepack", "v1", b"\x95\x01\x80\xa1\xff\xa1x\x90", Category.BAD_ENCODING),
    ("messagepack", "v1", b"\x92\x02\xc1", Category.BAD_ENCODING),
    # wrong field type
    ("json", "v1", b'{"type":"1"}', Category.BAD_VALUE),
    ("json", "v1", b'{"type":1,"target":5,"arguments":[]}', Category.BAD_VALUE),
    ("json", "v1", b'{"type":1,"target":"x","arguments":[],"headers":{"a":1}}', Category.BAD_VALUE),
    ("json", "v1", b'{"type":8,"sequenceId":1.5}', Category.BAD_VALUE),
    ("json", "v1", b'{"type":2,"invocationId":"1","item":NaN}', Category.BAD_VALUE),
    ("json", "v1", b'{"type":2,"invocationId":"1","item":1e400}', Category.BAD_VALUE),
    ("json", "v1", b"[1, {}]", Category.BAD_VALUE),
    ("json", "draft", b'{"type":1,"invocationId":"1","nonblocking":"yes","target":"x","arguments":[]}',
     Category.BAD_VALUE),
    ("messagepack", "v1", msgpack.packb([3, {}, "1", 4]), Category.BAD_VALUE),
    ("messagepack", "v1", msgpack.packb([5, [], "1"]), Category.BAD_VALUE),
    ("messagepack", "v1", msgpack.packb({"type": 1}), Category.BAD_VALUE),
    ("messagepack", "draft", msgpack.packb([1, "1", 0, "x", []]), Category.BAD_VALUE),
    # framing of the body itself
    ("messagepack", "v1", msgpack.packb([6]) + b"\x00", Category.TRAILING_BYTES),
    ("messagepack", "v1", b"\x95\x01", Category.TRUNCATED),
    ("messagepack", "v1", b"\xa5ab", Category.TRUNCATED),
    ("messagepack", "v1", b"", Category.LENGTH_TOO_SMALL),
]


@pytest.mark.parametrize("protocol, profile, body, category", ERRORS,
                         ids=[f"{e[0]}-{e[1]}-{e[3]}-{i}" for i, e in enumerate(ERRORS)])
def test_each_protocol_error_has_its_category(protocol, profile, body, category):
    with pytest.raises(FrameError) as err:
        codec.parse_record(body, protocol, profile)
    assert err.value.category is category
    record = body + b"\x1e" if protocol == "json" else frame_binary(body)
    good = codec.encode(CancelInvocation("9"), protocol, profile)
    messages, error = hub(good + record + good, protocol=protocol, profile=profile)
    assert messages == [CancelInvocation("9")] and error[0] is category
    assert len(good) <= error[1] < len(good) + len(record)      # in the record (JSON: the byte)


def test_v1_ignores_unknown_fields_and_extra_items():
    assert ok(b'{"type":5,"invocationId":"1","future":true}\x1e', protocol="json") == [CancelInvocation("1")]
    assert ok(frame_binary(msgpack.packb([5, {}, "1", "future"]))) == [CancelInvocation("1")]


# --- encoding ------------------------------------------------------------------------------------------

V1_ONLY = [Ping(), Close("e", True), Ack(1), Sequence(2), StreamInvocation("1", "t", []),
           CancelInvocation("1", {"a": "b"}), Invocation("t", [], None),
           Invocation("t", [], "1", stream_ids=["s"])]
DRAFT_ONLY = [StreamCompletion("1"), Invocation("t", [], "1", nonblocking=True)]


@pytest.mark.parametrize("protocol", ["json", "messagepack"])
def test_encoders_refuse_what_a_profile_cannot_express(protocol):
    for message in V1_ONLY:
        codec.encode(message, protocol, "v1")
        with pytest.raises(ValueError):
            codec.encode(message, protocol, "draft")
    for message in DRAFT_ONLY:
        codec.encode(message, protocol, "draft")
        with pytest.raises(ValueError):
            codec.encode(message, protocol, "v1")
    with pytest.raises(ValueError):
        codec.encode(Completion("1", result=1, error="e", has_result=True), protocol)
    with pytest.raises(ValueError):
        codec.encode(Ping(), "protobuf")


def test_json_refuses_binary_and_non_finite():
    for value in (b"\x00", float("nan"), float("inf")):
        with pytest.raises(ValueError):
            codec.encode(StreamItem("1", value), "json")
    assert ok(codec.encode(StreamItem("1", b"\x00"), "messagepack")) == [StreamItem("1", b"\x00")]


def test_encoded_shapes_match_the_clients():
    assert codec.encode(Ping(), "messagepack") == h("02 91 06")
    assert codec.encode(Close(), "messagepack") == h("03 92 07 c0")
    assert codec.encode(Ping()) == b'{"type":6}\x1e'
    assert codec.encode(HandshakeRequest("json", 1), "messagepack") == b'{"protocol":"json","version":1}\x1e'
    assert codec.encode(HandshakeResponse()) == b"{}\x1e"
    assert codec.encode(Invocation("Echo", [1], "0"), "messagepack") == frame_binary(
        msgpack.packb([1, {}, "0", "Echo", [1]]))


def test_frame_to_dict():
    assert codec.frame_to_dict(Completion("1")) == {"type": "Completion", "invocation_id": "1",
                                                    "error": None, "has_result": False}
    assert codec.frame_to_dict(StreamItem("1", b"\x01"))["item"] == {"hex": "01"}


def test_eof_after_a_framing_error_is_not_truncation():
    decoder = codec.Decoder(protocol="messagepack", handshake=False)
    with pytest.raises(FrameError):
        decoder.feed(b"\x80\x80\x80\x80\x80\x01")
    decoder.eof()                                        # the error is already reported
