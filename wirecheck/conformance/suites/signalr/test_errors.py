"""Protocol errors ("Errors", "Completion Message Encoding") and the v1 servers' readings of
them (SPEC_NOTES). What a protocol error may lead to: the connection is terminated (v1
servers send a Close with the error first), or, where a server can tie it to one call, that
call fails; never a success."""
import pytest

from wirecheck.conformance.target.connection import TargetClosed
from wirecheck.conformance.report.verdicts import unimplemented
from wirecheck.reference_impl.signalr.messages import Close, Completion, Invocation, StreamItem

from .conftest import only, raw_json, raw_msgpack


def _missing_target(sig, iid):
    if sig.encoding == "json":
        return raw_json(f'{{"type":1,"invocationId":"{iid}","arguments":["x"]}}')
    return raw_msgpack([1, iid, False] if sig.draft else [1, {}, iid])


@pytest.mark.requirement("SIGR-ERR-001", "SIGR-ERR-010")
def test_missing_required_field(sig):
    conn = sig.connect()
    iid = sig.new_id()
    conn.send(_missing_target(sig, iid))
    sig.expect_closed_or_error(conn, iid, "an Invocation without its target")


@pytest.mark.requirement("SIGR-ERR-001")
@only("json")
@pytest.mark.parametrize("record", ['{"invocationId":"1","target":"Echo","arguments":["x"]}',
                                    '{"type":1,"invocationId":"1","target":"Echo"}',
                                    '{"type":2,"invocationId":"1"}',
                                    '{"type":5}'])
def test_missing_fields_json(sig, record):
    conn = sig.connect()
    conn.send(raw_json(record))
    sig.expect_closed_or_error(conn, "1", f"missing field in {record}")


@pytest.mark.requirement("SIGR-ERR-002")
def test_unrecognized_field(sig):
    conn = sig.connect()
    call = sig.invocation("Echo", "extra")
    if sig.encoding == "json":
        record = raw_json(f'{{"type":1,"invocationId":"{call.invocation_id}","target":"Echo",'
                          f'"arguments":["extra"],"bogus":1}}')
    elif sig.draft:
        record = raw_msgpack([1, call.invocation_id, False, "Echo", ["extra"], "bogus"])
    else:
        record = None                    # v1 MessagePack has no field names to add
    if sig.draft:
        conn.send(record)
        sig.expect_protocol_error(conn, "an unrecognized field (draft)")
        return
    if record is None:
        unimplemented("unrecognized fields in v1 MessagePack (positions, not names)")
    conn.send(record)
    # v1: unknown fields are ignored (forward compatibility), the call is made.
    conn.expect(Completion, invocation_id=call.invocation_id, result="extra")


@pytest.mark.requirement("SIGR-ERR-003")
@pytest.mark.parametrize("kind", ["completion", "item"])
def test_response_for_an_id_never_invoked(sig, kind):
    conn = sig.connect()
    message = Completion.with_result("never-invoked", 1) if kind == "completion" else StreamItem("never-invoked", 1)
    conn.send(message)
    if sig.draft:
        sig.expect_protocol_error(conn, f"a {type(message).__name__} for an id never invoked")
    else:
        sig.barrier(conn, f"a {type(message).__name__} for an unknown id (v1 ignores it)")


def _server_invocation(sig, conn, method: str, target: str, arg) -> Invocation:
    """The hub invokes the client (``method`` makes it call ``target``). AskMe waits for the
    client's result: a hub without client results (``[features] client_results = false``)
    cannot carry these error tests, which are then UNIMPLEMENTED rather than failures."""
    if method == "AskMe" and not sig.has("client_results"):
        unimplemented("a Completion from the client needs a hub that waits for client results "
                      "(the profile says it has no 'client_results')")
    call = sig.invocation(method, target, arg)
    conn.send(call)
    message = sig.recv(conn, f"the server's Invocation of {target}")
    assert isinstance(message, Invocation) and message.target == target and message.arguments == [arg], \
        f"expected an Invocation of {target}({arg!r}), got {message!r}"
    return message


