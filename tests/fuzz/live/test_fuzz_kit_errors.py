"""``wirecheck fuzz`` never dies of its own bugs, and reads ``--profile FILE.toml`` as the suites
do: an exception of the kit during a network campaign is the kit's error (exit 2, the summary
still printed, with the seed and the case that caused it), never a finding."""
from __future__ import annotations

import json

from wirecheck.cli import build_parser
from wirecheck.cli import fuzz as command
from wirecheck.fuzz.live import mutate


def _fuzz(*argv):
    return command.main(build_parser().parse_args(["fuzz", *argv]))


def test_kit_exception_is_the_kits_error_with_seed_and_case(tmp_path, monkeypatch, capsys):
    real = mutate.Mutator.mutate_frame
    calls = []

    def broken(self, frame):
        calls.append(frame)
        if len(calls) == 4:
            raise ValueError("empty range for randrange() (planted)")
        return real(self, frame)

    monkeypatch.setattr(mutate.Mutator, "mutate_frame", broken)
    status = _fuzz("--protocol", "blipmq", "--serve", "--time", "20", "--seed", "5", "--json",
                   "--findings", str(tmp_path))
    out, err = capsys.readouterr()
    assert status == command.EXIT_HARNESS
    summary = json.loads(out.strip().splitlines()[-1])          # the summary is printed all the same
    error = summary["kit_error"]
    assert error["seed"] == 5 and error["case"] == summary["execs"] and error["case"] >= 3
    assert error["error"] == "ValueError: empty range for randrange() (planted)"
    assert "broken" in error["traceback"] and error["mutation"] == ""
    assert summary["findings"] == [] and not list(tmp_path.rglob("*.bin"))
    assert f"case {error['case']} of --seed 5" in err and "not a finding" in err


def test_profile_file_is_read_with_what_it_extends(tmp_path, capsys):
    """VibeMQ 1.0 frames differ from the document's: a probe in the document's reading is not
    answered, and the run stopped with exit 2 before any case when the file was not read."""
    profile = tmp_path / "old-vibemq.toml"
    profile.write_text('extends = "vibemq-1.0"\n')
    status = _fuzz("--protocol", "vibemq", "--serve", "--profile", str(profile), "--time", "3", "--json",
                   "--findings", str(tmp_path / "findings"))
    out, err = capsys.readouterr()
    assert status == command.EXIT_OK, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["execs"] > 10 and summary["findings"] == [] and summary["kit_error"] is None
    assert summary["profile"] == "vibemq-1.0"
    bad = tmp_path / "bad.toml"
    bad.write_text('extends = "vibemq-0.1"\n')
    assert _fuzz("--protocol", "vibemq", "--serve", "--profile", str(bad), "--time", "3") == command.EXIT_HARNESS
    assert "unknown profile 'vibemq-0.1'" in capsys.readouterr().err


def test_a_command_that_cannot_start_is_one_line_exit_2(tmp_path, capsys):
    """The user's typo in ``--command`` is told in one line before any fuzzing, never as a
    traceback: a missing program, one that is not executable, an empty or unbalanced command,
    one that exits at once."""
    directory = tmp_path / "dir"
    directory.mkdir()
    cases = {f"{tmp_path}/missing --port {{port}}": "cannot run",
             f"{directory} {{port}}": "cannot run",
             "": "the command is empty",
             "'unbalanced {port}": "No closing quotation",
             "true {port}": "exited at start (exit code 0):\n(it printed nothing)"}
    for cmd, said in cases.items():
        status = _fuzz("--protocol", "blipmq", "--command", cmd, "--time", "2",
                       "--findings", str(tmp_path / "findings"))
        out, err = capsys.readouterr()
        assert status == command.EXIT_HARNESS, cmd
        assert err.startswith("wirecheck fuzz: ") and said in err and "Traceback" not in err, (cmd, err)
        assert out == ""


def test_a_campaign_job_that_starts_late_gets_what_is_left_of_the_budget(monkeypatch):
    """Campaigns ran past ``--time``: every job got its full share however late it started, and
    minimizing took 30 s a crash after the end. Now a late job gets what is left (at least
    MIN_SHARE) and minimizing stops when its time is spent, the crash kept whole."""
    import subprocess
    import time

    from wirecheck.fuzz import campaign
    seen = []

    def fake_run(argv, timeout):
        seen.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout='{"execs": 1, "findings": []}\n', stderr="")

    monkeypatch.setattr(campaign, "_run", fake_run)
    base = ["py", "-m", "wirecheck", "fuzz", "--json", "--protocol", "blipmq"]
    now = time.monotonic()
    for left, share, given in ((20.0, 100.0, "20"), (500.0, 100.0, "100"), (1.0, 100.0, str(int(campaign.MIN_SHARE)))):
        job = campaign.run_job(campaign.Job("j", base, share), deadline=now + left)
        assert seen[-1][4:6] == ["--time", given] and seen[-1][6:] == base[4:] and job.result["execs"] == 1
    crashes = [{"mode": "inprocess", "kind": "crash", "file": f"/f/{i}", "target": "t"} for i in range(3)]
    campaign.minimize_findings(crashes, total=0.0)
    assert all(c["minimized"] == {"error": "not minimized: the campaign's time budget was spent"} for c in crashes)
    assert len(seen) == 3
