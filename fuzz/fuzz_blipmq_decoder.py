"""atheris target: the BlipMQ frame decoder, whole vs chunked reads (fuzz/harness.py).

Run: ``python fuzz/fuzz_blipmq_decoder.py fuzz/corpora/blipmq -dict=fuzz/dictionaries/blipmq.dict``
(``python -m fuzz.run_smoke`` does it on a copy of the corpus).
"""
import contextlib
import sys
from pathlib import Path

if not __package__:          # run as a script (README): make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

try:
    import atheris
except ImportError:          # replaying the corpus under plain pytest needs no atheris
    atheris = None

# Coverage of the kit's own code only (not asyncio & co., which the registry pulls in).
_instrumented = (atheris.instrument_imports(include=["reference_impl", "conformance", "fuzz"])
                 if atheris and __name__ == "__main__" else contextlib.nullcontext())
with _instrumented:
    from fuzz.harness import decoder_one_input
    from reference_impl.core import registry

SPEC = registry.get("blipmq")


def TestOneInput(data: bytes) -> None:
    decoder_one_input(SPEC, data)


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
