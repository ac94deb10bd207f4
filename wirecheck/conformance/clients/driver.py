"""A client library's driver program, run by ``wirecheck check-client`` once per scenario, and
what became of it: it exited 0 (its library reported success), named an error and exited
non-zero (its library reported one), crashed (a signal, or its runtime's uncaught-error exit),
or hung (no exit within the scenario's budget).

The driver contract (docs/start/clients.md, "Client suite"): the command gets ``{host}``,
``{port}``, ``{url}``, ``{raw_port}``, ``{count}`` and ``{scenario}`` filled in (and the same as
``WIRECHECK_*`` environment variables), runs the protocol's standard workload with its library,
and prints on stdout, one per line:

- ``received ID``: each workload message its library handed to it (``ID`` as the workload
  published it), once per hand-over, so that a loss or a duplicate shows;
- ``error TEXT``: the error its library reported (then it exits non-zero);
- ``hung TEXT``: its library never returned from a call, nor called back, within the driver's
  own bound (then it exits non-zero): what an application would wait on for ever. The run is a
  HANG, as one the kit had to end itself.

Other lines are ignored. The kit reads at most :data:`OUTPUT_BYTES` of each stream (a driver
that floods its output cannot fill the memory).
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

#: Bytes of each of the driver's output streams kept.
OUTPUT_BYTES = 256 * 1024
#: Seconds between SIGTERM and SIGKILL when the kit ends a driver (a hang).
KILL_GRACE = 2.0
#: The driver's lines the kit reads.
RECEIVED_LINE = re.compile(r"^received (\S+)\s*$")
ERROR_LINE = re.compile(r"^error\b[:\s]*(.*)$")
HUNG_LINE = re.compile(r"^hung\b[:\s]*(.*)$")
#: A line of a runtime's error output that names the error ("Error: Unknown response 22",
#: "ValueError: ...", "panicked at", "Exception in thread").
ERROR_NAMED = re.compile(r"^\s*(?:[\w.$]*(?:Error|Exception)\b[:(]|Uncaught |panic: |thread '[^']*' panicked"
                         r"|Exception in thread )")

#: How each runtime dies of an uncaught error, as its exit status and last words on stderr
#: (docs/start/clients.md lists them): named in the CRASH of a driver that exited non-zero
#: without an ``error`` line (with one, it caught its library's error: a library may log a
#: traceback of a background task and still raise the error to its application).
UNCAUGHT = (
    ("Python", None, re.compile(r"^Traceback \(most recent call last\):", re.M)),
    ("Node.js", None, re.compile(r"^Node\.js v\d+", re.M)),
    ("Node.js", None, re.compile(r"^\s*throw \w+;|^Uncaught \w*Error", re.M)),
    ("Java", None, re.compile(r'^Exception in thread "[^"]*"', re.M)),
    (".NET", None, re.compile(r"^Unhandled exception\. ", re.M)),
    ("Go", 2, re.compile(r"^panic: |^goroutine \d+ \[running\]:", re.M)),
    ("Rust", 101, re.compile(r"^thread '[^']*' panicked at", re.M)),
)
#: Exit statuses that mean a signal under a shell or a runtime host (128 + N; .NET's abort).
SIGNAL_EXITS = {128 + s: s for s in (signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE,
                                     signal.SIGILL, signal.SIGKILL)}


class DriverError(Exception):
    """The driver cannot be started (not found, not executable): the kit cannot judge."""


@dataclass
class DriverRun:
    """One run of the driver."""
    argv: list[str]
    returncode: int | None = None
    seconds: float = 0.0
    hung: bool = False
    stdout: str = ""
    stderr: str = ""
    received: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    #: ``hung`` lines: what the library never returned from (the driver gave up waiting).
    hangs: list[str] = field(default_factory=list)

    def read_output(self, stdout: bytes, stderr: bytes) -> None:
        """What the driver printed: its ``received``, ``error`` and ``hung`` lines (any other
        line, and bytes that are not UTF-8, are its own business: kept, never an error)."""
        self.stdout = stdout.decode("utf-8", "replace")
        self.stderr = stderr.decode("utf-8", "replace")
        for line in self.stdout.splitlines():
            m = RECEIVED_LINE.match(line)
            if m:
                self.received[m.group(1)] += 1
                continue
            m = ERROR_LINE.match(line)
            if m:
                self.errors.append(m.group(1).strip() or "(no text)")
                continue
            m = HUNG_LINE.match(line)
            if m:
                self.hangs.append(m.group(1).strip() or "(no text)")

    @property
    def signal(self) -> int | None:
        """The signal that ended it (directly, or as a shell's 128 + N), unless the kit sent it."""
        if self.hung or self.returncode is None:
            return None
        if self.returncode < 0:
            return -self.returncode
        return int(SIGNAL_EXITS[self.returncode]) if self.returncode in SIGNAL_EXITS else None

    def uncaught(self) -> str | None:
        """The runtime whose uncaught-error exit this is, or None."""
        if self.hung or not self.returncode or self.returncode < 0:
            return None
        for runtime, code, pattern in UNCAUGHT:
            if (code is None or code == self.returncode) and pattern.search(self.stderr):
                return runtime
        return None

    @property
    def outcome(self) -> str:
        """``success``, ``error`` (non-zero, an error named), ``crash`` or ``hang``."""
        if self.hung:
            return HANG
        if self.returncode == 0:
            return SUCCESS
        if self.signal is not None:
            return CRASH
        if self.hangs:
            return HANG
        # A driver that named an error caught it and exited: a library may log a traceback of
        # its own (a background task's) and still raise the error to its application.
        if self.errors:
            return ERROR
        return CRASH          # the runtime's uncaught-error exit, or an exit that named nothing

    def describe(self) -> str:
        """One line: how the driver ended."""
        if self.hung:
            return f"no exit within {self.seconds:.0f} s: killed by the kit"
        if self.hangs and self.returncode and self.signal is None:
            return f"exit {self.returncode} after {self.seconds:.1f} s: its library never returned: {self.hangs[0]}"
        if self.returncode == 0:
            return f"exit 0 after {self.seconds:.1f} s"
        sig = self.signal
        if sig is not None:
            name = signal.Signals(sig).name
            how = f"killed by {name}" if self.returncode < 0 else f"exit {self.returncode} ({name})"
            return f"{how} after {self.seconds:.1f} s"
        runtime = self.uncaught()
        if runtime and not self.errors:
            return f"exit {self.returncode}: an uncaught {runtime} error after {self.seconds:.1f} s"
        if not self.errors:
            return (f"exit {self.returncode} after {self.seconds:.1f} s without an `error` line "
                    "(a driver names the error its library reported)")
        return f"exit {self.returncode} after {self.seconds:.1f} s: error {self.errors[0]}"

    def last_words(self, lines: int = 12) -> str:
        """The end of what it printed, both streams; and, when stderr's end does not name the
        error (Node.js prints the error first and its stack after it), the first line of stderr
        that does."""
        out = []
        for name, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            all_lines = text.rstrip().splitlines()
            tail = all_lines[-lines:]
            if name == "stderr" and len(all_lines) > lines and not any(ERROR_NAMED.search(x) for x in tail):
                first = next((x for x in all_lines[:-lines] if ERROR_NAMED.search(x)), None)
                if first is not None:
                    out.append(f"stderr, the error it names:\n  {first}")
            if tail:
                out.append(f"{name}:\n" + "\n".join(f"  {line}" for line in tail))
        return "\n".join(out)


SUCCESS, ERROR, CRASH, HANG = "success", "error", "crash", "hang"


def command_argv(command: str, values: dict) -> list[str]:
    """``command`` split as a shell would (run without one), ``{name}`` filled in from
    ``values``; an unknown ``{name}`` is a ValueError naming the known ones."""
    argv = shlex.split(command)
    if not argv:
        raise ValueError("--client-command is empty")
    out = []
    for word in argv:
        for name in re.findall(r"\{(\w+)\}", word):
            if name not in values:
                raise ValueError(f"--client-command: unknown placeholder {{{name}}}; known: "
                                 + ", ".join("{" + k + "}" for k in values))
        out.append(re.sub(r"\{(\w+)\}", lambda m: str(values[m.group(1)]), word))
    return out


def _reader(stream, sink: list, limit: int) -> None:
    kept = 0
    for chunk in iter(lambda: stream.read(8192), b""):
        if kept < limit:
            sink.append(chunk[:limit - kept])
            kept += min(len(chunk), limit - kept)
    stream.close()


def run_driver(argv: list[str], budget: float, env: dict | None = None, cwd: str | None = None) -> DriverRun:
    """Run the driver to its end, or for ``budget`` seconds (then it hung: SIGTERM, then
    SIGKILL to its whole process group, :data:`KILL_GRACE` apart)."""
    run = DriverRun(list(argv))
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})},
                                cwd=cwd, start_new_session=True)
    except OSError as exc:
        raise DriverError(f"cannot run the client command {shlex.join(argv)}: {exc}") from None
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [threading.Thread(target=_reader, args=(proc.stdout, out, OUTPUT_BYTES), daemon=True),
               threading.Thread(target=_reader, args=(proc.stderr, err, OUTPUT_BYTES), daemon=True)]
    for t in readers:
        t.start()
    try:
        proc.wait(budget)
    except subprocess.TimeoutExpired:
        run.hung = True
        _end_group(proc)
    except BaseException:                # the kit stopped (cli_signals.py): the driver goes too
        _end_group(proc)
        raise
    run.seconds = time.monotonic() - start
    run.returncode = proc.returncode
    if not run.hung:
        # the driver exited; anything it left behind in its group (a child it forked) goes too
        _kill_group(proc.pid, signal.SIGKILL)
    for t in readers:
        t.join(5.0)
    run.read_output(b"".join(out), b"".join(err))
    return run


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _end_group(proc: subprocess.Popen) -> None:
    _kill_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(KILL_GRACE)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid, signal.SIGKILL)
        proc.wait()
