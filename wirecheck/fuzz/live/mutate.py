"""Structure-aware mutations of a client session, for the network fuzzer (fuzz/live/fuzzer.py).

A session is a list of frames (bytes each, fuzz/live/seeds.py). A case keeps a valid prefix of
the session, so the target is in the state that prefix leads to (after the handshake, with a
subscription...), then changes one thing:

- one frame's bytes: bit flips and byte values biased towards the frame's head (length, type,
  flags, ids) and tail (the last fields), "interesting" integers (0, 1, boundaries, the
  frame's own length +- 1) written over 1, 2, 4 or 8 bytes in both byte orders, the length
  prefix in particular, a protocol token from the dictionary, truncation, insertion,
  deletion, a repeated run (long strings);
- the sequence: a frame dropped, repeated, swapped with the next, or taken from another
  session (frames in states they do not belong to);
- the tail: random bytes appended (unknown types, garbage);
- a code field (fuzz/live/code_fields.py: a frame's type, key, version or flags byte): each value
  the document does not define in turn, or a defined one in a frame of another type.

Frames after the mutated one are kept half the time (does the target recover, or stay in
sync?). How the bytes are written is chosen separately (:func:`writes`): whole, in random
pieces, or one byte at a time. Every choice comes from the ``random.Random`` given, so a
campaign's ``--seed`` reproduces its cases.
"""
from __future__ import annotations

import random
import struct
from pathlib import Path

INTERESTING = (0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
               0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)
_FORMATS = {1: "B", 2: "H", 4: "I", 8: "Q"}
#: How far into a frame its "head" reaches (length, type, flags, ids of every protocol here).
HEAD = 16


def load_dictionary(path: Path) -> list[bytes]:
    """The tokens of a libFuzzer dictionary file (``name="value"`` lines, ``\\xNN`` escapes)."""
    tokens = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or '"' not in line:
            continue
        body = line[line.index('"') + 1:line.rindex('"')]
        try:
            tokens.append(body.encode("latin-1").decode("unicode_escape").encode("latin-1"))
        except (UnicodeDecodeError, UnicodeEncodeError):
            continue
    return [t for t in tokens if t]


