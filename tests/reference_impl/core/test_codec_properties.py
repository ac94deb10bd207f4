"""Split-read properties every protocol's decoder must have (DESIGN.md: every decoder is
tested whole, byte by byte and with random chunking; nothing but the documented error type
escapes). Parametrized over the registry: a protocol gets them by registering its strategies
module, which provides ``frames``, ``valid_streams``, ``stream_bytes``, ``invalid_frames``
(bytes, expected category) and ``chunkings``."""
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from wirecheck.conformance.strategies.invariants import assert_extension_invariant, assert_split_invariant
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import Category

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SPECS = registry.all_protocols()
protocols = pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])


@protocols
@FAST
@given(data=st.data())
def test_valid_stream_any_split(spec, data):
    strat = spec.load("strategies")
    stream = data.draw(strat.valid_streams())
    wire = strat.stream_bytes(stream)
    result = assert_split_invariant(wire, data.draw(strat.chunkings(wire)), spec)
    assert result == (stream, None, None)


@protocols
@FAST
@given(data=st.data())
def test_error_any_split_same_category_offset_and_frames(spec, data):
    strat = spec.load("strategies")
    before = data.draw(strat.valid_streams(max_size=3))
    bad, category = data.draw(strat.invalid_frames())
    after = data.draw(strat.valid_streams(max_size=2))
    head = strat.stream_bytes(before)
    wire = head + bad + strat.stream_bytes(after)
    result = assert_split_invariant(wire, data.draw(strat.chunkings(wire)), spec)
    assert result.frames == before
    assert result.category == category
    assert len(head) <= result.offset <= len(head) + len(bad)


@protocols
@FAST
@given(data=st.data())
def test_stream_cut_inside_a_frame_is_truncated(spec, data):
    strat = spec.load("strategies")
    stream = data.draw(strat.valid_streams(max_size=3))
    last = spec.encode(data.draw(strat.frames()))
    cut = last[:data.draw(st.integers(1, len(last) - 1))]
    head = strat.stream_bytes(stream)
    wire = head + cut
    result = assert_split_invariant(wire, data.draw(strat.chunkings(wire)), spec)
    assert result == (stream, Category.TRUNCATED, len(head))


@protocols
@FAST
@given(data=st.data(), blob=st.binary(max_size=2048))
@example(data=None, blob=b"\xff\xff\xff\xff")                        # largest length prefix
@example(data=None, blob=b"\x00\x00\x00\x00")                        # zero length
@example(data=None, blob=b"\x00\x00\x00\x09\x00" + bytes(8))         # BlipMQ-sized header
@example(data=None, blob=b"\x00\x00\x00\x05\x00\x08\x00\x01\x00")    # RabbitMQ Stream Deliver stub
def test_arbitrary_bytes_only_frame_error(spec, data, blob):
    sizes = data.draw(spec.load("strategies").chunkings(blob)) if data is not None else [1]
    assert_split_invariant(blob, sizes, spec)


@protocols
@FAST
@given(data=st.data())
def test_valid_prefix_with_bytes_appended(spec, data):
    strat = spec.load("strategies")
    stream = data.draw(strat.valid_streams(max_size=4))
    wire = strat.stream_bytes(stream)
    wire = wire[:data.draw(st.integers(0, len(wire)))]
    extra = data.draw(st.binary(max_size=256))
    assert_extension_invariant(wire, extra, spec)
    assert_split_invariant(wire + extra, data.draw(strat.chunkings(wire + extra)), spec)
