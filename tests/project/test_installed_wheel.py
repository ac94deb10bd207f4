"""The kit as an implementer installs it: the wheel, built from this checkout, in a fresh
virtualenv in a temporary directory outside the repository, used from an empty directory.

- the wheel's top level is ``wirecheck/`` and its dist-info, nothing else; PyPI's ``fuzz`` and
  ``pipeline`` packages install beside it and both stay importable;
- examples/github-actions.yml runs as written (the reference broker, run by the kit from that
  virtualenv with --target-command, standing in for "your server"), and its ``pytest
  --protocol blipmq`` gives the same verdicts as ``wirecheck check``, every test of the suite
  passing;
- against a broker with a planted defect, pytest exits 1 and names the requirement;
- a command whose extra is missing names the extra and exits 2.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.faulty_targets import WrongPongId, broker_with
from wirecheck.reference_impl.core.server import ThreadedServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "github-actions.yml"
#: pip's own bound on one install (the dependencies come from the package index).
INSTALL_TIMEOUT = 600


def _source_copy(dest: Path) -> Path:
    """The checkout's tracked files (what a clean clone holds), so the build leaves nothing in
    the repository."""
    dest.mkdir()
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in listed.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the wheel, the virtualenv's bin directory, an empty working directory)."""
    base = tmp_path_factory.mktemp("wheel")
    assert ROOT not in base.parents
    src = _source_copy(base / "src")
    dist = base / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)],
                   check=True, timeout=INSTALL_TIMEOUT, capture_output=True)
    (wheel,) = dist.glob("wirecheck-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bin_dir = venv / "bin"
    subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)],
                   check=True, timeout=INSTALL_TIMEOUT, capture_output=True)
    work = base / "work"
    work.mkdir()
    return wheel, bin_dir, work


def _env(bin_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(bin_dir.parent)
    return env


def _run(bin_dir: Path, cwd: Path, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), cwd=cwd, env=_env(bin_dir), capture_output=True, text=True,
                          timeout=timeout)


def test_the_wheel_holds_one_top_level_package(installed):
    wheel, _bin, _work = installed
    with zipfile.ZipFile(wheel) as zf:
        tops = {name.split("/", 1)[0] for name in zf.namelist()}
        names = set(zf.namelist())
    version = wheel.name.split("-")[1]
    assert tops == {"wirecheck", f"wirecheck-{version}.dist-info"}, tops
    # the suites, the seed corpora and the pipeline's settings travel in it
    assert "wirecheck/conformance/suites/blipmq/test_handshake.py" in names
    assert "wirecheck/conformance/suites/pytest.ini" in names
    assert any(n.startswith("wirecheck/fuzz/corpora/blipmq/") for n in names)
    assert "wirecheck/pipeline/log4j2.properties" in names


def test_pypi_packages_of_the_old_names_install_beside_it(installed):
    _wheel, bin_dir, work = installed
    got = _run(bin_dir, work, "python", "-m", "pip", "install", "-q", "fuzz==0.1.1", "pipeline==0.1.0",
               timeout=INSTALL_TIMEOUT)
    assert got.returncode == 0, got.stderr
    probe = ("import fuzz, fuzz.values, pipeline, pipeline.pipeline, wirecheck.fuzz.targets, "
             "wirecheck.pipeline.inputs, wirecheck.conformance.plugin\n"
             "print(fuzz.__file__, pipeline.__file__, wirecheck.fuzz.targets.__file__)")
    got = _run(bin_dir, work, "python", "-c", probe)
    assert got.returncode == 0, got.stderr
    theirs_fuzz, theirs_pipeline, ours = got.stdout.split()
    assert "/site-packages/fuzz/" in theirs_fuzz and "/site-packages/pipeline/" in theirs_pipeline
    assert "/site-packages/wirecheck/fuzz/" in ours


def _example_steps() -> list[tuple[str, str]]:
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(EXAMPLE.read_text())
    (job,) = doc["jobs"].values()
    return [(s["name"], s["run"]) for s in job["steps"] if "run" in s]


