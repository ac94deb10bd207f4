"""The documentation site's generated pages, and the MkDocs hook that adds them at build time.

Pages (paths inside docs/; none of them is a file in the repository):

- ``cli.md``: every ``wirecheck`` subcommand from ``wirecheck.cli.build_parser()``,
  and the pytest plugin's options from ``wirecheck.conformance.plugin.pytest_addoption``;
  one anchor per subcommand (``#wirecheck-serve``).
- ``requirements/<protocol>.md``: every ID of the protocol's catalogue
  (``wirecheck/conformance/requirements/*.py``) with its level, section, source, quoted sentence,
  level note, and the suite tests whose ``@pytest.mark.requirement`` names it, or the reason it
  is untestable; one anchor per ID, the ID in lower case (``#blip-pub-012``), which the HTML
  report links to.
- ``benchmark-results.md``: the benchmark tables, from the newest run recorded under
  ``benchmarks/recorded/`` and, when this checkout has one, ``reports/bench.json`` (the latest
  ``make bench`` here, git-ignored).
- ``matrix.md``: the real implementations' matrix, from the newest ``matrix/recorded/*.json``
  (tools/matrix_page.py).
- ``design/layout.md``: every folder and module of the package with its own first sentence, and
  the layers tests/project/test_import_layers.py checks (tools/layout_page.py).

``mkdocs.yml`` names this file under ``hooks:``; MkDocs calls :func:`on_files`, which adds the
pages as generated files, so they are made from the code of the build and never go stale.
``python tools/gen_docs.py --out DIR`` writes them as files, to read or diff.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import pkgutil
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _repo_on_path() -> None:
    """benchmarks/ (and, without an install, the kit) import from the checkout. MkDocs loads a
    hook with its folder on the path and takes that back afterwards, so this runs at build."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


_repo_on_path()

#: Width of the usage lines in the CLI reference (argparse would take the terminal's).
USAGE_WIDTH = 96
RECORDED_BENCH = ROOT / "benchmarks" / "recorded"
LATEST_BENCH = ROOT / "reports" / "bench.json"


# -- Markdown text -----------------------------------------------------------------------------

_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
_ESCAPE = {"\\": "\\\\", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]", "{": "\\{", "}": "\\}",
           "#": "\\#", "|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;", "~": "\\~"}


def md(text: str) -> str:
    """Plain text (a summary, a quoted sentence, a help string) as Markdown that shows exactly
    that text: whitespace collapsed, markup escaped, code spans kept (a ``|`` in one is escaped
    so that a table cell holds it)."""
    text = " ".join(str(text).split())
    out, last = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append("".join(_ESCAPE.get(c, c) for c in text[last:m.start()]))
        out.append(m.group(0).replace("|", "\\|"))
        last = m.end()
    out.append("".join(_ESCAPE.get(c, c) for c in text[last:]))
    return "".join(out)


def quote(text: str) -> str:
    """A sentence quoted from a protocol document: as :func:`md`, but the document's own bold
    (``**word**``, as the Markdown documents write it) shows as bold."""
    return re.sub(r"\\\*\\\*(.+?)\\\*\\\*", r"**\1**", md(text))


def anchor(rid: str) -> str:
    """A requirement ID's anchor on its protocol's page (the HTML report builds the same)."""
    return rid.lower()


def _first_paragraph(doc: str | None, limit: int = 220) -> str:
    if not doc:
        return ""
    para = " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())
    return para if len(para) <= limit else para[:limit].rsplit(" ", 1)[0] + " …"


# -- CLI reference -----------------------------------------------------------------------------

def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in action._choices_actions}
    return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]


def _help_text(action, prog: str) -> str:
    text = action.help or ""
    if "%" in text:
        try:
            text = text % dict(vars(action), prog=prog)
        except (KeyError, TypeError, ValueError):
            pass
    return text


def _default(action) -> str:
    d = action.default
    if d is None or d is argparse.SUPPRESS or isinstance(d, bool) or d == [] or action.required:
        return ""
    return f"`{d}`"


def _argument_row(names: list[str], metavar: str, default: str, help_text: str, required: bool) -> str:
    flags = ", ".join(f"`{n}`" for n in names)
    arg = f"`{metavar}`" if metavar else ""
    need = "**required**. " if required else ""
    return f"| {flags} | {arg} | {default} | {need}{md(help_text)} |"


def _metavar(action) -> str:
    if action.nargs == 0:
        return ""
    if action.metavar:
        return str(action.metavar)
    if action.choices and not isinstance(action.choices, dict):
        return "{" + ",".join(map(str, action.choices)) + "}"
    return action.dest.upper() if action.option_strings else action.dest


