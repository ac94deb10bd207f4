"""``wirecheck fuzz``: the in-process targets, the network fuzzer, and campaigns.

    wirecheck fuzz --protocol P --decoder|--nested|--session [--name T] [--time S] [--json]
    wirecheck fuzz --protocol P --target HOST:PORT|--serve|--command CMD [--time S] [--json]
    wirecheck fuzz --all [--protocol P ...] [--time 10m] [--jobs N] [--no-live] [--out FILE]

``--time`` takes seconds or a unit: ``30``, ``90s``, ``10m``, ``2h``. ``--json`` prints the
run's summary as one JSON line (``execs``, ``exec_per_s``, ``corpus_size``, ``coverage``,
``findings``, ...). Exit status: 0 when nothing was found, 1 with findings, 2 when the run
itself could not be done (no atheris, a target that does not start, a bad argument).
"""
from __future__ import annotations

import argparse
import json
import time
import re
import sys

EXIT_OK, EXIT_FINDINGS, EXIT_HARNESS = 0, 1, 2


def duration(text: str) -> float:
    """``30``, ``90s``, ``10m``, ``2h``, ``1.5m`` -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 30, 90s, 10m, 2h)")
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    if seconds <= 0:
        raise argparse.ArgumentTypeError("the duration must be positive")
    return seconds


def add_arguments(s: argparse.ArgumentParser, protocol_type) -> None:
    s.add_argument("--protocol", type=protocol_type, action="append",
                   help="the protocol (with --all: repeatable, default all)")
    mode = s.add_mutually_exclusive_group(required=True)
    mode.add_argument("--decoder", action="store_true", help="the protocol's frame decoder target(s), in process")
    mode.add_argument("--nested", action="store_true",
                      help="its nested decoders (payloads, chunks, handshakes, compression), in process")
    mode.add_argument("--session", action="store_true", help="its whole server session, in process")
    mode.add_argument("--target", metavar="HOST:PORT|URL",
                      help="network fuzzing of a running server (an http:// hub URL: over negotiate + WebSocket)")
    mode.add_argument("--serve", action="store_true",
                      help="network fuzzing of the reference broker, started (and restarted) by the kit")
    mode.add_argument("--command", "--target-command", dest="command", metavar="CMD",
                      help="network fuzzing of a server the kit starts with CMD ({port} is replaced "
                           "by a free port) and restarts after a crash (--target-command: the same, "
                           "named as in check and replay)")
    mode.add_argument("--all", action="store_true", help="a campaign: every target in the time budget")
    s.add_argument("--name", action="append", help="only this in-process target (repeatable; see wirecheck/fuzz/targets.py)")
    s.add_argument("--time", type=duration, default=None,
                   help="time budget (default 60 s; a campaign 10m)")
    s.add_argument("--json", action="store_true",
                   help="print the summary as one JSON line (network fuzzing: and a progress line, "
                        "\"progress\": true, at least every 10 s)")
    s.add_argument("--findings", default=None, metavar="DIR", help="where findings go (default reports/fuzz/findings)")
    s.add_argument("--profile", default=None, help="network fuzzing: the profile the target speaks")
    s.add_argument("--seed", type=int, default=0, help="network fuzzing: seed of the mutations")
    s.add_argument("--timeout", type=float, default=2.0,
                   help="network fuzzing: seconds to wait for the liveness probe's answer; two "
                        "probes without one are confirmed by a third that waits 5 times as long "
                        "(at least 5 s) before the target is taken as hung")
    s.add_argument("--quiet", type=float, default=0.02,
                   help="network fuzzing: a case's answers end after this long without a byte")
    s.add_argument("--websocket", action="store_true",
                   help="network fuzzing of SignalR with --serve: over the reference hub's HTTP + WebSocket")
    s.add_argument("--url", default=None,
                   help="network fuzzing with --command: fuzz over negotiate + WebSocket at this hub URL "
                        "({host} and {port} are filled in), e.g. http://{host}:{port}/hub")
    s.add_argument("--restart-wait", type=float, default=0.0,
                   help="network fuzzing of --target: after a crash, wait this long for it to come back")
    s.add_argument("--seeds", action="append", default=[], metavar="PATH",
                   help="network fuzzing: more seed sessions (captures, byte files, directories)")
    s.add_argument("--workdir", default=None,
                   help="in process: keep the working corpora here between runs (default: a temporary copy)")
    s.add_argument("--jobs", type=int, default=None, help="campaign: parallel jobs (default: the CPUs)")
    s.add_argument("--no-live", action="store_true", help="campaign: in-process targets only")
    s.add_argument("--out", default=None, help="campaign: the summary JSON file (default reports/fuzz/...)")
    s.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="campaign: progress on stderr (default: when stderr is a terminal)")


def main(args) -> int:
    if args.all:
        from wirecheck.fuzz.campaign import main as campaign
        return campaign(args)
    seconds = args.time or 60.0
    inprocess = args.decoder or args.nested or args.session
    if inprocess and args.name and not args.protocol:      # named targets need no protocol
        return _inprocess(args, None, seconds)
    if not args.protocol or len(args.protocol) > 1:
        print("wirecheck fuzz: give one --protocol (or --name for in-process targets, or --all for a "
              "campaign)", file=sys.stderr)
        return EXIT_HARNESS
    spec = args.protocol[0]
    if inprocess:
        return _inprocess(args, spec, seconds)
    return _live(args, spec, seconds)


def _print(summary: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary), flush=True)
        return
    print(f"{summary.get('target') or summary['protocol']}: {summary['execs']} execs, "
          f"{summary['exec_per_s']} exec/s, coverage {summary['coverage']}, corpus {summary['corpus_size']}, "
          f"{len(summary['findings'])} finding(s)", flush=True)
    for f in summary["findings"]:
        where = f.get("file") or ""
        print(f"  {f['kind'].upper()}: {f['signature']}" + (f"  ({where})" if where else ""), flush=True)
        if "replayed" in f:             # the network fuzzer's: what a fresh target did with it
            print(f"    {_replayed(f)}", flush=True)
        if f.get("reproduce"):
            print(f"    reproduce: {f['reproduce']}", flush=True)
    gone = summary.get("not_reproduced") or []
    if gone:
        print(f"{len(gone)} event(s) a freshly started target never gave back (not findings):", flush=True)
        for f in gone:
            print(f"  {f['kind'].upper()} (not reproduced, 0 of {f['replays']}): {f['signature']}"
                  + (f"  ({f['file']})" if f.get("file") else ""), flush=True)


def _replayed(f: dict) -> str:
    if not f["replayed"]:
        return "not replayed (the kit did not start the target, so it cannot replay on a fresh one)"
    variants = len(f.get("variants") or ())
    return (f"reproduced {f['reproduced']} of {f['replays']} on a freshly started target; "
            f"{f['connections']} connection(s); seen {f['count']} time(s), {variants} variant(s)")


def _inprocess(args, spec, seconds: float) -> int:
    from wirecheck.fuzz.targets import TARGETS, of_protocol
    from wirecheck.cli.support import missing_extra
    message = missing_extra("fuzz", "in-process fuzzing (atheris targets)")
    if message:
        print(f"wirecheck fuzz: {message}", file=sys.stderr)
        return EXIT_HARNESS
    kind = "decoder" if args.decoder else "nested" if args.nested else "session"
    if args.name:
        unknown = [n for n in args.name if n not in TARGETS]
        if unknown:
            print(f"wirecheck fuzz: unknown target(s) {', '.join(unknown)} (known: {', '.join(sorted(TARGETS))})",
                  file=sys.stderr)
            return EXIT_HARNESS
        targets = [TARGETS[n] for n in args.name if TARGETS[n].kind == kind
                   and (spec is None or TARGETS[n].protocol in (spec.id, ""))]
    else:
        targets = of_protocol(spec.id, (kind,))
    if not targets:
        print(f"wirecheck fuzz: no {kind} target{' named so' if args.name else ''}"
              f"{' for ' + spec.id if spec is not None else ''} (wirecheck/fuzz/targets.py lists them)", file=sys.stderr)
        return EXIT_HARNESS
    from wirecheck.fuzz.inprocess import run
    share = seconds / len(targets)
    results = []
    for t in targets:
        results.append(run(t, share, workdir=args.workdir, findings=args.findings))
        if results[-1].get("interrupted"):
            break
    summary = results[0] if len(results) == 1 else combine(results, spec.id if spec else "", kind)
    if results[-1].get("interrupted"):
        from wirecheck.conformance import cli_signals
        summary["interrupted"] = cli_signals.interrupted([t.name for t in targets[len(results):]], "targets")
        _print(summary, args.json)
        if not args.json:
            print(f"wirecheck fuzz: {summary['interrupted']['signal']}: stopped", file=sys.stderr)
        return cli_signals.exit_status()
    _print(summary, args.json)
    return EXIT_FINDINGS if summary["findings"] else EXIT_OK


def combine(results: list[dict], protocol: str, kind: str) -> dict:
    """Several targets' summaries as one: sums, the rate over the total time, every finding."""
    seconds = sum(r["seconds"] for r in results)
    execs = sum(r["execs"] for r in results)
    return {"mode": "inprocess", "protocol": protocol, "kind": kind, "target": "+".join(r["target"] for r in results),
            "seconds": round(seconds, 3), "execs": execs,
            "exec_per_s": round(execs / seconds, 1) if seconds else 0.0,
            "coverage": sum(r["coverage"] for r in results), "corpus_size": sum(r["corpus_size"] for r in results),
            "findings": [f for r in results for f in r["findings"]], "targets": results}


