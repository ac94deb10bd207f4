"""VibeMQ's protocol-level scenarios (wirecheck/conformance/clients/scripted/vibemq.py): the reference client under
each one copes (it sees what the scenario sent and goes on), and the checker finds no violation
by either side: the scenario's frames are legal server behaviour.
"""
from __future__ import annotations

import asyncio

import pytest

from wirecheck.conformance.clients.scripted import scenarios_for
from wirecheck.conformance.clients.scripted.vibemq import EXTRA_HEADERS, EXTRA_PROPERTY
from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq.client import VibeClient, VibeError
from wirecheck.reference_impl.vibemq.constants import DEFAULT_MAX_BODY, CommandType, Compression
from wirecheck.reference_impl.core.client import ConnectionClosed
from tests.conformance.clients.test_client_check import (STEP, _assert_clean, _check, _checker, _cope, _run_async,
                                     _summary)

QUEUE = "cc-queue"


async def _connect(checker, **kw) -> VibeClient:
    return await VibeClient.connect("127.0.0.1", checker.port, timeout=STEP, **kw)


async def _round_trip(client, payload) -> codec.Message:
    """Publish, take the delivery, ack it, and ping (the Ack was processed)."""
    await client.publish(QUEUE, payload)
    delivery = await client.next_delivery(STEP)
    await client.ack(delivery)
    await client.ping()
    return delivery


async def _close(client) -> None:
    await asyncio.wait_for(client.disconnect(), STEP + 1)


async def error_response(checker) -> dict:
    client = await _connect(checker)
    try:
        await client.subscribe(QUEUE)
        try:
            await client.publish(QUEUE, {"text": "refused"})
            refused = None
        except VibeError as exc:             # surfaced to the caller
            refused = (exc.code, exc.answer.id)
        delivery = await _round_trip(client, {"text": "retried"})
        try:                                 # the refused publish never reached the queue
            extra = await client.next_delivery(0.3)
        except asyncio.TimeoutError:
            extra = None
        return {"refused": refused, "payload": delivery.payload, "extra": extra, "errors": client.errors}
    finally:
        await _close(client)


async def unknown_fields(checker) -> dict:
    client = await _connect(checker)
    try:
        subscribed = await client.subscribe(QUEUE)
        delivery = await _round_trip(client, {"text": "hello"})
        info = await client.queue_info(QUEUE)
        names = await client.list_queues()
        return {"connect_ack": client.connect_ack.headers, "subscribe_ack": subscribed.headers,
                "info": info, "names": names, "payload": delivery.payload, "errors": client.errors}
    finally:
        await _close(client)


async def max_size(checker) -> dict:
    client = await _connect(checker)
    try:
        await client.subscribe(QUEUE)
        delivery = await _round_trip(client, {"text": "after"})
        body = len(codec.encode_body(client.connect_ack, "document"))
        return {"connect_ack_body": body, "payload": delivery.payload, "errors": client.errors}
    finally:
        await _close(client)


async def compress_all(checker) -> dict:
    client = await _connect(checker, compression=("gzip",))
    try:
        subscribed = await client.subscribe(QUEUE)
        await client.publish(QUEUE, {"text": "small"})
        delivery = await client.next_delivery(STEP)
        await client.ack(delivery)
        pong = await client.ping()
        return {"negotiated": client.negotiated, "payload": delivery.payload,
                "flags": [m.compression for m in (subscribed, delivery, pong)],
                "ack_flag": client.connect_ack.compression, "errors": client.errors}
    finally:
        await _close(client)


SESSIONS = {"error-response": error_response, "unknown-fields": unknown_fields,
            "max-size": max_size, "compress-all": compress_all}


def test_every_scenario_has_a_session():
    assert set(SESSIONS) == set(scenarios_for("vibemq"))


@pytest.mark.parametrize("scenario", sorted(SESSIONS))
def test_reference_client_copes(scenario, tmp_path):
    doc, out = _cope("vibemq", scenario, SESSIONS[scenario], tmp_path)
    assert doc["scenario"] == scenario
    conn = doc["connections"][-1]
    assert conn["outcome"] == "recovered", _summary(doc)
    assert out["errors"] == [], out
    if scenario == "error-response":
        assert out["refused"] is not None and out["refused"][0] == "SERVER_ERROR", out
        assert out["payload"] == {"text": "retried"} and out["extra"] is None, out
    elif scenario == "unknown-fields":
        for headers in (out["connect_ack"], out["subscribe_ack"]):
            assert headers["x-wirecheck-unknown"] == EXTRA_HEADERS["x-wirecheck-unknown"], out
            assert "x-wirecheck-empty" in headers, out
        assert out["info"][EXTRA_PROPERTY[0]] == EXTRA_PROPERTY[1] and out["info"]["name"] == QUEUE, out
        assert QUEUE in out["names"] and out["payload"] == {"text": "hello"}, out
    elif scenario == "max-size":
        assert out["connect_ack_body"] == DEFAULT_MAX_BODY, out["connect_ack_body"]
        assert out["payload"] == {"text": "after"}, out
    elif scenario == "compress-all":
        assert out["negotiated"] == Compression.GZIP and out["ack_flag"] == Compression.NONE, out
        # the SubscribeAck, the Deliver and the Pong, all far below the 1,024-byte threshold
        assert out["flags"] == [Compression.GZIP] * 3 and out["payload"] == {"text": "small"}, out


