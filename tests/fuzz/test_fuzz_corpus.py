"""Replay the fuzz corpora and crashers through the atheris targets as plain tests (STYLE.md
point 8: CI keeps every crasher fixed), and run each target briefly under atheris itself.
Targets, corpora and what a seed is come from ``wirecheck.fuzz.run_smoke.TARGETS``."""
import importlib
from pathlib import Path

import re

import pytest

from wirecheck.conformance.strategies.invariants import decode_whole
from wirecheck.fuzz.run_smoke import TARGETS, run_target
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.micromessage2 import codec as mm2_codec
from wirecheck.reference_impl.signalr import codec as signalr_codec
from wirecheck.reference_impl.signalr.messages import HandshakeRequest
from wirecheck.reference_impl.vibemq import codec as vibemq_codec
from wirecheck.reference_impl.rabbitmq_stream.chunk import ChunkType, parse_chunk

FUZZ = Path(__file__).resolve().parents[2] / "wirecheck" / "fuzz"
ENTRY_POINTS = {name: importlib.import_module(t.module).TestOneInput for name, t in TARGETS.items()}
#: Seeds each corpus must have at least (the document's samples, sessions, real captures...).
MIN_SEEDS = {"blipmq": 9, "rabbitmq-stream": 40, "rabbitmq-stream-chunk": 10, "signalr-json": 15,
             "signalr-msgpack": 15, "signalr-session": 8, "vibemq": 40, "vibemq-message": 45,
             "vibemq-session": 18, "micromessage2": 28, "micromessage2-handshake": 22,
             "micromessage2-session": 42, "signalr-http": 60, "micromessage2-syntax": 18,
             "rabbitmq-stream-sasl": 6, "pcap": 45, "blipmq-wal": 8,
             "input-profile": 20, "input-report": 40, "input-finding": 10, "input-driver-output": 10}


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


CORPORA = {t.corpus: t for t in TARGETS.values()}          # corpus -> a target using it
SEEDS = {c: _files(FUZZ / "corpora" / c) for c in CORPORA}
CRASHERS = {c: _files(FUZZ / "crashers" / c) for c in CORPORA}


def _seed_problem(target, data: bytes):
    """Why ``data`` is not a valid seed of ``target``'s kind, or None."""
    if target.seeds == "session":
        # A client's side of a session: it must open with a handshake request (what follows
        # may be an error path on purpose); a last byte "D" asks for the draft profile.
        profile = "draft" if data[-1:] == b"D" else "v1"
        decoder = signalr_codec.Decoder(origin="client", profile=profile)
        try:
            first = decoder.feed(data[:data.find(b"\x1e") + 1])
        except FrameError as exc:
            return f"the handshake does not decode: {exc}"
        return None if first and isinstance(first[0], HandshakeRequest) else "no handshake request first"
    if target.seeds == "vibemq-session":           # Connect first, in the profile the target picks
        from wirecheck.fuzz.fuzz_vibemq_session import profile_of
        decoder = vibemq_codec.Decoder(profile=profile_of(data), origin="client")
        decoder.receive(data)
        try:
            first = decoder.next_frame()
        except FrameError as exc:
            return f"the first frame does not decode: {exc}"
        return None if first is not None and first.type == vibemq_codec.CommandType.CONNECT else "no Connect first"
    if target.seeds == "mm2-handshake":
        # A client's side (offer, final, frames) or a server's (reply or ERROR, frames), read
        # whole without an error in some profile.
        from wirecheck.fuzz.harnesses.mm2 import PROFILES, decode_events, make
        for handshakes in (2, 1):
            for profile in PROFILES:
                events = decode_events(data, [len(data)], make(profile, handshakes))
                if events and all(e[0] == "frame" for e in events) and isinstance(
                        events[0][1], (mm2_codec.Handshake, mm2_codec.Error)):
                    return None
        return "neither a client's nor a server's side that decodes"
    if target.seeds == "mm2-session":              # the offer first, in the profile the target picks
        from wirecheck.fuzz.harnesses.mm2 import profile_of
        profile, stream = profile_of(data)
        decoder = mm2_codec.make_decoder(origin="client", profile=profile)
        decoder.receive(stream)
        try:
            first = decoder.next_frame()
        except FrameError as exc:
            return f"the offer does not decode: {exc}"
        return None if isinstance(first, mm2_codec.Handshake) else "no offer first"
    if target.seeds == "message":                  # one VibeMQ binary message
        vibemq_codec.parse_message(data)
        return None
    if target.seeds == "http-stream":               # one captured direction, HTTP or raw
        from wirecheck.fuzz.harnesses.transport import capture_events
        events, decoder = capture_events([data])
        if not events or decoder.broken or isinstance(events[-1], tuple):
            return f"does not decode to the end: {events[-1:]}"
        return None
    if target.seeds == "text":                      # lines each some MM2 syntax reads
        from wirecheck.reference_impl.micromessage2 import filters, syntax
        for line in data.decode("utf-8").split("\n"):
            readers = (lambda t: syntax.parse_extensions(t, False),      # lenient FIELDs
                       lambda t: syntax.parse_command(t, False), syntax.parse_properties,
                       filters.parse_filter)
            if not any(_reads(read, line) for read in readers):
                return f"no syntax reads {line!r}"
        return None
    if target.seeds == "sasl":
        from wirecheck.reference_impl.rabbitmq_stream import sasl
        return None if sasl.plain(data) or sasl.amqplain(data) else "neither PLAIN nor AMQPLAIN"
    if target.seeds == "capture":                   # a capture file, maybe gzip-compressed
        import gzip
        import io
        from wirecheck.fuzz.harnesses.capture import read_capture
        segments, error, (records, _) = read_capture(io.BytesIO(
            gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data))
        return error if error is not None else None if records else "no records"
    if target.seeds == "wal":                       # a log file as the broker reads it
        from wirecheck.reference_impl.blipmq import wal
        wal.parse_wal(data)                         # not a WAL, or corruption: raises
        return None if data[:8] == wal.MAGIC else "no WAL header"
    if target.seeds == "user-file":                # real and broken on purpose: any bytes
        return None
    if target.seeds == "chunk":
        chunk = parse_chunk(data)
        if chunk.chunk_type == ChunkType.USER and len(chunk.messages()) != chunk.num_records:
            return "records do not add up"
        return None
    result = decode_whole(data, registry.get(target.protocol))
    return None if result.ok and result.frames else str(result)


