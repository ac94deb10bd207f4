"""The WAL: replay, settlements, torn tails, corruption, compaction, v1 files, fsync policy."""
import os
import struct
import zlib

import pytest

from wirecheck.reference_impl.blipmq import wal
from wirecheck.reference_impl.blipmq.state import BrokerState
from wirecheck.reference_impl.blipmq.wal import FsyncPolicy, WalCorruption, WriteAheadLog


def open_state(path, **kw):
    log = WriteAheadLog(str(path), "none")
    state = BrokerState(log, **kw)
    stats = log.recover(state)
    return log, state, stats


def test_unsettled_qos1_messages_survive_a_restart(tmp_path):
    path = tmp_path / "b.wal"
    log, state, stats = open_state(path)
    assert stats["records"] == 0
    s1, s0 = state.subscribe("t", 1), state.subscribe("t", 0)
    state.publish(1, "t", b"a")
    state.publish(1, "t", b"b")
    state.publish(0, "t", b"not journaled")
    d = state.poll(s1, now=0.0)
    assert state.ack(s1, d.tag)
    log.close()

    log, state, stats = open_state(path)
    assert stats["subscriptions"] == 2 and stats["messages"] == 1
    assert state.poll(s1, 0.0).message == b"b"
    assert state.poll(s1, 0.0) is None
    assert state.poll(s0, 0.0) is None            # QoS0 subscription: at most once
    assert state.subscribe("u", 0) == 3           # ids continue
    log.close()


def test_dropped_after_max_retries_is_settled(tmp_path):
    path = tmp_path / "b.wal"
    log, state, _ = open_state(path, max_retries=1)
    sub = state.subscribe("t", 1)
    state.publish(1, "t", b"x")
    assert state.poll(sub, 0.0) is not None
    assert state.poll(sub, 100.0) is None          # dropped
    log.close()
    _, state, stats = open_state(path)
    assert stats["messages"] == 0


def test_torn_tail_is_truncated_and_appends_continue(tmp_path):
    path = tmp_path / "b.wal"
    log, state, _ = open_state(path)
    sub = state.subscribe("t", 1)
    state.publish(1, "t", b"whole")
    state.publish(1, "t", b"torn")
    log.close()
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:
        fh.truncate(size - 2)                      # the last record lost its tail
    log, state, stats = open_state(path)
    assert stats["messages"] == 1 and stats["truncated_bytes"] > 0
    state.publish(1, "t", b"after")
    log.close()
    _, state, _ = open_state(path)
    assert [state.poll(sub, 0.0).message for _ in range(2)] == [b"whole", b"after"]


def test_bad_crc_in_last_record_is_a_torn_write(tmp_path):
    path = tmp_path / "b.wal"
    log, state, _ = open_state(path)
    sub = state.subscribe("t", 1)
    state.publish(1, "t", b"good")
    state.publish(1, "t", b"flipped")
    log.close()
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    _, state, stats = open_state(path)
    assert state.poll(sub, 0.0).message == b"good" and state.poll(sub, 0.0) is None


def test_bad_crc_followed_by_valid_records_refuses_to_start(tmp_path):
    path = tmp_path / "b.wal"
    log, state, _ = open_state(path)
    state.subscribe("t", 1)
    state.publish(1, "t", b"first")
    state.publish(1, "t", b"second")
    log.close()
    data = bytearray(path.read_bytes())
    # corrupt the first publish's payload (after header and the subscribe record)
    first = data.index(b"first")
    data[first] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(WalCorruption):
        open_state(path)


def test_compaction_drops_settled_state(tmp_path):
    path = tmp_path / "b.wal"
    log, state, _ = open_state(path)
    sub = state.subscribe("t", 1)
    for i in range(200):
        state.publish(1, "t", b"m" * 100)
        state.ack(sub, state.poll(sub, 0.0).tag)
    log.close()
    big = os.path.getsize(path)
    open_state(path)[0].close()
    assert os.path.getsize(path) < big // 20


def test_reads_the_real_daemons_version_1_file(tmp_path):
    path = tmp_path / "v1.wal"
    payload = bytes([1]) + struct.pack(">H", 4) + b"demo" + b"hi"
    rec = struct.pack("<QII", 1, len(payload), zlib.crc32(payload)) + payload
    path.write_bytes(struct.pack("<8sI20x", b"BLIPWAL\0", 1) + rec)
    version, records, _ = wal.read_records(str(path))
    assert version == 1 and records[0].payload == payload
    _, state, stats = open_state(path)     # no subscriptions in v1: the message goes nowhere
    assert stats["records"] == 1 and stats["messages"] == 0


def test_not_a_wal(tmp_path):
    path = tmp_path / "x.wal"
    path.write_bytes(b"NOTAWAL!" + bytes(40))
    with pytest.raises(WalCorruption):
        open_state(path)


@pytest.mark.parametrize("text,policy", [
    ("always", FsyncPolicy(1, None)), ("none", FsyncPolicy(None, None)),
    ("every_n:64", FsyncPolicy(64, None)), ("interval_ms:250", FsyncPolicy(None, 0.25)),
])
def test_fsync_policy_parse(text, policy):
    assert FsyncPolicy.parse(text) == policy


@pytest.mark.parametrize("text", ["sometimes", "every_n:0", "every_n:x", "interval_ms:"])
def test_fsync_policy_rejects_nonsense(text):
    with pytest.raises(ValueError):
        FsyncPolicy.parse(text)


