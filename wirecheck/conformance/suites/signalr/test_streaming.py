"""Streaming ("Streaming", "Streamed Result", "Streamed Result with Error", "Streamed Result
closed early"; v1's StreamInvocation and client-to-server streams from SPEC_NOTES)."""
import pytest

from wirecheck.conformance.target.connection import pace
from wirecheck.conformance.report.verdicts import unimplemented
from wirecheck.reference_impl.signalr.messages import (CancelInvocation, Completion, Invocation,
                                             StreamCompletion, StreamInvocation, StreamItem)


#: Items of a cancelled stream still accepted before the barrier's answer: those on their way
#: when the CancelInvocation arrived. At the Endless stream's 5 ms pace, 1,000 are 5 s of
#: streaming: a target still streaming then has not stopped, and the test ends there rather
#: than reading it until the test's time runs out.
MAX_ITEMS_AFTER_CANCEL = 1000


def _stream(sig, conn, target, *args):
    request = sig.stream_request(target, *args)
    conn.send(request)
    iid = request.invocation_id
    got = sig.collect(conn, iid, end=lambda m: not isinstance(m, StreamItem))
    items = [m.item for m in got[:-1]]
    assert all(isinstance(m, StreamItem) for m in got[:-1])
    return items, got[-1], iid


@pytest.mark.requirement("SIGR-STR-001", "SIGR-STR-002")
def test_stream_items_then_end(sig):
    conn = sig.connect()
    items, end, iid = _stream(sig, conn, "Counter", 5, 0)
    assert items == [0, 1, 2, 3, 4], "each result in its own StreamItem, in order"
    assert sig.is_stream_end(end, iid), f"the stream must end with its end message, got {end!r}"
    assert end.error is None
    if isinstance(end, Completion):
        assert not end.has_result, "a stream's Completion must not carry the last result"
    sig.barrier(conn, "the end of the stream")


@pytest.mark.requirement("SIGR-STR-001")
def test_stream_with_interval(sig):
    conn = sig.connect()
    items, end, iid = _stream(sig, conn, "Counter", 3, 20)
    assert items == [0, 1, 2] and sig.is_stream_end(end, iid) and end.error is None


@pytest.mark.requirement("SIGR-STR-008")
def test_empty_stream_ends_at_once(sig):
    conn = sig.connect()
    items, end, iid = _stream(sig, conn, "Counter", 0, 0)
    assert items == [] and sig.is_stream_end(end, iid) and end.error is None


@pytest.mark.requirement("SIGR-STR-003")
def test_stream_failure_after_items(sig):
    conn = sig.connect()
    items, end, iid = _stream(sig, conn, "StreamFailure", 3)
    assert items == [0, 1, 2], "results produced before the error are sent"
    assert sig.is_stream_end(end, iid) and isinstance(end.error, str) and end.error
    if isinstance(end, Completion):
        assert not end.has_result


@pytest.mark.requirement("SIGR-STR-004")
def test_cancel_stops_the_stream(sig):
    conn = sig.connect()
    request = sig.stream_request("Endless", 5)
    iid = request.invocation_id
    conn.send(request)
    for _ in range(2):
        message = sig.recv(conn, "items of the endless stream")
        assert isinstance(message, StreamItem) and message.invocation_id == iid, repr(message)
    conn.send(CancelInvocation(iid))
    # Items already on their way may still arrive ("can be ignored"), then the first barrier.
    token = sig.invocation("Echo", "after cancel")
    conn.send(token)
    late_items = 0
    while True:
        message = sig.recv(conn, "the barrier after CancelInvocation")
        if isinstance(message, StreamItem) and message.invocation_id == iid:
            late_items += 1
            assert late_items <= MAX_ITEMS_AFTER_CANCEL, (
                f"{late_items} StreamItems after CancelInvocation and no answer to the barrier "
                f"invocation yet: the stream was not stopped")
            continue
        if isinstance(message, (Completion, StreamCompletion)) and message.invocation_id == iid:
            continue                        # a server may confirm the end of the stream
        assert isinstance(message, Completion) and message.invocation_id == token.invocation_id, repr(message)
        break
    pace(0.05)                              # ten more intervals of the stream
    sig.barrier(conn, "the cancelled stream (no item may follow the first barrier)")


@pytest.mark.requirement("SIGR-STR-009")
def test_cancel_of_unknown_id_is_ignored(sig):
    conn = sig.connect()
    conn.send(CancelInvocation("never-started"))
    sig.barrier(conn, "a CancelInvocation for an unknown id")


@pytest.mark.requirement("SIGR-STR-007")
def test_stream_invocation_type_4(sig):
    if sig.draft or not sig.has("stream_invocation"):
        unimplemented("StreamInvocation (v1; the draft streams from a plain Invocation; the profile's "
                      "stream_invocation)")
    conn = sig.connect()
    iid = sig.new_id()
    conn.send(StreamInvocation(iid, "Counter", [2, 0]))
    got = sig.collect(conn, iid)
    assert [type(m).__name__ for m in got] == ["StreamItem", "StreamItem", "Completion"]


@pytest.mark.requirement("SIGR-STR-005")
def test_streaming_and_single_result_methods_need_their_own_call(sig):
    if sig.draft or not sig.has("stream_invocation"):
        unimplemented("StreamInvocation (v1; the profile's stream_invocation)")
    conn = sig.connect()
    done = sig.call(conn, "Counter", 2, 0)
    assert done.error and not done.has_result, f"Counter by Invocation must fail, got {done!r}"
    iid = sig.new_id()
    conn.send(StreamInvocation(iid, "Add", [1, 2]))
    got = sig.collect(conn, iid)
    assert len(got) == 1 and got[0].error, f"Add by StreamInvocation must fail, got {got!r}"
    sig.barrier(conn, "two mismatched calls")


@pytest.mark.requirement("SIGR-STR-006")
@pytest.mark.parametrize("split", [False, True])
def test_client_to_server_stream(sig, split):
    if sig.draft or not sig.has("client_streams"):
        unimplemented("client-to-server streams (v1 streamIds; the profile's client_streams)")
    conn = sig.connect()
    iid, sid = sig.new_id(), sig.new_id()
    messages = [Invocation("Sum", [], iid, stream_ids=[sid])]
    messages += [StreamItem(sid, n) for n in (1, 2, 3, 4)]
    messages.append(Completion(sid))
    if split:
        for m in messages:
            conn.send(m)
    else:
        conn.send(*messages)
    conn.expect(Completion, invocation_id=iid, result=10)
    sig.barrier(conn, "the Sum")
