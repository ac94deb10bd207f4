"""Replay the fuzz corpora and crashers through the atheris targets as plain tests (STYLE.md
point 8: CI keeps every crasher fixed), and run each target briefly under atheris itself."""
from pathlib import Path

import pytest

from conformance.strategies.invariants import decode_whole
from fuzz import fuzz_blipmq_decoder, fuzz_blipmq_session
from fuzz.run_smoke import TARGETS, run_target

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
ENTRY_POINTS = {"blipmq_decoder": fuzz_blipmq_decoder.TestOneInput,
                "blipmq_session": fuzz_blipmq_session.TestOneInput}


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


SEEDS = _files(FUZZ / "corpora" / "blipmq")
CRASHERS = _files(FUZZ / "crashers" / "blipmq")


def test_every_target_is_replayed():
    assert set(ENTRY_POINTS) == set(TARGETS)


def test_seed_corpus_present():
    assert len(SEEDS) >= 9, f"seed corpus {FUZZ / 'corpora' / 'blipmq'} is incomplete"


@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.name)
def test_seeds_are_valid_streams(seed):
    result = decode_whole(seed.read_bytes())
    assert result.ok and result.frames, f"{seed.name}: {result}"


@pytest.mark.parametrize("target", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("sample", SEEDS + CRASHERS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_replay(target, sample):
    ENTRY_POINTS[target](sample.read_bytes())


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_atheris_runs_clean(target, tmp_path):
    pytest.importorskip("atheris")
    result = run_target(TARGETS[target], runs=2000, artifacts=tmp_path / "artifacts", capture=True)
    tail = "\n".join(result.stderr.splitlines()[-40:])
    assert result.returncode == 0, f"{target} exited {result.returncode}:\n{tail}"
    assert "Done 2000 runs" in result.stderr, tail
    assert not any((tmp_path / "artifacts").iterdir()), "crash artifacts written"