@pytest.mark.parametrize("tail", [bytes(16), bytes(100), bytes(4096)])
def test_a_zero_filled_tail_is_no_record_and_is_truncated(tmp_path, tail):
    # A crash can leave the file longer than its data (zeros): an empty payload's CRC is 0,
    # so each 16 zero bytes look like a record until the payload is checked.
    path = tmp_path / "b.wal"
    log, state, _ = open_state(path)
    sub = state.subscribe("t", 1)
    state.publish(1, "t", b"kept")
    log.close()
    with open(path, "ab") as fh:
        fh.write(tail)
    log, state, stats = open_state(path)
    assert stats["truncated_bytes"] == len(tail) and stats["messages"] == 1
    assert state.poll(sub, 0.0).message == b"kept"
    log.close()
    assert wal.read_records(str(path))[2] == os.path.getsize(path)


def test_a_malformed_record_with_a_good_crc_followed_by_records_is_corruption(tmp_path):
    path = tmp_path / "b.wal"
    log, state, _ = open_state(path)
    state.subscribe("t", 1)
    log.close()
    bad = bytes([wal.KIND_PUBLISH, 1]) + struct.pack(">H", 200) + b"short"   # topic runs out
    good = bytes([wal.KIND_SETTLE]) + struct.pack(">QQ", 1, 1)
    with open(path, "ab") as fh:
        fh.write(wal.encode_record(50, bad) + wal.encode_record(51, good))
    with pytest.raises(WalCorruption, match="bad record 50"):
        open_state(path)
    assert issubclass(WalCorruption, ValueError)     # `wirecheck serve` reports it in one line


def test_compaction_syncs_the_directory(tmp_path, monkeypatch):
    import stat
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(stat.S_ISDIR(os.fstat(fd).st_mode)),
                                                 real(fd)))
    open_state(tmp_path / "b.wal")[0].close()
    assert True in synced                            # the rename is durable too


def _log_of(path, *records, version=wal.VERSION):
    with open(path, "wb") as fh:
        fh.write(wal.HEADER.pack(wal.MAGIC, version) + b"".join(wal.encode_record(i, p) for i, p in records))


SUB_T = bytes([wal.KIND_SUBSCRIBE]) + struct.pack(">QB", 1, 1) + struct.pack(">H", 1) + b"t"


@pytest.mark.parametrize("rec_id", [0, wal.MAX_ID + 1, 2 ** 64 - 1])
def test_a_record_id_out_of_range_is_not_a_record(tmp_path, rec_id):
    """The record header is outside the CRC: an id no log gives (0, or past 2^63-1, which would
    leave the ids after it no room in their u64 fields) makes the record invalid, a torn tail
    when last and corruption when valid records follow."""
    path = tmp_path / "ids.wal"
    _log_of(path, (1, SUB_T), (rec_id, wal.publish_payload(1, "t", b"m", [1])))
    _, state, stats = open_state(path)
    assert stats["records"] == 1 and stats["messages"] == 0 and stats["truncated_bytes"] > 0
    _log_of(path, (rec_id, SUB_T), (2, wal.publish_payload(1, "t", b"m", [1])))
    with pytest.raises(WalCorruption, match="CRC, payload or id"):
        open_state(path)


@pytest.mark.parametrize("sub_id,qos", [(0, 1), (wal.MAX_ID + 1, 1), (1, 2)])
def test_a_subscription_record_out_of_range_is_malformed(sub_id, qos):
    payload = bytes([wal.KIND_SUBSCRIBE]) + struct.pack(">QB", sub_id, qos) + struct.pack(">H", 1) + b"t"
    with pytest.raises(ValueError, match="out of range"):
        wal.decode_payload(wal.VERSION, payload)


def test_messages_for_a_subscription_the_log_lacks_reach_no_later_subscription(tmp_path):
    """Found by wirecheck/fuzz/fuzz_blipmq_wal.py (wirecheck/fuzz/crashers/blipmq-wal/): publishes whose target has
    no SUBSCRIBE record (a damaged log) were kept, and a new subscription given that id after
    the restart received them, on another topic."""
    path = tmp_path / "orphans.wal"
    _log_of(path, (5, wal.publish_payload(1, "gone", b"old", [1])))
    log, state, stats = open_state(path)
    assert stats["messages"] == 0
    sub = state.subscribe("new", 1)
    assert sub == 1 and state.poll(sub, 0.0) is None
    log.close()
    _, again, _ = open_state(path)
    assert again.poll(1, 0.0) is None


def test_a_log_at_the_end_of_its_ids_recovers_and_refuses_appends(tmp_path):
    """Compaction keeps every record's id, so a log whose last id is 2^63-1 still recovers; the
    broker then answers a QoS1 publish and a subscription with NACK 500 (nothing is lost that
    was accepted), and an ack goes through (its settlement is not journaled: at most a
    delivery again after a restart)."""
    from wirecheck.reference_impl.blipmq import codec
    from wirecheck.reference_impl.blipmq.session import BlipSession
    path = tmp_path / "end.wal"
    _log_of(path, (1, SUB_T), (wal.MAX_ID, wal.publish_payload(1, "t", b"last", [1])))
    log, state, stats = open_state(path)
    assert stats["messages"] == 1
    assert [r.id for r in wal.read_records(str(path))[1]] == [1, wal.MAX_ID]     # ids kept
    got = state.poll(1, 0.0)
    assert got.message == b"last"
    assert state.ack(1, got.tag)
    session = BlipSession(state)
    frames = [codec.Hello(1), codec.Auth(2, "dev-key"), codec.Publish(3, 1, "t", b"x"),
              codec.Subscribe(4, "u", 1)]
    out = session.receive(b"".join(codec.encode(f) for f in frames), 0.0)
    answers = [codec.decode_all(o)[0] for o in out]
    assert [(a.type.name, getattr(a, "code", None)) for a in answers[2:]] == [("NACK", 500), ("NACK", 500)], answers
    log.close()
