"""Client conformance: ``wirecheck serve --protocol P --check-clients`` (DESIGN.md, "Client
implementations are targets too").

The reference broker listens on a private loopback port; a relay (conformance/captures/relay.py) on
the public port(s) passes every byte both ways, records the conversations, and hands the
broker's bytes to the run's scenario (conformance/clients/scenarios.py). When the run ends, the
recording goes through the same per-connection analysis as the capture pipeline
(conformance/captures/flows.py: the capture decoders and the protocol's observer), so the rules a client is
judged by are the ones replay and ``wirecheck analyze`` apply; there is no second copy.

The result is a result file like a suite run's (``"kind": "client-check"``, read by
``wirecheck report``): for each client connection, one case per requirement the client broke
(FAIL for a MUST, NON-STRICT for a SHOULD; its messages, and the connection's transcript) and one
PASS case with the requirements it exercised without breaking them. A rule the reference broker
broke is a HARNESS-ERROR (the kit's fault, not the client's). Each connection also gets how it
ended (``behaviour``): the client closed it, reset it, the server closed it and the client
followed, or it was still open when the run ended.
"""
from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.captures.relay import CaptureFile, relay_broker
from wirecheck.conformance.clients.identity import client_identity
from wirecheck.conformance.clients.scenarios import shaper_factory
from wirecheck.conformance.captures.tcpflows import endpoint

#: Bytes of each connection's traffic kept for its transcript (each direction); the rest is
#: counted, not kept (a client that streams for minutes must not fill the memory).
TRANSCRIPT_BYTES = 64 * 1024
#: Messages of one requirement shown in its case (the count says how many there were).
MESSAGES_SHOWN = 5
#: Scenario actions listed per connection (the rest are counted).
ACTIONS_SHOWN = 20
#: How each client coped (Connection.outcome).
RECOVERED, SURFACED, HUNG, CRASHED, OPEN = "recovered", "surfaced an error", "hung", "crashed", "open"
OUTCOMES = (RECOVERED, SURFACED, HUNG, CRASHED, OPEN)
#: Seconds after a scripted close within which a new connection counts as the client's
#: reconnect: one of the same client (conformance/clients/identity.py: what it says about itself
#: in its first frames), or, where the protocol or the client says nothing, the next by order
#: (the clients share loopback: their addresses tell nothing).
RECONNECT_WINDOW = 5.0


@dataclass
class Connection:
    """What the relay saw of one client connection (the tap's record)."""
    number: int
    client: str                    # "host:port", as the capture's flow names it
    opened: float
    chunks: list = field(default_factory=list)      # (time, direction, bytes)
    kept: dict = field(default_factory=lambda: {"c2s": 0, "s2c": 0})
    ends: dict = field(default_factory=dict)        # direction -> (time, "fin" | "rst")
    #: The scenario ended it from the server's side (``close``), not the broker.
    cut: bool = False
    #: A later connection came within RECONNECT_WINDOW of the cut (set by the checker).
    reconnected: bool = False
    #: The relay's scenario (its ``log`` says what a protocol-level scenario did), or None.
    shaper: object = None
    #: Who the client said it is (clients/identity.py), None where unknown (set by the checker).
    identity: str | None = None

    def client_bytes(self) -> bytes:
        return b"".join(data for _, direction, data in self.chunks if direction == "c2s")

    def scenario_actions(self) -> list[str]:
        """What the scenario did on this connection, repeats collapsed ("Heartbeat x12")."""
        out: list[list] = []
        for _, what in getattr(self.shaper, "log", ()):
            if out and out[-1][0] == what:
                out[-1][1] += 1
            else:
                out.append([what, 1])
        shown = [what if n == 1 else f"{what} x{n}" for what, n in out[:ACTIONS_SHOWN]]
        if len(out) > ACTIONS_SHOWN:
            shown.append(f"... and {len(out) - ACTIONS_SHOWN} more")
        return shown

    def add(self, direction: str, data: bytes, now: float) -> None:
        room = TRANSCRIPT_BYTES - self.kept[direction]
        if room > 0:
            self.chunks.append((now, direction, data[:room]))
            self.kept[direction] += min(room, len(data))

    def outcome(self) -> str:
        """How the client coped, as told from the server's seat (the client's own API is not
        visible): one of :data:`OUTCOMES`.

        - ``crashed``: the client reset the connection while the server had not ended it;
        - ``hung``: the server ended its side and the client never closed its own before the
          run ended;
        - ``surfaced an error``: the scenario cut the connection; the client closed its side
          (it noticed) and did not come back;
        - ``recovered``: the scenario cut it and the client connected again within
          RECONNECT_WINDOW; or nothing cut it and the conversation ended with a close;
        - ``open``: neither side had ended it when the run ended (not judged)."""
        c2s, s2c = self.ends.get("c2s"), self.ends.get("s2c")
        if c2s is None:
            if s2c is None:
                return OPEN
            return SURFACED if s2c[1] == "rst" else HUNG      # a server reset ends both sides
        server_first = s2c is not None and s2c[0] <= c2s[0]
        if c2s[1] == "rst" and not server_first:
            return CRASHED
        if self.cut:
            return RECOVERED if self.reconnected else SURFACED
        return RECOVERED

    def behaviour(self) -> str:
        """How the connection ended, from the server's seat."""
        c2s, s2c = self.ends.get("c2s"), self.ends.get("s2c")
        if c2s is None:
            if s2c is None:
                return "still open when the run ended"
            # a reset from the server ends the relay's client side too (captures/relay.py: lost), so
            # the client had no chance to close: not "never closed"
            return ("the server reset it" if s2c[1] == "rst"
                    else "the server closed it and the client never closed its side")
        when, how = c2s
        if s2c is not None and s2c[0] <= when:
            return (f"the server {'reset' if s2c[1] == 'rst' else 'closed'} it; the client then "
                    f"{'reset' if how == 'rst' else 'closed'} its side")
        return "the client reset it" if how == "rst" else "the client closed it"


