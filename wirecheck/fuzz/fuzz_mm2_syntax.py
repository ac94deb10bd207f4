"""atheris target: Micromessage2's text syntaxes fed directly, every line through every parser:
extension lists and COMMAND payloads (strict and lenient FIELDs), MESSAGE properties, filters
and URL-decoding (reference_impl/micromessage2/syntax.py, filters.py), over fuzz/harnesses/nested.py.

Checks: only FrameError (syntax) and FilterError (filters) escape; what parses re-formats to
text that parses the same, a filter's ``str`` included; filters match any properties without
an exception, typed and untyped.

Run: ``python wirecheck/fuzz/fuzz_mm2_syntax.py NEW_DIR wirecheck/fuzz/corpora/micromessage2-syntax -dict=wirecheck/fuzz/dictionaries/micromessage2.dict``
(``python -m wirecheck.fuzz.run_smoke --target mm2_syntax`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.nested import mm2_syntax_one_input


def TestOneInput(data: bytes) -> None:
    mm2_syntax_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
