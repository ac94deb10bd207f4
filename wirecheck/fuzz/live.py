"""The network fuzzer: ``wirecheck fuzz --protocol P --target HOST:PORT`` (or ``--serve`` /
``--command CMD``, to have the kit start the target and restart it after a crash).

Each case is a recorded client session (fuzz/live_seeds.py) with one structure-aware change
(fuzz/mutate.py), written whole, in pieces or byte by byte on a fresh connection. Then:

1. the case's answers are read until the target closes or stays quiet (``quiet`` seconds, a
   bounded total): every byte must decode with the reference codec, or it is a **violation**;
2. a liveness probe on another fresh connection (conformance/liveness.py) must be answered
   within ``timeout`` (a second probe follows a first without answer): refused, or the
   process the kit started exited, is a **crash**; no answer is a **hang**; an undecodable
   answer, or the probe's connection closed without one, is a **violation**.

A finding is checked before it is saved: the target is restarted (when the kit started it)
and the case sent again as ``wirecheck replay`` will send it (in the same writes), three
times; ``reproduced`` says how many of the three gave the same finding back. A reproduced crash
is minimized frame by frame (a frame that is not needed is dropped). Each finding is saved once
per signature: for a crash or hang, how the target went down (exit status or signal, refused,
no answer) and the types of the last frames sent, never the text of a stack trace (which
changes between runs); for a violation, the decode error with numbers masked. Saved as
``<findings>/<kind>-<signature hash>.bin`` (the exact bytes) with a ``.json`` beside it (what
was changed, answers, the process's last output, the command that reproduces it).

The fuzzer is greybox without instrumentation: a case whose answers have a shape not seen
before (the set of answer frame types and codes, how the connection ended) joins the corpus,
so later cases start from the states it reached. ``coverage`` counts those shapes.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import select
import time
from dataclasses import dataclass, field
from pathlib import Path

from wirecheck.conformance import liveness
from wirecheck.conformance.target_process import ManagedTarget  # noqa: F401  (the fuzzer's target)
from wirecheck.fuzz.live_io import read_answers, send_pieces
from wirecheck.fuzz.live_seeds import Seed, load_seeds
from wirecheck.fuzz.mutate import Mutator, load_dictionary
from wirecheck.fuzz.targets import FINDINGS

FUZZ = Path(__file__).resolve().parent
CRASH, HANG, VIOLATION = "crash", "hang", "violation"
#: Bytes of answers read per case, and the corpus size kept (seeds plus new shapes).
MAX_ANSWER_BYTES = 4 * 1024 * 1024
MAX_CORPUS = 4000
#: Attempts (each a restart and a resend) spent minimizing one crash.
MINIMIZE_ATTEMPTS = 24
#: Replays of a finding before it is reported (``reproduced`` counts the ones that gave it back).
REPLAYS = 3
#: Frames of a crash's session named in its signature (the last ones sent).
LAST_FRAMES = 2


# --- one case ----------------------------------------------------------------------------

@dataclass
class Outcome:
    answers: list = field(default_factory=list)   # frames the target answered
    ended: str = "open"                           # "fin", "rst", "open" (quiet) or "limit"
    violation: str = ""                           # the decode error of the answers, if any
    probe: liveness.ProbeResult | None = None
    send_error: str = ""
    died: str = ""                                # crash or hang: how the target went down

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

_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")


def signature(kind: str, detail: str) -> str:
    """``kind`` and the detail's telling line with numbers masked: the same bug found twice
    (other ids, other offsets) has one signature."""
    return f"{kind}: {_NUMBERS.sub('N', detail.strip())[:200]}"


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


def death_signature(kind: str, died: str, frames_sent: str) -> str:
    """A crash's or hang's signature: how the target went down (exit status or signal,
    refused, no answer) and the types of the last frames sent. Not the text of a stack trace,
    which changes from run to run (addresses, thread names, timings), so replays of one
    finding keep one signature."""
    return f"{kind}: {_NUMBERS.sub('N', died)}; after {frames_sent}"


def crash_detail(tail: str, status: str) -> str:
    """The line that names a crash: the last exception line of a traceback, else the status."""
    for line in reversed(tail.splitlines()):
        if re.match(r"^\w[\w.]*(Error|Exception|Exit|Interrupt)\b", line) or "Fatal" in line or "panic" in line:
            return line.strip()
    return status


@dataclass
class Finding:
    kind: str
    signature: str
    reason: str
    frames: list[bytes]
    changed: int
    how: str
    writes: list[int]
    answers: list = field(default_factory=list)
    output: str = ""
    reproduced: int | None = None       # of REPLAYS replays, how many gave the finding back
    minimized_from: int | None = None
    count: int = 1
    file: str = ""

    @property
    def data(self) -> bytes:
        return b"".join(self.frames)


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
    url: str | None = None       # fuzz over negotiate + WebSocket at this URL (fuzz/live_ws.py)


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
        self.mutator = Mutator(self.rng, sorted(set(tokens)))
        self.seeds: list[Seed] = load_seeds(spec, options.profile, list(options.extra_seeds))
        if not self.seeds:
            raise RuntimeError(f"no seed sessions for {spec.id}: no capture or corpus decodes")
        self.corpus: list[tuple[bytes, ...]] = [s.frames for s in self.seeds]
        self.shapes: set = set()
        self.findings: dict[str, Finding] = {}
        self.execs = 0
        self.stopped = ""                # why the run ended early (a dead external target)
        self.kit_error: dict | None = None   # the kit's own exception, which ended the run
        self.folder = Path(options.findings) / f"live-{spec.id}"

    # -- running ---------------------------------------------------------------------------

    def run(self, seconds: float, max_cases: int | None = None, progress=None,
            stop_on_finding: bool = False) -> dict:
        """Fuzz for ``seconds`` (or ``max_cases``); ``stop_on_finding``: end at the first."""
        started, t0 = time.time(), time.monotonic()
        deadline = t0 + seconds
        while time.monotonic() < deadline and (max_cases is None or self.execs < max_cases):
            case: dict = {}
            try:
                if not self.one_case(case, stop_on_finding):
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

    def one_case(self, case: dict, stop_on_finding: bool) -> bool:
        """Make, send and judge one case (``case`` is filled as it is made, for a kit error's
        report); False when the run ends."""
        frames, changed, how = self.mutator.mutate(self.rng.choice(self.corpus), self.corpus)
        case.update(frames=frames, how=how)
        if not frames:
            return True
        data = b"".join(frames)
        writes = self.mutator.writes(len(data))
        case["writes"] = writes
        outcome = self.execute(data, writes)
        self.execs += 1
        shape = outcome.shape(self.spec)
        if shape not in self.shapes:
            self.shapes.add(shape)
            if len(self.corpus) < MAX_CORPUS:
                self.corpus.append(tuple(frames))
        kind, reason = self.judge(outcome)
        if kind:
            if not self.found(kind, reason, outcome, frames, changed, how, writes) or stop_on_finding:
                return False
        return True

    def execute(self, data: bytes, writes: list[int]) -> Outcome:
        o = self.options
        if o.url:
            from wirecheck.fuzz import live_ws
            outcome = live_ws.send_and_read(self.spec, o.url, data, writes, o.profile, o.quiet, o.timeout,
                                            MAX_ANSWER_BYTES, Outcome())
            outcome.probe = live_ws.settled_probe(self.spec, o.url, o.profile, o.timeout)
            return outcome
        outcome = send_and_read(self.spec, self.host, self.port, data, writes, o.profile, o.quiet, o.timeout)
        outcome.probe = liveness.settled_probe(self.spec, self.host, self.port, o.profile, o.timeout)
        return outcome

    def alive(self) -> bool:
        """The target answers the liveness probe (over WebSocket for a URL target)."""
        o = self.options
        if o.url:
            from wirecheck.fuzz import live_ws
            return live_ws.probe(self.spec, o.url, o.profile, o.timeout).ok
        return liveness.probe(self.spec, self.host, self.port, o.profile, o.timeout).ok

    def judge(self, outcome: Outcome) -> tuple[str, str]:
        """(kind, reason) of a case's outcome; ``outcome.died`` is set for a crash or hang (how
        the target went down, for the signature)."""
        probe = outcome.probe
        if self.managed is not None and self.managed.exited():
            status = self.managed.exit_status()
            outcome.died = status
            return CRASH, crash_detail(self.managed.output_tail(), status) + f" ({status})"
        if probe.status == liveness.REFUSED or outcome.ended == "refused":
            outcome.died = "refuses connections"
            return CRASH, probe.detail or outcome.send_error
        if probe.status == liveness.SILENT:
            outcome.died = ("still running, no answer" if self.managed is not None else "no answer")
            return HANG, probe.detail
        if outcome.violation:
            return VIOLATION, f"undecodable answer: {outcome.violation}"
        if probe.status in (liveness.GARBAGE, liveness.CLOSED):
            return VIOLATION, probe.detail
        return "", ""

    # -- findings --------------------------------------------------------------------------

    def found(self, kind: str, reason: str, outcome: Outcome, frames: list[bytes], changed: int,
              how: str, writes: list[int]) -> bool:
        """Record a finding; False when the run cannot go on (an external target is down)."""
        sig = self._signature(kind, reason, outcome, frames)
        output = self.managed.output_tail() if self.managed is not None else ""
        if sig in self.findings:
            self.findings[sig].count += 1
            return self.recover(kind)
        finding = Finding(kind, sig, reason, list(frames), changed, how, writes,
                          outcome.answers[:20], output)
        if not self.recover(kind):
            self.save(finding)
            return False
        finding.reproduced = sum(self.reproduces(finding, finding.frames) for _ in range(REPLAYS))
        if finding.reproduced and kind == CRASH and self.managed is not None:
            self.minimize(finding)
        self.save(finding)
        return True

    def recover(self, kind: str) -> bool:
        """Bring the target back after a crash or hang: restart it (kit-started), or wait
        ``restart_wait`` for it to come back (external)."""
        if kind == VIOLATION:
            return True
        if self.managed is not None:
            self.managed.restart()
            self.port = self.managed.port
            return True
        deadline = time.monotonic() + self.options.restart_wait
        while time.monotonic() < deadline:
            if self.alive():
                return True
            time.sleep(0.5)
        self.stopped = f"the target is down after a {kind} and was not restarted"
        return False

    def reproduces(self, finding: Finding, frames: list[bytes]) -> bool:
        """Whether ``frames``, sent on a fresh connection as ``wirecheck replay`` sends the
        finding (in its writes when they still add up, else whole), give the same signature
        again; the target is brought back after."""
        data = b"".join(frames)
        writes = finding.writes if sum(finding.writes) == len(data) else [len(data)]
        outcome = self.execute(data, writes)
        kind, reason = self.judge(outcome)
        # the signature of what was first sent: a minimized session names other last frames
        same = kind == finding.kind and self._signature(kind, reason, outcome, finding.frames) == finding.signature
        if kind:
            self.recover(kind)
        return same

    def _signature(self, kind: str, reason: str, outcome: Outcome, frames) -> str:
        if kind in (CRASH, HANG):
            return death_signature(kind, outcome.died, frame_kinds(self.spec, frames, self.options.profile))
        return signature(kind, reason)

    def minimize(self, finding: Finding) -> None:
        """Drop frames the crash does not need, last to first (bounded attempts)."""
        frames, attempts = list(finding.frames), 0
        i = len(frames) - 1
        while i >= 0 and attempts < MINIMIZE_ATTEMPTS and len(frames) > 1:
            trial = frames[:i] + frames[i + 1:]
            attempts += 1
            if self.reproduces(finding, trial):
                frames = trial
            i -= 1
        if len(frames) < len(finding.frames):
            finding.minimized_from = len(finding.frames)
            finding.frames = frames
            finding.changed = -1
            finding.writes = [len(finding.data)]

    def save(self, finding: Finding) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        stem = f"{finding.kind}-{hashlib.sha1(finding.signature.encode()).hexdigest()[:10]}"
        path = self.folder / f"{stem}.bin"
        path.write_bytes(finding.data)
        finding.file = str(path)
        self.findings[finding.signature] = finding
        meta = {
            "protocol": self.spec.id, "profile": self.options.profile, "kind": finding.kind,
            "signature": finding.signature, "reason": finding.reason,
            "target": self.options.url or f"{self.host}:{self.port}",
            "found": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "after_cases": self.execs,
            "mutation": finding.how, "changed_frame": finding.changed,
            "frames": [f.hex() for f in finding.frames], "writes": finding.writes,
            "reproduced": finding.reproduced, "replays": REPLAYS,
            "minimized_from_frames": finding.minimized_from,
            "answers": [repr(a)[:300] for a in finding.answers],
            "target_output": finding.output,
            "reproduce": self.reproduce_command(path),
        }
        path.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")

    def reproduce_command(self, path: Path | str) -> str:
        """The replay command; a target the kit started gets a new port each time, so the
        address is left for the user there, else it is the target's."""
        profile = f" --profile {self.options.profile}" if self.options.profile else ""
        address = "HOST:PORT" if self.managed is not None else f"{self.host}:{self.port}"
        if self.options.url:                 # replay speaks raw TCP: the server's raw transport, if any
            address = "HOST:RAW-TCP-PORT"
        return f"wirecheck replay {path} --protocol {self.spec.id}{profile} --target {address}"

    def summary(self, started: float, elapsed: float) -> dict:
        return {
            "mode": "live", "protocol": self.spec.id, "profile": self.options.profile,
            "target": self.options.url or f"{self.host}:{self.port}", "started": started, "seconds": round(elapsed, 3),
            "execs": self.execs, "exec_per_s": round(self.execs / elapsed, 1) if elapsed > 0 else 0.0,
            "seeds": len(self.seeds), "corpus_size": len(self.corpus), "coverage": len(self.shapes),
            "restarts": self.managed.restarts if self.managed is not None else 0,
            "stopped": self.stopped, "kit_error": self.kit_error,
            "findings": [{"kind": f.kind, "signature": f.signature, "count": f.count, "file": f.file,
                          "reproduced": f.reproduced, "replays": REPLAYS,
                          "frames": len(f.frames), "bytes": len(f.data),
                          "reproduce": self.reproduce_command(f.file)}
                         for f in self.findings.values()],
        }
