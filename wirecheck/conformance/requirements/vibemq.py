"""VibeMQ requirements (vibemq-protocol.rst; the real implementation's behaviour, v1.8, from
SPEC_NOTES.md, section "VibeMQ").

Levels: the document's framing, message layout and command exchanges are MUST (it states them
in the indicative: "the server replies with the selected algorithm"); behaviour only the real
server shows (SPEC_NOTES) is SHOULD, so a target following the document alone is NON-STRICT,
except where a peer cannot interoperate without it (the error fields written only in Error,
which a strict reader of the document would refuse): MUST with ``source="SPEC_NOTES"``.
Profiles: ``document`` (default), ``vibemq-1.8`` (the real server), ``vibemq-1.0`` (protocol
1.0 framing, no compression flags byte).
"""
from . import Requirement as R

_NOTES = "SPEC_NOTES"
_CLIENT = "client behaviour: a server-facing suite cannot observe it (client conformance mode)"

# Quotes (and notes) several requirements share, verbatim from their source.
_ACK_TIMEOUT = "ack timeout 30 s, retries with backoff, then dead-letter queue."
_DELIVERY_MODES = "delivery modes RoundRobin, FanOutWithAck, FanOutWithoutAck, PriorityBased;"
_QUEUE_OPTIONS = ("CreateQueue options come from the payload in the real server and from headers "
                  "in the document;")
_REAL_ERROR_CODES = ("Error codes the real server emits beyond the document: AUTH_REQUIRED, "
                     "NOT_AUTHENTICATED, NOT_AUTHORIZED, INVALID_QUEUE, INVALID_PAYLOAD, "
                     "UNKNOWN_COMMAND, CONNECTION_LIMIT.")

