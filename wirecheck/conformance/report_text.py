"""Text helpers shared by the HTML report's sections (report_html.py, report_captures.py):
escaping, anchors, numbers and durations as the pages show them."""
from __future__ import annotations

import html


def escape(text) -> str:
    return html.escape(str(text), quote=True)


def anchor(*parts: str) -> str:
    return "-".join("".join(c if c.isalnum() else "_" for c in p) for p in parts)


def visible(text) -> str:
    """Escaped, and visible: a signature carries the target's bytes, so control characters and
    lone surrogates (bytes JSON kept undecoded) are shown as escapes instead of vanishing or
    making the page unwritable as UTF-8."""
    text = str(text)
    if not text.isprintable():
        text = "".join(c if c.isprintable() or c in " \n" else
                       c.encode("unicode_escape", "backslashreplace").decode("ascii") for c in text)
    return escape(text.encode("utf-8", "backslashreplace").decode("utf-8"))


def number(value, fmt: str = ",") -> str:
    return format(value, fmt) if isinstance(value, (int, float)) and not isinstance(value, bool) else ""


def seconds(value) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "?"
    if value >= 3600:
        return f"{value / 3600:.1f} h"
    return f"{value / 60:.1f} min" if value >= 120 else f"{value:.1f} s"
