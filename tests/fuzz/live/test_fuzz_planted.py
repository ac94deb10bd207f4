"""The network fuzzer's findings are facts (wirecheck/fuzz/live/fuzzer.py, live_replay.py): against the
planted BlipMQ servers of tests/support/planted_servers.py, started as ``--command`` starts them, every
reproducible crash is reproduced N of N on freshly started targets, one finding per root cause
(the three triggers are three; their mutated inputs are variants), a crash that needs an
earlier connection is replayed with it, a violation whose replay kills the target is a crash,
and a death the input did not cause (``kill -9``) is not a finding. Short campaigns, fixed seeds;
tests/fuzz/live/test_fuzz_planted_health.py has spin and growth, tests/fuzz/live/test_fuzz_soak.py the long runs."""
from __future__ import annotations

import json
import os
import signal
import struct
import sys
from pathlib import Path

from wirecheck.cli import fuzz as command
from wirecheck.fuzz.live.fuzzer import CRASH, VIOLATION, LiveFuzzer, LiveOptions, ManagedTarget
from wirecheck.fuzz.live.replay import Event
from wirecheck.reference_impl.blipmq import codec as blip
from wirecheck.reference_impl.core import registry

ROOT = Path(__file__).resolve().parents[3]
BLIP = registry.get("blipmq")
PLANTED = f"{sys.executable} {ROOT / 'tests' / 'support' / 'planted_servers.py'} --port {{port}} --data-dir {{data_dir}}"
TRIGGERS = ("auth-key-signed", "topic-signed", "type-0xee")


def planted(*args: str) -> ManagedTarget:
    target = ManagedTarget.command(f"{PLANTED} {' '.join(args)}")
    target.start()
    return target


def campaign(target: ManagedTarget, tmp_path, seed: int, cases: int, **options) -> tuple[LiveFuzzer, dict]:
    fuzzer = LiveFuzzer(BLIP, target.host, target.port,
                        LiveOptions(timeout=1.0, seed=seed, findings=tmp_path, **options), managed=target)
    return fuzzer, fuzzer.run(240, max_cases=cases)


def meta(finding: dict) -> dict:
    return json.loads(Path(finding["file"]).with_suffix(".json").read_text())


def assert_all_reproduced(summary: dict) -> None:
    assert summary["kit_error"] is None, summary["kit_error"]
    for f in summary["findings"]:
        assert f["replayed"] is True and f["reproduced"] == f["replays"] == 3, f


def raw(kind: int, cid: int, payload: bytes) -> bytes:
    """A BlipMQ frame as bytes (u32 length, u8 type, u64 correlation id, payload), whatever
    the codec thinks of it."""
    return struct.pack(">IBQ", 9 + len(payload), kind, cid) + payload


HANDSHAKE = (blip.encode(blip.Hello(1)), blip.encode(blip.Auth(2, "dev-key")))
#: Per trigger, inputs that reach it in different ways (what mutation makes of the seeds).
SCRIPTED = {
    "auth-key-signed": [(blip.encode(blip.Hello(1)), raw(0x02, 2, b"\x80\x00dev-key")),
                        (blip.encode(blip.Hello(1)), raw(0x02, 7, b"\xff\xff" + b"k" * 40))],
    "topic-signed": [HANDSHAKE + (raw(0x04, 3, b"\x80\x00topic\x00"),),
                     HANDSHAKE + (raw(0x03, 3, b"\x01\x90\x00t\x00\x00\x00\x01x"), blip.encode(blip.Ping(4)))],
    "type-0xee": [HANDSHAKE + (raw(0xEE, 3, b""),),
                  HANDSHAKE + (blip.encode(blip.Ping(3)), raw(0xEE, 9, b"junk"))],
}


