"""The report's Captures section: capture analyses (``wirecheck analyze CAPTURES --out DIR``,
pipeline/spark_job.py), drawn from each ``DIR/summary.json``'s ``"report"`` block alone (no
Parquet reader, no Spark).

Per analysis: the job's facts (capture files, input bytes, master, partitions, seconds, row
counts); the violations by requirement (protocol, requirement ID linking to its row in the
protocol's section when the report has a suite run of that protocol, level, count,
conversations, and the first examples: file, conversation, frame index, the side at fault,
message); then per protocol its totals (flows, frames, bytes, errors, violations), the frame
type and frame size distributions as small inline SVG bar charts (no script, no external
resource: the page opens offline), the latency figures in milliseconds and the
response/error codes. Violation rows carry ``data-proto``, ``data-level`` and
``data-failed='1'``; a protocol's block carries ``data-proto`` and ``data-failed`` (1 when the
analysis found violations of that protocol), so the report's filters apply.
"""
from __future__ import annotations

import os
from typing import Callable, Optional

from wirecheck.conformance.report.text import anchor as _anchor
from wirecheck.conformance.report.text import escape as _e
from wirecheck.conformance.report.text import number as _num
from wirecheck.conformance.report.text import seconds as _seconds
from wirecheck.conformance.report.text import visible as _t
from wirecheck.conformance.report.results import Analysis

#: A requirement's place in the report: ``(protocol, requirement ID) -> (anchor, summary)``,
#: or None when the report has no section for it.
RequirementLink = Callable[[str, str], Optional[tuple[str, str]]]

#: Bars of one chart at most: the rest are summed into one "N others" bar (rabbitmq-stream
#: has over 50 frame types; a chart of 50 bars is a table drawn badly).
MAX_BARS = 20
_BAR_H, _CHART_W, _LABEL_W, _COUNT_W, _LABEL_CHARS = 13, 360, 130, 64, 24
_LATENCY_KEYS = ("p50", "p90", "p99", "max", "mean")
#: Code rows shown open; more are folded under a summary line.
_CODES_SHOWN = 12
_TOTAL_KEYS = ("flows", "frames", "bytes", "errors", "violations")
_SIDES = {"c2s": "client", "s2c": "server"}


def captures(analyses: list[Analysis], requirement_link: RequirementLink) -> str:
    parts = [_analysis(a, _anchor("captures", str(i)), requirement_link) for i, a in enumerate(analyses)]
    return "<section id='captures'><h2>Captures</h2>" + "".join(parts) + "</section>"


def _bytes(n) -> str:
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return "?"
    text = f"{n:,.0f} bytes"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{text} ({n / size:.1f} {unit})"
    return text


def _analysis(a: Analysis, anchor: str, requirement_link: RequirementLink) -> str:
    d = a.doc
    rows = ", ".join(f"{_t(k)} {_num(v)}" for k, v in a.rows.items())
    facts = [f"<b>{_num(d.get('files')) or '?'}</b> capture file(s)", f"{_bytes(d.get('input_bytes'))} read",
             f"on {_t(d.get('master') or '?')}" + (f" in {_num(d['partitions'])} partitions"
                                                  if _num(d.get("partitions")) else ""),
             f"took {_seconds(d.get('seconds'))}", f"protocol: {_t(d.get('protocol') or 'all')}",
             f"profile: {_t(d.get('profile') or 'default')}",
             f"<b>{_num(sum(v['count'] for v in a.violations))}</b> violation(s)"]
    if rows:
        facts.append(f"rows: {rows}")
    # Joined by hand: _anchor() would rewrite the dashes of an anchor made already.
    blocks = [_protocol(a, proto, f"{anchor}-{_anchor(proto)}") for proto in a.protocols]
    damaged = "".join(
        f"<li>{_t(x.get('file', '?'))}: {_t(x.get('error', ''))}: "
        f"{'not read' if x.get('whole') else 'read up to there, the rest is lost'}</li>"
        for x in d.get("damaged") or [] if isinstance(x, dict))
    return (f"<div id='{anchor}'><h3>{_t(a.label)}</h3><p>{' &middot; '.join(facts)}<br>"
            f"<small>{_t(a.path)}</small></p>"
            + (f"<p><b>Inputs not read whole</b></p><ul>{damaged}</ul>" if damaged else "")
            + "<h4>Violations by requirement</h4>"
            + _violations(a, requirement_link) + "".join(blocks) + "</div>")


