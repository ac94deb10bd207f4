"""The report's Captures section: ``wirecheck report`` reads capture analyses (``wirecheck analyze
CAPTURES --out DIR``: DIR, or DIR/summary.json) beside result files and campaign summaries. The
summaries are made by hand here in the shape wirecheck/pipeline/spark_job.py writes (no Spark): loading,
refusals, violations linked to the requirements' rows, bar charts, latency in ms, codes,
totals, the filters' attributes (and the filters run in headless Chromium), index.json's
"analyses", and a report of a suite run, a campaign and an analysis together."""
import copy
import json
import re
import subprocess

import pytest

from wirecheck.conformance.report.html import render
from wirecheck.conformance.report.index import index, write
from wirecheck.conformance.report.results import Analysis, Campaign, ReportError, Run, load_inputs, load_run, load_runs

from tests.conformance.report.test_reports import _chromium, wirecheck

TYPES = {"HELLO": (390, 4680.0), "AUTH": (388, 9312.0), "PUBLISH": (12000, 960000.0), "PING": (40, 320.0),
         "NACK": (826, 13216.0)}
# In the order the Spark job writes them (sorted as text), not by size.
SIZES = {"<=16": 1040, "<=256": 1100, "<=262144": 3, "<=64": 11500, ">16777216": 1}
LATENCY = {"p50": 0.00012, "p90": 0.0009, "p99": 0.0042, "max": 0.25, "mean": 0.0003}


def summary(**changes) -> dict:
    """An analysis summary as ``wirecheck analyze`` writes it: blipmq with two requirements
    broken (one the suite knows, one it does not), vibemq with one, signalr clean."""
    stats = [{"protocol": "blipmq", "metric": "type", "key": k, "count": n, "value": b} for k, (n, b) in TYPES.items()]
    stats += [{"protocol": "blipmq", "metric": "size", "key": k, "count": n, "value": None} for k, n in SIZES.items()]
    stats += [{"protocol": "blipmq", "metric": "code", "key": k, "count": n, "value": None}
              for k, n in (("NACK 401", 375), ("NACK 404", 225), ("NACK 400", 226))]
    stats += [{"protocol": "blipmq", "metric": "latency", "key": k, "count": 800, "value": v} for k, v in LATENCY.items()]
    stats += [{"protocol": "blipmq", "metric": "flows", "key": k, "count": 392, "value": v}
              for k, v in (("flows", 392.0), ("frames", 13644.0), ("bytes", 18054822.0), ("errors", 7.0),
                           ("violations", 3.0))]
    stats += [{"protocol": "signalr", "metric": "type", "key": f"T{i:02d}", "count": 100 - i, "value": 1000.0}
              for i in range(30)]
    stats += [{"protocol": "signalr", "metric": "code", "key": f"Close Connection closed with an error. E{i}",
               "count": 1, "value": None} for i in range(14)]
    stats += [{"protocol": "signalr", "metric": "flows", "key": "flows", "count": 5, "value": 5.0},
              {"protocol": "vibemq", "metric": "flows", "key": "flows", "count": 2, "value": 2.0}]
    example = {"file": "/caps/blipmq/night-1.pcap", "flow": "10.0.0.1:40000->10.0.0.2:5555", "index": 3,
               "direction": "s2c", "message": "PUBLISH accepted before AUTH <b>x</b> \x00"}
    violations = [
        {"protocol": "blipmq", "requirement": "BLIP-AUTH-001", "level": "MUST", "count": 2, "flows": 1,
         "examples": [example, {**example, "index": 7, "direction": "c2s", "message": "second"}]},
        {"protocol": "blipmq", "requirement": "BLIP-NEW-999", "level": "SHOULD", "count": 1, "flows": 1,
         "examples": [{**example, "file": "/caps/blipmq/night-2.pcap"}]},
        {"protocol": "vibemq", "requirement": "VIBE-FRAME-003", "level": "MUST", "count": 5, "flows": 2,
         "examples": [{**example, "file": "/caps/v.pcap", "message": "bad length"}]},
    ]
    doc = {"kind": "capture-analysis", "master": "local[*]", "out": "/abs/nightly", "partitions": 8, "files": 17,
           "input_bytes": 1093389, "protocol": None, "profile": None,
           "rows": {"frames": 69550, "violations": 8, "flows": 1571, "stats": len(stats)}, "seconds": 15.1,
           "report": {"violations": violations, "stats": stats}}
    doc.update(changes)
    return doc


