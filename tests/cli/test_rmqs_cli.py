"""``wirecheck`` for RabbitMQ Stream, as a user runs it: decode hex and the real capture,
serve with a data directory."""
from __future__ import annotations

import asyncio
import json
import os

from wirecheck.reference_impl.rabbitmq_stream.client import StreamClient

from tests.support.blipmq_proc import BrokerProcess
from tests.cli.test_cli import ROOT, lines, wirecheck

CAPTURE = os.path.join(ROOT, "captures", "rabbitmq-stream", "real", "rabbitmq-stream-rstream.pcap")
if not os.path.exists(CAPTURE):
    CAPTURE = "/work/shared/captures-real/rabbitmq-stream-rstream.pcap"


def test_decode_tune_and_subscribe_from_hex():
    # Tune as the real server sends it (no correlation id), then a Subscribe at FIRST:
    # no offset value follows type 1 (SPEC_NOTES.md).
    r = wirecheck("decode", "--protocol", "rabbitmq-stream", "--hex",
                  "0000000c 0014 0001 00100000 0000003c"
                  "00000014 0007 0001 00000005 00 0001 73 0001 000a 00000000")
    assert r.returncode == 0, r.stderr
    tune, sub = lines(r.stdout)
    assert tune == {"type": "Tune", "key": "0x0014", "frame_max": 1048576, "heartbeat": 60,
                    "version": 1}
    assert sub["type"] == "Subscribe" and sub["stream"] == "s" and sub["offset_type"] == 1
    assert sub["offset"] is None and sub["credit"] == 10 and sub["properties"] == {}


def test_decode_reports_unknown_key_with_offset():
    r = wirecheck("decode", "--protocol", "rabbitmq-stream", "--hex", "00000004 0042 0001")
    assert r.returncode == 1
    (err,) = lines(r.stdout)
    assert err["category"] == "UNKNOWN_TYPE" and err["offset"] == 4
    assert err["protocol"] == "rabbitmq-stream"


def test_decode_real_capture_without_errors():
    r = wirecheck("decode", "--protocol", "rabbitmq-stream", "--pcap", CAPTURE, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    frames = lines(r.stdout)
    assert not [f for f in frames if "error" in f]
    delivers = [f for f in frames if f["type"] == "Deliver"]
    assert delivers and all(f["chunk"]["magic_version"] == 0x50 for f in delivers)
    # every delivered record is there, in offset order, across the chunks of the consumer
    offsets = [f["chunk"]["first_offset"] for f in delivers]
    assert offsets == sorted(offsets)


def test_serve_with_data_dir_keeps_streams_across_restart(tmp_path):
    data = str(tmp_path / "data")

    async def publish(port):
        c = await StreamClient.connect("127.0.0.1", port)
        assert (await c.create("kept")).code == 1
        assert (await c.declare_publisher(1, "kept")).code == 1
        c.publish(1, [(i, b"m%d" % i) for i in range(1, 11)])
        assert set((await c.wait_confirms(1, range(1, 11))).values()) == {1}
        await c.close()

    async def read(port):
        c = await StreamClient.connect("127.0.0.1", port)
        assert (await c.subscribe(1, "kept", credit=5)).code == 1
        d = await c.next_delivery(1)
        await c.close()
        return d.chunk.messages()

    broker = BrokerProcess("--data-dir", data, protocol="rabbitmq-stream").start()
    try:
        asyncio.run(publish(broker.port))
    finally:
        broker.terminate()
    broker = BrokerProcess("--data-dir", data, protocol="rabbitmq-stream").start()
    try:
        assert asyncio.run(read(broker.port)) == [b"m%d" % i for i in range(1, 11)]
    finally:
        broker.terminate()


def test_serve_rejects_unknown_profile():
    r = wirecheck("serve", "--protocol", "rabbitmq-stream", "--port", "0", "--profile", "nope")
    assert r.returncode == 2
    assert "unknown profile" in r.stderr


def test_check_with_the_3_10_profile_reports_unimplemented_not_failures(tmp_path):
    # The embedded broker speaks the profile under test: commands 26-30 are absent, so their
    # tests are UNIMPLEMENTED (skipped, listed apart), and the run is conformant.
    report = tmp_path / "r.json"
    r = wirecheck("check", "--protocol", "rabbitmq-stream", "--profile", "rabbitmq-3.10",
                  "--report", str(report), "-n", "2", timeout=300)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "not met:" not in r.stdout
    assert "unimplemented (profile): " in r.stdout and "RMQS-NEW-001" in r.stdout
    tests = json.loads(report.read_text())["tests"]
    unimplemented = [t for t in tests if t["verdict"] == "UNIMPLEMENTED"]
    assert unimplemented and all(t["message"].startswith("UNIMPLEMENTED: ") for t in unimplemented)
    assert not [t for t in tests if t["verdict"] in ("FAIL", "TIMEOUT", "HARNESS-ERROR")]


def test_wait_confirms_ends_when_the_connection_does():
    """The broker closes the connection (a frame it cannot read) while confirms are awaited:
    wait_confirms raises ConnectionClosed at once, not after its timeout."""
    import time

    from wirecheck.reference_impl.core import registry
    from wirecheck.reference_impl.core.client import ConnectionClosed
    from wirecheck.reference_impl.core.server import ThreadedServer

    async def go(port):
        c = await StreamClient.connect("127.0.0.1", port, timeout=30.0)
        assert (await c.create("closing")).code == 1
        assert (await c.declare_publisher(1, "closing")).code == 1
        c.writer.write(b"\x00\x00\x00\x04\x7f\x7f\x00\x01")      # an unknown key: the broker closes
        start = time.monotonic()
        try:
            await c.wait_confirms(1, [1], timeout=30.0)
        except ConnectionClosed:
            return time.monotonic() - start
        finally:
            await c.close()
        raise AssertionError("wait_confirms returned on a closed connection")

    with ThreadedServer(registry.get("rabbitmq-stream").make_broker("127.0.0.1", 0)) as server:
        assert asyncio.run(go(server.address[1])) < 5.0
