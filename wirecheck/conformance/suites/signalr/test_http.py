"""The HTTP transport today's clients use (SPEC_NOTES: negotiate, then a WebSocket). Runs
when the target is a URL (``--target http://HOST:PORT/hub``)."""
import json
import re

import pytest

from wirecheck.conformance.target import websocket
from wirecheck.conformance.target.connection import TargetClosed, TargetError
from wirecheck.reference_impl.signalr.messages import HandshakeRequest, HandshakeResponse

from .conftest import only


def _url(sig) -> str:
    if sig.target.url is None:
        pytest.skip("the target is raw TCP: the HTTP transport is not under test")
    return sig.target.url


@pytest.mark.requirement("SIGR-HTTP-001")
@only("json")
def test_negotiate_version_1(sig):
    answer = websocket.negotiate(_url(sig), sig.target.timeout, 1)
    assert answer.get("negotiateVersion") == 1, json.dumps(answer)
    assert isinstance(answer.get("connectionToken"), str) and answer["connectionToken"]
    assert isinstance(answer.get("connectionId"), str) and answer["connectionId"]
    transports = {t.get("transport"): t.get("transferFormats") for t in answer.get("availableTransports", [])}
    assert "WebSockets" in transports, f"WebSockets not offered: {answer!r}"
    assert {"Text", "Binary"} <= set(transports["WebSockets"] or [])


@pytest.mark.requirement("SIGR-HTTP-002")
@only("json")
def test_negotiate_version_0(sig):
    url = _url(sig)
    answer = websocket.negotiate(url, sig.target.timeout, None)
    assert "connectionToken" not in answer and isinstance(answer.get("connectionId"), str)
    conn = sig.open(url=f"{url}?id={answer['connectionId']}")
    conn.send(HandshakeRequest("json", None if sig.draft else 1))
    if not sig.draft:
        conn.expect(HandshakeResponse, error=None)
    assert sig.call(conn, "Echo", "v0").result == "v0"


@pytest.mark.requirement("SIGR-HTTP-003")
@pytest.mark.parametrize("negotiate", [True, False], ids=["negotiate", "skip-negotiation"])
def test_websocket_with_and_without_negotiate(sig, negotiate):
    _url(sig)
    conn = sig.connect(negotiate=negotiate)
    assert sig.call(conn, "Add", 2, 3).result == 5


def _assert_refused(sig, url: str) -> str:
    """The WebSocket to ``url`` must be refused. A server may refuse the upgrade with an HTTP
    4xx (ASP.NET Core: 404 for an id it never issued, 409 for one in use), or accept it and
    close the WebSocket before any handshake answer (close codes such as 4404/4409, or the TCP
    connection). Either way no handshake may succeed on it. Returns how it was refused."""
    try:
        conn = sig.open(url=url)
    except TargetClosed as exc:
        status = re.search(r"HTTP/1\.[01] (\d{3})", str(exc))
        assert status is None or status.group(1).startswith("4"), f"refused with a server error: {exc}"
        return str(exc)
    conn.send(HandshakeRequest("json", None if sig.draft else 1))
    try:
        if sig.draft:                   # the draft answers no handshake: an invocation shows it open
            answer = sig.call(conn, "Echo", "refused?")
        else:
            answer = conn.recv(expecting="the WebSocket to be closed (a refusal)")
    except TargetClosed:
        return f"upgrade accepted, then closed (close code {conn.close_code})"
    if isinstance(answer, HandshakeResponse) and answer.error is not None:
        return f"handshake refused: {answer.error}"
    raise TargetError(f"the WebSocket to {url} was accepted: it answered {answer!r}",
                      ["HTTP 4xx", "the WebSocket closed", "an error handshake answer"], repr(answer))


@pytest.mark.requirement("SIGR-HTTP-004")
@only("json")
def test_unknown_connection_id_is_refused(sig):
    _assert_refused(sig, f"{_url(sig)}?id=never-issued-{sig.new_id()}")


@pytest.mark.requirement("SIGR-HTTP-004")
@only("json")
def test_connection_token_is_single_use(sig):
    url = _url(sig)
    token = websocket.negotiate(url, sig.target.timeout, 1)["connectionToken"]
    first = sig.open(url=f"{url}?id={token}")
    first.send(HandshakeRequest("json", None if sig.draft else 1))
    if not sig.draft:
        first.expect(HandshakeResponse, error=None)
    _assert_refused(sig, f"{url}?id={token}")


@pytest.mark.requirement("SIGR-HTTP-005")
def test_message_type_matches_the_encoding(sig):
    _url(sig)
    conn = sig.connect()
    assert sig.call(conn, "Echo", "frames").result == "frames"
    kinds = set(conn.data_opcodes[0 if sig.draft else 1:])     # after v1's handshake response
    expected = {websocket.OP_BINARY} if sig.encoding == "messagepack" else {websocket.OP_TEXT}
    assert kinds == expected, f"{sig.encoding}: WebSocket message kinds {kinds}, expected {expected}"

