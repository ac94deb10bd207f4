"""Broken captures never lose what can be read (conformance/captures/pcapfile.py ``tolerant``): among good
ones, a capture cut inside a record (as a killed tcpdump leaves it), one corrupt in the middle
and a file that is no capture. ``analyze`` (plain and on Spark), ``decode`` and ``replay`` take
what precedes the break, say in one line per file where and what was lost (and in the summary),
and go on with the other inputs; exit 2 only when an input could not be read at all."""
from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from wirecheck.conformance.captures.pcapfile import CaptureFormatError, PcapReader
from wirecheck.pipeline.local import analyze as analyze_plain

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "captures" / "blipmq" / "suite.pcap.gz"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("damaged")
    return (folder, *damaged_captures(folder))


def damaged_captures(folder: Path) -> tuple[Path, Path, Path, Path]:
    """A whole capture, one cut inside a record, one with a corrupt record half-way, and a
    file that is no capture (also used by tests/pipeline/test_spark_cluster.py)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = gzip.open(SUITE).read()
    good = folder / "good.pcap"
    good.write_bytes(data)
    cut = folder / "cut.pcap"
    cut.write_bytes(data[:len(data) // 2 + 7])
    # a record header claiming 1 GiB half-way: nothing after it can be trusted
    corrupt = bytearray(data)
    at = _record_at(data, len(data) // 2)
    corrupt[at + 8:at + 12] = struct.pack("<I", 1 << 30)
    middle = folder / "corrupt.pcap"
    middle.write_bytes(bytes(corrupt))
    junk = folder / "notes.pcap"
    junk.write_text("not a capture\n")
    return good, cut, middle, junk


def _record_at(data: bytes, past: int) -> int:
    """The offset of the first record header at or after ``past`` (classic little-endian pcap)."""
    pos = 24
    while pos < past:
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
    return pos


def test_the_reader_keeps_what_precedes_the_break(inputs):
    _folder, good, cut, middle, _junk = inputs
    whole = list(PcapReader(str(good)))
    for path, what in ((cut, "ends inside a record"), (middle, "record of 1073741824 bytes")):
        reader = PcapReader(str(path), tolerant=True)
        got = list(reader)
        assert 0 < len(got) < len(whole) and got == whole[:len(got)] and what in reader.damage, reader.damage
        with pytest.raises(CaptureFormatError, match=what):     # not tolerant: as before
            list(PcapReader(str(path)))


def test_plain_analysis_goes_on_with_the_other_inputs(inputs):
    _folder, good, cut, middle, junk = inputs
    tables = analyze_plain([str(good), str(cut), str(middle), str(junk)], "blipmq")
    damaged = {Path(d["file"]).name: d for d in tables["damaged"]}
    assert set(damaged) == {"cut.pcap", "corrupt.pcap", "notes.pcap"}, damaged
    assert damaged["notes.pcap"]["whole"] and not damaged["cut.pcap"]["whole"]
    alone = analyze_plain([str(good)], "blipmq")
    assert len(tables["frames"]) > len(alone["frames"])           # the broken files' readable part too


def test_analyze_on_spark_says_one_line_per_damaged_file(inputs, tmp_path):
    _folder, good, cut, middle, junk = inputs
    got = subprocess.run([sys.executable, "-m", "wirecheck", "analyze", str(good), str(cut), str(middle), str(junk),
                          "--out", str(tmp_path / "out"), "--master", "local[2]", "--no-progress"],
                         capture_output=True, text=True, timeout=600)
    lines = [line for line in got.stderr.splitlines() if line.startswith("wirecheck analyze:")]
    assert got.returncode == 2, got.stderr[-3000:]                 # notes.pcap could not be read at all
    assert len(lines) == 3 and "Traceback" not in got.stderr, got.stderr[-3000:]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert {Path(d["file"]).name for d in summary["damaged"]} == {"cut.pcap", "corrupt.pcap", "notes.pcap"}
    assert summary["rows"]["frames"] > 0
    # without the file that is no capture: the usual verdict (violations: the suite's capture has them)
    got = subprocess.run([sys.executable, "-m", "wirecheck", "analyze", str(good), str(cut),
                          "--out", str(tmp_path / "out2"), "--master", "local[2]", "--no-progress"],
                         capture_output=True, text=True, timeout=600)
    assert got.returncode == 1, got.stderr[-3000:]


def test_decode_prints_what_came_before_the_cut(inputs):
    _folder, _good, cut, _middle, _junk = inputs
    got = subprocess.run([sys.executable, "-m", "wirecheck", "decode", "--protocol", "blipmq", "--pcap", str(cut)],
                         capture_output=True, text=True, timeout=300)
    assert got.stdout.count("\n") > 100 and got.returncode == 1, got.stderr   # the suite's malformed frames
    assert got.stderr.strip().endswith("read up to there, the rest is lost"), got.stderr


def test_replay_replays_up_to_the_cut(inputs, tmp_path):
    from wirecheck.reference_impl.core import registry
    from wirecheck.reference_impl.core.server import ThreadedServer
    _folder, _good, cut, _middle, _junk = inputs
    report = tmp_path / "r.json"
    with ThreadedServer(registry.get("blipmq").make_broker("127.0.0.1", 0)) as target:
        got = subprocess.run([sys.executable, "-m", "wirecheck", "replay", str(cut), "--protocol", "blipmq",
                              "--target", f"127.0.0.1:{target.address[1]}", "--report", str(report)],
                             capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-2000:]
    assert got.stderr.strip().endswith("replayed up to there, the rest is lost"), got.stderr
    doc = json.loads(report.read_text())
    assert doc["damaged"][0]["error"].startswith("file ends inside a record") and len(doc["tests"]) > 10


def test_files_for_users_are_written_whole(tmp_path, monkeypatch):
    """A result file, report or summary is written to a temporary file and renamed: a run killed
    while writing leaves the previous file (here: a write that fails before the rename), never
    half of it, and no temporary file."""
    from wirecheck.conformance import atomic_file
    path = tmp_path / "r.json"
    atomic_file.write_json(path, {"tests": [1, 2, 3]})
    assert json.loads(path.read_text()) == {"tests": [1, 2, 3]}
    written = []

    def no_rename(src, dst):
        written.append(Path(src).read_text())
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(atomic_file.os, "replace", no_rename)
    with pytest.raises(OSError):
        atomic_file.write_json(path, {"tests": list(range(1000))})
    assert json.loads(written[0]) == {"tests": list(range(1000))}       # the whole text went to the temporary file
    assert json.loads(path.read_text()) == {"tests": [1, 2, 3]}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
