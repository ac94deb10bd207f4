"""What a target that the kit runs says about its own failure: the network fuzzer groups its
findings by it (fuzz/live/fuzzer.py), and a suite's CRASH names it (held_reports.py), so that one root
cause is one finding, however many inputs or tests reach it.

A crash's key is the target's evidence, never the fuzzer's input: its exit status (``exit code
70``, ``killed by SIGSEGV``; exact, two codes are two causes), the first line of its output that
reads as an error (``panic: ...``, ``Fatal: ...``, ``planted crash: ...``; numbers and addresses
masked, as they change from run to run), and where it printed a Python traceback the exception
type and the top frame (file and function where it was raised; line numbers dropped, they move
with every edit). The output read is what the target wrote after the input was sent (from a log
offset taken before), so start-up lines and earlier connections' logs do not enter the key.
"""
from __future__ import annotations

import os
import re

#: Bytes of output read after the offset (the first lines are the ones that name the failure).
OUTPUT_BYTES = 64 * 1024
#: Characters of one evidence line kept in a key.
LINE_CHARS = 160

_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")
_ERROR_WORDS = re.compile(r"panic|fatal|error|exception|abort|assert|segmentation|segfault|crash|"
                          r"overflow|corrupt|violation|traceback|killed|unhandled", re.IGNORECASE)
_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+, in (\S+)')
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Fault|\w*))(?::|$)")
_TRACEBACK = "Traceback (most recent call last):"


def log_offset(managed) -> int:
    """How many bytes the target's log holds now: what it writes later starts there."""
    try:
        managed.log.flush()
        return os.path.getsize(managed.log.name)
    except (OSError, ValueError):
        return 0


def output_since(managed, offset: int) -> str:
    """What the target wrote (stdout and stderr, as one log) since ``offset``; the kit's own
    start lines left out."""
    try:
        managed.log.flush()
        with open(managed.log.name, "rb") as fh:
            fh.seek(offset)
            text = fh.read(OUTPUT_BYTES).decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
    from wirecheck.conformance.target.process import START_LINE
    return "\n".join(line for line in text.splitlines() if not line.startswith(START_LINE))


def mask(text: str) -> str:
    return _NUMBERS.sub("N", text.strip())[:LINE_CHARS]


def python_traceback(lines: list[str]) -> str:
    """``"ParseError at parser.py:read_frame"`` from the last traceback in ``lines``, or ""."""
    starts = [i for i, line in enumerate(lines) if line.strip() == _TRACEBACK]
    if not starts:
        return ""
    top, exc = "", ""
    for line in lines[starts[-1] + 1:]:
        m = _FRAME.match(line)
        if m:
            top = f"{os.path.basename(m.group(1))}:{m.group(2)}"
            continue
        if line.startswith((" ", "\t")) or not line.strip():
            continue                       # the source line under a frame
        m = _EXCEPTION.match(line.strip())
        exc = m.group(1) if m else ""
        break
    if not exc:
        return ""
    return f"{exc} at {top}" if top else exc


def error_line(lines: list[str]) -> str:
    """The first line that reads as an error (masked), else the last line written, else "".
    Indented lines are a stack's frames and source lines (Python, Go, Java): never the line
    that names the failure."""
    for line in lines:
        if _ERROR_WORDS.search(line) and line.strip() != _TRACEBACK and not line.startswith((" ", "\t")):
            return mask(line)
    for line in reversed(lines):
        if line.strip():
            return mask(line)
    return ""


def crash_key(status: str, output: str) -> tuple[str, str]:
    """(key, detail) of a target that exited with ``status`` after writing ``output``: the key
    groups findings (see the module doc), the detail is the line a person reads first."""
    lines = [line for line in output.splitlines() if line.strip()]
    first = error_line(lines)
    where = python_traceback(lines)
    parts = [status] + [p for p in (first, where) if p]
    detail = next((line.strip() for line in lines if _ERROR_WORDS.search(line)
                   and line.strip() != _TRACEBACK and not line.startswith((" ", "\t"))), "") or status
    return "crash: " + "; ".join(parts), detail


def thread_key(name: str) -> str:
    """A spinning thread's key: its name with numbers masked (``worker-3`` and ``worker-7`` are
    one pool's threads)."""
    return f"spin: thread {mask(name) or '?'}"


def signature(kind: str, detail: str) -> str:
    """``kind`` and the detail's telling line with numbers masked: the same bug found twice
    (other ids, other offsets) has one signature."""
    return f"{kind}: {_NUMBERS.sub('N', detail.strip())[:200]}"
