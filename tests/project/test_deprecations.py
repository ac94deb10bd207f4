"""The names that moved keep working (wirecheck/conformance/moved.py, docs/deprecations.md):
each is on the page with its new name; an old ``python -m`` name runs the new module as
``__main__`` after one notice on stderr (the reference drivers for real: the same stdout and
exit status; the corpus builders, which write into the package, with the run caught); an old
import name gives the new module's names with a DeprecationWarning."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wirecheck.conformance import moved

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "deprecations.md").read_text(encoding="utf-8")
RUN_BY_NAME = [old for old in moved.MOVED if old != "wirecheck.conformance.verdicts"]


@pytest.mark.parametrize("old", list(moved.MOVED))
def test_every_moved_name_is_on_the_page(old):
    assert f"`{old}" in PAGE.replace("python -m ", "") and f"`{moved.MOVED[old]}" in PAGE.replace("python -m ", "")


@pytest.mark.parametrize("old", RUN_BY_NAME)
def test_an_old_module_name_runs_the_new_module(old):
    """As ``python -m OLD`` runs it, with the new module's run caught (a builder would write
    into the package)."""
    program = ("import runpy, types, wirecheck.conformance.moved as m\n"
               "m.runpy = types.SimpleNamespace(run_module=lambda name, **kw: print('ran', name, kw['run_name']))\n"
               f"runpy.run_module({old!r}, run_name='__main__', alter_sys=True)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0 and done.stdout == f"ran {moved.MOVED[old]} __main__\n", done
    assert "deprecated" in done.stderr and moved.MOVED[old] in done.stderr, done.stderr


@pytest.mark.parametrize("old", [o for o in RUN_BY_NAME if ".drivers." in o])
def test_a_driver_under_its_old_name_prints_the_same(old):
    new = subprocess.run([sys.executable, "-m", moved.MOVED[old]], capture_output=True, text=True, timeout=60, cwd=ROOT)
    was = subprocess.run([sys.executable, "-m", old], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert new.returncode == was.returncode == 2 and new.stdout == was.stdout, (new, was)
    notice, _, rest = was.stderr.partition("\n")
    assert "deprecated" in notice and moved.MOVED[old] in notice and rest == new.stderr, (was.stderr, new.stderr)


def test_the_old_verdicts_module_gives_the_same_names_with_a_warning():
    sys.modules.pop("wirecheck.conformance.verdicts", None)
    with pytest.warns(DeprecationWarning, match="wirecheck.conformance.report.verdicts"):
        from wirecheck.conformance import verdicts as old
    from wirecheck.conformance.report import verdicts as new
    assert old.Breach is new.Breach and old.FAIL == new.FAIL and old.classify is new.classify
