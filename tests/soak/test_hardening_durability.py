"""kill -9 durability (soak/durability.py), fast version: a few kill/damage/restart iterations
per persisting broker, plus proof that the harness notices a broker that loses or invents
data (a check that cannot fail proves nothing)."""
from __future__ import annotations

import os
import random

import pytest

from wirecheck.reference_impl.blipmq import wal
from wirecheck.reference_impl.blipmq.broker import WAL_NAME
from soak import durability as dur


@pytest.mark.parametrize("protocol", dur.PROTOCOLS)
def test_confirmed_messages_survive_kills_and_torn_tails(protocol):
    result = dur.run(quick=True, protocols=(protocol,))
    broker = result["brokers"][protocol]
    assert [g for g in result["goals"] if not g["met"]] == [], broker["iterations"]
    its = broker["iterations"]
    assert len(its) == dur.PARAMS[True]["iterations"]
    assert all(it["outcome"] == "ok" and it["kill"]["landed"] for it in its)
    assert broker["confirmed_total"] > 0
    assert all(it["recovered"] >= it["expected_at_least"] > 0 for it in its)
    # Every kind of damage was applied (or a kill tore the tail itself) and truncated away.
    kinds = {it["damage"]["kind"] for it in its if "appended_bytes" in it["damage"]}
    torn_by_kill = [it for it in its if "torn_by_kill_bytes" in it["damage"]]
    assert len(kinds) + len(torn_by_kill) >= 3
    assert all(it["truncated_ok"] for it in its if it["truncated_ok"] is not None)
    checks = [it["corrupt_confirmed"] for it in its if "corrupt_confirmed" in it]
    assert checks and all(c.get("ok") for c in checks if "skipped" not in c)


def test_the_blipmq_ledger_check():
    run = dur.BlipRun(dur.PARAMS[True]["blipmq"], "always")
    for status in ("confirmed", "maybe", "confirmed", "torn", "confirmed"):
        run._new(status)                               # messages 1..5
    b = lambda seq: dur.body(run.TAG, seq)             # noqa: E731
    assert run.check([b(1), b(2), b(3), b(5)])["problems"] == []
    assert run.ledger == {1: "confirmed", 2: "confirmed", 3: "confirmed", 5: "confirmed"}

    run.ledger = {1: "confirmed", 3: "confirmed", 5: "confirmed"}
    r = run.check([b(1), b(5)])
    assert r["lost"] == 1 and "confirmed message 3 lost" in r["problems"]

    run.ledger, run.acked = {1: "confirmed", 2: "torn"}, {7}
    altered = b(1)[:-1] + bytes([b(1)[-1] ^ 1])
    r = run.check([altered, b(1), b(2), b(7), b(1), b(99)])
    assert r["unknown"] == 4 and r["torn_served"] == 1 and r["lost"] == 0
    assert any("acked before the kill" in p for p in r["problems"])


class _LosingBlip(dur.BlipRun):
    """Drops the newest confirmed message's record between kill and restart: what a broker
    that confirmed before journaling would leave."""

    def damage(self, data_dir, kind, rng):
        path = os.path.join(data_dir, WAL_NAME)
        version, records, _ = wal.read_records(path)
        doomed = [r for r in records if r.payload[0] == wal.KIND_PUBLISH and self.ledger.get(
            dur.seq_of(wal.decode_payload(version, r.payload)[-1], self.TAG)) == "confirmed"][-1:]
        with open(path, "wb") as fh:
            fh.write(wal.HEADER.pack(wal.MAGIC, version))
            fh.write(b"".join(wal.encode_record(r.id, r.payload) for r in records
                              if r not in doomed))
        return {"kind": "lose-confirmed", "dropped": len(doomed)}


class _InventingStream(dur.StreamRun):
    """Appends a whole, valid chunk holding a record nobody sent."""

    def damage(self, data_dir, kind, rng):
        info = super().damage(data_dir, "none", rng)
        path = self._segments(data_dir)[-1]
        chunks, _ = self._chunks(path)
        first = chunks[-1][1][6] + chunks[-1][1][3] if chunks else int(path.name.split(".")[0])
        raw = dur.osiris.build_chunk([dur.osiris.SimpleEntry(b"rmqs:1:not what was sent")],
                                     first, 0).encode()
        with open(path, "ab") as fh:
            fh.write(raw)
        return info


class _OverSettlingBlip(dur.BlipRun):
    """Killed while acking, then leaves a settlement of one more message than it was asked
    to (one no ACK named): what a broker that settles the wrong message would journal."""

    async def _ack_until_killed(self, client, messages, killer, rng):
        sent = await super()._ack_until_killed(client, messages, killer, rng)
        killer.broker.proc.wait(30)
        args = killer.broker.args
        path = os.path.join(args[args.index("--data-dir") + 1], WAL_NAME)
        version, records, _ = wal.read_records(path)
        publishes = {dur.seq_of(wal.decode_payload(version, r.payload)[-1], self.TAG): r.id
                     for r in records if r.payload[0] == wal.KIND_PUBLISH}
        victim = next(s for s, status in self.ledger.items() if status == "confirmed" and s in publishes)
        settle = bytes((wal.KIND_SETTLE,)) + wal._SETTLE.pack(self.sub, publishes[victim])
        with open(path, "ab") as fh:
            fh.write(wal.encode_record(max(r.id for r in records) + 1, settle))
        return sent


@pytest.mark.parametrize("target,goal", [
    (_LosingBlip, "confirmed messages lost"),
    (_OverSettlingBlip, "confirmed messages lost"),
    (_InventingStream, "messages served that were never sent or altered"),
])
def test_the_harness_notices_a_broker_that_loses_or_invents(tmp_path, target, goal):
    params = dur.PARAMS[True][target.protocol]
    run = target(dict(params, max_count=20, max_delay_s=0.01), "always")
    summary = dur.run_broker(run, 2, 0, str(tmp_path), seed=7)
    failed = {g["name"] for g in summary["goals"] if not g["met"]}
    assert goal in failed and not summary["ok"]


def test_flip_changes_only_the_span_it_is_given():
    data = bytearray(100)
    at, n = dur.flip(data, 10, 20, random.Random(3))
    assert 10 <= at and at + n <= 20 and 1 <= n <= 4
    assert all(data[i] for i in range(at, at + n)) and sum(map(bool, data)) == n