def mark_reconnects(connections) -> None:
    """Mark each connection the scenario cut that was followed, within RECONNECT_WINDOW, by a
    connection of the same client opened after the cut and not yet counted as another's
    reconnect: the same identity first; where either identity is unknown, the next by order; a
    connection that named another client never."""
    conns = sorted(connections, key=lambda c: c.opened)
    taken: set[int] = set()
    for conn in conns:
        if not conn.cut or "s2c" not in conn.ends:
            continue
        at = conn.ends["s2c"][0]
        candidates = [c for c in conns if at <= c.opened <= at + RECONNECT_WINDOW
                      and c.number not in taken and c is not conn
                      and (c.identity is None or conn.identity is None or c.identity == conn.identity)]
        later = next((c for c in candidates if conn.identity is not None and c.identity == conn.identity),
                     candidates[0] if candidates else None)
        if later is not None:
            taken.add(later.number)
            conn.reconnected = True


class ClientChecker:
    """The reference broker behind checking relays. ``start()``/``stop()`` and ``host``/
    ``port`` as the brokers (ThreadedServer can run it); :meth:`result_document` after stop."""

    def __init__(self, spec, broker, *, host: str = "127.0.0.1", ports: tuple = (0, 0),
                 scenario: str = "none", scenario_options: dict | None = None,
                 profile: str | None = None, capture_path: str | None = None) -> None:
        self.spec = spec
        self.broker = broker
        self.host = host
        self.ports = ports
        self.scenario = scenario
        self.profile = profile
        self.make_shaper = shaper_factory(scenario, scenario_options, spec.id)
        self._own_capture = capture_path is None
        if capture_path is None:
            fd, capture_path = tempfile.mkstemp(prefix="wirecheck-clients-", suffix=".pcap")
            os.close(fd)
        self.capture_path = capture_path
        self.capture: CaptureFile | None = None
        self.relays: list = []
        self.connections: dict[int, Connection] = {}      # id(relay) -> its record
        self.started = self.finished = 0.0

    # -- running -------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self.relays[0].port

    @property
    def raw_port(self):
        """The second transport's public port (SignalR's raw TCP), or None."""
        return self.relays[1].port if len(self.relays) > 1 else None

    @property
    def hub_path(self) -> str:
        return getattr(self.broker, "hub_path", "")

    async def start(self) -> "ClientChecker":
        self.started = time.time()
        self.capture = CaptureFile(self.capture_path)
        await self.broker.start()
        try:
            self.relays = await relay_broker(self.capture, self.broker, self.host, self.ports,
                                             make_shaper=self.make_shaper, tap=self._tap)
        except OSError:
            await self.broker.stop()
            raise
        return self

    async def stop(self, grace: float = 1.0) -> None:
        """Stop; open connections get up to ``grace`` seconds to end (a client closing just
        now, a scenario still holding bytes), so that how they end is the client's doing."""
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(relay.relays for relay in self.relays):
            await asyncio.sleep(0.02)
        for relay in self.relays:
            await relay.stop()
        await self.broker.stop()
        if self.capture is not None and not self.capture.closed:
            self.capture.close()
        self.finished = time.time()

    def _tap(self, relay, direction: str, data) -> None:
        now = time.time()
        conn = self.connections.get(id(relay))
        if conn is None:
            peer = relay.client.transport.get_extra_info("peername") if relay.client.transport else None
            client = endpoint(str(peer[0]), int(peer[1])) if peer else "?"
            conn = self.connections[id(relay)] = Connection(len(self.connections) + 1, client, now,
                                                            shaper=getattr(relay, "shaper", None))
        if isinstance(data, (bytes, bytearray)):
            conn.add(direction, bytes(data), now)
        elif direction not in conn.ends:
            # None: a half-close (FIN); an exception or False: that side went away
            conn.ends[direction] = (now, "fin" if data is None or data is False else "rst")
            if direction == "s2c" and getattr(relay, "closed_by_script", False):
                conn.cut = True


    # -- judging -------------------------------------------------------------------------------

    def analyze(self) -> dict[str, list[dict]]:
        """The recording's rows by table (frames, violations, flows), as the pipeline makes them."""
        from wirecheck.conformance.captures.flows import analyze_file
        return analyze_file(self.capture_path, {relay.port: self.spec for relay in self.relays}, self.profile)

    def result_document(self, label: str | None = None) -> dict:
        """The run as a result file (the format ``wirecheck report`` reads)."""
        from wirecheck.conformance.requirements import catalogue
        tables = self.analyze()
        cat = catalogue(self.spec.requirements)
        for conn in self.connections.values():
            conn.identity = client_identity(self.spec, conn.client_bytes(), self.profile)
        mark_reconnects(self.connections.values())
        observer = self.spec.make_observer(self.profile)
        by_client = {c.client: c for c in self.connections.values()}
        frames, violations = defaultdict(list), defaultdict(list)
        for row in tables["frames"]:
            frames[row["flow"]].append(row)
        for row in tables["violations"]:
            violations[row["flow"]].append(row)
        tests, connections = [], []
        for flow in sorted(tables["flows"], key=lambda f: f["start"]):
            name = flow["flow"]
            conn = by_client.get(flow["client"])
            number = conn.number if conn else len(connections) + 1
            wire = [transcript(name, conn, frames[name], violations[name])]
            behaviour = conn.behaviour() if conn else "unknown"
            outcome = conn.outcome() if conn else OPEN
            broken = defaultdict(list)
            server_broken = defaultdict(list)
            for v in violations[name]:
                (broken if v["direction"] == "c2s" else server_broken)[v["requirement"]].append(v)
            types = {row["type"] for row in frames[name] if row["direction"] == "c2s"}
            exercised = exercised_requirements(observer, types) & set(cat)
            actions = conn.scenario_actions() if conn else []
            scripted = f"\nthe scenario: {'; '.join(actions)}" if actions else ""
            base = {"protocol": self.spec.id, "expected": None, "actual": None, "duration": flow["duration"],
                    "transcript": "", "behaviour": behaviour, "outcome": outcome}
            for rid, found in sorted(broken.items()):
                lvl = cat[rid].level if rid in cat else "MUST"
                verdict = verdicts.FAIL if lvl == "MUST" else verdicts.NON_STRICT
                tests.append({**base, "nodeid": f"clients::#{number} {name}::{rid}", "requirements": [rid],
                              "verdict": verdict, "message": _messages(found) + f"\nthe client, guessed from the wire: {outcome} "
                              f"({behaviour})" + scripted, "wire": wire})
            for rid, found in sorted(server_broken.items()):
                tests.append({**base, "nodeid": f"clients::#{number} {name}::server {rid}", "requirements": [],
                              "verdict": verdicts.HARNESS_ERROR,
                              "message": f"the reference broker broke {rid}: " + _messages(found), "wire": wire})
            kept = sorted(exercised - set(broken))
            if kept:
                tests.append({**base, "nodeid": f"clients::#{number} {name}", "requirements": kept,
                              "verdict": verdicts.PASS, "message": f"{len(kept)} requirement(s) exercised, "
                              f"none broken; guessed from the wire: {outcome} ({behaviour})" + scripted, "wire": []})
            connections.append({"number": number, "flow": name, "identity": conn.identity if conn else None,
                                "behaviour": behaviour, "outcome": outcome,
                                "frames_c2s": flow["frames_c2s"], "frames_s2c": flow["frames_s2c"],
                                "violations": len(violations[name]), "error": flow["error"],
                                "scenario_actions": actions})
        doc = {"kind": "client-check", "started": self.started, "finished": self.finished or time.time(),
               "target": [self.host, self.relays[0].port if self.relays else 0],
               "label": label or f"clients of the {self.spec.id} reference broker ({self.scenario})",
               "profile": self.profile, "strict": False, "scenario": self.scenario,
               "connections": connections,
               "outcomes": {o: sum(c["outcome"] == o for c in connections) for o in OUTCOMES
                            if any(c["outcome"] == o for c in connections)},
               "tests": tests}
        return summarise(doc, self.spec)

    def cleanup(self) -> None:
        """Remove the recording when it was a temporary file."""
        if self._own_capture:
            try:
                os.unlink(self.capture_path)
            except OSError:
                pass


