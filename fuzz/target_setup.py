"""What every atheris target in fuzz/ needs besides its one-line ``TestOneInput``.

``instrumented(name)`` wraps the target's imports: under atheris (the target run as a script)
it instruments the kit's own code only, not asyncio & co. that the registry pulls in; under
plain pytest (corpus replay) it does nothing and atheris need not be installed.
``fuzz(test_one_input)`` hands the target to libFuzzer.
"""
import contextlib
import sys

try:
    import atheris
except ImportError:          # replaying the corpus needs no atheris
    atheris = None


def instrumented(module_name: str):
    if atheris is not None and module_name == "__main__":
        return atheris.instrument_imports(include=["reference_impl", "conformance", "fuzz"])
    return contextlib.nullcontext()


def fuzz(test_one_input) -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
