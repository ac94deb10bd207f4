"""RabbitMQ Stream's protocol-level scenarios (wirecheck/conformance/clients/scripted/rabbitmq_stream.py): the
reference client under each one copes (it sees what the scenario sent and goes on), and the
checker finds no violation by either side: the injected frames are legal server behaviour, and
the client's answers are right.
"""
from __future__ import annotations

import sys
import asyncio

import pytest

from wirecheck.conformance.clients.scripted import scenarios_for
from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.constants import Code, Key, OffsetType
from tests.conformance.clients.test_client_check import STEP, _check, _checker, _cope, _run_async, _summary

STREAM = "cc-stream"


async def _connect(checker, **kw):
    from wirecheck.reference_impl.rabbitmq_stream.client import StreamClient
    client = await StreamClient.connect("127.0.0.1", checker.port, timeout=STEP, handshake=False, **kw)
    opened = await client.handshake("guest", "guest")
    return client, opened


async def _publish_and_consume(client) -> dict:
    assert (await client.declare_publisher(1, STREAM)).code == Code.OK
    client.publish(1, [(1, b"first")])
    confirms = await client.wait_confirms(1, [1], STEP)
    return {"confirms": confirms}


async def heartbeat(checker) -> dict:
    client, _ = await _connect(checker)
    try:
        assert (await client.create(STREAM)).code == Code.OK
        out = await _publish_and_consume(client)
        await asyncio.sleep(1.0)          # several heartbeats arrive, between answers and after
        out["heartbeats"] = client.heartbeats_received
        out["close"] = (await client.close_connection()).code
        return out
    finally:
        await asyncio.wait_for(client.close(), STEP)


async def metadata_update(checker) -> dict:
    client, _ = await _connect(checker)
    try:
        assert (await client.create(STREAM)).code == Code.OK
        assert (await client.declare_publisher(1, STREAM)).code == Code.OK
        update = await asyncio.wait_for(client.metadata_updates.get(), STEP)
        # the publisher is gone as far as the client knows: it declares a new one to go on
        assert (await client.declare_publisher(2, STREAM)).code == Code.OK
        return {"update": (update.code, update.stream), "close": (await client.close_connection()).code}
    finally:
        await asyncio.wait_for(client.close(), STEP)


SAC = {"single-active-consumer": "true", "name": "cc-group"}


async def _answer_updates(client, n: int) -> list:
    """Answer the next ``n`` ConsumerUpdates as they come (from FIRST): (sub, active) of each."""
    seen = []
    for _ in range(n):
        update = await asyncio.wait_for(client.consumer_updates.get(), STEP)
        client.send(codec.ConsumerUpdateResponse(update.correlation_id, Code.OK, OffsetType.FIRST))
        seen.append((update.subscription_id, update.active))
    return seen


async def consumer_update(checker) -> dict:
    client, _ = await _connect(checker)
    try:
        assert (await client.create(STREAM)).code == Code.OK
        out = await _publish_and_consume(client)
        assert (await client.subscribe(7, STREAM, credit=5, properties=SAC)).code == Code.OK
        # the broker's activation, then the scenario's deactivation and reactivation
        out["updates"] = await _answer_updates(client, 3)
        deliver = await client.next_delivery(7, STEP)
        out.update(delivered=deliver.chunk.messages(), close=(await client.close_connection()).code)
        return out
    finally:
        await asyncio.wait_for(client.close(), STEP)


async def error_response(checker) -> dict:
    client, _ = await _connect(checker)
    try:
        refused = await client.create(STREAM)            # the first request after Open
        # the client surfaces it and goes on: the connection is still good, and the broker (which
        # did create the stream) answers the next request itself
        again = await client.create(STREAM)
        return {"create": refused.code, "again": again.code,
                "close": (await client.close_connection()).code}
    finally:
        await asyncio.wait_for(client.close(), STEP)


async def unknown_fields(checker) -> dict:
    client, opened = await _connect(checker)
    try:
        assert (await client.create(STREAM)).code == Code.OK
        out = await _publish_and_consume(client)
        out.update(properties=sorted(opened.properties), close=(await client.close_connection()).code)
        return out
    finally:
        await asyncio.wait_for(client.close(), STEP)


MAX = 64 * 1024


