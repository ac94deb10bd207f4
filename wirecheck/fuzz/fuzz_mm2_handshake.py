"""atheris target: the Micromessage2 handshakes read as a client's side (offer and final, then
frames) and as a server's (the reply, or the ERROR that replaces it), in both profiles, whole
vs chunked reads; the lenient profile reads what the strict one reads; handshakes and frames
survive encode/decode; a client's handshakes go through each profile's negotiation (only
Refusal may say no, the reply must survive encode/decode) (fuzz/harnesses/mm2.py).

Run: ``python wirecheck/fuzz/fuzz_mm2_handshake.py NEW_DIR wirecheck/fuzz/corpora/micromessage2-handshake -dict=wirecheck/fuzz/dictionaries/micromessage2.dict``
(``python -m wirecheck.fuzz.run_smoke --target mm2_handshake`` does it on a copy of the corpus; the seeds
are written by ``python -m wirecheck.fuzz.builders.mm2_corpora``).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.mm2 import handshake_one_input


def TestOneInput(data: bytes) -> None:
    handshake_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
