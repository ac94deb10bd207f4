"""``wirecheck replay PCAP --target HOST:PORT``: the client side of every captured connection,
sent again to a target over fresh connections, and the target's answers compared frame by frame
with the recorded ones.

How a capture is replayed
-------------------------
The capture is read segment by segment (conformance/captures/pcapfile.py) and reassembled
(conformance/captures/tcpflows.py) as it streams; nothing but the connections in progress is held, so
a capture of any size replays in bounded memory. The replay walks the recorded events in
capture order, across all connections at once:

- a new connection: a new connection to the target;
- client bytes: sent to the target (with ``--rechunk``, cut into random pieces, seeded);
- a server frame: the target's next frame on that connection is read (with a timeout: the
  larger of ``--timeout`` and 1.5 times the recorded wait plus a second) and compared with it;
- a FIN or RST of the client: the same to the target; of the server: the target must close too.

Walking in capture order keeps what one connection caused on another (a publish on one and the
delivery on a subscriber's): the delivery is awaited only after the publish was sent.

Comparison and rewriting: conformance/captures/replay_flow.py.

Byte files
----------
A file that is not a capture (a fuzzer's finding) is one client stream: it is sent whole over
one connection, the answers are decoded and listed (bytes the reference codec cannot read are
a FAIL), and the target must then answer the protocol's liveness probe on a new connection
(conformance/target/liveness.py): refused (a crash) or no answer (a hang) is a FAIL. A network
fuzzer's finding ``X.bin`` has ``X.json`` beside it: the bytes go in the writes it lists, and
without ``--protocol`` the protocol and profile are taken from there.
"""
from __future__ import annotations

import json
import os
import random
import selectors
import sys
import time
from dataclasses import dataclass
from typing import Callable

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.captures.decode import capture_ports
from wirecheck.conformance.captures.pcapfile import CaptureFormatError, PcapReader, is_capture
from wirecheck.conformance.captures.replay_flow import FlowReplay, FlowResult, short_json
from wirecheck.conformance.captures.replay_rules import rules_for
from wirecheck.conformance.captures.tcpflows import Connection, Stream, TcpReassembler

EXIT_OK, EXIT_MISMATCH, EXIT_HARNESS = 0, 1, 2


@dataclass
class ReplayOptions:
    target: tuple[str, int]
    ports: tuple[int, ...] = ()
    timeout: float = 5.0
    rechunk: bool = False
    seed: int = 0
    profile: str | None = None
    credentials: tuple[str, str] | None = None
    unique_names: bool = True
    #: Keep the capture's pacing of client events (a client that waited for a server's timer
    #: waits as long again), each wait at most ``max_gap`` seconds; False: as fast as answers come.
    paced: bool = True
    max_gap: float = 5.0


