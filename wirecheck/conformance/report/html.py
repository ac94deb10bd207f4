"""The compliance report as one HTML file (no network access needed to open it: styles and the
filter script are inline).

Layout: the runs; a summary per protocol and run (verdict counts, MUST/SHOULD coverage,
conformant or not); with several server runs, a matrix of requirements x implementations; with
``wirecheck check-client`` runs, one of scenarios x clients (conformance/report/matrix.py); per
protocol, the requirement catalogue as the table of contents, a verdict per requirement, each
linking to its cases and to its entry in the documentation site (:func:`docs_url`); per case that did not pass, the requirement text, what was expected,
what happened, and the wire transcript (time, direction, decoded frame, hex; both
directions). Filters: failed only, protocol, level.

With fuzz campaign summaries (``wirecheck fuzz --all``), a "Fuzzing" section, newest campaign
first: per campaign its date, budget, machine and total execs; its jobs (target, protocol,
mode, execs, exec/s, coverage, corpus size, findings, and for in-process jobs coverage over
time drawn from the job's timeline as a small inline SVG); its findings deduplicated across
jobs (kind, signature, which jobs found it, count, file, minimized size, the command that
reproduces it). Job and finding rows carry ``data-proto`` and ``data-failed`` (a job that
found something or failed), so the protocol and failed-only filters apply to them too.

With capture analyses (``wirecheck analyze``), a "Captures" section (conformance/report/captures.py):
violations by requirement, linked to the requirement's row in its protocol's section, and per
protocol the frame types and sizes as bar charts, latency, codes and totals.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from wirecheck.conformance.report import causes

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.report.captures import captures
from wirecheck.conformance.report.matrix import area_grid_html, client_matrix_html, is_client_run
from wirecheck.conformance.report.text import anchor as _anchor
from wirecheck.conformance.report.text import crash_line
from wirecheck.conformance.report.text import escape as _e
from wirecheck.conformance.report.text import number as _num
from wirecheck.conformance.report.text import seconds as _seconds
from wirecheck.conformance.report.text import visible as _t
from wirecheck.conformance.report.results import UNTESTABLE, Analysis, Campaign, Run

#: Verdicts shown as "failed" by the failed-only filter.
FAILED = {verdicts.FAIL, verdicts.CRASH, verdicts.TIMEOUT, verdicts.HANG, verdicts.HARNESS_ERROR, verdicts.NON_STRICT}
_ORDER = [verdicts.PASS, verdicts.FAIL, verdicts.CRASH, verdicts.TIMEOUT, verdicts.HANG, verdicts.NON_STRICT,
          verdicts.WAIVED, verdicts.UNIMPLEMENTED, verdicts.INFORMATIONAL, verdicts.SKIPPED, verdicts.NOT_RUN,
          verdicts.HARNESS_ERROR]
_HEX_SHOWN = 512          # bytes of each wire entry shown in the page (the JSON keeps 4 KiB)
#: Where the documentation site is, for the requirement links (``--docs-url`` sets it).
DOCS_URL_ENV = "WIRECHECK_DOCS_URL"


def docs_url() -> str:
    """The base address of the documentation site (docs/start/reports.md, "Requirement links
    into this site"): ``$WIRECHECK_DOCS_URL`` (empty: no links); else, when the kit runs from a
    checkout (``mkdocs.yml`` beside the package), the checkout's built site, once built (``make
    docs``); else "" (an installed kit knows of no site, and an unbuilt one none yet)."""
    value = os.environ.get(DOCS_URL_ENV)
    if value is not None:
        value = value.strip()
        return value if not value or value.endswith("/") else value + "/"
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "mkdocs.yml").is_file() and (checkout / "site" / "requirements").is_dir():
        return (checkout / "site").as_uri() + "/"       # built (make docs): never a path that is not there
    return ""


def requirement_url(base: str, proto: str, rid: str) -> str:
    """A requirement's entry in the site: its protocol's catalogue page (tools/gen_docs.py
    writes ``requirements/<protocol>.md``), anchored at the ID in lower case. "" without a base."""
    return f"{base}requirements/{proto}.html#{rid.lower()}" if base else ""


def _doc_link(url: str) -> str:
    return (f" <a class='doc' href='{_e(url)}' title='the requirement in the documentation'>doc</a>"
            if url else "")

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1b1f24;background:#fafafa}
header{background:#1b1f24;color:#fff;padding:12px 20px}header h1{margin:0;font-size:20px}
main{padding:12px 20px}section{margin-bottom:28px}h2{border-bottom:2px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;margin:6px 0 12px;background:#fff;display:block;overflow-x:auto;max-width:100%}
tr.notes td{font-size:13px;color:#57606a;border-top:none}
@media (max-width:700px){body{font-size:13px}main{padding:8px 6px}header{padding:8px 6px}
td,th{padding:2px 4px}.wire{font-size:11px}#filters{padding:4px 6px}}
td,th{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
tr.req td:first-child{white-space:nowrap}
th{background:#f0f0f0}.num{text-align:right}
.v{display:inline-block;padding:0 6px;border-radius:3px;font-weight:600;font-size:12px;color:#fff;white-space:nowrap}
.v-PASS{background:#1a7f37}.v-FAIL{background:#cf222e}.v-CRASH{background:#82071e}.v-TIMEOUT{background:#8250df}.v-HANG{background:#8250df}
.v-NON-STRICT{background:#bf8700}.v-WAIVED{background:#57606a}.v-UNIMPLEMENTED{background:#8c959f}
.v-SKIPPED{background:#afb8c1}.v-INFORMATIONAL{background:#0969da}.v-HARNESS-ERROR{background:#000}.v-UNTESTABLE{background:#d0d7de;color:#1b1f24}
.v-NOT-RUN{background:#eaeef2;color:#57606a}.v-yes{background:#1a7f37}.v-no{background:#cf222e}
.case{background:#fff;border:1px solid #ddd;border-left:4px solid #cf222e;margin:8px 0;padding:6px 10px}
.case.v-case-NON-STRICT{border-left-color:#bf8700}.case.v-case-TIMEOUT{border-left-color:#8250df}.case.v-case-HANG{border-left-color:#8250df}
.case.v-case-WAIVED{border-left-color:#57606a}
.wire{font:12px/1.35 ui-monospace,monospace;width:100%}.wire td{border:none;border-bottom:1px solid #eee}
.d-send{color:#0550ae}.d-recv{color:#116329}.d-event{color:#6e7781}.hex{color:#57606a;word-break:break-all}
#filters{position:sticky;top:0;background:#fff;border-bottom:1px solid #ddd;padding:6px 20px;z-index:1}
.hidden{display:none}
.sig{font:12px ui-monospace,monospace;word-break:break-all}.chart{display:block}
.chart polyline{fill:none;stroke:#0969da;stroke-width:1.5}.chart text{font:9px system-ui,sans-serif;fill:#57606a}
.chart line{stroke:#d0d7de}.k-crash{background:#cf222e}.k-hang,.k-timeout{background:#8250df}
.k-oom{background:#bf8700}.k-violation{background:#0969da}.k-error,.k-job-error{background:#000}
.k-other{background:#57606a}header a{color:#fff}
.bars rect{fill:#0969da}.bars g:hover rect{fill:#0550ae}.charts{display:flex;flex-wrap:wrap;gap:8px 32px}
.rid{white-space:nowrap}figure{margin:4px 0}figcaption{font-size:12px;color:#57606a}
a.doc{font-size:11px;color:#57606a;margin-left:3px}
"""

