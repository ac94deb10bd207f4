"""Verdicts that hold whatever the link and the machine: each protocol's suite against its
reference broker, directly and through benign transports, must give every test the same verdict.

A benign transport changes how the broker's bytes travel, never what they say, so a test whose
verdict moves with it depends on timing, not on the target. The modes:

- ``direct``: no relay (the baseline);
- ``split``: every byte of the broker's in its own write (``wirecheck serve --check-clients
  --scenario split``, conformance/clients/scenarios.py);
- ``coalesce``: the broker's writes within 20 ms joined into one;
- ``delay``: every write 0.1 s late (a slow link);
- ``busy``: direct, with every core kept busy by another process (a shared CI runner);
- ``extra``: frames the document lets the server send at any moment, where the protocol has
  them (RabbitMQ Stream Heartbeats, SignalR Pings: the ``heartbeat``/``ping`` scenarios).

``python -m soak.transport [--quick] [--protocol P ...] [--mode M ...]``; ``make soak`` runs the
full matrix (``soak.run``), tests/soak/test_transport_invariance.py a quick one in ``make test``.
The result lists, per protocol and mode, every test whose verdict differs from the direct run.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from soak.common import run_stoppable

ROOT = Path(__file__).resolve().parents[1]
PROTOCOLS = ("blipmq", "vibemq", "micromessage2", "rabbitmq-stream", "signalr")
MODES = ("split", "coalesce", "delay", "busy", "extra")

#: Scenario and options of each relayed mode.
RELAYED = {
    "split": ("split", {}),
    "coalesce": ("coalesce", {"window": "0.02"}),
    "delay": ("delay", {"delay": "0.1"}),
}
#: The frames a server may send at any moment, per protocol (its own scenario).
EXTRA = {
    "rabbitmq-stream": ("heartbeat", {"interval": "0.3"}),
    "signalr": ("ping", {"interval": "0.3"}),
}
#: A run's wall-clock limit (a suite through a 0.1 s link takes a few minutes).
RUN_TIMEOUT = 1800


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"wirecheck serve exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"wirecheck serve did not listen on {port} within {seconds:g} s")


class _Burners:
    """One busy process per core while the block runs."""

    def __init__(self, count: int | None = None) -> None:
        self.count = count or os.cpu_count() or 2
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "_Burners":
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                      for _ in range(self.count)]
        return self

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


def suite_verdicts(protocol: str, mode: str, workdir: str, pytest_args: tuple = (),
                   workers: int = 2, options: dict | None = None) -> dict:
    """``{"verdicts": {nodeid: verdict}, "seconds": s}`` of ``protocol``'s suite against a
    reference broker served in ``mode`` (``options``: more scenario options)."""
    port = free_port()
    serve = [sys.executable, "-m", "wirecheck", "serve", "--protocol", protocol, "--port", str(port)]
    if protocol == "signalr":
        serve += ["--raw-port", str(free_port())]
    scenario = RELAYED.get(mode) or (EXTRA.get(protocol) if mode == "extra" else None)
    if mode == "extra" and scenario is None:
        raise ValueError(f"{protocol} has no frames a server may send at any moment")
    if scenario is not None:
        name, defaults = scenario
        serve += ["--check-clients", "--scenario", name]
        for key, value in {**defaults, **(options or {})}.items():
            serve += ["--scenario-option", f"{key}={value}"]
    report = os.path.join(workdir, f"{protocol}-{mode}.json")
    target = f"http://127.0.0.1:{port}/hub" if protocol == "signalr" else f"127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--pyargs",
           "wirecheck.conformance.suites." + protocol.replace("-", "_"), "--target", target,
           "--protocol", protocol, "--wirecheck-report", report, *pytest_args]
    if workers > 1:
        cmd += ["-n", str(workers)]
    log = open(os.path.join(workdir, f"{protocol}-{mode}.serve.log"), "w")
    server = subprocess.Popen(serve, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    started = time.monotonic()
    try:
        _wait_listening(port, server)
        if mode == "busy":
            with _Burners():
                proc = run_stoppable(cmd, cwd=workdir, timeout=RUN_TIMEOUT)
        else:
            proc = run_stoppable(cmd, cwd=workdir, timeout=RUN_TIMEOUT)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
    if not os.path.exists(report):
        raise RuntimeError(f"{protocol} {mode}: no report; pytest said:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    doc = json.loads(Path(report).read_text())
    return {"verdicts": {t["nodeid"]: t["verdict"] for t in doc["tests"]},
            "messages": {t["nodeid"]: t.get("message", "")[:300] for t in doc["tests"]},
            "seconds": round(time.monotonic() - started, 1)}


def compare(direct: dict, other: dict) -> list[dict]:
    """The tests whose verdict differs from the direct run's (or that ran in one only)."""
    out = []
    for nodeid in sorted(set(direct["verdicts"]) | set(other["verdicts"])):
        a, b = direct["verdicts"].get(nodeid), other["verdicts"].get(nodeid)
        if a != b:
            out.append({"test": nodeid, "direct": a, "here": b, "message": other["messages"].get(nodeid, "")})
    return out


def modes_for(protocol: str, modes=MODES) -> list[str]:
    return [m for m in modes if m != "extra" or protocol in EXTRA]


def run(quick: bool = False, protocols=PROTOCOLS, modes=None, pytest_args: tuple | None = None) -> dict:
    """Every protocol x mode against the direct run. ``quick``: split, coalesce and the extra
    frames, the timer tests left out (``-m "not slow"``), for ``make test``."""
    modes = modes or (("split", "coalesce", "extra") if quick else MODES)
    if pytest_args is None:
        pytest_args = ("-m", "not slow") if quick else ()
    result = {"quick": quick, "protocols": {}}
    with tempfile.TemporaryDirectory(prefix="wirecheck-transport-") as workdir:
        for protocol in protocols:
            direct = suite_verdicts(protocol, "direct", workdir, pytest_args)
            entry = {"direct": {"tests": len(direct["verdicts"]), "seconds": direct["seconds"],
                                "not_pass": {k: v for k, v in direct["verdicts"].items()
                                             if v not in ("PASS", "SKIPPED", "UNIMPLEMENTED", "INFORMATIONAL")}}}
            for mode in modes_for(protocol, modes):
                other = suite_verdicts(protocol, mode, workdir, pytest_args)
                entry[mode] = {"seconds": other["seconds"], "differs": compare(direct, other)}
            result["protocols"][protocol] = entry
    result["ok"] = all(not m["differs"] for e in result["protocols"].values()
                       for k, m in e.items() if k != "direct") and \
        all(not e["direct"]["not_pass"] for e in result["protocols"].values())
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m soak.transport", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--protocol", action="append", choices=PROTOCOLS)
    parser.add_argument("--mode", action="append", choices=MODES)
    parser.add_argument("--out", default="reports/soak/transport.json")
    args = parser.parse_args(argv)
    result = run(args.quick, tuple(args.protocol or PROTOCOLS), tuple(args.mode) if args.mode else None)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for protocol, entry in result["protocols"].items():
        for mode, m in entry.items():
            if mode != "direct":
                print(f"{protocol} {mode}: {len(m['differs'])} verdicts differ ({m['seconds']} s)")
                for d in m["differs"]:
                    print(f"   {d['test']}: {d['direct']} -> {d['here']}: {d['message'][:160]}")
    print("transport: " + ("every verdict the same" if result["ok"] else "FAILED") + f"; {args.out}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