def test_three_triggers_are_three_root_causes_each_reproduced(tmp_path):
    """A campaign whose cases are scripted (each trigger reached twice, in two shapes, between
    harmless cases): three findings, one per trigger, each reproduced 3 of 3 on fresh targets,
    the other shape listed as a verified variant."""
    cases = []
    for round_ in range(2):
        for inputs in SCRIPTED.values():
            cases += [HANDSHAKE + (blip.encode(blip.Ping(5)),), inputs[round_]]
    target = planted("--on", ",".join(TRIGGERS))
    fuzzer = LiveFuzzer(BLIP, target.host, target.port, LiveOptions(timeout=1.0, seed=1, findings=tmp_path),
                        managed=target)
    script = iter(cases)
    fuzzer.mutator.mutate = lambda frames, pool: (list(next(script)), -1, "scripted")
    fuzzer.mutator.writes = lambda total: [total]
    try:
        summary = fuzzer.run(240, max_cases=len(cases))
    finally:
        target.close()
    assert_all_reproduced(summary)
    assert summary["not_reproduced"] == [] and summary["execs"] == len(cases)
    by_trigger = {}
    for f in summary["findings"]:
        assert f["kind"] == CRASH and f["connections"] == 1 and f["count"] == 2, f
        trigger = next(t for t in TRIGGERS if f"planted crash: {t.replace('0xee', 'N')};" in f["signature"])
        by_trigger[trigger] = f
        assert f["signature"] == (f"crash: exit code 70; planted crash: {trigger.replace('0xee', 'N')}; "
                                  f"ParseError at parser.py:read_frame")
        # the second shape is a variant, replayed alone on a fresh target, with its bytes
        assert len(f["variants"]) == 2 and all(v["verified"] for v in f["variants"]), f["variants"]
        assert Path(f["variants"][1]["file"]).read_bytes() == b"".join(SCRIPTED[trigger][1])
        doc = meta(f)
        assert doc["connections_before"] == [] and "planted crash: " + trigger in doc["target_output"]
    assert sorted(by_trigger) == sorted(TRIGGERS)
    assert command.live_exit_status(summary) == command.EXIT_FINDINGS


def test_campaign_finds_the_common_triggers_each_one_finding(tmp_path):
    """A real (mutating) campaign: the two triggers mutation reaches often are each one finding
    with variants, every one reproduced 3 of 3, no kit error (0xEE as a type byte is rare:
    tests/fuzz/live/test_fuzz_soak.py's long campaign looks for all three)."""
    target = planted("--on", ",".join(TRIGGERS))
    fuzzer = LiveFuzzer(BLIP, target.host, target.port, LiveOptions(timeout=1.0, seed=1, findings=tmp_path),
                        managed=target)
    try:
        # which case reaches which trigger moves with the machine's load (answers' timing makes
        # the corpus): the campaign goes on, in steps, until both are in (seed 1: ~1,000 cases)
        summary = fuzzer.run(240, max_cases=800)
        while not _has(summary, "auth-key-signed", "topic-signed") and fuzzer.execs < 4000:
            summary = fuzzer.run(240, max_cases=fuzzer.execs + 400)
    finally:
        target.close()
    assert_all_reproduced(summary)
    assert summary["not_reproduced"] == [], summary["not_reproduced"]
    assert _has(summary, "auth-key-signed", "topic-signed"), summary["findings"]
    signatures = [f["signature"] for f in summary["findings"]]
    assert len(signatures) == len(set(signatures)) <= 3 and all("planted crash: " in s for s in signatures)


def _has(summary: dict, *triggers: str) -> bool:
    return all(any(f"planted crash: {t};" in f["signature"] for f in summary["findings"]) for t in triggers)


def test_late_crash_is_charged_to_the_input_that_caused_it(tmp_path):
    """The server dies 0.3 s after the input, while later cases run: the replay finds the
    earlier connection, alone, and gives the crash back every time."""
    target = planted("--on", ",".join(TRIGGERS), "--delay", "0.3")
    fuzzer = LiveFuzzer(BLIP, target.host, target.port, LiveOptions(timeout=1.0, seed=1, findings=tmp_path),
                        managed=target)
    try:
        summary = fuzzer.run(240, max_cases=500)
        if not summary["findings"]:
            summary = fuzzer.run(240, max_cases=3000, stop_on_finding=True)
    finally:
        target.close()
    assert_all_reproduced(summary)
    assert summary["findings"] and summary["not_reproduced"] == [], summary
    for f in summary["findings"]:
        assert f["connections"] == 1 and "planted crash: " in f["signature"], f
        # the connection filed reaches the trigger by itself (the server's scanner reads it)
        assert any(t.replace("0xee", "N") in f["signature"] for t in TRIGGERS)


def _frames_where(data: bytes, holds) -> bool:
    """Whether ``data``, cut into frames by their length prefix as the planted server reads them,
    has a frame for which ``holds(type, payload)`` is true, however the fuzzer made it (a
    mutated frame of another type can be one)."""
    pos = 0
    while pos + 4 <= len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        frame = data[pos + 4:pos + 4 + length]
        if length < 9 or len(frame) < length:
            return False
        if holds(frame[0], frame[9:]):
            return True
        pos += 4 + length
    return False


def _acks_subscription_zero(data: bytes) -> bool:
    """What the planted server counts as an ACK for subscription 0: type 5, a payload starting
    with eight zero bytes."""
    return _frames_where(data, lambda kind, payload: kind == 0x05 and payload[:8] == bytes(8))


