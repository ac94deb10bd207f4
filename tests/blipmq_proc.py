"""Run ``wirecheck serve --protocol P`` as a child process (for crash tests)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class BrokerProcess:
    def __init__(self, *args: str, protocol: str = "blipmq") -> None:
        self.args = args
        self.protocol = protocol
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def start(self, timeout: float = 20.0) -> "BrokerProcess":
        cmd = [sys.executable, "-m", "conformance.cli", "serve", "--protocol", self.protocol,
               "--port", "0", *self.args]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            m = re.search(r"listening on [\d.]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                # Keep reading: a broker that prints much would otherwise block on a full pipe.
                self.output: list[str] = []
                threading.Thread(target=self._drain, daemon=True).start()
                return self
            if not line and self.proc.poll() is not None:
                break
        self.kill()
        raise RuntimeError(f"broker did not start: {line!r}")

    def _drain(self) -> None:
        for line in self.proc.stdout:
            if len(self.output) < 1000:            # the first lines are the useful ones
                self.output.append(line)

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def terminate(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
