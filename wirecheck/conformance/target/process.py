"""A target process the kit runs itself (``--target-command`` of the suite, ``wirecheck fuzz
--command`` / ``--serve``): started with ``{host}``, ``{port}`` and ``{data_dir}`` filled in,
waited for until it accepts, its output kept in a log (the last lines are read, never the
whole log), restarted on the same port and data directory, stopped at the end.
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Bytes of the log read for its last lines.
TAIL_BYTES = 64 << 10
#: What the log says before each start's output.
START_LINE = "--- wirecheck: start "


class ManagedTarget:
    """A target process the kit starts, watches and restarts. ``argv`` may contain
    ``{port}`` (a free port is chosen) ; else ``port_pattern`` finds the port in its output."""

    def __init__(self, argv: list[str], port_pattern: str | None = None, host: str = "127.0.0.1",
                 start_timeout: float = 30.0, data_dir: str | None = None) -> None:
        self.argv = argv
        self.port_pattern = re.compile(port_pattern) if port_pattern else None
        self.host = host
        self.port = 0
        #: ``{data_dir}``: the same directory for every start (what a restart must find again)
        self.data_dir = data_dir
        self._own_data_dir = False
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.log = tempfile.NamedTemporaryFile(prefix="wirecheck-target-", suffix=".log", delete=False)
        self.restarts = 0
        #: wall time the current process started accepting connections (None while starting)
        self.ready_at: float | None = None

    @classmethod
    def reference(cls, protocol: str, profile: str | None = None, websocket: bool = False) -> "ManagedTarget":
        """The kit's own reference broker of ``protocol`` (``wirecheck serve``): for SignalR its
        raw TCP transport, or (``websocket``) its HTTP port, where the hub is ``/hub``."""
        argv = [sys.executable, "-m", "wirecheck", "serve", "--protocol", protocol, "--port", "0"]
        if profile:
            argv += ["--profile", profile]
        if protocol == "signalr":
            pattern = r"serving http://[\d.]+:(\d+)/hub" if websocket else r"raw TCP on [\d.]+:(\d+)"
        else:
            pattern = r"listening on [\d.]+:(\d+)"
        return cls(argv, pattern)

    @classmethod
    def command(cls, command: str, **options) -> "ManagedTarget":
        """``command`` split as a shell would (quotes kept together); a command that cannot be
        split or is empty is the user's mistake, told as RuntimeError like every start failure."""
        try:
            argv = shlex.split(command)
        except ValueError as exc:                     # "No closing quotation"
            raise RuntimeError(f"cannot read the command {command!r}: {exc}") from None
        if not argv:
            raise RuntimeError("the command is empty")
        return cls(argv, **options)

    def start(self) -> None:
        self.ready_at = None
        argv, fixed = self.argv, None
        if any("{port}" in a for a in argv):
            fixed = self.port or free_port(self.host)          # a restart keeps the port
            argv = [a.replace("{port}", str(fixed)) for a in argv]
        elif self.port and self.port_pattern is None:
            fixed = self.port                                  # a command that listens there
        if any("{data_dir}" in a for a in argv):
            if self.data_dir is None:
                self.data_dir = tempfile.mkdtemp(prefix="wirecheck-target-data-")
                self._own_data_dir = True
            argv = [a.replace("{data_dir}", self.data_dir) for a in argv]
        argv = [a.replace("{host}", self.host) for a in argv]
        self.log.write(f"{START_LINE}{shlex.join(argv)}\n".encode())
        self.log.flush()
        if not argv:
            raise RuntimeError("the command is empty")
        try:
            self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:          # not found, not executable, a directory: the user's command
            raise RuntimeError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the target exited at start ({self.exit_status()}):\n"
                                   f"{self.output_tail() or '(it printed nothing)'}")
            port = fixed or self._port_from_output()
            if port:
                try:
                    socket.create_connection((self.host, port), timeout=1.0).close()
                    self.port = port
                    self.ready_at = time.time()
                    return
                except OSError:
                    pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the target did not start listening within {self.start_timeout:g} s:\n"
                           f"{self.output_tail()}")

    def _port_from_output(self) -> int:
        if self.port_pattern is None:
            return 0
        text = Path(self.log.name).read_text(errors="replace")
        m = self.port_pattern.search(text[text.rfind(START_LINE):])      # this start's output
        return int(m.group(1)) if m else 0

    def exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def exit_status(self) -> str:
        code = self.proc.poll() if self.proc else None
        if code is None:
            return "running"
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"exit code {code}"

    def output_tail(self, lines: int = 25) -> str:
        """The last ``lines`` lines the current process printed."""
        self.log.flush()
        with open(self.log.name, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - TAIL_BYTES))
            text = fh.read().decode("utf-8", "replace")
        if START_LINE in text:          # this start's output only: the earlier ones' crashes are told already
            text = text[text.rfind(START_LINE):].partition("\n")[2]
        return "\n".join(text.splitlines()[-lines:])

    def restart(self) -> None:
        self.stop()
        self.restarts += 1
        self.start()

    def fresh_start(self) -> None:
        """Stop it and start it again on an empty data directory (one the kit made): a culprit
        re-run (culprits.py) judges each test against a target that remembers nothing."""
        self.stop()
        if self._own_data_dir and self.data_dir:
            import shutil
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = tempfile.mkdtemp(prefix="wirecheck-target-data-")
        self.restarts += 1
        self.start()

    def stop(self) -> None:
        """kill -9 the target's process group, and wait until none of it is left: a command
        that is a wrapper (a shell script, a runtime's launcher) has children that outlive it
        for a moment and still hold the port, which a restart would otherwise find answering."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.proc.poll() is None:
            self.proc.wait(10)
        deadline = time.monotonic() + 10
        while live_group_pids(self.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        # A killed process's listening socket is torn down after it exits (seen with RabbitMQ:
        # LISTEN for a moment with no process): a restart must not take it for the new one.
        while self.port and time.monotonic() < deadline:
            try:
                socket.create_connection((self.host, self.port), timeout=0.5).close()
            except OSError:
                break
            time.sleep(0.05)

    def close(self) -> None:
        self.stop()
        self.log.close()
        os.unlink(self.log.name)
        if self._own_data_dir:
            import shutil
            shutil.rmtree(self.data_dir, ignore_errors=True)


def live_group_pids(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that are not zombies (Linux ``/proc``; elsewhere none)."""
    pids = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return pids
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()      # after "pid (comm) ": state ppid pgrp
        if fields[0] != b"Z" and int(fields[2]) == pgid:
            pids.append(int(entry))
    return pids


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
