"""Broker-wide state of the RabbitMQ Stream reference broker: users, streams (through the
store), super streams, and who publishes to / consumes from what.

Sessions register here so that an append wakes the subscribers of that stream on every
connection, and a Delete reaches every connection that used the stream (MetadataUpdate).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from . import codec
from .constants import Code, OffsetType
from .store import StreamStore

DEFAULT_USERS = {"guest": "guest"}          # RabbitMQ's default user (loopback only there too)
DEFAULT_VHOSTS = frozenset({"/"})
#: A stream name is a "string" (int16 length), and RabbitMQ 3.10.8 creates a stream of any name
#: one holds (observed up to 32,767 bytes; names past 255 bytes were refused here, with 17): it
#: refuses only an empty one and the reserved "amq." prefix.
MAX_NAME_BYTES = 0x7FFF
_RESERVED = re.compile(r"^amq\.")


@dataclass
class SuperStream:
    name: str
    partitions: list[str]
    binding_keys: list[str]
    arguments: dict = field(default_factory=dict)

    def route(self, routing_key: str) -> list[str]:
        return [p for p, k in zip(self.partitions, self.binding_keys) if k == routing_key]


class BrokerState:
    def __init__(self, store: StreamStore, *, users: dict[str, str] | None = None,
                 vhosts=DEFAULT_VHOSTS, advertised_host: str = "127.0.0.1",
                 advertised_port: int = 5552) -> None:
        self.store = store
        self.users = dict(DEFAULT_USERS if users is None else users)
        self.vhosts = frozenset(vhosts)
        self.advertised_host = advertised_host
        self.advertised_port = advertised_port
        self.super_streams: dict[str, SuperStream] = {}
        self.sessions: set = set()
        #: stream -> sessions with a subscription on it (woken after an append)
        self.readers: dict[str, set] = {}
        #: (stream, group name) -> [(session, subscription id)], the active member first
        #: (single active consumer)
        self.consumer_groups: dict[tuple[str, str], list] = {}

    # -- streams -----------------------------------------------------------------------------

    @staticmethod
    def valid_name(name: str) -> bool:
        raw = name.encode("utf-8")
        return 0 < len(raw) <= MAX_NAME_BYTES and not _RESERVED.match(name)

    def stream(self, name: str):
        return self.store.get(name)

    def appended(self, name: str) -> None:
        for session in list(self.readers.get(name, ())):
            session.stream_grew(name)

    def delete_stream(self, name: str) -> None:
        self.store.delete(name)
        # Groups go first: nobody is promoted on a stream that no longer exists.
        for key in [k for k in self.consumer_groups if k[0] == name]:
            del self.consumer_groups[key]
        for session in list(self.sessions):
            session.stream_deleted(name)
        self.readers.pop(name, None)

    def metadata(self, names, *, as_rabbitmq_310: bool = False) -> tuple[tuple, tuple]:
        """(brokers, stream entries) of a Metadata answer for ``names``: a missing stream has
        code 2 and leader 0xFFFF; this one node is broker 0.

        The document ("Metadata": [Broker] [StreamMetadata]) says neither which brokers are
        listed nor how the streams are ordered. RabbitMQ 3.10.8 answers each name once, in
        reverse byte order (a fold over a map of the names; beyond 32 names a hash order),
        and lists only the brokers of the streams it found: none when none exists. With
        ``as_rabbitmq_310`` (profile rabbitmq-3.10) so does this broker; otherwise each name
        is answered in the order asked, and the broker is always listed."""
        if as_rabbitmq_310:
            names = sorted(set(names), key=lambda n: n.encode("utf-8"), reverse=True)
        entries = tuple(codec.StreamMetadata(name, Code.STREAM_DOES_NOT_EXIST, 0xFFFF, ())
                        if self.stream(name) is None else codec.StreamMetadata(name, Code.OK, 0, ())
                        for name in names)
        brokers = (codec.BrokerInfo(0, self.advertised_host, self.advertised_port),)
        if as_rabbitmq_310 and not any(e.code == Code.OK for e in entries):
            brokers = ()
        return brokers, entries

    def authenticate(self, user: str, password: str) -> bool:
        return user in self.users and self.users[user] == password


def start_chunk(log_, offset_type: int, offset: Optional[int]) -> Optional[int]:
    """The chunk index an offset specification starts at ("Subscribe"); None if unknown."""
    if offset_type == OffsetType.FIRST:
        return log_.first_chunk_index()
    if offset_type == OffsetType.LAST:
        last = log_.last_user_chunk_index()
        return log_.end_chunk_index() if last is None else last
    if offset_type == OffsetType.NEXT:
        return log_.end_chunk_index()
    if offset_type == OffsetType.OFFSET:
        return log_.chunk_index(max(offset or 0, log_.first_offset))
    if offset_type == OffsetType.TIMESTAMP:
        return log_.chunk_index_for_timestamp(offset or 0)
    return None