REQUIREMENTS = (
    # --- Framing ---------------------------------------------------------------------------------
    R("VIBE-FRAME-001", "Frame Format", "MUST",
      "a frame is [u32 big-endian body length][u8 compression flags][body]; the length counts "
      "the (possibly compressed) body",
      quote="[4 bytes: body length in Big Endian uint32] [1 byte: compression flags] [N bytes: "
            "body] - **body length** — size of the (possibly compressed) body in bytes.",
      binds="both"),
    R("VIBE-FRAME-002", "Framing", "MUST",
      "frames are self-contained in the TCP stream: split over writes or several in one write, "
      "they are read the same",
      quote="**Length-prefix** approach is used to separate messages in the TCP stream. Each "
            "frame is self-contained and carries its own compression information.",
      binds="both"),
    R("VIBE-FRAME-003", "Compression Flags Byte", "MUST",
      "flags 0x00 none, 0x01 GZip, 0x02 Brotli; an unknown flag drops the connection",
      quote="| 0x00 | No compression | +--------+-----------------------------+ | 0x01 | GZip | "
            "+--------+-----------------------------+ | 0x02 | Brotli |",
      binds="both"),
    R("VIBE-FRAME-004", "Framing", "SHOULD",
      "a body length below 2 drops the connection", source=_NOTES,
      quote="body length < 2 rejected", binds="server"),
    R("VIBE-FRAME-005", "Framing", "SHOULD",
      "a body length above the maximum (1,048,576 by default, on the compressed length) drops "
      "the connection before the body is buffered", source=_NOTES,
      quote="max body 1,048,576 bytes (checked on the compressed length)", binds="server"),
    R("VIBE-FRAME-006", "Compression", "SHOULD",
      "a compressed body inflating past the limit (64 MiB by default) is refused, not "
      "allocated", source=_NOTES,
      quote="decompressed size capped at 64 MiB", binds="server"),
    R("VIBE-FRAME-007", "Protocol Versions", "MUST",
      "protocol 1.0 frames have no compression flags byte (profile vibemq-1.0)",
      quote="| 1.1 | Frame header extended with compression flags byte |", binds="both"),
    # --- Compression ------------------------------------------------------------------------------
    R("VIBE-COMP-001", "Negotiation", "MUST",
      "Connect's supported-compression lists algorithms in descending priority; ConnectAck's "
      "negotiated-compression names the one selected",
      quote="The client advertises its preferred algorithms in the Connect message "
            "(comma-separated, in descending priority). The server replies with the selected "
            "algorithm in ConnectAck.",
      binds="both"),
    R("VIBE-COMP-002", "Negotiation", "MUST",
      "when no algorithm is agreed, ConnectAck has no negotiated-compression header and no "
      "frame is compressed",
      quote="If the server omits the header, no compression is used.", binds="both"),
    R("VIBE-COMP-003", "Negotiation", "MUST",
      "after the handshake the server writes frames with the negotiated algorithm",
      quote="After the handshake, ``FrameWriter`` on both sides uses the negotiated algorithm.",
      binds="both"),
    R("VIBE-COMP-004", "Threshold", "MUST",
      "frames whose body is below the threshold (1,024 bytes by default) are sent uncompressed "
      "(flags 0x00); from the threshold on they are compressed",
      quote="Compression is applied only when the serialized body reaches the configured "
            "threshold (default **1 024 bytes**). Frames below the threshold are sent "
            "uncompressed (flags = ``0x00``).",
      binds="both"),
    R("VIBE-COMP-005", "Negotiation", "MUST",
      "the reader takes the compression flag from each frame: a stream mixing compressed and "
      "uncompressed frames (and either algorithm) is read correctly",
      quote="``FrameReader`` always reads the compression flag directly from each frame, so "
            "mixed-compression streams are handled correctly without shared state.",
      binds="both"),
    R("VIBE-COMP-006", "Negotiation", "SHOULD",
      "the server picks the first algorithm, in the client's order, that it supports",
      source=_NOTES,
      quote="the server picks the first algorithm in the *client's* order that it supports",
      binds="server"),
    R("VIBE-COMP-007", "Compression", "SHOULD",
      "a corrupted compressed body is an error (the connection is dropped or an Error "
      "INVALID_MESSAGE answers)", source="reading",
      quote="decompressed size capped at 64 MiB; body length < 2 rejected; unknown compression "
            "flag drops the connection;",
      level_note="the kit's reading: SPEC_NOTES does not say what a corrupted compressed body gets; "
                 "closest facts: the real server's other refusals of a bad frame",
      binds="server"),
    # --- Message format ---------------------------------------------------------------------------
    R("VIBE-MSG-001", "Binary Protocol Structure", "MUST",
      "fields in fixed order: version, type, id, queue, payload, headers, errorCode, "
      "errorMessage; lengths big-endian; length 0 means absent",
      quote="version (1 byte) | type (1 byte) | id (2B len + UTF-8) | queue (2B len + UTF-8) | "
            "payload (4B len + UTF-8 JSON) | headers (2B count + pairs) | errorCode (2B len + "
            "UTF-8) | errorMessage (2B len + UTF-8) All lengths are encoded as Big Endian. "
            "Length 0 means the field is absent/null.",
      binds="both"),
    R("VIBE-MSG-002", "Binary Protocol Structure", "MUST",
      "the payload is JSON in UTF-8: any JSON value published is delivered unchanged",
      quote="Payload data is stored as JSON in UTF-8 for easy debugging and UI display, while "
            "the protocol message structure uses a compact binary format.",
      binds="both"),
    R("VIBE-MSG-003", "Message Fields", "MUST",
      "the version byte is 1",
      quote="* - ``version`` - int - Protocol version (default: 1)", binds="both"),
    R("VIBE-MSG-004", "Binary Protocol Structure", "MUST",
      "the real codec writes errorCode/errorMessage only in Error (type 99): a body that ends "
      "after the headers is read with both absent", source=_NOTES,
      quote="the real codec writes `errorCode`/`errorMessage` only when type == 99 (Error); the "
            "document shows them in every message. A tolerant decoder accepts a body that ends "
            "after `headers` (both absent = null)",
      binds="both"),
    R("VIBE-MSG-005", "Binary Protocol Structure", "MUST",
      "a message with invalid UTF-8 or a payload that is not JSON is refused with an Error "
      "(INVALID_MESSAGE) or by dropping the connection",
      quote="* - ``INVALID_MESSAGE`` - Invalid message format", binds="server"),
    R("VIBE-MSG-006", "Command Types", "SHOULD",
      "a command type the protocol does not define is refused (Error, or the connection "
      "dropped), never acted upon",
      source="reading", quote="* - ``INVALID_MESSAGE`` - Invalid message format",
      level_note="the kit's reading, so SHOULD: the document lists the command types but does not say what an "
                 "undefined one gets; closest: the error code for an invalid message",
      binds="server"),
    R("VIBE-MSG-007", "Message Fields", "SHOULD",
      "the id must be non-empty", source=_NOTES,
      quote="The id must be non-empty.",
      level_note="a fact about the real codec, which the document does not state: graded SHOULD "
                 "like every SPEC_NOTES behaviour, so a target following the document alone is "
                 "NON-STRICT",
      binds="both"),
    R("VIBE-MSG-008", "Binary Protocol Structure", "SHOULD",
      "null and \"\" strings both encode as length 0 and read as absent; a header count of 0 "
      "reads as no headers", source=_NOTES,
      quote="null and \"\" both encode as length 0 and decode as null.", binds="both"),
    # --- Connection -------------------------------------------------------------------------------
    R("VIBE-CONN-001", "Connect", "MUST",
      "Connect (with the right authPassword) is answered with ConnectAck",
      quote="ConnectAck ~~~~~~~~~~ **Direction:** Server → Client **Description:** Connection "
            "acknowledgment.",
      binds="server"),
    R("VIBE-CONN-002", "Error Codes", "MUST",
      "a wrong authPassword is answered with Error AUTH_FAILED",
      quote="* - ``AUTH_FAILED`` - Authentication error", binds="server"),
    R("VIBE-CONN-003", "Connect", "SHOULD",
      "before Connect only Connect and Ping are allowed; anything else is answered with Error "
      "NOT_AUTHENTICATED", source=_NOTES,
      quote="before Connect only Connect and Ping are allowed (others -> Error "
            "`NOT_AUTHENTICATED`)",
      binds="server"),
    R("VIBE-CONN-004", "Disconnect", "MUST",
      "after Disconnect the server closes the connection",
      quote="Disconnect ~~~~~~~~~~ **Direction:** Client → Server **Description:** Disconnection "
            "request.",
      binds="server"),
    R("VIBE-CONN-005", "ConnectAck", "SHOULD",
      "ConnectAck carries the connection's headers (document: serverVersion, connectionId; the "
      "real server: a new id and negotiated-compression only)",
      quote="{ \"id\": \"conn_123\", \"type\": \"connectAck\", \"headers\": { \"serverVersion\": "
            "\"1.0.0\", \"connectionId\": \"srv_456\" } }",
      level_note="the headers are only in the document's example, and the real server sends "
                 "others (a new id and negotiated-compression only, SPEC_NOTES): graded SHOULD",
      binds="server"),
    R("VIBE-PING-001", "Ping", "MUST",
      "Ping is answered with Pong carrying the same id",
      quote="Client → Server: { \"id\": \"ping_001\", \"type\": \"ping\" } Server → Client: { "
            "\"id\": \"ping_001\", \"type\": \"pong\" }",
      binds="server"),
    # --- Publish / subscribe ----------------------------------------------------------------------
    R("VIBE-PUB-001", "Publish", "MUST",
      "Publish is answered with PublishAck carrying the message's id",
      quote="**Description:** Publish acknowledgment. .. code-block:: json { \"id\": "
            "\"msg_123\", \"type\": \"publishAck\", \"headers\": { \"messageId\": \"msg_123\", "
            "\"queueName\": \"notifications\" } }",
      binds="server"),
    R("VIBE-PUB-002", "PublishAck", "SHOULD",
      "PublishAck's headers name the message and queue (messageId, queueName) in the document's "
      "reading; the real server sends none",
      quote="**Description:** Publish acknowledgment. .. code-block:: json { \"id\": "
            "\"msg_123\", \"type\": \"publishAck\", \"headers\": { \"messageId\": \"msg_123\", "
            "\"queueName\": \"notifications\" } }",
      level_note="the headers are only in the document's example, and the real server sends none "
                 "(SPEC_NOTES): graded SHOULD",
      binds="server"),
    R("VIBE-SUB-001", "Subscribe", "MUST",
      "Subscribe is answered with SubscribeAck (headers queueName, subscriptionId)",
      quote="**Description:** Subscription acknowledgment. .. code-block:: json { \"id\": "
            "\"sub_123\", \"type\": \"subscribeAck\", \"headers\": { \"queueName\": "
            "\"notifications\", \"subscriptionId\": \"sub_123\" } }",
      binds="server"),
    R("VIBE-SUB-002", "Unsubscribe", "MUST",
      "Unsubscribe is answered with UnsubscribeAck (header queueName); no delivery follows",
      quote="**Description:** Unsubscription acknowledgment. .. code-block:: json { \"id\": "
            "\"unsub_123\", \"type\": \"unsubscribeAck\", \"headers\": { \"queueName\": "
            "\"notifications\" } }",
      binds="server"),
    R("VIBE-DEL-001", "Deliver", "MUST",
      "a message published to a queue is delivered to a subscriber as Deliver with the queue, "
      "the payload and the publisher's message id",
      quote="Deliver ~~~~~~~ **Direction:** Server → Client **Description:** Message delivery to "
            "subscriber.",
      binds="server"),
    R("VIBE-DEL-002", "Deliver", "MUST",
      "Deliver carries the headers priority and deliveryAttempts",
      quote="{ \"id\": \"msg_123\", \"type\": \"deliver\", \"queue\": \"notifications\", "
            "\"payload\": { \"title\": \"Hello\", \"body\": \"World\" }, \"headers\": { "
            "\"priority\": \"high\", \"deliveryAttempts\": \"1\" } }",
      binds="server"),
    R("VIBE-DEL-003", "Message Headers", "SHOULD",
      "the publisher's headers (correlationId, timestamp, ...) are delivered with the message",
      quote="* - ``correlationId`` - ID for request correlation * - ``timestamp`` - Creation "
            "time (ISO 8601)",
      level_note="the document lists the message headers but does not say a delivery carries the "
                 "publisher's: the kit's reading, graded SHOULD",
      binds="server"),
    R("VIBE-ACK-001", "Ack", "MUST",
      "Ack acknowledges a delivered message (by its id): it is not delivered again",
      quote="Ack ~~~ **Direction:** Client → Server **Description:** Message receipt "
            "acknowledgment.",
      binds="server"),
    # --- Queues -----------------------------------------------------------------------------------
    R("VIBE-QUEUE-001", "CreateQueue", "MUST",
      "CreateQueue creates a queue with deliveryMode, maxQueueSize and messageTtl (and "
      "enableDeadLetterQueue, maxRetryAttempts)",
      quote="{ \"id\": \"create_123\", \"type\": \"createQueue\", \"queue\": \"my-queue\", "
            "\"headers\": { \"deliveryMode\": \"RoundRobin\", \"maxQueueSize\": \"10000\", "
            "\"messageTtl\": \"3600000\" } }",
      binds="server"),
    R("VIBE-QUEUE-002", "Error Codes", "MUST",
      "CreateQueue of an existing queue is answered with Error QUEUE_EXISTS",
      quote="* - ``QUEUE_EXISTS`` - Queue already exists", binds="server"),
    R("VIBE-QUEUE-003", "DeleteQueue", "MUST",
      "DeleteQueue removes a queue; an unknown one is answered with Error QUEUE_NOT_FOUND",
      quote="DeleteQueue ~~~~~~~~~~~ **Direction:** Client → Server **Description:** Delete "
            "queue.",
      binds="server"),
    R("VIBE-QUEUE-004", "QueueInfo", "MUST",
      "QueueInfo answers with a payload {name, messageCount, subscriberCount, deliveryMode, "
      "maxSize, createdAt}; an unknown queue with Error QUEUE_NOT_FOUND",
      quote="{ \"id\": \"info_123\", \"type\": \"queueInfo\", \"queue\": \"my-queue\", "
            "\"payload\": { \"name\": \"my-queue\", \"messageCount\": 42, \"subscriberCount\": "
            "3, \"deliveryMode\": \"RoundRobin\", \"maxSize\": 10000, \"createdAt\": "
            "\"2026-02-18T10:00:00Z\" } }",
      binds="server"),
    R("VIBE-QUEUE-005", "ListQueues", "MUST",
      "ListQueues answers with a payload listing the queue names",
      quote="{ \"id\": \"list_123\", \"type\": \"listQueues\", \"payload\": [\"queue1\", "
            "\"queue2\", \"queue3\"] }",
      binds="server"),
    R("VIBE-QUEUE-006", "Publish", "SHOULD",
      "publishing or subscribing to a queue that does not exist creates it (the real server)",
      source="reading",
      quote=_QUEUE_OPTIONS,
      level_note="the kit's reading: SPEC_NOTES does not say that publishing or subscribing to a "
                 "missing queue creates it; closest: its note on how the real server creates "
                 "queues",
      binds="server"),
    # --- Delivery semantics (SPEC_NOTES: the real server's modes and timers) ------------------------
    R("VIBE-MODE-001", "Queue Headers", "SHOULD",
      "RoundRobin: each message goes to one subscriber, in turn", source=_NOTES,
      quote=_DELIVERY_MODES, binds="server"),
    R("VIBE-MODE-002", "Queue Headers", "SHOULD",
      "FanOutWithAck: each message goes to every subscriber, each must ack", source=_NOTES,
      quote=_DELIVERY_MODES, binds="server"),
    R("VIBE-MODE-003", "Queue Headers", "SHOULD",
      "FanOutWithoutAck: each message goes to every subscriber, no ack expected", source=_NOTES,
      quote=_DELIVERY_MODES, binds="server"),
    R("VIBE-MODE-004", "Message Headers", "SHOULD",
      "PriorityBased: higher priority (Low < Normal < High < Critical) is delivered first",
      source=_NOTES,
      quote=_DELIVERY_MODES, binds="server"),
    R("VIBE-TTL-001", "Queue Headers", "SHOULD",
      "a message older than messageTtl is not delivered", source="reading",
      quote=_QUEUE_OPTIONS,
      level_note="the kit's reading: SPEC_NOTES does not mention the TTL (the document's Queue "
                 "Headers table has \"``messageTtl`` - TTL in milliseconds\"); closest: its note "
                 "on the real server's queue options",
      binds="server"),
    R("VIBE-RETRY-001", "Message Headers", "SHOULD",
      "a delivery not acked within the ack timeout is delivered again with deliveryAttempts "
      "incremented", source=_NOTES,
      quote=_ACK_TIMEOUT, binds="server"),
    R("VIBE-DLQ-001", "Queue Headers", "SHOULD",
      "after maxRetryAttempts a message goes to the dead-letter queue (enableDeadLetterQueue)",
      source=_NOTES,
      quote=_ACK_TIMEOUT, binds="server"),
    R("VIBE-OVER-001", "Queue Headers", "SHOULD",
      "a queue at maxQueueSize does not grow past it", source="reading",
      quote=_QUEUE_OPTIONS,
      level_note="the kit's reading: SPEC_NOTES does not mention maxQueueSize (the document's Queue "
                 "Headers table has \"``maxQueueSize`` - Maximum size\"); closest: its note on "
                 "the real server's queue options",
      binds="server"),
    # --- Errors -----------------------------------------------------------------------------------
    R("VIBE-ERR-001", "Error", "MUST",
      "an Error is type 99 with errorCode and errorMessage",
      quote="{ \"id\": \"err_123\", \"type\": \"error\", \"errorCode\": \"AUTH_FAILED\", "
            "\"errorMessage\": \"Invalid username or password\" }",
      binds="server"),
    R("VIBE-ERR-002", "Error Codes", "MUST",
      "operations on a queue that does not exist are answered with Error QUEUE_NOT_FOUND",
      quote="* - ``QUEUE_NOT_FOUND`` - Queue not found", binds="server"),
    R("VIBE-ERR-003", "Error Codes", "SHOULD",
      "a client over the rate limit is answered with Error RATE_LIMITED", source="reading",
      quote=_REAL_ERROR_CODES,
      level_note="the kit's reading: RATE_LIMITED is not in SPEC_NOTES but in the document "
                 "(\"``RATE_LIMITED`` - Rate limit exceeded\"), which names no limit; closest: "
                 "SPEC_NOTES' list of the real server's other error codes",
      binds="server"),
    R("VIBE-ERR-005", "Error Codes", "SHOULD",
      "a Connect without authPassword is refused (document: AUTH_FAILED; the real server: "
      "AUTH_REQUIRED)", source=_NOTES,
      quote=_REAL_ERROR_CODES, binds="server"),
    R("VIBE-ERR-006", "Error Codes", "SHOULD",
      "a command that needs a queue and names none is refused (document: INVALID_MESSAGE; the "
      "real server: INVALID_QUEUE)", source=_NOTES,
      quote=_REAL_ERROR_CODES, binds="server"),
    R("VIBE-ERR-007", "Error Codes", "SHOULD",
      "CreateQueue with invalid options is refused (document: INVALID_MESSAGE; the real server: "
      "INVALID_PAYLOAD)", source=_NOTES,
      quote=_REAL_ERROR_CODES, binds="server"),
    R("VIBE-ERR-008", "Error Codes", "SHOULD",
      "a connection beyond the server's connection limit is refused with CONNECTION_LIMIT and "
      "closed", source=_NOTES,
      untestable="the limit is the target's configuration (1,000 by default): a suite cannot "
                 "open that many connections to each target; tests/reference_impl/vibemq/test_vibemq_broker.py checks "
                 "the reference broker with a low limit",
      quote=_REAL_ERROR_CODES, binds="server"),
    R("VIBE-ERR-004", "Error Codes", "MUST",
      "SERVER_ERROR: an internal failure of the server",
      untestable="the document names no path that produces it: a black-box suite cannot "
                 "make a target fail internally; the reference broker sends it when its queue "
                 "or subscription limits are reached (tests/reference_impl/vibemq/test_vibemq_session.py)",
      quote="* - ``SERVER_ERROR`` - Internal server error", binds="server"),
    R("VIBE-CLIENT-001", "Threshold", "MUST",
      "a client compresses only frames at or above its threshold, with the negotiated "
      "algorithm", untestable=_CLIENT,
      quote="Compression is applied only when the serialized body reaches the configured "
            "threshold (default **1 024 bytes**).",
      binds="client"),
    # What happens to a client library under the kit's scenarios (wirecheck check-client,
    # conformance/clients/suite.py): its driver's outcome, not its bytes.
    R("VIBE-CLIENT-002", "Client outcomes", "SHOULD",
      "a client completes its workload when the server's bytes come split, joined or late, "
      "compressed or not",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="**Length-prefix** approach is used to separate messages in the TCP stream. Each frame "
            "is self-contained and carries its own compression information.",
      binds="client"),
    R("VIBE-CLIENT-003", "Client outcomes", "SHOULD",
      "an Error answering a client's request reaches the application as an error (no success, no hang)",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="Error ~~~~~ **Direction:** Server → Client **Description:** Error message.",
      binds="client"),
    R("VIBE-CLIENT-004", "Client outcomes", "SHOULD",
      "a connection the server ends is reported to the application, not hung on",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="unknown compression flag drops the connection", binds="client"),
    R("VIBE-CLIENT-005", "Client outcomes", "SHOULD",
      "every Deliver reaches the application, no more often than the server delivered it",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="Ack ~~~ **Direction:** Client → Server **Description:** Message receipt acknowledgment.",
      binds="client"),
    R("VIBE-CLIENT-006", "Client outcomes", "SHOULD",
      "legal server behaviour never crashes a client (a signal, an uncaught error)",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="All lengths are encoded as Big Endian. Length 0 means the field is absent/null.",
      binds="client"),
)
