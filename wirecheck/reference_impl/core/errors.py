"""The error hierarchy of every decoder in the kit.

Tree::

    FrameError                 anything malformed on the wire; carries category, protocol, offset
    ├── LengthError            LENGTH_TOO_SMALL / LENGTH_TOO_LARGE (declared length out of bounds)
    ├── UnknownTypeError       UNKNOWN_TYPE (a discriminant the document does not define)
    └── PayloadError           TRUNCATED / BAD_ENCODING / BAD_VALUE / TRAILING_BYTES /
                               MISSING_FIELD / UNKNOWN_FIELD / CONFLICTING_FIELDS

Nothing else may escape a decoder: the fuzzers and the property tests assert it. "Need more
data" is never an exception: decoders return nothing until a whole frame is buffered.
"""
from __future__ import annotations

from enum import StrEnum


class Category(StrEnum):
    """Machine-readable reason a frame was rejected."""

    LENGTH_TOO_SMALL = "LENGTH_TOO_SMALL"
    LENGTH_TOO_LARGE = "LENGTH_TOO_LARGE"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    TRUNCATED = "TRUNCATED"
    BAD_ENCODING = "BAD_ENCODING"
    BAD_VALUE = "BAD_VALUE"
    TRAILING_BYTES = "TRAILING_BYTES"
    # Messages made of named fields (SignalR's JSON and MessagePack messages):
    MISSING_FIELD = "MISSING_FIELD"            # a required field is absent
    UNKNOWN_FIELD = "UNKNOWN_FIELD"            # a field the message type does not have
    CONFLICTING_FIELDS = "CONFLICTING_FIELDS"  # fields that exclude each other, both present


class FrameError(Exception):
    """A malformed frame.

    ``offset`` is the absolute byte offset in the stream (or in the buffer handed to a one-shot
    decoder) of the first byte of the offending field. ``frames`` holds whatever whole frames a
    batch decode produced before the error, so a caller of ``feed()`` loses nothing.
    """

    category: Category = Category.BAD_VALUE
    #: True when a transport under the protocol refused the bytes (SignalR's HTTP and
    #: WebSocket reader, reference_impl/signalr/http_transport.py), not the protocol's own
    #: framing: such an error breaks that transport's RFC, not a rule of the catalogue.
    transport: bool = False

    def __init__(self, message: str, *, category: Category | None = None,
                 protocol: str = "", offset: int = 0, part: str = "") -> None:
        super().__init__(message)
        if category is not None:
            self.category = Category(category)
        self.message = message
        self.protocol = protocol
        self.offset = offset
        #: What is wrong, where the category alone does not say, in the decoder's own words
        #: (VibeMQ: "compression-flag", "payload", ...): what an observer maps to a rule,
        #: rather than words of ``message``. "" when the category says it all.
        self.part = part
        self.frames: list = []

    def as_dict(self) -> dict:
        return {"error": self.message, "category": str(self.category),
                "protocol": self.protocol, "offset": self.offset}

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.message!r}, category={self.category!s}, "
                f"protocol={self.protocol!r}, offset={self.offset})")


class LengthError(FrameError):
    category = Category.LENGTH_TOO_LARGE


class UnknownTypeError(FrameError):
    category = Category.UNKNOWN_TYPE


class PayloadError(FrameError):
    category = Category.BAD_VALUE
