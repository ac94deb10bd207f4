"""RabbitMQ Stream requirements (rabbitmq-stream-protocol.adoc; real-server behaviour from
SPEC_NOTES.md, section "RabbitMQ Stream").

Levels: the document states layouts and answers in the indicative ("the server answers
whether it accepts the access or not"); those are MUST. Behaviour that only the real server
shows (SPEC_NOTES.md, or observed on RabbitMQ 3.10.8 and recorded there) is SHOULD, so a
target that follows the document alone is NON-STRICT, not FAIL; except where a client cannot
interoperate without it (the 48-byte chunk header and its CRC, which the document's older
layout gets wrong): those are MUST with ``source="SPEC_NOTES"``. Statements about what a
client sends are client requirements, which a server-facing suite cannot observe.

Where the real server legitimately differs and the expectation depends on the target, the
profile says so (``reference_impl/rabbitmq_stream/__init__.py``: features ``keys_26_30``,
``frame_max_enforced``, ``route_response_bit``) and the test reads it.
"""
from . import Requirement as R
from .rabbitmq_stream_consuming import CONSUMING
from .rabbitmq_stream_text import _CLIENT, _NOTES, _REAL_SERVER_RULES, _STREAM_DOES_NOT_EXIST


# Quotes (and notes) several requirements share, verbatim from their source.
_PUBLISHER_REFERENCE = ("DeclarePublisher's PublisherReference is one string (possibly empty), "
                        "not an array.")
_REAL_DEFAULTS = "Defaults: frame_max 1,048,576; heartbeat 60 s;"
_SIZE_FIELD = "Size => uint32 (size without the 4 bytes of the size element)"
_SPLIT_NOTE = ("NOT IN SOURCE: the document has no sentence on how a frame's bytes arrive; the "
               "MUST follows from its size-prefixed frames on a TCP stream")
_UNKNOWN_KEY = ("An unknown command key: the server sends Close (code 13, unknown frame) and "
                "disconnects.")

