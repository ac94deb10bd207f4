import struct

import pytest

from wirecheck.reference_impl.core.framebuffer import COMPACT_THRESHOLD, FrameBuffer

U32 = struct.Struct(">I")


def test_peek_does_not_consume():
    buf = FrameBuffer()
    buf.feed(b"abcdef")
    assert buf.peek(3) == b"abc"
    assert buf.peek(7) is None
    assert len(buf) == 6 and buf.offset == 0


def test_take_advances_offset_and_unpack_is_relative():
    buf = FrameBuffer()
    buf.feed(U32.pack(7) + U32.pack(9))
    assert buf.unpack(U32) == (7,)
    assert buf.unpack(U32, skip=4) == (9,)
    assert buf.unpack(U32, skip=5) is None
    assert buf.take(4) == U32.pack(7)
    assert buf.offset == 4 and buf.unpack(U32) == (9,)


def test_take_past_end_is_an_error():
    buf = FrameBuffer()
    buf.feed(b"ab")
    with pytest.raises(IndexError):
        buf.take(3)


def test_offsets_stay_absolute_across_compaction():
    buf = FrameBuffer()
    total = 0
    for _ in range(4 * COMPACT_THRESHOLD // 1000):
        buf.feed(b"x" * 1000)
        buf.take(999)
        total += 999
    assert buf.offset == total
    assert len(buf) == 4 * COMPACT_THRESHOLD // 1000
    # the consumed prefix was dropped: the backing array is bounded, not the whole stream
    assert len(buf._buf) < 2 * COMPACT_THRESHOLD + 1000


def test_fully_consumed_buffer_is_cleared():
    buf = FrameBuffer()
    buf.feed(b"12345")
    buf.take(5)
    assert len(buf._buf) == 0 and buf.offset == 5