def _subcommand_section(name: str, help_text: str, sub: argparse.ArgumentParser) -> list[str]:
    sub.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=USAGE_WIDTH)
    usage = sub.format_usage().strip().removeprefix("usage: ")
    lines = [f"## wirecheck {name} {{ #wirecheck-{name} }}", "", md(help_text[:1].upper() + help_text[1:]) + ".",
             "", "```text", usage, "```", "",
             "| option | argument | default | meaning |", "|---|---|---|---|"]
    for action in sub._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        names = action.option_strings or [action.dest]
        text = _help_text(action, sub.prog)
        if action.dest == "protocol" and not text:
            text = "one of: " + ", ".join(_protocol_ids())
        lines.append(_argument_row(names, _metavar(action), _default(action), text,
                                   bool(action.required and action.option_strings)))
    return lines + [""]


def _protocol_ids() -> list[str]:
    from wirecheck.reference_impl.core import registry
    return [s.id for s in registry.all_protocols()]


class _OptionRecorder:
    """Stands in for pytest's option parser: records what ``pytest_addoption`` adds."""

    def __init__(self):
        self.options: list[tuple[tuple, dict]] = []

    def getgroup(self, *args, **kwargs):
        return self

    def addoption(self, *names, **attrs):
        self.options.append((names, attrs))


def _pytest_section() -> list[str]:
    from wirecheck.conformance import plugin
    rec = _OptionRecorder()
    plugin.pytest_addoption(rec)
    lines = ["## pytest options { #pytest-options }", "",
             "The kit's pytest plugin (entry point `pytest11`) adds these options to any `pytest` "
             "where the kit is installed; `pytest --protocol P` runs that protocol's black-box suite. "
             "`wirecheck check` passes its own options on to them.", "",
             "| option | argument | default | meaning |", "|---|---|---|---|"]
    for names, attrs in rec.options:
        default = attrs.get("default")
        shown = "" if default is None or isinstance(default, bool) else f"`{default}`"
        text = attrs.get("help", "")
        if "%(default)s" in text:
            text = text.replace("%(default)s", str(default))
        metavar = attrs.get("metavar") or ""
        lines.append(_argument_row(list(names), metavar, shown, text, False))
    return lines + [""]


def cli_page() -> str:
    from wirecheck import cli
    parser = cli.build_parser()
    subs = _subcommands(parser)
    lines = ["# Command line reference", "",
             "*Generated at build time from the argparse parsers "
             "(`wirecheck.cli.build_parser()`) and the pytest plugin's options: "
             "what is here is what the installed command accepts.*", "",
             "Exit status, for every subcommand that judges something: 0 conformant (or nothing "
             "found), 1 not conformant (a MUST broken, a mismatch, a finding), 2 the kit could not "
             "judge (a usage error, a harness error, a missing extra). `python -m wirecheck` is the "
             "same command. Under `pytest --protocol P` a usage error is pytest's own exit 4.", "",
             "| subcommand | what it does |", "|---|---|"]
    lines += [f"| [`wirecheck {n}`](#wirecheck-{n}) | {md(h)} |" for n, h, _ in subs]
    lines += ["| [`pytest --protocol P`](#pytest-options) | the black-box suite, from any directory |", ""]
    for name, help_text, sub in subs:
        lines += _subcommand_section(name, help_text, sub)
    lines += _pytest_section()
    return "\n".join(lines)


def subcommand_names() -> list[str]:
    from wirecheck import cli
    return [n for n, _, _ in _subcommands(cli.build_parser())]


# -- requirement catalogues --------------------------------------------------------------------

def suite_tests(spec) -> list[tuple[str, str, list[str], list[str]]]:
    """``(test, first docstring paragraph, IDs its marks name, IDs it adds under some profiles)``
    of every test function and class of the protocol's suite: the marks as
    tests/conformance/requirements/test_requirement_coverage.py reads them, plus ``request.node.add_marker(
    pytest.mark.requirement(...))`` calls, which a test makes when its profile enables a check."""
    package = importlib.import_module(spec.suite)
    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.name.startswith("test_"):
            continue
        module = importlib.import_module(f"{spec.suite}.{info.name}")
        added = _added_marks(inspect.getsource(module))
        for name, obj in vars(module).items():
            if not name.startswith("test") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            ids = [i for m in getattr(obj, "pytestmark", []) if m.name == "requirement" for i in m.args]
            found.append((f"{info.name}.py::{name}", _first_paragraph(obj.__doc__), ids, added.get(name, [])))
    return found


#: Whom a requirement's sentence binds (Requirement.binds), as the page says it.
_PARTY = {"server": "server", "client": "client", "both": "both peers"}


