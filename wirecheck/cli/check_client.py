"""``wirecheck check-client``: its arguments, the run over the scenarios, what it prints, and
its result file and JUnit XML (conformance/clients/suite.py runs one scenario)."""
from __future__ import annotations

import os
import shlex
import sys
import time
import xml.etree.ElementTree as ET

from wirecheck.conformance.report import verdicts

EXIT_OK, EXIT_FAIL, EXIT_HARNESS = 0, 1, 2


def add_arguments(s, protocol_arg) -> None:
    from wirecheck.conformance.clients.suite import DEFAULT_BUDGET, DEFAULT_COUNT
    s.add_argument("--protocol", type=protocol_arg, required=True)
    s.add_argument("--client-command", required=True, metavar="CMD",
                   help="your driver: the protocol's standard workload with your library ({host}, {port}, "
                        "{url}, {raw_port}, {count}, {scenario} filled in; docs/start/clients.md)")
    s.add_argument("--scenario", action="append", default=None, metavar="NAME",
                   help="only this scenario (repeatable; default: every scenario of the protocol)")
    s.add_argument("--scenario-option", action="append", default=None, metavar="NAME:KEY=VALUE",
                   help="an option of scenario NAME (e.g. close:writes=5, error-response:command=POLL); repeatable")
    s.add_argument("--count", type=int, default=DEFAULT_COUNT, help=f"messages of the workload (default {DEFAULT_COUNT})")
    s.add_argument("--budget", type=float, default=DEFAULT_BUDGET, metavar="S",
                   help=f"seconds a driver run may take before it is a HANG (default {DEFAULT_BUDGET:g})")
    s.add_argument("--profile", default=None, help="profile the reference broker speaks (default: the document)")
    s.add_argument("--strict", action="store_true",
                   help="a SHOULD broken (NON-STRICT) fails the run too, as the suites' --strict")
    s.add_argument("--report", default=None, metavar="FILE",
                   help="the result file (.json), HTML report (.html) or directory")
    s.add_argument("--junitxml", default=None, metavar="FILE", help="JUnit XML file")
    s.add_argument("--label", default=None, help="the client's name in the report (default: the "
                   "protocol and the driver's file name, e.g. 'signalr client rbfly_driver.py')")


def _options(items, known) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for item in items or ():
        name, sep, rest = item.partition(":")
        key, eq, value = rest.partition("=")
        if not sep or not eq or not key.strip():
            raise ValueError(f"--scenario-option wants NAME:KEY=VALUE, not {item!r}")
        if name not in known:
            raise ValueError(f"--scenario-option: unknown scenario {name!r}; known: {', '.join(known)}")
        out.setdefault(name, {})[key.strip()] = value.strip()
    return out



#: Programs that run a driver rather than being it (the driver is the first other word).
_RUNNERS = ("python", "node", "java", "dotnet", "sh", "bash", "ruby", "deno", "bun", "npx", "uv")


