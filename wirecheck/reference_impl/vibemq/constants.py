"""Numbers and names of the VibeMQ protocol (vibemq-protocol.rst; the real implementation's
defaults from SPEC_NOTES.md, "VibeMQ", v1.8)."""
from __future__ import annotations

from enum import IntEnum, StrEnum

PROTOCOL = "vibemq"
#: The real server's port (SPEC_NOTES).
DEFAULT_PORT = 2925
#: "Binary Protocol Structure": the version byte (default 1).
PROTOCOL_VERSION = 1

#: "Framing": [u32 body length][u8 compression flags][body]; protocol 1.0 had no flags byte.
HEADER_SIZE = 5
HEADER_SIZE_V10 = 4
#: Real defaults (SPEC_NOTES): a body shorter than 2 bytes is refused; at most 1,048,576
#: bytes, checked on the compressed length; decompressed at most 64 MiB.
MIN_BODY = 2
DEFAULT_MAX_BODY = 1_048_576
DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024
#: "Threshold": bodies from this size on are compressed once an algorithm is agreed.
COMPRESSION_THRESHOLD = 1024


class Compression(IntEnum):
    """"Compression Flags Byte"."""
    NONE = 0x00
    GZIP = 0x01
    BROTLI = 0x02


#: Names used in the ``supported-compression`` / ``negotiated-compression`` headers.
COMPRESSION_NAMES = {Compression.GZIP: "gzip", Compression.BROTLI: "brotli"}
COMPRESSION_BY_NAME = {name: flag for flag, name in COMPRESSION_NAMES.items()}


class CommandType(IntEnum):
    """"Command Types (CommandType)"."""
    CONNECT = 0
    CONNECT_ACK = 1
    DISCONNECT = 2
    PING = 10
    PONG = 11
    PUBLISH = 20
    PUBLISH_ACK = 21
    SUBSCRIBE = 22
    SUBSCRIBE_ACK = 23
    UNSUBSCRIBE = 24
    UNSUBSCRIBE_ACK = 25
    DELIVER = 26
    ACK = 30
    CREATE_QUEUE = 40
    DELETE_QUEUE = 41
    QUEUE_INFO = 42
    LIST_QUEUES = 43
    ERROR = 99


#: The logical names of the document's JSON examples ("type": "publishAck").
TYPE_NAMES = {t: t.name.lower().split("_")[0] + "".join(p.title() for p in t.name.lower().split("_")[1:])
              for t in CommandType}
TYPE_BY_NAME = {name: t for t, name in TYPE_NAMES.items()}


class ErrorCode(StrEnum):
    """"Error Codes", then the ones only the real server emits (SPEC_NOTES)."""
    AUTH_FAILED = "AUTH_FAILED"
    INVALID_MESSAGE = "INVALID_MESSAGE"
    QUEUE_NOT_FOUND = "QUEUE_NOT_FOUND"
    QUEUE_EXISTS = "QUEUE_EXISTS"
    RATE_LIMITED = "RATE_LIMITED"
    SERVER_ERROR = "SERVER_ERROR"
    AUTH_REQUIRED = "AUTH_REQUIRED"
    NOT_AUTHENTICATED = "NOT_AUTHENTICATED"
    NOT_AUTHORIZED = "NOT_AUTHORIZED"
    INVALID_QUEUE = "INVALID_QUEUE"
    INVALID_PAYLOAD = "INVALID_PAYLOAD"
    UNKNOWN_COMMAND = "UNKNOWN_COMMAND"
    CONNECTION_LIMIT = "CONNECTION_LIMIT"


DOCUMENT_ERROR_CODES = frozenset(list(ErrorCode)[:6])


class DeliveryMode(StrEnum):
    ROUND_ROBIN = "RoundRobin"
    FAN_OUT_WITH_ACK = "FanOutWithAck"
    FAN_OUT_WITHOUT_ACK = "FanOutWithoutAck"
    PRIORITY_BASED = "PriorityBased"


#: "Message Headers": priority values, lowest first.
PRIORITIES = ("Low", "Normal", "High", "Critical")

#: Profiles: ``document`` writes errorCode/errorMessage in every message; ``vibemq-1.8`` (the
#: real codec) only in Error (type 99), and reads a body that ends after the headers;
#: ``vibemq-1.0`` is protocol 1.0 framing (no compression flags byte).
PROFILES = ("document", "vibemq-1.8", "vibemq-1.0")