def _violations(a: Analysis, requirement_link: RequirementLink) -> str:
    if not a.violations:
        return "<p>No violations.</p>"
    rows = []
    for v in sorted(a.violations, key=lambda v: (v["protocol"], v["requirement"])):
        proto, rid, level = v["protocol"], v["requirement"], str(v.get("level") or "")
        link = requirement_link(proto, rid)
        req = (f"<a href='#{_e(link[0])}' title='{_t(link[1])}'>{_t(rid)}</a>" if link else _t(rid))
        rows.append(f"<tr data-proto='{_e(proto)}' data-level='{_e(level)}' data-failed='1'>"
                    f"<td>{_t(proto)}</td><td class='rid'>{req}</td><td>{_t(level)}</td>"
                    f"<td class='num'>{_num(v['count'])}</td><td class='num'>{_num(v.get('flows'))}</td>"
                    f"<td>{_examples(v.get('examples', []), v['count'])}</td></tr>")
    return ("<table><tr><th>protocol</th><th>requirement</th><th>level</th><th>count</th>"
            "<th>conversations</th><th>examples</th></tr>" + "".join(rows) + "</table>")


def _examples(examples: list[dict], count) -> str:
    items = []
    for x in examples:
        file = str(x.get("file") or "")
        direction = str(x.get("direction") or "")
        side = f"{_SIDES[direction]} ({direction})" if direction in _SIDES else direction
        items.append(f"<li><code class='sig' title='{_t(file)}'>{_t(os.path.basename(file) or file)}</code> "
                     f"{_t(x.get('flow') or '')} frame #{_t(x.get('index', '?'))}, {_t(side or '?')} at fault: "
                     f"{_t(x.get('message') or '')}</li>")
    more = (f"<li><i>and {_num(count - len(examples))} more</i></li>"
            if isinstance(count, int) and count > len(examples) else "")
    return f"<ul>{''.join(items)}{more}</ul>" if items else ""


def _protocol(a: Analysis, proto: str, anchor: str) -> str:
    failed = int(bool(a.violations_of(proto)))
    totals = {r["key"]: r["value"] for r in a.stats_of(proto, "flows")}
    facts = " &middot; ".join(
        _bytes(totals["bytes"]) if k == "bytes" else f"{_num(totals[k], ',.0f')} {k}"
        for k in _TOTAL_KEYS if _num(totals.get(k)))
    return (f"<div id='{anchor}' data-proto='{_e(proto)}' data-failed='{failed}'><h4>{_t(proto)}</h4>"
            f"<p>{facts or 'no conversation totals'}</p>"
            + "<div class='charts'>"
            + _figure("frame types", _types_chart(a.stats_of(proto, "type"), proto, anchor + "-types"))
            + _figure("frame sizes", _sizes_chart(a.stats_of(proto, "size"), proto, anchor + "-sizes"))
            + "</div>" + _latency(a.stats_of(proto, "latency")) + _codes(a.stats_of(proto, "code")) + "</div>")


def _figure(caption: str, chart: str) -> str:
    return f"<figure><figcaption>{caption}</figcaption>{chart}</figure>" if chart else ""


def _types_chart(rows: list[dict], proto: str, anchor: str) -> str:
    """Frames per type, most frequent first; each bar's tooltip has the type's bytes too."""
    rows = sorted(rows, key=lambda r: (-r["count"], str(r["key"])))
    kinds = len(rows)
    if len(rows) > MAX_BARS:
        rest = rows[MAX_BARS - 1:]
        rows = rows[:MAX_BARS - 1] + [{"key": f"{len(rest)} others", "count": sum(r["count"] for r in rest),
                                       "value": sum(r["value"] or 0 for r in rest)}]
    frames = sum(r["count"] for r in rows)
    bars = [(str(r["key"]), r["count"],
             f"{r['key']}: {_num(r['count'])} frame(s)" + (f", {_num(r['value'], ',.0f')} bytes"
                                                          if _num(r["value"]) else ""))
            for r in rows]
    return _bar_chart(bars, f"frame types of {proto}: {frames:,} frames of {kinds} type(s)", anchor)


def _size_order(key: str) -> tuple[int, int]:
    """``"<=64"`` before ``"<=256"`` before ``">16777216"`` (the Spark job's buckets sort as text)."""
    head, digits = (0, key[2:]) if key.startswith("<=") else (1, key.lstrip(">"))
    return (head, int(digits)) if digits.isdigit() else (2, 0)


