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

REQUIREMENTS = (
    # --- Framing ---------------------------------------------------------------------------------
    R("VIBE-FRAME-001", "Frame Format", "MUST",
      "a frame is [u32 big-endian body length][u8 compression flags][body]; the length counts "
      "the (possibly compressed) body"),
    R("VIBE-FRAME-002", "Framing", "MUST",
      "frames are self-contained in the TCP stream: split over writes or several in one write, "
      "they are read the same"),
    R("VIBE-FRAME-003", "Compression Flags Byte", "MUST",
      "flags 0x00 none, 0x01 GZip, 0x02 Brotli; an unknown flag drops the connection"),
    R("VIBE-FRAME-004", "Framing", "SHOULD",
      "a body length below 2 drops the connection", source=_NOTES),
    R("VIBE-FRAME-005", "Framing", "SHOULD",
      "a body length above the maximum (1,048,576 by default, on the compressed length) drops "
      "the connection before the body is buffered", source=_NOTES),
    R("VIBE-FRAME-006", "Compression", "SHOULD",
      "a compressed body inflating past the limit (64 MiB by default) is refused, not "
      "allocated", source=_NOTES),
    R("VIBE-FRAME-007", "Protocol Versions", "MUST",
      "protocol 1.0 frames have no compression flags byte (profile vibemq-1.0)"),
    # --- Compression ------------------------------------------------------------------------------
    R("VIBE-COMP-001", "Negotiation", "MUST",
      "Connect's supported-compression lists algorithms in descending priority; ConnectAck's "
      "negotiated-compression names the one selected"),
    R("VIBE-COMP-002", "Negotiation", "MUST",
      "when no algorithm is agreed, ConnectAck has no negotiated-compression header and no "
      "frame is compressed"),
    R("VIBE-COMP-003", "Negotiation", "MUST",
      "after the handshake the server writes frames with the negotiated algorithm"),
    R("VIBE-COMP-004", "Threshold", "MUST",
      "frames whose body is below the threshold (1,024 bytes by default) are sent uncompressed "
      "(flags 0x00); from the threshold on they are compressed"),
    R("VIBE-COMP-005", "Negotiation", "MUST",
      "the reader takes the compression flag from each frame: a stream mixing compressed and "
      "uncompressed frames (and either algorithm) is read correctly"),
    R("VIBE-COMP-006", "Negotiation", "SHOULD",
      "the server picks the first algorithm, in the client's order, that it supports",
      source=_NOTES),
    R("VIBE-COMP-007", "Compression", "SHOULD",
      "a corrupted compressed body is an error (the connection is dropped or an Error "
      "INVALID_MESSAGE answers)", source=_NOTES),
    # --- Message format ---------------------------------------------------------------------------
    R("VIBE-MSG-001", "Binary Protocol Structure", "MUST",
      "fields in fixed order: version, type, id, queue, payload, headers, errorCode, "
      "errorMessage; lengths big-endian; length 0 means absent"),
    R("VIBE-MSG-002", "Binary Protocol Structure", "MUST",
      "the payload is JSON in UTF-8: any JSON value published is delivered unchanged"),
    R("VIBE-MSG-003", "Message Fields", "MUST",
      "the version byte is 1"),
    R("VIBE-MSG-004", "Binary Protocol Structure", "MUST",
      "the real codec writes errorCode/errorMessage only in Error (type 99): a body that ends "
      "after the headers is read with both absent", source=_NOTES),
    R("VIBE-MSG-005", "Binary Protocol Structure", "MUST",
      "a message with invalid UTF-8 or a payload that is not JSON is refused with an Error "
      "(INVALID_MESSAGE) or by dropping the connection"),
    R("VIBE-MSG-006", "Command Types", "MUST",
      "a command type the protocol does not define is refused (Error, or the connection "
      "dropped), never acted upon"),
    R("VIBE-MSG-007", "Message Fields", "SHOULD",
      "the id must be non-empty", source=_NOTES),
    R("VIBE-MSG-008", "Binary Protocol Structure", "SHOULD",
      "null and \"\" strings both encode as length 0 and read as absent; a header count of 0 "
      "reads as no headers", source=_NOTES),
    # --- Connection -------------------------------------------------------------------------------
    R("VIBE-CONN-001", "Connect", "MUST",
      "Connect (with the right authPassword) is answered with ConnectAck"),
    R("VIBE-CONN-002", "Error Codes", "MUST",
      "a wrong authPassword is answered with Error AUTH_FAILED"),
    R("VIBE-CONN-003", "Connect", "SHOULD",
      "before Connect only Connect and Ping are allowed; anything else is answered with Error "
      "NOT_AUTHENTICATED", source=_NOTES),
    R("VIBE-CONN-004", "Disconnect", "MUST",
      "after Disconnect the server closes the connection"),
    R("VIBE-CONN-005", "ConnectAck", "SHOULD",
      "ConnectAck carries the connection's headers (document: serverVersion, connectionId; the "
      "real server: a new id and negotiated-compression only)"),
    R("VIBE-PING-001", "Ping", "MUST",
      "Ping is answered with Pong carrying the same id"),
    # --- Publish / subscribe ----------------------------------------------------------------------
    R("VIBE-PUB-001", "Publish", "MUST",
      "Publish is answered with PublishAck carrying the message's id"),
    R("VIBE-PUB-002", "PublishAck", "SHOULD",
      "PublishAck's headers name the message and queue (messageId, queueName) in the document's "
      "reading; the real server sends none"),
    R("VIBE-SUB-001", "Subscribe", "MUST",
      "Subscribe is answered with SubscribeAck (headers queueName, subscriptionId)"),
    R("VIBE-SUB-002", "Unsubscribe", "MUST",
      "Unsubscribe is answered with UnsubscribeAck (header queueName); no delivery follows"),
    R("VIBE-DEL-001", "Deliver", "MUST",
      "a message published to a queue is delivered to a subscriber as Deliver with the queue, "
      "the payload and the publisher's message id"),
    R("VIBE-DEL-002", "Deliver", "MUST",
      "Deliver carries the headers priority and deliveryAttempts"),
    R("VIBE-DEL-003", "Message Headers", "SHOULD",
      "the publisher's headers (correlationId, timestamp, ...) are delivered with the message"),
    R("VIBE-ACK-001", "Ack", "MUST",
      "Ack acknowledges a delivered message (by its id): it is not delivered again"),
    # --- Queues -----------------------------------------------------------------------------------
    R("VIBE-QUEUE-001", "CreateQueue", "MUST",
      "CreateQueue creates a queue with deliveryMode, maxQueueSize and messageTtl (and "
      "enableDeadLetterQueue, maxRetryAttempts)"),
    R("VIBE-QUEUE-002", "Error Codes", "MUST",
      "CreateQueue of an existing queue is answered with Error QUEUE_EXISTS"),
    R("VIBE-QUEUE-003", "DeleteQueue", "MUST",
      "DeleteQueue removes a queue; an unknown one is answered with Error QUEUE_NOT_FOUND"),
    R("VIBE-QUEUE-004", "QueueInfo", "MUST",
      "QueueInfo answers with a payload {name, messageCount, subscriberCount, deliveryMode, "
      "maxSize, createdAt}; an unknown queue with Error QUEUE_NOT_FOUND"),
    R("VIBE-QUEUE-005", "ListQueues", "MUST",
      "ListQueues answers with a payload listing the queue names"),
    R("VIBE-QUEUE-006", "Publish", "SHOULD",
      "publishing or subscribing to a queue that does not exist creates it (the real server)",
      source=_NOTES),
    # --- Delivery semantics (SPEC_NOTES: the real server's modes and timers) ------------------------
    R("VIBE-MODE-001", "Queue Headers", "SHOULD",
      "RoundRobin: each message goes to one subscriber, in turn", source=_NOTES),
    R("VIBE-MODE-002", "Queue Headers", "SHOULD",
      "FanOutWithAck: each message goes to every subscriber, each must ack", source=_NOTES),
    R("VIBE-MODE-003", "Queue Headers", "SHOULD",
      "FanOutWithoutAck: each message goes to every subscriber, no ack expected", source=_NOTES),
    R("VIBE-MODE-004", "Message Headers", "SHOULD",
      "PriorityBased: higher priority (Low < Normal < High < Critical) is delivered first",
      source=_NOTES),
    R("VIBE-TTL-001", "Queue Headers", "SHOULD",
      "a message older than messageTtl is not delivered", source=_NOTES),
    R("VIBE-RETRY-001", "Message Headers", "SHOULD",
      "a delivery not acked within the ack timeout is delivered again with deliveryAttempts "
      "incremented", source=_NOTES),
    R("VIBE-DLQ-001", "Queue Headers", "SHOULD",
      "after maxRetryAttempts a message goes to the dead-letter queue (enableDeadLetterQueue)",
      source=_NOTES),
    R("VIBE-OVER-001", "Queue Headers", "SHOULD",
      "a queue at maxQueueSize does not grow past it", source=_NOTES),
    # --- Errors -----------------------------------------------------------------------------------
    R("VIBE-ERR-001", "Error", "MUST",
      "an Error is type 99 with errorCode and errorMessage"),
    R("VIBE-ERR-002", "Error Codes", "MUST",
      "operations on a queue that does not exist are answered with Error QUEUE_NOT_FOUND"),
    R("VIBE-ERR-003", "Error Codes", "SHOULD",
      "a client over the rate limit is answered with Error RATE_LIMITED", source=_NOTES),
    R("VIBE-ERR-005", "Error Codes", "SHOULD",
      "a Connect without authPassword is refused (document: AUTH_FAILED; the real server: "
      "AUTH_REQUIRED)", source=_NOTES),
    R("VIBE-ERR-006", "Error Codes", "SHOULD",
      "a command that needs a queue and names none is refused (document: INVALID_MESSAGE; the "
      "real server: INVALID_QUEUE)", source=_NOTES),
    R("VIBE-ERR-007", "Error Codes", "SHOULD",
      "CreateQueue with invalid options is refused (document: INVALID_MESSAGE; the real server: "
      "INVALID_PAYLOAD)", source=_NOTES),
    R("VIBE-ERR-008", "Error Codes", "SHOULD",
      "a connection beyond the server's connection limit is refused with CONNECTION_LIMIT and "
      "closed", source=_NOTES,
      untestable="the limit is the target's configuration (1,000 by default): a suite cannot "
                 "open that many connections to each target; tests/test_vibemq_broker.py checks "
                 "the reference broker with a low limit"),
    R("VIBE-ERR-004", "Error Codes", "MUST",
      "SERVER_ERROR: an internal failure of the server",
      untestable="the document names no path that produces it: a black-box suite cannot "
                 "make a target fail internally; the reference broker sends it when its queue "
                 "or subscription limits are reached (tests/test_vibemq_session.py)"),
    R("VIBE-CLIENT-001", "Threshold", "MUST",
      "a client compresses only frames at or above its threshold, with the negotiated "
      "algorithm", untestable=_CLIENT),
)
