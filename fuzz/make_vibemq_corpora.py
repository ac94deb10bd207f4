"""Write the VibeMQ seed corpora: ``python -m fuzz.make_vibemq_corpora`` (deterministic).

``fuzz/corpora/vibemq/``: streams in the document's framing (length, flags byte, body), each of
which the registry's default decoder reads whole: every JSON example of vibemq-protocol.rst as
a frame of its own, the "Exchange Examples" as conversations, the real codec's Ping vector
(SPEC_NOTES.md), bodies in the real codec's form (no error fields), and single gzip and
brotli frames first (the decompression target reads a seed's first frame), one of them
inflating a thousandfold. ``fuzz/corpora/vibemq-message/``: one binary message per seed, the
same examples in both the document's and the real codec's form, and edge values.
"""
from __future__ import annotations

from pathlib import Path

from reference_impl.vibemq import codec
from reference_impl.vibemq.codec import Message
from reference_impl.vibemq.constants import CommandType, Compression

CORPORA = Path(__file__).resolve().parent / "corpora"
PING_VECTOR = bytes.fromhex("00 00 00 0E 00 01 0A 00 02 70 31 00 00 00 00 00 00 00 00")
HELLO = {"title": "Hello", "body": "World"}

#: vibemq-protocol.rst "Command Descriptions" (name -> logical JSON).
EXAMPLES = {
    "connect": {"id": "conn_123", "type": "connect",
                "headers": {"authPassword": "my-secret-password", "clientVersion": "1.0.0"}},
    "connectAck": {"id": "conn_123", "type": "connectAck",
                   "headers": {"serverVersion": "1.0.0", "connectionId": "srv_456"}},
    "disconnect": {"id": "disc_123", "type": "disconnect"},
    "ping": {"id": "ping_123", "type": "ping"},
    "pong": {"id": "ping_123", "type": "pong"},
    "publish": {"id": "msg_123", "type": "publish", "queue": "notifications", "payload": HELLO,
                "headers": {"priority": "high", "correlationId": "corr_456",
                            "timestamp": "2026-02-18T10:30:00Z"}},
    "publishAck": {"id": "msg_123", "type": "publishAck",
                   "headers": {"messageId": "msg_123", "queueName": "notifications"}},
    "subscribe": {"id": "sub_123", "type": "subscribe", "queue": "notifications"},
    "subscribeAck": {"id": "sub_123", "type": "subscribeAck",
                     "headers": {"queueName": "notifications", "subscriptionId": "sub_123"}},
    "unsubscribe": {"id": "unsub_123", "type": "unsubscribe", "queue": "notifications"},
    "unsubscribeAck": {"id": "unsub_123", "type": "unsubscribeAck",
                       "headers": {"queueName": "notifications"}},
    "deliver": {"id": "msg_123", "type": "deliver", "queue": "notifications", "payload": HELLO,
                "headers": {"priority": "high", "deliveryAttempts": "1"}},
    "ack": {"id": "ack_123", "type": "ack", "headers": {"messageId": "msg_123"}},
    "createQueue": {"id": "create_123", "type": "createQueue", "queue": "my-queue",
                    "headers": {"deliveryMode": "RoundRobin", "maxQueueSize": "10000",
                                "messageTtl": "3600000"}},
    "deleteQueue": {"id": "delete_123", "type": "deleteQueue", "queue": "my-queue"},
    "queueInfo-request": {"id": "info_123", "type": "queueInfo", "queue": "my-queue"},
    "queueInfo-response": {"id": "info_123", "type": "queueInfo", "queue": "my-queue",
                           "payload": {"name": "my-queue", "messageCount": 42, "subscriberCount": 3,
                                       "deliveryMode": "RoundRobin", "maxSize": 10000,
                                       "createdAt": "2026-02-18T10:00:00Z"}},
    "listQueues-request": {"id": "list_123", "type": "listQueues"},
    "listQueues-response": {"id": "list_123", "type": "listQueues",
                            "payload": ["queue1", "queue2", "queue3"]},
    "error": {"id": "err_123", "type": "error", "errorCode": "AUTH_FAILED",
              "errorMessage": "Invalid username or password"},
}

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


def write(folder: Path, seeds: dict[str, bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        if old.is_file():
            old.unlink()
    for name, data in seeds.items():
        (folder / name).write_bytes(data)


def main() -> None:
    write(CORPORA / "vibemq", stream_seeds())
    write(CORPORA / "vibemq-message", message_seeds())


if __name__ == "__main__":
    main()
