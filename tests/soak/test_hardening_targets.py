"""The kit against hostile targets, fast version (soak/hostile_targets.py runs the full one):
for every protocol (SignalR over raw TCP and over HTTP + WebSocket), ``wirecheck check`` in a
child process against a black hole, an endless stream of valid frames, a ~4 GiB length prefix
and a reset on connect must end within ``cases x timeout + 60 s``, give every case a verdict
(FAIL/TIMEOUT with a reason), keep its peak memory under the bound and exit non-zero.

One handshake case per protocol with a 0.3 s receive timeout keeps it to seconds (the quick
soak run, ``python -m soak.hostile_targets --quick``, adds the hypothesis state machines, whose
shrinking is what repeats a failure, and the other four servers).
Plus the kit's own bounds, in process: a bounded transcript, a per-test budget, the SignalR
suite dropping a flood of Pings, and the run's allowance for transcripts in reports.
"""
from __future__ import annotations

import json
import time

import pytest

from wirecheck.conformance.target.connection import Budget, BudgetSpent, RunAllowance, Transcript, TranscriptLimits, spent_in
from soak import hostile_targets as soak
from tests.support import hostile_targets

#: A handshake test per protocol: one connection, one answer expected.
FAST_SELECTION = {
    "blipmq": "test_document_hello_sample_gets_ack_zero",
    "vibemq": "test_connect_is_acknowledged",
    "micromessage2": "test_offer_without_extensions_gets_a_handshake",
    "rabbitmq-stream": "test_full_handshake",
    "signalr": "test_handshake_then_the_chosen_protocol",
}
SERVERS = ("black-hole", "endless", "huge-length", "rst-on-connect")
#: SignalR over WebSocket: the parts of its own (negotiate and upgrade bounded as a whole, a
#: WebSocket frame declaring ~4 GiB); the raw TCP run covers the other two.
WS_SERVERS = ("black-hole", "huge-length")


@pytest.mark.parametrize("label,protocol,transport", soak.TARGETS, ids=[t[0] for t in soak.TARGETS])
def test_kit_survives_hostile_targets(label, protocol, transport, tmp_path):
    soak._raise_nofile()
    extra = ["-k", FAST_SELECTION[protocol]]
    expected = soak.collect(protocol, extra, str(tmp_path))
    assert expected, "the selection must name at least one case"
    for kind in (WS_SERVERS if transport == "ws" else SERVERS):
        result = soak.run_case(label, protocol, transport, kind, timeout=soak.QUICK_TIMEOUT, extra=extra,
                               expected=expected, workdir=str(tmp_path))
        assert result["ok"], (kind, result)
        assert result["verdicts"].keys() <= {"FAIL", "TIMEOUT"}, (kind, result["verdicts"])


def test_transcript_is_bounded_and_says_it_was_cut():
    t = Transcript("flood", limits=TranscriptLimits(entries=10, entry_bytes=8, total_bytes=40))
    for i in range(1000):
        t.add("<-", bytes(100), f"frame {i}")
    assert len(t.entries) == 10
    assert all(len(e.data) <= 8 for e in t.entries) and sum(len(e.data) for e in t.entries) <= 40
    assert t.entries[0].length == 100
    shown = t.to_json()["entries"]
    assert len(shown) == 12 and "transcript cut: 989 entries" in shown[10][3]
    assert shown[-1][3] == "frame 999"
    assert "transcript cut" in t.render()


def test_signalr_suite_drops_a_flood_of_pings_with_a_clear_failure():
    """An endless stream of Pings: the suite's receive fails at once, naming the flood, and
    drops the connection (it used to read the stream for its whole timeout, each read one more
    transcript entry, and a test waiting for a close read it for its whole budget)."""
    from wirecheck.conformance.profiles import load_profile
    from wirecheck.conformance.suites.signalr.conftest import MAX_PINGS, Sig
    from wirecheck.conformance.target.connection import Target, TargetFlooded
    from wirecheck.reference_impl.core import registry
    spec = registry.get("signalr")
    for transport in ("tcp", "ws"):
        with hostile_targets.start("endless", "signalr", transport) as server:
            url = server.target if transport == "ws" else None
            tgt = Target("127.0.0.1", server.port, spec, load_profile(spec, "v1"), timeout=5.0, url=url)
            try:
                sig = Sig(tgt, "json")
                conn = sig.connect()
                started = time.monotonic()
                with pytest.raises(TargetFlooded, match=f"more than {MAX_PINGS} keep-alive Pings .*"
                                                        "expected the answer.*dropped the connection"):
                    sig.recv(conn, "the answer")
                assert time.monotonic() - started < 2.5, transport    # not its 5 s timeout
                with pytest.raises(TargetFlooded):                     # dropped: no more reading
                    conn.recv()
                with pytest.raises(TargetFlooded):
                    conn.send(b"x")
                assert tgt.budget.timeouts == 0
                transcript = tgt.transcripts[-1]
                assert len(transcript.entries) < 20, transcript.render()
                assert "the kit dropped the connection" in transcript.render()
            finally:
                tgt.close_all()