def analysis_dir(tmp_path, name="analysis", **changes):
    """An analysis's output directory: summary.json and Parquet table directories (never read)."""
    out = tmp_path / name
    for table in ("frames", "violations", "flows", "stats"):
        (out / table).mkdir(parents=True)
        (out / table / "part-00000.snappy.parquet").write_bytes(b"PAR1\x00garbage")
    (out / "summary.json").write_text(json.dumps(summary(**changes), indent=1) + "\n")
    return out


def run(label="reference") -> Run:
    """A blipmq suite run whose catalogue knows BLIP-AUTH-001 (tested) and BLIP-PING-001 (not)."""
    catalogue = {"BLIP-AUTH-001": {"level": "MUST", "section": "4.1", "summary": "AUTH before HELLO gets NACK 400"},
                 "BLIP-PING-001": {"level": "MUST", "section": "4.9", "summary": "PING gets PONG"}}
    tests = [{"nodeid": "suites/blipmq/test_auth.py::test_auth_before_hello", "protocol": "blipmq",
              "verdict": "PASS", "requirements": ["BLIP-AUTH-001"], "duration": 0.01, "message": ""}]
    return Run(label, f"/r/{label}.json", {"label": label, "tests": tests, "started": 1.0, "finished": 2.0,
                                           "summary": {"blipmq": {"catalogue": catalogue, "counts": {"PASS": 1},
                                                                  "coverage": {"MUST": [1, 2]}}}})


def section(page: str) -> str:
    part = page[page.index("<section id='captures'>"):]
    return part[:part.index("</section>")]


def block(page: str, proto: str) -> str:
    """One protocol's block of the first analysis."""
    start = page.index(f"<div id='captures-0-{proto}'")
    return page[start:page.index("</div></div>", start)]


def test_loaded_from_its_directory_and_from_its_summary(tmp_path):
    out = analysis_dir(tmp_path)
    (a,) = load_inputs([str(out)]).analyses
    assert a.path == str(out / "summary.json") and a.label == "capture analysis /abs/nightly"
    assert a.protocols == ["blipmq", "signalr", "vibemq"] and a.rows["frames"] == 69550
    assert [r["key"] for r in a.stats_of("blipmq", "latency")] == list(LATENCY)
    (b,) = load_inputs([str(out / "summary.json")]).analyses
    assert b.doc == a.doc
    # A time in the summary names it; newest first; equal labels made unique.
    later = analysis_dir(tmp_path, "later", started=1_700_000_000.0)
    again = analysis_dir(tmp_path, "again")
    inputs = load_inputs([str(out), str(later), str(again)])
    assert [x.label for x in inputs.analyses] == ["capture analysis 2023-11-14 22:13:20 UTC",
                                                  "capture analysis /abs/nightly", "capture analysis /abs/nightly #2"]
    assert inputs.runs == [] and inputs.campaigns == []
    # Beside result files in one directory: both read.
    (out / "result.json").write_text(json.dumps(run().doc))
    both = load_inputs([str(out)])
    assert [r.label for r in both.runs] == ["reference"] and len(both.analyses) == 1
    # Callers that want suite runs only refuse it instead of dropping it.
    with pytest.raises(ReportError, match="summary.json: a capture analysis summary, not a result file"):
        load_runs([str(out)])
    with pytest.raises(ReportError, match="a capture analysis summary, not a result file"):
        load_run(str(out / "summary.json"))


@pytest.mark.parametrize("change, message", [
    ({"report": None}, "a capture analysis summary without its 'report' block"),
    ({"report": {"violations": []}}, "without its 'report' block"),
    ({"report": {"violations": [], "stats": [{"protocol": "blipmq", "metric": "type", "key": "X", "count": "9"}]}},
     "stats row 0 is not {protocol, metric, key, count, value}"),
    ({"report": {"violations": [], "stats": [{"protocol": "b", "metric": "t", "key": "X", "count": 1, "value": "x"}]}},
     "stats row 0"),
    ({"report": {"violations": [{"protocol": "blipmq", "count": 1}], "stats": []}}, "violation 0 is not"),
    ({"report": {"violations": [{"protocol": "b", "requirement": "R", "count": 1, "examples": ["x"]}], "stats": []}},
     "violation 0 is not"),
    ({"rows": [1, 2]}, "its 'rows' is not an object"),
])
def test_malformed_summary_refused(tmp_path, change, message):
    out = analysis_dir(tmp_path, **change)
    for path in (out, out / "summary.json"):
        with pytest.raises(ReportError) as info:
            load_inputs([str(path)])
        assert str(info.value).startswith(f"{out / 'summary.json'}: ") and message in str(info.value), info.value