def summarise(doc: dict, spec) -> dict:
    """``doc`` (a client-check result) with its ``summary`` and ``exitstatus`` made from its
    tests: 2 when the kit could not judge (its own broker broke a rule), else 1 when the client
    broke a MUST (or crashed, or hung), else 0, as the suites."""
    from wirecheck.conformance.requirements import catalogue, catalogue_data
    from wirecheck.conformance.report.results import NOT_CONFORMANT, requirement_verdict
    cat = catalogue(spec.requirements)
    counts: dict[str, int] = defaultdict(int)
    by_id = defaultdict(list)
    for t in doc["tests"]:
        counts[t["verdict"]] += 1
        for rid in t["requirements"]:
            by_id[rid].append(t)
    verdict_of = {rid: requirement_verdict(ts, {}, rid) for rid, ts in by_id.items()}
    failing = sorted(r for r, v in verdict_of.items() if v in (verdicts.FAIL, verdicts.NON_STRICT, verdicts.CRASH,
                                                               verdicts.HANG, verdicts.HARNESS_ERROR))
    harness = counts.get(verdicts.HARNESS_ERROR, 0) > 0
    broken = any(counts.get(v) for v in NOT_CONFORMANT)
    doc["exitstatus"] = 2 if harness else 1 if broken else 0
    doc["summary"] = {spec.id: {"counts": dict(counts), "waivers": {}, "stale_waivers": [],
                                "catalogue": catalogue_data(cat), "coverage": verdicts.coverage(cat, set(verdict_of)),
                                "failing_requirements": failing, "unimplemented_requirements": [],
                                "waived_requirements": []}}
    return doc


