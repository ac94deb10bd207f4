"""Replay of a large capture streams (issue "Captures": a 100 MB pcap replays with memory under
300 MB and a progress bar).

The capture is recorded, not built: a client sends the BlipMQ reference broker, through the
recording relay (wirecheck/conformance/captures/relay.py), 64 KiB QoS 1 publishes in pipelined batches of 16,
each batch followed by a PING whose PONG is awaited, until the capture holds 100 MB (``--quick``: 8 MB). ``wirecheck replay``
then runs in a child process against a fresh broker, with the progress bar on; measured: the
child's peak resident memory (``replay.<size>.rss``, MB; ``peer`` the goal's 300 MB and
``ratio`` the peak over it, ``<= 1`` met) and the capture bytes replayed per second
(``replay.<size>.mbps``).
"""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

from wirecheck.conformance.captures.relay import CaptureFile, CaptureProxy
from wirecheck.reference_impl.blipmq import codec as blip
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.server import ThreadedServer

from benchmarks.bench_blipmq_decode import result
from soak.common import HighWater

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOAL_RSS_MB = 300.0
SIZES = {False: 100_000_000, True: 8_000_000}
MESSAGE = 64 * 1024
BATCH = 16


def _recv(sock: socket.socket, decoder, n: int) -> list:
    frames: list = []
    while len(frames) < n:
        data = sock.recv(1 << 20)
        if not data:
            raise RuntimeError(f"broker closed after {len(frames)} of {n} answers")
        frames += decoder.feed(data)
    return frames


def record(path: str, size: int) -> tuple[int, int]:
    """Record the capture; (the relay's port, connections)."""
    spec = registry.get("blipmq")
    capture = CaptureFile(path)
    broker = spec.make_broker("127.0.0.1", 0)
    with ThreadedServer(broker) as server:
        proxy = asyncio.run_coroutine_threadsafe(
            CaptureProxy(capture, (broker.host, broker.port)).start(), server.loop).result(10)
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        decoder = spec.make_decoder()
        sock.sendall(blip.encode(blip.Hello(1)) + blip.encode(blip.Auth(2, "dev-key")))
        _recv(sock, decoder, 2)
        body = bytes(range(256)) * (MESSAGE // 256)
        cid, sent = 3, 0
        while sent < size:
            batch = b"".join(blip.encode(blip.Publish(cid + i, 1, "bench.replay", body)) for i in range(BATCH))
            sock.sendall(batch + blip.encode(blip.Ping(cid + BATCH)))    # PONG: the batch was read
            _recv(sock, decoder, 1)
            cid += BATCH + 1
            sent += len(batch)
        sock.close()
        time.sleep(0.2)                      # the relay writes the FINs
        asyncio.run_coroutine_threadsafe(proxy.stop(), server.loop).result(10)
    capture.close()
    return proxy.port, capture.connections


def replay_child(path: str, relay_port: int) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB, stderr) of ``wirecheck replay`` in a child process. The peak
    is the child's own ``VmHWM`` (its address space's high-water mark), read while it runs:
    wait4's ``ru_maxrss`` is not the child's own, as Linux carries the parent's peak into a
    child over fork and exec (``make bench`` ran this after benchmarks that grew the parent to
    about 320 MB, which then showed as the replay's peak)."""
    broker = registry.get("blipmq").make_broker("127.0.0.1", 0)
    with ThreadedServer(broker) as server, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        cmd = [sys.executable, "-m", "wirecheck", "replay", path, "--protocol", "blipmq",
               "--port", str(relay_port), "--target", f"127.0.0.1:{server.address[1]}",
               "--fast", "--progress", "--json"]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err)
        peak = HighWater(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        peak.stop()
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"replay failed ({proc.returncode}): {stdout[-2000:]} {stderr[-2000:]}")
    summary = json.loads(stdout.strip().splitlines()[-1])
    if summary["equivalent"] != summary["connections"] or summary["frames_compared"] < 3:
        raise RuntimeError(f"the replay did not compare the capture: {summary}")
    return elapsed, peak.mb if peak.mb else usage.ru_maxrss / 1024.0, stderr


def run(quick: bool = False) -> list[dict]:
    size = SIZES[quick]
    label = f"{size // 1_000_000}mb"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.pcap")
        relay_port, _ = record(path, size)
        file_size = os.path.getsize(path)
        elapsed, rss, err = replay_child(path, relay_port)
    if "replay" not in err:
        raise RuntimeError("no progress bar on stderr")
    return [result(f"replay.{label}.rss", round(rss, 1), "MB", GOAL_RSS_MB, round(rss / GOAL_RSS_MB, 4), "<= 1"),
            result(f"replay.{label}.mbps", round(file_size / 1e6 / elapsed, 2), "MB/s")]
