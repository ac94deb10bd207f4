"""The fast path (wirecheck/reference_impl/signalr/fastpath.py) may only ever answer what the careful
parsers answer: for every record, either it declines (None) or its message equals the careful
one; where the careful parser raises, it declines. Checked on generated valid messages, the
strategies' invalid records, hand-picked records where orjson and json differ, and mutations.
"""
import json

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirecheck.conformance.strategies import signalr as strat
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.signalr import codec, fastpath, json_protocol, msgpack_protocol

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def careful(record: bytes, protocol: str):
    parse = json_protocol.parse_message if protocol == "json" else msgpack_protocol.parse_message
    try:
        return parse(record, 0, "v1")
    except FrameError as exc:
        return exc


def agree(record: bytes, protocol: str) -> None:
    want = careful(record, protocol)
    if protocol == "json":
        # A batch is one block of records joined by 0x1E (a record holding 0x1E is not one).
        tries = [fastpath.json_v1(record)]
        if b"\x1e" not in record:
            tries += [fastpath.json_v1_batch(record)[0], fastpath.json_v1_batch(record + b"\x1e" + record)[1]]
    else:
        tries = [fastpath.msgpack_v1(record), fastpath.msgpack_v1_batch([record])[0],
                 fastpath.msgpack_v1_batch([record, record])[1]]
    for got in tries:
        if got is None:
            continue
        assert not isinstance(want, FrameError), f"fast path accepted {record!r}: careful says {want!r}"
        assert got == want and type(got) is type(want), (record, got, want)


def _body(message, protocol: str) -> bytes:
    wire = codec.encode(message, protocol, "v1")
    return wire[:-1] if protocol == "json" else _strip_varint(wire)


def _strip_varint(wire: bytes) -> bytes:
    pos = 0
    while wire[pos] & 0x80:
        pos += 1
    return wire[pos + 1:]


@pytest.mark.parametrize("protocol", ["json", "messagepack"])
@SETTINGS
@given(data=st.data())
def test_valid_messages_agree(protocol, data):
    message = data.draw(strat.messages("v1", protocol))
    record = _body(message, protocol)
    agree(record, protocol)
    fast = (fastpath.json_v1 if protocol == "json" else fastpath.msgpack_v1)(record)
    assert fast is None or fast == message


@SETTINGS
@given(data=st.data())
def test_invalid_json_records_decline(data):
    record, _category = data.draw(strat.invalid_json_records("v1"))
    agree(record, "json")


@SETTINGS
@given(data=st.data())
def test_invalid_msgpack_records_decline(data):
    record, _category = data.draw(strat.invalid_msgpack_records("v1"))
    agree(record, "messagepack")


@pytest.mark.parametrize("protocol", ["json", "messagepack"])
@SETTINGS
@given(data=st.data(), flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4))
def test_mutated_records_agree(protocol, data, flips):
    record = bytearray(_body(data.draw(strat.messages("v1", protocol)), protocol))
    for pos, value in flips:
        if record:
            record[pos % len(record)] = value
    agree(bytes(record), protocol)


JSON_EDGES = [
    b'{"type":2,"invocationId":"1","item":12345678901234567890123}',    # orjson: float
    b'{"type":2,"invocationId":"1","item":-9223372036854775809}',
    b'{"type":2,"invocationId":"1","item":18446744073709551615}',
    b'{"type":2,"invocationId":"1","item":1e400}',
    b'{"type":2,"invocationId":"1","item":"\\ud800"}',
    b'{"type":2,"invocationId":"1","item":NaN}',
    b'\xef\xbb\xbf{"type":6}',
    b'{"type":1,"type":6}',
    b'{"type":true}',
    b'{"type":1.0,"target":"x","arguments":[]}',
    b'{"type":1,"target":"x","arguments":[],"invocationId":""}',
    b'{"type":1,"target":"x","arguments":[],"invocationId":null,"headers":null,"streamIds":null}',
    b'{"type":1,"target":"x","arguments":[],"headers":{}}',
    b'{"type":1,"target":"x","arguments":[],"headers":{"a":1}}',
    b'{"type":3,"invocationId":"1","result":null}',
    b'{"type":3,"invocationId":"1","error":null,"result":1}',
    b'{"type":3,"invocationId":"1","error":null}',
    b'{"type":7,"error":null,"allowReconnect":null}',
    b'{"type":8,"sequenceId":9223372036854775808}',
    b'{"type":2,"invocationId":"1","item":' + b"[" * 1010 + b"]" * 1010 + b"}",
    b'{"type":2,"invocationId":"1","item":"\x01"}',
    b' {"type":6} ',
]
MSGPACK_EDGES = [
    msgpack.packb([1, {}, "", "x", []]), msgpack.packb([1, {}, None, "x", [], None]),
    msgpack.packb([1, {"a": 1}, "1", "x", []]), msgpack.packb([3, {}, "1", 1, 5]),
    msgpack.packb([3, {}, "1", 4, 5]), msgpack.packb([3, {}, "1", True, 5]),
    msgpack.packb([8, 2**63]), msgpack.packb([7, None, None]), msgpack.packb([6, "extra"]),
    msgpack.packb([1, {}, "1", "x", [], []]) + b"\x00", msgpack.packb([True, {}, "1"]),
    msgpack.packb([2, {}, "1"]), msgpack.packb([5, {}, 1]), b"",
]


@pytest.mark.parametrize("record", JSON_EDGES, ids=range(len(JSON_EDGES)))
def test_json_edge_cases_agree(record):
    agree(record, "json")


@pytest.mark.parametrize("record", MSGPACK_EDGES, ids=range(len(MSGPACK_EDGES)))
def test_msgpack_edge_cases_agree(record):
    agree(record, "messagepack")


def test_batch_with_an_invalid_record_keeps_the_rest():
    good = json.dumps({"type": 1, "target": "Echo", "arguments": [1], "invocationId": "a"}).encode()
    stream = b"\x1e".join([good, b'{"type":1}', good]) + b"\x1e"
    decoder = codec.Decoder(protocol="json", handshake=False)
    with pytest.raises(FrameError) as info:
        decoder.feed(stream)
    assert len(info.value.frames) == 1 and info.value.offset == len(good) + 1
    assert len(decoder.feed(b"")) == 1 and decoder.buffered == 0
