"""The body of the BlipMQ write-ahead log target (fuzz/fuzz_blipmq_wal.py): the fuzzer's bytes
are a log file as a crash (or a damaged disk) may leave it, and the broker recovers from it.

Checks: recovery either refuses the file (:class:`WalCorruption`, which ``wirecheck serve``
reports in one line) or succeeds, never anything else; the log it rewrote (compaction) reads
back whole, holds one record per subscription and per live message, and recovers to the same
subscriptions and pending messages; and the broker can go on appending to it (a subscription
and a QoS1 publish, or the refusals the broker answers with).
"""
from __future__ import annotations

import os
import tempfile

from wirecheck.reference_impl.blipmq import wal
from wirecheck.reference_impl.blipmq.state import BrokerState, JournalError, LimitError

#: Where each input's log is written: in memory where the machine has it (recovery rewrites
#: the log and syncs it on every input). Each input gets a fresh directory, removed after it,
#: so a fuzzing process leaves nothing behind when it ends (at most the directory of an input
#: it crashed on).
_TMP = "/dev/shm" if os.path.isdir("/dev/shm") else None


def _recover(path: str) -> tuple[wal.WriteAheadLog, BrokerState, dict]:
    log = wal.WriteAheadLog(path, "none")
    state = BrokerState(log)
    return log, state, log.recover(state)


def _restored(state: BrokerState) -> tuple:
    """What a broker holds after recovery: subscriptions and their pending messages."""
    return tuple(sorted(
        (sub.id, sub.topic, sub.qos, tuple((m.msg_id, m.topic, m.message) for m in sub.pending))
        for sub in state.subscriptions.values()))


#: What the target appends after recovery, as a client of the recovered broker would.
TOPIC, MESSAGE = "fuzz.append", b"\0appended after recovery\0"


def _without_appends(restored: tuple) -> tuple:
    return tuple((sid, topic, qos, tuple(m for m in pending if m[2] != MESSAGE))
                 for sid, topic, qos, pending in restored if topic != TOPIC)


def wal_one_input(data: bytes) -> None:
    with tempfile.TemporaryDirectory(prefix="wirecheck-fuzz-wal-", dir=_TMP) as tmp:
        _check(os.path.join(tmp, "blipmq.wal"), data)


def _check(path: str, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
    try:
        log, state, stats = _recover(path)
    except wal.WalCorruption:
        return
    try:
        with open(path, "rb") as fh:
            compacted = fh.read()
        version, records, end = wal.parse_wal(compacted)
        assert version == wal.VERSION and end == len(compacted), (version, end, len(compacted))
        assert len(records) == stats["subscriptions"] + stats["messages"], (len(records), stats)
        assert stats["subscriptions"] == len(state.subscriptions), stats
        first = _restored(state)
        # the broker goes on: a new QoS1 subscriber (refused with LimitError, NACK 400, or
        # JournalError, NACK 500, when ids or room are exhausted) and a QoS1 publish to it
        # (JournalError: record ids exhausted, NACK 500)
        try:
            sub_id = state.subscribe(TOPIC, 1)
        except (LimitError, JournalError):
            sub_id = None
        try:
            state.publish(1, TOPIC, MESSAGE)
            published = True
        except JournalError:
            published = False
    finally:
        log.close()
    again_log, again, _ = _recover(path)
    again_log.close()
    restored = _restored(again)
    assert _without_appends(restored) == _without_appends(first), (first, restored)
    if sub_id is not None:
        appended = [r for r in restored if r[0] == sub_id]
        assert appended and appended[0][1:3] == (TOPIC, 1), restored
        assert [m[1:] for m in appended[0][3]] == ([(TOPIC, MESSAGE)] if published else []), restored