async def max_size(checker) -> dict:
    client, opened = await _connect(checker, frame_max=MAX)
    try:
        assert (await client.create(STREAM)).code == Code.OK
        out = await _publish_and_consume(client)
        out.update(open_size=len(codec.encode(opened)) - 4, frame_max=client.frame_max,
                   close=(await client.close_connection()).code)
        return out
    finally:
        await asyncio.wait_for(client.close(), STEP)


async def server_close(checker) -> dict:
    client, _ = await _connect(checker)
    try:
        assert (await client.create(STREAM)).code == Code.OK
        out = await _publish_and_consume(client)
        deadline = asyncio.get_running_loop().time() + STEP
        while client.server_close is None and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        assert client.server_close is not None, "no Close from the server"
        # the client answered (client.py does on receipt); the server's FIN follows
        while client._closed is None and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        out.update(close=client.server_close.code, ended=client._closed is not None)
        return out
    finally:
        await asyncio.wait_for(client.close(), STEP)


SESSIONS = {"server-close": server_close, "heartbeat": heartbeat, "metadata-update": metadata_update,
            "consumer-update": consumer_update, "error-response": error_response,
            "unknown-fields": unknown_fields, "max-size": max_size}


def test_every_scenario_has_a_session():
    assert set(SESSIONS) == set(scenarios_for("rabbitmq-stream"))


@pytest.mark.parametrize("scenario", sorted(SESSIONS))
def test_reference_client_copes(scenario, tmp_path):
    doc, out = _cope("rabbitmq-stream", scenario, SESSIONS[scenario], tmp_path)
    assert doc["scenario"] == scenario
    conn = doc["connections"][-1]
    # the report says what the scenario did on the connection
    assert conn["scenario_actions"], _summary(doc)
    assert all(a in t["message"] for t in doc["tests"] for a in conn["scenario_actions"]), _summary(doc)
    if scenario == "server-close":
        # it answered, noticed the FIN and closed its side; the session did not reconnect
        assert out["ended"] and conn["outcome"] == "surfaced an error", _summary(doc)
        assert conn["behaviour"] == "the server closed it; the client then closed its side", _summary(doc)
    else:
        assert conn["outcome"] == "recovered", _summary(doc)
    assert out["close"] == Code.OK, out
    if scenario == "heartbeat":
        assert out["heartbeats"] >= 2, out
    elif scenario == "metadata-update":
        assert out["update"] == (Code.STREAM_NOT_AVAILABLE, STREAM), out
    elif scenario == "consumer-update":
        assert out["updates"] == [(7, 1), (7, 0), (7, 1)] and out["delivered"][0] == b"first", out
    elif scenario == "error-response":
        assert out["create"] == Code.ACCESS_REFUSED and out["again"] == Code.STREAM_ALREADY_EXISTS, out
    elif scenario == "unknown-fields":
        assert "x-wirecheck-unknown" in out["properties"], out
    elif scenario == "max-size":
        assert out["frame_max"] == MAX and out["open_size"] == MAX, out
    if scenario not in ("error-response", "metadata-update"):
        assert out["confirms"] == {1: Code.OK}, out


async def _ignores_the_update(checker) -> dict:
    client, _ = await _connect(checker)
    try:
        assert (await client.create(STREAM)).code == Code.OK
        assert (await client.subscribe(7, STREAM, credit=5, properties=SAC)).code == Code.OK
        await _answer_updates(client, 1)                 # the broker's own: answered
        await asyncio.wait_for(client.consumer_updates.get(), STEP)   # the scenario's: not
        await asyncio.sleep(0.5)          # well past the observer's grace for a crossing
        return {"close": (await client.close_connection()).code}
    finally:
        await asyncio.wait_for(client.close(), STEP)


def test_a_client_that_never_answers_the_consumer_update_fails(tmp_path):
    """Negative control: the scenario is judged, not only played."""
    from wirecheck.conformance.report import verdicts
    checker = _checker("rabbitmq-stream", "consumer-update", None, tmp_path)
    doc, _, _ = _check(checker, lambda c: _run_async(c, _ignores_the_update))
    failed = [t for t in doc["tests"] if t["verdict"] == verdicts.FAIL]
    assert [t["requirements"] for t in failed] == [["RMQS-NEW-010"]], _summary(doc)
    assert doc["exitstatus"] == 1


async def _ignores_the_close(checker) -> dict:
    client, _ = await _connect(checker)
    answer = client.on_frame

    def deaf(frame) -> None:              # a client that takes note of Close and never answers
        if isinstance(frame, codec.Close):
            client.server_close = frame
            return
        answer(frame)
    client.on_frame = deaf
    try:
        deadline = asyncio.get_running_loop().time() + STEP
        while client._closed is None and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        return {"close": client.server_close.code, "ended": client._closed is not None}
    finally:
        await asyncio.wait_for(client.close(), STEP)


