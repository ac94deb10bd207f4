"""The code fields of each protocol's client frames, for the network fuzzer's mutator
(fuzz/live/mutate.py): where a frame says what it is (its type, key, version or flags byte), and the
values the document defines there.

A parser's switch on such a field is where an unknown value goes wrong (no case for it, a table
indexed past its end, a flag bit nobody masks). A random byte hits one particular value at one
particular offset about once in a few million cases; the mutator instead walks every value the
document does *not* define, each once per round in a shuffled order (as a grammar fuzzer
enumerates an enum field), and now and then writes a defined value into a frame of another type.
Offsets count from the frame's first byte, as the fuzzer's seed sessions cut them
(fuzz/live/seeds.py). SignalR's messages are JSON or MessagePack maps: no field at a fixed place.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CodeField:
    name: str
    offset: int                 # from the frame's first byte
    width: int                  # 1 or 2 bytes, big-endian
    known: frozenset[int]       # the values the document defines

    def unknown(self) -> list[int]:
        """The values to walk: every byte value the document leaves undefined; for a 2-byte
        field those below 0x100, each defined value with its top bit set (a response key sent
        as a request), and the edges."""
        if self.width == 1:
            return [v for v in range(256) if v not in self.known]
        extra = {k | 0x8000 for k in self.known} | {0x00FF, 0x0100, 0x7FFF, 0x8000, 0xFFFF}
        return sorted((set(range(256)) | extra) - self.known)


def _blipmq() -> tuple[CodeField, ...]:
    # "Frame Layout": [u32 length][u8 type][u64 correlation id][payload]
    from wirecheck.reference_impl.blipmq.codec import FrameType
    return (CodeField("frame type", 4, 1, frozenset(FrameType)),)


def _vibemq() -> tuple[CodeField, ...]:
    # "Framing": [u32 body length][u8 compression flags][body]; "Message Format": the body
    # starts with version (u8) and type (u8) when it is not compressed
    from wirecheck.reference_impl.vibemq.constants import PROTOCOL_VERSION, CommandType, Compression
    return (CodeField("compression flags", 4, 1, frozenset(Compression)),
            CodeField("message version", 5, 1, frozenset({PROTOCOL_VERSION})),
            CodeField("message type", 6, 1, frozenset(CommandType)))


def _micromessage2() -> tuple[CodeField, ...]:
    # "Frames": each starts with its flags byte; a value with a bit the document does not
    # define, two type bits, or CONTINUED on a frame that is not a MESSAGE is not a frame
    from wirecheck.reference_impl.micromessage2.constants import KNOWN_BITS, TYPE_BITS, FrameFlags
    valid = {v for v in range(256) if not v & ~int(KNOWN_BITS) and
             (not v & int(TYPE_BITS) or (bin(v & int(TYPE_BITS)).count("1") == 1 and not v & FrameFlags.CONTINUED))}
    return (CodeField("flags", 0, 1, frozenset(valid)),)


def _rabbitmq_stream() -> tuple[CodeField, ...]:
    # "Frame Structure": [u32 size][u16 key][u16 version][content]
    from wirecheck.reference_impl.rabbitmq_stream.constants import Key
    return (CodeField("key", 4, 2, frozenset(Key)), CodeField("version", 6, 2, frozenset({1, 2})))


_FIELDS = {"blipmq": _blipmq, "vibemq": _vibemq, "micromessage2": _micromessage2,
           "rabbitmq-stream": _rabbitmq_stream}


def of_protocol(protocol: str) -> tuple[CodeField, ...]:
    """The code fields of ``protocol``'s client frames (none for SignalR)."""
    make = _FIELDS.get(protocol)
    return make() if make is not None else ()
