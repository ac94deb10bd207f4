"""The BlipMQ write-ahead log: QoS1 publishes survive kill -9.

File layout (the real daemon's framing, SPEC_NOTES.md BlipMQ)::

    header   "BLIPWAL\\0"  u32 LE version  20 zero bytes                 (32 bytes)
    record   u64 LE id  u32 LE len  u32 LE crc32(payload)  payload[len]

Version 1 files (the real daemon's) hold only publish payloads ``u8 qos, u16 BE topic_len,
topic, message``; they are read, and their messages go to no subscription (the real daemon
keeps no subscriptions either). This broker writes version 2, whose payload starts with a kind
byte, because a publish alone cannot survive a restart usefully: subscriptions are not tied to
connections, so they are logged too, and so is each settlement (ack, drop after max retries,
eviction)::

    1 PUBLISH    u8 qos, u16 topic_len, topic, u16 n, n x u64 subscription id, message
    2 SUBSCRIBE  u64 subscription id, u8 qos, u16 topic_len, topic
    3 SETTLE     u64 subscription id, u64 message id

Recovery replays the log into a :class:`~.state.BrokerState`, so every QoS1 message not yet
settled is pending again in its subscriptions (at-least-once: it may be delivered again); a
message targets only the subscriptions the log has. A record is valid when its CRC matches,
its id is in 1..2^63-1 *and* its payload is well formed (a known kind, every length inside
the record, a subscription's id and qos in range): a zero-filled tail, which a crash can
leave behind when the file's size reached the disk before its data, is a run of empty
records whose CRC (that of no bytes) is 0, and is no record at all. A torn last record
(short, or invalid with nothing valid after it) is truncated; an invalid record followed by a
valid one is corruption and refuses to start
(:class:`WalCorruption`, a ValueError: ``wirecheck serve`` reports it in one line). After
recovery the log is compacted (rewritten with only live state, each record keeping its id,
then atomically renamed, and the directory synced so that the rename, and the appends that
follow it, survive a power loss).

The record header (id, length) is outside the CRC in this format (the real daemon's), so a
damaged length in the middle of the log looks like a torn tail at that point; only damage to
the payload or the CRC field is told apart from a torn write.

Every append is one ``os.write`` before the publish is accepted, so a kill -9 never loses an
accepted record; ``fsync`` policy decides what a power loss can take: ``always`` (default),
``every_n:N``, ``interval_ms:MS``, ``none``.
"""
from __future__ import annotations

import os
import struct
import time
import zlib
from dataclasses import dataclass

from ..core.durability import FsyncPolicy, SyncedAppender, fsync_dir  # FsyncPolicy re-exported for the CLI
from .state import MAX_ID, BrokerState, JournalError

MAGIC = b"BLIPWAL\0"
VERSION = 2
HEADER = struct.Struct("<8sI20x")
RECORD = struct.Struct("<QII")        # id, len, crc32
MAX_RECORD = 16 * 1024 * 1024 + 1024  # a frame's payload plus the record's own fields

KIND_PUBLISH, KIND_SUBSCRIBE, KIND_SETTLE = 1, 2, 3
_U16 = struct.Struct(">H")
_U64 = struct.Struct(">Q")
_SUB = struct.Struct(">QB")
_SETTLE = struct.Struct(">QQ")


class WalCorruption(ValueError):
    """The file is not a WAL, or an invalid record is followed by a valid one: not a torn
    write, so the broker refuses to start rather than drop what follows."""


@dataclass(frozen=True, slots=True)
class Record:
    id: int
    payload: bytes


def read_records(path: str) -> tuple[int, list[Record], int]:
    """(version, valid records, byte offset where valid data ends)."""
    with open(path, "rb") as fh:
        return parse_wal(fh.read(), path)


def parse_wal(data: bytes, path: str = "WAL") -> tuple[int, list[Record], int]:
    """:func:`read_records` of a log's bytes (``path`` names it in errors)."""
    if len(data) < HEADER.size:
        return VERSION, [], 0
    magic, version = HEADER.unpack_from(data)
    if magic != MAGIC or version not in (1, 2):
        raise WalCorruption(f"{path}: not a BlipMQ WAL (magic {magic!r}, version {version})")
    records, pos = [], HEADER.size
    while pos + RECORD.size <= len(data):
        rec_id, length, crc = RECORD.unpack_from(data, pos)
        end = pos + RECORD.size + length
        if length > MAX_RECORD or end > len(data):
            break                                        # torn tail
        payload = data[pos + RECORD.size:end]
        if not _valid(version, rec_id, payload, crc):
            if _has_valid_record_after(data, end, version):
                raise WalCorruption(f"{path}: bad record {rec_id} at byte {pos} (CRC, payload "
                                    "or id) followed by valid records")
            break                                        # torn last record
        records.append(Record(rec_id, payload))
        pos = end
    return version, records, pos