def test_a_client_that_never_answers_the_server_close_fails(tmp_path):
    from wirecheck.conformance.report import verdicts
    checker = _checker("rabbitmq-stream", "server-close", {"after": 0.1, "wait": 1.5}, tmp_path)
    doc, out, _ = _check(checker, lambda c: _run_async(c, _ignores_the_close))
    assert out == {"close": Code.OK, "ended": True}, out
    failed = [t for t in doc["tests"] if t["verdict"] == verdicts.FAIL]
    assert [t["requirements"] for t in failed] == [["RMQS-CLOSE-003"]], _summary(doc)


# -- rstream, the real client -------------------------------------------------------------------

def _rstream_session(rstream):
    async def session(checker) -> dict:
        got, confirmed, error = [], [], None
        done = asyncio.Event()

        async def on_confirm(status):
            confirmed.append(status.message_id)

        async def on_message(msg, ctx):
            got.append(bytes(msg))
            if len(got) >= 2:
                done.set()
        try:
            async with rstream.Producer("127.0.0.1", checker.port, username="guest", password="guest") as producer:
                await asyncio.wait_for(producer.create_stream("cc-rstream"), STEP)
                await asyncio.wait_for(producer.send_batch("cc-rstream", [b"one", b"two"],
                                                           on_publish_confirm=on_confirm), STEP)
                async with rstream.Consumer("127.0.0.1", checker.port, username="guest", password="guest") as consumer:
                    await asyncio.wait_for(consumer.subscribe(
                        "cc-rstream", on_message, offset_specification=rstream.ConsumerOffsetSpecification(
                            rstream.OffsetType.FIRST, None)), STEP)
                    await asyncio.wait_for(done.wait(), STEP)
                    await asyncio.sleep(0.7)           # timed scenarios happen meanwhile
        except Exception as exc:                       # noqa: BLE001 - what it surfaced is the result
            error = type(exc).__name__
        return {"got": got, "confirmed": sorted(confirmed), "error": error}
    return session


@pytest.mark.parametrize("scenario", ["heartbeat", "metadata-update", "unknown-fields", "max-size",
                                      "error-response"])
def test_rstream_copes(scenario, tmp_path):
    """rstream 1.1.1 under the scenarios it copes with: no violation. Under error-response its
    create_stream raises the refusal (AccessRefused) and it closes cleanly; under
    metadata-update its consumer stops, as told."""
    rstream = pytest.importorskip("rstream", reason="rstream is not installed")
    doc, out = _cope("rabbitmq-stream", scenario, _rstream_session(rstream), tmp_path)
    if scenario == "error-response":
        assert out["error"] == "AccessRefused", out
    elif scenario == "metadata-update":
        # the consumer's subscription is told its stream is not available right after it is
        # accepted: rstream drops it, and then nothing more is delivered (the session's wait
        # times out), unless its handlers took the chunk that followed first (they run as
        # separate tasks: either order happens)
        assert out["confirmed"] == [1, 2], out
        assert out in ({"got": [], "confirmed": [1, 2], "error": "TimeoutError"},
                       {"got": [b"one", b"two"], "confirmed": [1, 2], "error": None}), out
    else:
        assert out == {"got": [b"one", b"two"], "confirmed": [1, 2], "error": None}, out


def test_rstream_leaves_the_server_close_unanswered(tmp_path):
    """A finding, asserted as it is: rstream 1.1.1's handler for the server's Close
    (Client._on_close) fails the waiting requests and raises; it never sends the CloseResponse
    the command expects (RMQS-CLOSE-003)."""
    rstream = pytest.importorskip("rstream", reason="rstream is not installed")
    checker = _checker("rabbitmq-stream", "server-close", {"after": 0.2, "wait": 1.2}, tmp_path)
    doc, _, _ = _check(checker, lambda c: _run_async(c, _rstream_session(rstream)))
    from wirecheck.conformance.report import verdicts
    failed = {r for t in doc["tests"] if t["verdict"] == verdicts.FAIL for r in t["requirements"]}
    assert failed == {"RMQS-CLOSE-003"}, _summary(doc)
    assert not [t for t in doc["tests"] if t["verdict"] == verdicts.HARNESS_ERROR], _summary(doc)


