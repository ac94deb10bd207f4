"""A crash is charged to the test that caused it, whatever ``-n``: the BlipMQ suite against the
planted servers of tests/support/planted_servers.py, and the SignalR suite against
tests/support/planted_signalr.py, started by ``--target-command``.

- ``content``: dies on three inputs (an AUTH key_len read as signed, in the handshake; a
  topic_len read as signed; an unknown frame type), sent by four tests;
- ``delayed``: the same, 0.3 s after the input (after the test that sent it has ended);
- ``stateful``: dies on a 256-byte SUBSCRIBE topic, but only after an earlier connection sent
  an ACK for subscription 0;
- ``spin``: an unknown frame type sets a thread spinning; ``growth``: a 32 KiB-plus AUTH key
  keeps 32 MiB for good (NON-STRICT verdicts, run/health_reruns.py);
- ``split`` (SignalR over WebSocket): dies on a record split across WebSocket messages (the
  handshake included), sent by nine tests.

For each, the suite runs with ``-n 1``, ``-n 2`` and ``-n auto``, three times each (``--quick``:
a selection of the suite, ``-n 1`` and ``-n 2`` once). Goals: every run's verdicts identical;
the CRASH set is exactly the tests that crash the server alone (for ``stateful``, the one that
crashes it after an ACK-0 sender, which its message names), the NON-STRICT set exactly the tests
that set it spinning or growing alone; exit status 1 after a crash, else 0.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLANT = ROOT / "tests" / "support" / "planted_servers.py"

CONTENT_CRASHERS = {
    "blipmq/test_boundaries.py::test_api_key_length[65535]",
    "blipmq/test_boundaries.py::test_topic_length_both_ways[65535]",
    "blipmq/test_framing.py::test_unknown_frame_type_closes_connection[0xee]",
    "blipmq/test_framing.py::test_frames_before_an_unknown_type_are_still_answered",
}
#: The tests that send an ACK for subscription 0 (the state the stateful server's crash needs).
ACK_ZERO_SENDERS = ("test_ack_subscription_zero", "test_state_machine_must", "test_state_machine_should")

PLANTS = {
    "content": {"args": [], "crashers": CONTENT_CRASHERS,
                "quick_k": "test_api_key_length or test_topic_length or 0xe or frames_before_an_unknown "
                           "or test_handshake"},
    # quick: one input, so that one search does not hold four crashes at once (each step of it
    # waits for a death that may come late)
    "delayed": {"args": ["--delay", "0.3"], "crashers": CONTENT_CRASHERS,
                "quick_args": ["--delay", "0.3", "--on", "auth-key-signed"],
                "quick_crashers": {"blipmq/test_boundaries.py::test_api_key_length[65535]"},
                "quick_k": "test_api_key_length or test_topic_length or test_handshake"},
    "stateful": {"args": ["--on", "topic-256-after-ack0"],
                 "crashers": {"blipmq/test_boundaries.py::test_topic_length_both_ways[256]"},
                 "quick_k": "test_ack_poll or test_topic_length"},
    # not crashes: NON-STRICT verdicts (run/health_reruns.py), charged after re-runs on fresh targets
    "spin": {"args": ["--on", "type-0xee", "--effect", "spin"], "crashers": set(),
             "charged": {"blipmq/test_framing.py::test_unknown_frame_type_closes_connection[0xee]",
                         "blipmq/test_framing.py::test_frames_before_an_unknown_type_are_still_answered"},
             "quick_k": "0xe or frames_before or test_handshake"},
    "growth": {"args": ["--on", "auth-key-signed", "--effect", "grow"], "crashers": set(),
               "charged": {"blipmq/test_boundaries.py::test_api_key_length[65535]"},
               "quick_k": "test_api_key_length or test_handshake"},
    # SignalR over WebSocket: a record split across messages (content, not timing)
    "split": {"protocol": "signalr", "plant": ROOT / "tests" / "support" / "planted_signalr.py",
              "target": "http://127.0.0.1:0/hub", "args": [],
              "crashers": {f"signalr/test_encoding.py::{t}" for t in (
                  "test_record_separator_arriving_alone[json]", "test_record_split_into_single_bytes[json]",
                  "test_records_split_anywhere[messagepack-0]", "test_records_split_anywhere[messagepack-1]",
                  "test_records_split_anywhere[messagepack-2]", "test_records_split_anywhere[messagepack-3]",
                  "test_varint_split_across_writes[messagepack]")} | {
                  f"signalr/test_handshake.py::test_handshake_split_into_single_bytes[{e}]"
                  for e in ("json", "messagepack")},
              "quick_k": "split or separator or test_handshake_and"},
}


def run_suite(plant: str, workers: str, select: str | None, folder: Path, quick: bool = False) -> dict:
    """One run of the suite against ``plant``: its verdicts, crashes, exit status and time."""
    spec = PLANTS[plant]
    protocol = spec.get("protocol", "blipmq")
    report = folder / f"{plant}-{workers}-{time.monotonic_ns()}.json"
    command = " ".join([sys.executable, str(spec.get("plant", PLANT)), "--port", "{port}"]
                       + (["--data-dir", "{data_dir}"] if protocol == "blipmq" else [])
                       + spec.get("quick_args" if quick else "args", spec["args"]))
    argv = [sys.executable, "-m", "pytest", "--protocol", protocol, "--target-command", command, "-q",
            "-p", "no:cacheprovider", "-n", workers, "--wirecheck-report", str(report)]
    if spec.get("target"):
        argv += ["--target", spec["target"]]
    if select:
        argv += ["-k", select]
    started = time.monotonic()
    from soak.common import run_stoppable
    got = run_stoppable(argv, cwd=folder, timeout=1800)
    elapsed = time.monotonic() - started
    if not report.exists():
        return {"returncode": got.returncode, "error": (got.stdout + got.stderr)[-3000:], "elapsed_s": elapsed}
    doc = json.loads(report.read_text())
    return {"returncode": got.returncode, "elapsed_s": round(elapsed, 1),
            "verdicts": {t["nodeid"]: t["verdict"] for t in doc["tests"]},
            "messages": {t["nodeid"]: t["message"] for t in doc["tests"] if t["verdict"] == "CRASH"},
            "crashes": doc["summary"][protocol]["crashes"],
            # what the spin watch saw and what the measures charged: why a run missed a test
            "health": {k: doc["summary"][protocol].get("target_health", {}).get(k)
                       for k in ("spins", "charged", "idle_checks")}}


def problems(plant: str, runs: list[dict], quick: bool = False) -> list[str]:
    """What in ``runs`` (of one plant) misses the goals of the module's docstring."""
    out = []
    expected = PLANTS[plant].get("quick_crashers" if quick else "crashers", PLANTS[plant]["crashers"])
    first = runs[0].get("verdicts")
    for i, run in enumerate(runs):
        if "verdicts" not in run:
            out.append(f"run {i}: no result file: {run.get('error', '')[-500:]}")
            continue
        crashed = {t for t, v in run["verdicts"].items() if v == "CRASH"}
        if crashed != expected:
            out.append(f"run {i}: CRASH {sorted(crashed)}, expected {sorted(expected)}")
        charged = {t for t, v in run["verdicts"].items() if v == "NON-STRICT"}
        if charged != PLANTS[plant].get("charged", set()):
            out.append(f"run {i}: NON-STRICT {sorted(charged)}, expected {sorted(PLANTS[plant].get('charged', []))}"
                       f"; the target's health: {json.dumps(run.get('health'))[:4000]}")
        if run["returncode"] != (1 if expected else 0):
            out.append(f"run {i}: exit status {run['returncode']}, expected {1 if expected else 0}")
        if run["verdicts"] != first:
            diff = sorted(t for t in set(first or {}) | set(run["verdicts"])
                          if (first or {}).get(t) != run["verdicts"].get(t))
            out.append(f"run {i}: verdicts differ from run 0's: " + ", ".join(
                f"{t}: {(first or {}).get(t)} / {run['verdicts'].get(t)}" for t in diff[:10]))
        if plant == "stateful":
            for test, message in run["messages"].items():
                if "run after " not in message or not any(s in message for s in ACK_ZERO_SENDERS):
                    out.append(f"run {i}: {test}'s CRASH does not name the ACK-0 test it needs: {message[:300]}")
    return out