@pytest.mark.parametrize("label,transport", [("signalr", "tcp"), ("signalr-ws", "ws")])
def test_signalr_suite_against_an_endless_stream_of_pings(label, transport, tmp_path):
    """The SignalR cases that skip keep-alive Pings (a value round trip, and the silent client
    waiting for its close), against an endless stream of them: each fails at once, naming the
    flood. Before, each read the stream for its whole timeout (the silent client for its test
    budget) and the run went over the soak run's time and memory bounds."""
    extra = ["-k", "test_silent_client_is_dropped or test_values_carry_through"]
    expected = soak.collect("signalr", extra, str(tmp_path))
    assert len(expected) > 20
    result = soak.run_case(label, "signalr", transport, "endless", timeout=soak.FULL_TIMEOUT, extra=extra,
                           expected=expected, workdir=str(tmp_path))
    assert result["ok"], result
    # Reading the stream for the silent client's whole test budget took 100 s and more; failing
    # at once takes a few seconds, about 20 with both cores busy (a bound, not a speed target).
    assert result["goals"]["within_time_bound"]["figure"] < 60, result["goals"]
    report = json.loads((tmp_path / f"{label}-endless.json").read_text())
    silent = [t for t in report["tests"] if "test_silent_client_is_dropped" in t["nodeid"]]
    assert silent and all(t["verdict"] in ("FAIL", "NON-STRICT") and "keep-alive Pings" in t["message"]
                          for t in silent), silent       # SIGR-V1-009 is a SHOULD


def test_the_reports_of_a_run_attach_transcripts_within_an_allowance(monkeypatch):
    """Each failing report keeps its transcript until the run ends: over the run's allowance,
    later reports say theirs was left out."""
    from wirecheck.conformance import plugin
    from wirecheck.conformance.target.connection import Target

    class Config:
        stash = pytest.Stash()
    monkeypatch.setattr(plugin, "RUN_TRANSCRIPT_CHARS", 12000)
    tgt = Target("127.0.0.1", 1, None, None)
    for _ in range(3):
        tgt._transcript("flood").add("<-", bytes(1000), "frames")
    config = Config()
    text, wire = plugin.attached_transcripts(config, tgt)
    assert "transcript flood" in text and len(json.loads(wire)) == 3
    used = len(text) + len(wire)
    text2, _ = plugin.attached_transcripts(config, tgt)         # 2 x used > 12000
    assert used <= 12000 < 2 * used and text2.startswith("transcript left out (3 connection(s)")
    assert config.stash[plugin._ATTACHED_KEY] == used


def test_budget_stops_a_test_after_repeated_timeouts_and_connections():
    b = Budget(None, max_timeouts=2, max_connections=3)
    b.timed_out("first")
    with pytest.raises(BudgetSpent, match="First: first"):
        b.timed_out("second")
    for _ in range(3):
        b.opened()
    with pytest.raises(BudgetSpent, match="3 connections"):
        b.opened()
    assert not issubclass(BudgetSpent, Exception)     # no helper's except clause swallows it
    spent = Budget(0.0)
    with pytest.raises(BudgetSpent, match="budget of 0 s"):
        spent.left()


def test_the_run_allowance_bounds_every_test_budget():
    run = RunAllowance(0.5)
    run.begin_test()
    b = Budget(60.0, run=run)
    assert 0 < b.left() <= 0.5                       # the run's end comes first
    assert Budget(None, run=run).left() <= 0.5
    late = RunAllowance(7.0)
    late.spent = 7.01
    with pytest.raises(BudgetSpent, match="run's time allowance of 7 s"):
        Budget(60.0, run=late).left()


