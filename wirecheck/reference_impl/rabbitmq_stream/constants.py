"""Numbers of the RabbitMQ Stream protocol: command keys, response codes, offset types.

Keys 1-25 are the document's "Commands" table (rabbitmq-stream-protocol.adoc); 26-30 are newer
than the document and come from the real server (SPEC_NOTES.md, RabbitMQ Stream). Response
codes 1-18 are the document's "Response Codes" table; 19 (no offset) is the real server's.
"""
from __future__ import annotations

from enum import IntEnum

PROTOCOL = "rabbitmq-stream"
DEFAULT_PORT = 5552

#: Bit 15 of the key marks a response ("Frame Structure").
RESPONSE_BIT = 0x8000

#: Tune defaults of the real server (SPEC_NOTES.md: frame_max 1,048,576; heartbeat 60 s).
DEFAULT_FRAME_MAX = 1_048_576
DEFAULT_HEARTBEAT = 60

#: A frame's size field counts key + version at least.
MIN_FRAME_SIZE = 4


class Key(IntEnum):
    DECLARE_PUBLISHER = 1
    PUBLISH = 2
    PUBLISH_CONFIRM = 3
    PUBLISH_ERROR = 4
    QUERY_PUBLISHER_SEQUENCE = 5
    DELETE_PUBLISHER = 6
    SUBSCRIBE = 7
    DELIVER = 8
    CREDIT = 9
    STORE_OFFSET = 10
    QUERY_OFFSET = 11
    UNSUBSCRIBE = 12
    CREATE = 13
    DELETE = 14
    METADATA = 15
    METADATA_UPDATE = 16
    PEER_PROPERTIES = 17
    SASL_HANDSHAKE = 18
    SASL_AUTHENTICATE = 19
    TUNE = 20
    OPEN = 21
    CLOSE = 22
    HEARTBEAT = 23
    ROUTE = 24
    PARTITIONS = 25
    CONSUMER_UPDATE = 26
    EXCHANGE_COMMAND_VERSIONS = 27
    STREAM_STATS = 28
    CREATE_SUPER_STREAM = 29
    DELETE_SUPER_STREAM = 30


#: The keys of the document (and of RabbitMQ 3.10, which implements exactly these).
DOCUMENT_KEYS = frozenset(range(1, 26))


class Code(IntEnum):
    OK = 1
    STREAM_DOES_NOT_EXIST = 2
    SUBSCRIPTION_ID_ALREADY_EXISTS = 3
    SUBSCRIPTION_ID_DOES_NOT_EXIST = 4
    STREAM_ALREADY_EXISTS = 5
    STREAM_NOT_AVAILABLE = 6
    SASL_MECHANISM_NOT_SUPPORTED = 7
    AUTHENTICATION_FAILURE = 8
    SASL_ERROR = 9
    SASL_CHALLENGE = 10
    SASL_AUTHENTICATION_FAILURE_LOOPBACK = 11
    VIRTUAL_HOST_ACCESS_FAILURE = 12
    UNKNOWN_FRAME = 13
    FRAME_TOO_LARGE = 14
    INTERNAL_ERROR = 15
    ACCESS_REFUSED = 16
    PRECONDITION_FAILED = 17
    PUBLISHER_DOES_NOT_EXIST = 18
    NO_OFFSET = 19


class OffsetType(IntEnum):
    FIRST = 1
    LAST = 2
    NEXT = 3
    OFFSET = 4
    TIMESTAMP = 5


#: Offset types followed by an 8-byte value in Subscribe (SPEC_NOTES.md: only 4 and 5).
OFFSET_TYPES_WITH_VALUE = frozenset((OffsetType.OFFSET, OffsetType.TIMESTAMP))


class ChunkType(IntEnum):
    USER = 0
    TRACKING_DELTA = 1
    TRACKING_SNAPSHOT = 2


class Compression(IntEnum):
    """Sub-batch entry compression (bits 4-6 of the entry's first byte)."""
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def code_name(code: int) -> str:
    try:
        return Code(code).name
    except ValueError:
        return f"CODE_{code}"
