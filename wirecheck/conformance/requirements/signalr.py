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

Errata the kit resolves (README, "SignalR readings"):
- Completion ResultKind: the descriptions of 2 and 3 are swapped; 2 = void, 3 = non-void.
- VarInt example: ``0x80 0x25`` reads ``0x80 0x29`` (= 5248).
- "It is a protocol error for a Caller to send a StreamItem, Completion or StreamCompletion
  ... with an Invocation ID that has not been received in an Invocation message from the
  Callee": Caller and Callee are swapped (responses come from the Callee); the kit reads "for
  an endpoint to send a response for an id it never received in an Invocation".
"""
from . import Requirement as R

_NOTES = "SPEC_NOTES"
_CLIENT = ("a rule for the Caller's own Binder (how it surfaces results to its application): "
           "not observable on the wire; client conformance mode checks what a client sends")

REQUIREMENTS = (
    # --- Overview: the negotiation (handshake) message --------------------------------------------
    R("SIGR-HS-001", "Overview", "MUST",
      "the client's first message is the negotiation message, always JSON, naming the protocol; "
      "afterwards the connection speaks that protocol (json and messagepack)"),
    R("SIGR-HS-002", "Overview", "MUST",
      "if the server does not support the protocol the client requests, it must close the "
      "connection"),
    R("SIGR-HS-003", "Overview", "MUST",
      "if the first message from the client is not a negotiation message, the server must close "
      "the connection"),
    R("SIGR-HS-004", "Handshake", "MUST",
      "a successful handshake is answered with {} and 0x1E before any other message (v1)",
      source=_NOTES),
    R("SIGR-HS-005", "Handshake", "MUST",
      "a failed handshake is answered with {\"error\": \"...\"} and 0x1E, then the connection is "
      "closed (v1)", source=_NOTES),
    R("SIGR-HS-006", "Handshake", "SHOULD",
      "a handshake asking for a protocol version the server does not support fails with an "
      "error response (v1)", source=_NOTES),
    R("SIGR-HS-007", "Handshake", "SHOULD",
      "a connection that sends no handshake within the handshake timeout (15 s) is closed",
      source=_NOTES),
    R("SIGR-HS-008", "Handshake", "MUST",
      "the handshake is only the first message: hub messages may follow it in the same write, "
      "and a handshake record split over several writes is understood"),
    # --- Invocations -----------------------------------------------------------------------------
    R("SIGR-INV-001", "Invocations", "MUST",
      "the Callee uses the Caller's Invocation ID, an arbitrary string, in all its response "
      "messages"),
    R("SIGR-INV-002", "Invocations", "MUST",
      "the Target names one method, case-sensitively and without overloading: a name differing "
      "in case is not that method"),
    R("SIGR-INV-003", "Completion and results", "MUST",
      "a single result is sent in one Completion and no StreamItem is sent for it"),
    R("SIGR-INV-004", "Completion Message Encoding", "MUST",
      "a void method completes with a Completion carrying neither result nor error (JSON: no "
      "result property; MessagePack: ResultKind 2)"),
    R("SIGR-INV-005", "Errors", "MUST",
      "an invocation that fails completes with a Completion carrying the error and no result"),
    R("SIGR-INV-006", "Streaming", "MUST",
      "results a method buffers (Batched) come back in a single Completion holding them all"),
    R("SIGR-INV-007", "Non-Blocking Invocations", "MUST",
      "a non-blocking invocation (v1: no invocationId; draft: nonblocking true) gets no results "
      "or errors back, not even when it fails"),
    R("SIGR-INV-008", "Non-Blocking Invocations", "SHOULD",
      "a non-blocking invocation is dispatched (its effect is visible to a later invocation)"),
    R("SIGR-INV-009", "Invocations", "MUST",
      "an invocation names a method the Callee does not have: it completes with an error"),
    R("SIGR-INV-010", "Invocations", "MAY",
      "a Callee may limit Invocation ID lengths and terminate the connection when an ID is too "
      "long (otherwise it answers with the same long id)"),
    R("SIGR-INV-011", "Invocations", "SHOULD",
      "invocations with wrong arguments (count or type) complete with an error, the connection "
      "stays usable", source=_NOTES),
    R("SIGR-INV-012", "Invocations", "MUST",
      "invocations are independent: several in flight on one connection each get their own "
      "Completion, matched by id"),
    # --- Streaming -------------------------------------------------------------------------------
    R("SIGR-STR-001", "Streaming", "MUST",
      "a streamed result sends each item in its own StreamItem, then ends the stream (draft: "
      "StreamCompletion; v1: Completion without result)"),
    R("SIGR-STR-002", "Streaming", "MUST",
      "a stream is not ended with a Completion carrying the last result"),
    R("SIGR-STR-003", "Errors", "MUST",
      "a stream that fails ends with an error after the items already produced (draft: "
      "StreamCompletion with error; v1: Completion with error)"),
    R("SIGR-STR-004", "Streaming", "SHOULD",
      "after a CancelInvocation the Callee stops the stream (items already sent may still "
      "arrive)"),
    R("SIGR-STR-005", "Streaming", "SHOULD",
      "a streaming method called by Invocation, or a single-result method called by "
      "StreamInvocation, completes with an error (v1)", source=_NOTES),
    R("SIGR-STR-006", "Streaming", "MUST",
      "client-to-server streams: an Invocation with streamIds, StreamItems carrying a stream "
      "id, and a Completion for that id ending the stream, give the method its items (v1)",
      source=_NOTES),
    R("SIGR-STR-007", "Streaming", "MUST",
      "StreamInvocation (type 4) starts a server stream (v1)", source=_NOTES),
    R("SIGR-STR-008", "Streaming", "MUST",
      "an empty stream is ended at once with no items"),
    R("SIGR-STR-009", "Streaming", "SHOULD",
      "a CancelInvocation for an id with no active stream is ignored"),
    R("SIGR-STR-010", "Streaming", "SHOULD",
      "on the Caller side a Binder yields an error when the number of results does not match "
      "what it expects", untestable=_CLIENT),
    R("SIGR-STR-011", "Errors", "SHOULD",
      "a StreamCompletion/Completion error does not stop the dispatching of results received "
      "before it", untestable=_CLIENT),
    # --- Protocol errors ("Errors") --------------------------------------------------------------
    R("SIGR-ERR-001", "Errors", "MUST",
      "a message missing a required field is a protocol error: it is not acted upon as valid"),
    R("SIGR-ERR-002", "Errors", "MUST",
      "a message with an unrecognized field is a protocol error (draft); v1 servers ignore "
      "unknown fields for forward compatibility"),
    R("SIGR-ERR-003", "Errors", "MUST",
      "a StreamItem/Completion/StreamCompletion for an invocation id the server never invoked "
      "is a protocol error (draft; v1 servers ignore it)"),
    R("SIGR-ERR-004", "Errors", "MUST",
      "a response to a non-blocking invocation is a protocol error (draft)"),
    R("SIGR-ERR-005", "Errors", "MUST",
      "a Completion after a StreamItem for the same invocation is a protocol error (draft); "
      "v1 ends streams with a Completion, which then carries no result"),
    R("SIGR-ERR-006", "Completion Message Encoding", "MUST",
      "a Completion carrying both a result and an error is a protocol error"),
    R("SIGR-ERR-007", "Errors", "MUST",
      "an Invocation reusing an id that endpoint already used is a protocol error (draft); v1 "
      "servers refuse an id still in use with an error Completion"),
    R("SIGR-ERR-008", "Errors", "MUST",
      "an endpoint may use an Invocation ID the other endpoint used: not an error"),
    R("SIGR-ERR-009", "Completion and results", "MUST",
      "any message for an invocation after its Completion is a protocol error (draft; v1 "
      "servers ignore it)"),
    R("SIGR-ERR-010", "Errors", "MAY",
      "after a protocol error the other endpoint may immediately terminate the connection "
      "(v1 servers send a Close carrying the error first)"),
    R("SIGR-ERR-011", "Errors", "MUST",
      "a message that is not valid JSON or MessagePack, or whose fields have the wrong types, "
      "is a protocol error"),
    # --- JSON encoding ---------------------------------------------------------------------------
    R("SIGR-JSON-001", "JSON Encoding", "MUST",
      "each message is a single JSON object; property names are case-sensitive"),
    R("SIGR-JSON-002", "JSON Payload Encoding", "MUST",
      "JSON messages are separated by the record separator 0x1E: several in one write, one "
      "split over writes, and a 0x1E arriving alone are all read the same"),
    R("SIGR-JSON-003", "JSON Encoding", "MUST",
      "text is UTF-8: non-ASCII strings (raw or \\u-escaped) round-trip"),
    R("SIGR-JSON-004", "Invocation Message Encoding", "MUST",
      "the server's JSON messages have the document's shapes: Completion {type 3, "
      "invocationId, result | error}, StreamItem {type 2, invocationId, item}"),
    R("SIGR-JSON-005", "JSON Payload Encoding", "MUST",
      "arguments, items and results carry any JSON value (objects, arrays, null, numbers, "
      "booleans) unchanged"),
    # --- MessagePack encoding --------------------------------------------------------------------
    R("SIGR-MSGPACK-001", "MessagePack (MsgPack) encoding", "MUST",
      "each message is one MessagePack array whose first item is the message type, behind a "
      "VarInt length"),
    R("SIGR-MSGPACK-002", "Invocation Message Encoding", "MUST",
      "the Invocation array is understood in the profile's layout (draft [1, Id, NonBlocking, "
      "Target, Args]; v1 [1, Headers, Id|nil, Target, Args(, StreamIds)], 5 or 6 items)"),
    R("SIGR-MSGPACK-003", "Completion Message Encoding", "MUST",
      "Completion ResultKind: 1 error with the message, 2 void with no result, 3 non-void with "
      "the result (the document's descriptions of 2 and 3 are swapped; its examples are right)"),
    R("SIGR-MSGPACK-004", "StreamItem Message Encoding", "MUST",
      "StreamItem is [2, (Headers,) Id, Item]; the draft's StreamCompletion is [4, Id, Error?]"),
    R("SIGR-MSGPACK-005", "MessagePack (MsgPack) encoding", "MUST",
      "MessagePack values carry through (binary, maps, nil, large integers, floats)"),
    # --- Binary framing --------------------------------------------------------------------------
    R("SIGR-FRAME-001", "Binary encoding", "MUST",
      "the VarInt length is 7-bit groups, least significant first, 1-5 bytes: multi-byte "
      "lengths are read and written"),
    R("SIGR-FRAME-002", "Binary encoding", "MUST",
      "records split anywhere (a VarInt split across reads included) or coalesced in one "
      "write are read the same"),
    R("SIGR-FRAME-003", "Binary encoding", "MUST",
      "a length prefix longer than 5 bytes or above 2 GB is invalid"),
    R("SIGR-FRAME-004", "Binary encoding over text protocols", "MUST",
      "over a text transport binary messages are Base64 'Length:Body;' groups",
      untestable="ServerSentEvents/long polling are not among the transports the kit drives "
                 "(raw TCP, WebSocket); the codec's decode_text_binary is tested on the "
                 "document's example"),
    R("SIGR-FRAME-005", "Protocol Buffers (ProtoBuf) Encoding", "MAY",
      "ProtoBuf encoding", untestable="the document says it is not implemented"),
    # --- Today's protocol (v1) -------------------------------------------------------------------
    R("SIGR-V1-001", "Ping", "MUST",
      "a Ping (type 6) from the client is accepted and needs no answer (v1)", source=_NOTES),
    R("SIGR-V1-002", "Close", "MUST",
      "a Close (type 7) from the client ends the connection (v1)", source=_NOTES),
    R("SIGR-V1-003", "Headers", "MUST",
      "headers on hub messages (signalrcore sends {\"Content-Type\": ...}) are accepted (v1)",
      source=_NOTES),
    R("SIGR-V1-004", "Message types", "SHOULD",
      "a message type the server does not know is ignored (forward compatibility, v1)",
      source=_NOTES),
    R("SIGR-V1-005", "Close", "SHOULD",
      "a server closing for a protocol error sends a Close message with the error first (v1)",
      source=_NOTES),
    R("SIGR-V1-006", "Ack/Sequence", "SHOULD",
      "Ack and Sequence without stateful reconnect are ignored (v1)", source=_NOTES),
    R("SIGR-V1-007", "Server to client", "MUST",
      "a server-invoked client method is an Invocation the client can read: v1 without an id "
      "when no result is expected; with an id when the server waits for the client's result",
      source=_NOTES),
    R("SIGR-V1-008", "Keep-alive", "SHOULD",
      "an idle server sends Ping every keep-alive interval (15 s) (v1)", source=_NOTES),
    R("SIGR-V1-009", "Keep-alive", "SHOULD",
      "a server closes a connection from which nothing arrived for the client timeout (30 s)",
      source=_NOTES),
    # --- HTTP transport (SPEC_NOTES) -------------------------------------------------------------
    R("SIGR-HTTP-001", "Transport", "MUST",
      "POST {hub}/negotiate?negotiateVersion=1 (empty body) answers 200 with JSON "
      "{connectionToken, connectionId, negotiateVersion: 1, availableTransports} offering "
      "WebSockets", source=_NOTES),
    R("SIGR-HTTP-002", "Transport", "MUST",
      "negotiate without negotiateVersion (version 0) answers a connectionId that is the "
      "WebSocket id", source=_NOTES),
    R("SIGR-HTTP-003", "Transport", "MUST",
      "a WebSocket to {hub}?id=<token> after negotiate, and to {hub} without negotiate "
      "(skipNegotiation), carries the protocol", source=_NOTES),
    R("SIGR-HTTP-004", "Transport", "SHOULD",
      "a WebSocket for an id the server never issued, or one already used, is refused (an HTTP "
      "4xx such as ASP.NET Core's 404/409, or the WebSocket closed at once, e.g. 4404/4409)",
      source=_NOTES),
    R("SIGR-HTTP-005", "Transport", "SHOULD",
      "MessagePack connections use binary WebSocket messages, JSON connections text ones",
      source=_NOTES),
)
