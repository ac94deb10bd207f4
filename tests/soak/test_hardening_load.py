"""Load, quick (soak/load.py): per protocol, the reference broker in a child process and 50
connections publishing 100 messages each, every one consuming its neighbour's; nothing lost,
no duplicates where the delivery mode forbids them, the publisher's order kept. About 1-2 s per
protocol; every wait is bounded (soak.load.STALL, RUN_TIMEOUT)."""
from __future__ import annotations

import asyncio
import json

import pytest

from soak import load

CONNECTIONS, MESSAGES = load.SIZES[True]


@pytest.mark.parametrize("protocol", load.PROTOCOLS)
def test_quick_load_loses_nothing(protocol):
    r = load.run_protocol(protocol, CONNECTIONS, MESSAGES, quick=True)
    planned = CONNECTIONS * MESSAGES
    assert r["errors"] == 0, r["error_samples"]
    assert r["published"] == r["planned"] == planned
    assert r["confirmed"] == planned                  # every publish confirmed by the broker
    assert r["delivered"] == planned and r["lost"] == 0
    assert r["foreign"] == 0
    if not load.MODES[protocol].duplicates_allowed:
        assert r["duplicates"] == 0
    assert load.MODES[protocol].ordered and r["reordered"] == 0
    assert r["msgs_per_s"] > 0 and r["broker_peak_rss_mb"] > 0
    assert r["ok"] and all(g["met"] for g in r["goals"])


def test_the_ledger_counts_duplicates_reorderings_and_foreign_deliveries():
    async def scenario():
        ledger = load.Ledger(2, 3, window=2)          # connection 1 consumes publisher 0
        sent = [ledger.payload(0, seq) for seq in range(3)]
        ledger.received(1, sent[1])
        ledger.received(1, sent[0])                   # first delivery after a later one
        ledger.received(1, sent[0].decode("ascii"))   # again (as text): a duplicate
        ledger.received(0, sent[2])                   # to the wrong consumer
        ledger.received(1, sent[2][:-1] + b"!")       # altered
        ledger.received(1, b"not a message")
        assert (ledger.delivered[0], ledger.duplicates, ledger.reordered, ledger.foreign) == (2, 1, 1, 3)
        totals = ledger.totals()
        assert totals["lost"] == 1 and totals["published"] == 3 and totals["errors"] == 3
        # the window: 3 published, 2 delivered -> room; a third unanswered one would block
        await asyncio.wait_for(ledger.room(0, 0.1), 1.0)
        ledger.payload(0, 0)
        ledger.payload(0, 1)
        with pytest.raises(asyncio.TimeoutError):
            await ledger.room(0, 0.05)
        ledger.received(1, sent[2])
        assert ledger.complete(0) and ledger.last_ns >= ledger.first_ns

    asyncio.run(scenario())


def test_goals_fail_on_loss_and_forbidden_duplicates():
    totals = {"planned": 10, "published": 10, "confirmed": 10, "lost": 1, "foreign": 0,
              "errors": 0, "duplicates": 2, "reordered": 0}
    met = {g["name"]: g["met"] for g in load._goals(load.MODES["rabbitmq-stream"], totals, False)}
    assert not met["nothing lost"] and not met["no duplicates (once per offset)"]
    met = {g["name"]: g["met"] for g in load._goals(load.MODES["blipmq"], totals, False)}
    assert met["duplicates (at-least-once: allowed, counted)"] and not met["nothing lost"]


def test_main_writes_the_result_and_exits_zero(tmp_path):
    out = tmp_path / "load.json"
    assert load.main(["--quick", "--protocol", "micromessage2", "--connections", "4",
                      "--messages", "10", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["ok"] is True and result["name"] == "load" and result["quick"] is True
    assert result["parameters"]["connections"] == 4
    r = result["protocols"]["micromessage2"]
    assert r["delivered"] == 40 and r["lost"] == 0
    assert result["goals"] and all(g["met"] for g in result["goals"])
