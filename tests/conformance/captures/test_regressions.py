"""Every fuzzer finding kept in captures/regressions/ replays over the wire against a fresh
reference broker without harm (captures/regressions/README.md)."""
from __future__ import annotations

import json
import os

import pytest

from wirecheck.conformance.captures import replay
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.server import ThreadedServer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
REGRESSIONS = os.path.join(ROOT, "captures", "regressions")

with open(os.path.join(REGRESSIONS, "MANIFEST.json")) as _fh:
    ENTRIES = json.load(_fh)["regressions"]


def test_manifest_lists_every_file():
    on_disk = {os.path.relpath(os.path.join(d, f), REGRESSIONS)
               for d, _, files in os.walk(REGRESSIONS) for f in files
               if f not in ("MANIFEST.json", "README.md")}
    assert on_disk == {e["file"] for e in ENTRIES}


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_regression_replays_harmlessly(entry):
    spec = registry.get(entry["protocol"])
    broker = spec.make_broker("127.0.0.1", 0, profile=entry.get("profile"))
    with ThreadedServer(broker) as server:
        port = broker.raw_port if entry.get("transport") == "raw" else server.address[1]
        options = replay.ReplayOptions(("127.0.0.1", port), timeout=1.0, profile=entry.get("profile"))
        [result] = replay.replay_bytes(spec, os.path.join(REGRESSIONS, entry["file"]), options)
        assert result.verdict == "PASS", (result.mismatches, result.notes)
        assert any("answers the liveness probe" in note for note in result.notes)