def _reads(read, text: str) -> bool:
    from wirecheck.reference_impl.micromessage2.filters import FilterError
    try:
        read(text)
    except (FrameError, FilterError):
        return False
    return True


def test_every_target_has_corpus_and_dictionary():
    for target in TARGETS.values():
        assert (FUZZ / "dictionaries" / target.dictionary).is_file(), target.name
        assert target.corpus in MIN_SEEDS, f"{target.corpus}: no minimum seed count"


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_seed_corpus_present(corpus):
    assert len(SEEDS[corpus]) >= MIN_SEEDS[corpus], f"seed corpus {FUZZ / 'corpora' / corpus} is incomplete"


@pytest.mark.parametrize("corpus, seed", [(c, p) for c in sorted(CORPORA) for p in SEEDS[c]],
                         ids=lambda x: x if isinstance(x, str) else x.name)
def test_seeds_are_valid(corpus, seed):
    problem = _seed_problem(CORPORA[corpus], seed.read_bytes())
    assert problem is None, f"{corpus}/{seed.name}: {problem}"


REPLAYS = [(name, p) for name, t in sorted(TARGETS.items()) for p in SEEDS[t.corpus] + CRASHERS[t.corpus]]


@pytest.mark.parametrize("target, sample", REPLAYS,
                         ids=lambda x: x if isinstance(x, str) else f"{x.parent.parent.name}/{x.parent.name}/{x.name}")
def test_replay(target, sample):
    ENTRY_POINTS[target](sample.read_bytes())


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_atheris_runs_clean(target, tmp_path):
    pytest.importorskip("atheris")
    # 1000 mutations: the target runs clean under libFuzzer (the seeds and crashers replay above;
    # the nightly campaigns and `make fuzz-smoke` fuzz for real)
    result = run_target(TARGETS[target], runs=1000, artifacts=tmp_path / "artifacts", capture=True)
    tail = "\n".join(result.stderr.splitlines()[-40:])
    assert result.returncode == 0, f"{target} exited {result.returncode}:\n{tail}"
    # libFuzzer may finish a few executions past -runs (seen: "Done 2011 runs"): at least 1000.
    done = re.search(r"Done (\d+) runs", result.stderr)
    assert done and int(done.group(1)) >= 1000, tail
    assert not any((tmp_path / "artifacts").iterdir()), "crash artifacts written"
