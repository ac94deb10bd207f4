"""Boundaries of every length field and list, in both directions ("Frame Format", "Binary
Protocol Structure"; SPEC_NOTES for the real server's body limit).

Fields, what the suite already covered (before this module) and what is added here:

- frame ``body length`` (u32). Before: 0 and 1 drop the connection, 1,048,577 and 2^32 - 1
  refused from the header (test_framing.py). Added: bodies of 255/256 and 65535/65536 bytes
  (a Ping whose id fills them; the Pong carries the id back, so the target writes them too),
  and a body of exactly the maximum (1,048,576 by default, the profile's limit) accepted.
- ``id`` (u16 length). Before: empty (refused), 1, 8 and 300 bytes, multi-byte UTF-8 echoed
  by Pong (test_connection.py). Added: 255, 256 and 65535 bytes (the limit) echoed.
- ``queue`` (u16 length). Before: absent (refused), ~30-byte names both ways. Added: 255,
  256, 257 and 65535 bytes: created, subscribed, published and delivered back with the name,
  or, where the target limits names (the document sets no bound; the real server allows 256),
  refused with Error INVALID_MESSAGE and nothing else. Also the Error for a
  missing queue of the longest name the real server takes: its text (which names the queue
  there) no longer fits a one-byte length.
- ``payload`` (u32 length). Before: JSON values of a few bytes both ways, a 4,000-byte one
  compressed. Added: payloads of 1, 255, 256, 65535 and 65536 bytes published and delivered.
- ``headers`` (u16 count + pairs). Before: count 0 (most messages), 1 (Connect) and 3
  (delivered, test_pubsub.py). Added: counts 255, 256 and 65535 (the limit), and values of
  255, 256 and 65535 bytes, delivered to a subscriber, or refused with INVALID_MESSAGE where
  the target limits them (the real server: 50 headers, values of 4,096 characters).
- ``errorCode``/``errorMessage`` (u16 length): written by the target only; covered above by
  the Error for a long queue name, and by every error test for short ones.
- ListQueues' payload (a JSON list): several entries before (test_queues.py); none or one
  cannot be made on a target other clients share.
"""
import pytest

from wirecheck.conformance.target.connection import TargetClosed, TargetError
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import CommandType as T

LIMIT_REFUSAL = "INVALID_MESSAGE"          # "Invalid message format": a field the target will not take


def _ping_id_for_body(vibe, body_length: int) -> str:
    """An id making a Ping's body exactly ``body_length`` bytes in the profile's layout."""
    overhead = len(codec.encode_body(Message(T.PING, "x"), vibe.reading)) - 1
    return "b" * (body_length - overhead)


@pytest.mark.requirement("VIBE-PING-001", "VIBE-MSG-001", "VIBE-FRAME-001")
@pytest.mark.parametrize("field,length", [("id", 255), ("id", 256), ("id", 65535),
                                          ("body", 255), ("body", 256), ("body", 65535), ("body", 65536)])
def test_id_and_body_length_both_ways(vibe, field, length):
    """The id's u16 and the frame's u32 at a byte's edge, and the id at its limit: the Pong
    carries the same id, so its body has the same length (the reading's layout)."""
    conn = vibe.connect()
    pid = "i" * length if field == "id" else _ping_id_for_body(vibe, length)
    ping = Message(T.PING, pid)
    if field == "body":
        assert len(codec.encode_body(ping, vibe.reading)) == length
    conn.send(ping)
    pong = vibe.expect(conn, T.PONG, f"the Pong of a Ping with a {len(pid)}-byte id")
    assert pong.id == pid, f"the Pong's id has {len(pong.id or '')} bytes, the Ping's {len(pid)}"


@pytest.mark.requirement("VIBE-FRAME-005", "VIBE-PUB-001")
def test_body_of_exactly_the_maximum_is_accepted(vibe):
    limit = int(vibe.profile.limits.get("max_frame_size", 1_048_576))
    conn = vibe.connect()
    q = vibe.create_queue(conn)
    mid = vibe.new_id("max")
    empty = len(codec.encode_body(Message(T.PUBLISH, mid, q, ""), vibe.reading))
    message = Message(T.PUBLISH, mid, q, "m" * (limit - empty))
    assert len(codec.encode_body(message, vibe.reading)) == limit
    conn.send(message)
    vibe.expect(conn, T.PUBLISH_ACK, f"the PublishAck of a {limit}-byte body (the maximum)", id=mid)


def _pair(vibe, queue=None):
    sub = vibe.connect(name="subscriber")
    q = vibe.create_queue(sub, queue)
    vibe.subscribe(sub, q)
    return sub, q, vibe.connect(name="publisher")


@pytest.mark.requirement("VIBE-MSG-001", "VIBE-MSG-002", "VIBE-DEL-001")
@pytest.mark.parametrize("length", [1, 255, 256, 65535, 65536])
def test_payload_length_both_ways(vibe, length):
    """The payload's u32 across a byte's edge (a JSON string of that many bytes; "1" for one)."""
    sub, q, pub = _pair(vibe)
    payload = 1 if length == 1 else "p" * (length - 2)
    assert len(codec.strict_json.dumps(payload).encode()) == length
    mid = vibe.publish(pub, q, payload)
    deliver = vibe.expect(sub, T.DELIVER, f"the Deliver of a {length}-byte payload")
    assert (deliver.id, deliver.payload) == (mid, payload), \
        f"delivered {len(str(deliver.payload))} characters, published {length} bytes"