def test_crash_that_needs_an_earlier_connection_is_replayed_with_it(tmp_path):
    """SUBSCRIBE with a 256-byte topic kills the server only after another connection sent ACK
    for subscription 0: the finding is both connections, in order."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    handshake = blip.encode(blip.Hello(1)) + blip.encode(blip.Auth(2, "dev-key"))
    (seeds / "ack0.bin").write_bytes(handshake + blip.encode(blip.Ack(3, 0)) + blip.encode(blip.Ping(4)))
    (seeds / "sub256.bin").write_bytes(handshake + blip.encode(blip.Subscribe(3, "t" * 256, 0))
                                       + blip.encode(blip.Ping(4)))
    target = planted("--on", "topic-256-after-ack0")
    fuzzer = LiveFuzzer(BLIP, target.host, target.port,
                        LiveOptions(timeout=1.0, seed=1, findings=tmp_path / "findings", extra_seeds=(str(seeds),)),
                        managed=target)
    try:
        summary = fuzzer.run(240, max_cases=3000, stop_on_finding=True)
    finally:
        target.close()
    assert_all_reproduced(summary)
    assert len(summary["findings"]) == 1, summary["findings"]
    f = summary["findings"][0]
    assert "planted crash: topic-N-after-ackN" in f["signature"] and f["connections"] == 2, f
    doc = meta(f)
    before = bytes.fromhex("".join(doc["connections_before"][0]["frames"]))
    assert _acks_subscription_zero(before), before.hex()       # an ACK for subscription 0 went first
    # the failing connection holds what the server dies on: a SUBSCRIBE whose topic_len is 256
    assert _frames_where(Path(f["file"]).read_bytes(), lambda kind, payload: kind == 0x04 and payload[:2] == b"\x01\x00")
    # the one printed command replays both connections on a fresh target and sees it die
    assert f["reproduce"].startswith(f"wirecheck replay {f['file']} --protocol blipmq --target-command ")
    import shlex
    import subprocess
    argv = shlex.split(f["reproduce"])
    got = subprocess.run([sys.executable, "-m", "wirecheck", *argv[1:]], capture_output=True, text=True,
                         timeout=120)
    assert got.returncode == 1 and "the target went down during the replay (exit code 70)" in got.stderr, \
        got.stdout + got.stderr
    assert "planted crash: topic-256-after-ack0" in got.stderr
    assert "replayed first the 1 earlier connection(s) the finding needs" in got.stdout, got.stdout
    # the control: the same bytes without the finding's JSON (no earlier connection) do not kill it
    lone = tmp_path / "lone.bin"
    lone.write_bytes(Path(f["file"]).read_bytes())
    alone = subprocess.run([sys.executable, "-m", "wirecheck", "replay", str(lone), *argv[3:]],
                           capture_output=True, text=True, timeout=120)
    assert "went down" not in alone.stderr and "earlier connection" not in alone.stdout, alone.stdout + alone.stderr


def test_a_violation_whose_replay_kills_the_target_is_a_crash(tmp_path):
    """The campaign took the death for a bad answer (a target dying while it answers can look
    so); the fresh-target replay sees the process exit, and files a crash."""
    target = planted("--on", "auth-key-signed,topic-signed")
    fuzzer = LiveFuzzer(BLIP, target.host, target.port, LiveOptions(timeout=1.0, seed=1, findings=tmp_path),
                        managed=target)
    judge = fuzzer.judge

    def mistaken(outcome):
        event = judge(outcome)
        if event is not None and event.kind == CRASH:
            return Event(VIOLATION, "violation: the probe's connection closed", "closed without an answer")
        return event

    fuzzer.judge = mistaken
    try:
        summary = fuzzer.run(240, max_cases=3000, stop_on_finding=True)
    finally:
        target.close()
    assert_all_reproduced(summary)
    assert [f["kind"] for f in summary["findings"]] == [CRASH], (summary["findings"], summary["not_reproduced"])
    assert "planted crash: " in summary["findings"][0]["signature"]


def test_a_death_the_input_did_not_cause_is_not_a_finding(tmp_path):
    """kill -9 from outside: seen, replayed on fresh targets, never given back: listed apart,
    and the exit status stays 0."""
    target = planted("--on", "type-0xee")
    fuzzer = LiveFuzzer(BLIP, target.host, target.port, LiveOptions(timeout=1.0, seed=3, findings=tmp_path),
                        managed=target)
    killed = []

    def kill_once(f):
        if f.execs == 30 and not killed:
            killed.append(target.proc.pid)
            os.kill(target.proc.pid, signal.SIGKILL)

    try:
        summary = fuzzer.run(240, max_cases=60, progress=kill_once)
    finally:
        target.close()
    assert killed and summary["kit_error"] is None
    assert summary["findings"] == [], summary["findings"]
    [gone] = summary["not_reproduced"]
    assert gone["signature"] == "crash: killed by SIGKILL" and gone["reproduced"] == 0 and gone["replays"] == 3
    assert command.live_exit_status(summary) == command.EXIT_OK