_JS = """
(function(){
  var failed=document.getElementById('f-failed'),proto=document.getElementById('f-proto'),
      level=document.getElementById('f-level');
  function apply(){
    document.querySelectorAll('[data-proto]').forEach(function(el){
      var hide=(proto.value&&el.dataset.proto!==proto.value)||
               (level.value&&el.dataset.level&&el.dataset.level!==level.value)||
               (failed.checked&&el.dataset.failed==='0');
      el.classList.toggle('hidden',!!hide);
    });
    var shown=document.querySelectorAll('tr.req[data-proto]:not(.hidden)').length;
    document.getElementById('f-count').textContent=shown+' requirement(s) shown';
  }
  [failed,proto,level].forEach(function(el){el.addEventListener('change',apply);});
  // A link can preset the filters: index.html#failed-only&protocol=blipmq&level=MUST
  location.hash.replace(/^#/,'').split('&').forEach(function(kv){
    var p=kv.split('=');
    if(p[0]==='failed-only')failed.checked=true;
    if(p[0]==='protocol')proto.value=decodeURIComponent(p[1]||'');
    if(p[0]==='level')level.value=decodeURIComponent(p[1]||'');
  });
  apply();
})();
"""


def _badge(verdict: str) -> str:
    return f'<span class="v v-{_e(verdict)}">{_e(verdict)}</span>'


def render(runs: list[Run], title: str = "wirecheck compliance report", campaigns: list[Campaign] = (),
           analyses: list[Analysis] = (), docs: str | None = None) -> str:
    """The report's HTML; ``docs``: the documentation site's base address for the requirement
    links (default :func:`docs_url`; "" for none)."""
    docs = docs_url() if docs is None else docs
    protocols = sorted({p for r in runs for p in r.protocols} | {p for c in campaigns for p in c.protocols}
                       | {p for a in analyses for p in a.protocols})
    links = (f" &middot; <a href='#fuzzing'>{len(campaigns)} fuzz campaign(s)</a>" if campaigns else "") + (
        f" &middot; <a href='#captures'>{len(analyses)} capture analysis(es)</a>" if analyses else "")
    out = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
           f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{_e(title)}</title>"
           f"<style>{_CSS}</style></head><body>",
           f"<header><h1>{_e(title)}</h1><div>generated {_e(time.strftime('%Y-%m-%d %H:%M:%S %Z'))}"
           f" &middot; {len(runs)} run(s) &middot; {len(protocols)} protocol(s){links}</div></header>",
           _filters(protocols), "<main>"]
    if runs or not (campaigns or analyses):
        out += [_runs_table(runs), _summary(runs, protocols)]
    out.append(area_grid_html(runs, _badge))
    servers = [r for r in runs if not is_client_run(r)]
    if len(servers) > 1:
        out.append(_matrix(servers, sorted({p for r in servers for p in r.protocols}), docs))
    out.append(client_matrix_html(runs, _badge))
    if campaigns:
        out.append(_fuzzing(campaigns))
    if analyses:
        out.append(captures(analyses, _requirement_links(runs)))
    for proto in protocols:
        for run in runs:
            if proto in run.protocols:
                out.append(_protocol_section(run, proto, several=len(runs) > 1, docs=docs))
    out.append(f"</main><script>{_JS}</script></body></html>")
    return "\n".join(out)


