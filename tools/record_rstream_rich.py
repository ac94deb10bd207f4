"""Record a rich session of the real client rstream on loopback with tshark:
``captures/rabbitmq-stream/real/rabbitmq-stream-rstream-rich.pcap`` and its ``.pcap.json``.

    .venv/bin/python tools/record_rstream_rich.py                # a private RabbitMQ 3.10.8 node
    .venv/bin/python tools/record_rstream_rich.py --server reference --out /tmp/rich-ref.pcap

``--server real`` (the default) starts a private RabbitMQ node with the stream plugin
(tools/rabbitmq_real.py: its own directory, loopback only, guest/guest) with its stream port on
``--port`` (default 5552, so that ``decode --pcap`` and ``replay`` find the conversations
unaided); ``--server reference`` runs the reference broker there instead, under
``--profile rabbitmq-3.10``. tshark records that port on ``lo`` (tests/support/tshark_capture.py) while
:func:`rich_session` runs rstream 1.1.1 through:

- streams created (one with arguments), a Create of an existing stream (5), a Delete and a
  Metadata of a missing stream (2), a Metadata of three streams at once, one of them missing;
- publishers with confirms: batches of 100, single messages awaited one by one;
- stored offsets: StoreOffset and QueryOffset (stored, never stored: 19), then more publishing,
  then six StoreOffsets one after the other (the real server spends one offset on those that
  reach its writer together) and offsets stored from a consumer's delivery callback;
- a subscription from a timestamp taken before a batch, before any consumer got that batch;
- a named publisher (a reference) on two connections one after the other: the second asks for
  the sequence and publishes ids again, which are deduplicated (confirmed, not stored); six
  short-lived producers sharing two references;
- sub-entry batches, uncompressed and gzip, between simple messages;
- one consumer connection holding four subscriptions (first with credit 1, first with credit 2,
  an offset, first), rstream granting one credit per chunk delivered, so that Delivers of one
  subscription and answers about the next interleave; then on new connections last, offset,
  timestamp of a delivered chunk, next (with messages published meanwhile);
- errors on a raw rstream connection: Subscribe, DeclarePublisher and QueryOffset on a missing
  stream, Publish with an undeclared publisher id (PublishError 18), Credit and Unsubscribe of
  an unknown subscription (4), QueryPublisherSequence of an unknown reference (0);
- DeletePublisher, Unsubscribe and Delete of every stream at the end.

Every step checks what rstream got back (bodies, offsets, confirms, error codes): a capture is
written only of a session that went as it should. The numbers that depend on the server's own
choices (where StoreOffset and sub-entry batches put later offsets) are taken from what was
delivered, not assumed. Per connection the manifest counts bytes, frames and commands per
direction, as tests/reference_impl/rabbitmq_stream/test_rmqs_rich_capture.py checks them.

The node is stopped with SIGTERM (tools/rabbitmq_real.py), never killed right after its first
Create (see tests/support/rabbitmq_target.py on that defect).
"""
from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wirecheck.reference_impl.core import registry  # noqa: E402

REAL_DIR = os.path.join(ROOT, "captures", "rabbitmq-stream", "real")
MANIFEST = os.path.join(ROOT, "captures", "rabbitmq-stream", "MANIFEST.json")
NAME = "rabbitmq-stream-rstream-rich.pcap"
#: Bound on one awaited step of the session (rstream's own request timeout is 10 s).
STEP = 10.0
#: Bound on the whole session.
SESSION_TIMEOUT = 120.0

PLAIN, DEDUP, BATCH, MANY, MISSING = "rich-plain", "rich-dedup", "rich-batch", "rich-many", "rich-missing"
WRITER, READER = "rich-writer", "rich-reader"


class SessionError(RuntimeError):
    """The session did not go as a correct server makes it go."""


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise SessionError(what)


def _body(tag: str, i: int) -> bytes:
    return f"{tag} message {i:04d}".encode()


# -- the session ---------------------------------------------------------------------------------

