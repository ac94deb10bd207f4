"""RabbitMQ Stream requirements, second half of the catalogue (rabbitmq_stream.py holds the
first and the reading of levels): subscribing, credit and Deliver, stored offsets, routes and
partitions, the commands newer than the document, and what a client library does under the
kit's scenarios."""
from . import Requirement as R
from .rabbitmq_stream_text import _CLIENT, _NOTES, _REAL_SERVER_RULES, _STREAM_DOES_NOT_EXIST

_CREDIT_FIELD = "Credit => uint16 // the number of chunks that can be sent"
_CREDIT_NOTE = ("\"can be sent\" bounds what the server may send: beyond its credit it sends "
                "nothing, a MUST")
_NEWER_COMMANDS = ("Commands newer than the document: 26 ConsumerUpdate, 27 "
                   "ExchangeCommandVersions, 28 StreamStats (3.11), 29/30 "
                   "Create/DeleteSuperStream (3.13), Publish v2 with filter values, Deliver v2 "
                   "with CommittedChunkId.")
_OFFSET_TYPES = "OffsetType => uint16 // 1 (first), 2 (last), 3 (next), 4 (offset), 5 (timestamp)"
_STORE_OFFSET_FACT = ("each StoreOffset occupies an offset of its own in the stream, so message "
                      "offsets jump after a store;")

