"""Micromessage2's protocol-level scenarios (wirecheck/conformance/clients/scripted/micromessage2.py): the reference
client under each one copes (it sees what the scenario sent and goes on, or refuses as the
document says), and the checker finds no violation by either side: the scenario's handshakes and
frames are legal server behaviour.
"""
from __future__ import annotations

import asyncio
import socket
import time

import pytest

from wirecheck.conformance.clients.scripted import scenarios_for
from wirecheck.conformance.clients.scripted.micromessage2 import REQUIRED_EXTENSION, UNKNOWN_EXTENSION, UNKNOWN_PROPERTY
from wirecheck.reference_impl.micromessage2 import codec
from wirecheck.reference_impl.micromessage2.client import ExtensionsNotImplemented, HandshakeRefused, MM2Client
from tests.conformance.clients.test_client_check import (STEP, _assert_clean, _check, _checker, _cope,
                                     _mm2_subscribe, _run_async, _summary)

TOPIC = "cc/topic"
#: More than one piece of 1 MiB (MM2-FRAME-006): the broker pushes a 1 MiB frame, then the rest.
BIG = bytes(range(256)) * (4096 + 2)


async def _connect(checker, required=("pubsub",), optional=("batch-ack:max-count=8",)) -> MM2Client:
    return await MM2Client.connect("127.0.0.1", checker.port, required=list(required),
                                   optional=list(optional), timeout=STEP)


async def _receive(client, payload: bytes) -> codec.Message:
    await client.send(TOPIC, payload)
    msg = await client.next_message(STEP)
    while msg.payload == b"probe":
        msg = await client.next_message(STEP)
    return msg


async def error_response(checker) -> dict:
    try:
        first = await _connect(checker)
        await asyncio.wait_for(first.close(), STEP)
        refused = None
    except HandshakeRefused as exc:           # surfaced; connect() closed the connection
        refused = str(exc)
    # go on without requiring it: offered as optional, the server may take it or leave it
    client = await _connect(checker, required=(), optional=("pubsub", "batch-ack:max-count=8"))
    try:
        await _mm2_subscribe(client, TOPIC)
        msg = await _receive(client, b"hello mm2")
        return {"refused": refused, "payload": msg.payload,
                "agreed": [e.name for e in client.agreement.extensions], "errors": client.errors}
    finally:
        await asyncio.wait_for(client.close(), STEP)


async def unknown_fields(checker) -> dict:
    client = await _connect(checker)
    try:
        reply = client.reply.result()
        await _mm2_subscribe(client, TOPIC)
        msg = await _receive(client, b"hello mm2")
        return {"suggested": [str(e) for e in reply.optional],
                "agreed": [e.name for e in client.agreement.extensions],
                "window": client.agreement.window, "payload": msg.payload, "errors": client.errors}
    finally:
        await asyncio.wait_for(client.close(), STEP)


async def required_extension(checker) -> dict:
    try:
        client = await _connect(checker)
    except ExtensionsNotImplemented as exc:   # it sent an ERROR frame and closed
        return {"refused": exc.names, "errors": []}
    await asyncio.wait_for(client.close(), STEP)
    return {"refused": None, "errors": client.errors}


async def large_payload(checker) -> dict:
    client = await _connect(checker)
    try:
        await _mm2_subscribe(client, TOPIC)
        small = await _receive(client, b"hello mm2")
        big = await _receive(client, BIG)
        # the server's acks (EXTENSION frames, in the large form too) make room: twice the
        # window of 8 SENDs go out (to a destination nobody reads: no deliveries left unread)
        for i in range(16):
            await client.send("cc/elsewhere", b"more %d" % i)
        return {"small": (small.payload, small.large), "big": (big.payload == BIG, big.pieces),
                "sent": client.outbox.last, "errors": client.errors}
    finally:
        await asyncio.wait_for(client.close(), STEP)


async def continued(checker) -> dict:
    client = await _connect(checker)
    try:
        await _mm2_subscribe(client, TOPIC)
        small = await _receive(client, b"hello mm2")
        big = await _receive(client, BIG)
        return {"small": (small.payload, small.pieces), "big": (big.payload == BIG, big.pieces),
                "errors": client.errors}
    finally:
        await asyncio.wait_for(client.close(), STEP)