REQUIREMENTS = (
    # Types
    R("RMQS-TYPE-001", "Types", "MUST",
      "integers are big-endian; string is an int16 length then UTF-8 bytes; array is an int32 "
      "count then the items (a hand-built request is understood and its response decodes by "
      "the same rules)",
      quote="string - int16 for the length followed by the bytes of content, length of -1 "
            "indicates null. arrays - int32 for the length followed by the repetition of the "
            "structure, notation uses [], e.g. [int32] for an array of int32.",
      binds="both"),
    R("RMQS-TYPE-002", "Types", "MUST",
      "bytes is an int32 length then the bytes, -1 meaning null: null SASL data cannot "
      "authenticate",
      quote="bytes - int32 for the length followed by the bytes of content, length of -1 "
            "indicates null.",
      binds="both"),
    # Frame Structure
    R("RMQS-FRAME-001", "Frame Structure", "MUST",
      "Size is a uint32 counting every byte after itself (key, version and content)",
      quote=_SIZE_FIELD, binds="both"),
    R("RMQS-FRAME-002", "Frame Structure", "MUST",
      "a response's key is the request's key with bit 15 set; Version is a uint16 (1)",
      quote="Keys are uint16, but the actual value is defined on the last 15 bits, the most "
            "significant bit being used to make the difference between a request (0) and a "
            "response (1).",
      binds="both"),
    R("RMQS-FRAME-003", "Frame Structure", "MUST",
      "a response carries the request's CorrelationId (any uint32 value) then a uint16 "
      "ResponseCode",
      quote="Response => Key Version CorrelationId ResponseCode Key => uint16 Version => uint16 "
            "CorrelationId => uint32 ResponseCode => uint16",
      binds="both"),
    R("RMQS-FRAME-004", "Commands", "MUST",
      "commands that expect no response (Publish, Credit, StoreOffset, Heartbeat) get none "
      "when they succeed",
      quote="Most commands are request/reply, but some commands (e.g. Deliver) are one-direction "
            "only and thus does not contain a correlation ID.",
      binds="both"),
    R("RMQS-FRAME-005", "Frame Structure", "MUST",
      "a frame split over several writes, at any byte, is reassembled",
      quote=_SIZE_FIELD,
      level_note=_SPLIT_NOTE, binds="both"),
    R("RMQS-FRAME-014", "Frame Structure", "MUST",
      "before Open too, frames split over several writes or several frames in one write are "
      "processed (profile rabbitmq-3.10 waives it: 3.10.8 drops such a connection)",
      quote=_SIZE_FIELD,
      level_note=_SPLIT_NOTE, binds="both"),
    R("RMQS-FRAME-006", "Frame Structure", "MUST",
      "several frames in one write are each processed, in order",
      quote=_SIZE_FIELD,
      level_note=_SPLIT_NOTE, binds="both"),
    R("RMQS-FRAME-007", "Tune", "MUST",
      "a frame larger than the negotiated FrameMax gets Close(14, frame too large) and the "
      "connection ends (profile feature frame_max_enforced)",
      quote="FrameMax => uint32 // in bytes, 0 means no limit", binds="both"),
    R("RMQS-FRAME-008", "Tune", "MUST",
      "a frame within the negotiated FrameMax is accepted",
      quote="FrameMax => uint32 // in bytes, 0 means no limit", binds="both"),
    R("RMQS-FRAME-009", "Response Codes", "MUST",
      "an unknown command key gets Close(13, unknown frame) and the connection ends once the "
      "client answers the Close",
      quote="Unknown frame 13", binds="both"),
    R("RMQS-FRAME-010", "Response Codes", "MUST",
      "a known key with an unknown version gets Close(13) and the connection ends",
      quote="Unknown frame 13", binds="both"),
    R("RMQS-FRAME-011", "Frame Structure", "MUST",
      "a Size below 4 (no room for key and version) ends the connection (after Close(13) if "
      "the server sends anything)",
      quote="Request => Key Version (CorrelationId) Content Key => uint16 Version => uint16",
      binds="both"),
    R("RMQS-FRAME-012", "Frame Structure", "SHOULD",
      "a response key from the client for a request the server never sent gets Close(13)",
      source="reading",
      quote=_UNKNOWN_KEY,
      level_note="the kit's reading: SPEC_NOTES does not say what a response key the server never "
                 "asked for gets; closest: what an unknown command key gets",
      binds="server"),
    R("RMQS-FRAME-013", "Frame Structure", "SHOULD",
      "a known command whose content is malformed (truncated) ends the connection (after "
      "Close(13) if the server sends anything)", source="reading",
      quote="an unknown key, or a frame shorter than 4 bytes, gets Close (13, \"unknown frame\")",
      level_note="the kit's reading: SPEC_NOTES does not say what a known command with truncated "
                 "content gets; closest: what an unknown key or a too short frame gets on "
                 "RabbitMQ 3.10.8",
      binds="server"),
    # Authentication sequence
    R("RMQS-HS-001", "PeerProperties", "MUST",
      "PeerProperties gets a response with code 1 and the server's properties",
      quote="PeerPropertiesResponse => Key Version CorrelationId ResponseCode PeerProperties",
      binds="server"),
    R("RMQS-HS-002", "SaslHandshake", "MUST",
      "SaslHandshake gets code 1 and the list of mechanisms, PLAIN among them",
      quote="SaslHandshakeResponse => Key Version CorrelationId ResponseCode [Mechanism]",
      binds="server"),
    R("RMQS-HS-003", "SaslAuthenticate", "MUST",
      "SaslAuthenticate with PLAIN (\\0user\\0password) and valid credentials gets code 1",
      quote="SaslAuthenticateRequest => Key Version CorrelationId Mechanism SaslOpaqueData",
      binds="server"),
    R("RMQS-HS-004", "Authentication", "MUST",
      "once satisfied with the authentication, the server sends Tune (key 20, FrameMax and "
      "Heartbeat as uint32, no correlation id)",
      quote="The server will send a Tune frame once it is satisfied with the client "
            "authentication response.",
      binds="server"),
    R("RMQS-HS-005", "Authentication", "MUST",
      "after the client's Tune, Open with an existing virtual host gets code 1",
      quote="Open: the client sends an Open frame to pick a virtual host to connect to. The "
            "server answers whether it accepts the access or not.",
      binds="both"),
    # "Authentication" says what the client does first (RMQS-HS-016), not what a server does
    # with a command sent before the sequence is over: the server's part is the kit's reading.
    R("RMQS-HS-006", "Authentication", "SHOULD",
      "before Open, a command other than the handshake's is not answered and the connection "
      "ends (after Close(13) if the server sends anything)",
      source="reading",
      quote="Once a client is connected to the server, it initiates an authentication sequence.",
      level_note="the document's sentence binds the client (it starts with the authentication "
                 "sequence); what the server does about a client that sends another command "
                 "first is the kit's reading, graded SHOULD",
      binds="server"),
    R("RMQS-HS-007", "Response Codes", "MUST",
      "SaslAuthenticate with a wrong password or an unknown user gets code 8 (authentication "
      "failure)",
      quote="Authentication failure 8", binds="server"),
    R("RMQS-HS-008", "Response Codes", "MUST",
      "SaslAuthenticate with a mechanism the server does not offer gets code 7",
      quote="SASL mechanism not supported 7", binds="server"),
    R("RMQS-HS-009", "SaslAuthenticate", "SHOULD",
      "after a failed SaslAuthenticate (code 7, 8 or 9) the server closes the connection",
      source="reading",
      quote="SaslHandshake request has no Mechanism; SaslAuthenticate response carries challenge "
            "data only when there is one; PLAIN data is `\\0user\\0pass`.",
      level_note="the kit's reading: SPEC_NOTES does not say that a failed SaslAuthenticate closes "
                 "the connection; closest: its facts on the real SASL exchange",
      binds="server"),
    R("RMQS-HS-010", "Response Codes", "MUST",
      "Open with a virtual host the user cannot access gets code 12",
      quote="Virtual host access failure 12", binds="server"),
    R("RMQS-HS-011", "Open", "SHOULD",
      "after Open is refused the server closes the connection", source="reading",
      quote="Open's response omits even the property count when there are no properties.",
      level_note="the kit's reading: SPEC_NOTES does not say that a refused Open closes the "
                 "connection; closest: its fact on the real Open response",
      binds="server"),
    R("RMQS-HS-012", "SaslAuthenticate", "SHOULD",
      "PLAIN data that is not \\0user\\0password gets code 9 (SASL error)", source="reading",
      quote="PLAIN data is `\\0user\\0pass`.",
      level_note="the kit's reading: SPEC_NOTES does not say which code PLAIN data of another shape "
                 "gets (9); closest: the shape of PLAIN data",
      binds="server"),
    R("RMQS-HS-013", "Tune", "SHOULD",
      "the client's Tune answer is accepted as key 0x8014 or as key 0x0014", source="SPEC_NOTES",
      quote="the client's reply is accepted as key 20 or 0x8014.", binds="server"),
    R("RMQS-HS-014", "Authentication", "SHOULD",
      "a handshake command after Open (PeerProperties, SaslHandshake, SaslAuthenticate, Tune, "
      "Open) gets Close(13)", source="reading",
      quote=_UNKNOWN_KEY,
      level_note="the kit's reading: SPEC_NOTES does not say what a handshake command after Open "
                 "gets; closest: what an unknown command key gets",
      binds="server"),
    R("RMQS-HS-015", "Open", "SHOULD",
      "the Open response's connection properties name advertised_host and advertised_port",
      source="reading",
      quote="Open's response omits even the property count when there are no properties.",
      level_note="the kit's reading: SPEC_NOTES does not say which properties the Open response "
                 "carries (advertised_host, advertised_port); closest: its fact on the real Open "
                 "response",
      binds="server"),
    R("RMQS-HS-016", "Authentication", "MUST",
      "the client starts the sequence: PeerProperties, SaslHandshake, SaslAuthenticate, its "
      "Tune answer, Open", untestable=_CLIENT,
      quote="Once a client is connected to the server, it initiates an authentication sequence. "
            "The next figure shows the steps of the sequence:",
      binds="client"),
    R("RMQS-HS-017", "SaslHandshake", "MUST",
      "the client picks a mechanism from the list the server returned", untestable=_CLIENT,
      quote="SaslHandshake: the client asks about the SASL mechanisms the server supports. It "
            "can then pick one from the list the server returns.",
      level_note="\"can then pick one\" grants the choice among the mechanisms listed; the MUST "
                 "is that the pick comes from that list (a mechanism the server does not offer "
                 "gets code 7, RMQS-HS-008)",
      binds="client"),
    # Tune / Heartbeat / Close
    # binds both: "Tune" is a negotiation (the server suggests, the client answers with "the
    # settings he agrees on"); what was agreed holds for the connection, on both sides.
    R("RMQS-TUNE-001", "Tune", "MUST",
      "the values of the client's Tune answer apply to the connection (a heartbeat of 1 s "
      "makes an idle server send Heartbeat about every second)",
      quote="The client answers with a Tune frame with the settings he agrees on, possibly "
            "adjusted from the server’s suggestions.",
      binds="both"),
    R("RMQS-TUNE-002", "Tune", "MUST",
      "the client answers Tune with the settings it agrees on, possibly adjusted",
      untestable=_CLIENT,
      quote="The client answers with a Tune frame with the settings he agrees on, possibly "
            "adjusted from the server’s suggestions.",
      binds="client"),
    R("RMQS-HB-001", "Heartbeat", "MUST", "a Heartbeat from the client gets no response",
      quote="Heartbeat Client & Server 23 No", binds="both"),
    R("RMQS-HB-002", "Heartbeat", "MUST",
      "with a non-zero negotiated heartbeat an idle server sends Heartbeat (key 23, no content)",
      quote="Heartbeat => Key Version Key => uint16 // 23 Version => uint16", binds="both"),
    R("RMQS-HB-003", "Heartbeat", "SHOULD",
      "a client silent for a few heartbeat periods is disconnected", source="reading",
      quote=_REAL_DEFAULTS,
      level_note="the kit's reading: SPEC_NOTES does not say that a silent client is disconnected; "
                 "closest: the real server's heartbeat default",
      binds="server"),
    R("RMQS-HB-004", "Heartbeat", "SHOULD",
      "a client that sends Heartbeat frames stays connected past that time", source="reading",
      quote=_REAL_DEFAULTS,
      level_note="the kit's reading: SPEC_NOTES does not say that a client sending Heartbeats stays "
                 "connected; closest: the real server's heartbeat default",
      binds="server"),
    R("RMQS-HB-005", "Tune", "MUST",
      "a heartbeat of 0 means no heartbeat",
      untestable="a bounded wait cannot prove that a Heartbeat never comes (a server using its "
                 "own 60 s period would pass any short wait); tests/reference_impl/rabbitmq_stream/test_rmqs_session.py checks "
                 "the reference broker",
      quote="Heartbeat => uint32 // in seconds, 0 means no heartbeat", binds="both"),
    R("RMQS-CLOSE-001", "Close", "MUST",
      "a client's Close gets a CloseResponse with code 1 and the Close's correlation id",
      quote="CloseResponse => Key Version CorrelationId ResponseCode Key => uint16 // 22",
      binds="server"),
    R("RMQS-CLOSE-002", "Close", "SHOULD",
      "after answering the client's Close the server closes the connection", source="reading",
      quote=_UNKNOWN_KEY,
      level_note="the kit's reading: SPEC_NOTES does not say that the server closes the connection "
                 "after answering a client's Close; closest: the real server's Close on an "
                 "unknown key, after which it disconnects",
      binds="server"),
    R("RMQS-CLOSE-003", "Close", "MUST",
      "the client answers the server's Close with a CloseResponse", untestable=_CLIENT,
      quote="Close Client & Server 22 Yes", binds="client"),
    # Create / Delete
    R("RMQS-STREAM-001", "Create", "MUST", "Create of a new stream gets code 1",
      quote="Create => Key Version CorrelationId Stream Arguments", binds="server"),
    R("RMQS-STREAM-002", "Response Codes", "MUST",
      "Create of an existing stream with the same arguments gets code 5 (stream already exists)",
      quote="Stream already exists 5", binds="server"),
    R("RMQS-STREAM-003", "Response Codes", "SHOULD",
      "Create of an existing stream with different arguments gets code 17 (precondition failed)",
      source="SPEC_NOTES",
      quote="re-creating a stream with different arguments gives PreconditionFailed (17), with "
            "the same ones StreamAlreadyExists (5);",
      binds="server"),
    R("RMQS-STREAM-004", "Create", "SHOULD",
      "Create with an empty name gets code 17", source="reading",
      quote="re-creating a stream with different arguments gives PreconditionFailed (17), with "
            "the same ones StreamAlreadyExists (5);",
      level_note="the kit's reading: SPEC_NOTES does not say what Create with an empty name gets; "
                 "closest: the real server's other PreconditionFailed (17)",
      binds="server"),
    R("RMQS-STREAM-005", "Create", "MUST",
      "Create accepts arguments (max-length-bytes, max-age, stream-max-segment-size-bytes) "
      "with valid values",
      quote="Arguments => [Argument] Argument => Key Value Key => string Value => string",
      binds="server"),
    R("RMQS-STREAM-006", "Create", "SHOULD",
      "an argument the server does not know is ignored (code 1)", source="reading",
      quote="re-creating a stream with different arguments gives PreconditionFailed (17), with "
            "the same ones StreamAlreadyExists (5);",
      level_note="the kit's reading: SPEC_NOTES does not say that an unknown Create argument is "
                 "ignored; closest: its fact on how the real server treats Create's arguments",
      binds="server"),
    R("RMQS-STREAM-007", "Delete", "MUST",
      "Delete of an existing stream gets code 1 and the stream is gone",
      quote="Delete => Key Version CorrelationId Stream", binds="server"),
    R("RMQS-STREAM-008", "Response Codes", "MUST", "Delete of a missing stream gets code 2",
      quote=_STREAM_DOES_NOT_EXIST, binds="server"),
    R("RMQS-STREAM-009", "Create", "MUST",
      "Create of a stream whose name has 255 or 256 bytes gets code 1 and Metadata names it "
      "back (the name is a string, the document sets no shorter bound); at the string's limit, "
      "32,767 bytes, a server that bounds names may answer code 17 (RabbitMQ 3.10.8 takes "
      "such names, observed)",
      quote="Create => Key Version CorrelationId Stream Arguments Key => uint16 // 13 Version => "
            "uint16 CorrelationId => uint32 Stream => string",
      binds="server"),
    # Metadata / MetadataUpdate
    R("RMQS-META-001", "Metadata", "MUST",
      "each requested stream gets one entry (in any order) named as asked",
      quote="MetadataQuery => Key Version CorrelationId [Stream]", binds="server"),
    R("RMQS-META-002", "Metadata", "MUST",
      "an existing stream's entry has code 1 and a leader that references a broker of the "
      "response (host and port)",
      quote="Broker => Reference Host Port Reference => uint16 Host => string Port => uint32",
      binds="server"),
    R("RMQS-META-003", "Metadata", "MUST", "a missing stream's entry has code 2",
      quote="StreamMetadata => StreamName LeaderReference ReplicasReferences StreamName => "
            "string ResponseCode => uint16",
      binds="server"),
    R("RMQS-META-004", "Metadata", "MUST", "a query for no stream gets no entry",
      quote="MetadataQuery => Key Version CorrelationId [Stream]", binds="server"),
    R("RMQS-META-005", "Metadata", "SHOULD",
      "an entry is Name, Code, Leader, [Replicas] with 0-based broker references; a missing "
      "stream's leader is 0xFFFF", source="SPEC_NOTES",
      quote="Metadata entries: Name, Code, Leader, [Replicas]; broker references are 0-based.",
      binds="server"),
    R("RMQS-META-006", "MetadataUpdate", "MUST",
      "after a Delete, every connection with a publisher or a subscription on the stream gets "
      "MetadataUpdate(6, stream)",
      quote="MetadataUpdate => Key Version MetadataInfo Key => uint16 // 16 Version => uint16 "
            "MetadataInfo => Code Stream Code => uint16 // code to identify the information "
            "Stream => string // the stream implied",
      binds="server"),
    R("RMQS-META-007", "MetadataUpdate", "SHOULD",
      "after that MetadataUpdate the connection's subscriptions and publishers on the stream "
      "are gone (Unsubscribe gets 4, Publish gets PublishError 18)", source="reading",
      quote="publishing with an undeclared publisher id gives PublishError 18.",
      level_note="the kit's reading: SPEC_NOTES does not say what becomes of a connection's "
                 "publishers and subscriptions after a MetadataUpdate; closest: what publishing "
                 "with an undeclared publisher id gets",
      binds="server"),
    R("RMQS-META-008", "MetadataUpdate", "SHOULD",
      "a connection that neither publishes to nor consumes from the deleted stream gets no "
      "MetadataUpdate", source="reading",
      quote=_REAL_SERVER_RULES,
      level_note="the kit's reading: SPEC_NOTES does not say which connections get a MetadataUpdate; "
                 "closest: that the real server is the authority",
      binds="server"),
    # Publishers and publishing
    R("RMQS-PUB-001", "DeclarePublisher", "MUST",
      "DeclarePublisher on an existing stream gets code 1, with or without a reference",
      quote="DeclarePublisherRequest => Key Version CorrelationId PublisherId "
            "[PublisherReference] Stream",
      binds="server"),
    R("RMQS-PUB-002", "Response Codes", "MUST",
      "DeclarePublisher on a missing stream gets code 2",
      quote=_STREAM_DOES_NOT_EXIST, binds="server"),
    R("RMQS-PUB-003", "DeclarePublisher", "SHOULD",
      "DeclarePublisher with a publisher id already declared on the connection gets code 17",
      source="reading",
      quote=_PUBLISHER_REFERENCE,
      level_note="the kit's reading: SPEC_NOTES does not say what redeclaring a publisher id gets; "
                 "closest: its fact on DeclarePublisher",
      binds="server"),
    R("RMQS-PUB-004", "DeclarePublisher", "SHOULD",
      "DeclarePublisher with a reference another publisher of the stream on the same connection "
      "holds gets code 17 (RabbitMQ 3.10 lets other connections share it)", source="reading",
      quote=_PUBLISHER_REFERENCE,
      level_note="the kit's reading: SPEC_NOTES does not say what a publisher reference already held "
                 "on the connection gets; closest: its fact on DeclarePublisher's reference",
      binds="server"),
    R("RMQS-PUB-005", "DeletePublisher", "MUST",
      "DeletePublisher of a declared publisher gets code 1; its id is free again and publishing "
      "with it gets PublishError 18 until it is declared again",
      quote="DeletePublisherRequest => Key Version CorrelationId PublisherId", binds="server"),
    R("RMQS-PUB-006", "Response Codes", "MUST",
      "DeletePublisher of an unknown publisher id gets code 18",
      quote="Publisher does not exist 18", binds="server"),
    R("RMQS-PUB-007", "PublishConfirm", "MUST",
      "every publishing id of a Publish is confirmed exactly once by PublishConfirm (key 3) "
      "with the publisher id (in one or several frames)",
      quote="PublishingIds => [uint64] // to correlate with the messages sent", binds="server"),
    R("RMQS-PUB-008", "PublishError", "MUST",
      "Publish with an undeclared publisher id gets PublishError (key 4) with the publisher id "
      "and code 18 for every publishing id",
      quote="PublishingError => PublishingId Code PublishingId => uint64 Code => uint16 // code "
            "to identify the problem",
      binds="server"),
    R("RMQS-PUB-009", "Publish", "MUST",
      "published messages are stored in order with their bytes unchanged (empty and binary "
      "bodies included)",
      quote="PublishedMessages => [PublishedMessage] PublishedMessage => PublishingId Message "
            "PublishingId => uint64 Message => bytes",
      binds="server"),
    R("RMQS-PUB-010", "Publish", "SHOULD",
      "a sub-batch entry (0x80 | compression) of N records is one entry spanning N offsets, "
      "confirmed under its one publishing id", source="SPEC_NOTES",
      quote="a sub-entry batch of N messages is one entry spanning N offsets;", binds="server"),
    R("RMQS-PUB-011", "QueryPublisherSequence", "MUST",
      "QueryPublisherSequence gets code 1 and the highest publishing id stored under the "
      "reference",
      quote="QueryPublisherResponse => Key Version CorrelationId ResponseCode Sequence",
      binds="server"),
    R("RMQS-PUB-012", "QueryPublisherSequence", "SHOULD",
      "QueryPublisherSequence of an unknown reference gets code 1 and sequence 0",
      source="reading",
      quote=_PUBLISHER_REFERENCE,
      level_note="the kit's reading: SPEC_NOTES does not say what QueryPublisherSequence of an "
                 "unknown reference gets; closest: its fact on publisher references",
      binds="server"),
    R("RMQS-PUB-013", "Response Codes", "MUST",
      "QueryPublisherSequence on a missing stream gets code 2",
      quote=_STREAM_DOES_NOT_EXIST, binds="server"),
    R("RMQS-PUB-014", "DeclarePublisher", "SHOULD",
      "with a reference, a message whose publishing id is not above the last stored one (in "
      "an earlier Publish or earlier in the same one) is confirmed but not stored again",
      source="reading",
      quote=_PUBLISHER_REFERENCE,
      level_note="the kit's reading: SPEC_NOTES does not say how the real server deduplicates by "
                 "publisher reference; closest: its fact on publisher references",
      binds="server"),
    R("RMQS-PUB-015", "DeclarePublisher", "SHOULD",
      "without a reference nothing is deduplicated", source="reading",
      quote=_PUBLISHER_REFERENCE,
      level_note="the kit's reading: SPEC_NOTES does not say how the real server deduplicates by "
                 "publisher reference; closest: its fact on publisher references",
      binds="server"),
    R("RMQS-PUB-016", "DeclarePublisher", "SHOULD",
      "the sequence of a reference outlives its publisher: a new publisher with the reference "
      "continues it", source="reading",
      quote=_PUBLISHER_REFERENCE,
      level_note="the kit's reading: SPEC_NOTES does not say how the real server deduplicates by "
                 "publisher reference; closest: its fact on publisher references",
      binds="server"),
    # Storage across a crash: the document names confirms and stored offsets and sequences but
    # says nothing of a crash; streams are RabbitMQ's persistent logs, so the kit reads "stored"
    # as outliving the server process (source "reading": SHOULD). Tested only when the kit runs
    # the target (--target-command); [features] durable = false says it keeps nothing on disk.
    R("RMQS-STORE-001", "PublishConfirm", "SHOULD",
      "a message confirmed by PublishConfirm is stored: after a crash (kill -9, restart on the "
      "same data) a subscription from the first offset delivers it, in order, bytes unchanged",
      source="reading",
      quote="PublishConfirm => Key Version PublishingIds", binds="server"),
    R("RMQS-STORE-002", "StoreOffset", "SHOULD",
      "an offset stored by StoreOffset, once QueryOffset returns it, is returned by QueryOffset "
      "after a crash", source="reading",
      quote="StoreOffset => Key Version Reference Stream Offset", binds="server"),
    R("RMQS-STORE-003", "QueryPublisherSequence", "SHOULD",
      "the sequence stored under a publisher reference survives a crash: QueryPublisherSequence "
      "returns the highest confirmed publishing id, and a message sent again with an id not "
      "above it is confirmed but not stored twice", source="reading",
      quote="QueryPublisherResponse => Key Version CorrelationId ResponseCode Sequence",
      binds="server"),
    R("RMQS-PUB-017", "DeclarePublisher", "MUST",
      "a publisher reference has at most 256 characters", untestable=_CLIENT,
      quote="PublisherReference => string // max 256 characters", binds="client"),
    R("RMQS-PUB-018", "DeclarePublisher", "MUST",
      "a publisher or offset reference within the bound is accepted: with 255 characters "
      "DeclarePublisher gets code 1 and the reference's sequence and stored offset are "
      "returned; at 256 (the bound itself) a server whose tracking records hold a length of "
      "one byte (Osiris's) may refuse it: DeclarePublisher with code 17, StoreOffset by not "
      "storing it (RabbitMQ 3.10.8 ends the connection on it, observed)",
      quote="PublisherReference => string // max 256 characters",
      level_note="the bound is a field comment, not a sentence with a modal word; a reference "
                 "within it is a valid request, which the server answers as any other (MUST). "
                 "At 256 itself the kit accepts the refusal of a server whose tracking records "
                 "hold 255 bytes (SPEC_NOTES: the real server is the authority where the "
                 "document errs; RabbitMQ 3.10.8 declares such a publisher, but drops the "
                 "connection on such a StoreOffset)",
      binds="server"),
) + CONSUMING