@pytest.mark.requirement("SIGR-ERR-004")
def test_response_to_a_nonblocking_invocation(sig):
    if not sig.draft:
        unimplemented("v1 non-blocking invocations carry no id a client could answer")
    conn = sig.connect()
    inv = _server_invocation(sig, conn, "CallMe", "Hello", 1)
    assert inv.nonblocking and inv.invocation_id
    done = sig.recv(conn, "CallMe's own Completion")
    assert isinstance(done, Completion), repr(done)
    conn.send(Completion(inv.invocation_id))
    sig.expect_protocol_error(conn, "a Completion for a non-blocking invocation")


@pytest.mark.requirement("SIGR-ERR-005")
def test_completion_after_stream_item(sig):
    """The hub's reaction to a client that answers its AskMe with a StreamItem, then a
    Completion. A hub without client results (the profile's ``client_results`` false) is
    checked on the sentence from its own side instead (it binds both endpoints): a blocking
    Invocation gets its Completion with no StreamItem before it."""
    conn = sig.connect()
    if not sig.has("client_results"):
        sig.call(conn, "Echo", "single")        # asserts no StreamItem before the Completion
        return
    inv = _server_invocation(sig, conn, "AskMe", "Question", 1)
    conn.send(StreamItem(inv.invocation_id, 1), Completion.with_result(inv.invocation_id, 2))
    if sig.draft:
        sig.expect_protocol_error(conn, "a Completion after a StreamItem (draft)")
        return
    # v1: the StreamItem for a single-result call is the breach (a server may close); a
    # server that ignores it takes the Completion's result.
    try:
        message = sig.recv(conn, "AskMe's Completion or a close")
    except TargetClosed:
        return
    if isinstance(message, Close):
        conn.expect_closed(reason="after its Close message")
        return
    assert isinstance(message, Completion) and message.result == 2, repr(message)


@pytest.mark.requirement("SIGR-ERR-006")
@only("json")
def test_completion_with_result_and_error(sig):
    """The message itself is the error, whatever it answers: for the hub's own call where it
    waits for client results, else for an id it never used (a hub without client results can
    still be sent one; ASP.NET Core's reader refuses it before it looks at the id)."""
    conn = sig.connect()
    iid = (_server_invocation(sig, conn, "AskMe", "Question", 1).invocation_id if sig.has("client_results")
           else "never-invoked")
    conn.send(raw_json(f'{{"type":3,"invocationId":"{iid}","result":1,"error":"x"}}'))
    sig.expect_protocol_error(conn, "a Completion with both result and error")


@pytest.mark.requirement("SIGR-ERR-007")
def test_invocation_id_reuse(sig):
    conn = sig.connect()
    if sig.draft:
        first = sig.invocation("Echo", "one")
        conn.send(first)
        conn.expect(Completion, invocation_id=first.invocation_id, result="one")
        conn.send(Invocation("Echo", ["two"], first.invocation_id))
        sig.expect_protocol_error(conn, "an Invocation ID used twice by the client (draft)")
        return
    # v1 (ASP.NET Core's dispatcher): a stream started with an id still in use is refused (a
    # plain Invocation with one is run: the check is made when a stream starts)
    stream = sig.stream_request("Endless", 50)
    conn.send(stream)
    conn.send(sig.stream_request("Endless", 1, invocation_id=stream.invocation_id))
    while True:
        message = sig.recv(conn, "an error for the id in use")
        if isinstance(message, StreamItem):
            continue
        assert isinstance(message, Completion) and message.invocation_id == stream.invocation_id \
            and message.error, f"a stream started with an id still in use must be refused, got {message!r}"
        break
    # v1: once an id is finished it may be used again.
    first = sig.invocation("Echo", "again")
    conn.send(first)
    conn.send(Invocation("Echo", ["again 2"], first.invocation_id))
    results = []
    while len(results) < 2:
        message = sig.recv(conn, "the Completions of a reused id")
        if isinstance(message, StreamItem):
            continue
        if isinstance(message, Completion) and message.invocation_id == first.invocation_id:
            results.append(message.result if message.error is None else message.error)
    assert results[0] == "again"