class Replayer:
    """The reassembly sink that drives the replay (see the module doc)."""

    def __init__(self, spec, options: ReplayOptions, on_flow_done: Callable[[FlowResult], None] | None = None) -> None:
        self.spec = spec
        self.options = options
        self.rules = rules_for(spec.id)(options)
        self.rng = random.Random(options.seed)
        self._offset: float | None = None      # replay clock - capture clock (pacing)
        self._last_paced: tuple[float, float] | None = None   # last client event: (capture, replay) time
        self.selector = selectors.DefaultSelector()
        self.flows: dict[int, FlowReplay] = {}
        self.results: list[FlowResult] = []
        self.on_flow_done = on_flow_done
        self.reassembler = TcpReassembler(self, capture_ports(spec, options.ports))

    # -- I/O --------------------------------------------------------------------------------

    def pace(self, rec_time: float) -> None:
        """Hold a client event until as long after the first event as it was in the capture
        (gaps longer than ``max_gap`` shortened to it), reading answers meanwhile."""
        if not self.options.paced:
            return
        now = time.monotonic()
        if self._offset is None:
            self._offset = now - rec_time
        due = rec_time + self._offset
        if self._last_paced is not None:
            # a replay running late never shortens the gap between two client events (a
            # client that waited 5 ms between publishes for distinct timestamps waits 5 ms)
            last_rec, last_now = self._last_paced
            due = max(due, last_now + min(rec_time - last_rec, self.options.max_gap))
        if due - now > self.options.max_gap:
            self._offset -= due - now - self.options.max_gap
            due = now + self.options.max_gap
        if due > now:
            self.pump(due, lambda: False)
        self._last_paced = (rec_time, max(now, due))

    def pump(self, deadline: float, done: Callable[[], bool]) -> None:
        """Read from every open connection (and write what waits) until ``done()`` or the
        deadline."""
        while True:
            if done():
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if not self.selector.get_map():
                return
            for key, events in self.selector.select(min(left, 0.5)):
                flow: FlowReplay = key.data
                if events & selectors.EVENT_WRITE:
                    flow.on_writable()
                    self._want_write(flow)
                if events & selectors.EVENT_READ and flow.sock is not None:
                    flow.on_readable()

    def _want_write(self, flow: FlowReplay) -> None:
        if flow.sock is None:
            return
        mask = selectors.EVENT_READ | (selectors.EVENT_WRITE if flow.outbox else 0)
        try:
            self.selector.modify(flow.sock, mask, flow)
        except (KeyError, ValueError):
            pass

    def flush(self, flow: FlowReplay) -> None:
        """Write ``flow``'s outbox, reading all connections meanwhile; a target that stops
        reading for longer than the timeout is a mismatch."""
        flow.on_writable()
        while flow.outbox and flow.sock is not None:
            self._want_write(flow)
            before = len(flow.outbox)
            self.pump(time.monotonic() + self.options.timeout, lambda: len(flow.outbox) < before or flow.sock is None
                      or flow.live_closed is not None)
            if flow.outbox and len(flow.outbox) >= before:
                flow.mismatch(f"the target stopped reading ({len(flow.outbox)} bytes unsent after "
                              f"{self.options.timeout:.1f}s)")
                flow.outbox.clear()
                flow.client_gone = True
                flow.close_socket(abort=True)
        self._want_write(flow)

    # -- reassembly sink --------------------------------------------------------------------

    def opened(self, conn: Connection, time_: float) -> None:
        flow = FlowReplay(self, conn)
        conn.user["flow"] = flow
        self.flows[conn.index] = flow
        flow.connect()

    def data(self, stream: Stream, data: bytes, time_: float) -> None:
        flow: FlowReplay = stream.conn.user["flow"]
        if stream.direction == "c2s":
            flow.client_bytes(data, time_)
        else:
            flow.server_bytes(data, time_)

    def ended(self, stream: Stream, time_: float, how: str, missing) -> None:
        flow: FlowReplay = stream.conn.user["flow"]
        if stream.direction == "c2s":
            flow.client_end(how, missing, time_)
        else:
            flow.server_end(how, missing, time_)
        if all(s.ended for s in stream.conn.streams.values()):
            self._done(flow)

    def _done(self, flow: FlowReplay) -> None:
        flow.finish()
        self.flows.pop(flow.conn.index, None)
        self.results.append(flow.result)
        if self.on_flow_done is not None:
            self.on_flow_done(flow.result)

    def abandon(self) -> list[int]:
        """A stopped replay (SIGINT, SIGTERM): the connections in progress are closed and not
        judged; their indexes."""
        left = sorted(self.flows)
        for flow in list(self.flows.values()):
            flow.close_socket(abort=True)
        self.flows.clear()
        self.selector.close()
        return left

    def close(self, time_: float) -> None:
        self.reassembler.close(time_)
        for flow in list(self.flows.values()):
            self._done(flow)
        self.selector.close()


# -- whole captures ----------------------------------------------------------------------------