def _requirement_row(section_anchor: str, rid: str) -> str:
    """The id of a requirement's row in a protocol section's requirements table (its cases'
    anchor, ``_anchor(section, rid)``, exists only when a test named it)."""
    return _anchor(section_anchor, "req", rid)


def _requirement_links(runs: list[Run]):
    """``(protocol, requirement ID) -> (anchor, summary)`` of the requirement's row in the first
    run's section of that protocol, or None (no run of it, or an ID its suite does not know)."""
    cache: dict[str, dict] = {}

    def link(proto: str, rid: str):
        if proto not in cache:
            run = next((r for r in runs if proto in r.protocols), None)
            reqs = run.requirement_verdicts(proto) if run else {}
            cat = run.catalogue(proto) if run else {}
            section = _anchor(proto, run.label) if run else ""
            cache[proto] = {r: (_requirement_row(section, r), cat.get(r, {}).get("summary", "")) for r in reqs}
        return cache[proto].get(rid)
    return link


def _filters(protocols: list[str]) -> str:
    opts = "".join(f"<option value='{_e(p)}'>{_e(p)}</option>" for p in protocols)
    return ("<div id='filters'><label><input type='checkbox' id='f-failed'> failed only</label> &nbsp; "
            f"<label>protocol <select id='f-proto'><option value=''>all</option>{opts}</select></label> &nbsp; "
            "<label>level <select id='f-level'><option value=''>all</option><option>MUST</option>"
            "<option>SHOULD</option><option>MAY</option></select></label> &nbsp; "
            "<span id='f-count'></span></div>")


def _runs_table(runs: list[Run]) -> str:
    rows = []
    for r in runs:
        d = r.doc
        stopped = interrupted_text(d)
        rows.append(f"<tr><td>{_e(r.label)}</td><td>{_e(', '.join(r.protocols))}</td>"
                    f"<td>{_e(d.get('profile') or 'default')}</td><td>{'yes' if d.get('strict') else 'no'}</td>"
                    f"<td class='num'>{r.duration:.1f} s</td>"
                    f"<td>{'<b>' + _e(stopped) + '</b>' if stopped else 'complete'}</td>"
                    f"<td>{_e(', '.join(d.get('paths', [r.path])))}</td></tr>")
    return ("<section id='runs'><h2>Runs</h2><table><tr><th>implementation</th><th>protocols</th>"
            "<th>profile</th><th>strict</th><th>duration</th><th>ended</th><th>result file</th></tr>"
            + "".join(rows) + "</table></section>")


def interrupted_text(doc: dict) -> str:
    """"stopped by SIGTERM; 12 not run" for a run a signal ended (its JSON's
    ``interrupted``), else ""."""
    stopped = doc.get("interrupted")
    if not isinstance(stopped, dict):
        return ""
    return f"stopped by {stopped.get('signal', 'a signal')}; {stopped.get('not_run', '?')} not run"


def _summary(runs: list[Run], protocols: list[str]) -> str:
    # the verdicts some run has (PASS and FAIL always): eleven columns of zeros push the
    # coverage off a 1400 px page
    shown = [v for v in _ORDER if v in (verdicts.PASS, verdicts.FAIL) or any(
        r.summary.get(p, {}).get("counts", {}).get(v, 0) for r in runs for p in protocols)]
    head = "".join(f"<th>{_e(v)}</th>" for v in shown)
    rows = []
    for proto in protocols:
        for r in runs:
            if proto not in r.protocols:
                continue
            s = r.summary[proto]
            counts, cov = s.get("counts", {}), s.get("coverage", {})
            must, should = cov.get("MUST", [0, 0]), cov.get("SHOULD", [0, 0])
            ok = r.conformant(proto)
            cells = "".join(f"<td class='num'>{counts.get(v, 0)}</td>" for v in shown)
            stale = s.get("stale_waivers", [])
            rows.append(f"<tr data-proto='{_e(proto)}' data-failed='{0 if ok else 1}'><td>"
                        f"<a href='#{_anchor(proto, r.label)}'>{_e(proto)}</a></td><td>{_e(r.label)}</td>"
                        f"<td>{_badge('yes' if ok else 'no')}</td>{cells}"
                        f"<td class='num'>{must[0]}/{must[1]}</td><td class='num'>{should[0]}/{should[1]}</td>"
                        f"<td class='num'>{cov.get('untestable', 0)}</td></tr>")
            # the lists under the row, its whole width: a column of their own squeezed them
            # into a strip hundreds of pixels tall beside eleven counts
            notes = [f"<b>not met:</b> {_e(', '.join(s['failing_requirements']))}"] if s.get("failing_requirements") else []
            notes += [f"<b>stale waivers:</b> {_e(', '.join(stale))}"] if stale else []
            if notes:
                rows.append(f"<tr class='notes' data-proto='{_e(proto)}' data-failed='{0 if ok else 1}'>"
                            f"<td colspan='{len(shown) + 6}'>{' &middot; '.join(notes)}</td></tr>")
    return ("<section id='summary'><h2>Summary</h2><table><tr><th>protocol</th><th>implementation</th>"
            f"<th>conformant</th>{head}<th>MUST tested</th><th>SHOULD tested</th><th>untestable</th>"
            "</tr>" + "".join(rows) + "</table></section>")


