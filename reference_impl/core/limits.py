"""Bounds on everything a peer controls. Each protocol subclasses :class:`Limits` with its
document's values as defaults; profiles and the CLI can override them."""
from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True, slots=True)
class Limits:
    #: Largest value the frame's length prefix may declare.
    max_frame_size: int = 16 * 1024 * 1024

    def override(self, **values: int) -> "Limits":
        known = {f.name for f in fields(self)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown limit(s): {', '.join(sorted(unknown))}")
        return replace(self, **values)
