"""The two encodings ("JSON Encoding", "MessagePack (MsgPack) encoding", "Binary encoding")."""
import random

import pytest

from wirecheck.reference_impl.signalr.messages import Completion, StreamItem

from .conftest import only, raw_json, raw_msgpack


@pytest.mark.requirement("SIGR-JSON-002")
@only("json")
def test_several_records_in_one_write(sig):
    conn = sig.connect()
    calls = [sig.invocation("Echo", str(n)) for n in range(3)]
    conn.send(b"".join(sig.encode(c) for c in calls))
    for c in calls:
        conn.expect(Completion, invocation_id=c.invocation_id, result=c.arguments[0])


@pytest.mark.requirement("SIGR-JSON-002")
@only("json")
def test_record_split_into_single_bytes(sig):
    conn = sig.connect()
    call = sig.invocation("Echo", "byte by byte")
    conn.send(call, chunks=1)
    conn.expect(Completion, invocation_id=call.invocation_id, result="byte by byte")


@pytest.mark.requirement("SIGR-JSON-002")
@only("json")
def test_record_separator_arriving_alone(sig):
    conn = sig.connect()
    call = sig.invocation("Echo", "separator alone")
    wire = sig.encode(call)
    conn.send(wire, chunks=[len(wire) - 1, 1])
    conn.expect(Completion, invocation_id=call.invocation_id, result="separator alone")


@pytest.mark.requirement("SIGR-JSON-003")
@pytest.mark.parametrize("text", ["✓", "ü日本語", "emoji 😀", "quote \" and \\ backslash", "\u0000nul"])
def test_unicode_round_trip(sig, text):
    conn = sig.connect()
    assert sig.call(conn, "Echo", text).result == text


@pytest.mark.requirement("SIGR-JSON-003")
@only("json")
def test_escaped_unicode_is_read(sig):
    conn = sig.connect()
    conn.send(raw_json('{"type":1,"invocationId":"esc","target":"Echo","arguments":["\\u2713 \\ud83d\\ude00"]}'))
    conn.expect(Completion, invocation_id="esc", result="✓ 😀")


@pytest.mark.requirement("SIGR-JSON-004", "SIGR-JSON-001")
@only("json")
def test_json_message_shapes(sig):
    conn = sig.connect()
    # The decoder checks every field's name and type; here the shapes of each kind.
    assert sig.call(conn, "Add", 1, 2).result == 3
    assert sig.call(conn, "Fail", "boom").error
    request = sig.stream_request("Counter", 1, 0)
    conn.send(request)
    got = sig.collect(conn, request.invocation_id)
    assert isinstance(got[0], StreamItem) and got[0].item == 0 and sig.is_stream_end(got[1], request.invocation_id)


VALUES = [None, True, False, 0, -1, 2**31, -(2**53), 1.5, "", "s", [], [1, [2, [3]]], {},
          {"a": {"b": [1, None, "c"]}}, [{"x": 1}, {"y": [True]}]]


@pytest.mark.requirement("SIGR-JSON-005", "SIGR-MSGPACK-005")
@pytest.mark.parametrize("value", VALUES, ids=[repr(v)[:20] for v in VALUES])
def test_values_carry_through(sig, value):
    conn = sig.connect()
    conn.send(sig.nonblocking("Remember", value))
    assert sig.call(conn, "Recall").result == value


@pytest.mark.requirement("SIGR-MSGPACK-005")
@only("messagepack")
@pytest.mark.parametrize("value", [b"\x00\xffbinary", 2**63 - 1, -(2**63), 1e300, {"k": b"v"}])
def test_messagepack_values_carry_through(sig, value):
    conn = sig.connect()
    conn.send(sig.nonblocking("Remember", value))
    assert sig.call(conn, "Recall").result == value