def test_the_run_allowance_is_spent_only_by_tests_that_do_not_pass():
    """However long the tests that pass take (a slow link), they leave the allowance whole;
    a test that fails or times out spends its time."""
    run = RunAllowance(0.3)
    for passed in (True, True):
        run.begin_test()
        time.sleep(0.2)
        assert run.left(time.monotonic()) < 0.15      # a running test counts its time so far
        run.end_test(passed)
    assert run.spent == 0 and run.left(time.monotonic()) == 0.3
    run.begin_test()
    time.sleep(0.2)
    run.end_test(False)
    assert 0.19 < run.spent < 0.3
    run.begin_test()
    time.sleep(0.15)
    with pytest.raises(BudgetSpent, match="run's time allowance of 0.3 s"):
        Budget(60.0, run=run).left()


def test_a_spent_budget_is_found_behind_what_hypothesis_raises_about_it():
    spent = BudgetSpent("out of time")
    try:
        try:
            raise spent
        except BudgetSpent:
            raise RuntimeError("Inconsistent data generation!")  # as hypothesis does
    except RuntimeError as exc:
        assert spent_in(exc) is spent
    assert spent_in(ValueError("x")) is None and spent_in(None) is None


def test_the_run_allowance_ends_a_run_against_a_black_hole(tmp_path):
    """Ten cases against a black hole with a budget of its own per test far larger than the
    run's: the run allowance (here 3 s) stops them all, each a TIMEOUT that says so."""
    import json
    import subprocess
    import sys
    server = hostile_targets.start("black-hole", "blipmq")
    report = tmp_path / "r.json"
    try:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "wirecheck", "check", "--protocol", "blipmq",
                               "--target", server.target, "--timeout", "1", "--report", str(report), "--no-preflight", "--",
                               "-p", "no:randomly", "--wirecheck-run-budget", "3", "-k",
                               "test_framing and (not unknown_frame_type or 0x0)"],
                              cwd=soak.ROOT, capture_output=True, text=True, timeout=120)
        wall = time.monotonic() - started
    finally:
        server.close()
    doc = json.loads(report.read_text())
    tests = doc["tests"]
    assert proc.returncode != 0 and len(tests) >= 10, proc.stdout[-2000:]
    assert {t["verdict"] for t in tests} == {"TIMEOUT"}
    assert any("run's time allowance of 3 s" in (t.get("message") or "") for t in tests)
    # Every case would otherwise wait its 1 s receive timeout three times over (30 s and
    # more). Measured from the run's own start, not the process's: starting Python and pytest
    # on a busy machine takes what it takes, and is not the allowance's to bound.
    run = doc["finished"] - doc["started"]
    assert run < 3 + 25, (run, wall)


@pytest.mark.parametrize("kind", hostile_targets.KINDS)
def test_hostile_servers_behave_as_named(kind):
    """Each server does what its name says (seen from a plain socket), so the runs above test
    what they claim."""
    import socket
    import time
    server = hostile_targets.start(kind, "blipmq", interval=0.05)
    try:
        try:
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        except ConnectionResetError:
            # the reset can arrive before connect() returns (a busy machine schedules the
            # client after the server's accept and abort)
            assert kind == "rst-on-connect"
            return
        from wirecheck.reference_impl.blipmq.codec import Hello, encode
        try:
            sock.sendall(encode(Hello(1, 1)))
        except OSError:
            pass
        got, end = b"", time.monotonic() + 1.0
        closed = False
        while time.monotonic() < end and len(got) < 200000:
            sock.settimeout(max(end - time.monotonic(), 0.01))
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            got += chunk
        sock.close()
    finally:
        server.close()
    if kind == "black-hole":
        assert not got and not closed
    elif kind == "rst-on-connect":
        assert closed and not got
    elif kind == "rst-mid-frame":
        assert closed and 0 < len(got) < 13
    elif kind == "huge-length":
        assert got[:4] == b"\xff\xff\xff\xf0" and not closed
    elif kind == "endless":
        assert len(got) >= 100000 and not closed
    elif kind == "trickle":
        assert 0 < len(got) < 40 and not closed
    elif kind == "garbage":
        assert len(got) > 1000
    elif kind == "never-close":
        assert got and not closed            # the broker's ACK to HELLO, and the connection stays