def exercised_requirements(observer, c2s_types: set[str]) -> set[str]:
    """The requirements the observer judged on a client that sent frames of ``c2s_types``: its
    framing rules (any frame at all), and the rules its ``client_rules`` table names for each
    type (the observer module lists what it checks per client frame)."""
    if not c2s_types:
        return set()
    found = set(observer.framing_requirements.values())
    if observer.framing_requirement:
        found.add(observer.framing_requirement)
    rules = getattr(observer, "client_rules", {}) or {}
    for t in c2s_types:
        found.update(rules.get(t, ()))
    found.update(rules.get("*", ()))
    return found


def _messages(found: list[dict]) -> str:
    lines = [f"#{v['index']}: {v['message']}" for v in found[:MESSAGES_SHOWN]]
    if len(found) > MESSAGES_SHOWN:
        lines.append(f"... and {len(found) - MESSAGES_SHOWN} more")
    return "\n".join(lines)


def transcript(name: str, conn: Connection | None, frames: list[dict], violations: list[dict]) -> dict:
    """A connection's wire transcript as the report shows it: the bytes as they were written
    (``->`` what the server sent, ``<-`` what the client sent), each decoded frame, and each
    violation where it happened. Times are from the connection's start."""
    start = conn.opened if conn else (frames[0]["timestamp"] if frames else 0.0)
    arrow = {"s2c": "->", "c2s": "<-"}
    entries = []
    if conn is not None:
        for t, direction, data in conn.chunks:
            entries.append([round(t - start, 6), arrow[direction], data.hex(), f"{len(data)} byte(s)", len(data)])
        for direction, (t, how) in conn.ends.items():
            side = "server" if direction == "s2c" else "client"
            entries.append([round(t - start, 6), "--", "", f"the {side} {'reset' if how == 'rst' else 'closed'} its side", 0])
    at = {}
    for row in frames:
        at[row["index"]] = row["timestamp"]
        fields = ", ".join(f"{k}={v}" for k, v in (row.get("fields") or {}).items())
        note = f"#{row['index']} {row['type']}" + (f" ({fields})" if fields else "")
        entries.append([round(row["timestamp"] - start, 6), arrow[row["direction"]], "", note, 0])
    for v in violations:
        t = at.get(v["index"], at.get(v["index"] - 1, start))
        who = "client" if v["direction"] == "c2s" else "server"
        entries.append([round(t - start, 6), "!!", "", f"{v['requirement']} ({v['level']}) broken by the "
                        f"{who}: {v['message']}", 0])
    entries.sort(key=lambda e: e[0])
    return {"name": name, "entries": entries}