def _suite_size(protocol: str) -> int:
    """How many tests the checkout's suite has for ``protocol``."""
    got = subprocess.run([sys.executable, "-m", "pytest", "--protocol", protocol, "--co", "-q",
                          "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    last = got.stdout.strip().splitlines()[-1]
    return int(last.split()[0])


def test_the_ci_example_runs_as_written_and_matches_wirecheck_check(installed):
    wheel, bin_dir, work = installed
    steps = _example_steps()
    assert [name for name, _ in steps] == ["Install wirecheck", "Conformance suite"]
    script = ["set -euo pipefail"]
    for _name, run in steps:
        script.append(run.replace("pip install wirecheck", f"pip install -q {wheel}").replace("-n auto", "-n 2"))
    got = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=_env(bin_dir), capture_output=True,
                         text=True, timeout=900)
    assert got.returncode == 0, got.stdout[-4000:] + got.stderr[-2000:]
    example = json.loads((work / "wirecheck.json").read_text())
    assert (work / "wirecheck.html").stat().st_size > 10_000 and (work / "wirecheck.xml").exists()
    # the same server, judged by `wirecheck check` (which starts it the same way)
    command = steps[-1][1].split('--target-command "', 1)[1].split('"', 1)[0]
    check = _run(bin_dir, work, "wirecheck", "check", "--protocol", "blipmq", "--target-command", command,
                 "-n", "2", "--report", "check.json", timeout=900)
    assert check.returncode == 0, check.stdout[-4000:] + check.stderr[-2000:]
    checked = json.loads((work / "check.json").read_text())
    counts = example["summary"]["blipmq"]["counts"]
    assert counts == checked["summary"]["blipmq"]["counts"]
    assert counts == {"PASS": _suite_size("blipmq")}, counts
    assert sorted(t["nodeid"] for t in example["tests"]) == sorted(t["nodeid"] for t in checked["tests"])


def test_a_planted_defect_fails_the_gate(installed):
    _wheel, bin_dir, work = installed
    server = ThreadedServer(broker_with(WrongPongId)).start()
    try:
        host, port = server.address[:2]
        got = _run(bin_dir, work, "pytest", "--target", f"{host}:{port}", "--protocol", "blipmq", "-q",
                   "-p", "no:cacheprovider", "-k", "ping", timeout=600)
    finally:
        server.stop()
    assert got.returncode == 1, got.stdout[-4000:]
    not_met = [line for line in got.stdout.splitlines() if line.strip().startswith("not met:")]
    assert not_met and "BLIP-PING-001" in not_met[0], got.stdout[-4000:]


def test_the_module_runs_as_the_command_and_missing_extras_are_named(installed):
    _wheel, bin_dir, work = installed
    got = _run(bin_dir, work, "python", "-m", "wirecheck", "protocols", "--json")
    assert got.returncode == 0, got.stderr
    assert {p["id"] for p in json.loads(got.stdout)} == {
        "blipmq", "vibemq", "micromessage2", "rabbitmq-stream", "signalr"}
    # the plain install is the CI gate's: atheris and pyspark are extras
    fuzz = _run(bin_dir, work, "wirecheck", "fuzz", "--protocol", "blipmq", "--decoder", "--time", "1")
    assert fuzz.returncode == 2 and "pip install 'wirecheck[fuzz]'" in fuzz.stderr, fuzz.stderr
    analyze = _run(bin_dir, work, "wirecheck", "analyze", str(work), "--out", str(work / "out"))
    assert analyze.returncode == 2 and "pip install 'wirecheck[spark]'" in analyze.stderr, analyze.stderr
    assert not (work / "out").exists()
    # without --protocol the plugin leaves a directory's own tests alone
    own = work / "own-tests"
    own.mkdir()
    (own / "test_mine.py").write_text("def test_mine():\n    assert True\n")
    mine = _run(bin_dir, own, "pytest", "-q", "-p", "no:cacheprovider")
    assert mine.returncode == 0 and "1 passed" in mine.stdout, mine.stdout
