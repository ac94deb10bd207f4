"""A run whose report, JUnit XML or allure folder cannot be written stops at once with one line
(exit 2 from ``wirecheck check``), before any test runs: not a traceback after the suite."""
from __future__ import annotations

import subprocess
import sys

from wirecheck.conformance.run.output_paths import unwritable


def test_what_cannot_be_written_is_said(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    assert unwritable(str(blocker / "r.json")) == f"{blocker} is a file, not a folder"
    assert unwritable(str(blocker / "deeper" / "r.json")) == f"{blocker} is a file, not a folder"
    assert unwritable(str(tmp_path)) == "it is a folder"
    assert unwritable(str(tmp_path / "new" / "r.json")) is None and (tmp_path / "new").is_dir()
    assert unwritable(str(blocker), folder=True) == f"{blocker} is a file, not a folder"
    assert list((tmp_path / "new").iterdir()) == []            # the probe file is gone


def test_check_stops_before_the_suite(tmp_path):
    (tmp_path / "afile").write_text("x")
    for extra in (["--report", "afile/r.json"], ["--", "--junitxml", "afile/j.xml"]):
        got = subprocess.run([sys.executable, "-m", "wirecheck", "check", "--protocol", "blipmq", *extra],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert got.returncode == 2, got.stdout[-2000:] + got.stderr[-2000:]
        assert "is a file, not a folder" in got.stderr + got.stdout
        assert "Traceback" not in got.stderr + got.stdout and "passed" not in got.stdout


def test_every_command_checks_what_it_writes_first(tmp_path):
    """fuzz, analyze, report, replay, check-client, serve: an output that cannot be written is
    one line naming the option, exit 2, before any work."""
    (tmp_path / "afile").write_text("x")
    capture = tmp_path / "c.pcap"
    capture.write_bytes(b"\xd4\xc3\xb2\xa1" + bytes(20))
    runs = [["fuzz", "--all", "--protocol", "blipmq", "--time", "3", "--out", "afile/x.json"],
            ["analyze", str(capture), "--out", "afile/o"],
            ["report", str(capture), "--out", "afile/o"],
            ["replay", str(capture), "--protocol", "blipmq", "--target", "127.0.0.1:1", "--report", "afile/r.json"],
            ["check-client", "--protocol", "blipmq", "--client-command", "true", "--report", "afile/r.json"],
            ["serve", "--protocol", "blipmq", "--capture", "afile/c.pcap"]]
    for argv in runs:
        got = subprocess.run([sys.executable, "-m", "wirecheck", *argv], cwd=tmp_path, capture_output=True,
                             text=True, timeout=120)
        assert got.returncode == 2, (argv, got.stderr[-2000:])
        assert got.stderr.strip().count("\n") == 0 and "is a file, not a folder" in got.stderr, (argv, got.stderr)
