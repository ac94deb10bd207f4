"""RabbitMQ Stream broker storage: offsets, tracking, lookups, segments, retention, recovery."""
import logging
import os
from urllib.parse import quote

import pytest

from wirecheck.reference_impl.rabbitmq_stream import store as store_mod
from wirecheck.reference_impl.rabbitmq_stream.chunk import (HEADER_SIZE, SimpleEntry, SubBatchEntry,
                                                  TrackingType, parse_tracking)
from wirecheck.reference_impl.rabbitmq_stream.constants import ChunkType, Compression
from wirecheck.reference_impl.rabbitmq_stream.store import (StoreError, StreamStore, parse_arguments,
                                                  parse_duration, segment_filename,
                                                  stream_dirname)


def make_store(tmp_path, mode, **kw):
    return StreamStore(str(tmp_path) if mode == "disk" else None, kw.pop("fsync", "none"), **kw)


def stream_dir(tmp_path, name):
    return tmp_path / "streams" / stream_dirname(name)


def segment_files(tmp_path, name):
    return sorted(p.name for p in stream_dir(tmp_path, name).glob("*.segment"))


def msg(body: bytes):
    return [SimpleEntry(body)]


def all_chunks(stream):
    return [stream.chunk_at(i) for i in range(stream.first_chunk_index(), stream.end_chunk_index())]


both_modes = pytest.mark.parametrize("mode", ["memory", "disk"])


# --- appending and reading --------------------------------------------------------------------

@both_modes
def test_append_and_read_back(tmp_path, mode):
    st = make_store(tmp_path, mode)
    s = st.create("s", {})
    assert (s.first_offset, s.next_offset, s.stats()) == (0, 0, {"first_chunk_id": -1,
                                                                 "committed_chunk_id": -1})
    assert s.last_user_chunk_index() is None and s.chunk_at(0) is None
    c0 = s.append(msg(b"a"), 1000)
    c1 = s.append([SimpleEntry(b"b"), SimpleEntry(b"c")], 1001)
    assert (c0.first_offset, c1.first_offset, s.next_offset) == (0, 1, 3)
    assert (s.first_chunk_index(), s.end_chunk_index(), s.last_user_chunk_index()) == (0, 2, 1)
    assert s.chunk_at(0) == c0 and s.chunk_at(1) == c1 and s.chunk_at(2) is None
    assert s.chunk_at(1).messages() == [b"b", b"c"]
    assert s.chunk_at(1).timestamp == 1001
    assert s.stats() == {"first_chunk_id": 0, "committed_chunk_id": 1}
    assert s.size_bytes() == len(c0.encode()) + len(c1.encode())
    assert st.get("s") is s and st.get("t") is None
    st.close()


@both_modes
def test_a_sub_batch_spans_one_offset_per_record(tmp_path, mode):
    st = make_store(tmp_path, mode)
    s = st.create("s", {})
    c = s.append([SubBatchEntry.of([b"x", b"y", b"z"])], 1)
    assert (c.num_entries, c.num_records, s.next_offset) == (1, 3, 3)
    g = s.append([SimpleEntry(b"p"), SubBatchEntry.of([b"q", b"r"], Compression.GZIP)], 2)
    assert (g.first_offset, s.next_offset) == (3, 6)
    assert s.chunk_at(1).messages() == [b"p", b"q", b"r"]
    assert s.chunk_index(2) == 0 and s.chunk_index(5) == 1
    st.close()


def test_bad_appends_are_refused_and_write_nothing(tmp_path):
    st = make_store(tmp_path, "disk")
    s = st.create("s", {})
    for entries, kw in [([], {}), ([b"raw"], {}), ([SubBatchEntry.of([])], {}),
                        (msg(b"a"), {"writer_sequences": {"p" * 256: 1}}),
                        (msg(b"a"), {"writer_sequences": {"p": -1}})]:
        with pytest.raises(StoreError):
            s.append(entries, 1, **kw)
    with pytest.raises(StoreError):
        s.store_offset("c", 2 ** 64, 1)
    assert s.next_offset == 0 and s.size_bytes() == 0
    st.close()
    with pytest.raises(StoreError):
        s.append(msg(b"a"), 1)


