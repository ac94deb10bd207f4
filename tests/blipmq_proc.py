"""Run ``wirecheck serve --protocol P`` as a child process (for crash tests)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
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
                return self
            if not line and self.proc.poll() is not None:
                break
        self.kill()
        raise RuntimeError(f"broker did not start: {line!r}")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def terminate(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
