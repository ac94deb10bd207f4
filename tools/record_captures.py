"""Record the capture corpus: ``make captures`` (or ``python tools/record_captures.py [P ...]``).

For each protocol and each scenario, a fresh reference broker starts on loopback behind a
recording relay (wirecheck/conformance/captures/relay.py); the scenario's client talks to the relay; the
capture is written gzip-compressed to ``captures/<protocol>/<name>.pcap.gz`` and described in
``captures/<protocol>/MANIFEST.json`` (what it holds, who talked, versions, how it was
recorded, and how to replay it). The relay listens on a free port but the captures show the
protocol's own ports, so ``decode --pcap`` and ``replay`` find the conversations unaided. Entries this script does not make (real peers' captures) are
kept as they are.

Scenarios:

- ``suite``: the protocol's whole black-box suite (``wirecheck check``): every frame type,
  the error paths (malformed frames, wrong order, bad lengths) and split writes;
- the protocol's reference client (tools/capture_scenarios.py) and real clients
  (tools/capture_scenarios_real.py).
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wirecheck.conformance.captures.relay import CaptureFile, relay_broker  # noqa: E402
from wirecheck.reference_impl.core import registry  # noqa: E402
from wirecheck.reference_impl.core.server import ThreadedServer  # noqa: E402

CAPTURES = os.path.join(ROOT, "captures")


@dataclass
class Scenario:
    name: str
    what: str
    client: str
    run: Callable[[str, int, str | None], None]    # (host, port, url) -> None; raises on failure
    broker_options: dict | None = None
    #: the client sends frames the codec rejects (a real client's violation), on purpose or not
    malformed_client: bool = False


def _run_suite(spec) -> Callable[[str, int, str | None], None]:
    def run(host: str, port: int, url: str | None) -> None:
        target = url or f"{host}:{port}"
        # The state machines are left out: what their several connections see depends on how
        # the broker interleaves them (a queue's round robin), which a replay, comparing each
        # connection in the recorded order, cannot hold the target to. They run live in make test.
        # The boundary tests too: megabytes of records at the limits (test_boundaries.py), where
        # a refusal mid-send is a reset or a close frame as the timing falls; live in make test.
        cmd = [sys.executable, "-m", "wirecheck", "check", "--protocol", spec.id, "--target", target,
               "--", "-k", "not stateful and not boundaries"]
        result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
        tail = (result.stdout + result.stderr)[-3000:]
        if result.returncode != 0:
            raise RuntimeError(f"the {spec.id} suite failed through the relay:\n{tail}")
    return run


def scenarios(spec) -> list[Scenario]:
    out = [Scenario("suite", "the black-box suite against the reference broker: every frame type, "
                             "error paths (malformed frames, wrong order, bad lengths), split writes",
                    f"wirecheck {spec.id} suite (wirecheck/conformance/suites)", _run_suite(spec))]
    import importlib
    for module in ("tools.capture_scenarios", "tools.capture_scenarios_real"):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        out += mod.SCENARIOS.get(spec.id, [])
    return out


def record(spec, scenario: Scenario, out_dir: str) -> dict:
    """Record one scenario; returns its manifest entry."""
    fd, tmp = tempfile.mkstemp(suffix=".pcap")
    os.close(fd)
    capture = CaptureFile(tmp)
    broker = spec.make_broker("127.0.0.1", 0, **(scenario.broker_options or {}))
    with ThreadedServer(broker) as server:
        # the relays listen on free ports; the capture shows the protocol's own
        shown = (spec.default_port, *spec.extra_ports)
        relays = asyncio.run_coroutine_threadsafe(
            relay_broker(capture, broker, record_as=shown), server.loop).result(10)
        try:
            port = relays[0].port
            url = f"http://127.0.0.1:{port}{broker.hub_path}" if hasattr(broker, "hub_path") else None
            scenario.run("127.0.0.1", port, url)
        finally:
            for relay in relays:
                asyncio.run_coroutine_threadsafe(relay.stop(), server.loop).result(10)
    capture.close()
    name = f"{scenario.name}.pcap.gz"
    with open(tmp, "rb") as src, open(os.path.join(out_dir, name), "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as dst:
        shutil.copyfileobj(src, dst)
    os.unlink(tmp)
    entry = {"file": name, "what": scenario.what, "client": scenario.client,
             "server": f"wirecheck {spec.id} reference broker"
                       + (f" ({scenario.broker_options})" if scenario.broker_options else ""),
             "connections": capture.connections,
             "malformed_client": scenario.malformed_client or scenario.name == "suite",
             "recorded": {"how": "wirecheck's recording relay in front of the broker (synthetic TCP "
                                 "framing, tools/record_captures.py)",
                          "date": datetime.date.today().isoformat(),
                          "python": platform.python_version()},
             # how tests/conformance/captures/test_captures_corpus.py replays it: against a fresh reference broker
             # made with these options, with this --profile
             "replay": {"broker_options": scenario.broker_options or {},
                        "profile": (scenario.broker_options or {}).get("profile")}}
    return entry


def load_manifest(path: str) -> dict:
    if os.path.exists(path):
        with open(path) as fh:
            return json.load(fh)
    return {"captures": []}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("protocols", nargs="*", help="default: all")
    parser.add_argument("--only", action="append", help="only these scenarios (repeatable)")
    args = parser.parse_args(argv)
    specs = [registry.get(p) for p in args.protocols] if args.protocols else registry.all_protocols()
    for spec in specs:
        out_dir = os.path.join(CAPTURES, spec.id)
        os.makedirs(out_dir, exist_ok=True)
        manifest_path = os.path.join(out_dir, "MANIFEST.json")
        manifest = load_manifest(manifest_path)
        for scenario in scenarios(spec):
            if args.only and scenario.name not in args.only:
                continue
            print(f"recording {spec.id}/{scenario.name} ...", flush=True)
            entry = record(spec, scenario, out_dir)
            manifest["captures"] = [e for e in manifest["captures"] if e["file"] != entry["file"]] + [entry]
            print(f"  {entry['connections']} connection(s) -> captures/{spec.id}/{entry['file']}", flush=True)
        manifest["captures"].sort(key=lambda e: e["file"])
        with open(manifest_path, "w") as fh:
            json.dump(manifest, fh, indent=1)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