@pytest.mark.requirement("SIGR-MSGPACK-001", "SIGR-MSGPACK-002")
@only("messagepack")
@pytest.mark.parametrize("form", ["five", "six"])
def test_invocation_array_layouts(sig, form):
    conn = sig.connect()
    if sig.draft:
        if form == "six":
            pytest.skip("the draft's Invocation has one layout")
        items = [1, "arr", False, "Echo", ["layout"]]
    else:
        items = [1, {}, "arr", "Echo", ["layout"]] + ([[]] if form == "six" else [])
    conn.send(raw_msgpack(items))
    conn.expect(Completion, invocation_id="arr", result="layout")


@pytest.mark.requirement("SIGR-MSGPACK-003")
@only("messagepack")
def test_result_kinds(sig):
    conn = sig.connect()
    # The decoder maps ResultKind 1/2/3 to error / neither / result (errata: 2 is void).
    error = sig.call(conn, "Fail", "kind 1")
    assert error.error and not error.has_result
    void = sig.call(conn, "Nothing")
    assert void.error is None and not void.has_result
    value = sig.call(conn, "Add", 2, 3)
    assert value.error is None and value.has_result and value.result == 5


@pytest.mark.requirement("SIGR-MSGPACK-004")
@only("messagepack")
def test_stream_item_layout(sig):
    conn = sig.connect()
    request = sig.stream_request("Counter", 2, 0)
    conn.send(request)
    got = sig.collect(conn, request.invocation_id)
    assert [m.item for m in got[:-1]] == [0, 1]
    assert sig.is_stream_end(got[-1], request.invocation_id)


@pytest.mark.requirement("SIGR-FRAME-001")
@only("messagepack")
@pytest.mark.parametrize("size", [1, 127, 128, 200, 16_383, 16_384, 20_000])
def test_multibyte_varint_lengths(sig, size):
    conn = sig.connect()
    text = "v" * size
    call = sig.invocation("Echo", text)
    wire = sig.encode(call)
    conn.send(wire)
    conn.expect(Completion, invocation_id=call.invocation_id, result=text)


@pytest.mark.requirement("SIGR-FRAME-002")
@only("messagepack")
@pytest.mark.parametrize("seed", range(4))
def test_records_split_anywhere(sig, seed):
    conn = sig.connect()
    calls = [sig.invocation("Echo", "x" * n) for n in (5, 300, 1, 150)]
    wire = b"".join(sig.encode(c) for c in calls)
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(wire)), 12))
    sizes = [b - a for a, b in zip([0] + cuts, cuts + [len(wire)])]
    conn.send(wire, chunks=sizes)
    for c in calls:
        conn.expect(Completion, invocation_id=c.invocation_id, result=c.arguments[0])


@pytest.mark.requirement("SIGR-FRAME-002")
@only("messagepack")
def test_varint_split_across_writes(sig):
    conn = sig.connect()
    call = sig.invocation("Echo", "y" * 300)          # a 2-byte VarInt
    wire = sig.encode(call)
    conn.send(wire, chunks=[1, 1, len(wire) - 2])
    conn.expect(Completion, invocation_id=call.invocation_id, result="y" * 300)


@pytest.mark.requirement("SIGR-FRAME-003")
@only("messagepack")
@pytest.mark.parametrize("prefix", ["808080808001", "ffffffff0f", "ffffffffff"])
def test_invalid_length_prefix(sig, prefix):
    conn = sig.connect()
    conn.send(bytes.fromhex(prefix) + b"\x91\x06")
    sig.expect_protocol_error(conn, f"length prefix {prefix} (over 5 bytes or above 2 GB)")


@pytest.mark.requirement("SIGR-MSGPACK-002")
@only("messagepack")
def test_nil_invocation_id_is_nonblocking(sig):
    if sig.draft:
        pytest.skip("the draft's Invocation always carries an id")
    conn = sig.connect()
    conn.send(raw_msgpack([1, {}, None, "Fail", ["quiet"]]))
    sig.barrier(conn, "an Invocation with a nil id")


