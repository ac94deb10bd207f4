"""atheris target: a client driver's output lines, as check-client judges them
(fuzz/harnesses/inputs.py says what is checked).

Run: ``python -m wirecheck.fuzz.run_smoke --target input_driver_output`` (on a copy of its corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.inputs import driver_output_one_input


def TestOneInput(data: bytes) -> None:
    driver_output_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