def test_refusals_through_the_command_line(tmp_path):
    out = analysis_dir(tmp_path, report={"stats": []})
    result = wirecheck("report", str(out), "--out", str(tmp_path / "o.html"))
    assert result.returncode == 2 and "without its 'report' block" in result.stderr
    assert str(out / "summary.json") in result.stderr and not (tmp_path / "o.html").exists()
    fuzz = tmp_path / "fuzz-analysis"
    fuzz.mkdir()
    (fuzz / "summary.json").write_text('{"kind": "fuzz-analysis", "campaigns": 3}')
    result = wirecheck("report", str(fuzz / "summary.json"), "--out", str(tmp_path / "o.html"))
    assert result.returncode == 2 and "an analyze-fuzz summary, which the report does not read" in result.stderr


def test_violations_by_requirement_link_to_the_suite_section():
    a = Analysis("capture analysis x", "/a/summary.json", summary())
    page = render([run()], analyses=[a])
    cap = section(page)
    rows = re.findall(r"<tr data-proto='([^']*)' data-level='([^']*)' data-failed='1'>(.*?)</tr>", cap)
    assert [(p, lv, re.findall(r"<td[^>]*>(.*?)</td>", r)[1]) for p, lv, r in rows][1:] == [
        ("blipmq", "SHOULD", "BLIP-NEW-999"), ("vibemq", "MUST", "VIBE-FRAME-003")]
    auth = rows[0][2]
    # The requirement the suite knows links to its row in the protocol's section, which exists.
    href = re.search(r"<a href='#([^']+)' title='AUTH before HELLO gets NACK 400'>BLIP-AUTH-001</a>", auth).group(1)
    assert re.search(rf"<tr id='{href}' class='req' data-proto='blipmq'[^>]*><td><a href='#[^']+'>BLIP-AUTH-001",
                     page)
    assert page.index(f"id='{href}'") > page.index("</section>", page.index("<section id='captures'>"))
    cells = re.findall(r"<td[^>]*>(.*?)</td>", auth)
    assert cells[0] == "blipmq" and cells[2:5] == ["MUST", "2", "1"]
    # Its examples: file, conversation, frame index, the side at fault, the message escaped.
    examples = re.findall(r"<li>(.*?)</li>", cells[5])
    assert len(examples) == 2
    assert ("<code class='sig' title='/caps/blipmq/night-1.pcap'>night-1.pcap</code> "
            "10.0.0.1:40000-&gt;10.0.0.2:5555 frame #3, server (s2c) at fault: "
            "PUBLISH accepted before AUTH &lt;b&gt;x&lt;/b&gt; \\x00") == examples[0]
    assert "frame #7, client (c2s) at fault: second" in examples[1]
    assert "<b>x</b>" not in page and "\x00" not in page
    # What no suite section has no link: an ID the suite does not know, a protocol not run.
    assert "href" not in rows[1][2] and "href" not in rows[2][2]
    assert "and 4 more" in rows[2][2]              # 5 violations, 1 example kept
    without_run = section(render([], analyses=[a]))
    assert "<a href" not in without_run and "BLIP-AUTH-001" in without_run


