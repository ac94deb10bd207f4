"""The ``wirecheck`` package's import graph, read from the source (no module is imported):

- no import circles, counting every import wherever it stands (inside functions too, and
  under ``if TYPE_CHECKING``): subcommand modules never import the command line back, and a
  module that needs another's helpers finds them in a third both import;
- the layering rule of the design: a protocol's ``codec`` and ``session`` (and the ``state``
  a session keeps) import no I/O module and none of the modules that do I/O (broker, client,
  server).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "wirecheck"
IO_MODULES = {"asyncio", "socket", "selectors", "subprocess", "threading", "ssl"}
IO_LAYERS = ("broker", "client", "server")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _known(name: str) -> str | None:
    """The longest prefix of ``name`` that is one of the package's modules."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        candidate = ".".join(parts[:i])
        if candidate in MODULES:
            return candidate
    return None


def imports_of(name: str) -> tuple[set[str], set[str]]:
    """(the package's modules ``name`` imports, the other top-level modules it imports)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    ours: set[str] = set()
    others: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # "from pkg import mod" imports the module pkg.mod when there is one
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            known = _known(target)
            if known is not None:
                ours.add(known)
            elif not target.startswith("wirecheck"):
                others.add(target.split(".")[0])
    ours.discard(name)
    return ours, others


GRAPH = {name: imports_of(name)[0] for name in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checker_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_package_has_no_import_circles():
    assert len(MODULES) > 200
    assert cycles(GRAPH) == []


def test_the_command_line_is_on_top():
    """``wirecheck/cli/`` imports the kit's other packages; none of them imports it (only the
    ``python -m wirecheck`` entry does), and each command module is reached from the entry
    point, never from another command's module but through cli/support.py."""
    cli = {m for m in MODULES if m == "wirecheck.cli" or m.startswith("wirecheck.cli.")}
    below = sorted(m for m, deps in GRAPH.items() if m not in cli and deps & cli)
    assert below == ["wirecheck.__main__"], below
    shared = {"wirecheck.cli", "wirecheck.cli.main", "wirecheck.cli.support"}
    crossing = sorted((m, d) for m in cli - shared for d in GRAPH[m] & cli if d not in ("wirecheck.cli.support",))
    assert crossing == [], crossing


SANS_IO = sorted(m for m in MODULES if m.startswith("wirecheck.reference_impl.")
                 and m.rpartition(".")[2] in ("codec", "session", "state"))


@pytest.mark.parametrize("name", SANS_IO)
def test_codec_and_session_do_no_io(name):
    ours, others = imports_of(name)
    assert not others & IO_MODULES, f"{name} imports {sorted(others & IO_MODULES)}"
    reached = set()
    todo = [name]
    while todo:                          # everything it imports, transitively
        for dep in GRAPH[todo.pop()]:
            if dep not in reached:
                reached.add(dep)
                todo.append(dep)
    io_layers = sorted(m for m in reached if m.rpartition(".")[2] in IO_LAYERS)
    assert not io_layers, f"{name} reaches {io_layers}"


def test_the_layer_check_sees_every_protocol():
    protocols = {m.split(".")[2] for m in SANS_IO}
    assert protocols == {"blipmq", "vibemq", "micromessage2", "rabbitmq_stream", "signalr"}
