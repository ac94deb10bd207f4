"""BlipMQ's protocol-level scenarios (wirecheck/conformance/clients/scripted/blipmq.py): the reference client under
each one copes (it sees what the scenario sent and goes on), and the checker finds no violation
by either side: the scenario's answers are legal server behaviour, in their place in the order.
"""
from __future__ import annotations

import asyncio
import socket

import pytest

from wirecheck.conformance.clients.scripted import scenarios_for
from wirecheck.conformance.clients.scripted.blipmq import pattern
from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.client import BlipClient, NackError
from wirecheck.reference_impl.core.client import ConnectionClosed
from tests.conformance.clients.test_client_check import (STEP, _assert_clean, _check, _checker, _cope, _run_async,
                                     _summary)

TOPIC = "cc/topic"


async def _connect(checker) -> BlipClient:
    return await BlipClient.connect("127.0.0.1", checker.port, timeout=STEP)


async def _round_trip(client, sub: int, message: bytes = b"after") -> bytes:
    """Publish (confirmed) and take it back: the connection still works."""
    await client.publish(TOPIC, message, qos=1, confirm=True)
    msg = await client.poll(sub)
    await client.ack(sub, msg.tag)
    await client.ping()                      # the ACK was processed
    return msg.message


async def error_response(checker) -> dict:
    client = await _connect(checker)
    try:
        sub = await client.subscribe(TOPIC, 1)
        try:
            await client.publish(TOPIC, b"refused", qos=1, confirm=True)
            refused = None
        except NackError as exc:             # surfaced to the caller
            refused = (exc.code, exc.message)
        # "Treat 500 as transient server issues (retry with backoff)": the retry goes through
        # and is delivered once; the refused publish never reached a queue
        got = await _round_trip(client, sub, b"retried")
        empty = await client.poll(sub)
        return {"refused": refused, "got": got, "empty": empty, "errors": client.errors}
    finally:
        await asyncio.wait_for(client.close(), STEP)


async def error_response_poll(checker) -> dict:
    client = await _connect(checker)
    try:
        sub = await client.subscribe(TOPIC, 1)
        try:
            await client.poll(sub)
            refused = None
        except NackError as exc:
            refused = (exc.code, exc.message)
        # 404 is out-of-sync state: subscribe again and go on
        sub = await client.subscribe(TOPIC, 1)
        got = await _round_trip(client, sub)
        return {"refused": refused, "got": got, "errors": client.errors}
    finally:
        await asyncio.wait_for(client.close(), STEP)


async def max_size(checker) -> dict:
    client = await _connect(checker)
    try:
        sub = await client.subscribe(TOPIC, 1)
        big = await client.poll(sub)         # the scenario answers the first POLL
        got = await _round_trip(client, sub)
        length = len(codec.encode(codec.Publish(big.tag, big.qos, big.topic, big.message))) - 4
        return {"length": length, "qos": big.qos, "topic": big.topic,
                "intact": big.message == pattern(len(big.message)), "got": got, "errors": client.errors}
    finally:
        await asyncio.wait_for(client.close(), STEP)


SESSIONS = {"error-response": error_response, "max-size": max_size}


def test_every_scenario_has_a_session():
    assert set(SESSIONS) == set(scenarios_for("blipmq"))


@pytest.mark.parametrize("scenario", sorted(SESSIONS))
def test_reference_client_copes(scenario, tmp_path):
    doc, out = _cope("blipmq", scenario, SESSIONS[scenario], tmp_path)
    assert doc["scenario"] == scenario
    conn = doc["connections"][-1]
    assert conn["outcome"] == "recovered", _summary(doc)
    assert out["errors"] == [], out
    if scenario == "error-response":
        assert out["refused"] is not None and out["refused"][0] == 500, out
        assert out["refused"][1].startswith("durable publish failed: "), out
        assert out["got"] == b"retried" and out["empty"] is None, out
    elif scenario == "max-size":
        assert out["length"] == codec.MAX_FRAME_SIZE and out["intact"], out["length"]
        assert (out["qos"], out["topic"], out["got"]) == (0, TOPIC, b"after"), out


def test_error_response_to_a_poll(tmp_path):
    """``command=POLL``: the first POLL gets NACK 404 (an expired subscription)."""
    doc, out = _cope("blipmq", "error-response", error_response_poll, tmp_path, {"command": "poll"})
    assert out["refused"] == (404, "unknown subscription or delivery tag"), out
    assert out["got"] == b"after" and out["errors"] == [], out


def _raw_session(checker, make_frames) -> list:
    """HELLO, AUTH and a SUBSCRIBE (answered), then ``make_frames(subscription id)`` written in
    one go; the typed frames the server sent, up to the PONG of the last one (a PING)."""
    with socket.create_connection(("127.0.0.1", checker.port), timeout=STEP) as sock:
        sock.settimeout(STEP)
        decoder, got = codec.Decoder(), []

        def until(done) -> None:
            while not done():
                got.extend(decoder.feed(sock.recv(1 << 20)))
        sock.sendall(b"".join(codec.encode(f) for f in
                              (codec.Hello(1), codec.Auth(2, "dev-key"), codec.Subscribe(3, TOPIC, 1))))
        until(lambda: len(got) == 3)
        frames = make_frames(got[2].subscription_id)
        sock.sendall(b"".join(codec.encode(f) for f in frames))
        until(lambda: isinstance(got[-1], codec.Pong) and got[-1].correlation_id == frames[-1].correlation_id)
        return got


