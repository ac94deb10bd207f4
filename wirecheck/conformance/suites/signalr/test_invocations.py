"""Invocations, results and errors ("Invocations", "Non-Blocking Invocations", "Completion and
results", "Errors", and the examples Add / SingleResultFailure / Batched / NonBlocking)."""
import pytest

from wirecheck.conformance.target.connection import TargetClosed
from wirecheck.conformance.report.verdicts import informational
from wirecheck.reference_impl.signalr.messages import Completion, Invocation, StreamItem


@pytest.mark.requirement("SIGR-INV-001")
@pytest.mark.parametrize("iid", ["0", "xyz", "42", "id with spaces", "ид-✓-日本", "x" * 200])
def test_responses_carry_the_callers_id(sig, iid):
    conn = sig.connect()
    conn.send(Invocation("Echo", ["hello"], iid))
    conn.expect(Completion, invocation_id=iid, result="hello")


@pytest.mark.requirement("SIGR-INV-009")
@pytest.mark.parametrize("name", ["Echo2", "NoSuchMethod"])
def test_unknown_methods_fail(sig, name):
    conn = sig.connect()
    done = sig.call(conn, name, "x")
    assert done.error, f"{name!r} is not a method of the hub: expected an error Completion, got {done!r}"
    assert not done.has_result
    sig.barrier(conn, "an unknown method")


@pytest.mark.requirement("SIGR-INV-002")
@pytest.mark.parametrize("name", ["echo", "ECHO"])
def test_target_is_case_sensitive(sig, name):
    """The document: "Target is case-sensitive". Today's protocol (v1) reads it otherwise: ASP.NET
    Core's hub dispatcher looks the Target up ignoring case, so where the profile says
    ``target_case_ignored`` what the hub did is reported (INFORMATIONAL), not judged."""
    conn = sig.connect()
    done = sig.call(conn, name, "x")
    sig.barrier(conn, f"the invocation of {name!r}")
    if sig.has("target_case_ignored"):
        did = (f"refused it ({done.error!r})" if done.error else
               f"dispatched it to Echo (result {done.result!r})" if done.has_result else f"answered {done!r}")
        informational(f"{name!r} differs from Echo in case only: the hub {did}; the v1 profile takes either "
                      "(ASP.NET Core matches the Target without case)")
    assert done.error, f"{name!r} differs from Echo in case only: expected an error Completion, got {done!r}"
    assert not done.has_result


@pytest.mark.requirement("SIGR-INV-003")
def test_single_result_in_one_completion(sig):
    conn = sig.connect()
    done = sig.call(conn, "Add", 40, 2)           # raises if a StreamItem comes first
    assert (done.has_result, done.result, done.error) == (True, 42, None)
    sig.barrier(conn, "the Completion of Add")


@pytest.mark.requirement("SIGR-INV-004")
def test_void_method_completes_without_result(sig):
    conn = sig.connect()
    done = sig.call(conn, "Nothing")
    assert not done.has_result and done.error is None, f"void Completion expected, got {done!r}"


@pytest.mark.requirement("SIGR-INV-005")
def test_failure_completes_with_error_and_no_result(sig):
    conn = sig.connect()
    done = sig.call(conn, "Fail", "It didn't work!")
    assert isinstance(done.error, str) and done.error
    assert not done.has_result
    sig.barrier(conn, "an error Completion")


@pytest.mark.requirement("SIGR-INV-006")
def test_batched_results_in_one_completion(sig):
    conn = sig.connect()
    assert sig.call(conn, "Batched", 5).result == [0, 1, 2, 3, 4]


@pytest.mark.requirement("SIGR-INV-007")
@pytest.mark.parametrize("method,args", [("Echo", ["quiet"]), ("Fail", ["quiet failure"]),
                                         ("NoSuchMethod", [])])
def test_nonblocking_invocation_gets_nothing_back(sig, method, args):
    conn = sig.connect()
    conn.send(sig.nonblocking(method, *args))
    sig.barrier(conn, f"a non-blocking {method}")


@pytest.mark.requirement("SIGR-INV-008", "SIGR-INV-007")
def test_nonblocking_invocation_is_dispatched(sig):
    conn = sig.connect()
    conn.send(sig.nonblocking("Remember", "fire-and-forget"))
    assert sig.call(conn, "Recall").result == "fire-and-forget"


@pytest.mark.requirement("SIGR-INV-010")
def test_very_long_invocation_id(sig):
    conn = sig.connect()
    iid = "L" * 4096
    conn.send(Invocation("Echo", ["long"], iid))
    try:
        done = sig.recv(conn, "a Completion with the long id, or a close")
    except TargetClosed:
        return                                   # the MAY: terminate on a too-long id
    assert isinstance(done, Completion) and done.invocation_id == iid and done.result == "long"


@pytest.mark.requirement("SIGR-INV-011")
@pytest.mark.parametrize("args", [[1], [1, 2, 3], ["a", 2], [1.5, 2], [None, 1]])
def test_wrong_arguments_complete_with_error(sig, args):
    conn = sig.connect()
    done = sig.call(conn, "Add", *args)
    assert done.error and not done.has_result, f"Add{tuple(args)} must fail, got {done!r}"
    sig.barrier(conn, "a binding failure")


@pytest.mark.requirement("SIGR-INV-012", "SIGR-INV-001")
def test_pipelined_invocations_each_complete(sig):
    conn = sig.connect()
    calls = [sig.invocation("Echo", "a"), sig.invocation("Add", 1, 2), sig.invocation("Batched", 2),
             sig.invocation("Echo", "b")]
    conn.send(*calls)
    expected = {calls[0].invocation_id: "a", calls[1].invocation_id: 3,
                calls[2].invocation_id: [0, 1], calls[3].invocation_id: "b"}
    got = {}
    while len(got) < len(calls):
        message = sig.recv(conn, "the Completions of four pipelined calls")
        assert isinstance(message, Completion) and message.invocation_id in expected, repr(message)
        assert message.invocation_id not in got, f"two Completions for {message.invocation_id!r}"
        got[message.invocation_id] = message.result
    assert got == expected
    assert not any(isinstance(m, StreamItem) for m in got.values())