def _answer_or_refusal(vibe, conn, kind: int, what: str) -> Message | None:
    """The answer of type ``kind``, or None for the refusal the document allows a target that
    limits the field (Error INVALID_MESSAGE, "Invalid message format"), after which nothing
    else may come but the barrier's Pong (or the end of the connection)."""
    answer = vibe.recv(conn, f"{T(kind).name} or Error {LIMIT_REFUSAL} ({what})")
    if answer.type == T.ERROR and answer.error_code == LIMIT_REFUSAL:
        try:
            vibe.barrier(conn, f"the refusal of {what}")
        except TargetClosed:
            pass              # the connection may end after the refusal (VIBE-MSG-005)
        return None
    if answer.type != kind:
        raise TargetError(f"expected {T(kind).name} or Error {LIMIT_REFUSAL} for {what}, got "
                          f"{codec.frame_to_dict(answer)}")
    return answer


@pytest.mark.requirement("VIBE-MSG-001", "VIBE-DEL-001", "VIBE-SUB-001")
@pytest.mark.parametrize("length", [255, 256, 257, 65535])
def test_queue_name_length_both_ways(vibe, length):
    base = vibe.queue("name")
    name = (base + "n" * length)[:length]
    sub = vibe.connect(name="subscriber")
    sub.send(Message(T.CREATE_QUEUE, vibe.new_id("create"), name))
    if _answer_or_refusal(vibe, sub, T.CREATE_QUEUE, f"a {length}-byte queue name") is None:
        return
    vibe.subscribe(sub, name)
    pub = vibe.connect(name="publisher")
    mid = vibe.publish(pub, name, {"queue": length})
    deliver = vibe.expect(sub, T.DELIVER, f"the Deliver from a {length}-byte queue")
    assert (deliver.id, deliver.queue) == (mid, name), \
        f"delivered from a {len(deliver.queue or '')}-byte queue name, published to {length}"


@pytest.mark.requirement("VIBE-ERR-002", "VIBE-QUEUE-004", "VIBE-ERR-001")
def test_error_for_the_longest_queue_name(vibe):
    """QueueInfo of a missing queue named with 256 bytes (the longest the real server takes):
    QUEUE_NOT_FOUND, whose text, where it names the queue, needs a two-byte length's room."""
    conn = vibe.connect()
    base = vibe.queue("missing")
    name = (base + "m" * 256)[:256]
    iid = vibe.new_id("info")
    conn.send(Message(T.QUEUE_INFO, iid, name))
    answer = vibe.recv(conn, "Error QUEUE_NOT_FOUND for a 256-byte queue name")
    if answer.type == T.ERROR and answer.error_code == LIMIT_REFUSAL:
        pass                                 # the target limits names below 256 bytes
    elif vibe.feature("queue_not_found_errors", True):
        assert answer.type == T.ERROR and answer.error_code == "QUEUE_NOT_FOUND", codec.frame_to_dict(answer)
        assert answer.error_message, "an Error carries a message"
    else:                                    # the real server answers without an error
        assert answer.type == T.QUEUE_INFO and answer.id == iid and answer.payload is None, \
            codec.frame_to_dict(answer)
    vibe.barrier(conn, "the answer to QueueInfo")


@pytest.mark.requirement("VIBE-MSG-001", "VIBE-DEL-003")
@pytest.mark.parametrize("count,value_length", [(255, 1), (256, 1), (65535, 0), (1, 255), (1, 256),
                                                (1, 65535)],
                         ids=["255-headers", "256-headers", "65535-headers", "value-255", "value-256",
                              "value-65535"])
def test_header_count_and_value_length_both_ways(vibe, count, value_length):
    """The header count's u16 and a value's u16 at a byte's edge and at their limits: the
    publisher's headers are delivered (VIBE-DEL-003), so the target writes them back."""
    sub, q, pub = _pair(vibe)
    headers = {f"h{i}": "v" * value_length for i in range(count)}
    mid = vibe.new_id("hdr")
    pub.send(Message(T.PUBLISH, mid, q, {"headers": count}, headers))
    if _answer_or_refusal(vibe, pub, T.PUBLISH_ACK, f"{count} headers of {value_length} bytes") is None:
        return
    deliver = vibe.expect(sub, T.DELIVER, f"the Deliver of a message with {count} headers")
    assert deliver.id == mid
    got = {k: v for k, v in (deliver.headers or {}).items() if k in headers}
    # "" reads as absent (SPEC_NOTES: null and "" both encode as length 0).
    expected = {k: (v or None) for k, v in headers.items()}
    assert {k: (v or None) for k, v in got.items()} == expected, \
        f"{len(got)} of the {count} headers delivered" + (
            "" if len(got) != count else f", values of {sorted({len(v or '') for v in got.values()})} bytes")