def run(quick: bool = False, only: tuple[str, ...] = ()) -> dict:
    result: dict = {"plants": {}}
    with tempfile.TemporaryDirectory(prefix="wirecheck-soak-culprits-") as tmp:
        for plant, spec in PLANTS.items():
            if only and plant not in only:
                continue
            select = spec["quick_k"] if quick else None
            workers = ("1", "2") if quick else ("1", "2", "auto")
            runs = [dict(run_suite(plant, n, select, Path(tmp), quick), workers=n)
                    for n in workers for _ in range(1 if quick else 3)]
            result["plants"][plant] = {
                "problems": problems(plant, runs, quick),
                "runs": [{k: r.get(k) for k in ("workers", "returncode", "elapsed_s")} for r in runs]}
    result["ok"] = not any(p["problems"] for p in result["plants"].values())
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m soak.culprits", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a selection of the suite, -n 1 and -n 2 once")
    parser.add_argument("--only", action="append", choices=sorted(PLANTS), help="only these plants (repeatable)")
    parser.add_argument("--out", default="reports/soak/culprits.json")
    args = parser.parse_args(argv)
    started = time.monotonic()
    result = run(args.quick, tuple(args.only or ()))
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    from soak.common import write_result
    write_result(args.out, result)
    print(f"culprits: {'all goals met' if result['ok'] else 'FAILED'} in {result['elapsed_s']} s; {args.out}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
