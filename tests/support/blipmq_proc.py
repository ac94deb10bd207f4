"""Run ``wirecheck serve --protocol P`` as a child process (for crash tests)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class BrokerProcess:
    def __init__(self, *args: str, protocol: str = "blipmq") -> None:
        self.args = args
        self.protocol = protocol
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def start(self, timeout: float = 20.0) -> "BrokerProcess":
        """Start the broker and wait for its "listening on" line. Its output is read by a
        thread from the start (a readline here could block past the deadline if the child
        printed nothing), and kept: a broker that exits or never listens is reported with
        what it printed."""
        cmd = [sys.executable, "-m", "wirecheck", "serve", "--protocol", self.protocol,
               "--port", "0", *self.args]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self.output: list[str] = []
        self._listening = threading.Event()
        reader = threading.Thread(target=self._drain, daemon=True)
        reader.start()
        deadline = time.monotonic() + timeout
        while not self._listening.wait(0.05):
            if self.proc.poll() is not None:
                reader.join(2)                     # its last lines
                break
            if time.monotonic() > deadline:
                break
        if self._listening.is_set():
            return self
        self.kill()
        printed = "".join(self.output[-40:]).rstrip() or "(nothing)"
        raise RuntimeError(f"broker did not start (exit status {self.proc.returncode}); it printed:\n{printed}")

    def _drain(self) -> None:
        # Keep reading: a broker that prints much would otherwise block on a full pipe.
        for line in self.proc.stdout:
            if len(self.output) < 1000:            # the first lines are the useful ones
                self.output.append(line)
            if not self._listening.is_set():
                m = re.search(r"listening on [\d.]+:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    self._listening.set()

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def terminate(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