def test_max_size_with_pipelined_polls(tmp_path):
    """Two POLLs written together, no PING between them, while a QoS1 message waits: the first
    is the scenario's (the 16 MiB delivery), the second the broker's (the message, with its
    delivery tag). The scenario's delivery goes first, as the broker answers in order."""
    checker = _checker("blipmq", "max-size", None, tmp_path)
    doc, got, _ = _check(checker, lambda c: _raw_session(c, lambda sub: [
        codec.Publish(4, 1, TOPIC, b"waiting"), codec.Poll(5, sub), codec.Poll(6, sub), codec.Ping(7)]))
    _assert_clean(doc)
    shown = [(type(f).__name__, f.correlation_id, getattr(f, "qos", None)) for f in got]
    assert shown[3:] == [("Publish", 5, 0), ("Publish", 1, 1), ("Pong", 7, None)], shown
    assert len(got[3].message) == codec.MAX_FRAME_SIZE - 12 - len(TOPIC), len(got[3].message)


async def _fire_and_forget(checker) -> dict:
    client = await _connect(checker)
    try:
        sub = await client.subscribe(TOPIC, 1)
        await client.publish(TOPIC, b"refused", qos=1)       # unconfirmed: nothing follows it
        await asyncio.sleep(0.5)             # past the scenario's grace: the NACK came alone
        errors = [(e.code, e.message) for e in client.errors]
        got = await _round_trip(client, sub)
        return {"errors": errors, "got": got}
    finally:
        await asyncio.wait_for(client.close(), STEP)


def test_error_response_with_nothing_after_it(tmp_path):
    """The refused publish is the client's last request for a while: the NACK goes out after
    the scenario's grace, and the client files it under :attr:`BlipClient.errors`."""
    doc, out = _cope("blipmq", "error-response", _fire_and_forget, tmp_path)
    assert [code for code, _ in out["errors"]] == [500] and out["got"] == b"after", out


def test_a_client_frame_too_large_to_hold_ends_the_scenario(tmp_path):
    """A client frame over the framework's limit (1 MiB) passes unread: the scenario stops
    following the conversation (it can no longer know every request) and refuses nothing."""
    checker = _checker("blipmq", "error-response", None, tmp_path)

    async def session(c):
        client = await _connect(c)
        try:
            sub = await client.subscribe(TOPIC, 0)
            await client.publish(TOPIC, b"x" * (2 << 20), confirm=True)
            await client.publish(TOPIC, b"kept", qos=1, confirm=True)       # not refused
            got = [(await client.poll(sub)).message for _ in range(2)]
            return {"sizes": [len(m) for m in got], "errors": client.errors}
        finally:
            await asyncio.wait_for(client.close(), STEP)

    doc, out, _ = _check(checker, lambda c: _run_async(c, session))
    _assert_clean(doc)
    assert out == {"sizes": [2 << 20, 4], "errors": []}, out
    assert any("no longer followed" in a for a in doc["connections"][0]["scenario_actions"]), _summary(doc)


async def _small_limit(checker) -> dict:
    """A client whose frames may be at most 1 MiB: the 16 MiB delivery breaks its decoder."""
    client = await _connect(checker)
    try:
        sub = await client.subscribe(TOPIC, 0)
        client.decoder = codec.Decoder(codec.BlipConfig(max_frame_size=1 << 20))
        try:
            await client.poll(sub)
        except ConnectionClosed as exc:
            return {"error": str(exc)}
        return {"error": None}
    finally:
        # closing with the rest of the delivery unread: the kernel resets the connection
        await asyncio.wait_for(client.close(), STEP)


def test_a_client_that_cannot_take_a_maximum_frame_is_reported(tmp_path):
    """Negative control: the client gave up on a frame the document allows (16 MiB), and the
    report shows it crashed (reset the connection the server had not ended)."""
    checker = _checker("blipmq", "max-size", None, tmp_path)
    doc, out, _ = _check(checker, lambda c: _run_async(c, _small_limit))
    assert out["error"] and "> 1048576" in out["error"], out
    conn = doc["connections"][-1]
    assert conn["outcome"] == "crashed" and conn["behaviour"] == "the client reset it", _summary(doc)


def test_the_splitter_cuts_frames_whatever_the_chunks():
    from wirecheck.conformance.clients.scripted.blipmq import BlipSplitter
    frames = [codec.encode(f) for f in (codec.Hello(1), codec.Ack(1), codec.Ping(2), codec.Pong(2),
                                         codec.Publish(3, 1, TOPIC, b"m" * 300), codec.Nack(4, 404, "x"))]
    stream = b"".join(frames)
    assert BlipSplitter().feed(stream) == frames
    bytewise = BlipSplitter()
    assert [f for i in range(len(stream)) for f in bytewise.feed(stream[i:i + 1])] == frames
    bad = BlipSplitter()                      # a length below 9: not a frame, passed through
    assert bad.feed(frames[0] + b"\x00\x00\x00\x03xyz") == [frames[0], b"\x00\x00\x00\x03xyz"] and bad.raw
