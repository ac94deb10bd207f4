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

_CLIENT_OUTCOME = ("client behaviour: a server-facing suite cannot observe it; "
                   "check-client judges it")

REQUIREMENTS = (
    # --- Handshake ----------------------------------------------------------------------------
    # binds both: the quote opens the client's table; the server's reply has a table of its own
    # right after ("Typically server name and version"), of the same layout.
    R("MM2-HS-001", "Handshake", "MUST",
      "the client sends [major][minor][flags][identity length][identity][u16 required length]"
      "[required][u16 optional length][optional]; the server answers with a handshake of the "
      "same layout",
      quote="A handshake from the client looks like this:", binds="both"),
    R("MM2-HS-002", "Handshake", "MUST",
      "RequiredExtensionsLength and OptionalExtensionsLength may be zero: the field is absent",
      quote="The RequiredExtensionsLength and OptionalExtensionsLength can be zero, which means "
            "that the string field is not present.",
      level_note="the \"can\" is the sender's permission; the MUST is the receiver's duty to "
                 "read a zero length as an absent field, which follows from it",
      binds="both"),
    R("MM2-HS-003", "Handshake", "SHOULD",
      "if versions differ the lowest version is used (the reply carries the lower minor)",
      quote="If versions differ the lowest version should be used.", binds="both"),
    R("MM2-HS-004", "Handshake", "SHOULD",
      "a peer that does not speak the lower of the two versions sends an ERROR frame and "
      "disconnects",
      quote="If the client or the server doesn't speak the lower version it should send an ERROR "
            "frame and then disconnect.",
      binds="both"),
    R("MM2-HS-005", "Handshake", "MUST",
      "a server that does not implement an extension the client requires sends an ERROR frame",
      quote="If the server doesn't implement the extensions requested by the client it must send "
            "and ERROR frame and disconnect directly after.",
      binds="server"),
    R("MM2-HS-006", "Handshake", "MUST",
      "... and disconnects directly after it (the real implementation keeps the connection: "
      "waived in profile sharpmessaging)",
      quote="If the server doesn't implement the extensions requested by the client it must send "
            "and ERROR frame and disconnect directly after.",
      binds="server"),
    R("MM2-HS-007", "Handshake", "MUST",
      "the final handshake may only use extensions both sides implement; otherwise ERROR and "
      "disconnect",
      quote="If the server doesn't implement the extensions requested by the client it must send "
            "and ERROR frame and disconnect directly after.",
      binds="server"),
    # "Handshake": the "must" is the client's (its final handshake repeats what the server
    # required): graded on clients (check-client, the observer). What a server does with a
    # final handshake that drops one is MM2-HS-015, the kit's reading.
    R("MM2-HS-008", "Handshake", "MUST",
      "the client's final handshake includes every extension the server required",
      quote="Finally the client must send it's message again, but with all required and optional "
            "frames that should be used.",
      level_note="the \"should\" only qualifies which extensions are used; the requirement is "
                 "the \"must\": the final handshake repeats what was required",
      untestable="client behaviour: a server-facing suite cannot observe it (client conformance "
                 "mode: the required-extension scenario; the observer)",
      binds="client"),
    # The document's ERROR-and-disconnect sentences are for an extension the server lacks
    # (MM2-HS-005/-007) and for a client that lacks one (MM2-HS-010); none says what a server
    # does with a final handshake that drops one it required.
    R("MM2-HS-015", "Handshake", "SHOULD",
      "a final handshake without an extension the server required is refused: ERROR frame, then "
      "disconnect",
      source="reading",
      quote="Finally the client must send it's message again, but with all required and optional "
            "frames that should be used.",
      level_note="the document's \"must\" binds the client (MM2-HS-008); what the server does "
                 "about a client that breaks it is the kit's reading, graded SHOULD",
      binds="server"),
    R("MM2-HS-009", "Handshake", "SHOULD",
      "the server's reply suggests, as optional, the client's optional extensions it supports "
      "('I suggest Y like you')",
      quote="- Server: I support A, B, but I also require C. I suggest Y like you but also Z.",
      level_note="an example dialogue, not a rule: graded SHOULD", binds="server"),
    R("MM2-HS-010", "Handshake", "MUST",
      "a client that does not implement an extension the server requires sends an ERROR frame "
      "and disconnects: the server ends the connection", untestable=_CLIENT,
      quote="If the client do not support the extensions required by the server it MUST send an "
            "ERROR frame and disconnect.",
      binds="client"),
    R("MM2-HS-011", "Handshake", "MUST",
      "once the handshake is complete extensions are indexed (from 1) in the order of the final "
      "handshake: Required, then Optional",
      quote="Once the handshake is completed the extensions are indexed using the order in the "
            "final handshake message. That means that the following order are used for the "
            "examples above (one-based index):",
      binds="both"),
    R("MM2-HS-012", "Handshake", "MUST",
      "a handshake split over several writes, or followed in the same write by frames, is read "
      "the same",
      quote="A handshake from the client looks like this:",
      level_note="the document has no sentence on how the handshake's bytes "
                 "arrive; the MUST follows from its length-prefixed layout on a TCP stream",
      binds="both"),
    R("MM2-HS-013", "Handshake", "MUST",
      "an extension is a FIELD name with optional FIELD=URL-encoded-value properties; entries "
      "are separated by ';' (erratum 1: 'json;dotnet' is 11 bytes)",
      quote="Each extension must be followed by a semicolon (except the last one).", binds="both"),
    R("MM2-HS-014", "Handshake", "SHOULD",
      "an optional extension the server does not know (a vendor 'x-' one) is not used: it is "
      "left out of the reply, and the connection proceeds",
      quote="| OptionalExtensions | * | A list of extensions that the client would like to "
            "activate. |",
      level_note="the document calls optional extensions ones the client \"would like to "
                 "activate\"; that an unknown one is left out is the kit's reading, graded SHOULD",
      binds="server"),
    # --- Frames -------------------------------------------------------------------------------
    R("MM2-FRAME-001", "Frames", "MUST",
      "every frame starts with a flags byte; with none of COMMAND (1), EXTENSION (2), ERROR (4) "
      "it is a MESSAGE/SEND frame",
      quote="The default type of frame is MESSAGE/SEND (depending on the direction) unless flag "
            "1, 2 or 4 is specified.",
      binds="both"),
    R("MM2-FRAME-002", "Frames", "MUST",
      "LARGE_PAYLOAD (8): the payload length is 4 bytes instead of 1 (a peer writes it whenever "
      "a payload exceeds 255 bytes, and accepts it on any size)",
      quote="- 8 = LARGE_PAYLOAD. The length header will be 4 bytes instead of 1.", binds="both"),
    R("MM2-FRAME-003", "Frames", "SHOULD",
      "a frame with an unknown flag bit, or two frame-type bits, gets an ERROR frame and the "
      "connection is closed (the kit's reading: the stream cannot be cut after it)",
      quote="The flags value is contains bit flags.",
      level_note="the document does not say what an unknown flag bit gets; ERROR and close are "
                 "the kit's reading, graded SHOULD",
      binds="server"),
    R("MM2-FRAME-004", "MESSAGE", "MUST",
      "a payload split over frames with CONTINUED on all but the last is received whole",
      quote="- 16 = Continued: There are more frames for the same payload.", binds="both"),
    R("MM2-FRAME-005", "Frames", "MUST",
      "frames split over writes, or several in one write, are read the same",
      quote="All frames are prefixed with a standard header. The header specifies how the rest "
            "of the frame will look like.",
      level_note="the document has no sentence on how a frame's bytes arrive; the "
                 "MUST follows from its length-prefixed frames on a TCP stream",
      binds="both"),
    R("MM2-FRAME-006", "MESSAGE", "SHOULD",
      "payloads larger than 1 MiB are sent as several CONTINUED frames",
      quote="Multiple frames should be used if the payload in a MESSAGE frame is larger than 1 "
            "MiB data.",
      binds="both"),
    R("MM2-FRAME-007", "Frames", "SHOULD",
      "a length above the receiver's limit is refused (ERROR, close) before the payload is "
      "buffered",
      quote="Multiple frames should be used if the payload in a MESSAGE frame is larger than 1 "
            "MiB data.",
      level_note="the document sets no receive limit; refusing a length above the receiver's "
                 "limit (senders split above 1 MiB) is the kit's reading, graded SHOULD",
      binds="server"),
    # --- MESSAGE / SEND -----------------------------------------------------------------------
    R("MM2-MSG-001", "MESSAGE", "MUST",
      "a MESSAGE is [u16 sequence][u8 destination length][destination][u16 properties length]"
      "[properties][u8|u32 payload length][payload], numbers big-endian",
      quote="| Sequence number | 2 | Sequence number which wraps once reaching 65535 (unsigned "
            "short) | | DestinationLength | 1 | Length of the next field | | Destination | * | "
            "Destination, for instance a queue name \"commands\" or a topic "
            "\"topic/domain-events\" |",
      binds="both"),
    R("MM2-MSG-002", "MESSAGE", "MUST",
      "sequence numbers count the messages pushed on a connection: each is one more than the one "
      "before (the document's ack algorithm: 'numberToAck = lastReceivedNumber == 65535 ? 1 : "
      "lastReceivedNumber + 1')",
      quote="var numberToAck = lastReceivedNumber == 65535 ? 1 : lastReceivedNumber + 1;",
      binds="both"),
    R("MM2-MSG-003", "MESSAGE", "MUST",
      "the sequence number wraps once reaching 65535 (to 1)",
      untestable="needs 65,535 deliveries on one connection; the wrap of the pusher is tested "
                 "in memory (tests/reference_impl/micromessage2/test_mm2_session.py) and across the wire on the receiving side "
                 "(MM2-ACK-008)",
      quote="Sequence number which wraps once reaching 65535 (unsigned short)", binds="both"),
    R("MM2-MSG-004", "MESSAGE", "MUST",
      "properties are key:value pairs each ended by ';', carried to the receivers unchanged",
      quote="Key/Value pairs. Key = FIELD, Value = FILTER_VALUE (see below)", binds="both"),
    R("MM2-MSG-005", "Reliable messaging", "MUST",
      "without an ack extension the pusher pushes messages as soon as they arrive",
      quote="- If no ACK is used the pusher will push messages as soon as they are arrived.",
      binds="both"),
    R("MM2-MSG-007", "MESSAGE", "SHOULD",
      "the first message pushed on a connection is numbered 1 (the real implementation; the "
      "document does not fix where the count starts)", source=_NOTES,
      quote="Sequence numbers start at 1, big-endian u16.", binds="both"),
    R("MM2-MSG-006", "MESSAGE", "SHOULD",
      "a SEND without a destination is refused with an ERROR frame (the kit's reading)",
      quote="| Destination | * | Destination, for instance a queue name \"commands\" or a topic "
            "\"topic/domain-events\" |",
      level_note="the document does not say what a SEND without a destination gets; the ERROR is "
                 "the kit's reading, graded SHOULD",
      binds="server"),
    # --- COMMAND ------------------------------------------------------------------------------
    R("MM2-CMD-001", "COMMAND", "MUST",
      "a COMMAND is [u8|u32 length][name;key=value,...] with FIELD name and keys and "
      "URL-encoded values",
      quote="The payload for commands are a NAME and key/value pairs. "
            "CommandName;key=value,key=value,key=value Restrictions: - Command Name: FIELD - "
            "Key: FIELD - Value: Values must be URL ENCODED.",
      binds="both"),
    R("MM2-CMD-002", "COMMAND", "SHOULD",
      "an unknown command gets an ERROR frame and the connection stays open (the kit's "
      "reading; the suite's barrier relies on it)",
      quote="Commands are used to define how the connection should be used.",
      level_note="the document does not say what an unknown command gets; ERROR with the "
                 "connection kept is the kit's reading, graded SHOULD",
      binds="server"),
    # --- acks ---------------------------------------------------------------------------------
    R("MM2-ACK-001", "Reliable messaging", "MUST",
      "ACKs are disabled by default: without an ack extension no ack frame is sent",
      quote="ACKs are disabled by default and must be activated in the handshake negotiation.",
      binds="both"),
    R("MM2-ACK-002", "Reliable messaging", "MUST",
      "with 'ack' the pusher sends a new message only once the previous one is acked "
      "(sharpmessaging: MessagesPerAck at a time)",
      quote="- If a single-message ack is used the pusher will only push a new message once the "
            "previous one have been ACKed",
      binds="both"),
    R("MM2-ACK-003", "batch-ack", "MUST",
      "with 'batch-ack' the pusher stops when the negotiated count of messages is unacked "
      "(erratum 3: the count is read from max-count, count or batch-max)",
      quote="The sender MUST NOT send any more messages until the pre-configured number of "
            "messages have been ACKed.",
      binds="both"),
    R("MM2-ACK-004", "batch-ack", "MUST",
      "the default count is 10 when the handshake gives none",
      quote="It's optional and the default count is 10 if nothing else have been specified.",
      binds="both"),
    R("MM2-ACK-005", "batch-ack", "MUST",
      "an ack of sequence number N acknowledges every message up to N; the pusher goes on",
      quote="The number specifies that all MESSAGE frames with a sequence number up to the "
            "specified one have been ACK:ed.",
      binds="both"),
    R("MM2-ACK-006", "batch-ack", "MUST",
      "a receiver may ack before the count is reached; the pusher then resets its counter",
      quote="The client can however send and ACK before the agreed number have been received. "
            "That means that the server should simply reset the counter.",
      level_note="the \"can\" is the receiver's permission; the reset follows from the MUST of "
                 "the cumulative ack (\"the side that receives the ACK must ACK all messages up "
                 "to the specified one\"): acked messages are no longer pending, and a pusher "
                 "that kept counting them would stall a receiver that has acked everything",
      binds="server"),
    R("MM2-ACK-007", "batch-ack", "MUST",
      "an ack is an EXTENSION frame: [flags 2][extension id][length 2][u16 sequence] "
      "(erratum 2: the document's example uses flag 4); the server acks the SENDs it receives",
      quote="The batch-ack extension only carries an int which identifies the latest message to "
            "identify. Hence an entire frame for that extension would look like: Flags Id Length "
            "SequenceNumber 4 2 2 0 4",
      binds="both"),
    R("MM2-ACK-008", "batch-ack", "MUST",
      "acks are cumulative across the wrap: the receiver of an ack acknowledges every message "
      "up to it, wrapped or not (erratum 6: 65534, 65535, 1, ...)",
      quote="Do note that the side that receives the ACK must ACK all messages up to the "
            "specified one, no matter if the sequence number have been wrapped or not.",
      binds="both"),
    R("MM2-ACK-009", "batch-ack", "SHOULD",
      "an ack of a sequence number not in flight gets an ERROR frame (the kit's reading)",
      quote="The number specifies that all MESSAGE frames with a sequence number up to the "
            "specified one have been ACK:ed.",
      level_note="the document does not say what an ack of a number not in flight gets; the "
                 "ERROR is the kit's reading, graded SHOULD",
      binds="server"),
    R("MM2-ACK-010", "Reliable messaging", "SHOULD",
      "the receiver acks within its ack delay without waiting for the window to fill "
      "(the real AckExpireTime, 500 ms)", source=_NOTES,
      quote="The server acks cumulatively when `MessagesPerAck` messages have arrived or "
            "`AckExpireTime` ms have passed",
      binds="server"),
    # --- json, dotnet -------------------------------------------------------------------------
    R("MM2-JSON-001", "json", "SHOULD",
      "with 'json' agreed, MESSAGE/SEND payloads are JSON: a SEND that is not gets an ERROR "
      "frame (the kit's reading)",
      quote="the \"json\" extension only defines that MESSAGE/SEND payloads should be serialized "
            "as JSON",
      binds="both"),
    R("MM2-NET-001", "dotnet", "MUST",
      "with 'dotnet' an EXTENSION frame carrying the type name is sent before each MESSAGE "
      "(erratum 4: with flag 2 and the extension id)",
      quote="the \"dotnet\" extension requires that an extension frame is sent before each "
            "message.",
      binds="both"),
    R("MM2-NET-002", "dotnet", "SHOULD",
      "a message without its own type frame has the type of the last one",
      quote="The client SHOULD use the type specified for the last MESSAGE frame if none was "
            "received for the current MESSAGE frame.",
      binds="client"),
    # --- pub/sub ------------------------------------------------------------------------------
    R("MM2-PS-001", "Publish/subscribe", "MUST",
      "SUBSCRIBE is a COMMAND of the pubsub extension (the kit's reading: "
      "subscribe;destination=D[,filter=F]); without the extension it gets an ERROR frame",
      quote="Functionality is added by requiring extensions in the handshake. As mentioned "
            "above, ACKs is an extension. pub/sub too.",
      binds="both"),
    R("MM2-PS-002", "Glossary: TOPIC", "MUST",
      "a message to a topic is delivered to every subscriber",
      quote="- TOPIC: A queue where messages are enqueued to *all subscribers.", binds="server"),
    R("MM2-PS-003", "Glossary: QUEUE", "MUST",
      "a message to a queue is delivered to one receiver only, in order",
      quote="- QUEUE: Messaging where order is important and each message is delivered to one "
            "receiver.",
      binds="server"),
    R("MM2-PS-004", "Filtering operators", "MUST",
      "a subscriber with a filter receives only the messages whose properties match it; every "
      "operator of the document (=, !=, <, <=, >, >=, &, ~) for numbers, dates and text",
      quote="The filter properties allows the server to filter messages for every destination "
            "(by using filters configured by each receiving clients).",
      binds="server"),
    R("MM2-PS-005", "Filtering operators", "SHOULD",
      "text comparison is case sensitive",
      quote="Text comparison should be case sensitive.", binds="server"),
    R("MM2-PS-006", "FILTER_VALUE", "MUST",
      "filter values are typed by a prefix (N number, D date, T URL-encoded text)",
      quote="Filter values can only be the following simple types. All values have a type "
            "specified prefix (one byte).",
      level_note="\"can only be\" admits no other form: a value must carry its type prefix",
      binds="both"),
    R("MM2-PS-008", "FILTER_VALUE", "SHOULD",
      "number filters support long (64-bit) values",
      quote="Implementations should support long values.", binds="both"),
    R("MM2-PS-007", "Filtering operators", "SHOULD",
      "a filter that cannot be read (no operator, an untyped value, <= on text) gets an ERROR "
      "frame (the kit's reading)",
      quote="| <= | Not used for text |",
      level_note="the document does not say what an unreadable filter gets; the ERROR is the "
                 "kit's reading, graded SHOULD",
      binds="server"),
    # --- ERROR --------------------------------------------------------------------------------
    R("MM2-ERR-001", "Frames", "MUST",
      "an ERROR frame is [flags 4][u8|u32 length][UTF-8 text] (erratum 7: the document gives no "
      "layout; this is the real implementation's)", source=_NOTES,
      quote="A required extension the server lacks gets an ERROR frame `04 <len u8> <text>`",
      binds="both"),
    R("MM2-ERR-002", "Frames", "SHOULD",
      "after an ERROR frame from the client (other than in the handshake) the server ends the "
      "connection (the kit's reading)",
      quote="it should send an ERROR frame and then disconnect.",
      level_note="the document says so only of a version mismatch; that the server also ends the "
                 "connection after a client's ERROR is the kit's reading, graded SHOULD",
      binds="server"),
    # What happens to a client library under the kit's scenarios (wirecheck check-client,
    # conformance/clients/suite.py): its driver's outcome, not its bytes.
    R("MM2-CLIENT-001", "Client outcomes", "SHOULD",
      "a client completes its workload when the server's bytes come split, joined or late, and "
      "whatever frame form the server chooses (LARGE_PAYLOAD, CONTINUED pieces)",
      untestable=_CLIENT_OUTCOME,
      quote="Message frames can be sent both by the client and the server. However, they are "
            "always pushed and not pulled. It basically means that both end points should either "
            "use asynchronous reads or have a dedicated thread for the reading.",
      binds="client"),
    R("MM2-CLIENT-002", "Client outcomes", "SHOULD",
      "an ERROR frame refusing the client's handshake reaches the application as an error (no "
      "success, no hang)",
      source="reading", untestable=_CLIENT_OUTCOME,
      quote="If the server doesn't implement the extensions requested by the client it must send "
            "and ERROR frame and disconnect directly after.",
      level_note="the \"must\" is the server's; that the client tells its application is the "
                 "kit's reading, graded SHOULD",
      binds="client"),
    R("MM2-CLIENT-003", "Client outcomes", "SHOULD",
      "a connection the server ends is reported to the application, not hung on",
      source="reading", untestable=_CLIENT_OUTCOME,
      quote="If the client or the server doesn't speak the lower version it should send an ERROR "
            "frame and then disconnect.",
      level_note="the \"should\" is the sender's; that the other side notices the disconnect "
                 "is the kit's reading",
      binds="client"),
    R("MM2-CLIENT-004", "Client outcomes", "SHOULD",
      "every MESSAGE reaches the application, once (CONTINUED pieces as one message)",
      source="reading", untestable=_CLIENT_OUTCOME,
      quote="Reliable means that it can make sure that all messages are delivered (if you want to).",
      binds="client"),
    R("MM2-CLIENT-005", "Client outcomes", "SHOULD",
      "legal server behaviour never crashes a client (a signal, an uncaught error)",
      source="reading", untestable=_CLIENT_OUTCOME,
      quote="Properties are not required.", binds="client"),
)
