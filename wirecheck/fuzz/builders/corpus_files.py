"""Writing a seed corpus (the fuzz/make_*_corpus*.py scripts): the folder ends up holding
exactly the seeds given, so a regenerated corpus has no stale files."""
from __future__ import annotations

from pathlib import Path

CORPORA = Path(__file__).resolve().parents[1] / "corpora"


def write_corpus(folder: Path, seeds: dict[str, bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        if old.is_file():
            old.unlink()
    for name, data in seeds.items():
        (folder / name).write_bytes(data)
