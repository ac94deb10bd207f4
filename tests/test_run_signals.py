"""A run stopped by SIGINT or SIGTERM (a cancelled CI job, Ctrl-C), to its process or to its
whole process group, under xdist and with a target the kit starts (conformance/run_signals.py):
it stops within seconds, leaves no process behind (the target, the workers, their children),
writes what was judged so far marked ``interrupted``, and exits 128 + the signal."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

#: Tests passed before the signal; seconds the run has to end after it.
PASSED_FIRST, STOP_WITHIN = 20, 15.0


def _processes_with(marker: str) -> list[str]:
    """The command lines of the processes whose environment holds ``marker``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if marker.encode() not in fh.read():
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                found.append(fh.read().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return found


@pytest.mark.parametrize(("sig", "to_group"), [(signal.SIGTERM, True), (signal.SIGINT, False)],
                         ids=["SIGTERM-to-the-group", "SIGINT-to-the-process"])
def test_a_stopped_run_writes_what_it_judged_and_leaves_nothing(tmp_path, sig, to_group):
    marker = f"wirecheck-signal-test-{uuid.uuid4().hex}"
    report = tmp_path / "r.json"
    serve = f"{sys.executable} -m wirecheck serve --protocol blipmq --port {{port}} --data-dir {{data_dir}}"
    run = subprocess.Popen(
        [sys.executable, "-m", "wirecheck", "check", "--protocol", "blipmq", "--target", "127.0.0.1:0",
         "--target-command", serve, "--report", str(report), "--", "-n", "2"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        env=dict(os.environ, WIRECHECK_TEST_MARKER=marker))
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(iter(lambda: run.stdout.read(1), "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while "".join(seen).count(".") < PASSED_FIRST and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)                       # some tests judged, most still to run
        assert run.poll() is None, "".join(seen)[-3000:]
        os.killpg(run.pid, sig) if to_group else run.send_signal(sig)
        started = time.monotonic()
        run.wait(timeout=STOP_WITHIN + 30)
        took = time.monotonic() - started
        reader.join(timeout=10)
        output = "".join(seen)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert run.returncode == 128 + sig, output[-3000:]
    assert took < STOP_WITHIN, (took, output[-2000:])
    time.sleep(1.0)                                   # what the kit stopped has gone
    assert _processes_with(marker) == [], _processes_with(marker)
    doc = json.loads(report.read_text())
    assert doc["interrupted"]["signal"] == signal.Signals(sig).name
    assert doc["tests"] and doc["interrupted"]["not_run"] > 0, doc["interrupted"]
    assert doc["exitstatus"] == 128 + sig