def _valid(version: int, rec_id: int, payload: bytes, crc: int) -> bool:
    if zlib.crc32(payload) != crc or not 0 < rec_id <= MAX_ID:
        return False
    try:
        decode_payload(version, payload)
    except ValueError:
        return False
    return True


def _has_valid_record_after(data: bytes, pos: int, version: int) -> bool:
    if pos + RECORD.size > len(data):
        return False
    rec_id, length, crc = RECORD.unpack_from(data, pos)
    end = pos + RECORD.size + length
    return (length <= MAX_RECORD and end <= len(data)
            and _valid(version, rec_id, data[pos + RECORD.size:end], crc))


def decode_payload(version: int, p: bytes) -> tuple:
    """One record's payload: ``(KIND_PUBLISH, qos, topic, targets, message)``,
    ``(KIND_SUBSCRIBE, sub_id, qos, topic)`` or ``(KIND_SETTLE, sub_id, msg_id)``.
    ValueError when it is not well formed (its CRC may still match: an empty payload's does)."""
    try:
        if version == 1 or p[0] == KIND_PUBLISH:
            return (KIND_PUBLISH, *parse_publish(p, version != 1))
        if p[0] == KIND_SUBSCRIBE:
            sub_id, qos = _SUB.unpack_from(p, 1)
            (tlen,) = _U16.unpack_from(p, 10)
            if 12 + tlen != len(p):
                raise ValueError("subscribe record length mismatch")
            if not 0 < sub_id <= MAX_ID or qos not in (0, 1):
                raise ValueError(f"subscribe record: subscription id {sub_id} or qos {qos} out of range")
            return KIND_SUBSCRIBE, sub_id, qos, p[12:].decode("utf-8")
        if p[0] == KIND_SETTLE and len(p) == 1 + _SETTLE.size:
            return (KIND_SETTLE, *_SETTLE.unpack_from(p, 1))
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed record payload: {exc}") from None
    raise ValueError(f"unknown record kind {p[0] if p else None}")


def publish_payload(qos: int, topic: str, message: bytes, targets: list[int]) -> bytes:
    t = topic.encode("utf-8")
    return b"".join((bytes((KIND_PUBLISH, qos)), _U16.pack(len(t)), t, _U16.pack(len(targets)),
                     b"".join(_U64.pack(s) for s in targets), message))


def parse_publish(p: bytes, versioned: bool) -> tuple[int, str, list[int], bytes]:
    """(qos, topic, target subscription ids, message) of a publish payload; IndexError,
    struct.error or UnicodeDecodeError when it is cut short."""
    pos = 1 if versioned else 0
    qos = p[pos]
    (tlen,) = _U16.unpack_from(p, pos + 1)
    if pos + 3 + tlen > len(p):
        raise IndexError("topic runs past the record")
    topic = p[pos + 3:pos + 3 + tlen].decode("utf-8")
    pos += 3 + tlen
    targets: list[int] = []
    if versioned:
        (n,) = _U16.unpack_from(p, pos)
        if pos + 2 + 8 * n > len(p):
            raise IndexError("subscription ids run past the record")
        targets = [_U64.unpack_from(p, pos + 2 + 8 * i)[0] for i in range(n)]
        pos += 2 + 8 * n
    return qos, topic, targets, p[pos:]


def encode_record(rec_id: int, payload: bytes) -> bytes:
    """One record as it is appended: header (id, length, CRC of the payload) and payload."""
    return RECORD.pack(rec_id, len(payload), zlib.crc32(payload)) + payload


