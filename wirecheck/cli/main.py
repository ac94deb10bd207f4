"""``wirecheck`` command line: conformance checks, reference brokers, fuzzing, captures and reports.

    wirecheck protocols [--json]
    wirecheck serve   --protocol P [--host H] [--port N] [--data-dir DIR] [--api-key K ...] [--raw-port N]
    wirecheck check   --protocol P [--target HOST:PORT] [--profile NAME|FILE] [--report FILE] [-n N]
                      [--target-command CMD] [--no-preflight]    # the kit runs the target; skip the preflight
    wirecheck report  RESULTS... --out FILE.html|FILE.json|DIR   # result files, fuzz campaign summaries, capture analyses
    wirecheck serve   ... --capture FILE.pcap          # record every connection (no root needed)
    wirecheck record  --listen HOST:PORT --upstream HOST:PORT --capture FILE.pcap
    wirecheck decode  --protocol P [--profile NAME] (--hex HEX | --file F | --pcap F [--port N ...])
    wirecheck replay  PCAP|BYTES --target HOST:PORT [--protocol P] [--rechunk] [--report FILE]
    wirecheck fuzz    --protocol P (--decoder|--nested|--session|--target HOST:PORT|--serve|--command CMD) [--time S] [--json]
    wirecheck fuzz    --all [--time 10m]                # a campaign over every target, both cores
    wirecheck analyze CAPTURES... --out DIR [--master URL] [--protocol P] [--port N] [--profile NAME]
    wirecheck analyze-fuzz RUNS... --out DIR [--master URL]
    wirecheck run     [--reports DIR] [--protocol P ...] [--alluredir DIR]   # brokers + suites (``make run``)
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from wirecheck.cli.check import cmd_check
from wirecheck.cli.decode import cmd_decode, cmd_protocols
from wirecheck.cli.replay import cmd_replay
from wirecheck.cli.report import cmd_report
from wirecheck.cli.serve import cmd_record, cmd_serve
from wirecheck.cli.support import EXIT_HARNESS, EXIT_OK, missing_extra, protocol_arg

# -- commands whose modules are loaded when used (the fuzzer's, the pipeline's, the brokers') ---

def cmd_fuzz(args) -> int:
    from wirecheck.cli.fuzz import main
    return main(args)


def cmd_analyze(args) -> int:
    from wirecheck.cli.analyze import run_analyze
    return run_analyze(args)


def cmd_analyze_fuzz(args) -> int:
    from wirecheck.cli.analyze import run_analyze_fuzz
    return run_analyze_fuzz(args)


def cmd_run(args) -> int:
    from wirecheck.conformance.run.all_protocols import run_all
    return run_all(args.reports, timeout=args.timeout, alluredir=args.alluredir,
                   protocols=[spec.id for spec in args.protocol or []])


# -- parser ------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="wirecheck", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("protocols", help="list registered protocols")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_protocols)

    s = sub.add_parser("serve", help="run a reference broker")
    s.add_argument("--protocol", type=protocol_arg, required=True)
    s.add_argument("--host", default="127.0.0.1",
                   help="address of every listener (default loopback; another address warns, "
                        "and needs --api-key where the protocol has authentication)")
    s.add_argument("--port", type=int, default=None, help="default: the protocol's port")
    s.add_argument("--data-dir", default=None,
                   help="persist here (BlipMQ: WAL; RabbitMQ Stream: segment files); default in memory")
    s.add_argument("--api-key", action="append",
                   help="credential (repeatable): BlipMQ API key (default dev-key); VibeMQ password "
                        "or user:password (default vibemq); RabbitMQ Stream user:password (default "
                        "guest:guest). The defaults are accepted on loopback only")
    s.add_argument("--fsync", default=None,
                   help="fsync policy of the WAL / stream segments: always, none, every_n:N, interval_ms:MS")
    s.add_argument("--profile", default=None, help="profile the broker speaks (default: the document)")
    s.add_argument("--raw-port", type=int, default=None,
                   help="SignalR: raw TCP port beside HTTP/WebSocket on --port (default: port + 1)")
    s.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="a broker setting by name (its config's field, e.g. ack_timeout=30, "
                        "max_messages_per_second=null); repeatable")
    s.add_argument("--check-clients", action="store_true",
                   help="judge every client that connects with the protocol's rules; at the end "
                        "(SIGINT/SIGTERM or --duration) print and --report them; exit 1 when a client "
                        "broke a MUST")
    s.add_argument("--scenario", default=None,
                   help="with --check-clients: what the server's bytes go through on the way to the "
                        "client: none, split, coalesce, delay, close (default none), or one of the protocol's "
                        "own (heartbeat, error-response, unknown-fields, max-size, ...: docs/start/clients.md)")
    s.add_argument("--scenario-option", action="append", default=None, metavar="KEY=VALUE",
                   help="with --check-clients: an option of the scenario (e.g. interval=1.0, code=17, "
                        "command=SUBSCRIBE; docs/start/clients.md); repeatable")
    s.add_argument("--duration", type=float, default=None, metavar="S",
                   help="with --check-clients: stop after S seconds")
    s.add_argument("--report", default=None, metavar="FILE",
                   help="with --check-clients: the result file (.json), HTML report (.html) or directory")
    s.add_argument("--label", default=None, help="with --check-clients: the clients' name in the report")
    s.add_argument("--capture", default=None, metavar="FILE.pcap",
                   help="record every connection into this pcap (synthetic TCP framing; no root needed)")
    s.set_defaults(func=cmd_serve)

    from wirecheck.cli import check_client as client_command
    s = sub.add_parser("check-client", help="run a client library's driver under every scenario against the "
                                            "reference broker; judge its wire, its outcome and its messages")
    client_command.add_arguments(s, protocol_arg)
    s.set_defaults(func=client_command.main, _command="check_client")

    s = sub.add_parser("record", help="a relay in front of any server that records its connections as a pcap")
    s.add_argument("--listen", required=True, help="HOST:PORT the clients connect to")
    s.add_argument("--upstream", required=True, help="HOST:PORT of the server")
    s.add_argument("--capture", required=True, metavar="FILE.pcap")
    s.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    s.set_defaults(func=cmd_record)

    s = sub.add_parser("check", help="run the black-box suite against a target")
    s.add_argument("--protocol", type=protocol_arg, required=True)
    s.add_argument("--target", default=None, help="HOST:PORT (default: start the reference broker)")
    s.add_argument("--profile", default=None)
    s.add_argument("--report", default=None,
                   help="FILE.json: the result file; FILE.html: the HTML report (and FILE.json beside it)")
    s.add_argument("--label", default=None, help="the implementation's name in reports")
    s.add_argument("--junitxml", default=None, help="JUnit XML file")
    s.add_argument("-n", default=None, help="pytest-xdist workers (e.g. auto)")
    s.add_argument("--timeout", type=float, default=None, help="seconds per receive")
    s.add_argument("--strict", action="store_true", help="SHOULD violations fail too")
    s.add_argument("--target-command", default=None, metavar="CMD",
                   help="run the target: CMD with {host}, {port}, {data_dir} filled in; restarted after a "
                        "CRASH, stopped at the end (--target defaults to 127.0.0.1:{port})")
    s.add_argument("--no-preflight", action="store_true",
                   help="do not check first that the target answers the handshake and takes the credentials")
    s.add_argument("--docs-url", default=None, metavar="URL",
                   help="base address of the documentation site the HTML report links each requirement "
                        "ID to (default: $WIRECHECK_DOCS_URL, else a checkout's site/; empty: no links)")
    s.add_argument("pytest_args", nargs="*", help="passed to pytest after -- (paths or node ids "
                   "among them narrow the run to those tests)")
    s.set_defaults(func=cmd_check)

    s = sub.add_parser("report", help="merge result files, fuzz campaign summaries and capture analyses "
                                      "into the HTML report and/or index.json")
    s.add_argument("results", nargs="+", help="result files (check/replay --report FILE.json), fuzz campaign "
                                              "summaries (fuzz --all), capture analyses (analyze --out DIR: "
                                              "DIR or DIR/summary.json), or directories of them")
    s.add_argument("--out", required=True,
                   help="FILE.html (HTML report), FILE.json (index.json + transcripts/ beside it), or a "
                        "directory (index.html and index.json)")
    s.add_argument("--docs-url", default=None, metavar="URL",
                   help="base address of the documentation site the HTML report links each requirement "
                        "ID to (default: $WIRECHECK_DOCS_URL, else a checkout's site/; empty: no links)")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("decode", help="decode frames; JSON lines")
    s.add_argument("--protocol", type=protocol_arg, required=True)
    s.add_argument("--profile", default=None)
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument("--hex")
    g.add_argument("--file")
    g.add_argument("--pcap")
    s.add_argument("--port", type=int, action="append",
                   help="--pcap: also decode TCP on this port (repeatable; default: the protocol's ports)")
    s.set_defaults(func=cmd_decode)

    s = sub.add_parser("replay", help="replay the clients of a capture against a target and compare the answers")
    s.add_argument("pcap", metavar="PCAP", help="a pcap/pcapng capture, or a byte file (one client stream)")
    s.add_argument("--target", default=None, help="HOST:PORT")
    s.add_argument("--target-command", default=None, metavar="CMD",
                   help="start the target with CMD ({host}, {port}, {data_dir} filled in) for the replay, "
                        "stop it after; a target that went down is reported (exit 1)")
    s.add_argument("--protocol", type=protocol_arg, default=None, help="default: from the capture's ports")
    s.add_argument("--port", type=int, action="append",
                   help="also replay TCP on this port of the capture (repeatable)")
    s.add_argument("--profile", default=None)
    s.add_argument("--rechunk", action="store_true", help="send the client's bytes in random pieces")
    s.add_argument("--seed", type=int, default=0, help="seed of --rechunk and of renamed resources")
    s.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for each recorded answer")
    s.add_argument("--fast", action="store_true",
                   help="send as soon as the recorded answers came, not at the capture's pace")
    s.add_argument("--max-gap", type=float, default=5.0,
                   help="longest pause between client events kept from the capture (seconds)")
    s.add_argument("--credentials", default=None, metavar="USER:PASSWORD",
                   help="the target's credentials, instead of the recorded ones")
    s.add_argument("--keep-names", action="store_true",
                   help="send stream/topic names as recorded (default: made unique per replay)")
    s.add_argument("--report", default=None,
                   help="FILE.json (result file), FILE.html (and FILE.json), or a directory")
    s.add_argument("--label", default=None)
    s.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    s.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    s.set_defaults(func=cmd_replay)

    s = sub.add_parser("fuzz", help="fuzz decoders and sessions in process, a live target over the network, "
                                    "or everything in a time budget (--all)")
    from wirecheck.cli.fuzz import add_arguments
    add_arguments(s, protocol_arg)
    s.set_defaults(func=cmd_fuzz)

    from wirecheck.cli.analyze import add_analyze_arguments, add_fuzz_arguments
    s = sub.add_parser("analyze", help="passive conformance checking of capture corpora on Spark: "
                                       "frames, violations, flows and stats as Parquet tables")
    add_analyze_arguments(s, protocol_arg)
    s.set_defaults(func=cmd_analyze)

    s = sub.add_parser("analyze-fuzz", help="aggregate fuzz campaign summaries on Spark (exec/s, "
                                            "coverage over time, corpus growth, findings over runs)")
    add_fuzz_arguments(s)
    s.set_defaults(func=cmd_analyze_fuzz)

    s = sub.add_parser("run", help="every protocol's reference broker + black-box suite")
    s.add_argument("--reports", default="reports")
    s.add_argument("--alluredir", default=None, help="also write allure results here")
    s.add_argument("--protocol", type=protocol_arg, action="append",
                   help="only this protocol (repeatable; default: all)")
    s.add_argument("--timeout", type=float, default=None)
    s.set_defaults(func=cmd_run)
    return p


def extra_needed(args) -> tuple[str, str] | None:
    """(the optional extra, what needs it) when the parsed command needs more than the CI
    gate's plain install (pyproject.toml's extras; docs/start/install.md)."""
    if args.func is cmd_fuzz and (args.decoder or args.nested or args.session or args.all):
        return "fuzz", "in-process fuzzing (atheris targets)"
    if args.func in (cmd_analyze, cmd_analyze_fuzz):
        return "spark", "capture and campaign analysis on Spark"
    if args.func is cmd_run and args.alluredir:
        return "allure", "--alluredir"
    if args.func is cmd_check and any(a.startswith("--alluredir") for a in args.pytest_args):
        return "allure", "--alluredir"
    return None


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=os.environ.get("WIRECHECK_LOG", "WARNING"))
    args = build_parser().parse_args(argv)
    needed = extra_needed(args)
    if needed is not None:
        message = missing_extra(*needed)
        if message:
            name = args.func.__name__.removeprefix("cmd_").replace("_", "-")
            print(f"wirecheck {name}: {message}", file=sys.stderr)
            return EXIT_HARNESS
    from wirecheck.conformance.run.output_paths import command_output_problem
    command = getattr(args, "_command", None) or args.func.__name__.removeprefix("cmd_")
    if (problem := command_output_problem(command.replace("-", "_"), args)) is not None:
        print(f"wirecheck {command.replace('_', '-')}: {problem}", file=sys.stderr)
        return EXIT_HARNESS
    from wirecheck.conformance import cli_signals
    # the command line's own process (argv None) becomes the subreaper of what it starts; a
    # caller running a command in-process keeps its own handlers once it returns
    previous = cli_signals.install(subreaper=argv is None)
    try:
        status = args.func(args)
    except KeyboardInterrupt:        # a command that does not write a partial result itself
        status = cli_signals.exit_status()
        print(f"wirecheck {command.replace('_', '-')}: {cli_signals.signal_name()}: stopped",
              file=sys.stderr)
    except BrokenPipeError:          # the reader went away (| head): not an error of ours
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    finally:
        if argv is not None:
            cli_signals.restore(previous)
    if argv is None and (cli_signals.received() is not None or (status or 0) > 128):
        cli_signals.sweep()          # what a finally did not stop (cli_signals.py)
    return status


if __name__ == "__main__":
    sys.exit(main())
