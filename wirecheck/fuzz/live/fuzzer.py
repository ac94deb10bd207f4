"""The network fuzzer: ``wirecheck fuzz --protocol P --target HOST:PORT`` (or ``--serve`` /
``--command CMD``, to have the kit start the target, restart it and replay what it finds).

Each case is a recorded client session (fuzz/live/seeds.py) with one structure-aware change
(fuzz/live/mutate.py), written whole, in pieces or byte by byte on a fresh connection. Then:

1. the case's answers are read until the target closes or stays quiet (``quiet`` seconds, a
   bounded total): every byte must decode with the reference codec, or it is a **violation**;
2. a liveness probe on another fresh connection (conformance/target/liveness.py) must be answered
   within ``timeout`` (a second probe follows a first without answer): refused, or the
   process the kit started exited, is a **crash**; no answer is a **hang**; an undecodable
   answer, or the probe's connection closed without one, is a **violation**;
3. a target the kit started is watched (fuzz/live/health.py): a thread busy while nothing is
   sent is a **spin**, memory or descriptors that keep rising are **growth**.

What the campaign saw is a lead; the finding is what a freshly started target does with the
recorded connections (fuzz/live/replay.py): the connection that failed, or the ones before it
when the event needs them (a late death, state left by an earlier connection), replayed until
the event comes back or clearly does not; ``reproduced`` says how many of ``replays`` fresh
replays gave it back. A violation whose replay kills the target is a crash. Findings are
grouped by the target's own evidence (conformance/target/evidence.py: exit status, the first error line
of its output, a traceback's exception and top frame; a spinning thread's name), one finding
per root cause with its variants listed (fuzz/live/findings.py). With ``--target`` nothing is
replayed, and each finding says so.

The fuzzer is greybox without instrumentation: a case whose answers have a shape not seen
before (the set of answer frame types and codes, how the connection ended) joins the corpus,
so later cases start from the states it reached. ``coverage`` counts those shapes.
"""
from __future__ import annotations

import random
import select
import time
from dataclasses import dataclass, field
from pathlib import Path

from wirecheck.conformance.target import liveness
from wirecheck.conformance.target.process import ManagedTarget  # noqa: F401  (the fuzzer's target)
from wirecheck.fuzz.live import findings as live_findings
from wirecheck.conformance.target.evidence import crash_key, log_offset, output_since, signature  # noqa: F401
from wirecheck.fuzz.live.findings import ATTRIBUTION_TRIES, Finding
from wirecheck.fuzz.live.health import HealthWatch
from wirecheck.fuzz.live.io import read_answers, send_pieces
from wirecheck.fuzz.live.replay import EXIT_WAIT, GROWTH, MAX_HISTORY, REPLAYS, SETTLE, SPIN, Event, Sent, Trials
from wirecheck.fuzz.live.seeds import Seed, load_seeds
from wirecheck.fuzz.live.mutate import Mutator, load_dictionary
from wirecheck.fuzz.targets import FINDINGS

FUZZ = Path(__file__).resolve().parents[1]
CRASH, HANG, VIOLATION = "crash", "hang", "violation"
#: Bytes of answers read per case, and the corpus size kept (seeds plus new shapes).
MAX_ANSWER_BYTES = 4 * 1024 * 1024
MAX_CORPUS = 4000
#: Frames of a case named in a variant's shape (the last ones sent).
LAST_FRAMES = 2
#: Trials of a finding that did not reproduce kept in its entry (how many connections, what came back).
MAX_TRIED = 12
#: Seconds a spin's or growth's trial waits after its connections (the measure follows).
HEALTH_SETTLE = 0.1
#: The least a probe waits for an answer before a silent target is a hang (``--timeout`` is
#: the first, quick reading; this the confirmation).
HANG_PATIENCE = 5.0


def hang_patience(timeout: float) -> float:
    return max(HANG_PATIENCE, 5 * timeout)


# --- one case ----------------------------------------------------------------------------

@dataclass
class Outcome:
    answers: list = field(default_factory=list)   # frames the target answered
    ended: str = "open"                           # "fin", "rst", "open" (quiet) or "limit"
    violation: str = ""                           # the decode error of the answers, if any
    probe: liveness.ProbeResult | None = None
    send_error: str = ""

    def shape(self, spec) -> tuple:
        """What the answers looked like, for novelty: frame types and codes, the ending."""
        kinds = set()
        for frame in self.answers[:64]:
            try:
                d = spec.frame_to_dict(frame)
            except Exception:                          # a view must never stop the fuzzer
                d = {}
            key = [type(frame).__name__]
            for name in ("type", "code", "response_code", "error_code", "category"):
                if name in d and isinstance(d[name], (int, str)):
                    key.append(f"{name}={d[name]}")
            kinds.add(" ".join(key))
        return tuple(sorted(kinds)), self.ended, self.violation.split(":")[0]