def guess_protocol(path: str, ports: tuple[int, ...] = (), limit: int = 2000):
    """The registered protocol whose port the capture's first TCP segments use, or None."""
    from wirecheck.reference_impl.core import registry
    by_port = {}
    for spec in registry.all_protocols():
        for port in (spec.default_port, *spec.extra_ports):
            by_port.setdefault(port, spec)
    with PcapReader(path, tolerant=True) as reader:
        for n, seg in enumerate(reader):
            for port in (seg.dst[1], seg.src[1]):
                if port in by_port:
                    return by_port[port]
            if n >= limit:
                break
    return None


def replay_capture(spec, path: str, options: ReplayOptions, progress=None,
                   damage: list | None = None, stopped: dict | None = None) -> list[FlowResult]:
    """Replay every ``spec`` connection of the capture at ``path``; ``progress(position, flows,
    mismatching)`` is called as the file is read. A capture broken past its header is replayed
    up to the break, and where and what it lost is appended to ``damage``. Stopped by a signal
    (SIGINT, SIGTERM), the connections judged so far are returned and ``stopped`` (when given;
    else the KeyboardInterrupt goes on) says what was left: the connections in progress, and
    how far into the file the replay was."""
    bad = 0

    def done(result: FlowResult) -> None:
        nonlocal bad
        bad += result.verdict == verdicts.FAIL

    replayer = Replayer(spec, options, done)
    reader = PcapReader(path, tolerant=damage is not None)
    last = 0.0
    try:
        with reader:
            for n, seg in enumerate(reader):
                last = seg.time
                replayer.reassembler.segment(seg)
                if progress is not None and n % 64 == 0:
                    progress(reader.file_position, len(replayer.results), bad)
    except KeyboardInterrupt:
        if stopped is None:
            raise
        from wirecheck.conformance import cli_signals
        left = replayer.abandon()
        stopped.update(cli_signals.interrupted([f"connection {i}" for i in left], "connections"),
                       capture_bytes_read=reader.file_position)
        replayer.results.sort(key=lambda r: r.index)
        return replayer.results
    replayer.close(last)
    if reader.damage is not None:
        damage.append(reader.damage)
    if progress is not None:
        progress(reader.file_position, len(replayer.results), bad)
    replayer.results.sort(key=lambda r: r.index)
    return replayer.results


def replay_bytes(spec, path: str, options: ReplayOptions) -> list[FlowResult]:
    """A byte file (a fuzzer's finding) as one client stream; see the module doc."""
    with open(path, "rb") as fh:
        data = fh.read()
    earlier = _earlier_connections(path, options)
    conn = Connection(0, ("file", 0), tuple(options.target))
    replayer = Replayer(spec, options)
    flow = FlowReplay(replayer, conn)
    if earlier:
        flow.note(earlier)
    flow.connect()
    if flow.sock is not None:
        pos = 0
        for size in _finding_writes(path, len(data)):      # as the fuzzer wrote them
            flow.client_bytes(data[pos:pos + size], 0.0)
            pos += size
        def count() -> int:
            return len(flow.actual) + sum(map(len, flow.async_got.values()))

        # answers until the target closes or is quiet for the timeout
        while flow.live_closed is None:
            before = count()
            replayer.pump(time.monotonic() + options.timeout,
                          lambda: count() > before or flow.live_closed is not None)
            if count() == before:
                break
        answers = flow.received()
        for kind, what, *_ in answers:
            flow.log("<-", b"", short_json(what, 300) if kind == "frame" else f"undecodable bytes ({what})")
            if kind == "error":
                flow.mismatch(f"the target answered with bytes the reference decoder rejects ({what})",
                              ["frames the reference codec reads"], f"undecodable ({what})")
        flow.close_socket()
        flow.note(f"the target answered {sum(a[0] == 'frame' for a in answers)} frame(s) and "
                  + ("kept the connection open" if flow.live_closed is None else
                     f"closed the connection ({flow.live_closed})"))
        from wirecheck.conformance.target import liveness
        host, port = options.target
        alive = liveness.settled_probe(spec, host, port, options.profile, options.timeout)
        if alive.ok:
            flow.note("the target answers the liveness probe on a new connection afterwards")
        else:
            what = {liveness.REFUSED: "no longer accepts connections (crashed?)",
                    liveness.SILENT: "no longer answers (hung?)",
                    liveness.CLOSED: "closes new connections without an answer"}.get(
                        alive.status, "answers the liveness probe wrongly")
            flow.mismatch(f"after these bytes the target {what}: {alive.detail}",
                          ["an answer to the liveness probe"], f"{alive.status} ({alive.detail})")
    flow.finish()
    replayer.selector.close()
    return [flow.result]