def test_charts_latency_codes_and_totals():
    a = Analysis("capture analysis x", "/a/summary.json", summary())
    page = render([], analyses=[a])
    assert "<h2>Captures</h2>" in page and "<h2>Runs</h2>" not in page
    assert "<a href='#captures'>1 capture analysis(es)</a>" in page
    assert ("<b>17</b> capture file(s) &middot; 1,093,389 bytes (1.0 MiB) read &middot; on local[*] in 8 "
            "partitions &middot; took 15.1 s") in page and "<b>8</b> violation(s)" in page
    blip = block(page, "blipmq")
    assert "392 flows &middot; 13,644 frames &middot; 18,054,822 bytes (17.2 MiB) &middot; 7 errors" in blip
    types = re.search(r"<svg id='captures-0-blipmq-types' class='chart bars'.*?</svg>", blip).group(0)
    assert "<title>frame types of blipmq: 13,644 frames of 5 type(s)</title>" in types
    assert types.count("<rect") == len(TYPES) and "<script" not in types and "href" not in types
    bars = re.findall(r"<g><title>([^<]*)</title>", types)
    assert bars[0] == "PUBLISH: 12,000 frame(s), 960,000 bytes"          # most frequent first
    assert "HELLO: 390 frame(s), 4,680 bytes" in bars and len(bars) == len(TYPES)
    # The widest bar is the largest count; the others in proportion.
    widths = [float(w) for w in re.findall(r"<rect [^>]*width='([0-9.]+)'", types)]
    assert widths[0] == max(widths) and widths[-1] == pytest.approx(widths[0] * 40 / 12000, abs=1.0)
    sizes = re.search(r"<svg id='captures-0-blipmq-sizes' class='chart bars'.*?</svg>", blip).group(0)
    assert sizes.count("<rect") == len(SIZES)
    assert re.findall(r"<g><title>([^:]*):", sizes) == ["\u226416 B", "\u226464 B", "\u2264256 B", "\u2264256 KiB",
                                                                  "&gt;16 MiB"]
    assert "<title>frame sizes of blipmq: 13,644 frames in 5 size bucket(s)</title>" in sizes
    # Latency in milliseconds, with the number of exchanges.
    latency = re.search(r"<tr><td>request to answer</td>(.*?)</tr>", blip).group(1)
    assert re.findall(r"<td class='num'>([^<]*)</td>", latency) == [
        "0.120 ms", "0.900 ms", "4.200 ms", "250.0 ms", "0.300 ms", "800"]
    codes = re.findall(r"<tr><td>NACK</td><td><code class='sig'>(\d+)</code></td><td class='num'>(\d+)</td></tr>",
                       blip)
    assert codes == [("401", "375"), ("400", "226"), ("404", "225")]
    # Thirty types: nineteen bars and one for the other eleven; fourteen codes folded.
    sig = block(page, "signalr")
    types = re.search(r"<svg id='captures-0-signalr-types'.*?</svg>", sig).group(0)
    assert types.count("<rect") == 20 and "of 30 type(s)" in types
    assert "<title>11 others: 836 frame(s), 11,000 bytes</title>" in types
    assert "<details><summary>14 response/error codes in 14 frames</summary>" in sig
    assert "Connection closed with an error. E13" in sig
    assert "No request/response latency measured." in sig
    vibe = block(page, "vibemq")
    assert "<svg" not in vibe and "2 flows" in vibe


