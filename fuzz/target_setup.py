"""What every atheris target in fuzz/ needs besides its one-line ``TestOneInput``.

``instrumented(name)`` wraps the target's imports: under atheris (the target run as a script)
it instruments the kit's own code only, not asyncio & co. that the registry pulls in; under
plain pytest (corpus replay) it does nothing and atheris need not be installed. ``code``
narrows it to the packages under test: the frame-decoder targets instrument
``reference_impl`` alone, as OSS-Fuzz builds instrument the library and not its harness. The
harness's branches (read sizes, comparing two results) guide nothing worth finding, and
tracing them cost those targets a fifth to a quarter of their speed.
``fuzz(test_one_input)`` hands the target to libFuzzer.
"""
import contextlib
import sys

try:
    import atheris
except ImportError:          # replaying the corpus needs no atheris
    atheris = None


#: What a target instruments unless it says otherwise: all of the kit's own code.
KIT = ("reference_impl", "conformance", "fuzz")
#: The reference implementations alone: the code under test of the frame-decoder targets.
UNDER_TEST = ("reference_impl",)


def instrumented(module_name: str, code: tuple = KIT):
    if atheris is not None and module_name == "__main__":
        return atheris.instrument_imports(include=list(code))
    return contextlib.nullcontext()


def fuzz(test_one_input) -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
