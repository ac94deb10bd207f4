"""Micromessage2 requirements (micromessage2.md; errata and the real implementation from
SPEC_NOTES.md, "Micromessage2").

The document is a work in progress: where it gives no rule (ERROR and SUBSCRIBE layouts, what a
server does with an unknown command or a malformed frame) the catalogue states the kit's
reading, at SHOULD, so a target that reads otherwise is NON-STRICT, not failed. Profiles:
``document`` (default) and ``sharpmessaging`` (the real implementation).
"""
from . import Requirement as R

_NOTES = "SPEC_NOTES"
_CLIENT = "client behaviour: a server-facing suite cannot observe it (tested on the reference client)"

REQUIREMENTS = (
    # --- Handshake ----------------------------------------------------------------------------
    R("MM2-HS-001", "Handshake", "MUST",
      "the client sends [major][minor][flags][identity length][identity][u16 required length]"
      "[required][u16 optional length][optional]; the server answers with a handshake of the "
      "same layout"),
    R("MM2-HS-002", "Handshake", "MUST",
      "RequiredExtensionsLength and OptionalExtensionsLength may be zero: the field is absent"),
    R("MM2-HS-003", "Handshake", "SHOULD",
      "if versions differ the lowest version is used (the reply carries the lower minor)"),
    R("MM2-HS-004", "Handshake", "SHOULD",
      "a peer that does not speak the lower of the two versions sends an ERROR frame and "
      "disconnects"),
    R("MM2-HS-005", "Handshake", "MUST",
      "a server that does not implement an extension the client requires sends an ERROR frame"),
    R("MM2-HS-006", "Handshake", "MUST",
      "... and disconnects directly after it (the real implementation keeps the connection: "
      "waived in profile sharpmessaging)"),
    R("MM2-HS-007", "Handshake", "MUST",
      "the final handshake may only use extensions both sides implement; otherwise ERROR and "
      "disconnect"),
    R("MM2-HS-008", "Handshake", "MUST",
      "the final handshake must include the extensions the server requires; otherwise ERROR "
      "and disconnect"),
    R("MM2-HS-009", "Handshake", "SHOULD",
      "the server's reply suggests, as optional, the client's optional extensions it supports "
      "('I suggest Y like you')"),
    R("MM2-HS-010", "Handshake", "MUST",
      "a client that does not implement an extension the server requires sends an ERROR frame "
      "and disconnects: the server ends the connection", untestable=_CLIENT),
    R("MM2-HS-011", "Handshake", "MUST",
      "once the handshake is complete extensions are indexed (from 1) in the order of the final "
      "handshake: Required, then Optional"),
    R("MM2-HS-012", "Handshake", "MUST",
      "a handshake split over several writes, or followed in the same write by frames, is read "
      "the same"),
    R("MM2-HS-013", "Handshake", "MUST",
      "an extension is a FIELD name with optional FIELD=URL-encoded-value properties; entries "
      "are separated by ';' (erratum 1: 'json;dotnet' is 11 bytes)"),
    R("MM2-HS-014", "Handshake", "SHOULD",
      "an optional extension the server does not know (a vendor 'x-' one) is not used: it is "
      "left out of the reply, and the connection proceeds"),
    # --- Frames -------------------------------------------------------------------------------
    R("MM2-FRAME-001", "Frames", "MUST",
      "every frame starts with a flags byte; with none of COMMAND (1), EXTENSION (2), ERROR (4) "
      "it is a MESSAGE/SEND frame"),
    R("MM2-FRAME-002", "Frames", "MUST",
      "LARGE_PAYLOAD (8): the payload length is 4 bytes instead of 1 (a peer writes it whenever "
      "a payload exceeds 255 bytes, and accepts it on any size)"),
    R("MM2-FRAME-003", "Frames", "SHOULD",
      "a frame with an unknown flag bit, or two frame-type bits, gets an ERROR frame and the "
      "connection is closed (the kit's reading: the stream cannot be cut after it)"),
    R("MM2-FRAME-004", "MESSAGE", "MUST",
      "a payload split over frames with CONTINUED on all but the last is received whole"),
    R("MM2-FRAME-005", "Frames", "MUST",
      "frames split over writes, or several in one write, are read the same"),
    R("MM2-FRAME-006", "MESSAGE", "SHOULD",
      "payloads larger than 1 MiB are sent as several CONTINUED frames"),
    R("MM2-FRAME-007", "Frames", "SHOULD",
      "a length above the receiver's limit is refused (ERROR, close) before the payload is "
      "buffered"),
    # --- MESSAGE / SEND -----------------------------------------------------------------------
    R("MM2-MSG-001", "MESSAGE", "MUST",
      "a MESSAGE is [u16 sequence][u8 destination length][destination][u16 properties length]"
      "[properties][u8|u32 payload length][payload], numbers big-endian"),
    R("MM2-MSG-002", "MESSAGE", "MUST",
      "sequence numbers count the messages pushed on a connection: each is one more than the one "
      "before (the document's ack algorithm: 'numberToAck = lastReceivedNumber == 65535 ? 1 : "
      "lastReceivedNumber + 1')"),
    R("MM2-MSG-003", "MESSAGE", "MUST",
      "the sequence number wraps once reaching 65535 (to 1)",
      untestable="needs 65,535 deliveries on one connection; the wrap of the pusher is tested "
                 "in memory (tests/test_mm2_session.py) and across the wire on the receiving side "
                 "(MM2-ACK-008)"),
    R("MM2-MSG-004", "MESSAGE", "MUST",
      "properties are key:value pairs each ended by ';', carried to the receivers unchanged"),
    R("MM2-MSG-005", "Reliable messaging", "MUST",
      "without an ack extension the pusher pushes messages as soon as they arrive"),
    R("MM2-MSG-007", "MESSAGE", "SHOULD",
      "the first message pushed on a connection is numbered 1 (the real implementation; the "
      "document does not fix where the count starts)", source=_NOTES),
    R("MM2-MSG-006", "MESSAGE", "SHOULD",
      "a SEND without a destination is refused with an ERROR frame (the kit's reading)"),
    # --- COMMAND ------------------------------------------------------------------------------
    R("MM2-CMD-001", "COMMAND", "MUST",
      "a COMMAND is [u8|u32 length][name;key=value,...] with FIELD name and keys and "
      "URL-encoded values"),
    R("MM2-CMD-002", "COMMAND", "SHOULD",
      "an unknown command gets an ERROR frame and the connection stays open (the kit's "
      "reading; the suite's barrier relies on it)"),
    # --- acks ---------------------------------------------------------------------------------
    R("MM2-ACK-001", "Reliable messaging", "MUST",
      "ACKs are disabled by default: without an ack extension no ack frame is sent"),
    R("MM2-ACK-002", "Reliable messaging", "MUST",
      "with 'ack' the pusher sends a new message only once the previous one is acked "
      "(sharpmessaging: MessagesPerAck at a time)"),
    R("MM2-ACK-003", "batch-ack", "MUST",
      "with 'batch-ack' the pusher stops when the negotiated count of messages is unacked "
      "(erratum 3: the count is read from max-count, count or batch-max)"),
    R("MM2-ACK-004", "batch-ack", "MUST",
      "the default count is 10 when the handshake gives none"),
    R("MM2-ACK-005", "batch-ack", "MUST",
      "an ack of sequence number N acknowledges every message up to N; the pusher goes on"),
    R("MM2-ACK-006", "batch-ack", "MUST",
      "a receiver may ack before the count is reached; the pusher then resets its counter"),
    R("MM2-ACK-007", "batch-ack", "MUST",
      "an ack is an EXTENSION frame: [flags 2][extension id][length 2][u16 sequence] "
      "(erratum 2: the document's example uses flag 4); the server acks the SENDs it receives"),
    R("MM2-ACK-008", "batch-ack", "MUST",
      "acks are cumulative across the wrap: the receiver of an ack acknowledges every message "
      "up to it, wrapped or not (erratum 6: 65534, 65535, 1, ...)"),
    R("MM2-ACK-009", "batch-ack", "SHOULD",
      "an ack of a sequence number not in flight gets an ERROR frame (the kit's reading)"),
    R("MM2-ACK-010", "Reliable messaging", "SHOULD",
      "the receiver acks within its ack delay without waiting for the window to fill "
      "(the real AckExpireTime, 500 ms)", source=_NOTES),
    # --- json, dotnet -------------------------------------------------------------------------
    R("MM2-JSON-001", "json", "SHOULD",
      "with 'json' agreed, MESSAGE/SEND payloads are JSON: a SEND that is not gets an ERROR "
      "frame (the kit's reading)"),
    R("MM2-NET-001", "dotnet", "MUST",
      "with 'dotnet' an EXTENSION frame carrying the type name is sent before each MESSAGE "
      "(erratum 4: with flag 2 and the extension id)"),
    R("MM2-NET-002", "dotnet", "SHOULD",
      "a message without its own type frame has the type of the last one"),
    # --- pub/sub ------------------------------------------------------------------------------
    R("MM2-PS-001", "Publish/subscribe", "MUST",
      "SUBSCRIBE is a COMMAND of the pubsub extension (the kit's reading: "
      "subscribe;destination=D[,filter=F]); without the extension it gets an ERROR frame"),
    R("MM2-PS-002", "Glossary: TOPIC", "MUST",
      "a message to a topic is delivered to every subscriber"),
    R("MM2-PS-003", "Glossary: QUEUE", "MUST",
      "a message to a queue is delivered to one receiver only, in order"),
    R("MM2-PS-004", "Filtering operators", "MUST",
      "a subscriber with a filter receives only the messages whose properties match it; every "
      "operator of the document (=, !=, <, <=, >, >=, &, ~) for numbers, dates and text"),
    R("MM2-PS-005", "Filtering operators", "MUST",
      "text comparison is case sensitive"),
    R("MM2-PS-006", "FILTER_VALUE", "MUST",
      "filter values are typed by a prefix (N number, D date, T URL-encoded text); numbers "
      "support long values"),
    R("MM2-PS-007", "Filtering operators", "SHOULD",
      "a filter that cannot be read (no operator, an untyped value, <= on text) gets an ERROR "
      "frame (the kit's reading)"),
    # --- ERROR --------------------------------------------------------------------------------
    R("MM2-ERR-001", "Frames", "MUST",
      "an ERROR frame is [flags 4][u8|u32 length][UTF-8 text] (erratum 7: the document gives no "
      "layout; this is the real implementation's)", source=_NOTES),
    R("MM2-ERR-002", "Frames", "SHOULD",
      "after an ERROR frame from the client (other than in the handshake) the server ends the "
      "connection (the kit's reading)"),
)
