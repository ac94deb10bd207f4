"""BlipMQ requirements (blipmq-protocol.md; real-server behaviour from SPEC_NOTES.md).

Levels: the document states behaviour in the indicative ("frame decoding fails and the
connection is closed"); such statements are read as MUST. Behaviour that only the real server
shows (SPEC_NOTES.md) is SHOULD, so a target that follows the document alone is NON-STRICT,
not FAIL. The document's explicit "Clients SHOULD" are client requirements, which a server
suite cannot observe.
"""
from . import Requirement as R

_CLIENT = "client behaviour: a server-facing suite cannot observe it (client conformance mode)"

REQUIREMENTS = (
    # Frame Layout
    R("BLIP-FRAME-001", "Frame Layout", "MUST",
      "length is a u32 big-endian count of type + correlation id + payload bytes"),
    R("BLIP-FRAME-002", "Frame Layout", "MUST",
      "length 0 or < 9: decoding fails and the server closes the connection"),
    R("BLIP-FRAME-003", "Frame Layout", "MUST",
      "length > 16 MiB: decoding fails and the server closes the connection, without waiting for the body"),
    R("BLIP-FRAME-004", "Frame Layout", "MUST",
      "a frame whose length is at most 16 MiB (inclusive) is accepted"),
    R("BLIP-FRAME-005", "Frame Layout", "MUST",
      "correlation_id is a u64 big-endian echoed by the server in its responses"),
    R("BLIP-FRAME-006", "Frame Types", "MUST",
      "an unknown frame type is a decode error and the connection is closed"),
    R("BLIP-FRAME-007", "Backpressure & Batching / Reads", "MUST",
      "several pipelined frames in one read are each processed, in order"),
    R("BLIP-FRAME-008", "Backpressure & Batching / Reads", "MUST",
      "a partial frame is kept until the rest arrives (any split of the bytes)"),
    R("BLIP-FRAME-009", "Frame Layout", "MUST",
      "the payload may be empty (length == 9)"),
    R("BLIP-IO-001", "Backpressure & Batching / Writes", "MUST",
      "responses are all written, in order, even when the client reads them late"),
    R("BLIP-IO-002", "Backpressure & Batching / Writes", "SHOULD",
      "the server avoids busy loops and per-frame allocations",
      untestable="resource use inside the server is not visible on the wire; "
                 "benchmarks/ measures the reference broker"),
    # HELLO / AUTH
    R("BLIP-HELLO-001", "HELLO", "MUST",
      "HELLO with protocol_version 1 gets ACK(subscription_id 0) with the HELLO's correlation id"),
    R("BLIP-HELLO-002", "HELLO", "MUST",
      "HELLO with another version gets NACK(426, \"unsupported protocol version\")"),
    R("BLIP-HELLO-003", "HELLO", "SHOULD",
      "a second HELLO gets NACK(400, \"HELLO already performed\")", source="SPEC_NOTES"),
    R("BLIP-HELLO-004", "HELLO", "SHOULD",
      "a HELLO payload that is not exactly 2 bytes gets NACK(400, \"invalid HELLO payload\")",
      source="SPEC_NOTES"),
    R("BLIP-HELLO-005", "HELLO", "SHOULD",
      "after a version mismatch the connection stays open and HELLO may be retried",
      source="SPEC_NOTES"),
    R("BLIP-AUTH-001", "AUTH", "MUST",
      "AUTH before HELLO gets NACK(400, \"HELLO not performed\")"),
    R("BLIP-AUTH-002", "AUTH", "MUST",
      "AUTH when already authenticated gets NACK(400, \"already authenticated\")"),
    R("BLIP-AUTH-003", "AUTH", "MUST",
      "a malformed AUTH payload (key_len not equal to the rest, key not UTF-8) gets NACK(400, \"invalid AUTH payload\")"),
    R("BLIP-AUTH-004", "AUTH", "MUST",
      "an invalid API key gets NACK(401, \"invalid API key\")"),
    R("BLIP-AUTH-005", "AUTH", "MUST",
      "a valid API key gets ACK(subscription_id 0) with the AUTH's correlation id"),
    R("BLIP-AUTH-006", "AUTH", "MUST",
      "before AUTH completes every frame but HELLO/AUTH gets NACK(401, \"unauthenticated\") (PING included)"),
    R("BLIP-AUTH-007", "AUTH", "MAY",
      "after HELLO+AUTH the client may send PUBLISH, SUBSCRIBE, POLL and PING"),
    R("BLIP-AUTH-008", "AUTH", "SHOULD",
      "a failed AUTH may be retried on the same connection", source="SPEC_NOTES"),
    # PUBLISH
    R("BLIP-PUB-001", "PUBLISH", "MUST",
      "PUBLISH payload is u8 qos, u16 topic_len, UTF-8 topic, opaque message (possibly empty)"),
    R("BLIP-PUB-002", "PUBLISH", "MUST", "PUBLISH with an empty topic gets NACK(400, \"empty topic\")"),
    R("BLIP-PUB-003", "PUBLISH", "MUST",
      "PUBLISH with qos not in {0,1} gets NACK(400, \"invalid QoS value\")"),
    R("BLIP-PUB-004", "PUBLISH", "MUST", "a successful PUBLISH gets no response frame"),
    R("BLIP-PUB-005", "PUBLISH", "MUST",
      "a QoS1 PUBLISH whose WAL append fails gets NACK(500, \"durable publish failed: ...\")",
      untestable="a WAL failure cannot be caused from the wire; tests/test_blipmq_broker.py "
                 "checks the reference broker with a failing journal"),
    R("BLIP-PUB-006", "PUBLISH", "SHOULD",
      "a malformed PUBLISH payload (< 3 bytes, topic_len past the end, topic not UTF-8) gets "
      "NACK(400, \"invalid PUBLISH payload\")", source="SPEC_NOTES"),
    R("BLIP-PUB-007", "PUBLISH", "MUST",
      "a delivery is a PUBLISH sent in response to POLL whose topic and message are the published ones"),
    R("BLIP-PUB-008", "PUBLISH", "MUST",
      "a QoS1 delivery's correlation_id is the delivery tag, to be used in ACK"),
    R("BLIP-PUB-009", "PUBLISH", "SHOULD",
      "a QoS0 delivery's correlation_id matches the POLL's (\"usually\")"),
    R("BLIP-PUB-010", "PUBLISH", "SHOULD",
      "a delivery's qos is 1 only if both the subscription and the message are QoS1",
      source="SPEC_NOTES"),
    R("BLIP-PUB-011", "PUBLISH", "SHOULD",
      "a publish reaches only the subscriptions that exist when it is published", source="SPEC_NOTES"),
    R("BLIP-PUB-012", "PUBLISH", "MUST",
      "\"If QoS1 and WAL configured: Append to WAL\" before it is enqueued: a QoS1 publish the "
      "broker handled (its PING barrier answered) and nobody acknowledged survives a crash "
      "(kill -9, restart on the same data): it is delivered after the restart. Tested only "
      "when the kit runs the target (--target-command); [features] durable = false says the "
      "target runs without a WAL"),
    # SUBSCRIBE
    R("BLIP-SUB-001", "SUBSCRIBE", "MUST",
      "a malformed SUBSCRIBE payload gets NACK(400, \"invalid SUBSCRIBE payload\")"),
    R("BLIP-SUB-002", "SUBSCRIBE", "MUST", "SUBSCRIBE with an empty topic gets NACK(400, \"empty topic\")"),
    R("BLIP-SUB-003", "SUBSCRIBE", "MUST",
      "SUBSCRIBE with qos not in {0,1} gets NACK(400, \"invalid QoS value\")"),
    R("BLIP-SUB-004", "SUBSCRIBE", "MUST",
      "a successful SUBSCRIBE gets ACK(subscription_id = new non-zero id) with its correlation id"),
    R("BLIP-SUB-005", "SUBSCRIBE", "MUST", "each SUBSCRIBE creates a new subscription with its own id"),
    R("BLIP-SUB-006", "SUBSCRIBE", "MAY",
      "bytes after the qos byte are ignored", source="SPEC_NOTES"),
    # ACK
    R("BLIP-ACK-001", "ACK", "MUST", "a malformed ACK payload (not 8 bytes) gets NACK(400, \"invalid ACK payload\")"),
    R("BLIP-ACK-002", "ACK", "MUST",
      "ACK with subscription_id 0 gets NACK(400, \"subscription_id must be non-zero\")"),
    R("BLIP-ACK-003", "ACK", "MUST",
      "ACK of an unknown subscription or delivery tag gets NACK(404, \"unknown subscription or delivery tag\")"),
    R("BLIP-ACK-004", "ACK", "MUST",
      "a valid ACK gets no frame and removes the message from in-flight tracking (a second ACK is unknown)"),
    # POLL
    R("BLIP-POLL-001", "POLL", "MUST", "a malformed POLL payload (not 8 bytes) gets NACK(400, \"invalid POLL payload\")"),
    R("BLIP-POLL-002", "POLL", "MUST",
      "POLL with subscription_id 0 gets NACK(400, \"subscription_id must be non-zero\")"),
    R("BLIP-POLL-003", "POLL", "MUST", "POLL with no message available returns no frame"),
    R("BLIP-POLL-004", "POLL", "MUST", "POLL with a message available returns a PUBLISH carrying it, in publish order"),
    # QoS1 redelivery (real server)
    R("BLIP-QOS1-001", "POLL", "SHOULD",
      "an unacked QoS1 delivery is delivered again after a backoff, with the same delivery tag",
      source="SPEC_NOTES"),
    R("BLIP-QOS1-002", "POLL", "SHOULD",
      "an unacked QoS1 message is dropped after the maximum number of deliveries", source="SPEC_NOTES"),
    R("BLIP-QOS1-003", "POLL", "SHOULD",
      "delivery tags are per subscription and start at 1", source="SPEC_NOTES"),
    R("BLIP-QOS1-004", "ACK", "MUST", "an acknowledged QoS1 message is not delivered again"),
    # PING / PONG, NACK
    R("BLIP-PING-001", "PING / PONG", "MUST",
      "PING gets PONG with the same correlation_id and an empty payload"),
    R("BLIP-NACK-001", "NACK", "MUST",
      "NACK payload is u16 code, u16 message_len, UTF-8 message, and carries the request's correlation_id"),
    R("BLIP-NACK-002", "Error Codes", "MUST",
      "NACK codes are those of the Error Codes table (400, 401, 404, 426, 500)"),
    # Client obligations ("Clients SHOULD")
    R("BLIP-CLIENT-001", "Error Codes", "SHOULD", "clients log NACKs with code and message", untestable=_CLIENT),
    R("BLIP-CLIENT-002", "Error Codes", "SHOULD",
      "clients treat 400/401/404/426/500 as the table says (fix, re-key, resync, upgrade, retry)",
      untestable=_CLIENT),
    R("BLIP-CLIENT-003", "Client Responsibilities", "SHOULD",
      "clients pipeline frames where appropriate", untestable=_CLIENT),
    R("BLIP-CLIENT-004", "Client Responsibilities", "SHOULD",
      "clients use timeouts and backoff when POLL returns no data", untestable=_CLIENT),
    R("BLIP-CLIENT-005", "Client Responsibilities", "SHOULD",
      "clients watch for NACKs and adjust", untestable=_CLIENT),
    # "After successful HELLO+AUTH: Client may send PUBLISH, SUBSCRIBE, POLL, and PING": read
    # as what a client sends only then (the server refuses anything earlier with 401).
    R("BLIP-CLIENT-006", "AUTH", "SHOULD",
      "clients send nothing but HELLO and AUTH before HELLO+AUTH completed",
      untestable=_CLIENT + "; the capture observer checks it"),
)
