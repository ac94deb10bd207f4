"""Report generation: the HTML report, index.json and transcript files for a full run of every
protocol (goal: < 10 s, issue "Compliance reports").

The input is built, not recorded, so that it is the worst case: as many cases as a full run of
the five suites (about 940; ``--quick``: 100), every one of them failing with a wire transcript
of 40 entries (two connections, 64 to 512 bytes each), against each protocol's real catalogue.
Timed: loading the result files and writing every format (``report_index.write`` to a
directory), best of a few rounds: ``report.write`` in seconds, ``peer`` the goal's 10 s and
``ratio`` the time over it (``<= 1`` met); ``report.html.mb`` the HTML file's size. No other
tool writes this report, so no peer implementation.
"""
from __future__ import annotations

import json
import os
import tempfile
import time

from wirecheck.conformance.report.index import write
from wirecheck.conformance.requirements import catalogue, catalogue_data
from wirecheck.conformance.report.results import load_runs
from wirecheck.reference_impl.core import registry

from benchmarks.bench_blipmq_decode import result

GOAL_SECONDS = 10.0
CASES = {False: 940, True: 100}


def _wire(seed: int) -> list[dict]:
    conns = []
    for c in range(2):
        entries = []
        for k in range(20):
            size = 64 + (seed * 31 + k * 17) % 449
            entries.append([k * 0.0013, "->" if k % 2 == 0 else "<-", bytes((seed + k + i) % 256 for i in range(size)).hex(),
                            f"FRAME{k}(correlation_id={seed}, field='value {k}')", size])
        conns.append({"name": f"connection {c + 1}", "entries": entries})
    return conns


def _result_files(folder: str, cases: int) -> list[str]:
    specs = registry.all_protocols()
    paths = []
    for n, spec in enumerate(specs):
        cat = catalogue(spec.requirements)
        ids = sorted(cat)
        tests = []
        for i in range(cases // len(specs)):
            wire = _wire(i + n * 1000)
            text = "\n".join(f"{e[0]:8.3f}s {e[1]} {e[3]}\n           {e[2][:512]}" for c in wire for e in c["entries"])
            tests.append({"nodeid": f"{spec.id}/test_x.py::test_{i}", "protocol": spec.id,
                          "requirements": [ids[i % len(ids)]], "verdict": "FAIL",
                          "message": f"expected FRAME(code=400), got FRAME(code={401 + i % 5})",
                          "transcript": text, "wire": wire, "expected": None, "actual": None,
                          "duration": 0.01})
        summary = {spec.id: {"counts": {"FAIL": len(tests)}, "coverage": {"MUST": [1, 1], "SHOULD": [0, 0],
                                                                            "MAY": [0, 0], "untestable": 0},
                             "failing_requirements": sorted({t["requirements"][0] for t in tests}),
                             "waivers": {}, "stale_waivers": [],
                             "catalogue": catalogue_data(cat)}}
        path = os.path.join(folder, f"{spec.id}.json")
        with open(path, "w") as fh:
            json.dump({"started": 0, "finished": 60, "label": "synthetic", "target": None, "profile": None,
                       "strict": False, "summary": summary, "tests": tests}, fh)
        paths.append(path)
    return paths


def run(quick: bool = False) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        files = _result_files(tmp, CASES[quick])
        best = float("inf")
        for rep in range(2 if quick else 3):
            out = os.path.join(tmp, f"out{rep}")
            start = time.perf_counter()
            write(load_runs(files), out)
            best = min(best, time.perf_counter() - start)
        size = os.path.getsize(os.path.join(tmp, "out0", "index.html"))
    return [result("report.write", round(best, 3), "s", GOAL_SECONDS, round(best / GOAL_SECONDS, 4), "<= 1"),
            result("report.html.mb", round(size / 1e6, 3), "MB")]