def send_and_read(spec, host: str, port: int, data: bytes, writes: list[int], profile: str | None,
                  quiet: float, timeout: float) -> Outcome:
    """Send ``data`` in ``writes`` on a fresh connection; read the answers until the target
    closes, is quiet for ``quiet`` s, or ``timeout`` s / MAX_ANSWER_BYTES have passed."""
    out = Outcome()
    try:
        sock = liveness.open_connection(host, port, timeout)
    except OSError as exc:
        out.send_error = f"cannot connect: {exc.strerror or exc}"
        out.ended = "refused"
        return out
    decoder = spec.make_decoder(origin="server", profile=profile)

    def read(wait: float) -> bytes | None:
        return sock.recv(65536) if select.select([sock], [], [], wait)[0] else None
    try:
        send_pieces(out, data, writes, sock.sendall)
        read_answers(out, decoder, read, quiet, timeout, MAX_ANSWER_BYTES)
    finally:
        sock.close()
    return out


# --- findings ------------------------------------------------------------------------------

def frame_kinds(spec, frames, profile: str | None = None, last: int = LAST_FRAMES) -> str:
    """The types of the last ``last`` frames sent ("PUBLISH, PING"), "?" for one that does not
    decode (the mutated frame often does not): what a signature says about the traffic."""
    names = []
    for frame in list(frames)[-last:]:
        try:
            decoded = spec.make_decoder(origin="client", profile=profile).feed(frame)
            d = spec.frame_to_dict(decoded[0]) if decoded else {}
            names.append(str(d.get("type", type(decoded[0]).__name__)) if decoded else "?")
        except Exception:                    # a mutated frame: any decoder error means "?"
            names.append("?")
    return ", ".join(names)


#: Bytes of a case kept in a kit error's report (hex).
KIT_ERROR_BYTES = 64 * 1024


def kit_error(exc: BaseException, seed: int, case_number: int, case: dict) -> dict:
    """What a kit error's report says: the exception and where it was raised, the seed and the
    number of the case (``--seed`` makes the same cases again), and the case's frames."""
    import traceback
    data = b"".join(case.get("frames") or ())
    return {"error": f"{type(exc).__name__}: {exc}", "seed": seed, "case": case_number,
            "mutation": case.get("how", ""), "writes": case.get("writes"),
            "frames": [f.hex() for f in case.get("frames") or ()] if len(data) <= KIT_ERROR_BYTES else None,
            "traceback": "".join(traceback.format_exception(exc)[-12:])}


# --- the fuzzer ----------------------------------------------------------------------------

@dataclass
class LiveOptions:
    timeout: float = 2.0         # liveness probe and total answer time per case
    quiet: float = 0.02          # a case's answers end after this long without a byte
    seed: int = 0
    findings: Path = FINDINGS
    profile: str | None = None
    restart_wait: float = 0.0    # external target: how long to wait for it to come back
    extra_seeds: tuple[str, ...] = ()
    url: str | None = None       # fuzz over negotiate + WebSocket at this URL (fuzz/live/websocket.py)


