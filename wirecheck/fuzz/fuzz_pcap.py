"""atheris target: the kit's capture reading, pcap and pcapng, plain and gzip-compressed
(conformance/captures/pcapfile.py), and TCP reassembly (conformance/captures/tcpflows.py), over
fuzz/harnesses/capture.py.

Checks: only CaptureFormatError escapes the reader; a capture reads alike from a file object,
by path, and gzip-compressed; each segment is sane; reassembly keeps its sink contract (opened
once, in-order bytes adding up, ended exactly once, nothing after) and its bound on early bytes.

Run: ``python wirecheck/fuzz/fuzz_pcap.py NEW_DIR wirecheck/fuzz/corpora/pcap -dict=wirecheck/fuzz/dictionaries/pcap.dict``
(``python -m wirecheck.fuzz.run_smoke --target pcap`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.capture import pcap_one_input


def TestOneInput(data: bytes) -> None:
    pcap_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