async def rich_session(host: str, port: int) -> dict:
    """The rstream session (see the module doc); returns what it observed."""
    import rstream
    from rstream import schema
    from rstream.compression import CompressionType
    from rstream.exceptions import StreamAlreadyExists

    summary: dict = {}
    creds = {"username": "guest", "password": "guest"}

    async def until(condition, what: str) -> None:
        deadline = time.monotonic() + STEP
        while not condition():
            if time.monotonic() > deadline:
                raise SessionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.01)

    def confirms():
        got: list = []

        def on_confirm(status) -> None:
            got.append((status.message_id, status.is_confirmed, status.response_code))
        return got, on_confirm

    # 1. streams, and a publisher with confirms (a locator connection per create, then the
    #    publisher's connection to the stream's leader)
    async with rstream.Producer(host, port, connection_name="rich-producer", **creds) as producer:
        await producer.create_stream(PLAIN)
        await producer.create_stream(DEDUP)
        await producer.create_stream(BATCH, arguments={"max-length-bytes": "20000000"})
        try:
            await producer.create_stream(PLAIN)
            raise SessionError("Create of an existing stream succeeded")
        except StreamAlreadyExists:
            pass
        _check(not await producer.stream_exists(MISSING), "Metadata of a missing stream says it exists")
        try:
            await producer.delete_stream(MISSING)
            raise SessionError("Delete of a missing stream succeeded")
        except rstream.StreamDoesNotExist:
            pass

        got, on_confirm = confirms()
        for start in (0, 100):
            await producer.send_batch(PLAIN, [_body("plain", i) for i in range(start, start + 100)],
                                      on_publish_confirm=on_confirm)
            await until(lambda: len(got) == start + 100, f"confirms of {PLAIN} {start}..{start + 99}")
        for i in range(200, 203):
            await asyncio.sleep(0.01)           # chunk times apart: message 200 starts its own
            await producer.send_wait(PLAIN, _body("plain", i))
        _check(sorted(m for m, ok, _ in got if ok) == list(range(1, 201)), f"confirms of {PLAIN}: {got[:5]}...")

        # 2. stored offsets: a StoreOffset occupies an offset of the stream on the real server
        async with rstream.Consumer(host, port, connection_name="rich-offsets", **creds) as tracker:
            await tracker.store_offset(PLAIN, READER, 99)
            summary["stored_first"] = await tracker.query_offset(PLAIN, READER)
            _check(summary["stored_first"] == 99, f"QueryOffset gave {summary['stored_first']}, stored 99")
            try:
                await tracker.query_offset(PLAIN, "rich-nobody")
                raise SessionError("QueryOffset of a reference never stored succeeded")
            except rstream.OffsetNotFound:
                pass
            # a timestamp before the next batch (the server's clock is this machine's)
            summary["before_batch_ms"] = int(time.time() * 1000)
            await asyncio.sleep(0.05)
            got2, on_confirm2 = confirms()
            await producer.send_batch(PLAIN, [_body("plain", i) for i in range(203, 253)],
                                      on_publish_confirm=on_confirm2)
            await until(lambda: len(got2) == 50, f"confirms of {PLAIN} 203..252")
            # a subscription from that timestamp before any consumer was delivered the batch
            before: list = []

            async def on_before(msg, ctx) -> None:
                before.append(bytes(msg))
            async with rstream.Consumer(host, port, connection_name="rich-from-time", **creds) as early:
                await early.subscribe(PLAIN, on_before, offset_specification=rstream.ConsumerOffsetSpecification(
                    rstream.OffsetType.TIMESTAMP, summary["before_batch_ms"]))
                await until(lambda: len(before) == 50, "deliveries from the timestamp before a batch")
            _check(before == [_body("plain", i) for i in range(203, 253)], f"from the timestamp: {before[:2]}")
            # StoreOffsets one after the other (several references): the real server spends
            # an offset per batch of them that reaches its writer together
            for k in range(5):
                await tracker.store_offset(PLAIN, f"{READER}-{k}", 200 + k)
            await tracker.store_offset(PLAIN, READER, 220)
            summary["stored_second"] = await tracker.query_offset(PLAIN, READER)
            _check(summary["stored_second"] == 220, f"QueryOffset gave {summary['stored_second']}, stored 220")
            for k in range(5):
                stored = await tracker.query_offset(PLAIN, f"{READER}-{k}")
                _check(stored == 200 + k, f"QueryOffset of {READER}-{k} gave {stored}")
        # the last chunk of the stream: one message, confirmed before anything else is written
        await asyncio.sleep(0.05)
        await producer.send_wait(PLAIN, _body("plain", 253))

    # 3. a named publisher, then the same reference on a new connection: the sequence is asked
    #    for and ids already stored are sent again (deduplicated: confirmed, not stored)
    async with rstream.Producer(host, port, connection_name="rich-writer-1", **creds) as producer:
        got, on_confirm = confirms()
        await producer.send_batch(DEDUP, [_body("dedup", i) for i in range(1, 31)],
                                  publisher_name=WRITER, on_publish_confirm=on_confirm)
        await until(lambda: len(got) == 30, f"confirms of {DEDUP} 1..30")
    async with rstream.Producer(host, port, connection_name="rich-writer-2", **creds) as producer:
        got, on_confirm = confirms()
        again = [rstream.RawMessage(_body("dedup", i), publishing_id=i) for i in range(21, 41)]
        await producer.send_batch(DEDUP, again, publisher_name=WRITER, on_publish_confirm=on_confirm)
        await until(lambda: len(got) == 20, f"confirms of {DEDUP} 21..40")
        _check(sorted(m for m, ok, _ in got if ok) == list(range(21, 41)), f"confirms of {DEDUP}: {got}")

    # 4. sub-entry batches (one publishing id, several records), uncompressed and gzip, between
    #    simple messages; each awaited before the next so that the chunks are the same anywhere
    async with rstream.Producer(host, port, connection_name="rich-batcher", **creds) as producer:
        got, on_confirm = confirms()
        await producer.send_wait(BATCH, _body("batch", 0))
        for k, compression in enumerate((CompressionType.No, CompressionType.Gzip, CompressionType.No)):
            await producer.send_sub_entry(BATCH, [_body("batch", 10 * (k + 1) + j) for j in range(10)],
                                          compression_type=compression, on_publish_confirm=on_confirm)
            await until(lambda: len(got) == k + 1, f"confirm of sub-entry batch {k}")
            await producer.send_wait(BATCH, _body("batch-single", k + 1))
        _check(all(ok for _, ok, _ in got), f"sub-entry confirms: {got}")

    # 5. short-lived named publishers one after the other (each a locator connection and one to
    #    the leader), each asking for its reference's sequence
    async with rstream.Producer(host, port, connection_name="rich-many", **creds) as producer:
        await producer.create_stream(MANY)
    for k in range(6):
        async with rstream.Producer(host, port, connection_name=f"rich-many-{k}", **creds) as producer:
            for i in range(3):
                await producer.send_wait(MANY, _body(f"many-{k}", i), publisher_name=f"rich-many-{k % 2}")

    # 6. one consumer connection, several subscriptions: rstream credits 1 per chunk delivered
    delivered: dict[str, list] = {}

    def collect(key: str, store_every: int = 0):
        delivered[key] = []

        async def on_message(msg, ctx) -> None:
            delivered[key].append((ctx.offset, bytes(msg), ctx.timestamp))
            if store_every and len(delivered[key]) % store_every == 0:
                # as consumers do: store the offset of what was processed, from the callback
                await ctx.consumer.store_offset(ctx.stream, "rich-auto", ctx.offset)
        return on_message

    def spec(kind, value=None):
        return rstream.ConsumerOffsetSpecification(kind, value)

    async with rstream.Consumer(host, port, connection_name="rich-consumer", **creds) as consumer:
        await consumer.subscribe(PLAIN, collect("first", 100), offset_specification=spec(rstream.OffsetType.FIRST),
                                 initial_credit=1)
        await consumer.subscribe(BATCH, collect("batch"), offset_specification=spec(rstream.OffsetType.FIRST),
                                 initial_credit=2)
        await consumer.subscribe(DEDUP, collect("dedup"), offset_specification=spec(rstream.OffsetType.OFFSET, 25))
        await consumer.subscribe(MANY, collect("many"), offset_specification=spec(rstream.OffsetType.FIRST))
        await until(lambda: len(delivered["first"]) == 254 and len(delivered["batch"]) == 34
                    and len(delivered["dedup"]) == 15 and len(delivered["many"]) == 18, "the first deliveries")
        first = delivered["first"]
        summary["auto_stored"] = await consumer.query_offset(PLAIN, "rich-auto")
        _check(summary["auto_stored"] == first[199][0], f"rich-auto: {summary['auto_stored']}, not {first[199][0]}")
        _check([b for _, b, _ in first] == [_body("plain", i) for i in range(254)], "bodies from first")
        offsets = [o for o, _, _ in first]
        _check(offsets == sorted(set(offsets)), f"offsets from first not increasing: {offsets[:10]}...")
        summary["plain_offsets"] = offsets
        summary["batch_offsets"] = [o for o, _, _ in delivered["batch"]]
        _check([b for _, b, _ in delivered["dedup"]] == [_body("dedup", i) for i in range(26, 41)],
               f"dedup from offset 25: {delivered['dedup'][:3]}")
    # rstream keeps one subscription per stream and consumer: the other specifications on a
    # second consumer connection
    async with rstream.Consumer(host, port, connection_name="rich-consumer-2", **creds) as consumer:
        at = offsets[200]
        await consumer.subscribe(PLAIN, collect("offset"), offset_specification=spec(rstream.OffsetType.OFFSET, at))
        await until(lambda: len(delivered["offset"]) == 54, f"deliveries from offset {at}")
        _check([b for _, b, _ in delivered["offset"]] == [_body("plain", i) for i in range(200, 254)],
               f"from offset {at}: {delivered['offset'][:2]}")
        await consumer.unsubscribe(0)
        await consumer.subscribe(PLAIN, collect("last"), offset_specification=spec(rstream.OffsetType.LAST))
        await until(lambda: len(delivered["last"]) >= 1, "deliveries from last")
        _check(delivered["last"][-1][1] == _body("plain", 253), f"last: {delivered['last']}")
        await consumer.unsubscribe(1)
        stamp = first[200][2]              # the chunk time of message 200, as delivered
        await consumer.subscribe(PLAIN, collect("timestamp"),
                                 offset_specification=spec(rstream.OffsetType.TIMESTAMP, stamp))
        await until(lambda: len(delivered["timestamp"]) >= 54, f"deliveries from timestamp {stamp}")
        _check(delivered["timestamp"][0][1] == _body("plain", 200), f"timestamp: {delivered['timestamp'][:2]}")
        await consumer.unsubscribe(2)
        await consumer.subscribe(PLAIN, collect("next"), offset_specification=spec(rstream.OffsetType.NEXT))
        async with rstream.Producer(host, port, connection_name="rich-late", **creds) as producer:
            for i in range(254, 257):
                await producer.send_wait(PLAIN, _body("plain", i))
        await until(lambda: len(delivered["next"]) == 3, "deliveries from next")
        _check([b for _, b, _ in delivered["next"]] == [_body("plain", i) for i in range(254, 257)],
               f"next: {delivered['next']}")
    summary["delivered"] = {k: len(v) for k, v in delivered.items()}

    # 7. error cases on a raw connection (rstream's own client and frames)
    async with rstream.Consumer(host, port, connection_name="rich-errors", **creds) as consumer:
        client = await consumer.default_client
        response = await client.sync_request(
            schema.Metadata(client._corr_id_seq.next(), streams=[DEDUP, MISSING, PLAIN]),
            resp_schema=schema.MetadataResponse, raise_exception=False)
        summary["metadata_codes"] = {m.name: m.response_code for m in response.metadata}
        _check(summary["metadata_codes"] == {DEDUP: 1, MISSING: 2, PLAIN: 1},
               f"Metadata of three streams: {summary['metadata_codes']}")
        for what, call in (("Subscribe", client.subscribe(MISSING, 7)),
                           ("DeclarePublisher", client.declare_publisher(MISSING, None, 9)),
                           ("QueryOffset", client.query_offset(MISSING, READER))):
            try:
                await call
                raise SessionError(f"{what} on a missing stream succeeded")
            except rstream.StreamDoesNotExist:
                pass
        summary["unknown_sequence"] = await client.query_publisher_sequence(PLAIN, "rich-unknown")
        _check(summary["unknown_sequence"] == 0, f"sequence of an unknown reference: {summary['unknown_sequence']}")
        errors: list = []
        client.add_handler(schema.PublishError, lambda frame: errors.append(frame), name="rich-errors")
        await client.publish([schema.Message(publishing_id=1, filter_value=None, data=b"orphan")], publisher_id=77)
        await until(lambda: errors, "PublishError of an undeclared publisher")
        summary["publish_error"] = [(e.publishing_id, e.response_code) for e in errors[0].errors]
        await client.credit(99, 1)          # answered only because it is wrong (code 4)
        try:
            await client.unsubscribe(99)
            raise SessionError("Unsubscribe of an unknown subscription succeeded")
        except rstream.ServerError as exc:
            summary["unsubscribe_unknown"] = type(exc).__name__
        _check(await client.stream_exists(PLAIN), f"{PLAIN} went missing")

    # 8. the end: every stream deleted
    async with rstream.Producer(host, port, connection_name="rich-cleanup", **creds) as producer:
        for name in (PLAIN, DEDUP, BATCH, MANY):
            await producer.delete_stream(name)
        _check(not await producer.stream_exists(PLAIN), f"{PLAIN} still exists after Delete")
    return summary