def _size_label(key: str) -> str:
    head, digits = ("\u2264", key[2:]) if key.startswith("<=") else (">", key.lstrip(">"))
    if not digits.isdigit():
        return key
    n = int(digits)
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{head}{n // size} {unit}"
    return f"{head}{n} B"


def _sizes_chart(rows: list[dict], proto: str, anchor: str) -> str:
    rows = sorted(rows, key=lambda r: _size_order(str(r["key"])))
    frames = sum(r["count"] for r in rows)
    bars = [(_size_label(str(r["key"])), r["count"],
             f"{_size_label(str(r['key']))}: {_num(r['count'])} frame(s), {r['count'] / (frames or 1):.1%}")
            for r in rows]
    return _bar_chart(bars, f"frame sizes of {proto}: {frames:,} frames in {len(rows)} size bucket(s)", anchor)


def _bar_chart(bars: list[tuple[str, float, str]], title: str, anchor: str) -> str:
    """Horizontal bars ``(label, count, tooltip)``, longest for the largest count, as a small
    inline SVG; each bar's ``<title>`` is its tooltip."""
    if not bars:
        return ""
    top = max(count for _, count, _ in bars) or 1
    span = _CHART_W - _LABEL_W - _COUNT_W
    height = len(bars) * _BAR_H + 4
    parts = []
    for i, (label, count, tip) in enumerate(bars):
        y = 2 + i * _BAR_H
        width = max(count / top * span, 1.0)
        shown = label if len(label) <= _LABEL_CHARS else label[:_LABEL_CHARS - 1] + "\u2026"
        parts.append(f"<g><title>{_t(tip)}</title>"
                     f"<text x='{_LABEL_W - 4}' y='{y + 9}' text-anchor='end'>{_t(shown)}</text>"
                     f"<rect x='{_LABEL_W}' y='{y + 1}' width='{width:.1f}' height='{_BAR_H - 3}'/>"
                     f"<text x='{_LABEL_W + width + 3:.1f}' y='{y + 9}'>{_num(count)}</text></g>")
    return (f"<svg id='{anchor}' class='chart bars' role='img' width='{_CHART_W}' height='{height}' "
            f"viewBox='0 0 {_CHART_W} {height}' xmlns='http://www.w3.org/2000/svg'><title>{_t(title)}</title>"
            + "".join(parts) + "</svg>")


def _ms(seconds) -> str:
    if not _num(seconds):
        return ""
    ms = seconds * 1000
    return f"{ms:,.3f} ms" if ms < 10 else f"{ms:,.1f} ms"


def _latency(rows: list[dict]) -> str:
    by_key = {r["key"]: r for r in rows}
    if not by_key:
        return "<p><i>No request/response latency measured.</i></p>"
    exchanges = max(r["count"] for r in rows)
    head = "".join(f"<th>{k}</th>" for k in _LATENCY_KEYS)
    cells = "".join(f"<td class='num'>{_ms(by_key[k]['value']) if k in by_key else ''}</td>" for k in _LATENCY_KEYS)
    return (f"<table><tr><th>latency</th>{head}<th>exchanges</th></tr>"
            f"<tr><td>request to answer</td>{cells}<td class='num'>{_num(exchanges)}</td></tr></table>")


def _codes(rows: list[dict]) -> str:
    """Response and error codes: the key is ``"TYPE CODE"`` (the frame type has no space; the
    code may, as SignalR's close messages do)."""
    if not rows:
        return ""
    split = [(*(str(r["key"]).split(" ", 1) + [""])[:2], r["count"]) for r in rows]
    body = "".join(f"<tr><td>{_t(kind)}</td><td><code class='sig'>{_t(code)}</code></td>"
                   f"<td class='num'>{_num(count)}</td></tr>"
                   for kind, code, count in sorted(split, key=lambda x: (x[0], -x[2], x[1])))
    table = "<table><tr><th>frame type</th><th>code</th><th>frames</th></tr>" + body + "</table>"
    if len(rows) <= _CODES_SHOWN:
        return table
    # Folded (still in the page, and searchable): SignalR's close messages alone give dozens.
    return (f"<details><summary>{len(rows)} response/error codes in "
            f"{_num(sum(r['count'] for r in rows))} frames</summary>{table}</details>")
