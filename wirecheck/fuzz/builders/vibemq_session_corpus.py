"""Write the seed corpus of fuzz/fuzz_vibemq_session.py: ``python -m wirecheck.fuzz.builders.vibemq_session_corpus``
(deterministic). Each seed is a client's side of a session: Connect first, then commands
(queues in each delivery mode, publish/subscribe/ack, compression, redelivery and dead letters
under the target's advancing clock), a few error paths (a refused Connect, commands before
Connect, an unknown command type, a bad payload, a bad length, invalid names), and the same
sessions in the real server's profile (last byte ``R``) and protocol 1.0 framing (``0``)."""
from __future__ import annotations

from wirecheck.conformance.strategies.vibemq import HELLO
from wirecheck.fuzz.builders.corpus_files import CORPORA, write_corpus
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import CommandType as T, Compression

CORPUS = CORPORA / "vibemq-session"
AUTH = {"authPassword": "vibemq", "clientVersion": "1.0.0"}


def connect(cid: str = "conn_1", **headers) -> Message:
    """The id's first character is the target's clock step per read (its 10th byte): "c" is
    0.99 s, past the target's 1 s ack timeout every other read."""
    return Message(T.CONNECT, cid, headers={**AUTH, **headers})


def create(queue: str, **options) -> Message:
    return Message(T.CREATE_QUEUE, f"create_{queue}", queue, headers={k: str(v) for k, v in options.items()})


def publish(mid: str, queue: str, payload=HELLO, **headers) -> Message:
    return Message(T.PUBLISH, mid, queue, payload, headers or None)


def sub(queue: str) -> Message:
    return Message(T.SUBSCRIBE, f"sub_{queue}", queue)


def raw(profile: str, kind: int, payload: bytes = b"", mid: bytes = b"x") -> bytes:
    body = bytes([1, kind]) + len(mid).to_bytes(2, "big") + mid + b"\x00\x00"
    body += len(payload).to_bytes(4, "big") + payload + b"\x00\x00"
    if profile == "document":
        body += b"\x00\x00\x00\x00"
    head = len(body).to_bytes(4, "big")
    return head + (b"" if profile == "vibemq-1.0" else b"\x00") + body


SESSIONS = {
    "connect-ping": [connect("0conn"), Message(T.PING, "ping_1"), Message(T.DISCONNECT, "disc_1")],
    "pubsub": [connect(), create("orders", deliveryMode="RoundRobin", maxQueueSize=100), sub("orders"),
               publish("msg_1", "orders", priority="High", correlationId="corr_1"),
               Message(T.ACK, "msg_1", headers={"messageId": "msg_1"}),
               Message(T.QUEUE_INFO, "info_1", "orders"), Message(T.LIST_QUEUES, "list_1"),
               Message(T.UNSUBSCRIBE, "unsub_1", "orders"), Message(T.DELETE_QUEUE, "del_1", "orders")],
    "fanout-with-ack": [connect(), create("fan", deliveryMode="FanOutWithAck", maxRetryAttempts=2), sub("fan"),
                        publish("msg_1", "fan"), publish("msg_2", "fan", [1, 2, 3]),
                        Message(T.PING, "ping_1"), Message(T.PING, "ping_2"), Message(T.PING, "ping_3")],
    "fanout-without-ack": [connect(), create("news", deliveryMode="FanOutWithoutAck"), sub("news"),
                           publish("msg_1", "news", "text"), publish("msg_2", "news", 42)],
    "priority-backlog": [connect(), create("prio", deliveryMode="PriorityBased"),
                         *[publish(f"msg_{p}", "prio", {"p": p}, priority=p)
                           for p in ("Low", "Normal", "Critical", "High")], sub("prio")],
    "dead-letter": [connect("~conn"), create("doomed", maxRetryAttempts=1, enableDeadLetterQueue="true", messageTtl=100),
                    sub("doomed"), publish("msg_1", "doomed"), Message(T.PING, "ping_1"),
                    Message(T.PING, "ping_2"), sub("doomed.dlq"), Message(T.QUEUE_INFO, "info_1", "doomed.dlq")],
    "overflow": [connect(), create("small", maxQueueSize=2, overflowStrategy="DropNewest"),
                 *[publish(f"msg_{n}", "small", {"n": n}) for n in range(4)],
                 Message(T.QUEUE_INFO, "info_1", "small")],
    "implicit-queue": [connect(), publish("msg_1", "implicit", None), sub("implicit"),
                       Message(T.CREATE_QUEUE, "create_again", "implicit")],
    "not-authenticated": [connect(authPassword="wrong"), publish("msg_0", "early"), Message(T.PING, "p"),
                          connect(), Message(T.QUEUE_INFO, "info_1", "missing")],
    "invalid-names": [connect(), Message(T.SUBSCRIBE, "sub_bad", "bad queue!"),
                      Message(T.PUBLISH, "pub_noq", None, HELLO),
                      Message(T.PING, "h", headers={f"h{i}": "v" for i in range(51)}),
                      create("opts", deliveryMode="Sideways")],
}


def stream(profile: str, messages: list) -> bytes:
    return b"".join(codec.encode(m, profile) for m in messages)


def seeds() -> dict[str, bytes]:
    out = {name: stream("document", messages) for name, messages in SESSIONS.items()}
    for name in ("pubsub", "fanout-with-ack", "not-authenticated", "implicit-queue"):
        out[f"{name}-real"] = stream("vibemq-1.8", SESSIONS[name]) + b"R"
    for name in ("connect-ping", "pubsub"):
        out[f"{name}-v10"] = stream("vibemq-1.0", SESSIONS[name]) + b"0"
    big = {"blob": "x" * 3000}
    out["compression"] = (stream("document", [connect(**{"supported-compression": "gzip,brotli"}), sub("zip")])
                          + codec.encode(publish("msg_big", "zip", big), "document", Compression.GZIP)
                          + codec.encode(publish("msg_br", "zip", big), "document", Compression.BROTLI)
                          + codec.encode(Message(T.PING, "ping_1"), "document"))
    out["unknown-type-then-bad-json"] = (stream("document", [connect()]) + raw("document", 77)
                                         + raw("document", T.PUBLISH, b"{not json"))
    out["unknown-type-real"] = (stream("vibemq-1.8", [connect()]) + raw("vibemq-1.8", 77)
                                + raw("vibemq-1.8", T.PING) + b"R")
    out["bad-length"] = stream("document", [connect()]) + b"\x00\x00\x00\x01\x00\x00"
    out["bad-flag"] = stream("document", [connect()]) + b"\x00\x00\x00\x02\x07\x01\x0a"
    return out


def main() -> None:
    write_corpus(CORPUS, seeds())
    print(f"{len(seeds())} seeds in {CORPUS}")


if __name__ == "__main__":
    main()