# --- tracking ---------------------------------------------------------------------------------

@both_modes
def test_store_offset_occupies_an_offset_and_tracking_survives_a_restart(tmp_path, mode):
    st = make_store(tmp_path, mode)
    s = st.create("s", {})
    s.append(msg(b"a"), 10, writer_sequences={"pub": 7})
    t = s.store_offset("consumer", 0, 11)
    assert (t.chunk_type, t.first_offset, t.num_entries, t.num_records) == (
        ChunkType.TRACKING_DELTA, 1, 1, 1)
    assert parse_tracking(t.data) == [(TrackingType.OFFSET, "consumer", 0)]
    assert s.append(msg(b"b"), 12, writer_sequences={"pub": 9, "other": 1}).first_offset == 2
    assert s.last_user_chunk_index() == 2
    s.store_offset("consumer", 2, 13)
    assert s.stored_offset("consumer") == 2 and s.stored_offset("nobody") is None
    assert s.writer_sequence("pub") == 9 and s.writer_sequence("other") == 1
    assert s.writer_sequence("nobody") is None
    assert s.last_user_chunk_index() == 2            # a tracking chunk is not a user chunk
    assert s.chunk_at(3).chunk_type == ChunkType.TRACKING_DELTA
    st.close()
    if mode == "memory":
        return
    st = make_store(tmp_path, mode)
    s = st.get("s")
    assert (s.first_offset, s.next_offset, s.end_chunk_index()) == (0, 4, 4)
    assert s.stored_offset("consumer") == 2
    assert s.writer_sequence("pub") == 9 and s.writer_sequence("other") == 1
    assert [c.chunk_type for c in all_chunks(s)] == [0, 1, 0, 1]
    assert s.last_user_chunk_index() == 2
    assert s.append(msg(b"c"), 14).first_offset == 4
    st.close()


# --- lookups ----------------------------------------------------------------------------------

@both_modes
def test_chunk_index_for_offsets(tmp_path, mode):
    st = make_store(tmp_path, mode)
    s = st.create("s", {})
    s.append(msg(b"a"), 1)                                        # offset 0
    s.append([SubBatchEntry.of([b"b", b"c", b"d"])], 2)           # offsets 1-3
    s.store_offset("c", 1, 3)                                     # offset 4
    s.append(msg(b"e"), 4)                                        # offset 5
    assert [s.chunk_index(o) for o in range(7)] == [0, 1, 1, 1, 2, 3, 4]
    assert s.chunk_index(10 ** 6) == s.end_chunk_index() == 4
    st.close()


@both_modes
def test_chunk_index_for_timestamp(tmp_path, mode):
    st = make_store(tmp_path, mode)
    s = st.create("s", {})
    for ts in (100, 200, 200, 300):
        s.append(msg(b"m"), ts)
    got = [s.chunk_index_for_timestamp(t) for t in (0, 100, 101, 200, 201, 300, 301)]
    assert got == [0, 0, 1, 1, 3, 3, 4]
    s.append(msg(b"late clock"), 250)                 # clocks may go back
    s.append(msg(b"m"), 400)
    assert s.chunk_index_for_timestamp(250) == 3      # first chunk whose timestamp is >= 250
    assert s.chunk_index_for_timestamp(301) == 5
    st.close()


# --- segments and retention -------------------------------------------------------------------

def chunk_size(body_len):
    return HEADER_SIZE + 4 + body_len


@both_modes
def test_segments_roll_at_the_configured_size(tmp_path, mode):
    st = make_store(tmp_path, mode)
    size = chunk_size(52)                                          # 104 bytes a chunk
    s = st.create("s", {"stream-max-segment-size-bytes": str(2 * size)})
    for i in range(5):
        s.append(msg(bytes([i]) * 52), i)
    # A segment is full once it reaches the size; the next chunk starts a new one.
    assert s.segment_offsets() == [0, 2, 4]
    assert [c.messages()[0][0] for c in all_chunks(s)] == [0, 1, 2, 3, 4]
    if mode == "disk":
        assert segment_files(tmp_path, "s") == [segment_filename(o) for o in (0, 2, 4)]
        assert os.path.getsize(stream_dir(tmp_path, "s") / segment_filename(0)) == 2 * size
        st.close()
        st = make_store(tmp_path, mode)
        s = st.get("s")
        assert s.segment_offsets() == [0, 2, 4] and s.next_offset == 5
        assert [c.messages()[0][0] for c in all_chunks(s)] == [0, 1, 2, 3, 4]
    st.close()