SESSIONS = {"error-response": error_response, "unknown-fields": unknown_fields,
            "required-extension": required_extension, "large-payload": large_payload,
            "continued": continued}


def test_every_scenario_has_a_session():
    assert set(SESSIONS) == set(scenarios_for("micromessage2"))


@pytest.mark.parametrize("scenario", sorted(SESSIONS))
def test_reference_client_copes(scenario, tmp_path):
    doc, out = _cope("micromessage2", scenario, SESSIONS[scenario], tmp_path)
    assert doc["scenario"] == scenario
    assert out["errors"] == [], out
    conns = doc["connections"]
    assert all(c["outcome"] == "recovered" for c in conns), _summary(doc)
    if scenario == "error-response":
        # the refused connection was cut by the server; the client came back at once
        assert len(conns) == 2, _summary(doc)
        assert conns[0]["behaviour"].startswith("the server closed it"), _summary(doc)
        assert out["refused"] == "required extension(s) not supported: pubsub", out
        assert out["payload"] == b"hello mm2" and "pubsub" in out["agreed"], out
    elif scenario == "unknown-fields":
        assert str(UNKNOWN_EXTENSION) in out["suggested"], out
        assert any(f"{UNKNOWN_PROPERTY[0]}={UNKNOWN_PROPERTY[1]}" in s for s in out["suggested"]), out
        assert UNKNOWN_EXTENSION.name not in out["agreed"] and out["window"] == 8, out
        assert out["payload"] == b"hello mm2", out
    elif scenario == "required-extension":
        assert out["refused"] == [REQUIRED_EXTENSION.name], out
        assert len(conns) == 1, _summary(doc)
    elif scenario == "large-payload":
        assert out["small"] == (b"hello mm2", True) and out["big"] == (True, 2), out
        assert out["sent"] >= 18, out
    elif scenario == "continued":
        # 9 bytes in 3 pieces; the 1 MiB piece and the rest, each in 3
        assert out["small"] == (b"hello mm2", 3) and out["big"] == (True, 6), out


def test_error_response_names_the_extension(tmp_path):
    """``extension=batch-ack``: an offer that does not require it is passed on untouched."""
    checker = _checker("micromessage2", "error-response", {"extension": "batch-ack"}, tmp_path)

    async def session(c):
        client = await _connect(c)             # requires pubsub only: not refused
        try:
            await _mm2_subscribe(client, TOPIC)
            return {"payload": (await _receive(client, b"kept")).payload}
        finally:
            await asyncio.wait_for(client.close(), STEP)

    doc, out, _ = _check(checker, lambda c: _run_async(c, session))
    _assert_clean(doc)
    assert out == {"payload": b"kept"} and len(doc["connections"]) == 1, out


def _ignores_the_requirement(checker) -> bytes:
    """A client that drops the server's required extension from its final handshake instead of
    refusing with an ERROR frame."""
    with socket.create_connection(("127.0.0.1", checker.port), timeout=STEP) as sock:
        sock.settimeout(STEP)
        offer = codec.Handshake("careless", codec.syntax.parse_extensions("pubsub"))
        sock.sendall(codec.encode(offer))
        decoder = codec.make_decoder(origin="server")
        frames: list = []
        while not frames:
            frames += decoder.feed(sock.recv(65536))
        reply = frames[0]
        assert REQUIRED_EXTENSION.name in reply.names(), reply
        sock.sendall(codec.encode(codec.Handshake("careless", offer.required)))
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except (ConnectionResetError, socket.timeout):
            pass
        return answer


