"""The capture pipeline (pipeline/): the Spark job against the plain decoder and the plain
per-flow analysis on the same captures, one capture split by flows, the CLI."""
from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from wirecheck.conformance.captures.decode import decode_pcap
from wirecheck.conformance.captures.pcapfile import PcapWriter, TcpConversation, tcp_packet
from wirecheck.pipeline import schema
from wirecheck.pipeline.local import analyze as analyze_plain
from wirecheck.pipeline.spark_job import analyze
from wirecheck.pipeline.synthetic import write_set
from wirecheck.reference_impl.blipmq import codec as blip
from wirecheck.reference_impl.core import registry

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "captures"

pytestmark = pytest.mark.slow


def _rows(spark, out, table: str) -> list[dict]:
    return [r.asDict() for r in spark.read.parquet(os.path.join(out, table)).collect()]


def _key(table: str, row: dict) -> tuple:
    # Floats to 12 digits: sums merged from partitions in another order differ in the last bits.
    return tuple(f"{row[c]:.12g}" if isinstance(row[c], float) else json.dumps(row[c], sort_keys=True, default=str)
                 for c, _ in schema.TABLES[table])


def _same_rows(spark, out: str, plain: dict, table: str) -> None:
    got = sorted(_key(table, r) for r in _rows(spark, out, table))
    want = sorted(_key(table, r) for r in plain[table])
    assert len(got) == len(want), f"{table}: {len(got)} rows on Spark, {len(want)} plain"
    assert got == want, f"{table}: rows differ"


