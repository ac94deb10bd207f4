"""A real BlipMQ conversation captured on loopback with dumpcap (tests/support/tshark_capture.py) and
decoded by ``decode_pcap`` and by ``wirecheck decode --pcap``: the frames of each direction are
exactly the ones the reference client sent and received, a 200 KB message spread over many TCP
segments included."""
from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wirecheck.conformance.captures.decode import decode_pcap
from wirecheck.conformance.captures.pcapfile import PcapReader
from wirecheck.reference_impl.blipmq.client import BlipClient
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.server import ThreadedServer

from tests.support.tshark_capture import CaptureError, capture_loopback, tshark_available

ROOT = Path(__file__).resolve().parents[3]
TOPIC = "capture.t"
LARGE = bytes((i * 31 + i // 251) & 0xFF for i in range(200 * 1024))      # not UTF-8
MESSAGES = [b"first", "z\u00fcrich \u2713".encode(), b"", LARGE, b"last"]
TIMEOUT = 5.0


@pytest.fixture(autouse=True)
def _capture_possible():
    reason = tshark_available()
    if reason is not None and not os.environ.get("WIRECHECK_REQUIRE_REAL_PEERS"):
        pytest.skip(f"{reason}; set WIRECHECK_REQUIRE_REAL_PEERS to make this a failure")


class RecordingClient(BlipClient):
    """The reference client, keeping every frame it encodes and every frame it decodes."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list = []
        self.received: list = []
        self.bytes_sent = 0

    def _encode(self, frames) -> bytes:
        self.sent.extend(frames)
        data = super()._encode(frames)
        self.bytes_sent += len(data)
        return data

    def on_frame(self, frame) -> None:
        self.received.append(frame)
        super().on_frame(frame)


async def conversation(port: int) -> RecordingClient:
    async with await RecordingClient.connect("127.0.0.1", port, timeout=TIMEOUT) as client:
        sub = await client.subscribe(TOPIC, qos=1)
        for body in MESSAGES[:-1]:
            await client.publish(TOPIC, body, qos=1)
        await client.publish(TOPIC, MESSAGES[-1], qos=1, confirm=True)
        got = [await client.poll(sub) for _ in MESSAGES]       # each bounded by TIMEOUT
        assert [m.message for m in got] == MESSAGES
        for m in got:
            await client.ack(sub, m.tag)
        assert await client.poll(sub) is None
        await client.ping()
        assert client.errors == []
    return client


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def decoded_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def frames_only(lines: list[dict], direction: str) -> list[dict]:
    return [{k: v for k, v in line.items() if k not in ("flow", "direction", "time")}
            for line in lines if line["direction"] == direction]


def test_real_conversation_captured_on_loopback_decodes_to_the_clients_frames(tmp_path):
    spec = registry.get("blipmq")
    broker = spec.make_broker("127.0.0.1", 0)
    server = ThreadedServer(broker).start()
    try:
        port = server.address[1]
        with capture_loopback([port], tmp_path / "s.pcap", timeout=TIMEOUT) as pcap:
            client = asyncio.run(asyncio.wait_for(conversation(port), 15))
            # the broker has seen the client's close before the capture ends
            wait_until(lambda: not broker.server.connections, TIMEOUT, "the broker to close")
    finally:
        server.stop()

    out = io.StringIO()
    assert decode_pcap(spec, str(pcap), ports=[port], out=out) == 0
    lines = decoded_lines(out.getvalue())
    assert [line for line in lines if "error" in line] == []
    (flow,) = {line["flow"] for line in lines if line["direction"] == "c2s"}   # one connection
    client_end, server_end = flow.split("->")
    assert server_end == f"127.0.0.1:{port}"
    assert {line["flow"] for line in lines if line["direction"] == "s2c"} == {f"{server_end}->{client_end}"}
    assert frames_only(lines, "c2s") == [spec.frame_to_dict(f) for f in client.sent]
    assert frames_only(lines, "s2c") == [spec.frame_to_dict(f) for f in client.received]
    deliveries = [line for line in lines if line["direction"] == "s2c" and line["type"] == "PUBLISH"]
    assert [bytes.fromhex(d["message_hex"]) for d in deliveries] == MESSAGES

    # The large message really crossed the wire in many segments, and nothing is missing.
    with PcapReader(str(pcap)) as reader:
        segments = [s for s in reader if s.data]
    c2s = [s for s in segments if s.dst[1] == port]
    s2c = [s for s in segments if s.src[1] == port]
    assert sum(len(data) for _, data in {(s.seq, s.data) for s in c2s}) == client.bytes_sent
    assert max(len(s.data) for s in c2s) < len(LARGE)
    assert len([s for s in c2s if len(s.data) > 1000]) >= 2
    assert len([s for s in s2c if len(s.data) > 1000]) >= 2

    # The same through the command line.
    exe = ROOT / ".venv" / "bin" / "wirecheck"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "wirecheck"]
    proc = subprocess.run([*cmd, "decode", "--protocol", "blipmq", "--pcap", str(pcap),
                           "--port", str(port)], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert decoded_lines(proc.stdout) == lines


def test_a_capture_that_cannot_start_says_why(tmp_path):
    expected = r"(?i)exited with status \d+ before capturing: .*invalid capture filter"
    with pytest.raises(CaptureError, match=expected):
        with capture_loopback([70000], tmp_path / "bad.pcap", timeout=TIMEOUT):
            pytest.fail("the block ran without a capture")