@both_modes
def test_a_new_segment_starts_with_a_tracking_snapshot(tmp_path, mode):
    st = make_store(tmp_path, mode)
    s = st.create("s", {"max-segment-size-bytes": "1", "max-length-bytes": "0"})
    s.append(msg(b"a"), 1, writer_sequences={"pub": 5})           # offset 0, segment 0
    s.store_offset("c", 0, 2)                                     # offsets 1 (snapshot), 2
    assert s.stored_offset("c") == 0
    s.append(msg(b"b"), 3, writer_sequences={"pub": 6})           # offsets 3 (snapshot), 4
    # Retention (max-length-bytes 0) ran on each roll: only the active segment is left, and
    # the snapshot at its start carries the tracking state of the deleted ones.
    assert s.segment_offsets() == [3] and s.first_offset == 3
    snap = s.chunk_at(s.first_chunk_index())
    assert snap.chunk_type == ChunkType.TRACKING_SNAPSHOT and snap.num_records == 1
    # The stored offset 0 was already gone from the stream when the snapshot was taken.
    assert sorted(parse_tracking(snap.data)) == [(TrackingType.SEQUENCE, "pub", 5)]
    assert s.stored_offset("c") is None and s.writer_sequence("pub") == 6
    st.close()
    if mode == "disk":
        s = make_store(tmp_path, mode).get("s")
        assert (s.first_offset, s.next_offset) == (3, 5)
        assert s.writer_sequence("pub") == 6 and s.stored_offset("c") is None


@both_modes
def test_retention_by_size_drops_old_segments_but_never_the_active_one(tmp_path, mode):
    st = make_store(tmp_path, mode)
    size = chunk_size(52)
    s = st.create("s", {"max-segment-size-bytes": str(2 * size),
                        "max-length-bytes": str(5 * size)})
    for i in range(12):
        s.append(msg(bytes([i]) * 52), i)
    # Retention runs on each roll: segments of 2 chunks; at most 5 chunks' worth is kept
    # (plus what the active segment has gained since the roll).
    assert s.segment_offsets() == [6, 8, 10]
    assert (s.first_offset, s.next_offset, s.first_chunk_index()) == (6, 12, 6)
    assert s.size_bytes() == 6 * size
    assert s.chunk_at(5) is None and s.chunk_at(6).messages() == [bytes([6]) * 52]
    assert s.chunk_index(0) == 6                     # before the first offset: first chunk
    assert s.stats() == {"first_chunk_id": 6, "committed_chunk_id": 11}
    s.apply_retention(now_ms=0)
    assert s.segment_offsets() == [8, 10] and s.first_offset == 8
    if mode == "disk":
        assert segment_files(tmp_path, "s") == [segment_filename(8), segment_filename(10)]
    s.limits["max_length_bytes"] = 0
    s.apply_retention(now_ms=0)
    assert s.segment_offsets() == [10] and s.first_offset == 10 and s.next_offset == 12
    assert [c.first_offset for c in all_chunks(s)] == [10, 11]
    if mode == "disk":
        st.close()
        s = make_store(tmp_path, mode).get("s")
        assert (s.first_offset, s.next_offset, s.segment_offsets()) == (10, 12, [10])
        assert s.append(msg(b"z"), 99).first_offset == 12


