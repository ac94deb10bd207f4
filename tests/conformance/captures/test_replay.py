"""Capture files, TCP reassembly, the recording relay and ``wirecheck replay``
(wirecheck/conformance/captures/pcapfile.py, tcpflows.py, captures/relay.py, replay.py)."""
from __future__ import annotations

import asyncio
import gzip
import io
import json
import os
import random
import socket
import subprocess
import sys
import threading

import pytest

from wirecheck.conformance.captures import replay
from wirecheck.conformance.captures.relay import CaptureFile, CaptureProxy
from wirecheck.conformance.captures.decode import decode_pcap
from wirecheck.conformance.captures.pcapfile import (CaptureFormatError, PcapReader, PcapWriter, Segment, TcpConversation,
                                  tcp_packet)
from wirecheck.conformance.captures.tcpflows import TcpReassembler
from wirecheck.reference_impl.blipmq import codec as blip
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.server import ThreadedServer

from tests.support.faulty_targets import WrongNackCode, broker_with

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BLIP = registry.get("blipmq")
TIMEOUT = 5.0


# -- capture files -----------------------------------------------------------------------------

def _write_conversation(path, client, server, c2s: bytes, s2c: bytes, end="fin"):
    with PcapWriter(str(path)) as w:
        conv = TcpConversation(w, client, server, 100.0)
        conv.data("c2s", c2s, 100.1)
        conv.data("s2c", s2c, 100.2)
        if end == "fin":
            conv.close("c2s", 100.3)
            conv.close("s2c", 100.4)
        else:
            conv.reset("s2c", 100.3)


@pytest.mark.parametrize("client,server", [(("10.0.0.1", 40000), ("10.0.0.2", 5555)),
                                           (("::1", 40000), ("fe80::2", 5555))])
def test_written_capture_reads_back(tmp_path, client, server):
    big = bytes(random.Random(1).randrange(256) for _ in range(200_000))   # several segments
    _write_conversation(tmp_path / "c.pcap", client, server, b"hello" + big, b"world")
    segs = list(PcapReader(str(tmp_path / "c.pcap")))
    assert [s.flags for s in segs[:3]] == ["S", "SA", "A"]
    data = b"".join(s.data for s in segs if s.src == client)
    assert data == b"hello" + big
    assert b"".join(s.data for s in segs if s.src == server) == b"world"
    assert {s.flags for s in segs[-2:]} == {"FA"}
    # sequence numbers continue across segments
    c = [s for s in segs if s.src == client and s.data]
    assert all(b.seq == a.seq + len(a.data) for a, b in zip(c, c[1:]))


