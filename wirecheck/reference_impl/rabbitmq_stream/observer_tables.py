"""The RabbitMQ Stream observer's tables (observer.py): which commands each side sends, the
handshake's order, the codes each command may get and those the conversation decides, the
framing rules a decode error breaks, what the server owes after a bad frame, the profile's
switches, and the records the observer keeps of requests, subscriptions and publishers."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..core.errors import Category
from ..core.observer import C2S, S2C
from . import codec
from .constants import Code, Key
from .session import PROFILE_KEYS

#: Commands the "Commands" table has from the server (requests or one-way), besides
#: responses. Tune, Close and Heartbeat go both ways.
SERVER_COMMANDS = frozenset((Key.PUBLISH_CONFIRM, Key.PUBLISH_ERROR, Key.DELIVER, Key.METADATA_UPDATE,
                             Key.TUNE, Key.CLOSE, Key.HEARTBEAT, Key.CONSUMER_UPDATE))
#: Server requests the client answers (by correlation id).
SERVER_REQUESTS = frozenset((Key.CLOSE, Key.CONSUMER_UPDATE))
#: Seconds a server request must have been out before a client's close counts as leaving it
#: unanswered (the two may cross on the wire).
ANSWER_GRACE = 0.25
#: Seconds after its Close that a server ending the connection has waited long enough for the
#: client's CloseResponse (RMQS-CLOSE-003).
CLOSE_ANSWER_WAIT = 1.0
#: The handshake's commands ("Authentication"), in the client's order.
HANDSHAKE_ORDER = (Key.PEER_PROPERTIES, Key.SASL_HANDSHAKE, Key.SASL_AUTHENTICATE, Key.TUNE, Key.OPEN)
#: The client's step each handshake command needs done first (RMQS-HS-016).
HANDSHAKE_NEEDS = {Key.SASL_HANDSHAKE: Key.PEER_PROPERTIES, Key.SASL_AUTHENTICATE: Key.SASL_HANDSHAKE,
                   Key.OPEN: Key.TUNE}
#: Commands with no response: allowed before Open without a client breach (the document
#: orders the handshake, not these); the server still answers nothing (RMQS-HS-006).
BEFORE_OPEN_TOLERATED = frozenset((Key.HEARTBEAT, Key.CLOSE))

#: Response codes the "Response Codes" table ties to some commands only; any other code of
#: the table may answer any request. Close codes (13, 14) never answer a request.
CODE_SCOPE = {
    Code.SUBSCRIPTION_ID_ALREADY_EXISTS: {Key.SUBSCRIBE},
    Code.SUBSCRIPTION_ID_DOES_NOT_EXIST: {Key.SUBSCRIBE, Key.UNSUBSCRIBE, Key.CREDIT},
    Code.STREAM_ALREADY_EXISTS: {Key.CREATE, Key.CREATE_SUPER_STREAM},
    Code.SASL_MECHANISM_NOT_SUPPORTED: {Key.SASL_HANDSHAKE, Key.SASL_AUTHENTICATE},
    Code.AUTHENTICATION_FAILURE: {Key.SASL_AUTHENTICATE},
    Code.SASL_ERROR: {Key.SASL_HANDSHAKE, Key.SASL_AUTHENTICATE},
    Code.SASL_CHALLENGE: {Key.SASL_AUTHENTICATE},
    Code.SASL_AUTHENTICATION_FAILURE_LOOPBACK: {Key.SASL_AUTHENTICATE},
    Code.VIRTUAL_HOST_ACCESS_FAILURE: {Key.OPEN},
    Code.UNKNOWN_FRAME: set(),
    Code.FRAME_TOO_LARGE: set(),
    Code.PUBLISHER_DOES_NOT_EXIST: {Key.DECLARE_PUBLISHER, Key.DELETE_PUBLISHER,
                                    Key.QUERY_PUBLISHER_SEQUENCE},
    Code.NO_OFFSET: {Key.QUERY_OFFSET},
}
#: Requests whose answer is always this code (the catalogue's summary says so).
MUST_CODE = {
    Key.PEER_PROPERTIES: (Code.OK, "RMQS-HS-001"),
    Key.SASL_HANDSHAKE: (Code.OK, "RMQS-HS-002"),
    Key.CLOSE: (Code.OK, "RMQS-CLOSE-001"),
    Key.EXCHANGE_COMMAND_VERSIONS: (Code.OK, "RMQS-NEW-001"),
}
#: SaslAuthenticate codes that end the authentication (RMQS-HS-009).
AUTH_FAILURES = frozenset((Code.SASL_MECHANISM_NOT_SUPPORTED, Code.AUTHENTICATION_FAILURE,
                           Code.SASL_ERROR, Code.SASL_AUTHENTICATION_FAILURE_LOOPBACK))
#: "PublisherReference => string // max 256 characters" (and StoreOffset's Reference).
MAX_REFERENCE = 256

#: Decode errors by direction and category. "" : not a protocol breach (a kit limit).
FRAMING = {
    C2S: {Category.LENGTH_TOO_SMALL: "RMQS-FRAME-011", Category.UNKNOWN_TYPE: "RMQS-FRAME-009"},
    S2C: {Category.LENGTH_TOO_SMALL: "RMQS-FRAME-001", Category.UNKNOWN_TYPE: "RMQS-FRAME-002"},
}
FRAMING_DEFAULT = "RMQS-TYPE-001"
#: Deliver chunk errors (reference_impl/rabbitmq_stream/chunk.py's messages), first match.
CHUNK_FRAMING = (
    ("chunk CRC", "RMQS-DELIVER-003"),
    ("records, its entries hold", "RMQS-DELIVER-004"),
    ("entries the header announces", "RMQS-DELIVER-004"),
    ("sub-batch", "RMQS-DELIVER-004"),
    ("entry", "RMQS-DELIVER-007"),
    ("chunk", "RMQS-DELIVER-002"),
)
#: What the server owes after a client's undecodable frame: (rule, Close code, Close
#: mandatory after Open). A size below 4 and a bad body only end the connection, "after
#: Close(13) if the server sends anything".
OWED_AFTER_MALFORMED = {
    Category.UNKNOWN_TYPE: ("RMQS-FRAME-009", Code.UNKNOWN_FRAME, True),
    Category.LENGTH_TOO_SMALL: ("RMQS-FRAME-011", Code.UNKNOWN_FRAME, False),
    Category.LENGTH_TOO_LARGE: ("RMQS-FRAME-007", Code.FRAME_TOO_LARGE, True),
}
OWED_AFTER_BAD_BODY = ("RMQS-FRAME-013", Code.UNKNOWN_FRAME, False)
#: The capture decoders' frame limit: above it a frame is undecodable whatever was negotiated.
CAPTURE_FRAME_LIMIT = codec.StreamConfig().max_frame_size


def server_frame_requirement(error) -> str:
    """The rule a frame the server sent that does not decode breaks (target.Connection.breach_of;
    "": the kit's limit, above which only an agreed frame_max the live decoder does not hold
    would make a breach)."""
    category = Category(getattr(error.category, "value", error.category))
    if category is Category.LENGTH_TOO_LARGE:
        return ""
    requirement = FRAMING[S2C].get(category, "") or next((r for m, r in CHUNK_FRAMING if m in error.message), "")
    return requirement or FRAMING_DEFAULT


def _profile(name: Optional[str]) -> tuple[frozenset, dict, bool]:
    """(client keys, features, SPEC_NOTES rules apply) of a profile name; unknown names (and
    None) read as the registry's default."""
    from ..core import registry
    spec = registry.get("rabbitmq-stream")
    if name == "document":
        return PROFILE_KEYS["document"], {"frame_max_enforced": True, "route_response_bit": True,
                                          "keys_26_30": False}, False
    if name not in spec.profiles:
        name = spec.default_profile
    chain, features = [], {}
    while name is not None and name not in chain:
        chain.append(name)
        name = spec.profiles[name].get("extends")
    for entry in reversed(chain):
        features.update(spec.profiles[entry].get("features", {}))
    keys = PROFILE_KEYS.get(chain[0], PROFILE_KEYS["current"])
    if not features.get("keys_26_30", True):
        keys = PROFILE_KEYS["document"]
    return keys, features, True


