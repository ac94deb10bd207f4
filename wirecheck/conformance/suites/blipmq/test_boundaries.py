"""Boundaries of every length field, in both directions (blipmq-protocol.md "Frame Layout",
"AUTH", "PUBLISH", "SUBSCRIBE", "NACK").

BlipMQ has no lists; its length fields, what the suite already covered (before this module)
and what is added here:

- frame ``length`` (u32, 9..16 MiB). Before: 0/1/8 and 16 MiB + 1, 2^32 - 1 close the
  connection, 9 (empty payload) and exactly 16 MiB accepted (test_framing.py), the kit's
  direction only. Added: frames whose length crosses a byte (255/256, 65535/65536) published
  and delivered back by POLL, and a 16 MiB delivery (the target writing the limit itself).
- AUTH ``key_len`` (u16). Before: malformed lengths (past the end, trailing byte) and the
  profile's key. Added: keys of 0, 1, 255, 256 and 65535 bytes (the limit) read whole (401
  "invalid API key", not 400 "invalid AUTH payload").
- PUBLISH and SUBSCRIBE ``topic_len`` (u16). Before: 0 (NACK "empty topic"), past the end
  (NACK "invalid ... payload"), topics of ~30 bytes. Added: topics of 1, 255, 256 and 65535
  bytes subscribed, published and delivered back (the target writes the topic_len).
- PUBLISH ``message_bytes`` (the rest of the frame). Before: empty, 5 and 256 bytes both
  ways, 16 MiB - 12 - topic sent. Added with the frame lengths above (both ways).
- NACK ``message_len`` (u16): the target writes it, but the document fixes the texts (all
  under 64 bytes) and the one open text ("durable publish failed: ...") cannot be caused from
  the wire; a one-byte-or-more message is all a suite can see, which every NACK test checks.
"""
import struct
import uuid

import pytest

from wirecheck.conformance.target.connection import TargetError
from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.codec import MAX_FRAME_SIZE, Ack, Auth, Publish

#: type + correlation id + qos + topic_len: the bytes of a PUBLISH frame's length that are
#: neither topic nor message.
PUBLISH_OVERHEAD = 1 + 8 + 1 + 2


def _topic(blip, length: int) -> str:
    """A topic of exactly ``length`` ASCII bytes, unique to the test from 12 bytes on (the
    tail of its random part)."""
    base = blip.topic("edge")
    return (base + "x" * length)[:length] if length >= len(base) else base[-length:]


def _delivered(blip, conn, sub: int, topic: str, message: bytes, tries: int = 16):
    """The delivery of ``message``; deliveries of other messages on the same topic are passed
    over (a topic of a byte or two cannot be unique to one test: another run may use it)."""
    for _ in range(tries):
        got = blip.poll(conn, sub)
        if got is None:
            raise TargetError(f"POLL returned nothing: the {len(message)}-byte message published to a "
                              f"{len(topic)}-byte topic was not delivered")
        frame = got[0]
        if frame.message == message:
            return frame
        if len(topic) >= 12:
            raise TargetError(f"delivered {len(frame.message)} bytes on {len(frame.topic)}-byte topic, "
                              f"not the {len(message)}-byte message published")
    raise TargetError(f"{tries} deliveries of other messages and not the one published")


@pytest.mark.requirement("BLIP-PUB-001", "BLIP-SUB-004", "BLIP-PUB-007", "BLIP-POLL-004")
@pytest.mark.parametrize("length", [1, 2, 255, 256, 65535])
def test_topic_length_both_ways(blip, length):
    """SUBSCRIBE and PUBLISH with a topic_len at the edges of its u16; the delivery (POLL's
    answer) carries the same topic back, so the target writes that topic_len too."""
    conn = blip.connect()
    topic = _topic(blip, length)
    sub = blip.subscribe(conn, topic, 0)
    message = uuid.uuid4().bytes
    blip.publish(conn, topic, message)
    frame = _delivered(blip, conn, sub, topic, message)
    assert frame.topic == topic, f"delivered on a {len(frame.topic)}-byte topic, published on {length}"


def _message_for(topic: str, length: int) -> bytes:
    """A message making a PUBLISH frame's ``length`` field exactly ``length``."""
    size = length - PUBLISH_OVERHEAD - len(topic.encode())
    return bytes(i % 251 for i in range(size))


@pytest.mark.requirement("BLIP-FRAME-001", "BLIP-PUB-001", "BLIP-PUB-007", "BLIP-POLL-004")
@pytest.mark.parametrize("length", [255, 256, 65535, 65536])
def test_frame_length_across_a_byte_both_ways(blip, length):
    conn = blip.connect()
    topic = blip.topic("len")
    sub = blip.subscribe(conn, topic, 0)
    message = _message_for(topic, length)
    frame = codec.encode(Publish(blip.cid(), 0, topic, message))
    assert struct.unpack(">I", frame[:4])[0] == length
    conn.send(frame)
    blip.barrier(conn, f"a PUBLISH of length {length}")
    delivered = _delivered(blip, conn, sub, topic, message)
    # The delivery has the same qos, topic and message: the target wrote a frame of the same length.
    assert (delivered.topic, len(delivered.message)) == (topic, len(message))


@pytest.mark.requirement("BLIP-FRAME-004", "BLIP-PUB-007", "BLIP-POLL-004")
def test_frame_of_exactly_16mib_is_delivered_back(blip):
    """The limit in the target's direction: the delivery of a message published in a 16 MiB
    frame is itself a 16 MiB frame (same topic, same message)."""
    conn = blip.connect()
    topic = blip.topic("max")
    sub = blip.subscribe(conn, topic, 0)
    message = _message_for(topic, MAX_FRAME_SIZE)
    conn.send(Publish(blip.cid(), 0, topic, message))
    blip.barrier(conn, "a 16 MiB PUBLISH")
    delivered = _delivered(blip, conn, sub, topic, message)
    assert len(codec.encode(delivered)) == 4 + MAX_FRAME_SIZE


@pytest.mark.requirement("BLIP-AUTH-004", "BLIP-AUTH-005")
@pytest.mark.parametrize("length", [0, 1, 255, 256, 65535])
def test_api_key_length(blip, length):
    """A key_len at the edges of its u16 is read whole: a key that is not the target's gets
    401 "invalid API key" with the AUTH's correlation id (a misread length would be 400
    "invalid AUTH payload", or a frame out of step)."""
    conn = blip.connect(auth=False)
    key = ("~" if blip.api_key[:1] == "q" else "q") * length
    cid = blip.cid()
    conn.send(Auth(cid, key))
    if key == blip.api_key:                       # the profile's key is empty
        conn.expect(Ack, correlation_id=cid, subscription_id=0)
        return
    blip.expect_nack(conn, cid, 401, "invalid API key")
