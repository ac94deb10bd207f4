"""atheris target: the SignalR MessagePack hub protocol: a client's stream (JSON handshake, then
VarInt-prefixed records) with the registry's default decoder, whole vs chunked reads
(fuzz/harnesses/signalr.py). Re-encoding the messages is fuzz_signalr_msgpack_roundtrip.py's, and
its records alone in both profiles from either side are fuzz_signalr_msgpack_body.py's, on the
same corpus.

Run: ``python wirecheck/fuzz/fuzz_signalr_msgpack.py NEW_DIR wirecheck/fuzz/corpora/signalr-msgpack -dict=wirecheck/fuzz/dictionaries/signalr.dict``
(``python -m wirecheck.fuzz.run_smoke --target signalr_msgpack`` does it on a copy of the corpus).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import UNDER_TEST, fuzz, instrumented  # noqa: E402

with instrumented(__name__, UNDER_TEST):
    from wirecheck.fuzz.harnesses.base import decoder_untraced
    from wirecheck.fuzz.harnesses.signalr import DEFAULT, stream_one_input
    from wirecheck.reference_impl.core import strict_json
    from wirecheck.reference_impl.signalr import fastpath, fields, framing, json_protocol, msgpack_protocol
    from wirecheck.reference_impl.signalr.constants import MESSAGEPACK

#: The modules the whole reading (the reference) runs, untraced (fuzz/harnesses/untraced.py).
UNTRACED = decoder_untraced(DEFAULT, fastpath, fields, framing, json_protocol, msgpack_protocol,
                            strict_json)


def TestOneInput(data: bytes) -> None:
    stream_one_input(data, MESSAGEPACK, UNTRACED)


if __name__ == "__main__":
    fuzz(TestOneInput)