def test_filters_apply_to_the_section(tmp_path):
    a = Analysis("capture analysis x", "/a/summary.json", summary())
    page = render([run()], analyses=[a])
    # The protocol filter offers the analysis's protocols, not the run's only.
    assert re.findall(r"<option value='([^']+)'>", page) == ["blipmq", "signalr", "vibemq"]
    assert re.search(r"<div id='captures-0-blipmq' data-proto='blipmq' data-failed='1'>", page)
    assert re.search(r"<div id='captures-0-signalr' data-proto='signalr' data-failed='0'>", page)
    assert re.search(r"<div id='captures-0-vibemq' data-proto='vibemq' data-failed='1'>", page)
    (tmp_path / "r.html").write_text(page)
    browser = _chromium()
    flags = ["--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
             "--enable-logging=stderr", "--log-level=0"]

    def dom(fragment: str) -> str:
        proc = subprocess.run([browser, *flags, "--dump-dom", (tmp_path / "r.html").as_uri() + fragment],
                              capture_output=True, text=True, timeout=120, check=True)
        assert not [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
        return section(proc.stdout.replace('"', "'"))

    shown = dom("#failed-only&protocol=blipmq")
    assert "<div id='captures-0-signalr' data-proto='signalr' data-failed='0' class='hidden'>" in shown
    assert "<div id='captures-0-vibemq' data-proto='vibemq' data-failed='1' class='hidden'>" in shown
    assert "<div id='captures-0-blipmq' data-proto='blipmq' data-failed='1'>" in shown      # shown: no class
    assert len(re.findall(r"<tr data-proto='blipmq' data-level='[A-Z]+' data-failed='1'>", shown)) == 2
    assert len(re.findall(r"<tr data-proto='vibemq' [^>]*class='hidden'>", shown)) == 1
    should = dom("#level=SHOULD")
    assert re.search(r"<tr data-proto='blipmq' data-level='SHOULD' data-failed='1'><td>blipmq</td>"
                     r"<td class='rid'>BLIP-NEW-999", should)
    assert len(re.findall(r"data-level='MUST' data-failed='1' class='hidden'>", should)) == 2


def test_index_json_analyses(tmp_path):
    out = analysis_dir(tmp_path)
    inputs = load_inputs([str(out)])
    write(inputs.runs, str(tmp_path / "i" / "index.json"), inputs.campaigns, inputs.analyses)
    doc = json.loads((tmp_path / "i" / "index.json").read_text())
    (entry,) = doc["analyses"]
    assert entry["file"] == str(out / "summary.json") and entry["label"] == "capture analysis /abs/nightly"
    assert entry["kind"] == "capture-analysis" and entry["rows"] == summary()["rows"]
    assert entry["report"] == summary()["report"] and doc["runs"] == {} and doc["campaigns"] == []
    assert index([run()], None)["analyses"] == []


def test_run_campaign_and_analysis_in_one_report(tmp_path):
    campaign = Campaign("campaign 1", "/c.json", {
        "kind": "fuzz-campaign", "started": 1.0, "findings": [],
        "jobs": [{"name": "blipmq_decoder", "mode": "inprocess", "protocol": "blipmq", "target": "t", "execs": 5,
                  "timeline": [[0.0, 1, 10, 1, 1], [1.0, 2, 12, 1, 1]]}]})
    (tmp_path / "campaign.json").write_text(json.dumps(campaign.doc))
    (tmp_path / "result.json").write_text(json.dumps(run().doc))
    out = analysis_dir(tmp_path)
    inputs = load_inputs([str(tmp_path / "result.json"), str(tmp_path / "campaign.json"), str(out)])
    assert (len(inputs.runs), len(inputs.campaigns), len(inputs.analyses)) == (1, 1, 1)
    write(inputs.runs, str(tmp_path / "r"), inputs.campaigns, inputs.analyses)
    page = (tmp_path / "r" / "index.html").read_text()
    order = [page.index(s) for s in ("<h2>Runs</h2>", "<h2>Summary</h2>", "<h2>Fuzzing</h2>", "<h2>Captures</h2>",
                                     "<section id='blipmq-reference'")]
    assert order == sorted(order)
    assert "<a href='#fuzzing'>1 fuzz campaign(s)</a> &middot; <a href='#captures'>1 capture analysis(es)</a>" in page
    assert page.count("class='chart'") == 1 and page.count("class='chart bars'") == 2 + 1
    assert "<a href='#blipmq_reference-req-BLIP_AUTH_001'" in page
    doc = json.loads((tmp_path / "r" / "index.json").read_text())
    assert set(doc["runs"]) == {"reference"} and [c["file"] for c in doc["campaigns"]] == [str(tmp_path / "campaign.json")]
    assert [x["file"] for x in doc["analyses"]] == [str(out / "summary.json")]


def test_analysis_without_violations_or_stats():
    a = Analysis("capture analysis empty", "/e/summary.json",
                 summary(report={"violations": [], "stats": []}, rows={"frames": 0}))
    cap = section(render([], analyses=[a]))
    assert "No violations." in cap and "<svg" not in cap and "rows: frames 0" in cap
    b = copy.deepcopy(summary())
    del b["report"]["violations"][0]["examples"]
    assert "BLIP-AUTH-001" in section(render([], analyses=[Analysis("x", "/x", b)]))


def test_wirecheck_report_command_draws_the_section(tmp_path):
    out = analysis_dir(tmp_path)
    result = wirecheck("report", str(out), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    assert "<h2>Captures</h2>" in (tmp_path / "r" / "index.html").read_text()
    assert json.loads((tmp_path / "r" / "index.json").read_text())["analyses"]