#: Seconds between two progress lines of ``--json`` (a long run is never silent longer).
PROGRESS_EVERY = 10.0


def _json_progress(seconds: float):
    """``--json``: a progress line (one JSON object, ``"progress": true``) at most every
    :data:`PROGRESS_EVERY` s, after the case that crosses it; the summary line ends the run."""
    last = [time.monotonic()]
    started = last[0]

    def show(fuzzer) -> None:
        now = time.monotonic()
        if now - last[0] < PROGRESS_EVERY:
            return
        last[0] = now
        print(json.dumps({"progress": True, "protocol": fuzzer.spec.id, "seconds": round(now - started, 1),
                          "of_seconds": seconds, "execs": fuzzer.execs, "coverage": len(fuzzer.shapes),
                          "findings": len(fuzzer.findings),
                          "restarts": fuzzer.managed.restarts if fuzzer.managed is not None else 0}),
              flush=True)
    return show


def _live(args, spec, seconds: float) -> int:
    from pathlib import Path

    from wirecheck.fuzz.live.fuzzer import LiveFuzzer, LiveOptions, ManagedTarget
    profile = args.profile
    if profile is not None:
        # read as the suites read it (conformance/profiles.py): a file's ``extends`` names the
        # built-in reading the codec, the seeds and the liveness probe must speak
        from wirecheck.conformance.profiles import ProfileError, load_profile
        try:
            profile = load_profile(spec, profile).base
        except ProfileError as exc:
            print(f"wirecheck fuzz: {exc}", file=sys.stderr)
            return EXIT_HARNESS
    options = LiveOptions(timeout=args.timeout, quiet=args.quiet, seed=args.seed, profile=profile,
                          restart_wait=args.restart_wait, extra_seeds=tuple(args.seeds))
    if args.findings:
        options.findings = Path(args.findings)
    managed = None
    try:
        if args.target and args.target.startswith(("http://", "ws://")):
            from urllib.parse import urlsplit
            parts = urlsplit(args.target)
            host, port, options.url = parts.hostname or "127.0.0.1", parts.port or 80, args.target
        elif args.target:
            from wirecheck.cli.support import host_port_arg
            try:
                host, port = host_port_arg(args.target)
            except ValueError as exc:
                print(f"wirecheck fuzz: --target {exc}", file=sys.stderr)
                return EXIT_HARNESS
        else:
            managed = (ManagedTarget.reference(spec.id, args.profile, websocket=args.websocket) if args.serve
                       else ManagedTarget.command(args.command))
            managed.start()
            host, port = managed.host, managed.port
            if args.serve and args.websocket:
                options.url = f"http://{host}:{port}/hub"
            elif args.url:
                options.url = args.url.replace("{host}", host).replace("{port}", str(port))
        fuzzer = LiveFuzzer(spec, host, port, options, managed)
        for lost in fuzzer.seed_damage:            # the other seeds are used all the same
            print(f"wirecheck fuzz: --seeds {lost}", file=sys.stderr)
        if not fuzzer.alive():
            where = options.url or f"{host}:{port}"
            print(f"wirecheck fuzz: the target {where} does not answer the liveness probe before any "
                  f"fuzzing", file=sys.stderr)
            return EXIT_HARNESS
        summary = fuzzer.run(seconds, progress=_json_progress(seconds) if args.json else None)
    except RuntimeError as exc:
        print(f"wirecheck fuzz: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    except KeyboardInterrupt:
        # stopped before the campaign began (the target starting, the seeds loading): nothing
        # was sent; the summary still says so, for a caller that reads it
        from wirecheck.conformance import cli_signals
        summary = {"mode": "live", "protocol": spec.id, "profile": profile, "execs": 0, "findings": [],
                   "not_reproduced": [], "kit_error": None, "stopped": "",
                   "interrupted": {"signal": cli_signals.signal_name(), "during": "start-up"}}
        if args.json:
            print(json.dumps(summary), flush=True)
        else:
            print(f"wirecheck fuzz: {summary['interrupted']['signal']}: stopped before any case was sent",
                  file=sys.stderr)
        return cli_signals.exit_status()
    finally:
        if managed is not None:
            managed.close()
    _print(summary, args.json)
    if summary["stopped"] and not args.json:
        print(f"stopped: {summary['stopped']}", file=sys.stderr)
    if summary.get("interrupted") and not args.json:
        print(f"wirecheck fuzz: {summary['interrupted']['signal']}: stopped after {summary['seconds']:g} s",
              file=sys.stderr)
    error = summary.get("kit_error")
    if error:
        print(f"wirecheck fuzz: the kit's own error (a bug of wirecheck, not a finding) in case "
              f"{error['case']} of --seed {error['seed']} ({error['mutation']}): {error['error']}\n"
              f"{error['traceback']}", file=sys.stderr)
        return EXIT_HARNESS
    if summary.get("interrupted"):
        from wirecheck.conformance import cli_signals
        return cli_signals.exit_status()
    return live_exit_status(summary)


def live_exit_status(summary: dict) -> int:
    """1 when a finding stands (reproduced, or not replayable: the kit did not start the
    target); an event that a fresh target never gave back (``not_reproduced``) does not alone
    make it 1."""
    return EXIT_FINDINGS if summary["findings"] else EXIT_OK
