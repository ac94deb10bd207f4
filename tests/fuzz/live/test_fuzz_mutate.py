"""The network fuzzer's mutator (wirecheck/fuzz/live/mutate.py) on the short frames that broke it: a
deletion can empty a frame of 8 bytes or less, and the next change of the same frame then
picked a position in nothing (``ValueError: empty range for randrange()``, which took a
campaign against a real BlipMQ daemon down after two minutes)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from wirecheck.fuzz.live import code_fields
from wirecheck.fuzz.live.mutate import Mutator, load_dictionary

DICTIONARY = Path(__file__).resolve().parents[3] / "wirecheck" / "fuzz" / "dictionaries" / "blipmq.dict"


def test_short_frames_mutate_100000_times_without_an_error():
    rng = random.Random(20240611)
    mutator = Mutator(rng, load_dictionary(DICTIONARY), code_fields.of_protocol("vibemq"))
    emptied = 0
    for i in range(100_000):
        frame = rng.randbytes(1 + i % 16)             # 1 to 16 bytes, every length as often
        changed, how = mutator.mutate_frame(frame)
        assert isinstance(changed, bytes) and how, (frame, how)
        emptied += "emptied frame" in how
    # the path that used to raise was really taken, many times
    assert emptied > 50, emptied


def test_short_sessions_mutate_and_write_without_an_error():
    rng = random.Random(7)
    mutator = Mutator(rng, load_dictionary(DICTIONARY))
    pool = [tuple(rng.randbytes(1 + rng.randrange(16)) for _ in range(rng.randrange(4))) for _ in range(50)]
    for _ in range(20_000):
        session = rng.choice(pool)
        frames, changed, how = mutator.mutate(session, pool)
        assert all(isinstance(f, bytes) for f in frames) and -1 <= changed <= len(session), how
        total = sum(map(len, frames))
        writes = mutator.writes(total)
        assert sum(writes) == total and all(w >= 0 for w in writes)


def test_emptied_frame_gets_bytes_back():
    # a frame deleted down to nothing by the first change: the second inserts, never indexes
    mutator = Mutator(random.Random(1))
    data, how = mutator._one(bytearray())
    assert 1 <= len(data) <= 8 and "emptied frame" in how
    assert mutator._pos(0) == 0


@pytest.mark.parametrize("protocol", ["blipmq", "vibemq", "micromessage2", "rabbitmq-stream"])
def test_every_undefined_code_is_written_within_a_few_thousand_cases(protocol):
    """A server that dies on one type byte it does not know (0xEE, say): a random byte finds it
    about once in millions of cases, the code-field walk within a round of each field (a
    planted BlipMQ server dying 0.3 s after type 0xEE was not found in a ten-minute campaign)."""
    fields = code_fields.of_protocol(protocol)
    assert fields
    mutator = Mutator(random.Random(3), (), fields)
    frame = bytes(range(1, 33))                     # long enough for every field
    written: dict[str, set[int]] = {f.name: set() for f in fields}
    for _ in range(4000 * len(fields) * max(1, max(len(f.unknown()) for f in fields) // 256)):
        _, how = mutator.mutate_frame(frame)
        for change in how.split(", "):
            for f in fields:
                if change.startswith(f.name + " = "):
                    written[f.name].add(int(change.split(" = ")[1], 16))
    for f in fields:
        assert set(f.unknown()) <= written[f.name], (f.name, sorted(set(f.unknown()) - written[f.name])[:10])
        assert not set(f.unknown()) & f.known


def test_the_known_codes_are_the_documents():
    blipmq, = code_fields.of_protocol("blipmq")
    assert blipmq.offset == 4 and 0xEE in blipmq.unknown() and 0x03 not in blipmq.unknown()
    key, version = code_fields.of_protocol("rabbitmq-stream")
    assert 0x8002 in key.unknown() and 0x0002 not in key.unknown() and 0x0042 in key.unknown()
    assert code_fields.of_protocol("signalr") == ()
