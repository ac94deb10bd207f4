"""``wirecheck report``: one report (HTML or JSON) of result files, fuzz campaign summaries and
capture analyses; the inputs that cannot be read are left out, one line each."""
from __future__ import annotations

import sys

from wirecheck.cli.support import EXIT_HARNESS, EXIT_OK, docs_url


def cmd_report(args) -> int:
    from wirecheck.conformance.report.index import load_for_report, write
    from wirecheck.conformance.report.results import ReportError
    unreadable: list[str] = []
    try:
        inputs = load_for_report(args.results, unreadable)
    except ReportError as exc:
        print(f"wirecheck report: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    for problem in unreadable:       # the others make the report; the status says one was lost
        print(f"wirecheck report: {problem}: left out", file=sys.stderr)
    docs_url(args)
    for path in write(inputs.runs, args.out, inputs.campaigns, inputs.analyses):
        print(f"wrote {path}")
    return EXIT_HARNESS if unreadable else EXIT_OK
