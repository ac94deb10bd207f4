"""Write the VibeMQ seed corpora: ``python -m wirecheck.fuzz.builders.vibemq_corpora`` (deterministic).

``fuzz/corpora/vibemq/``: streams in the document's framing (length, flags byte, body), each of
which the registry's default decoder reads whole: every JSON example of vibemq-protocol.rst as
a frame of its own, the "Exchange Examples" as conversations, the real codec's Ping vector
(SPEC_NOTES.md), bodies in the real codec's form (no error fields), and single gzip and
brotli frames first (the decompression target reads a seed's first frame), one of them
inflating a thousandfold. ``fuzz/corpora/vibemq-message/``: one binary message per seed, the
same examples in both the document's and the real codec's form, and edge values.
"""
from __future__ import annotations

from wirecheck.conformance.strategies.vibemq import DOCUMENT_EXAMPLES, HELLO, PING_VECTOR
from wirecheck.fuzz.builders.corpus_files import CORPORA, write_corpus
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import CommandType, Compression

#: The document's single-message examples (the exchange ones are below, as whole sides).
EXAMPLES = {name[0].lower() + name[1:]: obj for name, obj in DOCUMENT_EXAMPLES.items()
            if not name.startswith("exchange-")}

#: "Exchange Examples", each a client's or a server's side.
EXCHANGES = {
    "client-connect-publish-ack-ping": [
        {"id": "conn_001", "type": "connect",
         "headers": {"authPassword": "my-password", "supported-compression": "brotli,gzip"}},
        {"id": "msg_001", "type": "publish", "queue": "notifications", "payload": HELLO},
        {"id": "ack_001", "type": "ack", "headers": {"messageId": "msg_001"}},
        {"id": "ping_001", "type": "ping"}],
    "server-connectack-publishack-deliver-pong": [
        {"id": "conn_001", "type": "connectAck",
         "headers": {"connectionId": "srv_100", "negotiated-compression": "brotli"}},
        {"id": "msg_001", "type": "publishAck",
         "headers": {"messageId": "msg_001", "queueName": "notifications"}},
        {"id": "msg_001", "type": "deliver", "queue": "notifications", "payload": HELLO},
        {"id": "ping_001", "type": "pong"}],
}

EDGE_MESSAGES = {
    "unicode": Message(CommandType.DELIVER, "ид-✓", "очередь/🐇", {"ключ": ["值", 1.5, None, True]},
                       {"名前": "значение", "empty": None}),
    "numbers": Message(CommandType.PUBLISH, "n", "q", [0, -1, 2**64, 1.5e-300, -0.0, 1e300]),
    "version-0": Message(CommandType.PING, "v", version=0),
    "error-real-codes": Message(CommandType.ERROR, "e", None, None, None, "NOT_AUTHENTICATED",
                                "Connect first"),
    "create-queue-payload": Message(CommandType.CREATE_QUEUE, "c", "jobs",
                                    {"deliveryMode": "FanOutWithAck", "maxQueueSize": 100}),
}


def _messages() -> dict[str, Message]:
    out = {name: codec.from_json(obj) for name, obj in EXAMPLES.items()}
    out.update(EDGE_MESSAGES)
    return out


def stream_seeds() -> dict[str, bytes]:
    messages = _messages()
    seeds = {f"doc-{name}": codec.encode(m) for name, m in messages.items()}
    seeds["real-ping-vector"] = PING_VECTOR
    seeds["real-form-publish-error"] = codec.encode(messages["publish"], "vibemq-1.8") \
        + codec.encode(messages["error"], "vibemq-1.8")
    for name, conversation in EXCHANGES.items():
        seeds[f"exchange-{name}"] = b"".join(codec.encode(codec.from_json(m)) for m in conversation)
    seeds["all-examples"] = b"".join(codec.encode(m) for m in messages.values())
    for flag in (Compression.GZIP, Compression.BROTLI):
        tag = flag.name.lower()
        for name in ("publish", "queueInfo-response", "unicode", "error"):
            seeds[f"{tag}-{name}"] = codec.encode(messages[name], compression=flag)
        seeds[f"{tag}-then-plain"] = codec.encode(messages["deliver"], compression=flag) \
            + codec.encode(messages["ack"])
        # Inflates about a thousandfold: 60 KB of payload (under the fuzzers' 64 KiB bound).
        seeds[f"{tag}-thousandfold"] = codec.encode(
            Message(CommandType.PUBLISH, "big", "q", "0" * 60_000), compression=flag)
    return seeds


def message_seeds() -> dict[str, bytes]:
    seeds = {}
    for name, message in _messages().items():
        seeds[f"doc-{name}"] = codec.encode_body(message)
        if message.type != CommandType.ERROR:
            seeds[f"real-{name}"] = codec.encode_body(message, "vibemq-1.8")
    seeds["real-ping-vector"] = PING_VECTOR[5:]
    return seeds


def main() -> None:
    write_corpus(CORPORA / "vibemq", stream_seeds())
    write_corpus(CORPORA / "vibemq-message", message_seeds())


if __name__ == "__main__":
    main()
