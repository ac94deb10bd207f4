"""A run stopped by SIGINT or SIGTERM (a cancelled CI job, Ctrl-C), to its process or to its
whole process group, under xdist and with a target the kit starts (conformance/run/signals.py):
it stops within seconds, leaves no process behind (the target, the workers, their children),
writes what was judged so far marked ``interrupted``, and exits 128 + the signal."""
from __future__ import annotations

import json
import signal
import sys

import pytest

from tests.cli.test_command_signals import _stopped_run

#: Tests passed before the signal.
PASSED_FIRST = 20


@pytest.mark.parametrize(("sig", "to_group"), [(signal.SIGTERM, True), (signal.SIGINT, False)],
                         ids=["SIGTERM-to-the-group", "SIGINT-to-the-process"])
def test_a_stopped_run_writes_what_it_judged_and_leaves_nothing(tmp_path, sig, to_group):
    report = tmp_path / "r.json"
    serve = f"{sys.executable} -m wirecheck serve --protocol blipmq --port {{port}} --data-dir {{data_dir}}"
    # some tests judged, most still to run; then no process of the run is left, no port, no
    # temporary file (tests/cli/test_command_signals.py)
    _stopped_run([sys.executable, "-m", "wirecheck", "check", "--protocol", "blipmq", "--target", "127.0.0.1:0",
                  "--target-command", serve, "--report", str(report), "--", "-n", "2"], tmp_path,
                 lambda output, _procs: output.count(".") >= PASSED_FIRST, sig, to_group)
    doc = json.loads(report.read_text())
    assert doc["interrupted"]["signal"] == signal.Signals(sig).name
    assert doc["tests"] and doc["interrupted"]["not_run"] > 0, doc["interrupted"]
    assert doc["exitstatus"] == 128 + sig