def result_document(spec, path: str, results: list[FlowResult], options: ReplayOptions,
                    started: float, label: str | None) -> dict:
    """The replay as a result file (the format ``wirecheck report`` reads)."""
    counts: dict[str, int] = {}
    tests = []
    base = os.path.basename(path)
    for r in results:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
        lines = list(r.mismatches)
        if r.more_mismatches:
            lines.append(f"... and {r.more_mismatches} more mismatch(es)")
        if r.incomplete:
            lines.append(f"incomplete capture: {r.incomplete}")
        message = "\n".join(lines) if lines else (
            f"equivalent ({r.frames_compared} frame(s) compared)" + ("; names rewritten" if r.rewritten else ""))
        tests.append({"nodeid": f"replay::{base}::#{r.index} {r.name}", "protocol": spec.id,
                      "requirements": list(r.requirements), "verdict": r.verdict, "message": message,
                      "transcript": "", "wire": [r.transcript] if r.transcript else [],
                      "expected": r.expected, "actual": r.actual, "duration": r.duration,
                      "notes": r.notes, "frames_compared": r.frames_compared})
    return {"kind": "replay", "capture": path, "started": started, "finished": time.time(),
            "exitstatus": EXIT_MISMATCH if counts.get(verdicts.FAIL) else EXIT_OK,
            "target": [options.target[0], options.target[1]], "label": label or f"replay of {base}",
            "profile": options.profile, "strict": False, "rechunk": options.rechunk, "seed": options.seed,
            "summary": {spec.id: {"counts": counts, "waivers": {}, "stale_waivers": [], "catalogue": {},
                                  "failing_requirements": [], "unimplemented_requirements": [],
                                  "waived_requirements": []}},
            "tests": tests}


def _progress_bar(path: str, enabled: bool):
    """A rich progress bar over the capture's bytes (stderr), or a no-op."""
    if not enabled:
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
    bar = Progress(TextColumn("replay {task.fields[name]}"), BarColumn(), DownloadColumn(),
                   TextColumn("{task.fields[flows]} connections, {task.fields[bad]} mismatching"),
                   TimeRemainingColumn(), console=Console(stderr=True), transient=False)
    task = bar.add_task("replay", total=os.path.getsize(path), name=os.path.basename(path), flows=0, bad=0)

    def update(position: int, flows: int, bad: int) -> None:
        bar.update(task, completed=position, flows=flows, bad=bad)
    return bar, update


