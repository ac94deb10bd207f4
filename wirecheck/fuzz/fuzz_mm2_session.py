"""atheris target: a whole Micromessage2 server session (reference_impl/micromessage2/session.py)
in memory over its own broker state, fed a client's side in reads chosen by the input's first
bytes (fuzz/harnesses/base.py ``read_sizes``), each read cut after every whole client frame, the fake
clock advancing by a step its 5th byte chooses (in a seed, the identity's first character)
after every read, with a tick at the session's ``next_deadline()`` when it falls in the step
(as the broker's timer) and one at the step's end (the receiver's delayed acks run on them).
The offer's reserved Flags byte (the 3rd), when odd, starts the session's sequence numbers at
65531 (so its MESSAGEs wrap 65535 -> 1 after five). A last byte ``S`` picks the real
implementation's profile (``sharpmessaging``) and is not fed; else the document's.

Checks (fuzz/harnesses/mm2.py ``Conversation``): nothing but the session's own handling meets the
input (no exception escapes ``receive``/``tick``); every record it sends is one whole server
frame its profile's decoder reads: its handshake reply first (again after a refusal that keeps
the connection), MESSAGEs numbered 1, 2, ... (or from 65531) wrapping 65535 -> 1, each dotnet
type frame followed by its MESSAGE; MESSAGEs unacked never exceed the agreed window (the client's acks
applied as the ack extension says: cumulative); the session acks the client's SENDs with the
last sequence number, as soon as the window is full and by the delay after the first unacked
one, and has a deadline while any is unacked; ``tick`` leaves no deadline due; a frame the
codec refuses ends the connection, a closing session's last record is its ERROR, and a closed
session sends nothing.

Run: ``python wirecheck/fuzz/fuzz_mm2_session.py NEW_DIR wirecheck/fuzz/corpora/micromessage2-session -dict=wirecheck/fuzz/dictionaries/micromessage2.dict``
(``python -m wirecheck.fuzz.run_smoke --target mm2_session`` does it on a copy of the corpus; the seeds
are written by ``python -m wirecheck.fuzz.builders.mm2_corpora``).
"""
import sys
from pathlib import Path

if not __package__:          # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecheck.fuzz.harnesses.target_setup import fuzz, instrumented  # noqa: E402

with instrumented(__name__):
    from wirecheck.fuzz.harnesses.mm2 import session_one_input


def TestOneInput(data: bytes) -> None:
    session_one_input(data)


if __name__ == "__main__":
    fuzz(TestOneInput)