@pytest.mark.requirement("SIGR-ERR-008")
def test_the_other_endpoints_id_may_be_used(sig):
    conn = sig.connect()
    inv = _server_invocation(sig, conn, "AskMe", "Question", 7)
    conn.send(Completion.with_result(inv.invocation_id, 8))
    message = sig.recv(conn, "AskMe's Completion")
    assert isinstance(message, Completion) and message.result == 8, repr(message)
    conn.send(Invocation("Echo", ["mine too"], inv.invocation_id))
    conn.expect(Completion, invocation_id=inv.invocation_id, result="mine too")


@pytest.mark.requirement("SIGR-ERR-009")
def test_message_after_completion(sig):
    """A message for an invocation after the hub received its Completion: a second Completion
    of the client's answer to AskMe; a hub without client results receives the Completion that
    ends a client-to-server stream instead (v1 ``client_streams``), then a StreamItem for it."""
    conn = sig.connect()
    if not sig.has("client_results"):
        if sig.draft or not sig.has("client_streams"):
            unimplemented("a Completion the hub receives needs client results or client-to-server "
                          "streams (the profile has neither)")
        iid, sid = sig.new_id(), sig.new_id()
        conn.send(Invocation("Sum", [], iid, stream_ids=[sid]), StreamItem(sid, 2), Completion(sid))
        conn.expect(Completion, invocation_id=iid, result=2)
        conn.send(StreamItem(sid, 3))
        sig.barrier(conn, "a StreamItem for a finished client stream (v1 ignores it)")
        return
    inv = _server_invocation(sig, conn, "AskMe", "Question", 1)
    conn.send(Completion.with_result(inv.invocation_id, 1))
    assert isinstance(sig.recv(conn, "AskMe's Completion"), Completion)
    conn.send(Completion.with_result(inv.invocation_id, 2))
    if sig.draft:
        sig.expect_protocol_error(conn, "a second Completion for the same invocation (draft)")
    else:
        sig.barrier(conn, "a second Completion (v1 ignores it)")


@pytest.mark.requirement("SIGR-ERR-011")
@pytest.mark.parametrize("case", ["syntax", "utf8", "wrong-type", "not-an-object"])
def test_invalid_messages(sig, case):
    conn = sig.connect()
    if sig.encoding == "json":
        record = {"syntax": b'{"type":1,\x1e', "utf8": b'{"type":1,"target":"\xff"}\x1e',
                  "wrong-type": raw_json('{"type":1,"invocationId":"w","target":7,"arguments":[]}'),
                  "not-an-object": raw_json("[1,2,3]")}[case]
    else:
        record = {"syntax": b"\x01\xc1", "utf8": b"\x03\x91\xa1\xff",
                  "wrong-type": raw_msgpack([1, "w", False, 7, []] if sig.draft else [1, {}, "w", 7, []]),
                  "not-an-object": raw_msgpack({"type": 1})}[case]
    conn.send(record)
    sig.expect_closed_or_error(conn, "w", f"an invalid message ({case})")


@pytest.mark.requirement("SIGR-JSON-001")
@only("json")
@pytest.mark.parametrize("record", ['{"Type":1,"invocationId":"c","target":"Echo","arguments":["x"]}',
                                    '{"type":1,"InvocationId":"c","Target":"Echo","Arguments":["x"]}'])
def test_property_names_are_case_sensitive(sig, record):
    conn = sig.connect()
    conn.send(raw_json(record))
    # "Type" is not "type": the message lacks its type (or its target): a protocol error.
    sig.expect_closed_or_error(conn, "c", "property names are case-sensitive")