@both_modes
def test_retention_by_age(tmp_path, mode):
    st = make_store(tmp_path, mode)
    size = chunk_size(52)
    s = st.create("s", {"max-segment-size-bytes": str(2 * size), "max-age": "10s"})
    for i in range(6):
        s.append(msg(bytes([i]) * 52), 1000 * i)      # segments [0,1] [2,3] [4,5]
    assert s.segment_offsets() == [0, 2, 4]           # nothing was 10 s old at the rolls
    s.apply_retention(now_ms=1000 + 10_000)           # newest of segment 0 is exactly 10 s old
    assert s.segment_offsets() == [0, 2, 4]
    s.apply_retention(now_ms=1001 + 10_000)
    assert s.segment_offsets() == [2, 4] and s.first_offset == 2
    s.apply_retention(now_ms=10 ** 9)                 # everything is old: the active one stays
    assert s.segment_offsets() == [4] and (s.first_offset, s.next_offset) == (4, 6)
    assert s.first_chunk_index() == 4 and s.chunk_index_for_timestamp(0) == 4
    if mode == "disk":
        assert segment_files(tmp_path, "s") == [segment_filename(4)]
    st.close()


# --- recovery ---------------------------------------------------------------------------------

def five_chunks(tmp_path):
    st = make_store(tmp_path, "disk")
    s = st.create("s", {})
    chunks = [s.append(msg(b"m%d" % i * 10), i, writer_sequences={"pub": i}) for i in range(5)]
    st.close()
    path = stream_dir(tmp_path, "s") / segment_filename(0)
    good = sum(len(c.encode()) for c in chunks[:4])
    assert os.path.getsize(path) == good + len(chunks[4].encode())
    return path, good, chunks


def check_first_four_left(tmp_path, path, good, chunks):
    st = make_store(tmp_path, "disk")
    s = st.get("s")
    assert all_chunks(s) == chunks[:4]
    assert os.path.getsize(path) == good
    assert (s.next_offset, s.writer_sequence("pub")) == (4, 3)
    assert st.recovery["s"]["truncated_bytes"] > 0
    assert s.append(msg(b"again"), 9).first_offset == 4
    st.close()
    assert [c.first_offset for c in all_chunks(make_store(tmp_path, "disk").get("s"))] == [
        0, 1, 2, 3, 4]


@pytest.mark.parametrize("cut", [1, 10, HEADER_SIZE - 1, HEADER_SIZE, HEADER_SIZE + 3, -12, -1])
def test_a_torn_tail_is_truncated(tmp_path, cut):
    path, good, chunks = five_chunks(tmp_path)
    last_len = len(chunks[4].encode())
    keep = good + (cut if cut > 0 else last_len + cut)      # negative: inside the trailer
    with open(path, "r+b") as fh:
        fh.truncate(keep)
    check_first_four_left(tmp_path, path, good, chunks)


def test_a_bad_crc_in_the_last_chunk_is_truncated(tmp_path):
    path, good, chunks = five_chunks(tmp_path)
    with open(path, "r+b") as fh:
        fh.seek(good + HEADER_SIZE + 5)
        byte = fh.read(1)
        fh.seek(good + HEADER_SIZE + 5)
        fh.write(bytes([byte[0] ^ 0x01]))
    check_first_four_left(tmp_path, path, good, chunks)


def test_corruption_inside_an_older_segment_ends_the_stream_there(tmp_path, caplog):
    st = make_store(tmp_path, "disk")
    size = chunk_size(52)
    s = st.create("s", {"max-segment-size-bytes": str(2 * size)})
    for i in range(6):
        s.append(msg(bytes([i]) * 52), i)
    st.close()
    first = stream_dir(tmp_path, "s") / segment_filename(0)
    with open(first, "r+b") as fh:                   # damage chunk 1's data
        fh.seek(size + HEADER_SIZE + 10)
        fh.write(b"\xff")
    with caplog.at_level(logging.WARNING, logger=store_mod.__name__):
        st = make_store(tmp_path, "disk")
    assert "truncated" in caplog.text and "set aside" in caplog.text
    s = st.get("s")
    assert [c.first_offset for c in all_chunks(s)] == [0] and s.next_offset == 1
    assert os.path.getsize(first) == size
    assert segment_files(tmp_path, "s") == [segment_filename(0)]
    assert sorted(p.name for p in stream_dir(tmp_path, "s").glob("*.corrupt")) == [
        segment_filename(2) + ".corrupt", segment_filename(4) + ".corrupt"]
    assert s.append(msg(b"x"), 9).first_offset == 1
    st.close()


