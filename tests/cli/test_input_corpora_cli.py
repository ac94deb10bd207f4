"""The corpora of the fuzz targets over the kit's user inputs (wirecheck/fuzz/harnesses/inputs.py:
real files and broken ones) through the commands that read them: each ends with a documented
exit status, says what is wrong with an input in one line, and never prints a traceback."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from wirecheck.cli import main as wirecheck_main
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.server import ThreadedServer

CORPORA = Path(__file__).resolve().parents[2] / "wirecheck" / "fuzz" / "corpora"


def _seeds(corpus: str) -> list[Path]:
    return sorted(p for p in (CORPORA / corpus).iterdir() if p.is_file())


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    status = wirecheck_main(argv)
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err, out.out + out.err
    return status, out.out, out.err


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_profiles(capsys):
    accepted = 0
    for seed in _seeds("input-profile"):
        for spec in registry.all_protocols():
            status, _, err = _run(capsys, ["decode", "--protocol", spec.id, "--profile", str(seed), "--hex", "00"])
            if status == 2:                               # refused: one line naming the file
                assert len(_lines(err)) == 1 and str(seed) in err, (seed.name, spec.id, err)
            else:                                         # read: the decode's own verdict
                assert status in (0, 1) and not err, (seed.name, spec.id, status, err)
                accepted += 1
    assert accepted >= len(registry.all_protocols())      # the real ones are taken


def test_report_inputs(capsys, tmp_path):
    kept = 0
    for seed in _seeds("input-report"):
        out = tmp_path / f"{seed.name}.html"
        status, stdout, err = _run(capsys, ["report", str(seed), "--out", str(out)])
        if status == 2:
            assert len(_lines(err)) == 1 and str(seed) in err and not out.exists(), (seed.name, err)
        else:
            assert status == 0 and not err and out.exists(), (seed.name, status, err)
            kept += 1
    assert kept >= 3                    # the real result file, campaign and analysis at least


@pytest.fixture(scope="module")
def broker():
    spec = registry.get("blipmq")
    server = spec.make_broker("127.0.0.1", 0)
    with ThreadedServer(server):
        yield server.port


def test_fuzz_findings(capsys, tmp_path, broker):
    """Each metadata seed beside the same finding bytes: ``wirecheck replay`` takes what reads
    and leaves the rest aside (a broken earlier connection is said, and none is sent)."""
    from wirecheck.reference_impl.blipmq import codec as blip
    finding = tmp_path / "finding.bin"
    finding.write_bytes(blip.encode(blip.Hello(1)) + blip.encode(blip.Ping(2)))
    for seed in _seeds("input-finding"):
        finding.with_suffix(".json").write_bytes(seed.read_bytes())
        status, stdout, err = _run(capsys, ["replay", str(finding), "--protocol", "blipmq", "--target",
                                            f"127.0.0.1:{broker}", "--timeout", "2"])
        assert status in (0, 1) and len(_lines(err)) <= 1, (seed.name, status, err)
        assert _lines(stdout), seed.name
        try:
            readable = isinstance(json.loads(seed.read_bytes()), dict)
        except ValueError:
            readable = False
        assert readable or "not read" in err, (seed.name, err)      # said, and replayed without it


def test_driver_output(capsys, tmp_path):
    """A driver that prints each seed (and exits 0): check-client judges it, whatever it printed."""
    for seed in _seeds("input-driver-output"):
        driver = f"{sys.executable} -c \"import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())\" {seed}"
        status, stdout, err = _run(capsys, ["check-client", "--protocol", "blipmq", "--scenario", "none",
                                            "--client-command", driver, "--budget", "20"])
        assert status in (0, 1) and not err, (seed.name, status, err)
        assert "none:" in stdout, (seed.name, stdout)