@pytest.mark.parametrize("profile", ("vibemq-1.8", "vibemq-1.0"))
def test_unknown_fields_in_the_real_profiles(profile, tmp_path):
    """The real codec's bodies (no error fields outside Error) and protocol 1.0 framing (no
    flags byte): the scenario keeps each as the broker wrote it."""
    from wirecheck.conformance.clients.serve_check import ClientChecker
    from wirecheck.reference_impl.core import registry
    spec = registry.get("vibemq")
    checker = ClientChecker(spec, spec.make_broker("127.0.0.1", 0, profile=profile),
                            scenario="unknown-fields", profile=profile,
                            capture_path=str(tmp_path / "clients.pcap"))

    async def session(c):
        client = await VibeClient.connect("127.0.0.1", c.port, timeout=STEP, profile=profile)
        try:
            delivery = await _round_trip(client, {"text": "real"}) if await client.subscribe(QUEUE) else None
            return {"ack": client.connect_ack.headers, "payload": delivery.payload}
        finally:
            await _close(client)

    doc, out, _ = _check(checker, lambda c: _run_async(c, session))
    _assert_clean(doc)
    assert out["ack"]["x-wirecheck-unknown"] == "ignore me" and out["payload"] == {"text": "real"}, out


def test_error_response_keeps_the_order_of_pipelined_answers(tmp_path):
    """Subscribe and Publish written together: the Error to the Publish comes after the
    broker's SubscribeAck, as a server that handles requests in turn answers."""
    checker = _checker("vibemq", "error-response", None, tmp_path)

    async def session(c):
        client = await _connect(c)
        try:
            return await asyncio.gather(client.subscribe(QUEUE), client.publish(QUEUE, {"n": 1}),
                                        return_exceptions=True)
        finally:
            await _close(client)

    frames: list = []
    doc, out, _ = _check(checker, lambda c: _run_async(c, session), frames)
    _assert_clean(doc)
    assert out[0].type == CommandType.SUBSCRIBE_ACK and isinstance(out[1], VibeError), out
    s2c = [t for _, d, t in frames if d == "s2c"]
    assert s2c[:3] == ["connectAck", "subscribeAck", "error"], frames


def test_error_response_to_a_subscribe(tmp_path):
    """``command=subscribe``: the refused subscription does not exist, so nothing is delivered
    until the client subscribes again."""
    options = {"command": "subscribe", "code": "QUEUE_NOT_FOUND"}
    checker = _checker("vibemq", "error-response", options, tmp_path)

    async def session(c):
        client = await _connect(c)
        try:
            try:
                await client.subscribe(QUEUE)
                refused = None
            except VibeError as exc:
                refused = exc.code
            await client.subscribe(QUEUE)
            delivery = await _round_trip(client, {"text": "again"})
            return {"refused": refused, "payload": delivery.payload}
        finally:
            await _close(client)

    doc, out, _ = _check(checker, lambda c: _run_async(c, session))
    _assert_clean(doc)
    assert out == {"refused": "QUEUE_NOT_FOUND", "payload": {"text": "again"}}, out


async def _small_limit(checker) -> dict:
    """A client that reads bodies of at most 64 KiB: the 1 MiB ConnectAck breaks its decoder."""
    client = VibeClient(*await VibeClient.open_stream("127.0.0.1", checker.port, STEP), timeout=STEP)
    client.decoder = codec.Decoder(codec.VibeLimits(max_frame_size=64 * 1024), origin="server")
    try:
        await client.handshake("vibemq")
    except ConnectionClosed as exc:
        return {"error": str(exc)}
    finally:
        # closing with the rest of the ConnectAck unread: the kernel resets the connection
        await asyncio.wait_for(client.close(), STEP)
    return {"error": None}


def test_a_client_that_cannot_take_a_maximum_frame_is_reported(tmp_path):
    """Negative control: the client gave up on a body the real server's limit allows, and the
    report shows it crashed (reset the connection the server had not ended)."""
    checker = _checker("vibemq", "max-size", None, tmp_path)
    doc, out, _ = _check(checker, lambda c: _run_async(c, _small_limit))
    assert out["error"] and "> 65536" in out["error"], out
    conn = doc["connections"][-1]
    assert conn["outcome"] == "crashed" and conn["behaviour"] == "the client reset it", _summary(doc)


@pytest.mark.parametrize("profile", ("document", "vibemq-1.0"))
def test_the_splitter_reads_the_framing_from_the_first_frame(profile):
    from wirecheck.conformance.clients.scripted.vibemq import Framing, VibeSplitter
    messages = [codec.Message(CommandType.CONNECT, "c1", headers={"authPassword": "vibemq"}),
                codec.Message(CommandType.PING, "p1"),
                codec.Message(CommandType.PUBLISH, "m1", QUEUE, {"x": "y" * 2000})]
    gzip_last = profile == "document"           # a compressed frame among plain ones
    frames = [codec.encode(m, profile, compression=Compression.GZIP if i == 2 and gzip_last else None)
              for i, m in enumerate(messages)]
    stream = b"".join(frames)
    framing = Framing()
    splitter = VibeSplitter(framing)
    assert [f for i in range(len(stream)) for f in splitter.feed(stream[i:i + 1])] == frames
    assert framing.flags is (profile != "vibemq-1.0")
