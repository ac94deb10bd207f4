"""The documentation's layout page (``design/layout.md``), generated at build time by
tools/gen_docs.py from the package itself: every folder of ``wirecheck/`` with what its
``__init__`` says, its modules with the first sentence of theirs, and the layers
(tools/import_graph.py): which unit may import which, and how many imports run along each
edge today. Nothing here is written by hand, so the page cannot drift from the tree."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from tools.import_graph import LAYERS, MODULES, PACKAGE, unit, unit_edges

#: Folders shown as one line (many modules of one kind; the folder's own text says what they are).
SUMMARIZED = {"wirecheck/conformance/suites": "one folder per protocol: its black-box tests and conftest.py"}


def _doc(path: Path) -> str:
    """The module's docstring, "" without one."""
    try:
        return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    except SyntaxError:
        return ""


def _sentence(doc: str, limit: int = 200) -> str:
    """The first sentence of ``doc``'s first paragraph, on one line (a stop inside
    parentheses does not end it)."""
    para = " ".join(doc.split("\n\n")[0].split())
    depth, end = 0, len(para)
    for i, ch in enumerate(para):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch in ".:;" and depth == 0 and (i + 1 == len(para) or para[i + 1] == " ") \
                and not para[max(0, i - 3):i + 1].endswith(("e.g.", "i.e.")):
            end = i
            break
    text = para[:end]
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _folders() -> list[Path]:
    return sorted({p.parent for p in PACKAGE.rglob("__init__.py")
                   if not any(part.startswith((".", "__pycache__")) for part in p.parts)})


def tree_lines() -> list[str]:
    lines = []
    root = PACKAGE.parent
    for folder in _folders():
        rel = folder.relative_to(root).as_posix()
        if any(rel.startswith(s + "/") for s in SUMMARIZED):
            continue
        depth = rel.count("/")
        lines += [f"{'#' * min(3 + depth, 6)} `{rel}/`", ""]
        if rel in SUMMARIZED:
            lines += [SUMMARIZED[rel] + ": " + ", ".join(
                f"`{p.name}/`" for p in sorted(folder.iterdir()) if (p / "__init__.py").is_file()) + ".", ""]
            continue
        doc = " ".join(_doc(folder / "__init__.py").split("\n\n")[0].split())
        if doc:
            lines += [doc, ""]
        modules = sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")
        entry_points = [p for p in modules if p.name.startswith("fuzz_")]
        if len(entry_points) > 5:         # the atheris entry points: one line for all
            modules = [p for p in modules if p not in entry_points]
        if modules or entry_points:
            lines += ["| module | what it is |", "|---|---|"]
            lines += [f"| `{p.name}` | {_cell(_sentence(_doc(p)))} |" for p in modules]
            if len(entry_points) > 5:
                lines.append(f"| `fuzz_*.py` ({len(entry_points)}) | the atheris entry points, one per target of "
                             "`targets.py` (`python -m wirecheck.fuzz.fuzz_<name>`) |")
            lines.append("")
    return lines


#: The folders of tests/ that are not a mirror of a package folder.
TEST_FOLDERS_OF_THEIR_OWN = ("tests/support", "tests/project", "tests/soak")


def folders_of_tests() -> list[Path]:
    """The folders of tests/ (each a package), in tree order."""
    tests = PACKAGE.parent / "tests"
    return sorted(p.parent for p in tests.rglob("__init__.py")
                  if p.parent != tests and not any(part.startswith((".", "__pycache__", "node_modules"))
                                                    for part in p.relative_to(tests).parts))


def mirrored(folder: Path) -> Path | None:
    """The package folder a folder of tests/ stands for (tests/conformance/target ->
    wirecheck/conformance/target); None for those of :data:`TEST_FOLDERS_OF_THEIR_OWN`."""
    root = PACKAGE.parent
    rel = folder.relative_to(root).as_posix()
    if any(rel == own or rel.startswith(own + "/") for own in TEST_FOLDERS_OF_THEIR_OWN):
        return None
    return PACKAGE / folder.relative_to(root / "tests")


def tests_lines() -> list[str]:
    root = PACKAGE.parent
    lines = ["| folder | what its tests check | test modules |", "|---|---|---|"]
    for folder in folders_of_tests():
        rel = folder.relative_to(root).as_posix()
        doc = _sentence(_doc(folder / "__init__.py"))
        count = len(list(folder.glob("test_*.py")))
        lines.append(f"| `{rel}/` | {_cell(doc)} | {count} |")
    return lines


def layer_lines() -> list[str]:
    edges = unit_edges()
    order = list(LAYERS)                 # lowest first, as tools/import_graph.py states them
    lines = ["| unit | may import | imports today (modules) |", "|---|---|---|"]
    for u in reversed(order):
        allowed = ", ".join(f"`{a}`" for a in order if a in LAYERS[u]) or "—"
        today = ", ".join(f"`{b}` ({len(pairs)})" for b in order for (a, bb), pairs in edges.items()
                          if a == u and bb == b) or "—"
        lines.append(f"| `{u}` | {allowed} | {today} |")
    counts: dict[str, int] = {}
    for m in MODULES:
        counts[unit(m)] = counts.get(unit(m), 0) + 1
    return lines + ["", "Modules per unit: " + ", ".join(f"`{u}` {counts.get(u, 0)}" for u in reversed(order)) + "."]


def layout_page() -> str:
    lines = ["# Layout and layers (generated)", "",
             "*Generated from the package at build time (tools/layout_page.py): each folder's "
             "`__init__` text, each module's first sentence, and the layers that "
             "`tests/project/test_import_layers.py` checks (tools/import_graph.py). "
             "[Layering and layout](index.md) says why it is built this way.*", "",
             "## Layers", "",
             "Highest first. A unit imports only the units it may import; the test fails on any "
             "import against this, counting imports inside functions too. The command line is on "
             "top and nothing below imports it; a protocol's reference implementation knows only "
             "the core.", ""]
    lines += layer_lines()
    lines += ["", "## The tree", ""]
    lines += tree_lines()
    lines += ["", "## The tests", "",
              "`tests/` mirrors the package: the tests of `wirecheck/conformance/target/` are in "
              "`tests/conformance/target/`, and so on. Three folders are of their own: "
              + ", ".join(f"`{f}/`" for f in TEST_FOLDERS_OF_THEIR_OWN) + ".", ""]
    lines += tests_lines()
    return "\n".join(lines).rstrip("\n") + "\n"
