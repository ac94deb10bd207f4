"""Files the kit writes for a user to read later (result files, reports, summaries, findings'
metadata) are written whole or not at all: to a temporary file beside the target, then renamed
over it. A run killed while writing (SIGKILL, a full disk) leaves the previous file or none,
never the first half of a JSON document that ``wirecheck report`` would then refuse."""
from __future__ import annotations

import json
import os
import tempfile


def write_text(path: str | os.PathLike, text: str) -> None:
    """``text`` (UTF-8) into ``path``, atomically (see the module doc)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_json(path: str | os.PathLike, doc, indent: int | None = 1, sort_keys: bool = False) -> None:
    """``doc`` as JSON (and a final newline) into ``path``, atomically."""
    write_text(path, json.dumps(doc, indent=indent, sort_keys=sort_keys) + "\n")