# -- servers and the capture ---------------------------------------------------------------------

def _port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def record(server: str, out: str, port: int, host: str = "127.0.0.1") -> dict:
    """Run the session against ``server`` ("real" or "reference") listening on ``port`` while
    tshark captures it into ``out``; returns the session's summary."""
    from tests.support.tshark_capture import capture_loopback

    if not _port_free(host, port):
        raise SystemExit(f"port {port} is in use: give --port (replay then needs --port {port})")

    def run() -> dict:
        return asyncio.run(asyncio.wait_for(rich_session(host, port), SESSION_TIMEOUT))

    if server == "reference":
        from wirecheck.reference_impl.core.server import ThreadedServer
        spec = registry.get("rabbitmq-stream")
        with ThreadedServer(spec.make_broker(host, port, profile="rabbitmq-3.10")):
            with capture_loopback([port], out):
                return run()
    from tools.rabbitmq_real import RealRabbitMQ
    node = RealRabbitMQ(host=host)
    node.stream_port = port
    with node:
        with capture_loopback([port], out):
            return run()


def describe(path: str, port: int) -> dict:
    """Per connection (in the order they start) and direction: bytes, frames and commands."""
    from wirecheck.conformance.captures.decode import decode_pcap
    spec = registry.get("rabbitmq-stream")
    out = io.StringIO()
    status = decode_pcap(spec, path, ports=[port], out=out, profile="rabbitmq-3.10")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    problems = [line for line in lines if "category" in line]
    conns: dict[str, dict] = {}
    for line in lines:
        client = line["flow"].split("->")[line["direction"] == "s2c"]
        conn = conns.setdefault(client, {d: {"bytes": 0, "frames": 0, "commands": Counter(), "sequence": None}
                                         for d in ("c2s", "s2c")})
        if "type" in line:
            conn[line["direction"]]["frames"] += 1
            conn[line["direction"]]["commands"][line["type"]] += 1
    for client, sizes in _tcp_bytes(path, port).items():
        for direction, n in sizes.items():
            conns[client][direction]["bytes"] = n
    totals: Counter = Counter()
    for conn in conns.values():
        for direction in conn.values():
            totals.update(direction["commands"])
            direction["commands"] = dict(direction["commands"])
    return {"pcap": os.path.basename(path), "port": port, "tcp_connections": len(conns),
            "connections": {str(i): c for i, c in enumerate(conns.values())}, "totals": dict(totals),
            "problems": problems if status == 0 or problems else ["decode failed"]}


