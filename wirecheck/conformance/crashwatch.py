"""After each suite test against ``--target``: is the target still there?

A target that died (or hung) during a test makes every later test fail with "connection
refused" or a timeout: protocol violations that are not there, and no word of the one crash
that is. So after each test the kit connects again and runs the first step of the protocol's
handshake (conformance/preflight.py, on a fresh connection, WebSocket targets included). When
that fails twice, a moment apart and the second time with a longer wait (a busy machine is
slow, not dead), the target is down:

- the test after which that was first seen gets the verdict CRASH (a failure, counted apart),
  with how the target was found (refused: the process is gone or stopped listening; silent: it
  accepts but no longer answers, a hang);
- every test after it is not run, and a test that was running beside it (pytest-xdist) is not
  judged: both are SKIPPED with "the target went down after <test>", so nothing else is blamed.

Which test is first is decided by a marker file that one process creates (O_EXCL), so exactly
one CRASH is reported however many xdist workers see the target go. With ``--target-command``
the kit will restart the target instead (issue "target lifecycle", not yet built).
"""
from __future__ import annotations

import json
import os
import tempfile
import time

from wirecheck.conformance.preflight import alive

#: Pause before the second look, and how much longer than the receive timeout it waits.
SETTLE_PAUSE = 0.3
SETTLE_FACTOR = 3.0


class CrashWatch:
    def __init__(self, spec, profile, address: tuple, timeout: float, marker: str) -> None:
        self.spec, self.profile = spec, profile
        self.host, self.port = address[0], address[1]
        self.url = address[2] if len(address) > 2 else None
        self.timeout = timeout
        self.marker = marker

    @staticmethod
    def new_marker() -> str:
        """A path no file has yet: where the first crash will be written."""
        folder = tempfile.mkdtemp(prefix="wirecheck-crashwatch-")
        return os.path.join(folder, "down.json")

    def down(self) -> dict | None:
        """The crash already recorded (``test``, ``reason``), or None while the target is up."""
        try:
            with open(self.marker) as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    def look(self) -> str | None:
        """None when the target answers; otherwise how it was found, after a second look."""
        reason = alive(self.spec, self.profile, self.host, self.port, self.url, self.timeout)
        if reason is None:
            return None
        time.sleep(SETTLE_PAUSE)
        return alive(self.spec, self.profile, self.host, self.port, self.url, self.timeout * SETTLE_FACTOR)

    def claim(self, nodeid: str, reason: str) -> bool:
        """Record the crash as ``nodeid``'s; False when another test was first."""
        try:
            fd = os.open(self.marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as fh:
            json.dump({"test": nodeid, "reason": reason, "time": time.time()}, fh)
        return True

    def close(self) -> None:
        """Remove the marker and its folder (the process that made them)."""
        for path in (self.marker, os.path.dirname(self.marker)):
            try:
                os.remove(path) if path == self.marker else os.rmdir(path)
            except OSError:
                pass
