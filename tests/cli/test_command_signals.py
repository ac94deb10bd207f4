"""Every command stopped by SIGINT or SIGTERM (Ctrl-C, a cancelled CI job), sent to its process
or to its whole process group (conformance/cli_signals.py): it ends within seconds with 128 +
the signal, no process it started is left (found by an environment marker every child
inherits) and no port they listened on is still open, and what it judged so far is written,
marked ``interrupted``. ``check`` and ``pytest --protocol`` are tests/conformance/run/test_run_signals.py's."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
#: Seconds a command has to end after the signal; to get to work before it.
STOP_WITHIN, READY_WITHIN = 20.0, 120.0
SERVE = f"{PY} -m wirecheck serve --protocol blipmq --port {{port}} --data-dir {{data_dir}}"


# --- what a run left -----------------------------------------------------------------------

def _marked(marker: str) -> dict[int, str]:
    """pid -> command line of the processes whose environment holds ``marker``."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if marker.encode() not in fh.read():
                    continue
            with open(f"/proc/{pid}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                    continue                   # exited, its parent not yet told
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                found[int(pid)] = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
    return found


def _listening() -> dict[str, int]:
    """socket inode -> port of every listening TCP socket (IPv4 and IPv6)."""
    ports = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":              # LISTEN
                ports[fields[9]] = int(fields[1].rsplit(":", 1)[1], 16)
    return ports


def _ports_of(pids) -> set[int]:
    """The ports the processes ``pids`` listen on."""
    listening, ports = _listening(), set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            m = re.match(r"socket:\[(\d+)\]", link)
            if m and m.group(1) in listening:
                ports.add(listening[m.group(1)])
    return ports


# --- one stopped run -----------------------------------------------------------------------

def _stopped_run(argv: list[str], cwd: Path, ready, sig: int, to_group: bool,
                 env: dict | None = None) -> tuple[str, int]:
    """Run ``argv`` (in ``env``, this process's environment by default) until
    ``ready(output, processes)`` holds, send ``sig``; check that it ends in time with 128 + sig
    and leaves no process and no listening port. Its output and status."""
    marker = f"wirecheck-signal-{uuid.uuid4().hex}"
    # the run's temporary files in a folder of its own: what it leaves there is seen
    scratch = Path(cwd if cwd != ROOT else os.environ.get("TMPDIR", "/tmp")) / f"scratch-{marker}"
    scratch.mkdir()
    run = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True, env=dict(os.environ if env is None else env,
                                                            WIRECHECK_TEST_MARKER=marker, TMPDIR=str(scratch)))
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(iter(lambda: run.stdout.read(1), "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + READY_WITHIN
        while not ready("".join(seen), _marked(marker)):
            assert run.poll() is None, f"ended before it was stopped: {''.join(seen)[-3000:]}"
            assert time.monotonic() < deadline, f"not at work within {READY_WITHIN} s: {''.join(seen)[-3000:]}"
            time.sleep(0.1)
        ports = _ports_of(_marked(marker))
        os.killpg(run.pid, sig) if to_group else run.send_signal(sig)
        started = time.monotonic()
        try:
            run.wait(timeout=STOP_WITHIN + 30)
        except subprocess.TimeoutExpired:
            pass
        took = time.monotonic() - started
        reader.join(timeout=10)
        output = "".join(seen)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
            # a failed run: what it started in sessions of their own (its target) is not in its
            # group, and must not outlive the test either
            for pid in _marked(marker):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    assert run.returncode == 128 + sig, output[-3000:]
    assert took < STOP_WITHIN, (took, output[-2000:])
    deadline = time.monotonic() + 5
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.1)                                # what the command stopped has gone
    left = _marked(marker)
    for pid in left:                                   # not left for the next test either
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert left == {}, left
    assert not ports & set(_listening().values()), (ports, output[-2000:])
    assert "Traceback" not in output, output[-3000:]
    # temporary directories released (pytest's own root of its runs' temporary folders,
    # which it keeps for the last three runs by design, aside)
    left_files = sorted(p.name for p in scratch.iterdir() if not p.name.startswith("pytest-of-"))
    assert left_files == [], left_files
    shutil.rmtree(scratch)
    return output, run.returncode


def _running(word: str):
    """Ready once a process of the run has ``word`` in its command line."""
    return lambda _output, procs: any(word in cmd for cmd in procs.values())


def _busy(word: str, cpu_seconds: float):
    """Ready once a process of the run with ``word`` in its command line has used
    ``cpu_seconds`` of CPU: at work, whatever the machine's load made of the wall-clock time."""
    tick = os.sysconf("SC_CLK_TCK")

    def ready(_output, procs) -> bool:
        for pid, cmd in procs.items():
            if word in cmd:
                try:
                    with open(f"/proc/{pid}/stat", "rb") as fh:
                        fields = fh.read().rsplit(b")", 1)[-1].split()
                except OSError:
                    continue
                if (int(fields[11]) + int(fields[12])) / tick >= cpu_seconds:     # utime + stime
                    return True
        return False
    return ready


def _printed(pattern: str):
    return lambda output, _procs: re.search(pattern, output, re.M) is not None


def _both(*checks):
    return lambda output, procs: all(c(output, procs) for c in checks)


def _after(seconds: float, check):
    """``check``, and then ``seconds`` more (work under way, some of it done)."""
    since: list[float] = []

    def ready(output, procs) -> bool:
        if not since and check(output, procs):
            since.append(time.monotonic())
        return bool(since) and time.monotonic() - since[0] >= seconds
    return ready


SIGNALS = [pytest.param(signal.SIGTERM, False, id="SIGTERM"), pytest.param(signal.SIGINT, True, id="SIGINT-to-the-group")]


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wirecheck(*args: str) -> list[str]:
    return [PY, "-m", "wirecheck", *args]


# --- the commands --------------------------------------------------------------------------

@pytest.mark.parametrize(("sig", "to_group"), SIGNALS)
def test_serve_and_record(tmp_path, sig, to_group):
    out, status = _stopped_run(_wirecheck("serve", "--protocol", "blipmq", "--port", "0"), tmp_path,
                               _printed("listening on"), sig, to_group)
    capture = tmp_path / "c.pcap"
    out, _ = _stopped_run(_wirecheck("record", "--listen", f"127.0.0.1:{_free_port()}", "--upstream", "127.0.0.1:9",
                                     "--capture", str(capture)), tmp_path, _printed("^recording"), sig, to_group)
    assert capture.stat().st_size >= 24 and "connection(s) recorded" in out      # the pcap closed whole


@pytest.mark.parametrize(("sig", "to_group"), SIGNALS)
def test_check_client(tmp_path, sig, to_group):
    driver = f"{PY} -m wirecheck.conformance.clients.drivers.blipmq {{host}} {{port}} {{count}}"
    report = tmp_path / "cc.json"
    out, _ = _stopped_run(_wirecheck("check-client", "--protocol", "blipmq", "--client-command", driver,
                                     "--report", str(report)), tmp_path,
                          _both(_printed(r"^[\w-]+: PASS"), _running("drivers.blipmq")), sig, to_group)
    doc = json.loads(report.read_text())
    assert doc["interrupted"]["signal"] == signal.Signals(sig).name and doc["exitstatus"] == 128 + sig
    assert doc["interrupted"]["not_run"] >= 1 and doc["tests"], doc["interrupted"]


def _slow_capture(path: Path) -> None:
    """Two BlipMQ conversations a minute apart (the replay waits the pause out with
    --max-gap 60: it is stopped in it)."""
    from wirecheck.conformance.captures.relay import CaptureFile
    from wirecheck.reference_impl.blipmq import codec as blip
    now = [1_700_000_000.0]
    capture = CaptureFile(str(path), clock=lambda: now[0])
    for n in range(2):
        rec = capture.conversation(("127.0.0.1", 40000 + n), ("127.0.0.1", 5555))
        rec.data("c2s", blip.encode(blip.Hello(1)) + blip.encode(blip.Auth(2, "dev-key")) + blip.encode(blip.Ping(3)))
        now[0] += 0.01
        rec.fin("c2s")
        rec.fin("s2c")
        now[0] += 60
    capture.close()


@pytest.mark.parametrize(("sig", "to_group"), SIGNALS)
def test_replay(tmp_path, sig, to_group):
    capture, report = tmp_path / "slow.pcap", tmp_path / "rp.json"
    _slow_capture(capture)
    out, _ = _stopped_run(_wirecheck("replay", str(capture), "--protocol", "blipmq", "--target-command", SERVE,
                                     "--max-gap", "60", "--report", str(report)), tmp_path,
                          _after(1.5, _running("wirecheck serve")), sig, to_group)
    doc = json.loads(report.read_text())
    assert doc["interrupted"]["signal"] == signal.Signals(sig).name and doc["exitstatus"] == 128 + sig


@pytest.mark.parametrize(("sig", "to_group"), SIGNALS)
def test_live_fuzz(tmp_path, sig, to_group):
    # stopped once cases went out (the first progress line comes after 10 s of the campaign)
    out, _ = _stopped_run(_wirecheck("fuzz", "--protocol", "blipmq", "--command", SERVE, "--time", "300",
                                     "--findings", str(tmp_path / "f"), "--json"), tmp_path,
                          _printed(r'^\{"progress": true'), sig, to_group)
    summary = json.loads([line for line in out.splitlines() if line.startswith('{"mode"')][-1])
    assert summary["interrupted"]["signal"] == signal.Signals(sig).name and summary["execs"] > 0


def test_live_fuzz_stopped_while_it_starts(tmp_path):
    """A signal before the first case (the target starting, the seeds loading): the summary still
    comes, saying so."""
    out, _ = _stopped_run(_wirecheck("fuzz", "--protocol", "blipmq", "--command", SERVE, "--time", "300",
                                     "--findings", str(tmp_path / "f"), "--json"), tmp_path,
                          # the target starting (the fuzz command's own line names it too)
                          lambda _out, procs: any(c.split()[1:4] == ["-m", "wirecheck", "serve"] for c in procs.values()),
                          signal.SIGTERM, False)
    summary = json.loads([line for line in out.splitlines() if line.startswith('{"mode"')][-1])
    assert summary["interrupted"]["signal"] == "SIGTERM"


@pytest.mark.parametrize(("sig", "to_group"), SIGNALS)
def test_fuzz_campaign(tmp_path, sig, to_group):
    pytest.importorskip("atheris")
    out_file = tmp_path / "camp.json"
    _stopped_run(_wirecheck("fuzz", "--all", "--protocol", "blipmq", "--time", "600", "--jobs", "2",
                            "--out", str(out_file), "--findings", str(tmp_path / "f"), "--workdir", str(tmp_path / "w")),
                 tmp_path, _busy("fuzz_blipmq", 3.0), sig, to_group)
    doc = json.loads(out_file.read_text())
    assert doc["interrupted"]["signal"] == signal.Signals(sig).name and doc["interrupted"]["not_run"] >= 1
    ran = [j for j in doc["jobs"] if j.get("execs")]
    assert ran and all(j.get("interrupted") for j in ran), doc["jobs"]     # their figures kept


@pytest.mark.parametrize(("sig", "to_group"), SIGNALS)
def test_analyze(tmp_path, sig, to_group):
    out_dir = tmp_path / "an"
    _stopped_run(_wirecheck("analyze", str(ROOT / "captures"), "--out", str(out_dir), "--master", "local[2]",
                            "--progress"), tmp_path, _printed(r"^analyze: \d+/\d+ file"), sig, to_group)
    doc = json.loads((out_dir / "summary.json").read_text())
    assert doc["interrupted"]["signal"] == signal.Signals(sig).name
    assert not list(out_dir.glob("*/.part-*.tmp"))             # no half-written part left
    assert not (out_dir / "frames" / "_SUCCESS").exists()


@pytest.mark.parametrize(("sig", "to_group"), SIGNALS)
def test_run(tmp_path, sig, to_group):
    reports = tmp_path / "rep"
    out, _ = _stopped_run(_wirecheck("run", "--protocol", "blipmq", "--protocol", "vibemq", "--reports", str(reports)),
                          tmp_path, _after(8.0, _running("wirecheck serve")), sig, to_group)
    doc = json.loads((reports / "blipmq.json").read_text())
    assert doc["interrupted"]["signal"] == signal.Signals(sig).name and doc["tests"]
    assert (reports / "index.html").exists() and not (reports / "vibemq.json").exists()


@pytest.mark.parametrize(("sig", "to_group"), SIGNALS)
def test_make_matrix(tmp_path, sig, to_group):
    out_dir = tmp_path / "m"
    _stopped_run([PY, "tools/matrix.py", "--out", str(out_dir), "--only", "wirecheck reference (rabbitmq-stream)",
                  "--only", "wirecheck reference (signalr)"], ROOT,
                 _after(3.0, _running("drivers.rabbitmq_stream")), sig, to_group)
    doc = json.loads((out_dir / "matrix.json").read_text())
    assert doc["interrupted"]["signal"] == signal.Signals(sig).name
    assert doc["interrupted"]["not_run_implementations"] == ["wirecheck reference (signalr)"]


@pytest.mark.parametrize(("sig", "to_group"), SIGNALS)
def test_make_bench(tmp_path, sig, to_group):
    out_file = tmp_path / "bench.json"
    _stopped_run([PY, "benchmarks/run.py", "--quick", "--out", str(out_file)], ROOT,
                 _printed(r"^bench: \[2/\d+\] \w+ \.\.\."), sig, to_group)
    doc = json.loads(out_file.read_text())
    assert doc["interrupted"]["signal"] == signal.Signals(sig).name and doc["results"]
    assert doc["interrupted"]["not_run"] >= 1


@pytest.mark.parametrize(("sig", "to_group"), SIGNALS)
def test_make_soak(tmp_path, sig, to_group):
    out_file = tmp_path / "soak.json"
    _stopped_run([PY, "-m", "soak.run", "--quick", "--only", "hostile_targets", "--out", str(out_file)], ROOT,
                 _after(2.0, _running("wirecheck check")), sig, to_group)
    doc = json.loads(out_file.read_text())
    assert doc["interrupted"]["signal"] == signal.Signals(sig).name and doc["ok"] is False
    assert doc["interrupted"]["not_run_modules"] == ["hostile_targets"]


def test_a_signal_after_the_last_test_still_writes_the_report(tmp_path):
    """The end of a run (the spin watch's last look, re-runs of suspects, the report) takes a
    moment after the last test: a signal then must not lose the report (it did: the last look
    was interrupted and the report never written, exit 130 for a SIGTERM)."""
    report = tmp_path / "r.json"
    serve = f"{PY} -m wirecheck serve --protocol blipmq --port {{port}} --data-dir {{data_dir}}"
    # ready: the last test's count ("[n/n]")
    out, _ = _stopped_run(_wirecheck("check", "--protocol", "blipmq", "--target", "127.0.0.1:0",
                                          "--target-command", serve, "--report", str(report), "--", "-n", "2",
                                          "-k", "ping or auth"), tmp_path,
                               _printed(r"\[\s*(\d+)/\1\]"), signal.SIGTERM, False)
    doc = json.loads(report.read_text())
    # the report is whole: marked interrupted when the signal came before it was written
    assert doc["tests"] and all(t["verdict"] == "PASS" for t in doc["tests"]), out[-2000:]
    assert doc.get("interrupted", {"signal": "SIGTERM"})["signal"] == "SIGTERM"