def test_scenario_options_come_as_text_from_the_command_line(tmp_path):
    """``--scenario-option interval=0.05`` reaches the scenario as text; it is read as a number."""
    doc, out = _cope("rabbitmq-stream", "heartbeat", heartbeat, tmp_path, {"interval": "0.05"})
    assert out["heartbeats"] >= 10, out                 # 1 s of 0.05 s beats (0.3 s: about 3)


def test_a_malformed_scenario_option_is_refused(capsys):
    from wirecheck.cli import main
    assert main(["serve", "--protocol", "rabbitmq-stream", "--check-clients", "--scenario",
                 "heartbeat", "--scenario-option", "interval", "--duration", "1"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err


async def _versions_first(checker) -> dict:
    client, _ = await _connect(checker)
    try:
        versions = await client.exchange_command_versions([(Key.PUBLISH, 1, 2), (Key.DELIVER, 1, 2)])
        refused = await client.create(STREAM)
        return {"versions": versions.code, "create": refused.code,
                "close": (await client.close_connection()).code}
    finally:
        await asyncio.wait_for(client.close(), STEP)


def test_error_response_refuses_only_an_answer_the_document_lets_fail(tmp_path):
    """A client whose first request after Open is ExchangeCommandVersions (always answered OK,
    RMQS-NEW-001): the scenario leaves that answer alone and refuses the next one that may carry
    the code, so the kit never breaks its own rules (no HARNESS-ERROR); a command option the
    document does not let fail that way is refused before the run."""
    from wirecheck.conformance.clients.scenarios import shaper_factory
    doc, out = _cope("rabbitmq-stream", "error-response", _versions_first, tmp_path)
    assert out["versions"] == Code.OK and out["create"] == Code.ACCESS_REFUSED, out
    assert doc["connections"][-1]["scenario_actions"] == ["CREATE_RESPONSE code 16"], _summary(doc)
    with pytest.raises(ValueError, match="does not let EXCHANGE_COMMAND_VERSIONS answer with code 16"):
        shaper_factory("error-response", {"command": "exchange_command_versions"}, "rabbitmq-stream")


def test_a_refused_subscribe_gets_no_deliveries(tmp_path):
    """error-response on Subscribe: the broker behind the scenario accepted the subscription and
    delivers to it; the client, refused, must see none of that (a Deliver for a subscription it
    was refused would be the kit's own breach of RMQS-CREDIT-001, a HARNESS-ERROR): the
    scenario drops those Delivers and says so, and the run is judged clean."""
    from wirecheck.conformance.clients.suite import run_scenario
    from wirecheck.reference_impl.core import registry
    command = f"{sys.executable} -m wirecheck.conformance.clients.drivers.rabbitmq_stream {{host}} {{port}} {{count}}"
    doc = run_scenario(registry.get("rabbitmq-stream"), "error-response", command,
                       options={"command": "SUBSCRIBE"}, count=3, workdir=str(tmp_path))
    got = {t["nodeid"]: t["verdict"] for t in doc["tests"]}
    assert "HARNESS-ERROR" not in got.values() and doc["exitstatus"] == 0, got
    actions = [a for c in doc["connections"] for a in c["scenario_actions"]]
    assert "SUBSCRIBE_RESPONSE code 16" in actions, actions
    assert any(a.startswith("Deliver to refused subscription") for a in actions), actions


def test_stream_already_exists_on_create_may_be_taken_as_success(tmp_path):
    """error-response code=5 ("stream already exists") on Create: a library may rightly treat
    it as success (the stream is there: rbfly does), so either outcome passes; with the default
    code (16, access refused) the refusal must be surfaced."""
    from wirecheck.conformance.clients.suite import run_scenario
    from wirecheck.reference_impl.core import registry
    command = f"{sys.executable} -m wirecheck.conformance.clients.drivers.rabbitmq_stream {{host}} {{port}} {{count}}"
    spec = registry.get("rabbitmq-stream")
    exists = run_scenario(spec, "error-response", command, options={"command": "CREATE", "code": "5"},
                          count=2, workdir=str(tmp_path))
    outcome = exists["tests"][0]
    assert outcome["expected"] == "either" and outcome["verdict"] == "PASS", outcome
    refused = run_scenario(spec, "error-response", command, options={"command": "CREATE"}, count=2,
                           workdir=str(tmp_path))
    assert refused["tests"][0]["expected"] == "error" and refused["tests"][0]["actual"] == "error"
