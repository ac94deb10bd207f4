"""The ``wirecheck`` package's import graph, read from the source (no module is imported;
tools/import_graph.py):

- no import circles, counting every import wherever it stands (inside functions too, and
  under ``if TYPE_CHECKING``): a module that needs another's helpers finds them in a third
  both import;
- the layers of the design (tools/import_graph.py ``LAYERS``, shown on docs/design/layout.md):
  each unit (a folder, or the conformance package's shared modules) imports only the units
  below it; the command line is on top and nothing imports it;
- the layering rule of the design: a protocol's ``codec`` and ``session`` (and the ``state``
  a session keeps) import no I/O module and none of the modules that do I/O (broker, client,
  server);
- no module is over 700 lines;
- tests/ mirrors the package: each of its folders but support/, project/ and soak/ stands for
  a folder of the package (tools/layout_page.py).
"""
from __future__ import annotations

import pytest

from tools.import_graph import GRAPH, LAYERS, MODULES, imports_of, unit, unit_edges
from tools.layout_page import folders_of_tests, mirrored

IO_MODULES = {"asyncio", "socket", "selectors", "subprocess", "threading", "ssl"}
IO_LAYERS = ("broker", "client", "server")
#: The most lines a module may have (STYLE: small modules with one job).
MAX_LINES = 700


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
    ``python -m wirecheck`` entry does), and a command's module imports no other command's
    but through cli/support.py."""
    cli = {m for m in MODULES if m == "wirecheck.cli" or m.startswith("wirecheck.cli.")}
    below = sorted(m for m, deps in GRAPH.items() if m not in cli and deps & cli)
    assert below == ["wirecheck.__main__"], below
    shared = {"wirecheck.cli", "wirecheck.cli.main", "wirecheck.cli.support"}
    crossing = sorted((m, d) for m in cli - shared for d in GRAPH[m] & cli if d != "wirecheck.cli.support")
    assert crossing == [], crossing


def test_every_module_is_in_a_layer():
    assert {unit(m) for m in MODULES} == set(LAYERS)


def test_no_import_runs_against_the_layers():
    against = {f"{a} -> {b}": pairs[:3] for (a, b), pairs in unit_edges().items() if b not in LAYERS[a]}
    assert against == {}


def test_the_layers_have_no_circle():
    assert cycles({a: set(bs) for a, bs in LAYERS.items()}) == []


def test_the_layer_check_catches_an_import_against_it():
    # the reference implementation importing the suite's connections would be against it
    assert "conformance.target" not in LAYERS[unit("wirecheck.reference_impl.blipmq.codec")]
    assert "cli" not in LAYERS[unit("wirecheck.fuzz.live.fuzzer")]
    assert "pipeline" not in LAYERS[unit("wirecheck.conformance.captures.replay_flow")]


def test_no_module_is_over_700_lines():
    lines = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    assert {name: n for name, n in lines.items() if n > MAX_LINES} == {}


def test_the_tests_mirror_the_package():
    folders = folders_of_tests()
    assert len(folders) > 10
    strays = [f.as_posix() for f in folders if mirrored(f) is not None and not (mirrored(f) / "__init__.py").is_file()]
    assert strays == [], "folders of tests/ that stand for no folder of the package"
    loose = sorted(p.name for p in (folders[0].parent).glob("test_*.py"))
    assert loose == [], "test modules at the top of tests/ (they go in the folder of what they test)"


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
