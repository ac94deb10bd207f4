"""The frame-aware scenario machinery (wirecheck/conformance/clients/scripted/__init__.py) without a network: a
splitter gives the same whole frames whatever the chunking, gives up (passes bytes on as they
come) on a size it cannot hold, and a scenario that fails on a frame passes it on unchanged
instead of killing the connection."""
from __future__ import annotations

import random
import struct

from wirecheck.conformance.clients.scripted import CLIENT_HELD_FRAME, FrameShaper, LengthPrefixed


class FourByteSize(LengthPrefixed):
    header = 4

    def total(self, header: bytes) -> int:
        return 4 + struct.unpack(">I", header)[0]


def frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


FRAMES = [frame(bytes([i]) * (i * 7 % 50)) for i in range(40)]
STREAM = b"".join(FRAMES)


def test_whole_bytewise_and_random_chunks_give_the_same_frames():
    whole = FourByteSize().feed(STREAM)
    assert whole == FRAMES
    s = FourByteSize()
    assert [f for i in range(len(STREAM)) for f in s.feed(STREAM[i:i + 1])] == FRAMES
    rng = random.Random(7)
    for _ in range(20):
        s, out, at = FourByteSize(), [], 0
        while at < len(STREAM):
            n = rng.randint(1, 60)
            out += s.feed(STREAM[at:at + n])
            at += n
        assert out == FRAMES and s.rest() == b""


def test_an_incomplete_frame_is_held_and_given_back_at_the_end():
    s = FourByteSize()
    assert s.feed(FRAMES[3] + FRAMES[4][:3]) == [FRAMES[3]]
    assert s.rest() == FRAMES[4][:3]


def test_an_oversized_frame_turns_the_splitter_into_a_pass_through():
    s = FourByteSize()
    s.limit = 100
    big = struct.pack(">I", 500) + b"x" * 10
    assert s.feed(FRAMES[1] + big) == [FRAMES[1], big]
    assert s.raw
    assert s.feed(b"anything") == [b"anything"]          # as it comes from now on


class FakeRelay:
    finished = False

    def __init__(self) -> None:
        self.out: list = []

    def deliver(self, direction, data, onward=True):
        self.out.append((direction, data, onward))

    def deliver_eof(self, direction):
        self.out.append((direction, None, True))


class Failing(FrameShaper):
    name = "failing"

    def make_splitter(self, direction):
        return FourByteSize()

    def server_frame(self, data: bytes) -> None:
        if data == FRAMES[2]:
            raise RuntimeError("a scenario bug")
        self.send(data)


def test_a_failing_scenario_passes_the_frame_on_and_notes_it():
    relay = FakeRelay()
    shaper = Failing(relay, {})
    shaper.data(FRAMES[1] + FRAMES[2] + FRAMES[3][:2])
    shaper.data(FRAMES[3][2:])
    shaper.eof()
    assert [d for _, d, _ in relay.out] == [FRAMES[1], FRAMES[2], FRAMES[3], None]
    assert any("scenario error: RuntimeError" in what for _, what in shaper.log)
    assert shaper.up.limit == CLIENT_HELD_FRAME


def test_held_client_frames_are_recorded_not_passed_on():
    relay = FakeRelay()
    shaper = Failing(relay, {})
    shaper.hold(FRAMES[5])
    shaper.client_data(FRAMES[6])
    assert relay.out == [("c2s", FRAMES[5], False), ("c2s", FRAMES[6], True)]