def _tcp_bytes(path: str, port: int) -> dict[str, dict[str, int]]:
    """Payload bytes per connection ("host:port" of the client) and direction."""
    from wirecheck.conformance.captures.pcapfile import PcapReader
    sizes: dict[str, dict[str, int]] = {}
    with PcapReader(path) as reader:
        for seg in reader:
            if port not in (seg.src[1], seg.dst[1]) or not seg.data:
                continue
            c2s = seg.dst[1] == port
            client = seg.src if c2s else seg.dst
            per = sizes.setdefault(f"{client[0]}:{client[1]}", {"c2s": 0, "s2c": 0})
            per["c2s" if c2s else "s2c"] += len(seg.data)
    return sizes


def _version(command: list[str]) -> str | None:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def versions(server: str) -> dict:
    import importlib.metadata
    out = {"rstream": importlib.metadata.version("rstream"),
           "tshark": _version(["dpkg-query", "-W", "-f=${Version}", "tshark"])}
    if server == "real":
        out["rabbitmq-server"] = _version(["dpkg-query", "-W", "-f=${Version}", "rabbitmq-server"])
        out["erlang-base"] = _version(["dpkg-query", "-W", "-f=${Version}", "erlang-base"])
    else:
        out["server"] = "wirecheck rabbitmq-stream reference broker, profile rabbitmq-3.10"
    return out