# -- wirecheck serve --check-clients -----------------------------------------------------------

def serve(spec, broker, args, port: int) -> int:
    """``wirecheck serve --check-clients``: serve until SIGINT/SIGTERM or ``--duration``, then
    judge the clients that connected, print a summary, write ``--report``; exit 1 when a client
    broke a MUST, 0 otherwise, 2 when it cannot run or the reference broker broke a rule."""
    import sys

    from wirecheck.conformance.cli_signals import until_stopped
    raw = getattr(args, "raw_port", None)
    checker = ClientChecker(spec, broker, host=args.host, ports=(port, raw if raw is not None else 0),
                            scenario=args.scenario, scenario_options=getattr(args, "scenario_options", None),
                            profile=args.profile, capture_path=args.capture)

    async def main() -> None:
        try:
            await checker.start()
        except OSError as exc:
            print(f"wirecheck serve: cannot listen on {args.host}:{port} (--port): {exc}", file=sys.stderr)
            raise SystemExit(2) from None       # a usage error: the option named
        print(f"{spec.id} reference broker listening on {args.host}:{checker.port}, checking clients "
              f"(scenario {checker.scenario})", flush=True)
        if checker.raw_port is not None:
            print(f"{spec.id} serving http://{args.host}:{checker.port}{checker.hub_path} and raw TCP on "
                  f"{args.host}:{checker.raw_port}", flush=True)
        await until_stopped(args.duration)
        await checker.stop()

    asyncio.run(main())
    try:
        doc = checker.result_document(args.label)
    finally:
        checker.cleanup()
    print_summary(doc, sys.stdout)
    if args.report:
        try:
            write_report(doc, args.report)
        except OSError as exc:
            print(f"wirecheck serve: cannot write {args.report}: {exc}", file=sys.stderr)
            return 2
    return doc["exitstatus"]


def print_summary(doc: dict, out) -> None:
    bad = [t for t in doc["tests"] if t["verdict"] != verdicts.PASS]
    for conn in doc["connections"]:
        print(f"#{conn['number']} {conn['flow']}: {conn['frames_c2s']} frame(s) from the client, "
              f"{conn['violations']} violation(s); {conn['behaviour']} (a guess: {conn['outcome']})", file=out)
        if conn.get("scenario_actions"):
            print(f"  the scenario: {'; '.join(conn['scenario_actions'])}", file=out)
    for t in bad:
        first = t["message"].splitlines()[0] if t["message"] else ""
        print(f"  {t['verdict']} {t['nodeid'].split('::', 1)[1]}: {first}", file=out)
    n = len(doc["connections"])
    print(f"{n} client connection(s); {sum(t['verdict'] == verdicts.FAIL for t in doc['tests'])} MUST "
          f"violation(s), {sum(t['verdict'] == verdicts.NON_STRICT for t in doc['tests'])} SHOULD "
          f"violation(s)" + ("" if n else " (no client connected)"), file=out)


def write_report(doc: dict, out: str) -> None:
    """``--report``: FILE.json, FILE.html (and FILE.json beside it), or a directory
    (clients.json in it, plus index.html and index.json)."""
    from wirecheck.conformance.report.index import write_result
    write_result(doc, out, "clients.json")