def _decoder_counts(path: str, spec) -> tuple[int, int]:
    """Frames and error lines ``wirecheck decode --pcap`` prints for the capture."""
    out = io.StringIO()
    decode_pcap(spec, path, out=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    errors = sum("category" in line and "error" in line for line in lines)
    return len(lines) - errors, errors


@pytest.fixture(scope="module")
def repository_run(spark, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("analyze") / "a")
    summary = analyze([str(CAPTURES)], out, spark=spark)
    return out, summary


def test_repository_captures_frame_counts_equal_the_decoders(spark, repository_run):
    out, summary = repository_run
    assert set(os.listdir(out)) >= {*schema.TABLES, "summary.json"}
    frames = Counter(r["file"] for r in _rows(spark, out, "frames"))
    errors = Counter()
    for r in _rows(spark, out, "flows"):
        errors[r["file"]] += r["errors"]
    checked = 0
    for spec in registry.all_protocols():
        for path in sorted((CAPTURES / spec.id).rglob("*.pcap*")):
            if path.suffix == ".json":
                continue
            want_frames, want_errors = _decoder_counts(str(path), spec)
            assert frames[str(path)] == want_frames, path
            assert errors[str(path)] == want_errors, path
            checked += 1
    assert checked >= 10 and summary["files"] == checked
    assert summary["rows"]["frames"] == sum(frames.values())


def test_repository_captures_rows_equal_the_plain_analysis(spark, repository_run):
    out, _ = repository_run
    plain = analyze_plain([str(CAPTURES)])
    for table in schema.TABLES:
        _same_rows(spark, out, plain, table)


def test_stats_agree_with_the_frames(spark, repository_run):
    out, _ = repository_run
    plain = analyze_plain([str(CAPTURES)])
    stats = _rows(spark, out, "stats")
    by = {(r["protocol"], r["metric"], r["key"]): r for r in stats}
    types = Counter((f["protocol"], f["type"]) for f in plain["frames"])
    assert {(p, k): r["count"] for (p, m, k), r in by.items() if m == "type"} == types
    for protocol in {p for p, _ in types}:
        sizes = sum(r["count"] for (p, m, _), r in by.items() if p == protocol and m == "size")
        assert sizes == sum(n for (p, _), n in types.items() if p == protocol)
        answered = [f["latency"] for f in plain["frames"] if f["protocol"] == protocol and f["latency"] is not None]
        if answered:
            answered.sort()
            assert by[(protocol, "latency", "p50")]["count"] == len(answered)
            assert by[(protocol, "latency", "max")]["value"] == pytest.approx(max(answered))
            assert by[(protocol, "latency", "mean")]["value"] == pytest.approx(sum(answered) / len(answered))
            for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
                exact = answered[max(1, math.ceil(q * len(answered))) - 1]
                assert by[(protocol, "latency", name)]["value"] == pytest.approx(exact, rel=0.024), name
        flows = [f for f in plain["flows"] if f["protocol"] == protocol]
        assert by[(protocol, "flows", "flows")]["count"] == len(flows)
        assert by[(protocol, "flows", "bytes")]["value"] == sum(f["bytes_c2s"] + f["bytes_s2c"] for f in flows)
    codes = Counter((f["protocol"], f"{f['type']} {f['code']}") for f in plain["frames"] if f["code"] is not None)
    assert {(p, k): r["count"] for (p, m, k), r in by.items() if m == "code"} == codes


def _blip_conversation(w, client, t0: float, isn=(0x1000_0000, 0x2000_0000)) -> None:
    conv = TcpConversation(w, client, ("10.9.0.1", 5555), t0, isn)
    conv.data("c2s", blip.encode(blip.Hello(1)), t0 + 0.01)
    conv.data("s2c", blip.encode(blip.Ack(1)), t0 + 0.02)
    conv.data("c2s", blip.encode(blip.Ping(2)), t0 + 0.03)
    conv.data("s2c", blip.encode(blip.Pong(2)), t0 + 0.05)
    conv.close("c2s", t0 + 0.06)
    conv.close("s2c", t0 + 0.07)


def test_one_capture_is_split_by_flows(spark, tmp_path):
    """One capture file, many conversations (two on the same addresses): its conversations are
    analyzed in several partitions, and the rows are the plain analysis's."""
    path = tmp_path / "one.pcap"
    with PcapWriter(str(path)) as w:
        for n in range(40):
            _blip_conversation(w, ("10.1.0.2", 30000 + n), 100.0 + n)
        _blip_conversation(w, ("10.1.0.2", 30000), 200.0, isn=(0x3000_0000, 0x4000_0000))
    out = str(tmp_path / "a")
    analyze([str(path)], out, spark=spark, partitions=4)
    from pyspark.sql import functions as F
    parts = (spark.read.parquet(os.path.join(out, "frames")).select(F.input_file_name().alias("part"))
             .distinct().count())
    assert parts >= 2, "the capture's conversations were not spread over partitions"
    plain = analyze_plain([str(path)])
    assert len(plain["flows"]) == 41
    assert sorted(f["flow"] for f in plain["flows"])[:2] == ["10.1.0.2:30000->10.9.0.1:5555",
                                                             "10.1.0.2:30000->10.9.0.1:5555#1"]
    for table in schema.TABLES:
        _same_rows(spark, out, plain, table)


def test_synthetic_set_rows_equal_the_plain_analysis(spark, tmp_path):
    paths = write_set(str(tmp_path / "set"), 400_000, 3)
    out = str(tmp_path / "a")
    summary = analyze(paths, out, spark=spark)
    plain = analyze_plain(paths)
    assert summary["files"] == 3 and summary["rows"]["flows"] == len(plain["flows"]) > 50
    for table in schema.TABLES:
        _same_rows(spark, out, plain, table)


def test_cli_analyze_writes_the_four_tables(tmp_path):
    out = tmp_path / "a"
    proc = subprocess.run([sys.executable, "-m", "wirecheck", "analyze", str(CAPTURES / "blipmq"),
                           "--out", str(out), "--master", "local[1]", "--json",
                           "--conf", "spark.driver.memory=600m", "--conf", "spark.sql.shuffle.partitions=3"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    # --conf reaches Spark itself (read back from its context), the JVM's heap setting included.
    assert summary["conf"] == {"spark.driver.memory": "600m", "spark.sql.shuffle.partitions": "3"}
    assert proc.returncode == (1 if summary["rows"]["violations"] else 0), proc.stderr[-2000:]
    assert set(summary["rows"]) == set(schema.TABLES)
    for table in schema.TABLES:
        assert any(f.endswith(".parquet") for f in os.listdir(out / table)), table
    frames = sum(_decoder_counts(str(p), registry.get("blipmq"))[0]
                 for p in sorted((CAPTURES / "blipmq").glob("*.pcap.gz")))
    assert summary["rows"]["frames"] == frames
    # stderr is no terminal here: no progress unless asked for
    assert "analyze: " not in proc.stderr


def test_cli_analyze_shows_progress_when_asked(tmp_path):
    """--progress: the figures so far on stderr, task by task; the last line has them all."""
    proc = subprocess.run([sys.executable, "-m", "wirecheck", "analyze", str(CAPTURES / "blipmq"),
                           str(CAPTURES / "vibemq"), "--out", str(tmp_path / "a"), "--master", "local[1]",
                           "--json", "--progress", "--conf", "spark.sql.shuffle.partitions=3"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    lines = [line for line in proc.stderr.splitlines() if line.startswith("analyze: ")]
    assert lines, proc.stderr[-2000:]
    rows, mb = summary["rows"], summary["input_bytes"] / 1e6
    assert lines[-1].startswith(f"analyze: {summary['files']}/{summary['files']} file(s), {mb:.1f}/{mb:.1f} MB read, "
                                f"{rows['frames']:,} frames, {rows['flows']:,} conversations, "
                                f"{rows['violations']:,} violations"), (lines[-1], summary)


@pytest.mark.parametrize("argv,message", [
    (["analyze", "captures", "--out", "/tmp/x", "--port", "9999"], "need --protocol"),
    (["analyze", "/no/such/capture", "--out", "/tmp/x"], "no such file"),
    (["analyze", "README.md", "--out", "/tmp/x"], "not a pcap"),
    (["analyze", "captures", "--out", "/tmp/x", "--protocol", "blipmq", "--profile", "nope"], "nope"),
    (["analyze-fuzz", "README.md", "--out", "/tmp/x"], "not a fuzz campaign summary"),
    (["analyze", "captures", "--out", "/tmp/x", "--conf", "spark.driver.memory"], "expected KEY=VALUE"),
    (["analyze-fuzz", "reports", "--out", "/tmp/x", "--conf", "=1g"], "expected KEY=VALUE"),
])
def test_cli_refuses_bad_input_before_starting_spark(argv, message, capsys):
    from wirecheck.cli import main
    from wirecheck.pipeline.spark_job import _active_session
    before = _active_session()
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert _active_session() is before          # no Spark started (nor a running one stopped)


@pytest.mark.parametrize("batch,hold", [(64, 32 << 20), (3, 32 << 20), (64, 100), (1, 1)])
def test_read_file_batches_sort_back_to_file_order(tmp_path, monkeypatch, batch, hold):
    """Step 1's batches, sorted by their key as the shuffle sorts them, give each address pair's
    segments in file order, whatever the batch and hold limits."""
    from wirecheck.conformance.captures.pcapfile import PcapReader
    from wirecheck.pipeline import spark_job
    monkeypatch.setattr(spark_job, "BATCH_SEGMENTS", batch)
    monkeypatch.setattr(spark_job, "BATCH_HOLD_BYTES", hold)
    path = tmp_path / "mixed.pcap"
    with PcapWriter(str(path)) as w:
        for n in range(5):
            _blip_conversation(w, ("10.1.0.2", 31000 + n), 100.0 + n / 10)
    records = sorted(spark_job.read_file(str(path), frozenset({5555})))
    got: dict = {}
    for (_file, pair, _n), segs in records:
        got.setdefault(pair, []).extend(segs)
    want: dict = {}
    with PcapReader(str(path)) as reader:
        for seg in reader:
            want.setdefault(spark_job._segment_key(seg), []).append(
                (seg.time, seg.src, seg.dst, seg.seq, seg.ack, seg.flags, seg.data))
    assert got == want and len(want) == 5


def test_injected_violations_are_found_exactly_on_spark(spark, tmp_path):
    """Conversations with known violations (tests/reference_impl/blipmq/test_observer_blipmq.py), one per client in
    one capture: Spark's violations table has exactly those, for each conversation."""
    from tests.reference_impl.blipmq.test_observer_blipmq import INJECTED, write_injected
    from wirecheck.conformance.captures.pcapfile import PcapReader
    parts = []
    for n in range(6):
        write_injected(tmp_path / f"c{n}.pcap", client=("10.1.1.1", 40000 + n))
        parts.append(tmp_path / f"c{n}.pcap")
    path = tmp_path / "injected.pcap"
    with PcapWriter(str(path)) as w:        # the six conversations in one file, one after another
        for part in parts:
            with PcapReader(str(part)) as reader:
                for seg in reader:
                    w.write(seg.time, tcp_packet(seg.src, seg.dst, seg.seq, seg.ack, seg.flags, seg.data))
    out = str(tmp_path / "a")
    summary = analyze([str(path)], out, spark=spark, partitions=3)
    found = {(r["flow"], r["requirement"], r["direction"], r["index"]) for r in _rows(spark, out, "violations")}
    flows = {r["flow"] for r in _rows(spark, out, "flows")}
    assert len(flows) == 6
    assert found == {(f, *v) for f in flows for v in INJECTED}
    assert summary["rows"]["violations"] == 6 * len(INJECTED)
    levels = {r["requirement"]: r["level"] for r in _rows(spark, out, "violations")}
    assert levels["BLIP-FRAME-005"] == "MUST" and levels["BLIP-CLIENT-006"] == "SHOULD"


def _server_burst(protocol: str) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """(client bytes, the server's first bytes, then frames of different sizes the server sends
    in one segment) of a short conversation of ``protocol``."""
    if protocol == "blipmq":
        burst = [blip.Ack(1), blip.Publish(7, 1, "t", b"x" * 300), blip.Pong(2), blip.Publish(8, 0, "topic", b"y")]
        return [blip.encode(blip.Hello(1)), blip.encode(blip.Ping(2))], [], [blip.encode(f) for f in burst]
    if protocol == "vibemq":
        from wirecheck.reference_impl.vibemq import codec as vibe
        from wirecheck.reference_impl.vibemq.constants import CommandType
        burst = [vibe.Message(CommandType.DELIVER, f"m{n}", "q", {"n": "z" * (40 * n)}) for n in range(4)]
        return [], [], [vibe.encode(m) for m in burst]
    if protocol == "micromessage2":
        from wirecheck.reference_impl.micromessage2 import codec as mm2
        offer = mm2.encode_handshake(mm2.Handshake("client"))
        burst = [mm2.Message(1, "q", b"a" * 200), mm2.Command("ping"),
                 mm2.Message(2, "topic", b"b", (("k", "v"),)), mm2.Error("no")]
        # the last MESSAGE in CONTINUED pieces: its size is all of them
        return ([offer, offer], [mm2.encode_handshake(mm2.Handshake("server"))],
                [mm2.encode(f) for f in burst[:3]] + [mm2.encode_message(mm2.Message(3, "q", b"c" * 90), 40),
                                                      mm2.encode(burst[3])])
    if protocol == "rabbitmq-stream":
        from wirecheck.reference_impl.rabbitmq_stream import codec as rmqs
        burst = [rmqs.PeerPropertiesResponse(1, 1, {"product": "p" * 80}), rmqs.Tune(1048576, 60),
                 rmqs.Heartbeat(), rmqs.MetadataUpdate(6, "stream-" + "s" * 30),
                 rmqs.Close(3, 1, "bye")]
        return [], [], [rmqs.encode(f) for f in burst]
    raise AssertionError(protocol)


@pytest.mark.parametrize("protocol", ["blipmq", "vibemq", "micromessage2", "rabbitmq-stream"])
def test_frames_sent_in_one_segment_get_their_own_sizes(protocol, tmp_path):
    """The frames of one read each get the bytes they took (the decoder says where each ends:
    ``consumed``), not an even share of the read; a frame cut over two segments too."""
    spec = registry.get(protocol)
    client_bytes, server_first, burst = _server_burst(protocol)
    path = tmp_path / "burst.pcap"
    with PcapWriter(str(path)) as w:
        conv = TcpConversation(w, ("10.1.0.2", 40000), ("10.9.0.1", spec.default_port), 100.0)
        t = 100.01
        for data in client_bytes:
            conv.data("c2s", data, t)
            t += 0.01
        for data in server_first:
            conv.data("s2c", data, t)
            t += 0.01
        stream = b"".join(burst)
        # the second frame over two segments, and the one before the last (Micromessage2: the
        # CONTINUED message, cut after its first piece) over two more
        cuts = [0, len(burst[0]) + 3, len(stream) - len(burst[-1]) - 30, len(stream)]
        for n, (a, b) in enumerate(zip(cuts, cuts[1:])):
            conv.data("s2c", stream[a:b], t + n / 100)
        conv.close("c2s", t + 0.05)
        conv.close("s2c", t + 0.06)
    rows = analyze_plain([str(path)])
    assert not [f["error"] for f in rows["flows"] if f["error"]], rows["flows"]
    got = [r["size"] for r in rows["frames"] if r["direction"] == "s2c"][len(server_first):]
    assert got == [len(b) for b in burst]
