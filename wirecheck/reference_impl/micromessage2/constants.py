"""Numbers and names of Micromessage2 (micromessage2.md; the real implementation's choices from
SPEC_NOTES.md, "Micromessage2")."""
from __future__ import annotations

from enum import IntFlag

PROTOCOL = "micromessage2"
#: The document names no port; the kit's reference broker listens here by default.
DEFAULT_PORT = 8334

#: "Handshake": major 1, minor 0 in the document; the real implementation speaks 1.1.
MAJOR_VERSION = 1
DOCUMENT_MINOR = 0
SHARPMESSAGING_MINOR = 1


class FrameFlags(IntFlag):
    """"Flag values": the frame's first byte. No type bit means MESSAGE (server -> client) or
    SEND (client -> server): one layout, named by direction."""
    COMMAND = 1
    EXTENSION = 2
    ERROR = 4
    LARGE_PAYLOAD = 8
    CONTINUED = 16


#: Bits that pick the frame's layout; at most one may be set.
TYPE_BITS = FrameFlags.COMMAND | FrameFlags.EXTENSION | FrameFlags.ERROR
#: Every bit the document defines; any other bit is an unknown flag.
KNOWN_BITS = TYPE_BITS | FrameFlags.LARGE_PAYLOAD | FrameFlags.CONTINUED

#: "MESSAGE": payloads above 1 MiB are split into CONTINUED frames.
CONTINUATION_SIZE = 1024 * 1024
#: A 1-byte payload length holds at most this; beyond it LARGE_PAYLOAD is needed.
SMALL_PAYLOAD_MAX = 0xFF

#: "Sequence number": u16 that wraps 65535 -> 1 (0 is never used; SPEC_NOTES, real
#: implementation: sequence numbers start at 1).
SEQUENCE_MAX = 0xFFFF
SEQUENCE_FIRST = 1

#: "batch-ack": the window when the handshake gives no count.
DEFAULT_BATCH_WINDOW = 10

#: Official extensions of the document (the kit names the publish/subscribe one ``pubsub``:
#: the document gives it no name). Vendor extensions start with ``x-``.
ACK, BATCH_ACK, JSON, DOTNET, PUBSUB = "ack", "batch-ack", "json", "dotnet", "pubsub"
OFFICIAL_EXTENSIONS = (ACK, BATCH_ACK, JSON, DOTNET, PUBSUB)
VENDOR_PREFIX = "x-"

#: The ``subscribe`` command of the pubsub extension (the document gives no layout: the kit's
#: reading is ``subscribe;destination=<name>[,filter=<expression>]``).
SUBSCRIBE = "subscribe"
#: "Destination": the kit's reading of the pubsub extension's destinations: a name starting
#: with ``topic/`` is a TOPIC (every subscriber gets each message), any other a QUEUE (each
#: message to one receiver).
TOPIC_PREFIX = "topic/"

#: Properties of the real implementation's ``ack`` extension (SPEC_NOTES).
MESSAGES_PER_ACK = "MessagesPerAck"
ACK_EXPIRE_TIME = "AckExpireTime"
