"""The field names of a frame's dataclass, looked up once per class: ``dataclasses.fields``
builds its tuple on every call, and the frame views (``frame_to_dict``) ask it per frame, which
the capture pipeline does for millions of frames."""
from __future__ import annotations

import dataclasses
import functools


@functools.cache
def _names(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def field_names(obj) -> tuple[str, ...]:
    """The names of ``obj``'s dataclass fields, in order (a dataclass instance or class)."""
    return _names(obj if isinstance(obj, type) else type(obj))
