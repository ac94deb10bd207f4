"""SignalR Hub Protocol requirements (signalr-hub-protocol.md, an early draft; today's protocol
from SPEC_NOTES.md, section "SignalR", and signalr-real-clients.md).

Levels: the document's "must"/"MUST" and its protocol-error list are MUST; its "should" is
SHOULD; its "may" is MAY. What only today's protocol has (the handshake response, Ping,
Close, StreamInvocation, client streams, the HTTP transport) comes from SPEC_NOTES
(``source="SPEC_NOTES"``): MUST where a real client cannot work without it, SHOULD where it
is today's servers' behaviour a client copes without. Which reading a target follows is its
profile (``draft`` or ``v1``); a test of a feature the profile lacks is UNIMPLEMENTED, and a
rule the two readings answer differently is checked against the profile's reading.

The suite calls the methods of the wirecheck test hub (reference_impl/signalr/hub.py: Echo,
Add, Counter, Sum, ...): an RPC protocol can only be tested through methods both sides know,
so a target under test exposes that hub on the path or port given to ``--target``.

Errata the kit resolves (docs/protocols/signalr.md, "How the kit reads the document"):
- Completion ResultKind: the descriptions of 2 and 3 are swapped; 2 = void, 3 = non-void.
- VarInt example: ``0x80 0x25`` reads ``0x80 0x29`` (= 5248).
- "It is a protocol error for a Caller to send a StreamItem, Completion or StreamCompletion
  ... with an Invocation ID that has not been received in an Invocation message from the
  Callee": Caller and Callee are swapped (responses come from the Callee); the kit reads "for
  an endpoint to send a response for an id it never received in an Invocation".

Parties (``binds``): the document's rules for the Caller and the Callee bind whichever side
takes that role (a server invokes client methods too), so they bind both.
"""
from . import Requirement as R

_NOTES = "SPEC_NOTES"
_CLIENT = ("a rule for the Caller's own Binder (how it surfaces results to its application): "
           "not observable on the wire; client conformance mode checks what a client sends")

# Quotes (and notes) several requirements share, verbatim from their source.
_ERROR_FIELD = ("Errors are indicated by the presence of the error field in a Completion or "
                "StreamCompletion message. Errors always indicate the immediate end of the "
                "invocation.")
_MISSING_OR_UNRECOGNIZED_FIELD = ("It is a protocol error for any message to be missing a "
                                  "required field, or to have an unrecognized field.")
_NEGOTIATION_CLOSE = ("If the server does not support the protocol requested by the client or "
                      "the first message received from the client is not a Negotiation message "
                      "the server must close the connection.")
_NON_BLOCKING = ("When a Callee receives a \"Non-Blocking\" Invocation, it should dispatch the "
                 "message, but send no results or errors back to the Caller.")
_V1_HANDSHAKE_ANSWER = "server answers `{}` + 0x1E, or `{\"error\":\"...\"}` + 0x1E and closes."
_V1_TIMERS = "Keep-alive 15 s, server timeout 30 s, handshake timeout 15 s."
_V1_TYPES = ("Types: 1 Invocation, 2 StreamItem, 3 Completion, 4 StreamInvocation, 5 "
             "CancelInvocation, 6 Ping, 7 Close, 8 Ack, 9 Sequence.")

_CLIENT_OUTCOME = ("client behaviour: a server-facing suite cannot observe it; "
                   "check-client judges it")