class Mutator:
    def __init__(self, rng: random.Random, tokens: list[bytes] = (), fields=()) -> None:
        self.rng = rng
        self.tokens = list(tokens)
        #: the protocol's code fields (fuzz/live/code_fields.py), each with the undefined values
        #: still to write in this round (shuffled; a new round when they are all used)
        self.fields = list(fields)
        self._rounds: dict[str, list[int]] = {}

    def _code_value(self, f) -> int:
        """The next value for code field ``f``: an undefined one in turn (every one per round),
        a defined one a fifth of the time."""
        if f.known and self.rng.random() < 0.2:
            return self.rng.choice(sorted(f.known))
        left = self._rounds.get(f.name)
        if not left:
            left = f.unknown()
            self.rng.shuffle(left)
            self._rounds[f.name] = left
        return left.pop()

    # -- positions and values -------------------------------------------------------------

    def _pos(self, n: int) -> int:
        """A position in a frame of ``n`` bytes: the head most often, then the tail. An empty
        frame (a deletion or truncation can leave one) has one position, 0: where an insert
        or a write goes."""
        if n <= 0:
            return 0
        r = self.rng.random()
        if r < 0.6:
            return self.rng.randrange(min(n, HEAD))
        if r < 0.8:
            return max(0, n - 1 - self.rng.randrange(min(n, 4)))
        return self.rng.randrange(n)

    def _integer(self, frame_len: int, width: int) -> int:
        r = self.rng.random()
        limit = (1 << (8 * width)) - 1
        if r < 0.6:
            value = self.rng.choice(INTERESTING)
        elif r < 0.8:
            value = frame_len + self.rng.choice((-5, -4, -1, 1, 2, 1 << 20))
        else:
            value = self.rng.getrandbits(8 * width)
        return value & limit

    # -- one frame ------------------------------------------------------------------------

    def mutate_frame(self, frame: bytes) -> tuple[bytes, str]:
        """``frame`` with one to three byte-level changes, and what they were."""
        data = bytearray(frame or b"\x00")
        done = []
        for _ in range(1 + (self.rng.random() < 0.3) + (self.rng.random() < 0.1)):
            data, what = self._one(data)
            done.append(what)
        return bytes(data), ", ".join(done)

    def _one(self, data: bytearray) -> tuple[bytearray, str]:
        rng, n = self.rng, len(data)
        if n == 0:
            # an earlier change of this frame deleted every byte: nothing to flip, write over
            # or cut; only an insertion means anything (and keeps every range below non-empty)
            junk = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 8)))
            return bytearray(junk), f"{len(junk)} random byte(s) into an emptied frame"
        op = rng.choices(("flip", "byte", "int", "length", "token", "truncate", "insert",
                          "delete", "repeat", "code"), (10, 14, 14, 8, 8, 6, 6, 5, 4, 8))[0]
        if op == "code":
            fields = [f for f in self.fields if f.offset + f.width <= n]
            if fields:
                f = rng.choice(fields)
                value = self._code_value(f)
                data[f.offset:f.offset + f.width] = value.to_bytes(f.width, "big")
                return data, f"{f.name} = 0x{value:0{2 * f.width}x}"
            op = "byte"
        if op == "flip":
            pos = self._pos(n)
            data[pos] ^= 1 << rng.randrange(8)
            return data, f"bit flipped at {pos}"
        if op == "byte":
            pos = self._pos(n)
            data[pos] = rng.choice((0, 1, 2, 0x7F, 0x80, 0xFE, 0xFF, rng.randrange(256)))
            return data, f"byte {pos} = 0x{data[pos]:02x}"
        if op in ("int", "length"):
            width = rng.choice((1, 2, 4, 8)) if op == "int" else rng.choice((4, 4, 2, 1))
            if width > n:
                width = 1
            pos = 0 if op == "length" else self._pos(n - width + 1)
            order = ">" if op == "length" or rng.random() < 0.8 else "<"
            value = self._integer(n, width)
            data[pos:pos + width] = struct.pack(order + _FORMATS[width], value)
            return data, f"{'length' if op == 'length' else 'u' + str(8 * width)} at {pos} = {value}"
        if op == "token" and self.tokens:
            token = rng.choice(self.tokens)
            pos = self._pos(n)
            if rng.random() < 0.5:
                data[pos:pos + len(token)] = token
                return data, f"token {token!r} over {pos}"
            data[pos:pos] = token
            return data, f"token {token!r} inserted at {pos}"
        if op == "truncate" and n > 1:
            cut = rng.randrange(1, n)
            return data[:cut], f"truncated to {cut} of {n} bytes"
        if op == "delete" and n > 1:
            pos = rng.randrange(n)
            k = rng.randint(1, min(8, n - pos))
            del data[pos:pos + k]
            return data, f"{k} byte(s) deleted at {pos}"
        if op == "repeat" and n > 1:
            pos = rng.randrange(n)
            k = rng.randint(1, min(16, n - pos))
            times = rng.choice((2, 16, 256, 4096))
            data[pos:pos] = data[pos:pos + k] * times
            return data, f"{k} byte(s) at {pos} repeated {times}x"
        pos = rng.randrange(n + 1)
        junk = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 8)))
        data[pos:pos] = junk
        return data, f"{len(junk)} random byte(s) inserted at {pos}"

    # -- a session -------------------------------------------------------------------------

    def mutate(self, frames: tuple[bytes, ...], pool: list[tuple[bytes, ...]]) -> tuple[list[bytes], int, str]:
        """A case from ``frames``: (frames to send, index of the changed frame or -1, what
        was done). ``pool``: other sessions, for frames out of their place."""
        rng = self.rng
        frames = list(frames)
        k = rng.randrange(len(frames) + 1) if frames else 0
        keep_rest = rng.random() < 0.5
        rest = frames[k + 1:] if keep_rest else []
        op = rng.choices(("frame", "splice", "drop", "repeat", "swap", "junk"), (60, 12, 6, 6, 6, 10))[0]
        if op == "frame" and k < len(frames):
            changed, what = self.mutate_frame(frames[k])
            return frames[:k] + [changed] + rest, k, f"frame #{k}: {what}"
        if op == "splice" and pool:
            other = rng.choice(pool)
            if other:
                frame = rng.choice(other)
                after = frames[k:] if keep_rest else []
                return frames[:k] + [frame] + after, k, f"a frame of another session inserted at #{k}"
        if op == "drop" and k < len(frames):
            return frames[:k] + frames[k + 1:], -1, f"frame #{k} dropped"
        if op == "repeat" and k < len(frames):
            return frames[:k + 1] + [frames[k]] * rng.choice((1, 2, 50)) + rest, k, f"frame #{k} repeated"
        if op == "swap" and k + 1 < len(frames):
            return frames[:k] + [frames[k + 1], frames[k]] + frames[k + 2:], k, f"frames #{k} and #{k + 1} swapped"
        junk = bytes(rng.getrandbits(8) for _ in range(rng.choice((1, 4, 9, 64))))
        return frames[:k] + [junk], k, f"{len(junk)} random byte(s) after frame #{k - 1}"

    def writes(self, total: int) -> list[int]:
        """How ``total`` bytes go out: whole (most cases), random pieces, or byte by byte."""
        r = self.rng.random()
        if total <= 1 or r < 0.7:
            return [total]
        if r < 0.95 or total > 4096:
            sizes, left = [], total
            while left:
                size = min(left, self.rng.randint(1, 64))
                sizes.append(size)
                left -= size
            return sizes
        return [1] * total
