"""One atheris target run for a time budget, read back as a summary (``wirecheck fuzz --decoder
| --nested | --session``, and the campaign's in-process jobs).

The target runs as ``python -m wirecheck.fuzz.fuzz_<name>`` under libFuzzer with its dictionary, in a
working corpus directory that starts as a copy of its seed corpus (fuzz/corpora/, reviewed;
libFuzzer writes new inputs into its first directory, so the repository's corpus is never
touched) and may persist between runs (``workdir``: a nightly campaign keeps growing it).
Per input: ``-timeout`` seconds (a hang) and ``-rss_limit_mb`` (unbounded memory growth).

libFuzzer stops at the first finding; the run is then resumed for the rest of the budget (at
most ``MAX_RESTARTS`` times), so one shallow bug does not end a night. Each finding's input
is kept in ``<findings>/<target>/`` and named by libFuzzer (``crash-``, ``timeout-``,
``oom-`` + the input's SHA-1); its signature is the exception type and the innermost frame of
the kit's code in the traceback (``timeout``/``oom`` and the target otherwise), so the same
bug found twice counts once.

The summary has ``execs``, ``exec_per_s`` (executions over the fuzzing time, the initial
corpus load included, like libFuzzer's own average), ``coverage`` (libFuzzer's ``cov``:
edges reached), ``features`` (``ft``), ``corpus_size`` (inputs in the working corpus at the
end), ``timeline`` (``[seconds, execs, cov, ft, corpus]`` from libFuzzer's status lines, for
coverage over time) and ``findings``.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from wirecheck.fuzz.targets import FINDINGS, FuzzTarget

FUZZ = Path(__file__).resolve().parent
MAX_RESTARTS = 8
#: Per-input bounds: a hang and unbounded memory growth are findings.
INPUT_TIMEOUT = 10
RSS_LIMIT_MB = 2048

#: ``#1234\tINITED cov: 389 ft: 1195 corp: 26/3953b ...`` (libFuzzer's status lines): runs,
#: event, edges, features, corpus size; and its final ``stat::name: value`` lines.
STATUS = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+) corp: (\d+)/")
STAT = re.compile(r"^stat::(\w+):\s+(\d+)")
_UNIT = re.compile(r"Test unit written to (\S+)")


@dataclass
class RunStats:
    execs: int = 0
    coverage: int = 0
    features: int = 0
    corpus: int = 0
    peak_rss_mb: int = 0
    timeline: list = field(default_factory=list)
    findings: list = field(default_factory=list)     # dicts: kind, signature, file, detail


def command(target: FuzzTarget, corpus: Path, artifacts: Path, seconds: float | None = None,
            runs: int | None = None, extra: tuple[str, ...] = ()) -> list[str]:
    cmd = [sys.executable, "-m", target.module, str(corpus),
           f"-dict={FUZZ / 'dictionaries' / target.dictionary}",
           f"-artifact_prefix={artifacts}/", f"-timeout={INPUT_TIMEOUT}",
           f"-rss_limit_mb={RSS_LIMIT_MB}", "-print_final_stats=1", *extra]
    if seconds is not None:
        cmd.append(f"-max_total_time={max(1, int(round(seconds)))}")
    if runs is not None:
        cmd.append(f"-runs={runs}")
    return cmd


#: Seconds a stopped fuzzing process has to print its final stats and exit.
STOP_GRACE = 10.0


def _fuzz(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    """One fuzzing process, its output. Stopped (SIGINT, SIGTERM: conformance/cli_signals.py),
    it gets SIGTERM, which libFuzzer ends a run on with its final stats: the output comes back
    with ``interrupted`` set, not lost with the process."""
    # a session of its own: stopped through this process only (libFuzzer ends on the first
    # signal with its stats; two would cut them short)
    with subprocess.Popen(argv, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          start_new_session=True) as proc:
        interrupted = False
        try:
            out, _ = proc.communicate(timeout=timeout)
        except KeyboardInterrupt:
            interrupted = True
            proc.terminate()
            try:
                out, _ = proc.communicate(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
    done = subprocess.CompletedProcess(argv, proc.returncode, out or "", None)
    done.interrupted = interrupted
    return done


def finding_signature(kind: str, text: str, target: str) -> tuple[str, str]:
    """(signature, detail) of one finding from libFuzzer's output ``text``."""
    if kind != "crash":
        return f"{kind} in {target}", ""
    lines = text.splitlines()
    exc = next((i for i, line in enumerate(lines) if "Uncaught Python exception" in line), None)
    if exc is None:
        return f"crash in {target}", ""
    error = lines[exc + 1].strip() if exc + 1 < len(lines) else "?"
    where = harness = ""
    for line in lines[exc + 1:]:
        m = re.match(r'\s+File "([^"]+)", line \d+, in (\S+)', line)
        if m and ("reference_impl" in m.group(1) or "conformance" in m.group(1)):
            where = f"{Path(m.group(1)).name}:{m.group(2)}"
        elif m and "/fuzz/" in m.group(1):             # a harness check that failed
            harness = f"{Path(m.group(1)).name}:{m.group(2)}"
        if line.startswith("==") or "ERROR: libFuzzer" in line:
            break
    where = where or harness
    etype = error.split(":", 1)[0]
    return f"crash in {target}: {etype} at {where or '?'}", error[:300]


