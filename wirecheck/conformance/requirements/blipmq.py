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
      "length is a u32 big-endian count of type + correlation id + payload bytes",
      quote="`length`: - 32-bit **big-endian** unsigned integer. - Number of bytes following the "
            "length field: - `1 (type) + 8 (correlation_id) + payload_len`.",
      binds="both"),
    R("BLIP-FRAME-002", "Frame Layout", "MUST",
      "length 0 or < 9: decoding fails and the server closes the connection",
      quote="If `length == 0`, `length < 9`, or `length > MAX_FRAME_SIZE`, frame decoding fails "
            "and the connection is closed by the server.",
      binds="server"),
    R("BLIP-FRAME-003", "Frame Layout", "MUST",
      "length > 16 MiB: decoding fails and the server closes the connection, without waiting for the body",
      quote="If `length == 0`, `length < 9`, or `length > MAX_FRAME_SIZE`, frame decoding fails "
            "and the connection is closed by the server.",
      binds="server"),
    R("BLIP-FRAME-004", "Frame Layout", "MUST",
      "a frame whose length is at most 16 MiB (inclusive) is accepted",
      quote="Must be ≥ `1 + 8` and ≤ `16 * 1024 * 1024` (16 MiB).", binds="both"),
    R("BLIP-FRAME-005", "Frame Layout", "MUST",
      "correlation_id is a u64 big-endian echoed by the server in its responses",
      quote="`correlation_id`: - 64-bit **big-endian** integer. - Chosen by the client for "
            "requests. - Echoed by the server in responses or used as a delivery tag for QoS1.",
      binds="both"),
    R("BLIP-FRAME-006", "Frame Types", "MUST",
      "an unknown frame type is a decode error and the connection is closed",
      quote="Unknown frame types result in a decode error and connection close.", binds="both"),
    R("BLIP-FRAME-007", "Backpressure & Batching / Reads", "MUST",
      "several pipelined frames in one read are each processed, in order",
      quote="This supports multiple pipelined frames per TCP read and avoids per-frame "
            "allocations.",
      binds="server"),
    R("BLIP-FRAME-008", "Backpressure & Batching / Reads", "MUST",
      "a partial frame is kept until the rest arrives (any split of the bytes)",
      quote="After each read, `try_decode_frame` is called in a loop: - If a frame is fully "
            "available, it is dispatched to `MessageHandler`. - If partial frame, function "
            "returns `Ok(None)` and the loop breaks.",
      binds="server"),
    R("BLIP-FRAME-009", "Frame Layout", "MUST",
      "the payload may be empty (length == 9)",
      quote="Type-specific binary payload (may be empty).",
      level_note="the \"may\" is the sender's permission; the MUST is the server's duty to "
                 "accept such a frame (length 9), which follows from it",
      binds="server"),
    R("BLIP-IO-001", "Backpressure & Batching / Writes", "MUST",
      "responses are all written, in order, even when the client reads them late",
      quote="`flush_write_buffer`: - Calls `write` on the TCP stream until `write_buf` is empty. "
            "- Handles partial writes by advancing the buffer.",
      binds="server"),
    R("BLIP-IO-002", "Backpressure & Batching / Writes", "SHOULD",
      "the server avoids busy loops and per-frame allocations",
      untestable="resource use inside the server is not visible on the wire; "
                 "benchmarks/ measures the reference broker",
      quote="The implementation respects TCP backpressure and avoids busy loops.",
      level_note="stated in the indicative (the kit's MUST), but it describes the "
                 "implementation's efficiency, not an exchange on the wire: graded SHOULD",
      binds="server"),
    # HELLO / AUTH
    R("BLIP-HELLO-001", "HELLO", "MUST",
      "HELLO with protocol_version 1 gets ACK(subscription_id 0) with the HELLO's correlation id",
      quote="If version matches: - Responds with `ACK(subscription_id = 0)`.", binds="server"),
    R("BLIP-HELLO-002", "HELLO", "MUST",
      "HELLO with another version gets NACK(426, \"unsupported protocol version\")",
      quote="If version mismatches: - Responds with `NACK(code = 426, message = \"unsupported "
            "protocol version\")`.",
      binds="server"),
    R("BLIP-HELLO-003", "HELLO", "SHOULD",
      "a second HELLO gets NACK(400, \"HELLO already performed\")", source="SPEC_NOTES",
      quote="second HELLO -> `400 \"HELLO already performed\"`", binds="server"),
    R("BLIP-HELLO-004", "HELLO", "SHOULD",
      "a HELLO payload that is not exactly 2 bytes gets NACK(400, \"invalid HELLO payload\")",
      source="SPEC_NOTES",
      quote="bad HELLO payload -> `400 \"invalid HELLO payload\"`", binds="server"),
    R("BLIP-HELLO-005", "HELLO", "SHOULD",
      "after a version mismatch the connection stays open and HELLO may be retried",
      source="reading",
      quote="second HELLO -> `400 \"HELLO already performed\"`",
      level_note="the kit's reading: SPEC_NOTES does not say the connection stays open after a "
                 "version mismatch; closest fact: a HELLO counts as performed only once it "
                 "succeeds, so a second one is refused only then",
      binds="server"),
    R("BLIP-AUTH-001", "AUTH", "MUST",
      "AUTH before HELLO gets NACK(400, \"HELLO not performed\")",
      quote="If HELLO has not been performed: - `NACK(400, \"HELLO not performed\")`.",
      binds="server"),
    R("BLIP-AUTH-002", "AUTH", "MUST",
      "AUTH when already authenticated gets NACK(400, \"already authenticated\")",
      quote="If already authenticated: - `NACK(400, \"already authenticated\")`.", binds="server"),
    R("BLIP-AUTH-003", "AUTH", "MUST",
      "a malformed AUTH payload (key_len not equal to the rest, key not UTF-8) gets NACK(400, \"invalid AUTH payload\")",
      quote="If payload malformed: - `NACK(400, \"invalid AUTH payload\")`.", binds="server"),
    R("BLIP-AUTH-004", "AUTH", "MUST",
      "an invalid API key gets NACK(401, \"invalid API key\")",
      quote="If API key invalid: - `NACK(401, \"invalid API key\")`.", binds="server"),
    R("BLIP-AUTH-005", "AUTH", "MUST",
      "a valid API key gets ACK(subscription_id 0) with the AUTH's correlation id",
      quote="On success: - `ACK(subscription_id = 0)`.", binds="server"),
    R("BLIP-AUTH-006", "AUTH", "MUST",
      "before AUTH completes every frame but HELLO/AUTH gets NACK(401, \"unauthenticated\") (PING included)",
      quote="Non-HELLO/AUTH frames before auth complete yield `NACK(401, \"unauthenticated\")`.",
      binds="server"),
    R("BLIP-AUTH-007", "AUTH", "MAY",
      "after HELLO+AUTH the client may send PUBLISH, SUBSCRIBE, POLL and PING",
      quote="After successful HELLO+AUTH: - Client may send PUBLISH, SUBSCRIBE, POLL, and PING.",
      binds="client"),
    R("BLIP-AUTH-008", "AUTH", "SHOULD",
      "a failed AUTH may be retried on the same connection", source="reading",
      quote="Before AUTH completes, every frame other than HELLO/AUTH, PING included, gets 401.",
      level_note="the kit's reading: SPEC_NOTES does not say a failed AUTH may be retried; closest "
                 "fact: until AUTH completes only HELLO and AUTH are accepted, so AUTH is still "
                 "open",
      binds="server"),
    # PUBLISH
    R("BLIP-PUB-001", "PUBLISH", "MUST",
      "PUBLISH payload is u8 qos, u16 topic_len, UTF-8 topic, opaque message (possibly empty)",
      quote="[u8 qos][u16 topic_len][topic_bytes...][message_bytes...]", binds="both"),
    R("BLIP-PUB-002", "PUBLISH", "MUST", "PUBLISH with an empty topic gets NACK(400, \"empty topic\")",
      quote="If topic empty: - `NACK(400, \"empty topic\")`.", binds="server"),
    R("BLIP-PUB-003", "PUBLISH", "MUST",
      "PUBLISH with qos not in {0,1} gets NACK(400, \"invalid QoS value\")",
      quote="If qos not in {0,1}: - `NACK(400, \"invalid QoS value\")`.", binds="server"),
    R("BLIP-PUB-004", "PUBLISH", "MUST", "a successful PUBLISH gets no response frame",
      quote="On success: - No response frame (fire-and-forget).", binds="server"),
    R("BLIP-PUB-005", "PUBLISH", "MUST",
      "a QoS1 PUBLISH whose WAL append fails gets NACK(500, \"durable publish failed: ...\")",
      untestable="a WAL failure cannot be caused from the wire; tests/reference_impl/blipmq/test_blipmq_session.py "
                 "checks the reference session with a failing journal",
      quote="On WAL error: `NACK(500, \"durable publish failed: ...\")`.", binds="server"),
    R("BLIP-PUB-006", "PUBLISH", "SHOULD",
      "a malformed PUBLISH payload (< 3 bytes, topic_len past the end, topic not UTF-8) gets "
      "NACK(400, \"invalid PUBLISH payload\")", source="SPEC_NOTES",
      quote="bad PUBLISH -> `400 \"invalid PUBLISH payload\"`", binds="server"),
    R("BLIP-PUB-007", "PUBLISH", "MUST",
      "a delivery is a PUBLISH sent in response to POLL whose topic and message are the published ones",
      quote="Sent in response to a POLL request. - `qos` and topic/payload fields reflect the "
            "message.",
      binds="server"),
    R("BLIP-PUB-008", "PUBLISH", "MUST",
      "a QoS1 delivery's correlation_id is the delivery tag, to be used in ACK",
      quote="For QoS1: equals `DeliveryTag.value()` to be used in ACK.", binds="server"),
    R("BLIP-PUB-009", "PUBLISH", "SHOULD",
      "a QoS0 delivery's correlation_id matches the POLL's (\"usually\")",
      quote="For QoS0: usually matches the POLL correlation id.",
      level_note="the document's \"usually\" is not a rule: graded SHOULD", binds="server"),
    R("BLIP-PUB-010", "PUBLISH", "SHOULD",
      "a delivery's qos is 1 only if both the subscription and the message are QoS1",
      source="SPEC_NOTES",
      quote="Effective QoS of a delivery = 1 only if both subscription and message are QoS 1.",
      binds="server"),
    R("BLIP-PUB-011", "PUBLISH", "SHOULD",
      "a publish reaches only the subscriptions that exist when it is published", source="SPEC_NOTES",
      quote="Publish reaches only subscriptions existing at that moment.", binds="server"),
    R("BLIP-PUB-012", "PUBLISH", "MUST",
      "\"If QoS1 and WAL configured: Append to WAL\" before it is enqueued: a QoS1 publish the "
      "broker handled (its PING barrier answered) and nobody acknowledged survives a crash "
      "(kill -9, restart on the same data): it is delivered after the restart. Tested only "
      "when the kit runs the target (--target-command); [features] durable = false says the "
      "target runs without a WAL",
      quote="If QoS1 and WAL configured: - Append to WAL. - On WAL error: `NACK(500, \"durable "
            "publish failed: ...\")`. - On success: enqueue message to subscriber queues.",
      binds="server"),
    # SUBSCRIBE
    R("BLIP-SUB-001", "SUBSCRIBE", "MUST",
      "a malformed SUBSCRIBE payload gets NACK(400, \"invalid SUBSCRIBE payload\")",
      quote="Invalid payload: - `NACK(400, \"invalid SUBSCRIBE payload\")`.", binds="server"),
    R("BLIP-SUB-002", "SUBSCRIBE", "MUST", "SUBSCRIBE with an empty topic gets NACK(400, \"empty topic\")",
      quote="Empty topic: - `NACK(400, \"empty topic\")`.", binds="server"),
    R("BLIP-SUB-003", "SUBSCRIBE", "MUST",
      "SUBSCRIBE with qos not in {0,1} gets NACK(400, \"invalid QoS value\")",
      quote="Invalid QoS: - `NACK(400, \"invalid QoS value\")`.", binds="server"),
    R("BLIP-SUB-004", "SUBSCRIBE", "MUST",
      "a successful SUBSCRIBE gets ACK(subscription_id = new non-zero id) with its correlation id",
      quote="Creates a subscription and returns `ACK(subscription_id = new_id)`.", binds="server"),
    R("BLIP-SUB-005", "SUBSCRIBE", "MUST", "each SUBSCRIBE creates a new subscription with its own id",
      quote="Creates a subscription and returns `ACK(subscription_id = new_id)`.", binds="server"),
    R("BLIP-SUB-006", "SUBSCRIBE", "MAY",
      "bytes after the qos byte are ignored", source="SPEC_NOTES",
      quote="SUBSCRIBE ignores trailing bytes",
      level_note="what the real codec does, not a rule: graded MAY (a server may also refuse "
                 "bytes past the document's layout)",
      binds="server"),
    # ACK
    R("BLIP-ACK-001", "ACK", "MUST", "a malformed ACK payload (not 8 bytes) gets NACK(400, \"invalid ACK payload\")",
      quote="Invalid payload: - `NACK(400, \"invalid ACK payload\")`.", binds="server"),
    R("BLIP-ACK-002", "ACK", "MUST",
      "ACK with subscription_id 0 gets NACK(400, \"subscription_id must be non-zero\")",
      quote="`subscription_id == 0` (for non-handshake context): - `NACK(400, \"subscription_id "
            "must be non-zero\")`.",
      binds="server"),
    R("BLIP-ACK-003", "ACK", "MUST",
      "ACK of an unknown subscription or delivery tag gets NACK(404, \"unknown subscription or delivery tag\")",
      quote="If subscription or tag unknown: - `NACK(404, \"unknown subscription or delivery "
            "tag\")`.",
      binds="server"),
    R("BLIP-ACK-004", "ACK", "MUST",
      "a valid ACK gets no frame and removes the message from in-flight tracking (a second ACK is unknown)",
      quote="On success: - Removes message from inflight tracking. - Returns no frame.",
      binds="server"),
    # POLL
    R("BLIP-POLL-001", "POLL", "MUST", "a malformed POLL payload (not 8 bytes) gets NACK(400, \"invalid POLL payload\")",
      quote="Invalid payload: - `NACK(400, \"invalid POLL payload\")`.", binds="server"),
    R("BLIP-POLL-002", "POLL", "MUST",
      "POLL with subscription_id 0 gets NACK(400, \"subscription_id must be non-zero\")",
      quote="`subscription_id == 0`: - `NACK(400, \"subscription_id must be non-zero\")`.",
      binds="server"),
    R("BLIP-POLL-003", "POLL", "MUST", "POLL with no message available returns no frame",
      quote="If no message available: - Returns no frame", binds="server"),
    R("BLIP-POLL-004", "POLL", "MUST", "POLL with a message available returns a PUBLISH carrying it, in publish order",
      quote="If message available: - Returns `PUBLISH` frame carrying the message.",
      binds="server"),
    # QoS1 redelivery (real server)
    R("BLIP-QOS1-001", "POLL", "SHOULD",
      "an unacked QoS1 delivery is delivered again after a backoff, with the same delivery tag",
      source="SPEC_NOTES",
      quote="QoS1 redelivery: unacked messages return to the queue after a backoff (default 100 "
            "ms doubling), dropped after max retries (default 3);",
      binds="server"),
    R("BLIP-QOS1-002", "POLL", "SHOULD",
      "an unacked QoS1 message is dropped after the maximum number of deliveries", source="SPEC_NOTES",
      quote="QoS1 redelivery: unacked messages return to the queue after a backoff (default 100 "
            "ms doubling), dropped after max retries (default 3);",
      binds="server"),
    R("BLIP-QOS1-003", "POLL", "SHOULD",
      "delivery tags are per subscription and start at 1", source="SPEC_NOTES",
      quote="Delivery tags are per subscription, from 1.", binds="server"),
    R("BLIP-QOS1-004", "ACK", "MUST", "an acknowledged QoS1 message is not delivered again",
      quote="On success: - Removes message from inflight tracking.", binds="server"),
    # PING / PONG, NACK
    R("BLIP-PING-001", "PING / PONG", "MUST",
      "PING gets PONG with the same correlation_id and an empty payload",
      quote="PONG (Server → Client): - Payload: empty. - Sent as a direct response to PING with "
            "the same `correlation_id`.",
      binds="server"),
    R("BLIP-NACK-001", "NACK", "MUST",
      "NACK payload is u16 code, u16 message_len, UTF-8 message, and carries the request's correlation_id",
      quote="[u16 code][u16 message_len][message_bytes...]", binds="server"),
    R("BLIP-NACK-002", "Error Codes", "MUST",
      "NACK codes are those of the Error Codes table (400, 401, 404, 426, 500)",
      quote="BlipMQ uses numeric codes in NACK payloads:", binds="server"),
    # Client obligations ("Clients SHOULD")
    R("BLIP-CLIENT-001", "Error Codes", "SHOULD", "clients log NACKs with code and message", untestable=_CLIENT,
      quote="Clients SHOULD: - Log NACKs with `code` and `message`.", binds="client"),
    R("BLIP-CLIENT-002", "Error Codes", "SHOULD",
      "clients treat 400/401/404/426/500 as the table says (fix, re-key, resync, upgrade, retry)",
      untestable=_CLIENT,
      quote="Treat `400` as client bugs (fix payload and retry). - Treat `401` as auth "
            "misconfiguration (update key). - Treat `404` as out-of-sync state (e.g. expired "
            "subscription or duplicate ACK). - Treat `426` as protocol version mismatch (update "
            "client). - Treat `500` as transient server issues (retry with backoff).",
      level_note="the list's word is its heading's, \"Clients SHOULD:\"", binds="client"),
    R("BLIP-CLIENT-003", "Client Responsibilities", "SHOULD",
      "clients pipeline frames where appropriate", untestable=_CLIENT,
      quote="Clients SHOULD: - Pipeline frames where appropriate (e.g. multiple PUBLISH or POLL "
            "frames).",
      binds="client"),
    R("BLIP-CLIENT-004", "Client Responsibilities", "SHOULD",
      "clients use timeouts and backoff when POLL returns no data", untestable=_CLIENT,
      quote="Clients SHOULD: - Pipeline frames where appropriate (e.g. multiple PUBLISH or POLL "
            "frames). - Use timeouts and backoff when polling (`POLL`) if no data is returned.",
      binds="client"),
    R("BLIP-CLIENT-005", "Client Responsibilities", "SHOULD",
      "clients watch for NACKs and adjust", untestable=_CLIENT,
      quote="Clients SHOULD: - Pipeline frames where appropriate (e.g. multiple PUBLISH or POLL "
            "frames). - Use timeouts and backoff when polling (`POLL`) if no data is returned. - "
            "Watch for NACKs and adjust behavior accordingly.",
      binds="client"),
    # "After successful HELLO+AUTH: Client may send PUBLISH, SUBSCRIBE, POLL, and PING": read
    # as what a client sends only then (the server refuses anything earlier with 401).
    R("BLIP-CLIENT-006", "AUTH", "SHOULD",
      "clients send nothing but HELLO and AUTH before HELLO+AUTH completed",
      untestable=_CLIENT + "; the capture observer checks it",
      quote="After successful HELLO+AUTH: - Client may send PUBLISH, SUBSCRIBE, POLL, and PING.",
      level_note="the kit reads the permission \"may send ... after HELLO+AUTH\" as its "
                 "converse, that a client sends them only then (the server answers anything "
                 "earlier with 401): a reading, graded SHOULD, not the permission's MAY",
      binds="client"),
    # What happens to a client library under the kit's scenarios (wirecheck check-client,
    # conformance/clients/suite.py): its driver's outcome, not its bytes.
    R("BLIP-CLIENT-007", "Client outcomes", "SHOULD",
      "a client completes its workload when the server's bytes come split, joined or late",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="All communication happens over a single, long-lived TCP connection per client. "
            "Frames are length-prefixed and support pipelining.",
      level_note="length-prefixed frames can be cut anywhere by TCP; that a client copes, and "
                 "that its timeouts allow a slow link, is the kit's reading, graded SHOULD",
      binds="client"),
    R("BLIP-CLIENT-008", "Client outcomes", "SHOULD",
      "a NACK refusing a client's request reaches the application as an error (no success, no hang)",
      untestable=_CLIENT + "; check-client judges it",
      quote="Watch for NACKs and adjust behavior accordingly.", binds="client"),
    R("BLIP-CLIENT-009", "Client outcomes", "SHOULD",
      "a connection the server ends is reported to the application, not hung on",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="If `length == 0`, `length < 9`, or `length > MAX_FRAME_SIZE`, frame decoding fails "
            "and the connection is closed by the server.",
      level_note="the document lets the server close the connection; that a client notices is "
                 "the kit's reading",
      binds="client"),
    R("BLIP-CLIENT-010", "Client outcomes", "SHOULD",
      "every delivery reaches the application, no more often than the server delivered it "
      "(a QoS1 redelivery may reach it again)",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="`0` → QoS0 (AtMostOnce). - `1` → QoS1 (AtLeastOnce).", binds="client"),
    R("BLIP-CLIENT-011", "Client outcomes", "SHOULD",
      "legal server behaviour never crashes a client (a signal, an uncaught error)",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="Type-specific binary payload (may be empty).", binds="client"),
)