def _added_marks(source: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for call in ast.walk(node):
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "add_marker" and call.args and isinstance(call.args[0], ast.Call)
                    and isinstance(call.args[0].func, ast.Attribute) and call.args[0].func.attr == "requirement"):
                out.setdefault(node.name, []).extend(
                    a.value for a in call.args[0].args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return out


_SOURCE = {"document": "the document", "SPEC_NOTES": "SPEC_NOTES (what the real implementation does)",
           "reading": "the kit's reading (the document is silent; never a MUST)"}


def requirement_page(spec) -> str:
    from wirecheck.conformance.requirements import catalogue
    cat = catalogue(spec.requirements)
    tests = suite_tests(spec)
    checked: dict[str, list[tuple[str, str, bool]]] = {}
    for name, doc, ids, added in tests:
        for rid in ids:
            checked.setdefault(rid, []).append((name, doc, False))
        for rid in added:
            checked.setdefault(rid, []).append((name, doc, True))
    levels = {lv: sum(1 for r in cat.values() if r.level == lv) for lv in ("MUST", "SHOULD", "MAY")}
    untestable = sum(1 for r in cat.values() if r.untestable)
    suite_path = spec.suite.replace(".", "/")
    module_path = spec.requirements.replace(".", "/") + ".py"
    lines = [f"# {spec.title} requirements", "",
             f"*Generated at build time from `{module_path}` and the `@pytest.mark.requirement` marks "
             f"of `{suite_path}/`.*", "",
             f"Document: `{spec.document}`. {len(cat)} requirements: {levels['MUST']} MUST, "
             f"{levels['SHOULD']} SHOULD, {levels['MAY']} MAY; {untestable} untestable over the wire "
             f"(checked by the project's own tests instead). How the kit reads the document and its "
             f"errata: [{spec.title}](../protocols/{spec.id}.md); what the columns mean: "
             "[Requirements](index.md).", "",
             "| ID | level | section | requirement | tests |", "|---|---|---|---|---|"]
    for rid, req in cat.items():
        n = len(checked.get(rid, []))
        cell = str(n) if n else ("untestable" if req.untestable else "0")
        lines.append(f"| [{rid}](#{anchor(rid)}) | {req.level} | {md(req.section)} | {md(req.summary)} | {cell} |")
    lines.append("")
    for rid, req in cat.items():
        lines += [f"## {rid} {{ #{anchor(rid)} }}", "",
                  f"**{req.level}** · {md(req.section)} · from {_SOURCE.get(req.source, req.source)}"
                  + (f" · binds the {_PARTY[req.binds]}" if req.binds else ""), "",
                  md(req.summary), ""]
        if req.quote:
            lines += [f"> {quote(req.quote)}", ""]
        if req.level_note:
            lines += [f"*Level:* {md(req.level_note)}", ""]
        if req.untestable:
            lines += [f"*Untestable over the wire:* {md(req.untestable)}", ""]
        by = checked.get(rid, [])
        if by:
            lines += ["Checked by:", ""]
            for name, doc, conditional in by:
                when = " *(when the profile enables the check)*" if conditional else ""
                lines.append(f"- `{name}`{when}" + (f": {md(doc)}" if doc else ""))
            lines.append("")
    return "\n".join(lines)


def requirement_ids() -> dict[str, list[str]]:
    """Protocol id -> every requirement ID of its catalogue."""
    from wirecheck.conformance.requirements import catalogue
    from wirecheck.reference_impl.core import registry
    return {s.id: list(catalogue(s.requirements)) for s in registry.all_protocols()}


# -- benchmarks --------------------------------------------------------------------------------

_BENCH_GROUPS = [("blipmq.", "BlipMQ decoding and split reads"), ("scapy.", "BlipMQ: the codec against scapy"),
                 ("rmqs.broker.", "RabbitMQ Stream broker against a real RabbitMQ"),
                 ("rmqs.", "RabbitMQ Stream decoding (against rstream and scapy) and split reads"),
                 ("broker.", "Reference brokers with their reference clients"),
                 ("signalr.", "SignalR decoding (against pysignalr and scapy) and split reads"),
                 ("vibemq.", "VibeMQ decoding and split reads"), ("mm2.", "Micromessage2 decoding and split reads"),
                 ("report.", "Report generation"), ("replay.", "Replay"), ("suite.", "Suite speed"),
                 ("fuzz.", "Fuzzing: steady exec/s per atheris target"), ("pipeline.", "Spark pipeline")]


def _bench_tables(report: dict) -> list[str]:
    from benchmarks.run import _num          # the formatting `make bench` prints its table with
    m = report.get("machine", {})
    calib = m.get("calibration_us")
    lines = [f"Machine: {md(m.get('cpu', '?'))}, {m.get('cores', '?')} cores, Python {m.get('python', '?')} "
             f"({m.get('implementation', '?')}), {md(m.get('platform', '?'))}; date {m.get('date', '?')}; "
             + (f"calibration {calib} µs (`benchmarks/calibration.py`: lower is faster); " if calib else "")
             + f"{len(report.get('results', []))} results"
             + (f" in {report['seconds']:.0f} s" if report.get("seconds") else "")
             + ("; `--quick` run (small inputs)" if report.get("quick") else "") + ".", ""]
    if report.get("recorded"):
        lines += [f"*{md(report['recorded'])}*", ""]
    groups: dict[str, list[dict]] = {}
    for r in report.get("results", []):
        prefix = next((p for p, _ in _BENCH_GROUPS if r["name"].startswith(p)), "")
        groups.setdefault(prefix, []).append(r)
    titles = dict(_BENCH_GROUPS) | {"": "Other"}
    for prefix in [p for p, _ in _BENCH_GROUPS] + [""]:
        if prefix not in groups:
            continue
        lines += [f"### {titles[prefix]}", "", "| benchmark | value | unit | peer | ratio | goal | met |",
                  "|---|---:|---|---:|---:|---|---|"]
        for r in groups[prefix]:
            met = "" if r.get("met") is None else _num(r["met"])
            lines.append(f"| {md(r['name'])} | {_num(r.get('value'))} | {md(r.get('unit') or '')} | "
                         f"{_num(r.get('peer'))} | {_num(r.get('ratio'))} | {md(r.get('goal') or '')} | {met} |")
        lines.append("")
    return lines


def bench_page(recorded_dir: Path = RECORDED_BENCH, latest: Path = LATEST_BENCH) -> str:
    recorded = sorted(recorded_dir.glob("*.json"))
    lines = ["# Benchmark tables", "",
             "*Generated at build time from the JSON that `make bench` writes "
             "(`benchmarks/run.py`: `{machine, results: [{name, value, unit, peer, ratio, goal, met}]}`).* "
             "`peer` is what a figure is compared with (the whole-buffer figure, the 1× time, the codec's "
             "frames/s, a real implementation), `ratio` the comparison, `goal` the target for that ratio, "
             "`met` whether it is reached. What the figures mean, and why some goals are not met: "
             "[Benchmarks](benchmarks.md).", ""]
    if latest.is_file():
        lines += ["## This checkout's latest run", "",
                  "From `reports/bench.json` (git-ignored), written by the last `make bench` here.", ""]
        lines += _bench_tables(json.loads(latest.read_text(encoding="utf-8")))
    else:
        lines += ["## This checkout's latest run", "",
                  "None: `reports/bench.json` is not there (it is git-ignored, and written by `make bench`, "
                  "about seven minutes on two cores). Build the site again after `make bench` and its "
                  "tables appear here, above the recorded run.", ""]
    if recorded:
        newest = recorded[-1]
        lines += [f"## Recorded run ({newest.stem})", "",
                  f"From `benchmarks/recorded/{newest.name}`, the run the [Benchmarks](benchmarks.md) "
                  "page discusses. To record a new one, copy `reports/bench.json` there under its date.", ""]
        lines += _bench_tables(json.loads(newest.read_text(encoding="utf-8")))
    return "\n".join(lines)


# -- the pages, the hook, the command line ---------------------------------------------------

def pages() -> dict[str, str]:
    """docs-relative path -> Markdown of every generated page."""
    _repo_on_path()
    from wirecheck.reference_impl.core import registry
    from tools.layout_page import layout_page
    from tools.matrix_page import matrix_page
    out = {"cli.md": cli_page(), "benchmark-results.md": bench_page(), "matrix.md": matrix_page(),
           "design/layout.md": layout_page()}
    for spec in registry.all_protocols():
        out[f"requirements/{spec.id}.md"] = requirement_page(spec)
    return out


def on_files(files, config):
    """MkDocs hook: add the generated pages to the build."""
    from mkdocs.structure.files import File
    for path, content in pages().items():
        if files.get_file_from_path(path) is not None:
            raise RuntimeError(f"docs/{path} is generated by tools/gen_docs.py: remove the file")
        files.append(File.generated(config, path, content=content))
    return files


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="write the documentation site's generated pages as files")
    p.add_argument("--out", required=True, help="directory to write them into (not docs/: the build makes them)")
    args = p.parse_args(argv)
    out = Path(args.out)
    if out.resolve() == (ROOT / "docs").resolve():
        p.error("the pages are made at build time; write them elsewhere to read them")
    for path, content in pages().items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content + "\n", encoding="utf-8")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