CONSUMING = (
    # Subscribe / Credit / Unsubscribe
    R("RMQS-SUB-001", "Subscribe", "MUST",
      "Subscribe to an existing stream gets code 1, then Deliver frames for that subscription",
      quote="Subscribe => Key Version CorrelationId SubscriptionId Stream OffsetSpecification "
            "Credit Properties",
      binds="server"),
    R("RMQS-SUB-002", "Subscribe", "MUST", "offset type 1 (first) delivers from the first chunk",
      quote=_OFFSET_TYPES, binds="server"),
    R("RMQS-SUB-003", "Subscribe", "MUST",
      "offset type 2 (last) delivers from the last chunk (SPEC_NOTES.md: the last chunk, "
      "not only its last message)",
      quote=_OFFSET_TYPES, binds="server"),
    R("RMQS-SUB-004", "Subscribe", "MUST",
      "offset type 3 (next) delivers only what is published after the subscription",
      quote=_OFFSET_TYPES, binds="server"),
    R("RMQS-SUB-005", "Subscribe", "MUST",
      "offset type 4 (offset N) delivers from the chunk that holds offset N",
      quote=_OFFSET_TYPES, binds="server"),
    R("RMQS-SUB-006", "Subscribe", "SHOULD",
      "an offset beyond the end of the stream waits for the next message", source="reading",
      quote="Subscribe: the offset field is present only for OffsetType 4 (u64) and 5 (i64).",
      level_note="the kit's reading: SPEC_NOTES does not say what an offset beyond the end of the "
                 "stream does; closest: its fact on Subscribe's offset",
      binds="server"),
    R("RMQS-SUB-007", "Subscribe", "MUST",
      "offset type 5 (timestamp T, ms) delivers from the first chunk whose timestamp is at "
      "least T",
      quote=_OFFSET_TYPES, binds="server"),
    R("RMQS-SUB-008", "Response Codes", "MUST",
      "Subscribe with a subscription id in use on the connection gets code 3",
      quote="Subscription ID already exists 3", binds="server"),
    R("RMQS-SUB-009", "Response Codes", "MUST", "Subscribe to a missing stream gets code 2",
      quote=_STREAM_DOES_NOT_EXIST, binds="server"),
    R("RMQS-SUB-010", "Subscribe", "SHOULD",
      "the Offset field is present only for offset types 4 and 5", source="SPEC_NOTES",
      quote="Subscribe: the offset field is present only for OffsetType 4 (u64) and 5 (i64).",
      binds="server"),
    R("RMQS-SUB-011", "Subscribe", "SHOULD",
      "a Subscribe without the properties count is accepted", source="reading",
      quote="Subscribe: the offset field is present only for OffsetType 4 (u64) and 5 (i64).",
      level_note="the kit's reading: SPEC_NOTES does not say that a Subscribe without the properties "
                 "count is accepted; closest: its fact on Subscribe's layout on the real server",
      binds="server"),
    R("RMQS-SUB-012", "Subscribe", "MUST",
      "Subscribe carries properties (string key/value pairs) and is accepted with them",
      quote="Properties => [Property] Property => Key Value Key => string Value => string",
      binds="server"),
    R("RMQS-SUB-013", "Subscribe", "MUST",
      "a subscription with credit receives messages published after it, from any connection",
      quote="Deliver => Key Version SubscriptionId OsirisChunk", binds="server"),
    R("RMQS-CREDIT-001", "Credit", "MUST",
      "nothing is delivered to a subscription without credit",
      quote=_CREDIT_FIELD,
      level_note=_CREDIT_NOTE, binds="server"),
    R("RMQS-CREDIT-002", "Credit", "MUST",
      "credit counts chunks: each Deliver uses one credit",
      quote=_CREDIT_FIELD,
      level_note=_CREDIT_NOTE, binds="server"),
    R("RMQS-CREDIT-003", "Credit", "MUST",
      "Credit adds credit to a subscription and delivery resumes; it gets no response",
      quote="NB: the server sent a response only in case of problem, e.g. crediting an unknown "
            "subscription.",
      binds="server"),
    R("RMQS-CREDIT-004", "Credit", "MUST",
      "Credit for an unknown subscription gets CreditResponse (key 0x8009: code 4 and the "
      "subscription id, no correlation id)",
      quote="CreditResponse => Key Version ResponseCode SubscriptionId", binds="server"),
    R("RMQS-UNSUB-001", "Unsubscribe", "MUST",
      "Unsubscribe gets code 1; nothing more is delivered to that subscription and its id can "
      "be used again",
      quote="Unsubscribe => Key Version CorrelationId SubscriptionId", binds="server"),
    R("RMQS-UNSUB-002", "Response Codes", "MUST",
      "Unsubscribe of an unknown subscription id gets code 4",
      quote="Subscription ID does not exist 4", binds="server"),
    # Deliver and the chunk
    R("RMQS-DELIVER-001", "Deliver", "MUST",
      "Deliver is key 8, version 1 (before any version exchange), the subscription id, then "
      "one chunk",
      quote="Deliver => Key Version SubscriptionId OsirisChunk", binds="server"),
    R("RMQS-DELIVER-002", "Deliver", "MUST",
      "the chunk header is 48 bytes: magic/version 0x5X, chunk type 0 (user), NumEntries, "
      "NumRecords, Timestamp, Epoch, ChunkFirstOffset, ChunkCrc, DataLength, TrailerLength, "
      "BloomSize, 3 reserved bytes", source="SPEC_NOTES",
      quote="Deliver's chunk header is 48 bytes: magic/version 0x50, ChunkType u8, NumEntries "
            "u16, NumRecords u32, Timestamp i64 (ms), Epoch u64, ChunkFirstOffset u64, ChunkCrc "
            "u32, DataLength u32, TrailerLength u32, BloomSize u8 + 3 reserved;",
      binds="server"),
    R("RMQS-DELIVER-003", "Deliver", "MUST",
      "ChunkCrc is the CRC-32 (zlib.crc32) of the DataLength bytes of entries",
      source="SPEC_NOTES",
      quote="ChunkCrc = zlib.crc32 of the entry data.", binds="server"),
    R("RMQS-DELIVER-004", "Deliver", "MUST",
      "NumEntries is the number of entries in the data and NumRecords the number of messages "
      "they hold (a sub-batch counts its records)",
      quote="NumEntries => uint16 NumRecords => uint32", binds="server"),
    R("RMQS-DELIVER-005", "Deliver", "MUST",
      "ChunkFirstOffset is the offset of the chunk's first message; a subscription's chunks "
      "come in offset order, each starting where the previous one ended (SPEC_NOTES.md: on "
      "RabbitMQ a StoreOffset takes an offset too, so the suite checks streams without one)",
      quote="ChunkFirstOffset => uint64", binds="server"),
    R("RMQS-DELIVER-006", "Deliver", "SHOULD",
      "the Deliver frame ends after the entries: header, bloom filter, data, no trailer bytes",
      source="SPEC_NOTES",
      quote="BloomSize u8 + 3 reserved; then DataLength bytes of entries.", binds="server"),
    R("RMQS-DELIVER-007", "Deliver", "MUST",
      "a simple entry is a uint32 size (top bit clear) then the message bytes",
      quote="Message => EntryTypeAndSize Data => bytes", binds="both"),
    R("RMQS-DELIVER-008", "Deliver", "SHOULD",
      "chunk timestamps (ms) do not decrease along the stream", source="reading",
      quote=_REAL_SERVER_RULES,
      level_note="the kit's reading: SPEC_NOTES does not say that chunk timestamps do not decrease; "
                 "closest: that the real server is the authority (its chunks carry a Timestamp "
                 "i64 in ms)",
      binds="server"),
    R("RMQS-DELIVER-009", "Deliver", "MUST",
      "the client skips the messages of the first chunk that precede the offset it asked for",
      untestable=_CLIENT,
      quote=_OFFSET_TYPES,
      level_note="the document has no sentence for it; the document does not say it; it follows from Subscribe naming "
                 "an offset while Deliver carries whole chunks (ChunkFirstOffset)",
      binds="client"),
    # StoreOffset / QueryOffset
    R("RMQS-OFFSET-001", "StoreOffset", "MUST", "StoreOffset gets no response",
      quote="StoreOffset Client 10 No", binds="server"),
    R("RMQS-OFFSET-002", "QueryOffset", "MUST",
      "QueryOffset gets code 1 and the offset last stored under the reference for the stream "
      "(a later store wins, even a lower offset)",
      quote="QueryOffsetResponse => Key Version CorrelationId ResponseCode Offset", binds="server"),
    R("RMQS-OFFSET-003", "QueryOffset", "MUST",
      "stored offsets are per reference and per stream",
      quote="QueryOffsetRequest => Key Version CorrelationId Reference Stream", binds="server"),
    R("RMQS-OFFSET-004", "QueryOffset", "SHOULD",
      "QueryOffset of a reference with no stored offset is not answered with code 1 (a client "
      "must tell \"none\" from offset 0)",
      source="reading", quote="QueryOffsetResponse => Key Version CorrelationId ResponseCode Offset",
      level_note="the kit's reading, so SHOULD: the document does not say what QueryOffset of a reference with "
                 "nothing stored gets; an Offset of 0 with code 1 would be read as a stored "
                 "offset 0",
      binds="server"),
    R("RMQS-OFFSET-005", "QueryOffset", "SHOULD",
      "that code is 19 (no offset)", source="reading",
      quote=_STORE_OFFSET_FACT,
      level_note="the kit's reading: SPEC_NOTES does not say which code QueryOffset of a reference "
                 "with nothing stored gets (19); closest: its fact on StoreOffset",
      binds="server"),
    R("RMQS-OFFSET-006", "Response Codes", "MUST", "QueryOffset on a missing stream gets code 2",
      quote=_STREAM_DOES_NOT_EXIST, binds="server"),
    R("RMQS-OFFSET-007", "StoreOffset", "SHOULD",
      "StoreOffset to a missing stream is ignored: no response, the connection stays open",
      source="reading",
      quote=_STORE_OFFSET_FACT,
      level_note="the kit's reading: SPEC_NOTES does not say what StoreOffset to a missing stream "
                 "gets; closest: its fact on StoreOffset",
      binds="server"),
    R("RMQS-OFFSET-008", "StoreOffset", "MUST",
      "an offset reference has at most 256 characters", untestable=_CLIENT,
      quote="Reference => string // max 256 characters", binds="client"),
    # Route / Partitions
    R("RMQS-ROUTE-001", "Route", "MUST",
      "Route gets one response with its correlation id",
      quote="RouteQuery => Key Version CorrelationId RoutingKey SuperStream", binds="server"),
    R("RMQS-ROUTE-002", "Route", "SHOULD",
      "the Route response is a code then an array of streams: code 2 and no stream for a "
      "missing super stream", source="reading",
      quote=_REAL_SERVER_RULES,
      level_note="the kit's reading: SPEC_NOTES does not say the real Route response's layout; "
                 "closest: that the real server is the authority where the document errs",
      binds="server"),
    R("RMQS-ROUTE-003", "Frame Structure", "MUST",
      "Route and Partitions responses have the response bit (profile feature "
      "route_response_bit: RabbitMQ 3.10 answers with the request key)",
      quote="Keys are uint16, but the actual value is defined on the last 15 bits, the most "
            "significant bit being used to make the difference between a request (0) and a "
            "response (1).",
      binds="both"),
    R("RMQS-ROUTE-004", "Route", "MUST",
      "Route of a super stream's binding key gets code 1 and that partition",
      quote="RouteResponse => Key Version CorrelationId Stream", binds="server"),
    R("RMQS-PART-001", "Partitions", "MUST",
      "Partitions gets one response with its correlation id: code 2 and no stream for a "
      "missing super stream or a plain stream",
      quote="PartitionsQuery => Key Version CorrelationId SuperStream", binds="server"),
    R("RMQS-PART-002", "Partitions", "MUST",
      "Partitions of a super stream gets code 1 and its partitions in order",
      quote="PartitionsResponse => Key Version CorrelationId [Stream]", binds="server"),
    # Commands newer than the document (keys 26-30; profile feature keys_26_30)
    R("RMQS-NEW-001", _NOTES, "MUST",
      "ExchangeCommandVersions (27) gets code 1 and (key, min, max) for the keys the server "
      "knows, Publish and Deliver among them, min <= max", source="SPEC_NOTES",
      quote=_NEWER_COMMANDS, binds="server"),
    R("RMQS-NEW-002", _NOTES, "SHOULD",
      "once the client announces Deliver version 2, Deliver frames are version 2 and carry "
      "CommittedChunkId before the chunk", source="SPEC_NOTES",
      quote=_NEWER_COMMANDS, binds="server"),
    R("RMQS-NEW-003", _NOTES, "SHOULD",
      "Publish version 2 (a filter value per message) is confirmed like version 1",
      source="SPEC_NOTES",
      quote=_NEWER_COMMANDS, binds="server"),
    R("RMQS-NEW-004", _NOTES, "MUST",
      "StreamStats (28) gets code 1 and statistics (first_chunk_id, committed_chunk_id) for an "
      "existing stream, code 2 for a missing one", source="SPEC_NOTES",
      quote=_NEWER_COMMANDS, binds="server"),
    R("RMQS-NEW-005", _NOTES, "MUST",
      "CreateSuperStream (29) gets code 1 and creates its partitions as streams",
      source="SPEC_NOTES",
      quote=_NEWER_COMMANDS, binds="server"),
    R("RMQS-NEW-006", _NOTES, "SHOULD",
      "CreateSuperStream of an existing super stream gets code 5", source="SPEC_NOTES",
      quote=_NEWER_COMMANDS, binds="server"),
    R("RMQS-NEW-007", _NOTES, "MUST",
      "DeleteSuperStream (30) gets code 1 and deletes its partitions; code 2 for a missing one",
      source="SPEC_NOTES",
      quote=_NEWER_COMMANDS, binds="server"),
    R("RMQS-NEW-008", _NOTES, "MUST",
      "with single-active-consumer, the server sends ConsumerUpdate (26) to the consumer that "
      "becomes active and delivers from the offset specification of the client's answer; the "
      "other consumers of the group get nothing until promoted", source="SPEC_NOTES",
      quote=_NEWER_COMMANDS, binds="server"),
    R("RMQS-NEW-009", _NOTES, "MUST",
      "a client request with key 26 (a server-to-client command) gets Close(13)",
      source="SPEC_NOTES",
      quote=_NEWER_COMMANDS, binds="server"),
    R("RMQS-NEW-010", _NOTES, "MUST",
      "the client answers the server's ConsumerUpdate (26) with a ConsumerUpdateResponse of the "
      "same correlation id before it closes (\"Expects response? Yes\", as every server request)",
      source="SPEC_NOTES", untestable=_CLIENT,
      quote=_NEWER_COMMANDS, binds="client"),
    # What happens to a client library under the kit's scenarios (wirecheck check-client,
    # conformance/clients/suite.py): its driver's outcome, not its bytes.
    R("RMQS-CLIENT-001", "Client outcomes", "SHOULD",
      "a client completes its workload when the server's bytes come split, joined or late, and "
      "with frames the server may send at any moment (Heartbeat) among its answers",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="Most commands are request/reply, but some commands (e.g. Deliver) are one-direction "
            "only and thus does not contain a correlation ID.",
      binds="client"),
    R("RMQS-CLIENT-002", "Client outcomes", "SHOULD",
      "a response code other than OK, or a PublishError, reaches the application as an error "
      "(no success, no hang)",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="PublishingError => PublishingId Code PublishingId => uint64 Code => uint16 // code to "
            "identify the problem",
      binds="client"),
    R("RMQS-CLIENT-003", "Client outcomes", "SHOULD",
      "a Close from the server, or a connection it ends, is reported to the application, not hung on",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="Close Client & Server 22 Yes", binds="client"),
    R("RMQS-CLIENT-004", "Client outcomes", "SHOULD",
      "every message of the chunks delivered reaches the application, once per delivery",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="NumEntries => uint16 NumRecords => uint32", binds="client"),
    R("RMQS-CLIENT-005", "Client outcomes", "SHOULD",
      "legal server behaviour never crashes a client (a signal, an uncaught error)",
      source="reading", untestable=_CLIENT + "; check-client judges it",
      quote="Most commands are request/reply, but some commands (e.g. Deliver) are one-direction "
            "only and thus does not contain a correlation ID.",
      binds="client"),
)