def test_tshark_reads_the_written_capture(tmp_path):
    """The synthetic framing is a valid capture for other tools too (checksums, lengths)."""
    import shutil
    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed (make tshark)")
    # a port no Wireshark dissector claims, so only IP and TCP are checked
    _write_conversation(tmp_path / "c.pcap", ("10.0.0.1", 40000), ("10.0.0.2", 47123), b"x" * 100_000, b"y")
    out = subprocess.run(["tshark", "-r", str(tmp_path / "c.pcap"), "-o", "tcp.check_checksum:TRUE",
                          "-o", "ip.check_checksum:TRUE", "-T", "fields", "-e", "tcp.len",
                          "-e", "tcp.checksum.status", "-e", "ip.checksum.status", "-e", "_ws.expert"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert sum(int(r[0]) for r in rows) == 100_001
    assert all(r[1] == "1" and r[2] == "1" for r in rows), rows     # 1: good
    assert not any("Warning" in r[3] or "Error" in r[3] for r in rows), rows


def test_gzip_and_pcapng_captures(tmp_path):
    _write_conversation(tmp_path / "c.pcap", ("10.0.0.1", 40000), ("10.0.0.2", 5555), b"abc", b"de")
    plain = [(s.src, s.seq, s.data) for s in PcapReader(str(tmp_path / "c.pcap"))]
    (tmp_path / "c.pcap.gz").write_bytes(gzip.compress((tmp_path / "c.pcap").read_bytes()))
    assert [(s.src, s.seq, s.data) for s in PcapReader(str(tmp_path / "c.pcap.gz"))] == plain
    from scapy.utils import PcapNgWriter, rdpcap
    with PcapNgWriter(str(tmp_path / "c.pcapng")) as w:
        for pkt in rdpcap(str(tmp_path / "c.pcap")):
            w.write(pkt)
    assert [(s.src, s.seq, s.data) for s in PcapReader(str(tmp_path / "c.pcapng"))] == plain


@pytest.mark.parametrize("content", [b"", b"not a capture", b"\xd4\xc3\xb2\xa1" + b"\0" * 10,
                                     b"\x1f\x8b\x08\x00garbage"])
def test_broken_files_raise_capture_format_error(tmp_path, content):
    path = tmp_path / "bad.pcap"
    path.write_bytes(content)
    with pytest.raises(CaptureFormatError):
        list(PcapReader(str(path)))


def test_truncated_record_raises(tmp_path):
    _write_conversation(tmp_path / "c.pcap", ("10.0.0.1", 40000), ("10.0.0.2", 5555), b"abc" * 100, b"de")
    data = (tmp_path / "c.pcap").read_bytes()
    (tmp_path / "t.pcap").write_bytes(data[:-7])
    with pytest.raises(CaptureFormatError, match="ends inside"):
        list(PcapReader(str(tmp_path / "t.pcap")))


# -- reassembly --------------------------------------------------------------------------------

class _Collect:
    def __init__(self):
        self.bytes, self.ends, self.conns = {}, [], []

    def opened(self, conn, time):
        self.conns.append(conn)

    def data(self, stream, data, time):
        key = (stream.conn.index, stream.direction)
        self.bytes[key] = self.bytes.get(key, b"") + data

    def ended(self, stream, time, how, missing):
        self.ends.append((stream.conn.index, stream.direction, how, missing))


def _segments(payload: bytes, size: int, seq0: int = 1001):
    c, s = ("10.0.0.1", 40000), ("10.0.0.2", 5555)
    out = [Segment(0.0, c, s, 1000, 0, "S", b""), Segment(0.0, s, c, 9000, 1001, "SA", b"")]
    for i in range(0, len(payload), size):
        out.append(Segment(0.0, c, s, seq0 + i, 9001, "PA", payload[i:i + size]))
    return out


def test_reassembly_handles_reordering_retransmission_and_overlap():
    payload = bytes(range(256)) * 40
    segs = _segments(payload, 100)
    head, body = segs[:2], segs[2:]
    random.Random(5).shuffle(body)
    body += body[:10]                                    # retransmissions
    body.append(Segment(0.0, body[0].src, body[0].dst, 1001 + 50, 9001, "PA", payload[50:250]))  # overlap
    sink = _Collect()
    r = TcpReassembler(sink, [5555])
    for seg in head + body:
        r.segment(seg)
    r.close(1.0)
    assert sink.bytes[(0, "c2s")] == payload
    assert (0, "c2s", "end", None) in sink.ends


def test_reassembly_reports_missing_bytes():
    payload = b"x" * 1000
    segs = _segments(payload, 100)
    del segs[5]                                          # bytes 300..400 never captured
    sink = _Collect()
    r = TcpReassembler(sink, [5555])
    for seg in segs:
        r.segment(seg)
    r.close(1.0)
    assert sink.bytes[(0, "c2s")] == payload[:300]
    assert (0, "c2s", "end", (300, 400)) in sink.ends


def test_reassembly_tells_reused_addresses_and_mid_stream_captures_apart():
    segs = _segments(b"first", 5) + _segments(b"second", 6, seq0=5001)
    segs[len(segs) // 2] = Segment(0.0, ("10.0.0.1", 40000), ("10.0.0.2", 5555), 5000, 0, "S", b"")
    sink = _Collect()
    r = TcpReassembler(sink, [5555])
    for seg in segs:
        r.segment(seg)
    # a connection whose SYN is not in the capture: the side on the protocol's port is the server
    r.segment(Segment(0.0, ("10.0.0.3", 1234), ("10.0.0.2", 5555), 77, 0, "PA", b"mid"))
    r.close(1.0)
    assert sink.bytes[(0, "c2s")] == b"first" and sink.bytes[(1, "c2s")] == b"second"
    assert sink.bytes[(2, "c2s")] == b"mid" and sink.conns[2].mid_stream
    assert (0, "c2s", "reused", None) in sink.ends


# -- the recording relay -----------------------------------------------------------------------

class _Recorded:
    """The BlipMQ reference broker (or a faulty one) behind a recording relay."""

    def __init__(self, path, broker=None):
        self.capture = CaptureFile(str(path))
        self.broker = broker or BLIP.make_broker("127.0.0.1", 0)
        self.server = ThreadedServer(self.broker)

    def __enter__(self):
        self.server.start()
        self.proxy = asyncio.run_coroutine_threadsafe(
            CaptureProxy(self.capture, (self.broker.host, self.broker.port)).start(), self.server.loop).result(5)
        return self

    def __exit__(self, *exc):
        asyncio.run_coroutine_threadsafe(self.proxy.stop(), self.server.loop).result(5)
        self.server.stop()
        self.capture.close()


def _recv_frames(sock, n):
    dec = BLIP.make_decoder()
    frames = []
    while len(frames) < n:
        data = sock.recv(65536)
        assert data, f"closed after {frames}"
        frames += dec.feed(data)
    return frames


def _session(port, *, split=False, nack=True):
    """Hello, Auth, a publish with an empty topic (NACK 400), a big publish, ping."""
    frames = [blip.Hello(1), blip.Auth(2, "dev-key"), blip.Publish(4, 0, "t", b"z" * 150_000), blip.Ping(5)]
    if nack:
        frames.insert(2, blip.Publish(3, 1, "", b"x"))
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    got = []
    for f in frames:
        raw = blip.encode(f)
        if split:
            for i in range(0, len(raw), 3):
                sock.sendall(raw[i:i + 3])
        else:
            sock.sendall(raw)
        if not isinstance(f, blip.Publish) or f.qos or not f.topic:
            got += _recv_frames(sock, 1)
    sock.shutdown(socket.SHUT_WR)
    assert sock.recv(10) == b""
    sock.close()
    return frames, got


def test_relay_records_what_both_sides_said(tmp_path):
    with _Recorded(tmp_path / "s.pcap") as rec:
        sent, got = _session(rec.proxy.port, split=True)
    out = io.StringIO()
    assert decode_pcap(BLIP, str(tmp_path / "s.pcap"), ports=[rec.proxy.port], out=out) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [d["type"] for d in lines if d["direction"] == "c2s"] == [type(f).__name__.upper() for f in sent]
    assert [d["type"] for d in lines if d["direction"] == "s2c"] == [type(f).__name__.upper() for f in got]
    assert rec.capture.connections == 1
    flags = [s.flags for s in PcapReader(str(tmp_path / "s.pcap"))]
    assert flags[:3] == ["S", "SA", "A"] and flags.count("FA") == 2


def test_relay_records_a_reset(tmp_path):
    import struct
    with _Recorded(tmp_path / "s.pcap") as rec:
        sock = socket.create_connection(("127.0.0.1", rec.proxy.port), timeout=TIMEOUT)
        sock.sendall(blip.encode(blip.Hello(1)))
        _recv_frames(sock, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        deadline = 50
        while rec.proxy.relays and deadline:
            import time
            time.sleep(0.05)
            deadline -= 1
    flags = [s.flags for s in PcapReader(str(tmp_path / "s.pcap"))]
    assert "RA" in flags


def test_relay_keeps_the_client_side_after_the_server_ended_it_then_reset(tmp_path):
    """The server sends its FIN, then resets on the bytes the client still sends: the client
    keeps its side (it has the FIN) and its own close is what the relay reports, not a cut."""
    import struct
    import threading
    import time
    upstream = socket.socket()
    upstream.bind(("127.0.0.1", 0))
    upstream.listen(1)
    upstream.settimeout(TIMEOUT)

    def serve():
        conn, _ = upstream.accept()
        conn.settimeout(TIMEOUT)
        conn.shutdown(socket.SHUT_WR)                    # the server's FIN
        conn.recv(100)                                   # the client's late bytes
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()                                     # and its reset
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ends = []

    def tap(relay, direction, data):
        if not isinstance(data, (bytes, bytearray)):
            ends.append((direction, "fin" if data is None or data is False else "rst"))
    capture = CaptureFile(str(tmp_path / "s.pcap"))
    loop = asyncio.new_event_loop()
    proxy = loop.run_until_complete(CaptureProxy(capture, upstream.getsockname(), tap=tap).start())
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    try:
        client = socket.create_connection(("127.0.0.1", proxy.port), timeout=TIMEOUT)
        assert client.recv(10) == b""                    # the FIN came through
        client.sendall(b"late")
        thread.join(TIMEOUT)
        time.sleep(0.1)
        for _ in range(3):                               # writing to the reset socket fails
            client.sendall(b"more")
            time.sleep(0.1)
        client.shutdown(socket.SHUT_WR)                  # the client ends its side itself
        deadline = time.monotonic() + TIMEOUT
        while ("c2s", "fin") not in ends and time.monotonic() < deadline:
            time.sleep(0.02)
        client.close()
    finally:
        asyncio.run_coroutine_threadsafe(proxy.stop(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        runner.join(5)
        capture.close()
        upstream.close()
    assert ends[:2] == [("s2c", "fin"), ("c2s", "fin")], ends


# -- replay ------------------------------------------------------------------------------------

def _options(port, **kw):
    return replay.ReplayOptions(("127.0.0.1", port), **kw)


@pytest.fixture
def recorded(tmp_path):
    path = tmp_path / "s.pcap"
    with _Recorded(path) as rec:
        _session(rec.proxy.port, split=True)
        _session(rec.proxy.port)
    return path, rec.proxy.port


@pytest.mark.parametrize("rechunk", [False, True])
def test_replay_against_a_fresh_broker_is_equivalent(recorded, rechunk):
    path, port = recorded
    with ThreadedServer(BLIP.make_broker("127.0.0.1", 0)) as target:
        results = replay.replay_capture(BLIP, str(path), _options(target.address[1], ports=(port,),
                                                                     rechunk=rechunk, seed=7))
    assert [r.verdict for r in results] == ["PASS", "PASS"], [r.mismatches for r in results]
    assert [r.frames_compared for r in results] == [4, 4]


def test_replay_against_a_faulty_broker_shows_the_difference(recorded, tmp_path):
    path, port = recorded
    with ThreadedServer(broker_with(WrongNackCode)) as target:
        results = replay.replay_capture(BLIP, str(path), _options(target.address[1], ports=(port,)))
    assert [r.verdict for r in results] == ["FAIL", "FAIL"]
    # The difference from the recording, and the rule the answer breaks (the observer, run on
    # the replayed conversation, knows NACK 401 is not the answer to a bad PUBLISH).
    assert results[0].mismatches == ["frame 3: code: expected 400, got 401",
                                     "the target broke BLIP-PUB-002 (MUST): NACK 401 to PUBLISH (#4); "
                                     "expected NACK 400"]
    assert results[0].requirements == ["BLIP-PUB-002"]
    assert results[0].expected and "400" in results[0].expected[0]


def test_replay_of_a_broker_that_stops_answering(recorded):
    """The target accepts and reads but never answers: every recorded frame is reported
    missing, the first after the timeout and the rest at once (no hang)."""
    from tests.support.faulty_targets import BlackHole
    path, port = recorded
    hole = BlackHole()
    try:
        results = replay.replay_capture(BLIP, str(path), _options(hole.port, ports=(port,), timeout=0.5))
    finally:
        hole.close()
    assert [r.verdict for r in results] == ["FAIL", "FAIL"]
    assert "nothing came within" in results[0].mismatches[0]


def _polling_session(port, rounds=20, every=0.025):
    """A QoS1 subscriber that takes a message and never acknowledges it, then POLLs (a PING
    behind each POLL as the barrier) every ``every`` seconds: the broker's redelivery timer
    decides which POLL gets the message again."""
    import time
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    dec = BLIP.make_decoder()

    def ask(*frames):
        sock.sendall(b"".join(blip.encode(f) for f in frames))
        got = []
        while not got or not isinstance(got[-1], (blip.Ack, blip.Pong, blip.Nack)):
            data = sock.recv(65536)
            assert data, f"closed after {got}"
            got += dec.feed(data)
        return got

    cid = iter(range(1, 10_000))
    ask(blip.Hello(next(cid)))
    ask(blip.Auth(next(cid), "dev-key"))
    sub = ask(blip.Subscribe(next(cid), "timer.topic", 1))[-1].subscription_id
    ask(blip.Publish(next(cid), 1, "timer.topic", b"again"), blip.Ping(next(cid)))
    answers = []
    for _ in range(rounds):
        answers += ask(blip.Poll(next(cid), sub), blip.Ping(next(cid)))
        time.sleep(every)
    sock.close()
    return [f for f in answers if isinstance(f, blip.Publish)]


@pytest.mark.parametrize("backoff", [0.06, 0.15])
def test_replay_matches_redeliveries_whichever_poll_they_answer(tmp_path, backoff):
    """A target whose redelivery timer fires earlier or later than the recorded server's answers
    a different POLL with the message: the same conversation, so EQUIVALENT. The first delivery,
    and every other frame, is still compared in order."""
    path = tmp_path / "timer.pcap"
    with _Recorded(path) as rec:
        delivered = _polling_session(rec.proxy.port)
    assert len(delivered) == 3, delivered          # the delivery and two redeliveries (0.1 s, 0.2 s)
    with ThreadedServer(BLIP.make_broker("127.0.0.1", 0, retry_backoff=backoff)) as target:
        results = replay.replay_capture(BLIP, str(path), _options(target.address[1], ports=(rec.proxy.port,),
                                                                     timeout=1.0))
    assert [r.verdict for r in results] == ["PASS"], results[0].mismatches
    notes = [e[3] for e in results[0].transcript["entries"] if "a timer's frame" in e[3]]
    assert len(notes) == 2, [e[3] for e in results[0].transcript["entries"]]


def test_replay_notes_redeliveries_that_never_come_or_were_not_recorded(tmp_path):
    """How often a redelivery timer fires depends on its setting and the replay's pace (a slow
    link, a busy machine): a repeat missing on either side is a note naming it, never a FAIL.
    The first delivery of each message is still compared in order."""
    path = tmp_path / "timer.pcap"
    with _Recorded(path) as rec:
        delivered = _polling_session(rec.proxy.port)
    # two redeliveries on a quiet machine; fewer on a busy one, where the polls come later
    assert len(delivered) >= 2, delivered
    with ThreadedServer(BLIP.make_broker("127.0.0.1", 0, retry_backoff=30.0)) as target:
        never = replay.replay_capture(BLIP, str(path), _options(target.address[1], ports=(rec.proxy.port,),
                                                                   timeout=0.3))
    assert never[0].verdict == "PASS", never[0].mismatches
    # each note names its wait: the replay timeout, or longer where the recording's gap was
    assert sum("again (a timer's frame); the target did not within" in n
               for n in never[0].notes) == len(delivered) - 1, never[0].notes
    quiet = tmp_path / "quiet.pcap"
    with _Recorded(quiet, BLIP.make_broker("127.0.0.1", 0, retry_backoff=30.0)) as rec:
        assert len(_polling_session(rec.proxy.port)) == 1
    with ThreadedServer(BLIP.make_broker("127.0.0.1", 0, retry_backoff=0.02)) as target:
        extra = replay.replay_capture(BLIP, str(quiet), _options(target.address[1], ports=(rec.proxy.port,),
                                                                    timeout=0.3))
    assert extra[0].verdict == "PASS", extra[0].mismatches
    assert any("again (a timer's frame) where the recorded server did not" in n for n in extra[0].notes), \
        extra[0].notes


def test_replay_of_a_shuffled_capture_with_a_hole(tmp_path, recorded):
    """Out-of-order and retransmitted segments replay as recorded; a missing client segment
    makes that connection incomplete (SKIPPED), not a mismatch."""
    path, port = recorded
    segs = list(PcapReader(str(path)))
    rng = random.Random(3)
    # shuffle a run of the first connection's client segments with no answer between them (a
    # capture can show segments out of order, never an answer before what caused it)
    first_client = segs[0].src
    # The longest such run, up to 6 segments. How the client's 3-byte writes coalesce depends
    # on the machine's load; the 150 KB publish alone is at least 3 segments however its reads
    # coalesce (pcapfile.MAX_SEGMENT bytes at most each).
    run, length = _longest_client_run(segs, first_client, 6)
    assert length >= 3, f"no run of 3 client segments in {len(segs)} segments"
    window = segs[run:run + length]
    rng.shuffle(window)
    segs[run:run + length] = window
    segs.insert(run + length, segs[run + 2])             # a retransmission
    body = [i for i, s in enumerate(segs) if s.data and s.dst[1] == port and s.src != first_client]
    holed = [s for i, s in enumerate(segs) if i != body[len(body) // 2]]   # the second loses one
    with PcapWriter(str(tmp_path / "holed.pcap")) as w:
        for s in holed:                                  # each with its own numbers
            w.write(s.time, tcp_packet(s.src, s.dst, s.seq, s.ack, s.flags, s.data))
    with ThreadedServer(BLIP.make_broker("127.0.0.1", 0)) as target:
        results = replay.replay_capture(BLIP, str(tmp_path / "holed.pcap"),
                                           _options(target.address[1], ports=(port,), timeout=1.0))
    assert results[0].verdict == "PASS", results[0].mismatches
    assert results[1].verdict == "SKIPPED" and "lacks client bytes" in results[1].incomplete


def _longest_client_run(segs, client, cap: int) -> tuple[int, int]:
    """(start, length) of the longest run of data segments from ``client``, at most ``cap``."""
    best, start = (0, 0), None
    for i, seg in enumerate(segs + [None]):
        if seg is not None and seg.src == client and seg.data:
            start = i if start is None else start
            best = max(best, (min(i - start + 1, cap), -start))
        else:
            start = None
    return -best[1], best[0]


def test_replay_of_a_byte_file(tmp_path):
    """A fuzzer's finding: the bytes go over one connection; the target must still accept
    connections afterwards."""
    finding = tmp_path / "finding.bin"
    finding.write_bytes(blip.encode(blip.Hello(1)) + b"\x00\x00\x00\x05\xee\x00\x00\x00\x00")
    with ThreadedServer(BLIP.make_broker("127.0.0.1", 0)) as target:
        [result] = replay.replay_bytes(BLIP, str(finding), _options(target.address[1], timeout=1.0))
    assert result.verdict == "PASS", result.mismatches
    assert any("answers the liveness probe" in n for n in result.notes)
    # nothing listens any more: the "crash" is reported
    port = target.address[1]
    [result] = replay.replay_bytes(BLIP, str(finding), _options(port, timeout=0.5))
    assert result.verdict == "FAIL" and "cannot connect" in result.mismatches[0]


def _cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "wirecheck", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def test_cli_replay_exit_codes_and_report(recorded, tmp_path):
    path, port = recorded
    with ThreadedServer(BLIP.make_broker("127.0.0.1", 0)) as target:
        ok = _cli("replay", str(path), "--target", f"127.0.0.1:{target.address[1]}", "--protocol",
                  "blipmq", "--port", str(port), "--json")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    summary = json.loads(ok.stdout.strip().splitlines()[-1])
    assert summary["connections"] == 2 and summary["equivalent"] == 2 and summary["frames_compared"] == 8
    with ThreadedServer(broker_with(WrongNackCode)) as target:
        bad = _cli("replay", str(path), "--target", f"127.0.0.1:{target.address[1]}", "--protocol",
                   "blipmq", "--port", str(port), "--report", str(tmp_path / "r.html"))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "expected 400, got 401" in bad.stdout
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [t["verdict"] for t in doc["tests"]] == ["FAIL", "FAIL"]
    html = (tmp_path / "r.html").read_text()
    assert "expected 400, got 401" in html
    # the result file reads back as a run for `wirecheck report`
    merged = _cli("report", str(tmp_path / "r.json"), "--out", str(tmp_path / "merged.html"))
    assert merged.returncode == 0, merged.stderr


def test_cli_replay_errors(tmp_path):
    assert _cli("replay", str(tmp_path / "none.pcap"), "--target", "127.0.0.1:1").returncode == 2
    (tmp_path / "x.pcap").write_bytes(b"\xd4\xc3\xb2\xa1")
    r = _cli("replay", str(tmp_path / "x.pcap"), "--target", "127.0.0.1:1", "--protocol", "blipmq")
    assert r.returncode == 2 and "x.pcap" in r.stderr
    _write_conversation(tmp_path / "c.pcap", ("10.0.0.1", 40000), ("10.0.0.2", 7), b"a", b"b")
    r = _cli("replay", str(tmp_path / "c.pcap"), "--target", "127.0.0.1:1")
    assert r.returncode == 2 and "--protocol" in r.stderr
    r = _cli("replay", str(tmp_path / "c.pcap"), "--target", "127.0.0.1:1", "--protocol", "blipmq")
    assert r.returncode == 2 and "no blipmq connection" in r.stderr


def test_replay_runs_the_target_itself_and_names_its_crash(tmp_path):
    """`wirecheck replay --target-command`: the kit starts the target, replays, stops it; a
    target that died during the replay is named with its exit status (exit 1), not left to
    look like connections that were merely closed."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[3]
    capture = str(root / "captures" / "blipmq" / "client.pcap.gz")
    healthy = subprocess.run([sys.executable, "-m", "wirecheck", "replay", capture, "--fast", "--target-command",
                              f"{sys.executable} -m wirecheck serve --protocol blipmq --port {{port}}"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "2 equivalent" in healthy.stdout
    crashing = subprocess.run([sys.executable, "-m", "wirecheck", "replay", capture, "--fast", "--target-command",
                               f"{sys.executable} {root / 'tests' / 'support' / 'crashing_target.py'} --crash-on 3 --port {{port}}"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert crashing.returncode == 1, crashing.stdout + crashing.stderr
    assert "the target went down during the replay (exit code 70)" in crashing.stderr
    missing = subprocess.run([sys.executable, "-m", "wirecheck", "replay", capture],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "give --target HOST:PORT, or --target-command CMD" in missing.stderr


# -- SignalR: a cancelled stream's items in flight -------------------------------------------------

_RS = b"\x1e"


def _sig(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + _RS


class _CancelHub:
    """A raw-TCP SignalR hub that answers the recorded session, and sends ``extra`` more items
    of the stream after the client's CancelInvocation (items in flight when it came)."""

    def __init__(self, extra: int, complete: bool = False) -> None:
        self.extra, self.complete = extra, complete
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        conn.settimeout(TIMEOUT)
        buf = b""
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while _RS in buf:
                    record, buf = buf.split(_RS, 1)
                    msg = json.loads(record)
                    if "protocol" in msg:
                        conn.sendall(_sig({}))
                    elif msg.get("type") == 4:
                        conn.sendall(_sig({"type": 2, "invocationId": "1", "item": 0})
                                     + _sig({"type": 2, "invocationId": "1", "item": 1})
                                     + (_sig({"type": 3, "invocationId": "1"}) if self.complete else b""))
                    elif msg.get("type") == 5:
                        conn.sendall(b"".join(_sig({"type": 2, "invocationId": "1", "item": 2 + i})
                                              for i in range(self.extra)))
                    elif msg.get("type") == 1:
                        conn.sendall(_sig({"type": 3, "invocationId": msg["invocationId"],
                                           "result": msg["arguments"][0]}))

    def close(self) -> None:
        self.sock.close()


def _cancel_capture(path, completed: bool) -> None:
    """A raw-TCP SignalR session: a stream of which two items come, cancelled (or, with
    ``completed``, ended by the server's Completion first), then an Echo."""
    client, server = ("127.0.0.1", 41000), ("127.0.0.1", 5101)
    with PcapWriter(str(path)) as w:
        conv = TcpConversation(w, client, server, 100.0)
        steps = [("c2s", _sig({"protocol": "json", "version": 1})), ("s2c", _sig({})),
                 ("c2s", _sig({"type": 4, "invocationId": "1", "target": "Counter", "arguments": [9, 10]})),
                 ("s2c", _sig({"type": 2, "invocationId": "1", "item": 0})
                  + _sig({"type": 2, "invocationId": "1", "item": 1})
                  + (_sig({"type": 3, "invocationId": "1"}) if completed else b"")),
                 ("c2s", _sig({"type": 5, "invocationId": "1"})),
                 ("c2s", _sig({"type": 1, "invocationId": "2", "target": "Echo", "arguments": ["x"]})),
                 ("s2c", _sig({"type": 3, "invocationId": "2", "result": "x"}))]
        t = 100.1
        for direction, data in steps:
            conv.data(direction, data, t)
            t += 0.01
        conv.close("c2s", t)
        conv.close("s2c", t + 0.01)


@pytest.mark.parametrize("extra,completed,verdict", [(0, False, "PASS"), (1, False, "PASS"), (3, False, "PASS"),
                                                     (4, False, "FAIL"), (1, True, "FAIL")])
def test_replay_takes_a_cancelled_streams_items_in_flight(tmp_path, extra, completed, verdict):
    """Items of a stream the client cancelled may still come after the cancel (they were in
    flight), in any order with the answers to later invocations: up to three are noted, not
    mismatches; a fourth, or an item after a stream the recording completed, is one."""
    spec = registry.get("signalr")
    path = tmp_path / "cancel.pcap"
    _cancel_capture(path, completed)
    hub = _CancelHub(extra, complete=completed)
    try:
        [result] = replay.replay_capture(spec, str(path), _options(hub.port, ports=(5101,), timeout=1.0))
    finally:
        hub.close()
    assert result.verdict == verdict, (result.mismatches, result.notes)
    noted = [n for n in result.notes if "beyond the recording's" in n]
    assert len(noted) == (0 if completed else min(extra, 3)), result.notes
    if verdict == "FAIL":
        late = '"item": 5' if not completed else '"item": 2'
        assert any(late in m for m in result.mismatches), result.mismatches
