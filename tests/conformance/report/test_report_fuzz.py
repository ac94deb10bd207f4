"""The report's Fuzzing section: ``wirecheck report`` reads fuzz campaign summaries (``wirecheck
fuzz --all``) beside result files, one real campaign made here (blipmq, in process, 8 s) and
hand-made variants of it with findings; jobs, escaped findings, coverage charts, newest campaign
first, index.json's campaigns without timelines, the same refusals for what is neither; and the
page in headless Chromium with its script running and no console message."""
import copy
import json
import re
import subprocess

import pytest

from wirecheck.conformance.report.html import render
from wirecheck.conformance.report.results import Campaign, ReportError, load_inputs

from tests.conformance.report.test_reports import _chromium, wirecheck

DAY = 86400.0


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A real campaign summary and a real result file, in one directory."""
    out = tmp_path_factory.mktemp("fuzzreport")
    camp = wirecheck("fuzz", "--all", "--protocol", "blipmq", "--time", "8", "--jobs", "2", "--no-live",
                     "--out", str(out / "campaign.json"), "--findings", str(out / "findings"), "--no-progress",
                     timeout=300)
    assert camp.returncode in (0, 1), camp.stdout + camp.stderr[-3000:]
    check = wirecheck("check", "--protocol", "blipmq", "--label", "reference", "--report",
                      str(out / "result.json"), "--", "-k", "test_ping_after_auth_gets_pong")
    assert check.returncode == 0, check.stdout[-2000:]
    return out


def with_findings(doc: dict) -> dict:
    """The real campaign a day earlier, with what a bad night finds: an in-process crash found
    by two jobs and minimized (its signature carries markup, quotes and control bytes, as a
    target's bytes can), a live crash with its reproduce command (the shape wirecheck/fuzz/live/fuzzer.py and
    wirecheck/fuzz/campaign.py give it), and a job that failed."""
    doc = copy.deepcopy(doc)
    doc["started"] -= DAY
    names = [j["name"] for j in doc["jobs"]]
    crash = {"kind": "crash", "signature": "crash in blipmq_decoder: <script>alert('x')</script> & \"q\" \x00\x1b",
             "file": "/f/blipmq_decoder/crash-1f2e", "detail": "KeyError: <b>bold</b>", "count": 3,
             "mode": "inprocess", "target": names[0], "found_by": names[:2],
             "minimized": {"before": 120, "after": 9, "signature": "s", "file": "/f/crash-1f2e.min"}}
    live = {"kind": "hang", "signature": "hang: no answer to <PING> within 2.0 s", "count": 1,
            "file": "/f/live-blipmq/hang-b72da00ea8.bin", "reproduced": True, "frames": 2, "bytes": 22,
            "reproduce": "wirecheck replay /f/live-blipmq/hang-b72da00ea8.bin --protocol blipmq --target HOST:PORT",
            "mode": "live", "target": "live_blipmq", "found_by": ["live_blipmq"]}
    doc["jobs"][0]["findings"] = [{k: crash[k] for k in ("kind", "signature", "file", "detail", "count")}]
    doc["jobs"].append({"name": "live_blipmq", "seconds_budget": 8.0, "error": "", "mode": "live",
                        "protocol": "blipmq", "profile": None, "target": "127.0.0.1:40000", "execs": 634,
                        "exec_per_s": 79.2, "seeds": 117, "corpus_size": 183, "coverage": 66, "restarts": 1,
                        "stopped": "", "findings": [{k: live[k] for k in ("kind", "signature", "count", "file",
                                                                             "reproduced", "frames", "bytes")}],
                        # a kill -9 by hand: seen, replayed three times, never given back
                        "not_reproduced": [{"kind": "crash", "signature": "crash: killed by <SIGKILL>",
                                            "replays": 3, "file": "/f/live-blipmq/crash-0d.bin"}]})
    doc["jobs"].append({"name": "blipmq_broken", "seconds_budget": 8.0, "error": "exit 1: <Traceback>"})
    doc["findings"], doc["errors"] = [crash, live], ["blipmq_broken"]
    doc["execs"] += 634
    return doc


def test_campaign_beside_a_result_file(inputs, tmp_path):
    doc = json.loads((inputs / "campaign.json").read_text())
    assert doc["kind"] == "fuzz-campaign" and not doc["errors"], doc["errors"]
    result = wirecheck("report", str(inputs / "result.json"), str(inputs / "campaign.json"),
                       "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "r" / "index.html").read_text()
    # The result file's report is whole.
    assert "<h2>Summary</h2>" in page and "BLIP-PING-001" in page and 'class="v v-PASS"' in page
    fuzzing = page[page.index("<section id='fuzzing'>"):]
    fuzzing = fuzzing[:fuzzing.index("</section>")]
    assert "<h2>Fuzzing</h2>" in fuzzing and f"{doc['execs']:,}" in fuzzing
    assert time_label(doc) in fuzzing and "budget 8.0 s" in fuzzing
    assert ("No findings." in fuzzing) == (not doc["findings"])  # the reference decoders: none expected
    for job in doc["jobs"]:
        row = re.search(rf"<tr data-proto='blipmq' data-failed='[01]'><td>{job['name']}</td>(.*?)</tr>", fuzzing)
        assert row, job["name"]
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
        assert cells[:7] == [job["target"], "blipmq", "inprocess", f"{job['execs']:,}",
                             f"{job['exec_per_s']:,.1f}", str(job["coverage"]), str(job["corpus_size"])], cells
        # Coverage over time: a polyline through every timeline point, no script in the chart.
        svg = re.search(r"<svg [^>]*class='chart'.*?</svg>", row.group(1)).group(0)
        assert "<script" not in svg and "href" not in svg
        points = re.search(r"<polyline points='([^']*)'", svg).group(1).split()
        assert len(points) == len(job["timeline"]) > 1
        assert f">{max(p[2] for p in job['timeline'])}</text>" in svg
    index = json.loads((tmp_path / "r" / "index.json").read_text())
    assert set(index["runs"]) == {"reference"}
    (camp,) = index["campaigns"]
    assert camp["file"] == str(inputs / "campaign.json") and camp["execs"] == doc["execs"]
    assert [j["name"] for j in camp["jobs"]] == [j["name"] for j in doc["jobs"]]
    assert all("timeline" not in j and j["coverage"] > 0 for j in camp["jobs"])


def time_label(doc: dict) -> str:
    import time
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(doc["started"]))


def test_findings_escaped_and_campaigns_newest_first(inputs, tmp_path):
    doc = json.loads((inputs / "campaign.json").read_text())
    folder = tmp_path / "nightly"
    folder.mkdir()
    (folder / "campaign-new.json").write_text((inputs / "campaign.json").read_text())
    (folder / "campaign-old.json").write_text(json.dumps(with_findings(doc), indent=1))
    (folder / "result.json").write_text((inputs / "result.json").read_text())
    (folder / "notes.json").write_text('{"unrelated": true}')           # skipped in a directory
    result = wirecheck("report", str(folder), "--out", str(tmp_path / "r.html"))
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "r.html").read_text()
    new, old = page.index(time_label(doc)), page.index(time_label({"started": doc["started"] - DAY}))
    assert page.index("<h2>Fuzzing</h2>") < new < old, "newest campaign first"
    assert "<script>alert" not in page and "<b>bold</b>" not in page and "<Traceback>" not in page
    assert "<PING>" not in page
    findings = page[page.index("<th>reproduce</th>"):]
    findings = findings[:findings.index("</table>")]
    rows = re.findall(r"<tr data-proto='blipmq' data-failed='1'>(.*?)</tr>", findings)
    assert len(rows) == 2
    crash, hang = rows
    assert ("crash in blipmq_decoder: &lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; "
            "&quot;q&quot; \\x00\\x1b") in crash
    assert "\x00" not in page and "\x1b" not in page
    assert "KeyError: &lt;b&gt;bold&lt;/b&gt;" in crash
    assert f"{doc['jobs'][0]['name']}, {doc['jobs'][1]['name']}" in crash
    assert ">3</td>" in crash and "/f/blipmq_decoder/crash-1f2e" in crash
    assert "120 &rarr; 9 bytes" in crash and "/f/crash-1f2e.min" in crash
    assert "hang: no answer to &lt;PING&gt; within 2.0 s" in hang and "reproduced" in hang
    assert "wirecheck replay /f/live-blipmq/hang-b72da00ea8.bin --protocol blipmq --target HOST:PORT" in hang
    assert "exit 1: &lt;Traceback&gt;" in page and "job errors: blipmq_broken" in page
    gone = page[page.index("event(s) that a freshly started target never gave back"):]
    gone = gone[:gone.index("</table>")]
    assert gone.startswith("event(s)") and page[page.index(gone) - 5:page.index(gone)] == "<p>1 "
    assert "crash: killed by &lt;SIGKILL&gt;" in gone and "live_blipmq" in gone and "0 of 3" in gone
    assert "/f/live-blipmq/crash-0d.bin" in gone and "killed by" not in findings
    # A job that found something is "failed" for the filter; one that did not is not.
    assert re.search(rf"data-failed='1'><td>{doc['jobs'][0]['name']}</td>", page)
    assert re.search(rf"data-failed='0'><td>{doc['jobs'][1]['name']}</td>", page)
    assert page.count("class='chart'") == 2 * len(doc["jobs"]), "in-process jobs only"
    inputs_read = load_inputs([str(folder)])
    assert [c.path for c in inputs_read.campaigns] == [str(folder / "campaign-new.json"),
                                                       str(folder / "campaign-old.json")]
    assert [r.label for r in inputs_read.runs] == ["reference"]


def test_index_json_of_campaigns(inputs, tmp_path):
    doc = json.loads((inputs / "campaign.json").read_text())
    (tmp_path / "old.json").write_text(json.dumps(with_findings(doc)))
    result = wirecheck("report", str(tmp_path / "old.json"), str(inputs / "campaign.json"),
                       "--out", str(tmp_path / "out" / "index.json"))
    assert result.returncode == 0, result.stderr
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    assert index["runs"] == {}
    new, old = index["campaigns"]
    assert new["started"] > old["started"] and old["file"] == str(tmp_path / "old.json")
    assert [f["kind"] for f in old["findings"]] == ["crash", "hang"]
    assert old["findings"][0]["signature"].endswith("\x00\x1b") and old["errors"] == ["blipmq_broken"]
    assert old["findings"][0]["minimized"]["after"] == 9
    assert not any("timeline" in j for c in index["campaigns"] for j in c["jobs"])
    assert any(j.get("findings") for j in old["jobs"])


def test_what_is_neither_is_refused(inputs, tmp_path):
    cases = {
        "unknown.json": ('{"kind": "something-else", "tests": [], "summary": {}}', "not a wirecheck result file"),
        "plain.json": ('{"a": 1}', "not a wirecheck result file"),
        "one-run.json": (json.dumps({"mode": "live", "protocol": "blipmq", "execs": 10, "findings": []}),
                         "one fuzz run's summary"),
        "no-jobs.json": ('{"kind": "fuzz-campaign", "findings": []}', "without its 'jobs' and 'findings'"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        result = wirecheck("report", str(inputs / "campaign.json"), str(tmp_path / name),
                           "--out", str(tmp_path / "o.html"))
        assert result.returncode == 2 and message in result.stderr and name in result.stderr, (name, result.stderr)
        # the input that can be read makes the report all the same; the one line says what was left out
        assert "left out" in result.stderr and (tmp_path / "o.html").exists(), result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        (tmp_path / "o.html").unlink()
    # a result file cut short (a run killed while writing, before files were written whole)
    text = (inputs / "result.json").read_text()
    (tmp_path / "cut.json").write_text(text[:len(text) // 2])
    result = wirecheck("report", str(inputs / "result.json"), str(tmp_path / "cut.json"), "--out", str(tmp_path / "o.html"))
    assert result.returncode == 2 and "cut.json: not a JSON result file" in result.stderr
    assert "test_ping_after_auth_gets_pong" in (tmp_path / "o.html").read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.json").write_text('{"unrelated": true}')
    result = wirecheck("report", str(empty), "--out", str(tmp_path / "o.html"))
    assert result.returncode == 2 and "no result files or fuzz campaign summaries" in result.stderr
    with pytest.raises(ReportError, match="fuzz campaign summary, not a result file"):
        from wirecheck.conformance.report.results import load_runs
        load_runs([str(inputs / "campaign.json")])


def test_campaigns_alone_and_odd_timelines():
    """A report of campaigns only has no empty run tables; a timeline without seconds is drawn
    over its points, a job without one gets no chart, an empty campaign says so."""
    jobs = [{"name": "a", "mode": "inprocess", "protocol": "vibemq", "target": "a", "execs": 5,
             "timeline": [[None, 1, 10, 1, 1], [None, 2, 12, 1, 1], ["x", 3, 15, 2, 2]]},
            {"name": "b", "mode": "inprocess", "protocol": "vibemq", "target": "b", "timeline": []},
            {"name": "c", "mode": "inprocess", "protocol": "vibemq", "target": "c", "timeline": [[1.0, 2, 7, 1, 1]]}]
    c = Campaign("campaign x", "/c.json", {"kind": "fuzz-campaign", "started": 1.0, "jobs": jobs, "findings": []})
    page = render([], campaigns=[c])
    assert "<h2>Runs</h2>" not in page and "<h2>Fuzzing</h2>" in page and "vibemq" in page
    assert page.count("class='chart'") == 2
    assert "3 points</text>" in page and "budget ?" in page
    assert c.summary()["jobs"][0] == {k: v for k, v in jobs[0].items() if k != "timeline"}
    assert "<h2>Fuzzing</h2>" not in render([]) and "<h2>Runs</h2>" in render([])


def test_fuzzing_section_in_headless_chromium(inputs, tmp_path):
    doc = json.loads((inputs / "campaign.json").read_text())
    (tmp_path / "old.json").write_text(json.dumps(with_findings(doc)))
    result = wirecheck("report", str(inputs / "result.json"), str(inputs / "campaign.json"),
                       str(tmp_path / "old.json"), "--out", str(tmp_path / "r.html"))
    assert result.returncode == 0, result.stderr
    browser = _chromium()
    flags = ["--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
             "--enable-logging=stderr", "--log-level=0"]
    url = (tmp_path / "r.html").as_uri()

    def dom(fragment: str = "") -> str:
        proc = subprocess.run([browser, *flags, "--dump-dom", url + fragment], capture_output=True, text=True,
                              timeout=120, check=True)
        console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
        assert not console, console                     # no script error, no message at all
        return proc.stdout

    every = dom()
    assert "requirement(s) shown" in every, "the filter script ran to its end"
    assert "<h2>Fuzzing</h2>" in every and every.count("<svg") == 2 * len(doc["jobs"]) and "<polyline" in every
    assert "&lt;script&gt;alert" in every and "<script>alert" not in every
    failed = dom("#failed-only")
    # Failed only: the jobs that found nothing are hidden; the findings and their finders shown.
    hidden = re.findall(r'<tr data-proto="blipmq" data-failed="0" class="hidden"><td>([^<]*)</td>', failed)
    quiet = [j["name"] for d in (doc, with_findings(doc)) for j in d["jobs"] if j.get("protocol") and not j["findings"]]
    assert sorted(hidden) == sorted(quiet) and quiet, hidden
    assert len(re.findall(r'<tr data-proto="blipmq" data-failed="1">', failed)) >= 4
    assert '<tr data-proto="blipmq" data-failed="1">' in every