class LiveFuzzer:
    def __init__(self, spec, host: str, port: int, options: LiveOptions,
                 managed: ManagedTarget | None = None) -> None:
        self.spec = spec
        self.host, self.port = host, port
        self.options = options
        self.managed = managed
        self.rng = random.Random(options.seed)
        tokens = []
        from wirecheck.fuzz.targets import of_protocol
        for target in of_protocol(spec.id):
            tokens += load_dictionary(FUZZ / "dictionaries" / target.dictionary)
        from wirecheck.fuzz.live import code_fields
        self.mutator = Mutator(self.rng, sorted(set(tokens)), code_fields.of_protocol(spec.id))
        #: seed files not read whole (a capture cut short, a missing --seeds path): one line each
        self.seed_damage: list[str] = []
        self.seeds: list[Seed] = load_seeds(spec, options.profile, list(options.extra_seeds),
                                            damage=self.seed_damage)
        if not self.seeds:
            raise RuntimeError(f"no seed sessions for {spec.id}: no capture or corpus decodes")
        self.corpus: list[tuple[bytes, ...]] = [s.frames for s in self.seeds]
        self.shapes: set = set()
        #: signature -> finding, reproduced or not (``Finding.stands`` tells them apart)
        self.findings: dict[str, Finding] = {}
        #: a campaign's first reading of a root cause -> the key its fresh-target replay gave
        self.aliases: dict[str, str] = {}
        self.execs = 0
        self.stopped = ""                # why the run ended early (a dead external target)
        self.kit_error: dict | None = None   # the kit's own exception, which ended the run
        self.interrupted = ""            # the signal that stopped the campaign (SIGINT, SIGTERM)
        self.folder = Path(options.findings) / f"live-{spec.id}"
        #: connections sent since the target's last start, oldest first (what a replay sends)
        self.history: list[Sent] = []
        self.case_offset = 0             # the target's log size before the last case
        self.trials = Trials(self)
        self.health = HealthWatch()

    # -- running ---------------------------------------------------------------------------

    def run(self, seconds: float, max_cases: int | None = None, progress=None,
            stop_on_finding: bool = False) -> dict:
        """Fuzz for ``seconds`` (or ``max_cases``); ``stop_on_finding``: end at the first."""
        started, t0 = time.time(), time.monotonic()
        deadline = t0 + seconds
        while time.monotonic() < deadline and (max_cases is None or self.execs < max_cases):
            case: dict = {}
            try:
                if not self.one_case(case) or (stop_on_finding and self.findings):
                    break
            except KeyboardInterrupt:
                # SIGINT or SIGTERM (conformance/cli_signals.py): the case in progress is not
                # judged; the summary says the campaign was stopped
                from wirecheck.conformance import cli_signals
                self.interrupted = cli_signals.signal_name()
                break
            except Exception as exc:
                # The kit's own bug (the mutator, a decoder view, the bookkeeping): never a
                # finding about the target. The run ends with what reproduces it: the seed and
                # the case's number, and the case itself when it was made.
                self.kit_error = kit_error(exc, self.options.seed, self.execs, case)
                break
            if progress is not None:
                progress(self)                 # after every case: the caller decides how often to show it
        if progress is not None:
            progress(self)
        return self.summary(started, time.monotonic() - t0)

    def one_case(self, case: dict) -> bool:
        """Make, send and judge one case (``case`` is filled as it is made, for a kit error's
        report); False when the run cannot go on."""
        frames, changed, how = self.mutator.mutate(self.rng.choice(self.corpus), self.corpus)
        case.update(frames=frames, how=how)
        if not frames:
            return True
        data = b"".join(frames)
        writes = self.mutator.writes(len(data))
        case["writes"] = writes
        self.case_offset = log_offset(self.managed) if self.managed is not None else 0
        sent = Sent(tuple(frames), writes, how, changed, time.time())
        outcome = self.execute(data, writes)
        sent.ended = time.time()
        self.execs += 1
        self.history.append(sent)
        if len(self.history) > 2 * MAX_HISTORY:
            del self.history[:-MAX_HISTORY]
        shape = outcome.shape(self.spec)
        if shape not in self.shapes:
            self.shapes.add(shape)
            if len(self.corpus) < MAX_CORPUS:
                self.corpus.append(tuple(frames))
        event = self.judge(outcome)
        if event is not None:
            return self.found(event, outcome, sent)
        lead = self.health.check(self.managed) if self.managed is not None else None
        if lead is not None:
            known = self.findings.get(self.aliases.get(lead.key, lead.key)) if lead.key else None
            if known is not None and known.stands:
                known.count += 1            # the same spinning thread again: counted, not replayed again
                live_findings.save(self, known)
                self.restart_target()
                return True
            # (none left before the lead's moment: the campaign's history no longer holds them,
            # and what it holds is tried rather than nothing)
            candidates = [s for s in self.history if s.started <= lead.until] or list(self.history)
            self.attribute(Event(lead.kind, lead.key or f"{lead.kind}: ?", lead.detail), candidates, [])
        return True

    def send_only(self, data: bytes, writes: list[int]) -> Outcome:
        """One connection's bytes and its answers, no probe after (a replay's connections)."""
        o = self.options
        if o.url:
            from wirecheck.fuzz.live import websocket as live_ws
            return live_ws.send_and_read(self.spec, o.url, data, writes, o.profile, o.quiet, o.timeout,
                                         MAX_ANSWER_BYTES, Outcome())
        return send_and_read(self.spec, self.host, self.port, data, writes, o.profile, o.quiet, o.timeout)

    def settled(self) -> liveness.ProbeResult:
        """The liveness probe, a second one after a first without answer, and when that is
        silent too a patient one (:func:`hang_patience`): a hang is a target that does not
        answer, not one that answers late on a loaded machine (a planted server took over 1 s
        to answer while the machine ran three suites, and was filed as hung)."""
        o = self.options
        if o.url:
            from wirecheck.fuzz.live import websocket as live_ws
            result = live_ws.settled_probe(self.spec, o.url, o.profile, o.timeout)
            if result.status == liveness.SILENT:
                result = live_ws.probe(self.spec, o.url, o.profile, hang_patience(o.timeout))
            return result
        result = liveness.settled_probe(self.spec, self.host, self.port, o.profile, o.timeout)
        if result.status == liveness.SILENT:
            result = liveness.probe(self.spec, self.host, self.port, o.profile, hang_patience(o.timeout))
        return result

    def execute(self, data: bytes, writes: list[int]) -> Outcome:
        outcome = self.send_only(data, writes)
        outcome.probe = self.settled()
        return outcome

    def alive(self) -> bool:
        """The target answers the liveness probe (over WebSocket for a URL target)."""
        o = self.options
        if o.url:
            from wirecheck.fuzz.live import websocket as live_ws
            return live_ws.probe(self.spec, o.url, o.profile, o.timeout).ok
        return liveness.probe(self.spec, self.host, self.port, o.profile, o.timeout).ok

    def judge(self, outcome: Outcome) -> Event | None:
        """What the campaign saw after a case, keyed as a first reading (a replay on a fresh
        target gives the key the finding is filed under)."""
        probe = outcome.probe
        if self.managed is not None and (probe.status == liveness.REFUSED or outcome.ended == "refused"):
            # a process killed closes its sockets before it can be waited for: give its exit a
            # moment, or the crash is filed without its exit status and output
            deadline = time.monotonic() + EXIT_WAIT
            while not self.managed.exited() and time.monotonic() < deadline:
                time.sleep(0.01)
        if self.managed is not None and self.managed.exited():
            status = self.managed.exit_status()
            output = output_since(self.managed, self.case_offset)
            key, detail = crash_key(status, output)
            return Event(CRASH, key, f"{detail} ({status})", output)
        if probe.status == liveness.REFUSED or outcome.ended == "refused":
            return Event(CRASH, "crash: refuses connections", probe.detail or outcome.send_error)
        if probe.status == liveness.SILENT:
            how = "still running, no answer" if self.managed is not None else "no answer"
            return Event(HANG, f"hang: {how}", probe.detail)
        if outcome.violation:
            reason = f"undecodable answer: {outcome.violation}"
            return Event(VIOLATION, signature(VIOLATION, reason), reason)
        if probe.status in (liveness.GARBAGE, liveness.CLOSED):
            return Event(VIOLATION, signature(VIOLATION, probe.detail), probe.detail)
        return None

    # -- findings --------------------------------------------------------------------------

    def found(self, event: Event, outcome: Outcome, sent: Sent) -> bool:
        """Make a finding of what the campaign saw; False when the run cannot go on (an
        external target is down)."""
        key = self.aliases.get(event.key, event.key)
        finding = self.findings.get(key)
        if self.managed is None:
            # nothing can be replayed on a fresh target: filed as seen, and said so
            if finding is not None:
                live_findings.add_variant(finding, self.variant_shape(sent), sent, False)
            else:
                finding = Finding(event.kind, key, event.detail, [sent], outcome.answers[:20], event.output)
            live_findings.save(self, finding)
            self.findings[key] = finding
            return self.recover(event.kind)
        if finding is not None and (finding.stands or finding.attempts >= ATTRIBUTION_TRIES):
            self.variant(finding, sent)
        else:
            self.attribute(event, self.history, outcome.answers[:20])
        return True

    def attribute(self, event: Event, candidates: list[Sent], answers: list) -> None:
        """Replay ``candidates`` on fresh targets (fuzz/live/replay.py) and file what came of it."""
        spent = self.trials.count
        candidates = list(candidates)       # each trial's restart clears the campaign's history
        kind, settle = event.kind, HEALTH_SETTLE if event.kind in (SPIN, GROWTH) else SETTLE
        wanted = event.key if kind in (SPIN, VIOLATION) else None
        if kind == VIOLATION:
            candidates = candidates[-1:]    # an answer belongs to its own connection
        # a violation whose replay kills the target is a crash
        verdict = self.trials.attribute(kind, wanted, candidates, settle, worse=CRASH if kind == VIOLATION else None)
        previous = self.findings.get(self.aliases.get(event.key, event.key))
        if verdict.attribution is None:
            finding = previous or Finding(kind, event.key, event.detail, candidates[-1:] or [Sent((), [0])],
                                          answers, event.output, replayed=True, reproduced=0)
            finding.count += previous is not None
            finding.attempts += 1
            finding.replays = verdict.replays
            finding.tried = verdict.log[-MAX_TRIED:]
            finding.trials += self.trials.count - spent
            self.findings[finding.signature] = finding
            live_findings.save(self, finding)
            self.restart_target()
            return
        found = verdict.attribution
        key = found.event.key
        if key != event.key:
            self.aliases[event.key] = key
        existing = self.findings.get(key)
        if existing is not None and existing.stands:
            live_findings.add_variant(existing, self.variant_shape(found.connections[-1]), found.connections[-1], True)
            live_findings.save(self, existing)
            self.restart_target()
            return
        # a hang costs two probe timeouts per trial: only crashes are worth minimizing
        minimized = self.trials.minimize(found) if found.event.kind == CRASH else None
        results = self.trials.confirm(found)
        reproduced = results.count(key)
        finding = Finding(found.event.kind, key, found.event.detail, found.connections, answers,
                          found.event.output, replayed=True, reproduced=reproduced, replays=REPLAYS,
                          minimized_from=minimized, replay_results=results)
        if previous is not None and previous is not finding and not previous.stands:
            finding.count += previous.count
            finding.attempts = previous.attempts
            if previous.signature != key:
                del self.findings[previous.signature]
        finding.attempts += 1
        finding.trials = self.trials.count - spent
        live_findings.add_variant(finding, self.variant_shape(found.connections[-1]), found.connections[-1],
                                  reproduced > 0)
        finding.count -= 1                 # add_variant counted the finding's own input again
        self.findings[key] = finding
        live_findings.save(self, finding)
        self.restart_target()

    def variant(self, finding: Finding, sent: Sent) -> None:
        """Another input that reached a known root cause: counted, and listed with its bytes
        when it gives the finding back on a fresh target in place of the finding's own failing
        connection (checked once per new shape; an input the campaign only saw before a
        late death may not be the one that caused it)."""
        shape = self.variant_shape(sent)
        known = any(v["shape"] == shape for v in finding.variants)
        verified = False
        if not known and len(finding.variants) < live_findings.MAX_VARIANTS and finding.kind in (CRASH, HANG, VIOLATION):
            replay = self.trials.trial(finding.connections[:-1] + [sent], finding.kind, SETTLE)
            verified = replay is not None and replay.key == finding.signature
        live_findings.add_variant(finding, shape, sent, verified, listed=verified)
        live_findings.save(self, finding)
        self.restart_target()

    def variant_shape(self, sent: Sent) -> str:
        """How a variant differs: the types of the last frames of its failing connection."""
        return frame_kinds(self.spec, sent.frames, self.options.profile) or "(nothing sent)"

    def restart_target(self) -> None:
        """A fresh process: nothing of the campaign's connections left in it."""
        old = self.port
        self.managed.restart()
        self.port = self.managed.port
        if self.options.url and old != self.port:      # the reference hub gets a new port
            self.options.url = self.options.url.replace(f":{old}/", f":{self.port}/")
        self.history.clear()
        self.health.reset()

    def recover(self, kind: str) -> bool:
        """An external target after a crash or hang: wait ``restart_wait`` for it to come back."""
        if kind in (VIOLATION, SPIN, GROWTH):
            return True
        deadline = time.monotonic() + self.options.restart_wait
        while time.monotonic() < deadline:
            if self.alive():
                return True
            time.sleep(0.5)
        self.stopped = f"the target is down after a {kind} and was not restarted"
        return False

    def summary(self, started: float, elapsed: float) -> dict:
        entries = [live_findings.entry(self, f) for f in self.findings.values()]
        return {
            "mode": "live", "protocol": self.spec.id, "profile": self.options.profile,
            "target": self.options.url or f"{self.host}:{self.port}", "started": started, "seconds": round(elapsed, 3),
            "execs": self.execs, "exec_per_s": round(self.execs / elapsed, 1) if elapsed > 0 else 0.0,
            "seeds": len(self.seeds), **({"seeds_damaged": self.seed_damage} if self.seed_damage else {}),
            "corpus_size": len(self.corpus), "coverage": len(self.shapes),
            "restarts": self.managed.restarts if self.managed is not None else 0,
            "replay_trials": self.trials.count,
            "stopped": self.stopped, "kit_error": self.kit_error,
            **({"interrupted": {"signal": self.interrupted}} if self.interrupted else {}),
            "findings": [e for e, f in zip(entries, self.findings.values()) if f.stands],
            "not_reproduced": [e for e, f in zip(entries, self.findings.values()) if not f.stands],
        }
