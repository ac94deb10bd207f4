"""TCP reassembly of every protocol's scapy envelope (wirecheck/reference_impl/core/scapy_frames.py):
nothing until a whole frame is there, whole frames as consecutive layers with the partial rest
as Padding, and a direction whose length prefix is out of bounds left unframed (Raw).
Parametrized over the registry; the per-protocol files cross-check fields with the codecs."""
import pytest

pytest.importorskip("scapy")

from scapy.packet import Padding, Raw  # noqa: E402

from wirecheck.reference_impl.core import registry  # noqa: E402
from wirecheck.reference_impl.core.scapy_frames import frames_of  # noqa: E402

SPECS = registry.all_protocols()


def _two_frames(spec) -> tuple[bytes, bytes]:
    """A frame longer than its header, then a second one: the first PUBLISH-like frame the
    strategies draw with the fixed seed (any protocol's valid frames will do)."""
    from hypothesis import find
    strat = spec.load("strategies")
    header = spec.load("scapy_layer").HEADER_SIZE
    first = spec.encode(find(strat.frames(), lambda f: len(spec.encode(f)) >= header + 16))
    second = spec.encode(find(strat.frames(), lambda f: len(spec.encode(f)) >= header))
    return first, second


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_tcp_reassemble(spec):
    layer = spec.load("scapy_layer")
    from wirecheck.reference_impl.core.scapy_frames import PrefixedFrame
    if layer.tcp_reassemble.__func__ is not PrefixedFrame.tcp_reassemble.__func__:
        pytest.skip(f"{spec.id} cuts records its own way (no u32 prefix); its scapy test covers it")
    first, second = _two_frames(spec)
    data = first + second
    for n in sorted({0, 1, 3, 4, layer.HEADER_SIZE, len(first) - 1}):
        metadata: dict = {}
        assert layer.tcp_reassemble(data[:n], metadata, {}) is None
        if n >= 4:    # the length prefix is known: no call until the frame can be whole
            assert metadata["tcp_min_len"] == len(first)
    pkt = layer.tcp_reassemble(first, {}, {})
    assert len(frames_of(pkt, layer)) == 1 and bytes(pkt) == first
    # Whole frames plus a partial one: the partial bytes come back as Padding.
    pkt = layer.tcp_reassemble(data + first[:5], {}, {})
    assert len(frames_of(pkt, layer)) == 2
    assert pkt[Padding].load == first[:5]
    # A bad length marks the direction unframed: later data comes back as Raw.
    session: dict = {}
    bad = b"\xff\xff\xff\xff" + bytes(layer.HEADER_SIZE + 1)
    metadata = {"ident": b"x"}
    assert layer.tcp_reassemble(bad[:layer.HEADER_SIZE - 2], metadata, session) is None
    assert metadata["tcp_min_len"] == layer.HEADER_SIZE and not session
    assert isinstance(layer.tcp_reassemble(bad, {"ident": b"x"}, session), layer)
    assert type(layer.tcp_reassemble(second, {"ident": b"x"}, session)) is Raw
    assert isinstance(layer.tcp_reassemble(second, {"ident": b"y"}, session), layer)