def update_manifest(path: str, manifest: dict) -> None:
    """The capture's entry in captures/rabbitmq-stream/MANIFEST.json, replayed by
    tests/conformance/captures/test_captures_corpus.py against the reference broker under rabbitmq-3.10."""
    versions = manifest["versions"]
    entry = {"file": os.path.relpath(path, os.path.dirname(MANIFEST)),
             "what": "a rich rstream session: many connections; publishers with confirms, a named publisher "
                     "deduplicating ids sent again after reconnecting, sub-entry batches (none, gzip), stored "
                     "offsets (one at a time, several together, from a delivery callback), subscriptions from "
                     "first, last, next, an offset and two timestamps, several on one connection with credit "
                     "1 per chunk, and error cases (Metadata, Subscribe, DeclarePublisher, QueryOffset, Delete "
                     "of a missing stream; an undeclared publisher; an unknown subscription)",
             "client": f"rstream {versions['rstream']} (PyPI)",
             "server": f"RabbitMQ 3.10.8 (Debian {versions.get('rabbitmq-server')}), rabbitmq_stream plugin",
             "connections": manifest["frames"]["tcp_connections"],
             "recorded": {"how": f"tshark {(versions.get('tshark') or '').split('-')[0]} on the loopback interface "
                                 "(tools/record_rstream_rich.py; see real/README.md and the .pcap.json beside it)"},
             "replay": {"broker_options": {"profile": "rabbitmq-3.10"}, "profile": "rabbitmq-3.10",
                        "real_rabbitmq": True},
             "malformed_client": False}
    with open(MANIFEST) as fh:
        doc = json.load(fh)
    doc["captures"] = sorted([e for e in doc["captures"] if e["file"] != entry["file"]] + [entry],
                             key=lambda e: e["file"])
    with open(MANIFEST, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("real", "reference"), default="real")
    parser.add_argument("--port", type=int, default=5552, help="the stream port (default 5552)")
    parser.add_argument("--out", help=f"the pcap (default: captures/rabbitmq-stream/real/{NAME} "
                                      "for the real server)")
    args = parser.parse_args(argv)
    out = args.out or (os.path.join(REAL_DIR, NAME) if args.server == "real" else None)
    if out is None:
        parser.error("--out is needed with --server reference")
    summary = record(args.server, out, args.port)
    frames = describe(out, args.port)
    if frames["problems"]:
        print(f"decoding {out} found problems: {frames['problems'][:3]}", file=sys.stderr)
        return 1
    manifest = {"pcap": os.path.basename(out), "bytes": os.path.getsize(out),
                "what": ("REAL client (rstream) <-> " + ("REAL server (RabbitMQ stream plugin)"
                         if args.server == "real" else "the reference broker (profile rabbitmq-3.10)")
                         + " on 127.0.0.1"),
                "versions": versions(args.server),
                "scenario": {"script": "tools/record_rstream_rich.py", "ok": True,
                             **{k: v for k, v in summary.items() if k not in ("plain_offsets", "batch_offsets")},
                             "plain_offsets_from": summary["plain_offsets"][::50],
                             "batch_offsets": summary["batch_offsets"]},
                "frames": frames}
    with open(out + ".json", "w") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
    os.chmod(out, 0o644)                    # dumpcap writes its file for its owner only
    if os.path.abspath(out) == os.path.join(REAL_DIR, NAME):
        update_manifest(out, manifest)
    print(f"{out}: {frames['tcp_connections']} connections, {os.path.getsize(out)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