def parse_output(text: str, stats: RunStats, target: str, offset: float, t0_execs: int) -> None:
    """Fold one libFuzzer run's output into ``stats`` (``offset``: seconds before this run)."""
    start = None
    for line in text.splitlines():
        m = STATUS.match(line)
        if m:
            execs, cov, ft, corp = int(m[1]), int(m[3]), int(m[4]), int(m[5])
            stats.coverage, stats.features, stats.corpus = max(stats.coverage, cov), max(stats.features, ft), corp
            stats.timeline.append([None, t0_execs + execs, cov, ft, corp])
            start = start or len(stats.timeline) - 1
            continue
        m = STAT.match(line)
        if m:
            if m.group(1) == "number_of_executed_units":
                stats.execs = t0_execs + int(m.group(2))
            elif m.group(1) == "peak_rss_mb":
                stats.peak_rss_mb = max(stats.peak_rss_mb, int(m.group(2)))
            continue
        m = _UNIT.search(line)
        if m:
            path = m.group(1)
            kind = Path(path).name.split("-", 1)[0]
            kind = {"slow": "timeout", "leak": "crash"}.get(kind, kind)
            sig, detail = finding_signature(kind, text, target)
            stats.findings.append({"kind": kind, "signature": sig, "file": path, "detail": detail})


def n_new(stats: RunStats, before: int) -> int:
    return len(stats.timeline) - before


def thin(points: list, keep: int = 200) -> list:
    """At most ``keep`` points, evenly spread, the last one included."""
    if len(points) <= keep:
        return points
    step = len(points) / keep
    return [points[int(i * step)] for i in range(keep - 1)] + [points[-1]]


def run(target: FuzzTarget, seconds: float, *, workdir: Path | None = None,
        findings: Path | None = None, echo=None) -> dict:
    """Fuzz ``target`` for ``seconds``; its summary (see the module doc)."""
    artifacts = Path(findings or FINDINGS) / target.name
    artifacts.mkdir(parents=True, exist_ok=True)
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix=f"wirecheck-{target.name}-")
        corpus = Path(tmp.name) / "corpus"
    else:
        corpus = Path(workdir) / target.name
    corpus.mkdir(parents=True, exist_ok=True)
    for seed in (FUZZ / "corpora" / target.corpus).iterdir():   # seeds added since the last run too
        if seed.is_file() and not (corpus / seed.name).exists():
            shutil.copyfile(seed, corpus / seed.name)
    stats, started, t0 = RunStats(), time.time(), time.monotonic()
    deadline = t0 + seconds
    interrupted = False
    try:
        for attempt in range(MAX_RESTARTS + 1):
            left = deadline - time.monotonic()
            if left < 1:
                break
            run_start = time.monotonic()
            before = len(stats.timeline)
            proc = _fuzz(command(target, corpus, artifacts, left), left + INPUT_TIMEOUT + 60)
            interrupted = proc.interrupted
            if echo is not None:
                echo(proc.stdout)
            found = len(stats.findings)
            parse_output(proc.stdout, stats, target.name, run_start - t0, stats.execs)
            # status lines carry no time: place this run's by their executions (the rate
            # is about steady once the seeds are loaded)
            span, first = time.monotonic() - run_start, stats.timeline[before][1] if n_new(stats, before) else 0
            total = max(1, (stats.timeline[-1][1] - first) if n_new(stats, before) else 1)
            for point in stats.timeline[before:]:
                point[0] = round(run_start - t0 + span * (point[1] - first) / total, 2)
            if interrupted:
                break
            if proc.returncode == 0 or len(stats.findings) == found:
                if proc.returncode != 0 and len(stats.findings) == found:
                    stats.findings.append({"kind": "error", "signature": f"error in {target.name}: exit "
                                           f"{proc.returncode}", "file": "",
                                           "detail": "\n".join(proc.stdout.splitlines()[-20:])})
                break
    finally:
        corpus_size = sum(1 for p in corpus.iterdir() if p.is_file()) if corpus.is_dir() else 0
        if tmp is not None:
            tmp.cleanup()
    elapsed = time.monotonic() - t0
    unique: dict[str, dict] = {}
    for f in stats.findings:
        if f["signature"] in unique:
            unique[f["signature"]]["count"] += 1
        else:
            unique[f["signature"]] = {**f, "count": 1}
    return {
        "mode": "inprocess", "target": target.name, "kind": target.kind, "protocol": target.protocol,
        "started": started, "seconds": round(elapsed, 3), "execs": stats.execs,
        "exec_per_s": round(stats.execs / elapsed, 1) if elapsed > 0 else 0.0,
        "coverage": stats.coverage, "features": stats.features, "corpus_size": corpus_size,
        "peak_rss_mb": stats.peak_rss_mb, "timeline": thin(stats.timeline),
        "findings": list(unique.values()),
        **({"interrupted": True} if interrupted else {}),
    }