def main(args) -> int:
    """``wirecheck replay`` (cli/replay.py builds ``args``; ``args.target`` is parsed)."""
    path, target = args.pcap, args.target
    if not os.path.isfile(path):
        print(f"wirecheck replay: no such file: {path}", file=sys.stderr)
        return EXIT_HARNESS
    credentials = None
    if args.credentials:
        user, sep, password = args.credentials.partition(":")
        if not sep:
            print("wirecheck replay: --credentials is USER:PASSWORD", file=sys.stderr)
            return EXIT_HARNESS
        credentials = (user, password)
    options = ReplayOptions(target, tuple(args.port or ()), args.timeout, args.rechunk, args.seed,
                            args.profile, credentials, not args.keep_names, not args.fast, args.max_gap)
    capture = is_capture(path)
    damage: list[str] = []
    stopped: dict = {}                   # filled when a signal stops the replay
    spec = args.protocol
    if not capture and (problem := finding_meta_problem(path)) is not None:
        # a finding's bytes replay without it: its protocol, writes and earlier connections
        print(f"wirecheck replay: {problem}: not read; the bytes are replayed without it", file=sys.stderr)
    if spec is None and not capture:
        spec, finding_profile = _finding_protocol(path)
        if args.profile is None:
            args.profile = finding_profile
    try:
        if spec is None:
            spec = guess_protocol(path, options.ports) if capture else None
            if spec is None:
                print(f"wirecheck replay: cannot tell the protocol of {path}: give --protocol",
                      file=sys.stderr)
                return EXIT_HARNESS
        if args.profile is not None:
            from wirecheck.conformance.profiles import ProfileError, load_profile
            try:
                options.profile = load_profile(spec, args.profile).base
            except ProfileError as exc:
                print(f"wirecheck replay: {exc}", file=sys.stderr)
                return EXIT_HARNESS
        started = time.time()
        if capture:
            show = args.progress if args.progress is not None else sys.stderr.isatty()
            bar, update = _progress_bar(path, show)
            if bar is not None:
                with bar:
                    results = replay_capture(spec, path, options, update, damage, stopped)
            else:
                results = replay_capture(spec, path, options, damage=damage, stopped=stopped)
            for lost in damage:
                # what precedes the break is replayed (a capture cut by a killed tcpdump)
                print(f"wirecheck replay: {path}: {lost}: replayed up to there, the rest is lost", file=sys.stderr)
            if not results and not stopped:
                print(f"wirecheck replay: no {spec.id} connection in {path} (ports "
                      f"{sorted(capture_ports(spec, options.ports))}; --port adds one)", file=sys.stderr)
                return EXIT_HARNESS
        else:
            results = replay_bytes(spec, path, options)
    except (OSError, CaptureFormatError) as exc:
        print(f"wirecheck replay: {path}: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    doc = result_document(spec, path, results, options, started, args.label)
    doc["mode"] = "capture" if capture else "bytes"
    if damage:
        doc["damaged"] = [{"file": path, "error": lost, "whole": False} for lost in damage]
    if stopped:
        from wirecheck.conformance import cli_signals
        doc["interrupted"] = stopped
        doc["exitstatus"] = cli_signals.exit_status()
    _print_summary(doc, results, args.json)
    if stopped and not args.json:
        print(f"wirecheck replay: {stopped['signal']}: stopped after {stopped['capture_bytes_read']} bytes of "
              f"{path}; {stopped['not_run']} connection(s) in progress not judged", file=sys.stderr)
    if args.report:
        _write_report(doc, args.report)
    return doc["exitstatus"]


def _finding_meta(path: str) -> dict:
    """The JSON a network fuzzer finding ``X.bin`` has beside it (``X.json``), or {}."""
    try:
        with open(os.path.splitext(path)[0] + ".json", encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def finding_meta_problem(path: str) -> str | None:
    """Why the JSON beside a finding ``X.bin`` (``X.json``) cannot be read, when it is there
    and cannot: the replay then goes on without it (one line says so), else None."""
    meta = os.path.splitext(path)[0] + ".json"
    if not os.path.exists(meta):
        return None
    try:
        with open(meta, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as exc:
        return f"{meta}: {exc.strerror or exc}"
    except ValueError as exc:
        return f"{meta}: not JSON ({exc})"
    return None if isinstance(doc, dict) else f"{meta}: not a JSON object"


def _finding_writes(path: str, total: int) -> list[int]:
    """The write sizes the fuzzer used for this finding, else one write of everything."""
    writes = _finding_meta(path).get("writes")
    if isinstance(writes, list) and all(isinstance(w, int) and w > 0 for w in writes) and sum(writes) == total:
        return writes
    return [total]


#: Seconds an earlier connection's answers may take to stop (quiet) before it is closed.
EARLIER_QUIET = 0.2


def _earlier_connections(path: str, options: ReplayOptions) -> str:
    """The connections a fuzzer finding needs before its own (``connections_before`` in its
    JSON: some servers keep state across connections), sent first, each on its own
    connection in the fuzzer's writes, its answers read until the target is quiet or closes;
    a note of what was done, or "" when the finding needs none."""
    import select
    import socket
    try:
        befores = earlier_connection_bytes(path)
    except ValueError as exc:
        return str(exc)
    if not befores:
        return ""
    host, port = options.target[0], options.target[1]
    sent = 0
    for data, writes in befores:
        try:
            with socket.create_connection((host, port), timeout=options.timeout) as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                pos = 0
                for size in writes:
                    sock.sendall(data[pos:pos + size])
                    pos += size
                deadline = time.monotonic() + options.timeout
                while time.monotonic() < deadline:
                    if not select.select([sock], [], [], EARLIER_QUIET)[0] or not sock.recv(65536):
                        break
        except OSError as exc:
            return (f"{sent} of the finding's {len(befores)} earlier connection(s) replayed; the next "
                    f"failed: {exc.strerror or exc}")
        sent += 1
    return f"replayed first the {sent} earlier connection(s) the finding needs (connections_before)"


def earlier_connection_bytes(path: str) -> list[tuple[bytes, list[int]]]:
    """(bytes, writes) of each connection a fuzzer finding needs before its own, from its
    JSON's ``connections_before``; ValueError saying which one does not read (none is sent)."""
    befores = _finding_meta(path).get("connections_before")
    if not isinstance(befores, list):
        return []
    out = []
    for n, before in enumerate(befores, 1):
        try:
            data = b"".join(bytes.fromhex(f) for f in before["frames"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"the finding's earlier connection {n} is unreadable: none replayed") from None
        writes = before.get("writes")
        if not (isinstance(writes, list) and all(type(w) is int and w > 0 for w in writes)
                and sum(writes) == len(data)):
            writes = [len(data)]
        out.append((data, writes))
    return out


def _finding_protocol(path: str):
    """(spec, profile) from a network fuzzer finding's JSON beside ``path``, else (None, None)."""
    from wirecheck.reference_impl.core import registry
    doc = _finding_meta(path)
    try:
        return registry.get(doc["protocol"]), doc.get("profile")
    except (KeyError, TypeError):
        return None, None


def _print_summary(doc: dict, results: list[FlowResult], as_json: bool) -> None:
    counts = next(iter(doc["summary"].values()))["counts"]
    equivalent = counts.get(verdicts.PASS, 0)
    if as_json:
        print(json.dumps({"capture": doc["capture"], "connections": len(results), "equivalent": equivalent,
                          "mismatching": counts.get(verdicts.FAIL, 0),
                          "incomplete": counts.get(verdicts.SKIPPED, 0),
                          "frames_compared": sum(r.frames_compared for r in results),
                          "mismatches": [{"connection": f"#{r.index} {r.name}", "diff": r.mismatches}
                                         for r in results if r.verdict == verdicts.FAIL]}))
        return
    if doc.get("mode") == "bytes":
        r = results[0]
        print(f"{r.verdict} {doc['capture']}: " + "; ".join(r.mismatches + r.notes))
        return
    for r in results:
        if r.verdict != verdicts.PASS:
            print(f"{r.verdict} #{r.index} {r.name}")
            for line in r.mismatches + ([f"... {r.more_mismatches} more"] if r.more_mismatches else []):
                print(f"    {line}")
            if r.incomplete:
                print(f"    {r.incomplete}")
    print(f"{doc['capture']}: {len(results)} connection(s), {equivalent} equivalent, "
          f"{counts.get(verdicts.FAIL, 0)} mismatching, {counts.get(verdicts.SKIPPED, 0)} incomplete; "
          f"{sum(r.frames_compared for r in results)} frame(s) compared")


def _write_report(doc: dict, out: str) -> None:
    from wirecheck.conformance.report.index import write_result
    write_result(doc, out, os.path.splitext(os.path.basename(doc["capture"]))[0] + ".replay.json")