def _matrix(runs: list[Run], protocols: list[str], docs: str = "") -> str:
    head = "".join(f"<th>{_e(r.label)}</th>" for r in runs)
    rows = []
    for proto in protocols:
        per_run = [r.requirement_verdicts(proto) if proto in r.protocols else {} for r in runs]
        cat = next((r.catalogue(proto) for r in runs if r.catalogue(proto)), {})
        ids = sorted(set(cat) | {i for v in per_run for i in v})
        for rid in ids:
            vs = [v.get(rid, ("", []))[0] for v in per_run]
            failed = int(any(x in FAILED for x in vs))
            level = cat.get(rid, {}).get("level", "")
            cells = "".join(f"<td>{_badge(v) if v else ''}</td>" for v in vs)
            rows.append(f"<tr class='req' data-proto='{_e(proto)}' data-level='{_e(level)}' data-failed='{failed}'>"
                        f"<td>{_linked(rid, requirement_url(docs, proto, rid))}</td><td>{_e(level)}</td>{cells}</tr>")
    return ("<section id='matrix'><h2>Implementations &times; requirements</h2><table><tr><th>requirement</th>"
            f"<th>level</th>{head}</tr>" + "".join(rows) + "</table></section>")


def _linked(text: str, url: str) -> str:
    return f"<a href='{_e(url)}'>{_e(text)}</a>" if url else _e(text)


def _protocol_section(run: Run, proto: str, several: bool, docs: str = "") -> str:
    cat = run.catalogue(proto)
    reqs = run.requirement_verdicts(proto)
    anchor = _anchor(proto, run.label)
    title = f"{proto} &mdash; {_e(run.label)}" if several else _e(proto)
    rows, details = [], []
    for rid in sorted(reqs):
        verdict, tests = reqs[rid]
        req = cat.get(rid, {})
        level = req.get("level", "")
        failed = int(verdict in FAILED)
        rid_anchor = _anchor(anchor, rid)
        note = req.get("untestable", "") if verdict == UNTESTABLE else ""
        link = f"<a href='#{rid_anchor}'>{_e(rid)}</a>" if tests else _e(rid)
        rows.append(f"<tr id='{_requirement_row(anchor, rid)}' class='req' data-proto='{_e(proto)}' "
                    f"data-level='{_e(level)}' data-failed='{failed}'>"
                    f"<td>{link}{_doc_link(requirement_url(docs, proto, rid))}</td><td>{_e(level)}</td>"
                    f"<td>{_e(req.get('section', ''))}</td>"
                    f"<td>{_e(req.get('summary', ''))}{_quote(req)}"
                    f"{'<br><i>untestable: ' + _e(note) + '</i>' if note else ''}</td>"
                    f"<td>{_badge(verdict)}</td><td class='num'>{len(tests)}</td></tr>")
        if tests:
            details.append(_requirement_detail(proto, rid, req, verdict, tests, rid_anchor, docs))
    loose = [t for t in run.tests_of(proto) if not t.get("requirements")]
    if not rows and loose:                     # a replay: no catalogue, one case per connection
        return (f"<section id='{anchor}' data-proto='{_e(proto)}'><h2>{title}</h2>"
                + _loose_cases(proto, loose, anchor) + "</section>")
    stopped = interrupted_text(run.doc)
    return (f"<section id='{anchor}' data-proto='{_e(proto)}'><h2>{title}</h2>"
            + (f"<p class='interrupted'><b>{_e(stopped)}</b>: what was not run has no verdict, and "
               "requirements only those tests check are untested</p>" if stopped else "")
            + _target_block(run.summary.get(proto, {})) + _causes_block(run.tests_of(proto), anchor) +
            "<h3>Requirements</h3><table><tr><th>ID</th><th>level</th><th>section</th><th>requirement</th>"
            "<th>verdict</th><th>tests</th></tr>" + "".join(rows) + "</table>"
            "<h3>Cases</h3>" + "".join(details)
            + (_loose_cases(proto, loose, anchor) if loose else "") + "</section>")


def _quote(req: dict) -> str:
    """The sentence the requirement comes from, where from, and why its level differs from the
    sentence's own word (result files written before quotes were kept have none)."""
    if not req.get("quote"):
        return ""
    where = {"document": "the document", "SPEC_NOTES": "SPEC_NOTES",
             "reading": "the kit's reading of"}.get(req.get("source", "document"), "")
    note = f"<br><small>{_e(req['level_note'])}</small>" if req.get("level_note") else ""
    return f"<br><q class='quote'>{_e(req['quote'])}</q> <small>({_e(where)})</small>{note}"