def test_an_empty_active_segment_keeps_the_position(tmp_path):
    st = make_store(tmp_path, "disk")
    s = st.create("s", {"max-segment-size-bytes": "1", "max-length-bytes": "0"})
    s.append(msg(b"a"), 1)
    s.append(msg(b"b"), 2)
    st.close()
    d = stream_dir(tmp_path, "s")
    (d / segment_filename(1)).write_bytes(b"")        # crash right after a roll, say
    st = make_store(tmp_path, "disk")
    s = st.get("s")
    assert (s.first_offset, s.next_offset, s.end_chunk_index()) == (1, 1, 0)
    assert s.append(msg(b"c"), 3).first_offset == 1
    st.close()


# --- streams ----------------------------------------------------------------------------------

@both_modes
def test_delete_removes_the_files(tmp_path, mode):
    st = make_store(tmp_path, mode)
    s = st.create("s", {"max-age": "1h"})
    s.append(msg(b"a"), 1)
    st.create("keep", {})
    st.delete("s")
    assert st.get("s") is None
    with pytest.raises(StoreError):
        st.delete("s")
    with pytest.raises(StoreError):
        s.append(msg(b"b"), 2)
    if mode == "disk":
        assert not stream_dir(tmp_path, "s").exists()
        assert list((tmp_path / "deleted").iterdir()) == []
    s = st.create("s", {})
    assert s.next_offset == 0 and s.arguments == {}
    st.close()
    if mode == "disk":
        st = make_store(tmp_path, mode)
        assert sorted(st.streams) == ["keep", "s"] and st.get("s").arguments == {}


def test_arguments_are_kept_and_recovered(tmp_path):
    st = make_store(tmp_path, "disk")
    args = {"max-age": "7D", "max-length-bytes": "1000", "x-custom": "v"}
    s = st.create("s", args)
    assert s.arguments == args and s.limits["max_age_ms"] == 7 * 86_400_000
    with pytest.raises(StoreError):
        st.create("s", {})
    with pytest.raises(ValueError):
        st.create("bad", {"max-age": "7X"})
    assert st.get("bad") is None and not stream_dir(tmp_path, "bad").exists()
    st.close()
    s = make_store(tmp_path, "disk").get("s")
    assert s.arguments == args and s.limits["max_length_bytes"] == 1000


def test_an_unfinished_create_is_ignored_then_replaced(tmp_path):
    d = tmp_path / "streams" / "s"
    d.mkdir(parents=True)
    (d / segment_filename(0)).write_bytes(b"junk")
    st = make_store(tmp_path, "disk")
    assert st.get("s") is None
    s = st.create("s", {})
    assert s.append(msg(b"a"), 1).first_offset == 0
    st.close()
    assert all_chunks(make_store(tmp_path, "disk").get("s"))[0].messages() == [b"a"]


@pytest.mark.parametrize("name", ["a/b", "ströme/流/\u00e9", "..", ".", "%2F", "x" * 250,
                                  "\U0001f600" * 80],
                         ids=["slash", "unicode", "dotdot", "dot", "percent", "long", "emoji"])
def test_any_stream_name_is_a_safe_directory(tmp_path, name):
    st = make_store(tmp_path, "disk")
    st.create(name, {}).append(msg(b"a"), 1)
    st.create("other", {})
    st.close()
    entries = sorted(p.name for p in (tmp_path / "streams").iterdir())
    assert len(entries) == 2 and all("/" not in e and e not in (".", "..") for e in entries)
    assert stream_dirname(name) in entries
    if len(quote(name, safe="")) <= 240 and name not in (".", ".."):
        assert stream_dirname(name) == quote(name, safe="")
    st = make_store(tmp_path, "disk")
    assert sorted(st.streams) == sorted([name, "other"])
    assert st.get(name).chunk_at(0).messages() == [b"a"]


