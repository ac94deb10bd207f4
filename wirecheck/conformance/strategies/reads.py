"""How a byte string is split into reads: a strategy every protocol's properties share (STYLE.md
point 10: split-read testing is the default)."""
from __future__ import annotations

import itertools

from hypothesis import strategies as st


@st.composite
def chunkings(draw, data: bytes, max_chunks: int = 64):
    """Read sizes (all > 0, summing to ``len(data)``) that split ``data`` at random points."""
    n = len(data)
    if n <= 1:
        return [n] if n else []
    points = draw(st.lists(st.integers(1, n - 1), max_size=min(max_chunks, n - 1), unique=True))
    edges = [0, *sorted(points), n]
    return [b - a for a, b in itertools.pairwise(edges)]
