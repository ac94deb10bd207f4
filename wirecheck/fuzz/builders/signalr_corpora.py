"""Write the SignalR seed corpora: ``python -m wirecheck.fuzz.builders.signalr_corpora`` (deterministic).

Each seed is a client's stream: a handshake as one of today's clients spells it (compact JS,
spaced pysignalr/signalrcore; signalr-real-clients.md), then messages in the shapes those
clients send (SPEC_NOTES.md "SignalR"). A seed must decode with the registry's default decoder
(v1; tests/fuzz/test_fuzz_corpus.py), so the draft's examples are not seeds (the targets read every
seed's records in the draft profile too, and the dictionary has the draft's shapes). A few
seeds are a server's side (``{}`` or an error first), for the handshake target.
"""
from __future__ import annotations

import msgpack

from wirecheck.fuzz.builders.corpus_files import CORPORA, write_corpus
from wirecheck.reference_impl.signalr import codec
from wirecheck.reference_impl.signalr.framing import frame_binary
from wirecheck.reference_impl.signalr.messages import (Ack, CancelInvocation, Close, Completion, Invocation,
                                             Ping, Sequence, StreamInvocation, StreamItem)


JS_JSON = b'{"protocol":"json","version":1}\x1e'
PY_JSON = b'{"protocol": "json", "version": 1}\x1e'
JS_MSGPACK = b'{"protocol":"messagepack","version":1}\x1e'
CORE_MSGPACK = b'{"protocol": "messagepack", "version": 1}\x1e'
UUID = "5b2f7f0e-8d4c-4c1a-9d55-0b8f3a0c2f11"
CORE_HEADERS = {"Content-Type": "application/json"}

V1_MESSAGES = [
    Invocation("Echo", ["hello \u2713"], "0"), Invocation("Notify", [1, None, True]),
    StreamInvocation("2", "Counter", [5, 10]), StreamItem("3", {"a": [1.5, -2]}),
    Completion("3"), Completion.with_result("0", "hello"), Completion.with_error("1", "boom"),
    CancelInvocation("2"), Ping(), Close("bye", True), Ack(7), Sequence(1),
    Invocation("Sum", [], "4", stream_ids=["3"]), Invocation("Echo", ["x"], UUID, CORE_HEADERS),
]


def _msgpack(items) -> bytes:
    return frame_binary(msgpack.packb(items, use_bin_type=True))


def json_seeds() -> dict[str, bytes]:
    js = [b'{"target":"Echo","arguments":["\xe2\x9c\x93"],"invocationId":"0","type":1}\x1e',
          b'{"target":"Sum","arguments":[],"invocationId":"4","streamIds":["3"],"type":1}\x1e',
          b'{"type":2,"invocationId":"3","item":1}\x1e', b'{"type":7}\x1e']
    py = (b'{"target": "Echo", "arguments": ["\\u2713"], "type": 1, "invocationId": "' + UUID.encode()
          + b'", "headers": {}}\x1e')
    core = (b'{"type": 1, "headers": {"Content-Type": "application/json"}, "target": "Echo", '
            b'"arguments": ["x"], "invocationId": "' + UUID.encode() + b'"}\x1e'
            b'{"type": 4, "headers": {}, "target": "Counter", "arguments": [5, 10], '
            b'"invocationId": "u2", "streamIds": []}\x1e')
    seeds = {
        "handshake-js": JS_JSON, "handshake-spaced": PY_JSON,
        "js-ping-echo-sum-close": JS_JSON + b'{"type":6}\x1e' + b"".join(js),
        "pysignalr-echo": PY_JSON + py, "signalrcore-echo-stream": PY_JSON + core,
        "v1-every-type": JS_JSON + b"".join(codec.encode(m) for m in V1_MESSAGES),
        "server-ok-completion": b'{}\x1e{"type":3,"invocationId":"0","result":"hello"}\x1e',
        "server-error": b'{"error":"Requested protocol \'x\' is not available."}\x1e',
    }
    for i, message in enumerate(V1_MESSAGES):
        seeds[f"v1-{i:02d}-{type(message).__name__}"] = JS_JSON + codec.encode(message)
    return seeds


def msgpack_seeds() -> dict[str, bytes]:
    seeds = {
        "js-ping-echo-close": JS_MSGPACK + bytes.fromhex("02 91 06")
        + _msgpack([1, {}, "0", "Echo", ["hi"]]) + _msgpack([1, {}, None, "Notify", [1]])
        + _msgpack([4, {}, "2", "Counter", [5, 10]]) + bytes.fromhex("03 92 07 c0"),
        "pysignalr-six-items": JS_MSGPACK + _msgpack([1, {}, UUID, "Echo", ["x"], []])
        + _msgpack([3, {}, UUID, 2]),
        "signalrcore-headers": CORE_MSGPACK + _msgpack([1, CORE_HEADERS, UUID, "Echo", ["x"]])
        + _msgpack([4, {}, "u2", "Counter", [5, 10], []]),
        "v1-every-type": JS_MSGPACK + b"".join(codec.encode(m, "messagepack") for m in V1_MESSAGES),
        "binary-and-floats": JS_MSGPACK + codec.encode(
            StreamItem("9", [b"\x00\xff", 2 ** 64 - 1, -2 ** 63, 0.1, float("nan")]), "messagepack"),
        "two-byte-varint": JS_MSGPACK + codec.encode(StreamItem("9", "x" * 200), "messagepack"),
    }
    for i, message in enumerate(V1_MESSAGES):
        seeds[f"v1-{i:02d}-{type(message).__name__}"] = JS_MSGPACK + codec.encode(message, "messagepack")
    return seeds


def main() -> None:
    write_corpus(CORPORA / "signalr-json", json_seeds())
    write_corpus(CORPORA / "signalr-msgpack", msgpack_seeds())


if __name__ == "__main__":
    main()