def _rerun_text(rerun: dict) -> str:
    tests = rerun["tests"]
    how = "alone" if len(tests) == 1 else f"{len(tests)} tests in order"
    names = ", ".join(tests[:6]) + (" …" if len(tests) > 6 else "")
    if not rerun.get("down"):
        return _e(f"{how}: {names} → stayed up")
    return _e(f"{how}: {names} → down {rerun.get('when') or 'during'} {rerun['during']}"
              + (f" ({rerun['status']})" if rerun.get("status") else ""))


def _crash_item(crash: dict) -> str:
    """One crash of the target: the test that did it (or why none is named), the tests that ran
    then, each re-run on a fresh target and its outcome, the process's last output. Result files
    written before culprits were searched for name the test that saw it (``test``)."""
    if "suspects" not in crash:
        return (f"<li><b>down</b> during {_e(crash.get('test', '?'))}: {_e(crash['reason'].splitlines()[0])}"
                + (f" ({_e(crash['status'])})" if crash.get("status") else "") + "</li>")
    reruns = "".join(f"<li>{_rerun_text(r)}</li>" for r in crash.get("reruns", []))
    suspects = ", ".join(crash["suspects"])
    output = f"<pre>{_e(crash['output'])}</pre>" if crash.get("output") else ""
    return (f"<li><b>down</b>: {_e(crash_line(crash))}<details><summary>{len(crash['suspects'])} test(s) "
            f"ran then; {len(crash.get('reruns', []))} re-run(s) on fresh targets; its last output</summary>"
            f"<p>Tests that ran then: {_e(suspects)}</p><ol>{reruns}</ol>{output}</details></li>")


def _target_block(summary: dict) -> str:
    """What happened to the target process (crashwatch.py, target/health.py): its crashes, a
    thread that spun with no test running, the tests after which memory and descriptors grew
    most. Empty when the kit did not run the target and it never went down."""
    crashes = summary.get("crashes", [])
    health = summary.get("target_health") or {}
    spins = health.get("spins", [])
    items = [_crash_item(c) for c in crashes]
    items += [f"<li><b>busy while idle</b>: thread {_e(sp['thread'])} at {sp['cpu']:.0%} of a core with no "
              f"test running, since {_e(' or '.join(sp['tests']) or 'an unknown test')}</li>" for sp in spins]
    for key, what, unit in (("rss_growers", "resident memory", "KiB"), ("fd_growers", "open descriptors", "")):
        grown = health.get(key) or []
        if grown:
            field = "rss_growth_kb" if key == "rss_growers" else "fd_growth"
            items.append(f"<li>{what} grew most after: " + ", ".join(
                f"{_e(g['test'])} (+{g[field]}{' ' + unit if unit else ''})" for g in grown) + "</li>")
    if health.get("peak_rss_kb") is not None:
        items.append(f"<li>peak: {health['peak_rss_kb']} KiB resident, {health.get('peak_fds')} descriptors</li>")
    return f"<h3>Target</h3><ul>{''.join(items)}</ul>" if items else ""


def _causes_block(tests: list[dict], anchor: str) -> str:
    """Failures that share a cause (causes.py), one row each: how many tests and requirements,
    and a link to the first test's requirement, whose case holds its transcript. Computed from
    the tests, so result files written before causes were grouped get it too."""
    rows = []
    for c in causes.group(tests):
        example = next((t for t in tests if t["nodeid"] == c["example"]), {})
        rids = example.get("requirements") or []
        link = (f"<a href='#{_anchor(anchor, rids[0])}'>{_e(c['example'])}</a>" if rids
                else _e(c["example"]))
        rows.append(f"<tr><td><code>{_e(c['cause'])}</code></td><td class='num'>{c['tests']}</td>"
                    f"<td>{_e(', '.join(c['requirements']))}</td><td>{link}</td></tr>")
    if not rows:
        return ""
    return ("<h3>Causes</h3><p>Failures whose messages read the same once numbers and values are "
            "taken out: likely one defect each.</p><table><tr><th>cause</th><th>tests</th>"
            "<th>requirements</th><th>first test</th></tr>" + "".join(rows) + "</table>")


def _loose_cases(proto: str, tests: list[dict], anchor: str) -> str:
    """Cases that name no requirement (``wirecheck replay``: one per replayed connection):
    a table, and for each one that did not pass its message (the diff) and wire transcript."""
    rows, details = [], []
    for i, t in enumerate(sorted(tests, key=lambda t: (-verdicts.rank(t["verdict"]), t["nodeid"]))):
        failed = int(t["verdict"] in FAILED)
        first = (t.get("message") or "").splitlines()[:1]
        case_anchor = _anchor(anchor, "case", str(i))
        name = f"<a href='#{case_anchor}'>{_e(t['nodeid'])}</a>" if t["verdict"] != verdicts.PASS else _e(t["nodeid"])
        rows.append(f"<tr class='req' data-proto='{_e(proto)}' data-level='' data-failed='{failed}'>"
                    f"<td>{name}</td><td>{_badge(t['verdict'])}</td><td class='num'>"
                    f"{t.get('frames_compared', '')}</td><td>{_e(first[0] if first else '')}</td></tr>")
        if t["verdict"] != verdicts.PASS:
            notes = "".join(f"<div><i>{_e(n)}</i></div>" for n in t.get("notes", []))
            details.append(f"<div id='{case_anchor}' class='case v-case-{_e(t['verdict'])}' data-proto='{_e(proto)}' "
                           f"data-level='' data-failed='{failed}'>{_badge(t['verdict'])} <b>{_e(t['nodeid'])}</b>"
                           f"<pre>{_e(t.get('message', ''))}</pre>{notes}" + _wire(t) + "</div>")
    return ("<h3>Connections</h3><table><tr><th>case</th><th>verdict</th><th>frames compared</th>"
            "<th>first difference</th></tr>" + "".join(rows) + "</table>" + "".join(details))