@dataclass(slots=True)
class _Request:
    key: int
    frame: object
    index: int
    time: float
    before_open: bool
    #: The code the answer must have (requirement, code) or must not have ("!" prefix).
    expect: Optional[tuple[str, int, bool]] = None   # (requirement, code, equal)
    refuse: Optional[str] = None      # the request must get no answer but Close (this rule)


@dataclass(slots=True)
class _Sub:
    stream: str
    credit: int
    state: str = "pending"            # pending (Subscribe unanswered) / active / unknown
    next_offset: int = -1             # where the next chunk may start (DELIVER-005)
    timestamp: int = -1
    credited: bool = False            # ever had credit


@dataclass(slots=True)
class _Publish:
    index: int
    time: float
    remaining: int
    undeclared: bool                  # sent with an undeclared publisher id: PublishError 18


@dataclass(slots=True)
class _Pub:
    stream: str
    state: str = "pending"
    inflight: dict = field(default_factory=dict)     # publishing id -> deque[_Publish]


#: The server's responses (bit 15) a client has no business sending: one from the client
#: answers no request of the server (RMQS-FRAME-003, :meth:`StreamObserver._client_response`).
#: CreditResponse is not among them: it has no correlation id to look up.
_SERVER_RESPONSES = (
    "DeclarePublisherResponse", "DeletePublisherResponse", "QueryPublisherSequenceResponse",
    "SubscribeResponse", "UnsubscribeResponse", "QueryOffsetResponse", "CreateResponse",
    "DeleteResponse", "MetadataResponse", "PeerPropertiesResponse", "SaslHandshakeResponse",
    "SaslAuthenticateResponse", "OpenResponse", "RouteResponse", "PartitionsResponse",
    "ExchangeCommandVersionsResponse", "StreamStatsResponse", "CreateSuperStreamResponse",
    "DeleteSuperStreamResponse")
#: The client's commands that are not part of the handshake: before Open each breaks the
#: handshake's order (RMQS-HS-016, :meth:`StreamObserver._order`; Heartbeat and Close are
#: tolerated there).
_AFTER_OPEN_COMMANDS = (
    "DeclarePublisher", "Publish", "QueryPublisherSequence", "DeletePublisher", "Subscribe",
    "Credit", "StoreOffset", "QueryOffset", "Unsubscribe", "Create", "Delete", "Metadata", "Route",
    "Partitions", "ExchangeCommandVersions", "StreamStats", "CreateSuperStream", "DeleteSuperStream")
