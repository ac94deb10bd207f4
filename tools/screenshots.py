"""The report screenshots of the documentation: ``python tools/screenshots.py`` (``make screenshots``).

Runs the BlipMQ suite against a reference broker with one planted defect (it answers an empty
topic with NACK 401 instead of 400: tests/support/faulty_targets.py ``WrongNackCode``), writes the HTML
report, and takes two pictures of it with the headless Chromium ``make browser`` installs:

- ``docs/images/report.png``: the top of the report (runs, summary, the requirement table) in a
  1400 px window; ``docs/images/report-phone.png``: the same in a 400 px one (a phone);
- ``docs/images/transcript.png``: the first failing case, scrolled to, with its transcript.

The pictures are committed; take them again when the report's look changes.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:            # tests/ (the faulty broker) imports from the checkout
    sys.path.insert(0, str(ROOT))

IMAGES = ROOT / "docs" / "images"
#: What the picture of the report's top shows: enough of the suite for a real summary, quick
#: to run (the whole BlipMQ suite takes seconds against an in-process broker).
SUITE = ("test_publish.py", "test_handshake.py", "test_ack_poll.py")


def chromium() -> str:
    for name in ("chromium-headless-shell", "chromium", "chromium-browser"):
        path = shutil.which(name) or (f"/usr/lib/chromium/{name}" if os.path.exists(f"/usr/lib/chromium/{name}") else None)
        if path:
            return path
    raise SystemExit("no headless Chromium: `make browser` installs chromium-headless-shell")


def _suite_dir() -> Path:
    import importlib

    from wirecheck.reference_impl.core import registry
    return Path(importlib.import_module(registry.get("blipmq").suite).__file__).parent


def run_suite(out: Path) -> Path:
    from tests.support.faulty_targets import WrongNackCode, broker_with
    from wirecheck.reference_impl.core.server import ThreadedServer
    report = out / "report.html"
    paths = [str(_suite_dir() / name) for name in SUITE]
    with ThreadedServer(broker_with(WrongNackCode)) as server:
        result = subprocess.run(
            [sys.executable, "-m", "wirecheck", "check", "--protocol", "blipmq",
             "--target", f"127.0.0.1:{server.address[1]}", "--label", "my-broker 0.3 (planted defect)",
             "--report", str(report), "--", *paths],
            cwd=ROOT, capture_output=True, text=True, timeout=600)
    if result.returncode != 1 or not report.exists():
        raise SystemExit(f"expected a non-conformant run (exit 1), got {result.returncode}:\n"
                         f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return report


def failing_case(page: str) -> str:
    """A page holding the report's styles and the block of the first requirement with a FAIL
    case (its heading, its cases and their transcripts), as the report shows it."""
    style = re.search(r"<style>.*?</style>", page, re.S)
    start = next((m.start() for m in re.finditer(r"<div id='[^']+' data-proto=", page)
                  if "v-case-FAIL" in page[m.start():_block_end(page, m.start())]), None)
    if not style or start is None:
        raise SystemExit("the report shows no failing case")
    block = page[start:_block_end(page, start)]
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>{style.group(0)}</head>"
            f"<body><main>{block}</main></body></html>")


def _block_end(page: str, start: int) -> int:
    """Where the ``<div>`` opening at ``start`` closes."""
    depth = 0
    for m in re.finditer(r"<div\b|</div>", page[start:]):
        depth += 1 if m.group(0) != "</div>" else -1
        if depth == 0:
            return start + m.end()
    return len(page)


def shoot(browser: str, url: str, png: Path, size: str, profile: Path) -> None:
    flags = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
             f"--user-data-dir={profile}", f"--window-size={size}", f"--screenshot={png}"]
    subprocess.run([browser, *flags, url], capture_output=True, timeout=120, check=True)
    data = png.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 10_000:
        raise SystemExit(f"{png}: not a screenshot ({len(data)} bytes)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(IMAGES), help="where the PNGs go (default docs/images)")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    browser = chromium()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        report = run_suite(tmp)
        page = report.read_text(encoding="utf-8")
        shoot(browser, report.as_uri(), out / "report.png", "1400,1000", tmp / "profile")
        shoot(browser, report.as_uri(), out / "report-phone.png", "400,900", tmp / "profile")
        # The failing case alone, with the report's own styles: a page scrolled to it would
        # show the sticky filter bar over it, and its place changes with the report's length.
        case = tmp / "case.html"
        case.write_text(failing_case(page), encoding="utf-8")
        shoot(browser, case.as_uri(), out / "transcript.png", "1280,720", tmp / "profile")
    for name in ("report.png", "report-phone.png", "transcript.png"):
        print(f"wrote {out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