class WriteAheadLog:
    """Append-only journal implementing :class:`~.state.Journal`."""

    def __init__(self, path: str, fsync: FsyncPolicy | str = "always",
                 clock=time.monotonic) -> None:
        self.path = path
        self.policy = FsyncPolicy.parse(fsync) if isinstance(fsync, str) else fsync
        self.clock = clock
        self.next_id = 1
        self._fd: int | None = None
        self._appender = SyncedAppender(self.policy, clock)

    # -- recovery ----------------------------------------------------------------------------

    def recover(self, state: BrokerState) -> dict:
        """Replay the log into ``state``, compact it, and open it for appends."""
        stats = {"records": 0, "messages": 0, "subscriptions": 0, "truncated_bytes": 0}
        messages: dict[int, tuple[str, bytes, set[int]]] = {}
        subs: dict[int, tuple[str, int, int]] = {}      # sub id -> topic, qos, record id
        if os.path.exists(self.path):
            version, records, end = read_records(self.path)
            stats["truncated_bytes"] = os.path.getsize(self.path) - end if end else 0
            stats["records"] = len(records)
            for rec in records:
                self.next_id = max(self.next_id, rec.id + 1)
                kind, *fields = decode_payload(version, rec.payload)   # valid: read_records
                if kind == KIND_PUBLISH:
                    _, topic, targets, message = fields
                    messages[rec.id] = (topic, message, set(targets))
                elif kind == KIND_SUBSCRIBE:
                    sub_id, qos, topic = fields
                    subs[sub_id] = (topic, qos, rec.id)
                else:
                    sub_id, msg_id = fields
                    if msg_id in messages:
                        messages[msg_id][2].discard(sub_id)
        for sub_id, (topic, qos, _) in sorted(subs.items()):
            state.restore_subscription(sub_id, topic, qos)
        # a message is live for the subscriptions the log has: one a target's SUBSCRIBE record
        # is missing for (a damaged log) must not reach a later subscription given its id
        live = {mid: (topic, message, targets & subs.keys())
                for mid, (topic, message, targets) in messages.items() if targets & subs.keys()}
        for msg_id in sorted(live):
            topic, message, targets = live[msg_id]
            for sub_id in sorted(targets):
                state.restore_message(sub_id, msg_id, topic, message)
        stats["messages"] = len(live)
        stats["subscriptions"] = len(subs)
        self._compact(subs, live)
        return stats

    def _compact(self, subs: dict, live: dict) -> None:
        tmp = self.path + ".compact"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            chunks = [HEADER.pack(MAGIC, VERSION)]
            # every record kept keeps its id: compaction takes no new ones, so a log whose ids
            # reached the end can still be compacted (appends then fail: JournalError)
            for sub_id, (topic, qos, rec_id) in sorted(subs.items()):
                chunks.append(self._record(self._subscribe_payload(sub_id, topic, qos), rec_id=rec_id))
            for msg_id in sorted(live):
                topic, message, targets = live[msg_id]
                chunks.append(self._record(publish_payload(1, topic, message, sorted(targets)),
                                           rec_id=msg_id))
            data = memoryview(b"".join(chunks))
            while data:                                 # os.write may write less
                data = data[os.write(fd, data):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        fsync_dir(os.path.dirname(os.path.abspath(self.path)))
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    # -- Journal -----------------------------------------------------------------------------

    def publish(self, qos: int, topic: str, message: bytes, targets: list[int]) -> int:
        msg_id = self.next_id
        self._append(self._record(publish_payload(qos, topic, message, targets)))
        return msg_id

    def subscribe(self, sub_id: int, topic: str, qos: int) -> None:
        self._append(self._record(self._subscribe_payload(sub_id, topic, qos)))

    def settle(self, sub_id: int, msg_id: int) -> None:
        self._append(self._record(bytes((KIND_SETTLE,)) + _SETTLE.pack(sub_id, msg_id)))

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None

    # -- internals ---------------------------------------------------------------------------

    @staticmethod
    def _subscribe_payload(sub_id: int, topic: str, qos: int) -> bytes:
        t = topic.encode("utf-8")
        return bytes((KIND_SUBSCRIBE,)) + _SUB.pack(sub_id, qos) + _U16.pack(len(t)) + t

    def _record(self, payload: bytes, rec_id: int | None = None) -> bytes:
        if rec_id is None:
            rec_id = self.next_id
        if rec_id > MAX_ID:
            raise JournalError("write-ahead log record ids exhausted")
        self.next_id = max(self.next_id, rec_id + 1)
        return encode_record(rec_id, payload)

    def _append(self, record: bytes) -> None:
        if self._fd is None:
            raise JournalError("write-ahead log is not open")
        try:
            self._appender.append(self._fd, record, os.lseek(self._fd, 0, os.SEEK_END))
        except OSError as exc:
            raise JournalError(str(exc)) from exc