def _requirement_detail(proto, rid, req, verdict, tests, anchor, docs: str = "") -> str:
    level = req.get("level", "")
    failed = int(verdict in FAILED)
    cases = []
    for t in sorted(tests, key=lambda t: (-verdicts.rank(t["verdict"]), t["nodeid"])):
        if t["verdict"] == verdicts.INFORMATIONAL:
            cases.append(f"<div>{_badge(t['verdict'])} {_e(t['nodeid'])}: {_e(t.get('message', ''))}</div>")
            continue
        if t["verdict"] == verdicts.PASS:
            cases.append(f"<div>{_badge(t['verdict'])} {_e(t['nodeid'])} "
                         f"<small>({t.get('duration', 0) * 1000:.0f} ms)</small></div>")
            continue
        expected, actual = expected_and_actual(t.get("message", ""), req)
        if t.get("expected"):                  # the outcomes the test declared it accepts
            expected = " | ".join(t["expected"]) if len(t["expected"]) > 1 else t["expected"][0]
            expected = ("one of: " if len(t["expected"]) > 1 else "") + expected
            actual = t.get("actual") or actual
        cases.append(f"<div class='case v-case-{_e(t['verdict'])}'>{_badge(t['verdict'])} <b>{_e(t['nodeid'])}</b> "
                     f"<small>({t.get('duration', 0) * 1000:.0f} ms; requirements "
                     f"{_e(', '.join(t.get('requirements', [])))}"
                     + (f"; broke {_e(', '.join(t['broke']))}" if t.get("broke") else "") + ")</small>"
                     f"<div><b>expected:</b> {_e(expected)}</div><div><b>actual:</b> {_e(actual)}</div>"
                     + _distinct(t) + _wire(t) + "</div>")
    return (f"<div id='{anchor}' data-proto='{_e(proto)}' data-level='{_e(level)}' data-failed='{failed}'>"
            f"<h4>{_linked(rid, requirement_url(docs, proto, rid))} [{_e(level)}] {_badge(verdict)}</h4>"
            f"<p>{_e(req.get('section', ''))}: {_e(req.get('summary', ''))}</p>" + "".join(cases) + "</div>")