def default_label(protocol: str, command: str) -> str:
    """``PROTOCOL client NAME``: NAME the driver's file (``-m`` module) rather than the runner
    that starts it, or the whole command when it has no such word."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    name = ""
    for i, word in enumerate(words):
        if word.startswith("{"):
            break
        base = os.path.basename(word)
        if words[i - 1:i] == ["-m"]:
            name = word
            break
        if word.startswith("-") or any(base.startswith(r) for r in _RUNNERS):
            continue
        name = base
        break
    return f"{protocol} client {name or command}"

def main(args) -> int:
    from wirecheck.conformance import cli_signals
    from wirecheck.conformance.clients.driver import DriverError, command_argv
    from wirecheck.conformance.clients.scenarios import shaper_factory
    from wirecheck.conformance.clients.suite import DEFAULT_OPTIONS, run_scenario, scenario_names
    from wirecheck.conformance.clients.serve_check import summarise
    spec = args.protocol                 # protocol_arg gives the registered spec
    known = scenario_names(spec.id)
    chosen = args.scenario or known
    try:
        unknown = [n for n in chosen if n not in known]
        if unknown:
            raise ValueError(f"unknown scenario {unknown[0]!r}; known: {', '.join(known)}")
        options = _options(args.scenario_option, known)
        for name in chosen:          # a bad option is refused now, not after the first runs
            shaper_factory(name, {**DEFAULT_OPTIONS.get(name, {}), **options.get(name, {})}, spec.id)
        command_argv(args.client_command, dict.fromkeys(("host", "port", "url", "raw_port", "count", "scenario"), 0))
        if args.count < 1 or args.budget <= 0:
            raise ValueError("--count and --budget must be positive")
    except ValueError as exc:
        print(f"wirecheck check-client: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    started = time.time()
    tests, connections, runs = [], [], []
    stopped: dict | None = None
    for i, name in enumerate(chosen):
        try:
            doc = run_scenario(spec, name, args.client_command, options=options.get(name), count=args.count,
                               budget=args.budget, profile=args.profile)
        except DriverError as exc:
            print(f"wirecheck check-client: {exc}", file=sys.stderr)
            return EXIT_HARNESS
        except KeyboardInterrupt:
            # SIGINT or SIGTERM (cli_signals.py): the scenario in progress is not judged; what
            # was judged is written, marked interrupted with the scenarios not run
            stopped = cli_signals.interrupted(chosen[i:], "scenarios")
            print(f"check-client: {stopped['signal']}: stopped during {name}; "
                  f"{stopped['not_run']} scenario(s) not run", flush=True)
            break
        outcome = doc["tests"][0]
        print(f"{name}: {outcome['verdict']} ({doc['driver']['outcome']}) {outcome['message'].splitlines()[0]}",
              flush=True)
        for t in doc["tests"][1:]:
            if t["verdict"] != verdicts.PASS:
                print(f"  {t['verdict']} {t['nodeid'].split('::', 2)[-1]}: {t['message'].splitlines()[0]}", flush=True)
        tests += doc["tests"]
        connections += [{**c, "scenario": name} for c in doc["connections"]]
        runs.append({"scenario": name, "acted": doc["acted"], **doc["driver"]})
    doc = summarise({"kind": "client-check", "started": started, "finished": time.time(),
                     "target": ["127.0.0.1", 0], "label": args.label or default_label(spec.id, args.client_command),
                     "profile": args.profile, "strict": args.strict, "scenario": ",".join(chosen),
                     "connections": connections, "driver_runs": runs, "tests": tests}, spec)
    if stopped is not None:
        doc["interrupted"] = stopped
        doc["exitstatus"] = cli_signals.exit_status()
    elif args.strict and doc["exitstatus"] == EXIT_OK and any(t["verdict"] == verdicts.NON_STRICT for t in tests):
        doc["exitstatus"] = EXIT_FAIL
    counts = doc["summary"][spec.id]["counts"]
    print(f"{len(runs)} scenario(s): " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
          + f"; exit {doc['exitstatus']}")
    try:
        if args.report:
            from wirecheck.conformance.clients.serve_check import write_report
            write_report(doc, args.report)
        if args.junitxml:
            write_junit(doc, args.junitxml)
    except OSError as exc:
        print(f"wirecheck check-client: cannot write the report: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    return doc["exitstatus"]


#: JUnit's view of a verdict: a failure, an error (the kit's), a skip, or a pass.
_FAILURE = (verdicts.FAIL, verdicts.CRASH, verdicts.HANG, verdicts.TIMEOUT)
_SKIP = (verdicts.NOT_RUN, verdicts.SKIPPED, verdicts.UNIMPLEMENTED, verdicts.WAIVED)


def write_junit(doc: dict, path: str) -> None:
    """A result document as JUnit XML: one testcase per test, its requirements and verdict as
    properties (as the suites' JUnit carries them), FAIL/CRASH/HANG as failures, a
    HARNESS-ERROR as an error, NOT-RUN as skipped; NON-STRICT passes, but under --strict fails."""
    tests = doc["tests"]
    failure = _FAILURE + ((verdicts.NON_STRICT,) if doc.get("strict") else ())
    suite = ET.Element("testsuite", name=f"wirecheck check-client {doc.get('label', '')}".strip(),
                       tests=str(len(tests)),
                       failures=str(sum(t["verdict"] in failure for t in tests)),
                       errors=str(sum(t["verdict"] == verdicts.HARNESS_ERROR for t in tests)),
                       skipped=str(sum(t["verdict"] in _SKIP for t in tests)),
                       time=f"{doc['finished'] - doc['started']:.3f}")
    for t in tests:
        scope, _, name = t["nodeid"].rpartition("::")
        case = ET.SubElement(suite, "testcase", classname=scope.replace("::", "."), name=name,
                             time=f"{t.get('duration') or 0:.3f}")
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="requirements", value=" ".join(t["requirements"]))
        ET.SubElement(props, "property", name="verdict", value=t["verdict"])
        first = t["message"].splitlines()[0] if t["message"] else t["verdict"]
        if t["verdict"] in failure:
            ET.SubElement(case, "failure", message=f"{t['verdict']}: {first}").text = t["message"]
        elif t["verdict"] == verdicts.HARNESS_ERROR:
            ET.SubElement(case, "error", message=first).text = t["message"]
        elif t["verdict"] in _SKIP:
            ET.SubElement(case, "skipped", message=f"{t['verdict']}: {first}")
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
