"""The documentation site: it builds with ``mkdocs build --strict`` (no broken link or anchor, no
page left out of the nav), its generated pages cover every ``wirecheck`` subcommand and every
requirement ID of the five catalogues, the HTML report's requirement links land on those
anchors, and README.md stays a front door of at most 200 lines."""
import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from wirecheck.conformance.report import html as report_html
from wirecheck.cli import build_parser
from wirecheck.cli import main as wirecheck_main
from wirecheck.conformance.requirements import catalogue, catalogue_data
from wirecheck.conformance.report.results import Run
from wirecheck.reference_impl.core import registry

ROOT = Path(__file__).resolve().parents[2]
README_LINES = 200


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                            str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-5000:]
    return out


def _ids(page: Path) -> set[str]:
    return set(re.findall(r'\sid="([^"]+)"', page.read_text(encoding="utf-8")))


def test_every_subcommand_and_pytest_option_block_has_its_anchor(site):
    ids = _ids(site / "cli.html")
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = [name for name in action.choices if f"wirecheck-{name}" not in ids]
    assert not missing, f"subcommands without a section in the CLI reference: {missing}"
    assert "pytest-options" in ids
    page = (site / "cli.html").read_text(encoding="utf-8")
    for option in ("--target-command", "--wirecheck-report", "--docs-url", "--check-clients"):
        assert option in page, option


@pytest.mark.parametrize("spec", registry.all_protocols(), ids=lambda s: s.id)
def test_every_requirement_id_has_its_anchor(site, spec):
    page = site / "requirements" / f"{spec.id}.html"
    ids = _ids(page)
    cat = catalogue(spec.requirements)
    missing = [rid for rid in cat if rid.lower() not in ids]
    assert not missing, f"{spec.id}: IDs without an anchor: {missing}"
    if any(req.untestable for req in cat.values()):
        assert "Untestable over the wire" in page.read_text(encoding="utf-8")


def test_the_benchmark_tables_are_generated(site):
    page = (site / "benchmark-results.html").read_text(encoding="utf-8")
    recorded = sorted((ROOT / "benchmarks" / "recorded").glob("*.json"))[-1]
    first = json.loads(recorded.read_text(encoding="utf-8"))["results"][0]["name"]
    assert first in page


def _one_failing_run() -> Run:
    spec = registry.get("blipmq")
    doc = {"label": "docs-test", "summary": {"blipmq": {"catalogue": catalogue_data(catalogue(spec.requirements)),
                                                       "counts": {"FAIL": 1}, "coverage": {}}},
           "tests": [{"nodeid": "blipmq/test_publish.py::test_publish_empty_topic[0]", "protocol": "blipmq",
                      "verdict": "FAIL", "requirements": ["BLIP-PUB-002"], "duration": 0.01,
                      "message": "expected NACK(400), got NACK(401)"}]}
    return Run("docs-test", "docs-test.json", doc)


def test_the_report_links_requirements_to_their_anchors(site):
    base = site.as_uri() + "/"
    page = report_html.render([_one_failing_run()], docs=base)
    links = set(re.findall(r"href='([^']*requirements/[^']+)'", page))
    assert len(links) >= len(catalogue(registry.get("blipmq").requirements)), "a link per requirement"
    for link in links:
        assert link.startswith(base), link
        path, _, fragment = link[len(base):].partition("#")
        target = site / path
        assert target.is_file(), link
        assert fragment in _ids(target), link
    assert f"href='{base}requirements/blipmq.html#blip-pub-002'>BLIP-PUB-002</a>" in page


def test_the_docs_url_setting(monkeypatch, tmp_path):
    monkeypatch.delenv(report_html.DOCS_URL_ENV, raising=False)
    # a checkout (mkdocs.yml beside the package): its built site, once built; never a path
    # that does not exist
    built = (ROOT / "site" / "requirements").is_dir()
    assert report_html.docs_url() == ((ROOT / "site").as_uri() + "/" if built else "")
    monkeypatch.setattr(report_html, "__file__", str(tmp_path / "wirecheck" / "conformance" / "report/html.py"))
    (tmp_path / "mkdocs.yml").write_text("site_name: x\n")
    assert report_html.docs_url() == ""                     # a checkout whose site was not built
    (tmp_path / "site" / "requirements").mkdir(parents=True)
    assert report_html.docs_url() == (tmp_path / "site").as_uri() + "/"
    monkeypatch.undo()
    monkeypatch.delenv(report_html.DOCS_URL_ENV, raising=False)
    monkeypatch.setenv(report_html.DOCS_URL_ENV, "https://docs.example.org/wirecheck")
    assert report_html.docs_url() == "https://docs.example.org/wirecheck/"
    monkeypatch.setenv(report_html.DOCS_URL_ENV, "")
    assert "requirements/blipmq.html" not in report_html.render([_one_failing_run()])
    # `wirecheck report --docs-url` puts the links where it says
    monkeypatch.delenv(report_html.DOCS_URL_ENV, raising=False)
    run = _one_failing_run()
    results = tmp_path / "r.json"
    results.write_text(json.dumps({**run.doc, "started": 0, "finished": 1}), encoding="utf-8")
    assert wirecheck_main(["report", str(results), "--out", str(tmp_path / "r.html"),
                           "--docs-url", "../site"]) == 0
    assert "href='../site/requirements/blipmq.html#blip-pub-002'" in (tmp_path / "r.html").read_text()


def test_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    for target in re.findall(r"\]\((docs/[^)#]+)", "\n".join(lines)):
        assert (ROOT / target).is_file(), f"README links to {target}, which is not there"


def test_readme_ci_gate_is_the_example_workflow():
    """The README shows the steps of examples/github-actions.yml (which the project's tests run):
    every line of its YAML excerpt is a line of that file."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    excerpt = re.search(r"```yaml\n(.*?)```", readme, re.S).group(1)
    workflow = {line.strip() for line in (ROOT / "examples" / "github-actions.yml").read_text().splitlines()}
    stray = [line for line in excerpt.splitlines() if line.strip() and line.strip() not in workflow]
    assert not stray, f"README's CI gate differs from examples/github-actions.yml: {stray}"
