"""Seeds from the capture corpus for the atheris targets that read a client's stream or session:
``python -m wirecheck.fuzz.builders.capture_seeds`` (deterministic; re-run after ``make captures``).

The client sides of the recorded connections (captures/<protocol>/, cut into frames by
fuzz/live/seeds.py) are what real and reference clients send; the corpora made from the
documents' vectors and the strategies (fuzz/make_*_corpora.py) lack their order and mix. Per
corpus, up to ``PER_CORPUS`` sessions of at most ``MAX_SIZE`` bytes are chosen greedily, each
adding the most pairs of consecutive frame types not yet covered (real and reference clients first, then the smaller), and written as
``fuzz/corpora/<corpus>/capture-<capture>-<connection>``. Micromessage2's frame corpus takes
the frames after the two handshakes (its decoder target reads frames after the handshake).
"""
from __future__ import annotations

import re
from pathlib import Path

from wirecheck.fuzz.live.seeds import capture_seeds
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import FrameError

#: The checkout: these tools read its captures/ and write the corpora beside this file.
ROOT = Path(__file__).resolve().parents[3]
PER_CORPUS = 8
MAX_SIZE = 4096
#: corpus -> (protocol, frames to drop from the front)
CORPORA = {
    "blipmq": ("blipmq", 0),
    "rabbitmq-stream": ("rabbitmq-stream", 0),
    "vibemq": ("vibemq", 0),
    "vibemq-session": ("vibemq", 0),
    "signalr-json": ("signalr", 0),
    "signalr-msgpack": ("signalr", 0),
    "signalr-session": ("signalr", 0),
    "micromessage2": ("micromessage2", 2),
    "micromessage2-session": ("micromessage2", 0),
}


def _pairs(spec, frames) -> set[tuple[str, str]]:
    """The session's consecutive frame-type pairs (from "start"): which type follows which,
    the states a session passes through."""
    decoder = spec.make_decoder(origin="client")
    try:
        names = [type(f).__name__ + str(getattr(f, "type", "")) for f in decoder.feed(b"".join(frames))]
    except FrameError:
        return set()
    return set(zip(["start"] + names, names))


def _wanted(corpus: str, frames) -> bool:
    """SignalR's two hub-protocol corpora take the sessions of their encoding; VibeMQ's session
    corpus those that open with Connect."""
    if corpus == "signalr-json":
        return b'"protocol":"json"' in frames[0]
    if corpus == "signalr-msgpack":
        return b'"protocol":"messagepack"' in frames[0]
    if corpus == "vibemq-session":                  # its target's seeds open with Connect
        from wirecheck.reference_impl.vibemq import codec
        try:
            first = codec.make_decoder(origin="client").feed(frames[0])
        except FrameError:
            return False
        return bool(first) and first[0].type == codec.CommandType.CONNECT
    return True


def choose(corpus: str) -> list[tuple[str, bytes]]:
    protocol, drop = CORPORA[corpus]
    spec = registry.get(protocol)
    candidates = []
    for path in sorted((ROOT / "captures" / protocol).glob("*.pcap*")):
        for seed in capture_seeds(spec, path):
            frames = seed.frames[drop:]
            data = b"".join(frames)
            if frames and len(data) <= MAX_SIZE and _wanted(corpus, seed.frames):
                candidates.append((seed.name, frames, data))
    typed = [(name, data, _pairs(spec, frames)) for name, frames, data in candidates]
    chosen, covered = [], set()
    while len(chosen) < PER_CORPUS:
        # the session adding the most type pairs not covered yet; real and reference clients
        # before the suite's short error-path connections; then the smaller
        best = max(typed, default=None, key=lambda c: (len(c[2] - covered), not c[0].startswith("suite"),
                                                        -len(c[1]), c[0]))
        if best is None or not best[2] - covered:
            break
        chosen.append((best[0], best[1]))
        covered |= best[2]
        typed.remove(best)
    return chosen


def main() -> None:
    for corpus in CORPORA:
        folder = ROOT / "wirecheck" / "fuzz" / "corpora" / corpus
        for old in folder.glob("capture-*"):
            old.unlink()
        for name, data in choose(corpus):
            stem = re.sub(r"[^A-Za-z0-9]+", "-", name.replace(".pcap.gz", "")).strip("-")
            (folder / f"capture-{stem}").write_bytes(data)
        print(f"{corpus}: {len(list(folder.glob('capture-*')))} capture seed(s)")


if __name__ == "__main__":
    main()
