"""What every atheris target in wirecheck/fuzz/ needs besides its one-line ``TestOneInput``.

``instrumented(name)`` wraps the target's imports: under atheris (the target run as a script)
it instruments the kit's own code only, not asyncio & co. that the registry pulls in; under
plain pytest (corpus replay) it does nothing and atheris need not be installed. ``code``
narrows it to the packages under test: the frame-decoder targets instrument
``wirecheck.reference_impl`` alone, as OSS-Fuzz builds instrument the library and not its
harness. The harness's branches (read sizes, comparing two results) guide nothing worth finding, and
tracing them cost those targets a fifth to a quarter of their speed.
``fuzz(test_one_input)`` hands the target to libFuzzer.
"""
import contextlib
import sys
from pathlib import Path

try:
    import atheris
except ImportError:          # replaying the corpus needs no atheris
    atheris = None


#: What a target instruments unless it says otherwise: all of the kit's own code.
KIT = ("wirecheck.reference_impl", "wirecheck.conformance", "wirecheck.fuzz")
#: The reference implementations alone: the code under test of the frame-decoder targets.
UNDER_TEST = ("wirecheck.reference_impl",)


def instrumented(module_name: str, code: tuple = KIT):
    if atheris is not None and module_name == "__main__":
        # atheris includes whole top-level packages ("wirecheck") and excludes single modules
        # by their full name: so include the package and exclude each of its modules that is
        # not in ``code``.
        return atheris.instrument_imports(include=sorted({c.split(".")[0] for c in code}),
                                          exclude=outside(code))
    return contextlib.nullcontext()


def outside(code: tuple) -> list[str]:
    """The modules of the ``wirecheck`` package that are not ``code`` nor inside it."""
    root = Path(__file__).resolve().parents[2]     # wirecheck/
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not any(name == c or name.startswith(c + ".") for c in code):
            names.append(name)
    return names


def fuzz(test_one_input) -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
