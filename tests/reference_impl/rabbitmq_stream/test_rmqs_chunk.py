"""The Osiris chunk's entry walk: the one-size fast path and the general loop agree."""
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.rabbitmq_stream.chunk import (HEADER, SimpleEntry, SubBatchEntry, build_chunk,
                                                  parse_chunk, walk_entries)


@pytest.mark.parametrize("size,count", [(0, 1), (0, 5), (1, 1), (100, 100), (7, 3)])
def test_one_size_batches(size, count):
    bodies = [bytes([i % 256]) * size for i in range(count)]
    chunk = parse_chunk(build_chunk([SimpleEntry(b) for b in bodies], 0, 1).encode())
    assert chunk.messages() == bodies
    assert chunk.bodies is not None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=20).map(SimpleEntry),
                          st.lists(st.binary(max_size=8), min_size=1, max_size=3).map(SubBatchEntry.of)),
                max_size=12))
def test_walk_counts_and_cuts_like_the_entries(entries):
    chunk = build_chunk(entries, 10, 1)
    records, bodies = walk_entries(chunk.data, len(entries))
    assert records == sum(e.record_count for e in entries)
    if all(isinstance(e, SimpleEntry) for e in entries):
        assert bodies == [e.body for e in entries]
    else:
        assert bodies is None
    assert parse_chunk(chunk.encode()).messages() == [r for e in entries for r in e.records()]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.integers(0, 8))
def test_walk_of_arbitrary_bytes_raises_only_frame_errors(data, n):
    try:
        walk_entries(data, n)
    except FrameError:
        pass


def test_one_size_lookalike_with_a_different_header_is_not_cut_evenly():
    # Two entries of 3 bytes would stride evenly, but the second header says 2: the fast path
    # must notice (headers compared) and the general walk must report the leftover byte.
    data = b"\x00\x00\x00\x03abc" + b"\x00\x00\x00\x02de" + b"f"
    with pytest.raises(FrameError) as err:
        parse_chunk(_chunk_bytes(data, 2, 2))
    assert err.value.category == "TRAILING_BYTES"


def _chunk_bytes(data: bytes, entries: int, records: int) -> bytes:
    return HEADER.pack(0x50, 0, entries, records, 1, 1, 0, zlib.crc32(data), len(data), 0, 0) + data