def expected_and_actual(message: str, req: dict) -> tuple[str, str]:
    """What the case expected and what happened, from its failure message. The suites word
    their failures "expected X, got Y" (or "... (expected X)" for a timeout); otherwise the
    requirement's own text is what was expected."""
    text = message.strip()
    for prefix in ("NON-STRICT: ", "WAIVED: "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    low = text.find("expected ")
    if low >= 0:
        rest = text[low + len("expected "):]
        got = rest.find(", got ")
        if got >= 0:
            return rest[:got], rest[got + len(", got "):]
        if text[low - 1:low] == "(" and rest.endswith(")"):
            return rest[:-1], text[:low - 1].strip()
    return req.get("summary", "the requirement"), text or "(no message)"


def _distinct(test: dict) -> str:
    """Each distinct failure hypothesis found in the test, with the requirements it names and
    its own minimal example."""
    failures = test.get("failures") or []
    if not failures:
        return ""
    items = "".join(
        f"<li>{_e(f.get('message', ''))}"
        + (f" <small>[{_e(', '.join(f['requirements']))}]</small>" if f.get("requirements") else "")
        + (f"<pre>{_e(f['example'])}</pre>" if f.get("example") else "") + "</li>"
        for f in failures)
    return f"<div><b>{len(failures)} distinct failures</b>, each with its minimal example:<ol>{items}</ol></div>"


def _wire(test: dict) -> str:
    wire = test.get("wire") or []
    if not wire:
        text = test.get("transcript", "")
        return f"<pre class='wire'>{_e(text)}</pre>" if text else "<div><i>no wire transcript</i></div>"
    parts = []
    for conn in wire:
        rows = []
        for t, direction, hexed, note, length in conn.get("entries", []):
            cls = {"->": "d-send", "<-": "d-recv"}.get(direction, "d-event")
            shown = bytes.fromhex(hexed[:_HEX_SHOWN * 2]).hex(" ") if hexed else ""
            more = f" &hellip; ({length} bytes)" if length * 2 > len(shown.replace(" ", "")) else ""
            rows.append(f"<tr class='{cls}'><td class='num'>{t * 1000:.1f} ms</td><td>{_e(direction)}</td>"
                        f"<td>{_e(note)}<div class='hex'>{_e(shown)}{more}</div></td></tr>")
        parts.append(f"<div><b>{_e(conn.get('name', ''))}</b></div><table class='wire'>{''.join(rows)}</table>")
    return "".join(parts)


# -- fuzzing -----------------------------------------------------------------------------------

_CHART_W, _CHART_H, _CHART_LEFT, _CHART_BOTTOM = 240, 64, 30, 12
_FINDING_KINDS = {"crash", "hang", "timeout", "oom", "violation", "error"}


def _kind(kind) -> str:
    cls = kind if kind in _FINDING_KINDS or kind == "job-error" else "other"
    return f'<span class="v k-{cls}">{_t(kind)}</span>'


def _fuzzing(campaigns: list[Campaign]) -> str:
    parts = [_campaign(c, _anchor("fuzzing", str(i))) for i, c in enumerate(campaigns)]
    return "<section id='fuzzing'><h2>Fuzzing</h2>" + "".join(parts) + "</section>"


def _campaign(c: Campaign, anchor: str) -> str:
    d = c.doc
    m = d.get("machine") if isinstance(d.get("machine"), dict) else {}
    machine = ", ".join(x for x in (f"{m['cpus']} CPU(s)" if m.get("cpus") else "",
                                    f"Python {m['python']}" if m.get("python") else "",
                                    str(m.get("platform") or "")) if x)
    errors = d.get("errors") or []
    facts = [f"budget {_seconds(d.get('budget'))}", f"took {_seconds(d.get('seconds'))}",
             f"{_t(d.get('workers', '?'))} worker(s)", f"machine: {_t(machine or 'unknown')}",
             f"<b>{_num(d.get('execs', sum(j.get('execs') or 0 for j in c.jobs)))}</b> execs in total",
             f"{len(c.jobs)} job(s)", f"<b>{len(c.findings)}</b> distinct finding(s)"]
    if errors:
        facts.append(f"job errors: {_t(', '.join(map(str, errors)))}")
    return (f"<div id='{anchor}'><h3>{_t(c.label)}</h3><p>{' &middot; '.join(facts)}<br>"
            f"<small>{_t(c.path)}</small></p>" + _jobs_table(c, anchor) + _findings_table(c)
            + _not_reproduced(c) + "</div>")


def _jobs_table(c: Campaign, anchor: str) -> str:
    rows = []
    for i, j in enumerate(c.jobs):
        findings = j.get("findings") if isinstance(j.get("findings"), list) else []
        failed = int(bool(findings or j.get("error")))
        proto = f" data-proto='{_t(j['protocol'])}'" if j.get("protocol") else ""
        found = (_kind("job-error") if j.get("error") else
                 ", ".join(_kind(k) for k in sorted({str(f.get("kind")) for f in findings})) or "0")
        if findings:
            found = f"{len(findings)}: {found}"
        timeline = j.get("timeline") if isinstance(j.get("timeline"), list) else []
        chart = _coverage_chart(timeline, str(j.get("name", "")), _anchor(anchor, "chart", str(i))) if timeline else ""
        rows.append(f"<tr{proto} data-failed='{failed}'><td>{_t(j.get('name', ''))}</td>"
                    f"<td>{_t(j.get('target', ''))}</td>"
                    f"<td>{_t(j.get('protocol', ''))}</td><td>{_t(j.get('mode', ''))}</td>"
                    f"<td class='num'>{_num(j.get('execs'))}</td>"
                    f"<td class='num'>{_num(j.get('exec_per_s'), ',.1f')}</td>"
                    f"<td class='num'>{_num(j.get('coverage'))}</td><td class='num'>{_num(j.get('corpus_size'))}</td>"
                    f"<td>{found}</td><td>{chart}</td></tr>")
        if j.get("error"):
            rows.append(f"<tr{proto} data-failed='1'><td></td><td colspan='9'><pre>{_t(j['error'])}</pre></td></tr>")
    return ("<table><tr><th>job</th><th>target</th><th>protocol</th><th>mode</th><th>execs</th><th>exec/s</th>"
            "<th>coverage</th><th>corpus size</th><th>findings</th><th>coverage over time</th></tr>"
            + "".join(rows) + "</table>")


def _findings_table(c: Campaign) -> str:
    if not c.findings:
        return "<p>No findings.</p>"
    rows = []
    for f in sorted(c.findings, key=lambda f: (str(f.get("kind")), str(f.get("signature")))):
        found_by = [str(x) for x in f.get("found_by") or []]
        protos = c.job_protocols(found_by)
        proto = f" data-proto='{_t(next(iter(protos)))}'" if len(protos) == 1 else ""
        kind = _kind(str(f.get("kind", "")))
        kind += _reproduced(f)
        detail = (f"<details><summary>detail</summary><pre>{_t(f['detail'])}</pre></details>"
                  if f.get("detail") else "")
        reproduce = f"<code class='sig'>{_t(f['reproduce'])}</code>" if f.get("reproduce") else ""
        rows.append(f"<tr{proto} data-failed='1'><td>{kind}</td>"
                    f"<td><code class='sig'>{_t(f.get('signature', ''))}</code>{detail}</td>"
                    f"<td>{_t(', '.join(found_by))}</td><td class='num'>{_num(f.get('count', 1))}</td>"
                    f"<td><code class='sig'>{_t(f.get('file') or '')}</code></td>"
                    f"<td>{_minimized(f.get('minimized'))}</td><td>{reproduce}</td></tr>")
    return ("<table><tr><th>kind</th><th>signature</th><th>found by</th><th>count</th><th>file</th>"
            "<th>minimized</th><th>reproduce</th></tr>" + "".join(rows) + "</table>")


def _not_reproduced(c: Campaign) -> str:
    """The network jobs' events that a freshly started target never gave back (fuzz/live/fuzzer.py's
    ``not_reproduced``): not findings, but a user who killed the target or ran out of memory
    by hand must see that the kit saw it and what it did with it."""
    rows = []
    for j in c.jobs:
        for e in j.get("not_reproduced") or []:
            if isinstance(e, dict):
                rows.append(f"<tr><td>{_kind(str(e.get('kind', '')))}</td>"
                            f"<td><code class='sig'>{_t(e.get('signature', ''))}</code></td>"
                            f"<td>{_t(j.get('name', ''))}</td>"
                            f"<td class='num'>0 of {_num(e.get('replays'))}</td>"
                            f"<td><code class='sig'>{_t(e.get('file') or '')}</code></td></tr>")
    if not rows:
        return ""
    return (f"<p>{len(rows)} event(s) that a freshly started target never gave back (not findings: "
            "the input alone does not cause them):</p><table><tr><th>kind</th><th>signature</th>"
            "<th>job</th><th>reproduced</th><th>file</th></tr>" + "".join(rows) + "</table>")


def _reproduced(f: dict) -> str:
    """How a finding's replays on fresh targets went: "reproduced N of M", "not replayed" (the
    kit did not run the target), or, in campaigns recorded before the count, yes or no."""
    if f.get("replayed") is False:
        return "<br><small>not replayed (the kit did not run the target)</small>"
    got, of = f.get("reproduced"), f.get("replays")
    if isinstance(got, int) and not isinstance(got, bool) and isinstance(of, int) and of:
        return f"<br><small>reproduced {got} of {of}</small>"
    if got is not None:
        return f"<br><small>{'reproduced' if got else 'not reproduced'}</small>"
    return ""


def _minimized(m) -> str:
    """fuzz/minimize.py's answer: ``{"before": n, "after": m, "file": ...}`` or ``{"error": ...}``."""
    if not isinstance(m, dict):
        return ""
    if m.get("error"):
        return f"<i>failed: {_t(m['error'])}</i>"
    size = f"{_num(m.get('before'))} &rarr; {_num(m.get('after'))} bytes" if "after" in m else ""
    where = f"<br><code class='sig'>{_t(m['file'])}</code>" if m.get("file") else ""
    return size + where


def _coverage_chart(timeline: list, name: str, anchor: str) -> str:
    """Coverage (libFuzzer's ``cov``) against seconds, from ``[seconds, execs, cov, ft, corpus]``
    points, as a small inline SVG (no script, no external resource)."""
    def number(x) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)
    points = [p for p in timeline if isinstance(p, list) and len(p) >= 3 and number(p[2])]
    if not points:
        return ""
    timed = all(number(p[0]) for p in points)
    xs = [float(p[0]) if timed else float(i) for i, p in enumerate(points)]
    ys = [float(p[2]) for p in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    w, h = _CHART_W - _CHART_LEFT - 4, _CHART_H - _CHART_BOTTOM - 4
    def sx(x): return _CHART_LEFT + (x - x0) / ((x1 - x0) or 1) * w
    def sy(y): return 4 + h - (y - y0) / ((y1 - y0) or 1) * h
    line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(xs, ys))
    span = f"{x1:.0f} s" if timed else f"{len(points)} points"
    label = f"coverage of {name}: {y0:.0f} to {y1:.0f} over {span}"
    base = _CHART_H - _CHART_BOTTOM
    return (f"<svg id='{anchor}' class='chart' role='img' width='{_CHART_W}' height='{_CHART_H}' "
            f"viewBox='0 0 {_CHART_W} {_CHART_H}' xmlns='http://www.w3.org/2000/svg'><title>{_t(label)}</title>"
            f"<line x1='{_CHART_LEFT}' y1='{base}' x2='{_CHART_W - 4}' y2='{base}'/>"
            f"<line x1='{_CHART_LEFT}' y1='4' x2='{_CHART_LEFT}' y2='{base}'/>"
            f"<text x='{_CHART_LEFT - 3}' y='10' text-anchor='end'>{y1:.0f}</text>"
            f"<text x='{_CHART_LEFT - 3}' y='{base}' text-anchor='end'>{y0:.0f}</text>"
            f"<text x='{_CHART_LEFT}' y='{_CHART_H - 1}'>{f'{x0:.0f} s' if timed else ''}</text>"
            f"<text x='{_CHART_W - 4}' y='{_CHART_H - 1}' text-anchor='end'>{_t(span)}</text>"
            f"<polyline points='{line}'/></svg>")