def test_fsync_policy(tmp_path, monkeypatch):
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    for policy, expected in [("always", 4), ("every_n:2", 2), ("none", 0)]:
        st = StreamStore(str(tmp_path / policy), policy)
        s = st.create("s", {})
        calls.clear()
        for i in range(4):
            s.append(msg(b"a"), i)
        assert len(calls) == expected, policy
        st.close()
    clock = [0.0]
    st = StreamStore(str(tmp_path / "interval"), "interval_ms:100", clock=lambda: clock[0])
    s = st.create("s", {})
    calls.clear()
    s.append(msg(b"a"), 1)
    assert calls == []
    clock[0] = 0.1
    s.append(msg(b"b"), 2)
    assert len(calls) == 1
    st.close()


# --- Create arguments -------------------------------------------------------------------------

def test_parse_arguments_accepts_valid_values():
    got = parse_arguments({"max-length-bytes": "0", "max-age": "12h",
                           "stream-max-segment-size-bytes": "1000",
                           "queue-leader-locator": "balanced", "initial-cluster-size": "3",
                           "x-unknown": "kept"})
    assert got == {"max_length_bytes": 0, "max_age_ms": 12 * 3_600_000,
                   "max_segment_size_bytes": 1000, "initial_cluster_size": 3,
                   "queue_leader_locator": "balanced", "other": {"x-unknown": "kept"}}
    assert parse_arguments({})["max_segment_size_bytes"] is None
    assert parse_arguments({"max-segment-size-bytes": "+5"})["max_segment_size_bytes"] == 5
    for text, ms in [("90s", 90_000), ("30m", 1_800_000), ("12h", 43_200_000),
                     ("7D", 604_800_000), ("3M", 90 * 86_400_000), ("1Y", 365 * 86_400_000)]:
        assert parse_duration(text) == ms


@pytest.mark.parametrize("args", [
    {"max-length-bytes": "abc"}, {"max-length-bytes": "-1"}, {"max-length-bytes": "1 "},
    {"max-length-bytes": "1_000"}, {"max-length-bytes": ""}, {"max-age": "7X"},
    {"max-age": "abc"}, {"max-age": "0s"}, {"max-age": "-1h"}, {"max-age": "7"},
    {"max-age": "h"}, {"max-age": "1.5h"}, {"max-age": "7DD"},
    {"max-segment-size-bytes": "0"}, {"stream-max-segment-size-bytes": "-1"},
    {"initial-cluster-size": "abc"}, {"max-length-bytes": 5},
])
def test_parse_arguments_rejects_bad_values(args):
    with pytest.raises(ValueError):
        parse_arguments(args)


@pytest.mark.parametrize("tail", [bytes(1), bytes(HEADER_SIZE), bytes(5000), b"\x50" + bytes(200)])
def test_a_zero_or_garbage_tail_after_whole_chunks_is_truncated(tmp_path, tail):
    path, good, chunks = five_chunks(tmp_path)
    size = os.path.getsize(path)
    with open(path, "ab") as fh:
        fh.write(tail)
    st = make_store(tmp_path, "disk")
    assert all_chunks(st.get("s")) == chunks and os.path.getsize(path) == size
    assert st.recovery["s"]["truncated_bytes"] == len(tail)
    if not any(tail):       # zeros: a torn tail, nothing worth keeping beside the segment
        assert not list(path.parent.glob("*.corrupt*"))
    st.close()


def test_bytes_cut_off_after_a_damaged_chunk_in_the_middle_are_kept(tmp_path):
    path, good, chunks = five_chunks(tmp_path)
    first = len(chunks[0].encode())
    raw = path.read_bytes()
    with open(path, "r+b") as fh:                     # damage chunk 1's data: chunks 2-4 are whole
        fh.seek(first + HEADER_SIZE + 2)
        fh.write(bytes([raw[first + HEADER_SIZE + 2] ^ 0xFF]))
    st = make_store(tmp_path, "disk")
    assert all_chunks(st.get("s")) == chunks[:1] and os.path.getsize(path) == first
    kept = path.parent / (path.name + ".corrupt-tail")
    assert kept.read_bytes()[len(chunks[1].encode()):] == raw[first + len(chunks[1].encode()):]
    st.close()