REQUIREMENTS = (
    # --- Overview: the negotiation (handshake) message --------------------------------------------
    R("SIGR-HS-001", "Overview", "MUST",
      "the client's first message is the negotiation message, always JSON, naming the protocol; "
      "afterwards the connection speaks that protocol (json and messagepack)",
      quote="After opening a connection to the server the client must send a Negotiation message "
            "to the server as its first message. The negotiation message is always a JSON "
            "message and contains the name of the format (protocol) that will be used for the "
            "duration of the connection.",
      binds="both"),
    R("SIGR-HS-002", "Overview", "MUST",
      "if the server does not support the protocol the client requests, it must close the "
      "connection",
      quote=_NEGOTIATION_CLOSE, binds="server"),
    R("SIGR-HS-003", "Overview", "MUST",
      "if the first message from the client is not a negotiation message, the server must close "
      "the connection",
      quote=_NEGOTIATION_CLOSE, binds="server"),
    R("SIGR-HS-004", "Handshake", "MUST",
      "a successful handshake is answered with {} and 0x1E before any other message (v1)",
      source=_NOTES,
      quote=_V1_HANDSHAKE_ANSWER, binds="server"),
    R("SIGR-HS-005", "Handshake", "MUST",
      "a failed handshake is answered with {\"error\": \"...\"} and 0x1E, then the connection is "
      "closed (v1)", source=_NOTES,
      quote=_V1_HANDSHAKE_ANSWER, binds="server"),
    R("SIGR-HS-006", "Handshake", "SHOULD",
      "a handshake asking for a protocol version the server does not support fails with an "
      "error response (v1)", source=_NOTES,
      quote="Handshake: `{\"protocol\":\"json\"|\"messagepack\",\"version\":1}` + 0x1E from the "
            "client, always JSON; server answers `{}` + 0x1E, or `{\"error\":\"...\"}` + 0x1E "
            "and closes.",
      binds="server"),
    R("SIGR-HS-007", "Handshake", "SHOULD",
      "a connection that sends no handshake within the handshake timeout (15 s) is closed",
      source=_NOTES,
      quote=_V1_TIMERS, binds="server"),
    R("SIGR-HS-008", "Handshake", "MUST",
      "the handshake is only the first message: hub messages may follow it in the same write, "
      "and a handshake record split over several writes is understood",
      quote="the format must be negotiated after opening the connection and before sending any "
            "other messages.",
      binds="both"),
    # --- Invocations -----------------------------------------------------------------------------
    R("SIGR-INV-001", "Invocations", "MUST",
      "the Callee uses the Caller's Invocation ID, an arbitrary string, in all its response "
      "messages",
      quote="NOTE: Invocation IDs are arbitrarily chosen by the Caller and the Callee is "
            "expected to use the same string in all response messages.",
      binds="both"),
    R("SIGR-INV-002", "Invocations", "MUST",
      "the Target names one method, case-sensitively and without overloading: a name differing "
      "in case is not that method",
      quote="Target is case-sensitive", binds="both"),
    R("SIGR-INV-003", "Completion and results", "MUST",
      "a single result is sent in one Completion and no StreamItem is sent for it",
      quote="If the Callee is going to return a single result, it MUST not send any StreamItem "
            "messages, and MUST send the single result in a Completion message.",
      binds="both"),
    R("SIGR-INV-004", "Completion Message Encoding", "MUST",
      "a void method completes with a Completion carrying neither result nor error (JSON: no "
      "result property; MessagePack: ResultKind 2)",
      quote="The result will be absent for void methods.", binds="both"),
    R("SIGR-INV-005", "Errors", "MUST",
      "an invocation that fails completes with a Completion carrying the error and no result",
      quote=_ERROR_FIELD, binds="both"),
    R("SIGR-INV-006", "Streaming", "MUST",
      "results a method buffers (Batched) come back in a single Completion holding them all",
      quote="C->S: Invocation { Id = 42, Target = \"Batched\", Arguments = [ 5 ] } S->C: "
            "Completion { Id = 42, Result = [ 0, 1, 2, 3, 4 ] }",
      binds="server"),
    R("SIGR-INV-007", "Non-Blocking Invocations", "MUST",
      "a non-blocking invocation (v1: no invocationId; draft: nonblocking true) gets no results "
      "or errors back, not even when it fails",
      quote=_NON_BLOCKING,
      level_note="the \"should\" covers dispatching (SIGR-INV-008, SHOULD); sending nothing back "
                 "is a MUST because a response to a Non-Blocking Invocation is a protocol error "
                 "(\"It is a protocol error for a Caller to send a StreamItem, Completion or "
                 "StreamCompletion message in response to a Non-Blocking Invocation\")",
      binds="both"),
    R("SIGR-INV-008", "Non-Blocking Invocations", "SHOULD",
      "a non-blocking invocation is dispatched (its effect is visible to a later invocation)",
      quote=_NON_BLOCKING, binds="both"),
    R("SIGR-INV-009", "Invocations", "SHOULD",
      "an invocation names a method the Callee does not have: it completes with an error",
      source="reading", quote="Completion Message - Indicates a previous Invocation has completed. Contains an "
            "error if the invocation concluded with an error, or the result of method invocation.",
      level_note="the kit's reading, so SHOULD: the document does not name the case of a method the Callee does "
                 "not have; closest: an invocation that concludes with an error completes with it",
      binds="server"),
    R("SIGR-INV-010", "Invocations", "MAY",
      "a Callee may limit Invocation ID lengths and terminate the connection when an ID is too "
      "long (otherwise it answers with the same long id)",
      quote="Callees may establish reasonable limits on Invocation ID lengths and terminate the "
            "connection when an Invocation ID that is too long is received.",
      binds="both"),
    R("SIGR-INV-011", "Invocations", "SHOULD",
      "invocations with wrong arguments (count or type) complete with an error, the connection "
      "stays usable", source="reading",
      quote="The document is an early draft; today's clients (`@microsoft/signalr` on npm, "
            "`pysignalr` and `signalrcore` on PyPI) speak the current protocol.",
      level_note="the kit's reading: SPEC_NOTES does not say what an invocation with wrong arguments "
                 "gets; closest: that today's servers speak the current protocol",
      binds="server"),
    # The Caller's flow ("Wait for a StreamItem, Completion or StreamCompletion message with a
    # matching Invocation ID") binds the Caller; the suite grades the server as the Callee, whose
    # part is the interaction itself: every Invocation is answered by its completion.
    R("SIGR-INV-012", "Invocations", "MUST",
      "invocations are independent: several in flight on one connection each get their own "
      "Completion, matched by id",
      quote="Invocations - the Caller sends a message to the Callee and expects a message "
            "indicating that the invocation has been completed and optionally a result of the "
            "invocation",
      binds="both"),
    # --- Streaming -------------------------------------------------------------------------------
    R("SIGR-STR-001", "Streaming", "MUST",
      "a streamed result sends each item in its own StreamItem, then ends the stream (draft: "
      "StreamCompletion; v1: Completion without result)",
      quote="If a Callee is going to stream results, it MUST send each individual result in a "
            "separate StreamItem message, and complete the invocation with a StreamCompletion.",
      binds="both"),
    R("SIGR-STR-002", "Streaming", "MUST",
      "a stream is not ended with a Completion carrying the last result",
      quote="This is invalid because the Completion is not a valid message to complete a "
            "streaming invocation.",
      binds="both"),
    R("SIGR-STR-003", "Errors", "MUST",
      "a stream that fails ends with an error after the items already produced (draft: "
      "StreamCompletion with error; v1: Completion with error)",
      quote=_ERROR_FIELD, binds="both"),
    R("SIGR-STR-004", "Streaming", "SHOULD",
      "after a CancelInvocation the Callee stops the stream (items already sent may still "
      "arrive)",
      quote="If the Caller wants to stop receiving StreamItem messages before the Callee sends a "
            "StreamCompletion message, the Caller can send a CancelInvocation message with the "
            "same Invocation ID used for the Invocation message that started the stream.",
      level_note="the \"can\" is the Caller's permission to cancel; the document does not state "
                 "the Callee's duty to stop, which the kit reads as SHOULD (items already sent "
                 "may still arrive, as the document allows)",
      binds="both"),
    R("SIGR-STR-005", "Streaming", "SHOULD",
      "a streaming method called by Invocation, or a single-result method called by "
      "StreamInvocation, completes with an error (v1)", source="reading",
      quote=_V1_TYPES,
      level_note="the kit's reading: SPEC_NOTES does not say what a streaming method called by "
                 "Invocation, or a single-result one called by StreamInvocation, gets; closest: "
                 "the current protocol's message types",
      binds="server"),
    R("SIGR-STR-006", "Streaming", "MUST",
      "client-to-server streams: an Invocation with streamIds, StreamItems carrying a stream "
      "id, and a Completion for that id ending the stream, give the method its items (v1)",
      source=_NOTES,
      quote="`headers` on all but Ping; `streamIds` for client-to-server streams.", binds="both"),
    R("SIGR-STR-007", "Streaming", "MUST",
      "StreamInvocation (type 4) starts a server stream (v1)", source=_NOTES,
      quote=_V1_TYPES, binds="both"),
    R("SIGR-STR-008", "Streaming", "MUST",
      "an empty stream is ended at once with no items",
      quote="The Callee's Binder must encode each result in separate StreamItem messages, "
            "indicating the end of results by sending a StreamCompletion message.",
      binds="both"),
    R("SIGR-STR-009", "Streaming", "SHOULD",
      "a CancelInvocation for an id with no active stream is ignored",
      quote="CancelInvocation Message - Sent by the client to cancel a streaming invocation on "
            "the server.",
      level_note="the document does not say what a cancel of an id with no stream gets; ignoring "
                 "it is the kit's reading, graded SHOULD",
      binds="server"),
    R("SIGR-STR-010", "Streaming", "SHOULD",
      "on the Caller side a Binder yields an error when the number of results does not match "
      "what it expects", untestable=_CLIENT,
      quote="If the Caller expects only a single result, but multiple results are returned, or "
            "if the caller expects multiple results but only one result is returned, the "
            "Caller's Binder should yield an error.",
      binds="both"),
    R("SIGR-STR-011", "Errors", "SHOULD",
      "a StreamCompletion/Completion error does not stop the dispatching of results received "
      "before it", untestable=_CLIENT,
      quote="In the case of streamed responses, the arrival of a StreamCompletion message "
            "indicating an error should not stop the dispatching of previously-received results.",
      binds="both"),
    # --- Protocol errors ("Errors") --------------------------------------------------------------
    R("SIGR-ERR-001", "Errors", "MUST",
      "a message missing a required field is a protocol error: it is not acted upon as valid",
      quote=_MISSING_OR_UNRECOGNIZED_FIELD, binds="both"),
    R("SIGR-ERR-002", "Errors", "MUST",
      "a message with an unrecognized field is a protocol error (draft); v1 servers ignore "
      "unknown fields for forward compatibility",
      quote=_MISSING_OR_UNRECOGNIZED_FIELD, binds="both"),
    R("SIGR-ERR-003", "Errors", "MUST",
      "a StreamItem/Completion/StreamCompletion for an invocation id the server never invoked "
      "is a protocol error (draft; v1 servers ignore it)",
      quote="It is a protocol error for a Caller to send a StreamItem, Completion or "
            "StreamCompletion message with an Invocation ID that has not been received in an "
            "Invocation message from the Callee",
      binds="both"),
    R("SIGR-ERR-004", "Errors", "MUST",
      "a response to a non-blocking invocation is a protocol error (draft)",
      quote="It is a protocol error for a Caller to send a StreamItem, Completion or "
            "StreamCompletion message in response to a Non-Blocking Invocation",
      binds="both"),
    R("SIGR-ERR-005", "Errors", "MUST",
      "a Completion after a StreamItem for the same invocation is a protocol error (draft); "
      "v1 ends streams with a Completion, which then carries no result",
      quote="It is a protocol error for a Caller to send a Completion message when a StreamItem "
            "message has previously been sent for the same Invocation ID.",
      binds="both"),
    R("SIGR-ERR-006", "Completion Message Encoding", "MUST",
      "a Completion carrying both a result and an error is a protocol error",
      quote="It is a protocol error to include both a result and an error property in the "
            "Completion message.",
      binds="both"),
    R("SIGR-ERR-007", "Errors", "MUST",
      "an Invocation reusing an id that endpoint already used is a protocol error (draft); v1 "
      "servers refuse an id still in use with an error Completion",
      quote="It is a protocol error for an Invocation message to have an Invocation ID that has "
            "already been used by that endpoint.",
      binds="both"),
    R("SIGR-ERR-008", "Errors", "MUST",
      "an endpoint may use an Invocation ID the other endpoint used: not an error",
      quote="However, it is not an error for one endpoint to use an Invocation ID that was "
            "previously used by the other endpoint (allowing each endpoint to track it's own "
            "IDs).",
      binds="both"),
    R("SIGR-ERR-009", "Completion and results", "MUST",
      "any message for an invocation after its Completion is a protocol error (draft; v1 "
      "servers ignore it)",
      quote="Receiving any message using the same Invocation ID after a Completion or "
            "StreamCompletion message has been received for that invocation is considered a "
            "protocol error",
      binds="both"),
    R("SIGR-ERR-010", "Errors", "MAY",
      "after a protocol error the other endpoint may immediately terminate the connection "
      "(v1 servers send a Close carrying the error first)",
      quote="If either endpoint commits a Protocol Error (see examples below), the other "
            "endpoint may immediately terminate the underlying connection.",
      binds="both"),
    R("SIGR-ERR-011", "Errors", "MUST",
      "a message that is not valid JSON or MessagePack, or whose fields have the wrong types, "
      "is a protocol error",
      quote=_MISSING_OR_UNRECOGNIZED_FIELD,
      level_note="the document has no sentence for it; the document does not name undecodable messages or wrongly "
                 "typed fields; closest: its rule on malformed messages",
      binds="both"),
    # --- JSON encoding ---------------------------------------------------------------------------
    R("SIGR-JSON-001", "JSON Encoding", "MUST",
      "each message is a single JSON object; property names are case-sensitive",
      quote="All property names are case-sensitive.", binds="both"),
    R("SIGR-JSON-002", "JSON Payload Encoding", "MUST",
      "JSON messages are separated by the record separator 0x1E: several in one write, one "
      "split over writes, and a 0x1E arriving alone are all read the same",
      quote="JSON payloads are separated with the record separator (0x1e) to ease the parsing.",
      binds="both"),
    R("SIGR-JSON-003", "JSON Encoding", "MUST",
      "text is UTF-8: non-ASCII strings (raw or \\u-escaped) round-trip",
      quote="For example, when using the ASP.NET Sockets transports, UTF-8 encoding is always "
            "used for text.",
      binds="both"),
    R("SIGR-JSON-004", "Invocation Message Encoding", "MUST",
      "the server's JSON messages have the document's shapes: Completion {type 3, "
      "invocationId, result | error}, StreamItem {type 2, invocationId, item}",
      quote="type - A Number with the literal value 3, indicating that this message is a "
            "Completion.",
      binds="both"),
    R("SIGR-JSON-005", "JSON Payload Encoding", "MUST",
      "arguments, items and results carry any JSON value (objects, arrays, null, numbers, "
      "booleans) unchanged",
      quote="Items in the arguments array within the Invocation message type, as well as the "
            "item value of the StreamItem message and the result value of the Completion "
            "message, encode values which have meaning to each particular Binder.",
      binds="both"),
    # --- MessagePack encoding --------------------------------------------------------------------
    R("SIGR-MSGPACK-001", "MessagePack (MsgPack) encoding", "MUST",
      "each message is one MessagePack array whose first item is the message type, behind a "
      "VarInt length",
      quote="each Message is represented as a single MsgPack array containing items that "
            "correspond to properties of the given hub protocol message.",
      binds="both"),
    R("SIGR-MSGPACK-002", "Invocation Message Encoding", "MUST",
      "the Invocation array is understood in the profile's layout (draft [1, Id, NonBlocking, "
      "Target, Args]; v1 [1, Headers, Id|nil, Target, Args(, StreamIds)], 5 or 6 items)",
      quote="[1, InvocationId, NonBlocking, Target, [Arguments]]", binds="both"),
    R("SIGR-MSGPACK-003", "Completion Message Encoding", "MUST",
      "Completion ResultKind: 1 error with the message, 2 void with no result, 3 non-void with "
      "the result (the document's descriptions of 2 and 3 are swapped; its examples are right)",
      quote="ResultKind - A flag indicating the invocation result kind: • 1 - Error result - "
            "Result contains a String with the error message • 2 - Void result - Result contains "
            "the value returned by the server • 3 - Non-Void result - Result is absent",
      binds="both"),
    R("SIGR-MSGPACK-004", "StreamItem Message Encoding", "MUST",
      "StreamItem is [2, (Headers,) Id, Item]; the draft's StreamCompletion is [4, Id, Error?]",
      quote="[2, InvocationId, Item]", binds="both"),
    R("SIGR-MSGPACK-005", "MessagePack (MsgPack) encoding", "MUST",
      "MessagePack values carry through (binary, maps, nil, large integers, floats)",
      quote="MessagePack uses different formats to encode values. Refer to the MsgPack format "
            "spec for format definitions.",
      binds="both"),
    # --- Binary framing --------------------------------------------------------------------------
    R("SIGR-FRAME-001", "Binary encoding", "MUST",
      "the VarInt length is 7-bit groups, least significant first, 1-5 bytes: multi-byte "
      "lengths are read and written",
      quote="VarInt encodes the most significant bit as a marker indicating whether the byte is "
            "the last byte of the VarInt or if it spans to the next byte. Bytes appear in the "
            "reverse order - i.e. the first byte contains the least significant bits of the "
            "value.",
      binds="both"),
    R("SIGR-FRAME-002", "Binary encoding", "MUST",
      "records split anywhere (a VarInt split across reads included) or coalesced in one "
      "write are read the same",
      quote="([Length][Body])([Length][Body])... continues until end of the connection ...",
      binds="both"),
    R("SIGR-FRAME-003", "Binary encoding", "MUST",
      "a length prefix longer than 5 bytes or above 2 GB is invalid",
      quote="The biggest supported payloads are 2GB in size so the biggest number we need to "
            "support is 0x7fffffff which when encoded as VarInt is 0xFF 0xFF 0xFF 0xFF 0x07 - "
            "hence the maximum size of the length prefix is 5 bytes.",
      binds="both"),
    R("SIGR-FRAME-006", "Binary encoding", "SHOULD",
      "a server reads every message of up to 32 KiB (ASP.NET Core's default receive size); a "
      "longer one it may refuse by ending the connection (v1: after a Close carrying the "
      "error), never by answering it in part", source="reading",
      quote="The biggest supported payloads are 2GB in size so the biggest number we need to "
            "support is 0x7fffffff which when encoded as VarInt is 0xFF 0xFF 0xFF 0xFF 0x07 - "
            "hence the maximum size of the length prefix is 5 bytes.",
      level_note="the kit's reading: the document sets the framing's ceiling (2 GB), not how "
                 "much a server reads; today's servers bound it (ASP.NET Core's "
                 "MaximumReceiveMessageSize, 32 KiB unless configured), so the kit expects that "
                 "much read and lets a server refuse more, as a protocol error",
      binds="server"),
    R("SIGR-FRAME-004", "Binary encoding over text protocols", "MUST",
      "over a text transport binary messages are Base64 'Length:Body;' groups",
      untestable="ServerSentEvents/long polling are not among the transports the kit drives "
                 "(raw TCP, WebSocket); the codec's decode_text_binary is tested on the "
                 "document's example",
      quote="In case of sending messages using binary encoding over text transports (e.g. "
            "ServerSentEvents transport) messages should be Base64 encoded and use the following "
            "format:",
      level_note="the document says \"should\"; the kit grades MUST because a reader can split "
                 "binary messages on a text transport only in this one format (a peer cannot "
                 "interoperate otherwise)",
      binds="both"),
    R("SIGR-FRAME-005", "Protocol Buffers (ProtoBuf) Encoding", "MAY",
      "ProtoBuf encoding", untestable="the document says it is not implemented",
      quote="Protobuf encoding is currently not implemented",
      level_note="the document describes an encoding it says is not implemented: graded MAY "
                 "(optional)",
      binds="both"),
    # --- Today's protocol (v1) -------------------------------------------------------------------
    # What the real clients send binds the server: "A kit server must interoperate with all
    # three" (signalr-real-clients.md), so a fact about a client's bytes is an input it takes.
    R("SIGR-V1-001", "Ping", "MUST",
      "a Ping (type 6) from the client is accepted and needs no answer (v1)", source=_NOTES,
      quote="After the handshake response, the JS client at once sends a **Ping** "
            "(`{\"type\":6}\\x1e`, msgpack `02 91 06`) before its first invocation.",
      binds="server"),
    R("SIGR-V1-002", "Close", "MUST",
      "a Close (type 7) from the client ends the connection (v1)", source=_NOTES,
      quote="**JS `stop()`:** sends the SignalR Close (`{\"type\":7}\\x1e` or `03 92 07 c0`), "
            "then a WebSocket close frame with an **empty payload** (no status code).",
      binds="server"),
    R("SIGR-V1-003", "Headers", "MUST",
      "headers on hub messages (signalrcore sends {\"Content-Type\": ...}) are accepted (v1)",
      source=_NOTES,
      quote="After a negotiate, `headers` is **`{\"Content-Type\": \"application/json\"}`**: the "
            "library copies its HTTP headers into every hub message.",
      binds="server"),
    R("SIGR-V1-004", "Message types", "SHOULD",
      "a message type the server does not know is ignored (forward compatibility, v1)",
      source="reading",
      quote=_V1_TYPES,
      level_note="the kit's reading: SPEC_NOTES does not say what a message type the server does not "
                 "know gets; closest: the list of the current protocol's message types",
      binds="server"),
    R("SIGR-V1-005", "Close", "SHOULD",
      "a server closing for a protocol error sends a Close message with the error first (v1)",
      source=_NOTES,
      quote="The test hub answered with a Close message carrying an error and closed the socket. "
            "That reaction is a guess at ASP.NET Core's, not a recording of it.",
      level_note="signalr-real-clients.md calls this reaction a guess at ASP.NET Core's, hence "
                 "SHOULD",
      binds="server"),
    R("SIGR-V1-006", "Ack/Sequence", "SHOULD",
      "Ack and Sequence without stateful reconnect are ignored (v1)", source="reading",
      quote="Ack `[8, SeqId]`; Sequence `[9, SeqId]`.",
      level_note="the kit's reading: SPEC_NOTES does not say that Ack and Sequence are ignored "
                 "without stateful reconnect; closest: their layouts in the current protocol",
      binds="server"),
    R("SIGR-V1-007", "Server to client", "MUST",
      "a server-invoked client method is an Invocation the client can read: v1 without an id "
      "when no result is expected; with an id when the server waits for the client's result",
      source=_NOTES,
      quote="A non-blocking invocation has no invocationId.", binds="both"),
    R("SIGR-V1-008", "Keep-alive", "SHOULD",
      "an idle server sends Ping every keep-alive interval (15 s) (v1)", source=_NOTES,
      quote=_V1_TIMERS, binds="server"),
    R("SIGR-V1-009", "Keep-alive", "SHOULD",
      "a server closes a connection from which nothing arrived for the client timeout (30 s)",
      source=_NOTES,
      quote=_V1_TIMERS, binds="server"),
    # --- HTTP transport (SPEC_NOTES) -------------------------------------------------------------
    R("SIGR-HTTP-001", "Transport", "MUST",
      "POST {hub}/negotiate?negotiateVersion=1 (empty body) answers 200 with JSON "
      "{connectionToken, connectionId, negotiateVersion: 1, availableTransports} offering "
      "WebSockets", source=_NOTES,
      quote="Transport used by real clients: `POST {hub}/negotiate?negotiateVersion=1` (empty "
            "body) -> `{connectionToken, connectionId, negotiateVersion, "
            "availableTransports:[...]}`;",
      binds="both"),
    R("SIGR-HTTP-002", "Transport", "MUST",
      "negotiate without negotiateVersion (version 0) answers a connectionId that is the "
      "WebSocket id", source=_NOTES,
      quote="The Python clients negotiate without `negotiateVersion` (version 0: `connectionId` "
            "is the id).",
      binds="both"),
    R("SIGR-HTTP-003", "Transport", "MUST",
      "a WebSocket to {hub}?id=<token> after negotiate, and to {hub} without negotiate "
      "(skipNegotiation), carries the protocol", source=_NOTES,
      quote="then a WebSocket to `{hub}?id=<token>`; `skipNegotiation` goes straight to the "
            "WebSocket.",
      binds="both"),
    R("SIGR-HTTP-004", "Transport", "SHOULD",
      "a WebSocket for an id the server never issued, or one already used, is refused (an HTTP "
      "4xx such as ASP.NET Core's 404/409, or the WebSocket closed at once, e.g. 4404/4409)",
      source="reading",
      quote="then a WebSocket to `{hub}?id=<token>`; `skipNegotiation` goes straight to the "
            "WebSocket.",
      level_note="the kit's reading: SPEC_NOTES does not say what a WebSocket for an unknown or used "
                 "id gets; closest: how a client opens the WebSocket with the negotiated id",
      binds="server"),
    R("SIGR-HTTP-005", "Transport", "SHOULD",
      "MessagePack connections use binary WebSocket messages, JSON connections text ones",
      source=_NOTES,
      quote="| pysignalr | text frame `{\"protocol\": \"json\", \"version\": 1}\\x1e` (35 B, "
            "with spaces) | **binary** frame `{\"protocol\":\"messagepack\",\"version\":1}\\x1e` "
            "(39 B) |",
      binds="server"),
    # What happens to a client library under the kit's scenarios (wirecheck check-client,
    # conformance/clients/suite.py): its driver's outcome, not its bytes.
    R("SIGR-CLIENT-001", "Client outcomes", "SHOULD",
      "a client completes its workload when the server's bytes come split, joined or late, with "
      "Pings among its messages, unknown fields and headers in them (v1), and messages up to the "
      "receive limit",
      source="reading", untestable=_CLIENT_OUTCOME,
      quote="JSON payloads are separated with the record separator (0x1e) to ease the parsing.",
      binds="client"),
    R("SIGR-CLIENT-002", "Client outcomes", "MUST",
      "an invocation the server completes with an error ends with that error dispatched to the "
      "application (no success, no hang)",
      untestable=_CLIENT_OUTCOME,
      quote="Complete the invocation, dispatching the final payload item (if any) or the error "
            "(if any) to the application",
      level_note="a step of the document's basic flow for an invocation, in the imperative: read "
                 "as what a Caller does, a MUST",
      binds="client"),
    R("SIGR-CLIENT-003", "Client outcomes", "SHOULD",
      "a connection the server ends (a Close, the end of the transport) fails the pending "
      "invocations and streams, reported to the application, not hung on",
      source="reading", untestable=_CLIENT_OUTCOME,
      quote="If either endpoint commits a Protocol Error (see examples below), the other endpoint "
            "may immediately terminate the underlying connection.",
      level_note="the \"may\" is the server's permission to end the connection; that the client "
                 "then tells its application is the kit's reading, graded SHOULD",
      binds="client"),
    R("SIGR-CLIENT-004", "Client outcomes", "MUST",
      "each StreamItem's payload and each result is dispatched to the application, once",
      untestable=_CLIENT_OUTCOME,
      quote="If the StreamItem message has a payload, dispatch the payload to the application "
            "(i.e. by yielding a result to an IObservable, or by collecting the result for "
            "dispatching in step 8)",
      level_note="a step of the document's basic flow, in the imperative; the protocol has no "
                 "retransmission, so once",
      binds="client"),
    R("SIGR-CLIENT-005", "Client outcomes", "SHOULD",
      "legal server behaviour never crashes a client (a signal, an uncaught error)",
      source="reading", untestable=_CLIENT_OUTCOME,
      quote="It is possible to receive StreamItem messages or a StreamCompletion message after a "
            "CancelInvocation message has been sent, these can be ignored.",
      binds="client"),
)