def test_a_client_that_ignores_a_required_extension_fails(tmp_path):
    """Negative control: MM2-HS-008 (the client's final handshake lacks what the server
    requires) is reported, and the scenario refused the final handshake as a server must."""
    from wirecheck.conformance.report import verdicts
    checker = _checker("micromessage2", "required-extension", None, tmp_path)
    doc, answer, _ = _check(checker, _ignores_the_requirement)
    failed = [t for t in doc["tests"] if t["verdict"] == verdicts.FAIL]
    assert [t["requirements"] for t in failed] == [["MM2-HS-008"]], _summary(doc)
    assert not [t for t in doc["tests"] if t["verdict"] == verdicts.HARNESS_ERROR], _summary(doc)
    assert doc["exitstatus"] == 1
    refusal = codec.decode_all(answer)
    assert refusal == [codec.Error(f"the final handshake lacks the required extension(s): "
                                   f"{REQUIRED_EXTENSION.name}")], answer


@pytest.mark.parametrize("scenario", ("unknown-fields", "large-payload"))
def test_the_real_profile(scenario, tmp_path):
    """Profile ``sharpmessaging``: the reply's Required is the union and ack carries
    MessagesPerAck/AckExpireTime (SPEC_NOTES); no pubsub, so the client pushes SENDs and reads
    the server's acks (in the large form under ``large-payload``). The scenarios keep to what
    that server sends."""
    from wirecheck.conformance.clients.serve_check import ClientChecker
    from wirecheck.reference_impl.core import registry
    spec = registry.get("micromessage2")
    checker = ClientChecker(spec, spec.make_broker("127.0.0.1", 0, profile="sharpmessaging"),
                            scenario=scenario, profile="sharpmessaging",
                            capture_path=str(tmp_path / "clients.pcap"))

    async def session(c):
        client = await MM2Client.connect("127.0.0.1", c.port, profile="sharpmessaging", timeout=STEP)
        try:
            for i in range(3):
                await client.send("queue", b"real %d" % i)
            deadline = time.monotonic() + STEP          # acked after AckExpireTime (0.5 s)
            while client.outbox.inflight and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return {"agreed": [str(e) for e in client.agreement.extensions],
                    "unacked": len(client.outbox.inflight), "errors": client.errors}
        finally:
            await asyncio.wait_for(client.close(), STEP)

    doc, out, _ = _check(checker, lambda c: _run_async(c, session))
    _assert_clean(doc)
    assert out["unacked"] == 0 and out["errors"] == [], out
    assert [a.split(":")[0] for a in out["agreed"]] == ["ack", "dotnet"], out
    assert doc["connections"][0].get("scenario_actions"), _summary(doc)


def test_the_splitter_cuts_handshakes_and_frames_whatever_the_chunks():
    """Whole, byte by byte: the same frames, each with what it was."""
    from wirecheck.conformance.clients.scripted.micromessage2 import FRAME, HANDSHAKE, REFUSAL, MM2Splitter
    ext = codec.syntax.parse_extensions("pubsub;batch-ack:max-count=8")
    server = [codec.encode(codec.Handshake("srv", (), ext)),
              codec.encode(codec.ExtensionFrame(2, b"\x00\x01")),
              codec.encode(codec.Message(1, TOPIC, b"small", (("k", "N1"),))),
              *_pieces(codec.encode_message(codec.Message(2, TOPIC, b"x" * 700), piece_size=300)),
              codec.encode(codec.Error("e" * 300)),
              codec.encode(codec.Command("subscribe", (("destination", "d"),)))]
    client = [codec.encode(codec.Handshake("c", ext)), codec.encode(codec.Error("no"))]
    for frames, handshakes, kinds in ((server, 1, [HANDSHAKE] + [FRAME] * (len(server) - 1)),
                                      (client, 2, [HANDSHAKE, REFUSAL])):
        stream = b"".join(frames)
        whole = MM2Splitter(handshakes)
        assert whole.feed(stream) == frames and list(whole.kinds) == kinds
        bytewise = MM2Splitter(handshakes)
        assert [f for i in range(len(stream)) for f in bytewise.feed(stream[i:i + 1])] == frames
        assert list(bytewise.kinds) == kinds


def _pieces(data: bytes) -> list[bytes]:
    from wirecheck.conformance.clients.scripted.micromessage2 import MM2Splitter
    return MM2Splitter(0).feed(data)
