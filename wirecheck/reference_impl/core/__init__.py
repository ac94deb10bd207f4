"""Protocol-agnostic pieces shared by every protocol package.

- :mod:`.errors` — the one error hierarchy decoders may raise (:class:`FrameError`).
- :mod:`.framebuffer` — the receive buffer that never goes quadratic.
- :mod:`.limits` — per-protocol bounds with the documents' values as defaults.
- :mod:`.registry` — every protocol registers itself once; everything else iterates it.
- :mod:`.server` / :mod:`.client` — asyncio glue around sans-IO sessions and decoders.
"""
from .errors import Category, FrameError
from .framebuffer import FrameBuffer
from .limits import Limits

__all__ = ["Category", "FrameError", "FrameBuffer", "Limits"]
