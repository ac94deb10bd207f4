"""kill -9 durability of the persisting reference brokers: ``python -m soak.durability``.

For BlipMQ (``--data-dir``: the WAL) and RabbitMQ Stream (``--data-dir``: segment files), each
iteration publishes with confirms into a running ``wirecheck serve`` child, SIGKILLs it at a
seeded random point, may damage the files the way a crash can (below), restarts it on the
same directory and reads everything back through the protocol:

* every confirmed message is served, in order, byte for byte as sent;
* nothing is served that was never sent (bodies are derived from their sequence number, so a
  served body either equals the one its number names or is reported);
* a record that was torn or refused is never served.

The data accumulates across iterations in one directory, so every restart re-checks all that
is confirmed and still due, over a log that has been recovered (BlipMQ: compacted) many times
and, for the stream, over many segments (a small segment size makes it roll). Only the
"damaged confirmed record" check works on a throw-away copy, because it destroys data by
design.

**Where the kill lands.** ``count``: after a random number of confirms, with one more publish
written and not confirmed (it races the kill). ``delay``: a timer fires at a random moment of
the publishing phase (mid-frame, mid-append, mid-roll). BlipMQ also, every ``ack_kill_every``
iterations, after the restart's reading: ACKs for a random part of what was served go out with
no barrier and the broker is killed after a random number of them (0..``max_acks``); each of
those messages may come back or not (the ACK was settled or not), every other one must, and a
second restart reads it all again. The broker's start-up (recovery, compaction) is not killed.

**What a kill -9 can and cannot do.** Every append is written before its publish is confirmed
(blipmq-protocol.md "PUBLISH": "Append to WAL", then the answer; the stream confirms after the
chunk is written), and written bytes live in the page cache, which a process kill does not
touch: whatever the fsync policy (default ``always``), a confirmed record is never torn by a
kill. A kill can cut short only the record being written, which was not confirmed. What a kill
cannot produce (a power loss can), the harness simulates between kill and restart, each time
on a record that was **never confirmed**, so the claim stays "no confirmed message is lost":

* ``cut``: the next record (a complete one the broker would have written for a message that
  then counts as sent, unconfirmed) is appended cut at a random byte inside it;
* ``flip``: that record appended whole with 1-4 consecutive bytes flipped in its CRC-covered
  part (a burst CRC-32 always detects; a torn write whose size reached the disk before its
  data);
* ``zeros``: up to 8 KiB of zero bytes appended (a file extended before its data was written);
* ``garbage``: up to 300 random bytes appended;
* ``none``: the files as the kill left them.

Recovery must detect the damage (length or CRC), truncate the file back to the last valid
record (checked: the stream's last segment is back to its size before the damage; the WAL,
compacted, holds only valid records) and serve everything before it. A torn record is never
served (it stays unconfirmed and, for the stream, is published again by the next iteration).

**Damaged confirmed record** (every ``corrupt_every`` iterations, on a copy): 1-4 bytes of a
confirmed record's data are flipped (media damage, not a crash). The claim is then only
"detected, never served corrupted": BlipMQ refuses to start when valid records follow the
damaged one (corruption, not a torn tail) and drops it when it is the last; the stream ends
before the damaged chunk (later segments set aside) and serves exactly what precedes it.

Reproducing: the same ``--seed`` and broker give the same kill points, batch sizes, damage
kinds and positions; where a ``delay`` kill lands in time depends on the machine. Iteration
``i`` of a run depends on the directory the ones before it left, so rerun with
``--iterations i+1``.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:          # runnable as a script from the repository root
    sys.path.insert(0, str(ROOT))

from wirecheck.reference_impl.blipmq import wal  # noqa: E402
from wirecheck.reference_impl.blipmq.broker import WAL_NAME  # noqa: E402
from wirecheck.reference_impl.blipmq.client import BlipClient, NackError  # noqa: E402
from wirecheck.reference_impl.core.client import ConnectionClosed  # noqa: E402
from wirecheck.reference_impl.rabbitmq_stream import chunk as osiris  # noqa: E402
from wirecheck.reference_impl.rabbitmq_stream.client import StreamClient  # noqa: E402
from wirecheck.reference_impl.rabbitmq_stream.codec import PublishedMessage  # noqa: E402
from wirecheck.reference_impl.rabbitmq_stream.constants import ChunkType, Code, Compression  # noqa: E402
from wirecheck.reference_impl.rabbitmq_stream.store import STREAMS_DIR, stream_dirname  # noqa: E402
from soak.common import write_result  # noqa: E402
from tests.support.blipmq_proc import BrokerProcess  # noqa: E402

NAME = "durability"
HOST = "127.0.0.1"
TIMEOUT = 10.0                   # any one network operation
PHASE_TIMEOUT = 120.0            # one publishing or reading phase as a whole
DAMAGE_KINDS = ("cut", "flip", "zeros", "garbage", "none")
PROTOCOLS = ("blipmq", "rabbitmq-stream")

#: Per run size, then per broker. A ``count`` kill comes after 0..max_count confirmed
#: messages, a ``delay`` kill 0..max_delay_s into publishing (which goes on until the kill;
#: max_messages is only a safety bound). The stream publishes in batches and is faster, hence
#: its shorter delays. ``corrupt_every``: the damaged-confirmed-record check's period.
PARAMS = {
    False: {"iterations": 100, "corrupt_every": 10,
            "blipmq": {"max_count": 400, "max_delay_s": 0.25, "max_messages": 5000,
                       "ack_probability": 0.2, "ack_kill_every": 3, "max_acks": 60},
            "rabbitmq-stream": {"max_count": 1500, "max_delay_s": 0.1, "max_messages": 20000,
                                "batch_max": 40, "window": 4, "segment_bytes": 256 * 1024}},
    True: {"iterations": 4, "corrupt_every": 2,
           "blipmq": {"max_count": 80, "max_delay_s": 0.05, "max_messages": 1000,
                      "ack_probability": 0.3, "ack_kill_every": 2, "max_acks": 15},
           "rabbitmq-stream": {"max_count": 300, "max_delay_s": 0.03, "max_messages": 4000,
                               "batch_max": 20, "window": 4, "segment_bytes": 16 * 1024}},
}


class Failure(Exception):
    """The run cannot go on (the broker does not come back)."""


def body(tag: bytes, seq: int) -> bytes:
    """Message ``seq``'s bytes: the number, then filler derived from it (mostly short, some
    several pages long so that a kill can land inside one write)."""
    rng = random.Random(zlib.crc32(tag) * 1_000_003 + seq)
    size = rng.randint(4000, 12000) if rng.random() < 0.02 else rng.randint(0, 200)
    return b"%s:%d:" % (tag, seq) + rng.randbytes(size)


def seq_of(message: bytes, tag: bytes) -> int | None:
    head, _, rest = message.partition(b":")
    number, sep, _ = rest.partition(b":")
    return int(number) if head == tag and sep and number.isdigit() else None


def flip(data: bytearray, start: int, end: int, rng: random.Random) -> list[int]:
    """XOR 1-4 consecutive bytes of ``data[start:end]`` with non-zero values; their offsets."""
    n = min(rng.randint(1, 4), end - start)
    at = rng.randrange(start, end - n + 1)
    for i in range(at, at + n):
        data[i] ^= rng.randint(1, 255)
    return [at, n]


def append_tail_damage(path, kind: str, record: bytearray | None, covered: tuple[int, int] | None,
                       rng: random.Random, info: dict) -> dict:
    """Append what a crash may leave after the last whole record, to ``path``: the next record
    the broker would have written (``record``), cut short ("cut") or with bytes flipped in its
    checksummed part ``covered`` ("flip"); zeros; or garbage. Recorded in ``info``."""
    if kind == "cut":
        extra = bytes(record[:rng.randint(1, len(record) - 1)])
    elif kind == "flip":
        info["flipped"] = flip(record, *covered, rng)
        extra = bytes(record)
    elif kind == "zeros":
        extra = bytes(rng.randint(1, 8192))
    else:
        extra = rng.randbytes(rng.randint(1, 300))
    with open(path, "ab") as fh:
        fh.write(extra)
    info["appended_bytes"] = len(extra)
    return info


# --- the broker as a child, and the kill -------------------------------------------------------

class Broker(BrokerProcess):
    """:class:`BrokerProcess` that keeps what the broker printed when it does not start (a
    refusal to start is an outcome here, not an error)."""

    def start(self, timeout: float = 30.0) -> "Broker":
        cmd = [sys.executable, "-m", "wirecheck", "serve", "--protocol", self.protocol,
               "--port", "0", *self.args]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.output = []
        found = threading.Event()

        def read() -> None:
            for line in self.proc.stdout:
                m = None if found.is_set() else re.search(r"listening on [\d.]+:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    found.set()
                elif len(self.output) < 200:
                    self.output.append(line)
            found.set()                                  # EOF: it exited
        threading.Thread(target=read, daemon=True).start()
        if not found.wait(timeout) or not self.port:
            self.kill()
            raise Failure(f"{self.protocol} broker did not start: {''.join(self.output)[-400:]}")
        return self


class Killer:
    """SIGKILLs the broker once: after ``value`` confirms (``count``), or ``value`` seconds
    after :meth:`arm` (``delay``). Popen.send_signal does nothing once the child is reaped,
    so a late timer can never signal a reused pid."""

    def __init__(self, broker: Broker, mode: str, value) -> None:
        self.broker, self.mode, self.value = broker, mode, value
        self.fired_at: str | None = None
        self._timer: threading.Timer | None = None

    def arm(self) -> None:
        if self.mode == "delay":
            self._timer = threading.Timer(self.value, self.fire, ("timer",))
            self._timer.start()

    def fire(self, where: str) -> None:
        if self.fired_at is None:
            self.fired_at = where
            self.broker.proc.send_signal(signal.SIGKILL)

    def finish(self) -> None:
        """Stop the timer, make sure the broker is dead and reaped."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer.join()
        self.fire("after publishing (idle)")
        self.broker.proc.wait(30)


async def _bounded(coro, what: str):
    try:
        return await asyncio.wait_for(coro, PHASE_TIMEOUT)
    except asyncio.TimeoutError:
        raise Failure(f"{what} did not finish within {PHASE_TIMEOUT} s") from None


# --- BlipMQ -------------------------------------------------------------------------------------

class BlipRun:
    """One BlipMQ subscription (QoS1) fed by one publisher. The ledger holds, in publish
    order, every message that may still be served: ``confirmed`` (must be), ``maybe`` (sent,
    unconfirmed: may be) and ``torn`` (must not be). An ack is confirmed by a barrier PING
    (answers come in order), so an acked message must never come back."""

    protocol = "blipmq"
    TAG, TOPIC, KEY = b"blip", "durable", "durability-key"

    def __init__(self, params: dict, fsync: str) -> None:
        self.params = params
        # retry_backoff and max_queue out of the way: an ack is then the only way a message
        # leaves its queue (no redelivery within one broker's life, no eviction).
        self.args = ["--fsync", fsync, "--api-key", self.KEY, "--option", "retry_backoff=86400",
                     "--option", "max_queue=1000000"]
        self.ledger: dict[int, str] = {}
        self.acked: set[int] = set()
        self.next_seq = 1
        self.sub: int | None = None

    def _new(self, status: str) -> int:
        seq, self.next_seq = self.next_seq, self.next_seq + 1
        self.ledger[seq] = status
        return seq

    async def _connect(self, port: int) -> BlipClient:
        return await BlipClient.connect(HOST, port, api_key=self.KEY, timeout=TIMEOUT)

    async def setup(self, port: int) -> None:
        client = await self._connect(port)
        try:
            self.sub = await client.subscribe(self.TOPIC, 1)
        finally:
            await client.close()

    async def publish(self, port: int, killer: Killer, rng: random.Random) -> dict:
        client = await self._connect(port)
        confirmed, problems = 0, []
        killer.arm()
        try:
            for _ in range(self.params["max_messages"]):
                seq = self._new("maybe")
                if killer.mode == "count" and confirmed >= killer.value:
                    await client.publish(self.TOPIC, body(self.TAG, seq), qos=1)
                    killer.fire("one publish in flight")
                    break
                try:
                    await client.publish(self.TOPIC, body(self.TAG, seq), qos=1, confirm=True)
                except NackError as exc:
                    self.ledger[seq] = "torn"              # refused: must never be served
                    problems.append(f"publish {seq} refused: {exc}")
                    break
                self.ledger[seq] = "confirmed"
                confirmed += 1
        except (ConnectionClosed, ConnectionError, OSError, asyncio.TimeoutError):
            pass                                           # the kill
        finally:
            await client.close()
        return {"confirmed": confirmed, "problems": problems}

    def check(self, served: list[bytes]) -> dict:
        """Compare what a restarted broker served with the ledger; the ledger becomes what
        was served (a served ``maybe`` is recovered, so it must be served from now on)."""
        items = list(self.ledger.items())
        must = sum(1 for _, s in items if s == "confirmed")
        problems, seen, j = [], {}, 0
        lost = unknown = torn_served = 0
        for message in served:
            seq = seq_of(message, self.TAG)
            if seq is None or message != body(self.TAG, seq):
                unknown += 1
                problems.append(f"served a message never sent (or altered): {message[:32]!r}")
                continue
            k = j
            while k < len(items) and items[k][0] != seq:
                k += 1
            if k == len(items):
                unknown += 1
                why = ("acked before the kill" if seq in self.acked else
                       "out of order or twice" if seq in self.ledger else "never journaled")
                problems.append(f"message {seq} served: {why}")
                continue
            for s, status in items[j:k]:
                if status == "confirmed":
                    lost += 1
                    problems.append(f"confirmed message {s} lost")
            if items[k][1] == "torn":
                torn_served += 1
                problems.append(f"torn or refused message {seq} served")
            seen[seq] = "confirmed"
            j = k + 1
        for s, status in items[j:]:
            if status == "confirmed":
                lost += 1
                problems.append(f"confirmed message {s} lost")
        self.ledger = seen
        return {"expected_at_least": must, "recovered": len(served), "lost": lost,
                "unknown": unknown, "torn_served": torn_served, "problems": problems}

    async def _drain(self, client: BlipClient) -> list:
        got = []
        limit = len(self.ledger) + 1000            # a broker that serves for ever is a failure
        while len(got) < limit and (msg := await client.poll(self.sub)) is not None:
            got.append(msg)
        return got

    async def verify(self, port: int, rng: random.Random, *, ack: bool = True,
                     killer: "Killer | None" = None) -> dict:
        """Read everything back and check it; then ack a random part (checked by the next
        restart). With ``killer`` (a kill while acking): the ACKs go out with no barrier and
        the broker is killed after ``killer.value`` of them. Each ACK sent may or may not
        have been settled: its message may come back (it is then due again) or not."""
        client = await self._connect(port)
        try:
            messages = await self._drain(client)
            result = self.check([m.message for m in messages])
            if killer is not None:
                result["acks_sent"] = await self._ack_until_killed(client, messages, killer, rng)
            elif ack:
                # Settle a random part: the next restart checks it never comes back.
                acked = [m for m in messages if seq_of(m.message, self.TAG) in self.ledger
                         and rng.random() < self.params["ack_probability"]]
                for m in acked:
                    await client.ack(self.sub, m.tag)
                await client.ping()                         # barrier: every ACK processed
                if client.errors:
                    result["problems"].append(f"ACK refused: {client.errors[0]}")
                for m in acked:
                    seq = seq_of(m.message, self.TAG)
                    del self.ledger[seq]
                    self.acked.add(seq)
                result["acked"] = len(acked)
        finally:
            await client.close()
        return result

    async def _ack_until_killed(self, client: BlipClient, messages: list, killer: "Killer",
                                rng: random.Random) -> int:
        sent = 0
        try:
            for m in messages:
                seq = seq_of(m.message, self.TAG)
                if seq not in self.ledger or rng.random() >= self.params["ack_probability"]:
                    continue
                if sent >= killer.value:
                    break
                self.ledger[seq] = "maybe"           # settled or not: the restart tells
                self.acked.add(seq)                  # (served later than that: an error)
                await client.ack(self.sub, m.tag)
                sent += 1
            killer.fire(f"{sent} ACK(s) sent, none confirmed")
        except (ConnectionClosed, ConnectionError, OSError, asyncio.TimeoutError):
            pass
        return sent

    # -- damage --------------------------------------------------------------------------------

    def damage(self, data_dir: str, kind: str, rng: random.Random) -> dict:
        path = os.path.join(data_dir, WAL_NAME)
        size = os.path.getsize(path)
        version, records, end = wal.read_records(path)
        info = {"kind": kind, "file_bytes": size}
        if end != size:
            info["torn_by_kill_bytes"] = size - end      # a kill cut a (long) write short
        if kind == "none" or end != size:
            return info
        if kind in ("cut", "flip"):
            seq = self._new("torn")
            payload = wal.publish_payload(1, self.TOPIC, body(self.TAG, seq), [self.sub])
            record = bytearray(wal.encode_record(max((r.id for r in records), default=0) + 1,
                                                 payload))
            info["message"] = seq
            return append_tail_damage(path, kind, record, (wal.RECORD.size, len(record)), rng, info)
        return append_tail_damage(path, kind, None, None, rng, info)

    def recovered_cleanly(self, data_dir: str, damage: dict) -> bool | None:
        """After a restart: the compacted WAL holds valid records only (the damage is gone)."""
        if "appended_bytes" not in damage and "torn_by_kill_bytes" not in damage:
            return None
        path = os.path.join(data_dir, WAL_NAME)
        return wal.read_records(path)[2] == os.path.getsize(path)

    async def corrupt_confirmed(self, data_dir: str, scratch: str, rng: random.Random) -> dict:
        """Claim "detected, never served corrupted", on a copy of the directory."""
        path = os.path.join(scratch, WAL_NAME)
        version, records, end = wal.read_records(path)
        pos, spots = wal.HEADER.size, []
        for rec in records:
            kind, *fields = wal.decode_payload(version, rec.payload)
            if kind == wal.KIND_PUBLISH and self.ledger.get(seq_of(fields[-1], self.TAG)) == "confirmed":
                start = pos + wal.RECORD.size + len(rec.payload) - len(fields[-1])
                spots.append((start, pos + wal.RECORD.size + len(rec.payload), fields[-1]))
            pos += wal.RECORD.size + len(rec.payload)
        if not spots:
            return {"skipped": "no confirmed record in the log"}
        start, stop, message = rng.choice(spots)
        data = bytearray(Path(path).read_bytes())
        flipped = flip(data, start, stop, rng)
        Path(path).write_bytes(bytes(data))
        seq = seq_of(message, self.TAG)
        last = stop == end
        info = {"message": seq, "flipped": flipped, "last_record": last}
        saved = (dict(self.ledger), set(self.acked))
        self.ledger[seq] = "torn"                      # damaged: must never be served
        try:
            broker = Broker(*self.args, "--data-dir", scratch, protocol=self.protocol)
            try:
                broker.start()
            except Failure as exc:
                info["refused_to_start"] = True
                info["ok"] = not last and "bad record" in str(exc)
                info["detail"] = str(exc)[-200:]
                return info
            try:
                check = await _bounded(self.verify(broker.port, rng, ack=False), "reading")
            finally:
                broker.kill()
            info.update(refused_to_start=False, served=check["recovered"],
                        problems=check["problems"][:5])
            # Started: only right when the damaged record was the last (a torn tail); then
            # everything else is served and the damaged one is not.
            info["ok"] = last and not check["problems"]
            return info
        finally:
            self.ledger, self.acked = saved


# --- RabbitMQ Stream ----------------------------------------------------------------------------

class StreamRun:
    """One stream, one named publisher (deduplication: RMQS "DeclarePublisher" with a
    reference). Publishing id ``p`` always carries the same records, so after a restart the
    stream must hold exactly the records of ids 1..n where n is the publisher's sequence
    (QueryPublisherSequence), with every confirmed id at or below n; the next iteration
    publishes again from n + 1 (what a producer does with unconfirmed messages)."""

    protocol = "rabbitmq-stream"
    TAG, STREAM, REF, USER = b"rmqs", "durable", "durability", "durability"

    def __init__(self, params: dict, fsync: str) -> None:
        self.params = params
        self.args = ["--fsync", fsync, "--api-key", f"{self.USER}:{self.USER}-pw"]
        self.sent = 0               # highest publishing id sent or fabricated
        self.confirmed = 0          # highest confirmed publishing id
        self.torn: set[int] = set()
        self._records: list[list[bytes]] = [[]]

    def records(self, pid: int) -> list[bytes]:
        """The bodies publishing id ``pid`` carries: one, or a sub-batch of 2-5 (some gzip)."""
        while len(self._records) <= pid:
            p = len(self._records)
            n = random.Random(p).choice((1,) * 9 + (2, 3, 5))
            self._records.append([body(self.TAG, p * 8 + k) for k in range(n)])
        return self._records[pid]

    def entry(self, pid: int):
        recs = self.records(pid)
        if len(recs) == 1:
            return recs[0]
        return osiris.SubBatchEntry.of(recs, Compression.GZIP if pid % 2 else Compression.NONE)

    async def _connect(self, port: int) -> StreamClient:
        return await StreamClient.connect(HOST, port, user=self.USER, password=f"{self.USER}-pw",
                                          timeout=TIMEOUT, auto_credit=True)

    async def setup(self, port: int) -> None:
        client = await self._connect(port)
        try:
            r = await client.create(self.STREAM, {"stream-max-segment-size-bytes":
                                                  str(self.params["segment_bytes"])})
            if r.code != Code.OK:
                raise Failure(f"Create answered {r.code}")
        finally:
            await client.close()

    async def publish(self, port: int, killer: Killer, rng: random.Random) -> dict:
        client = await self._connect(port)
        confirmed, problems, done = 0, [], {}
        try:
            r = await client.declare_publisher(1, self.STREAM, self.REF)
            if r.code != Code.OK:
                raise Failure(f"DeclarePublisher answered {r.code}")
            pid = (await client.query_publisher_sequence(self.REF, self.STREAM)).sequence + 1
            last = pid + self.params["max_messages"]
            frames: list[list[int]] = []
            client.confirms[1], client.errors[1] = asyncio.Queue(), asyncio.Queue()
            killer.arm()
            while pid < last or frames:
                while pid < last and len(frames) < self.params["window"]:
                    ids = list(range(pid, min(last, pid + rng.randint(1, self.params["batch_max"]))))
                    client.publish(1, [PublishedMessage(i, self.entry(i)) for i in ids])
                    self.sent = max(self.sent, ids[-1])
                    self.torn.difference_update(ids)          # sent again: may be stored now
                    frames.append(ids)
                    pid = ids[-1] + 1
                ids = frames.pop(0)
                while not all(i in done for i in ids):
                    done.update(await _next_confirm(client))
                for i in ids:
                    if done[i] != Code.OK:
                        problems.append(f"publishing id {i} refused: code {done[i]}")
                        raise Failure(problems[-1])
                    self.confirmed = max(self.confirmed, i)
                    confirmed += 1
                if killer.mode == "count" and confirmed >= killer.value:
                    killer.fire(f"{len(frames)} frame(s) in flight")
        except (ConnectionClosed, ConnectionError, OSError, asyncio.TimeoutError):
            pass                                               # the kill
        finally:
            await client.close()
        return {"confirmed": confirmed, "problems": problems}

    async def _read(self, client: StreamClient, count: int) -> tuple[list[bytes], list]:
        """Records of the stream from its start: ``count`` of them, then whatever else comes
        before the end the stream's stats name (its last chunk's first offset)."""
        r = await client.subscribe(1, self.STREAM, credit=8)
        if r.code != Code.OK:
            raise Failure(f"Subscribe answered {r.code}")
        committed = (await client.stream_stats(self.STREAM)).stats.get("committed_chunk_id", -1)
        got: list[bytes] = []
        chunks: list = []
        while True:
            wait = TIMEOUT
            if len(got) >= count:
                last = chunks[-1] if chunks else None
                if committed == -1 or (last is not None and last.first_offset == committed):
                    return got, chunks              # the stream's last chunk is here
                # A tracking chunk may end the stream (never delivered): a short wait for a
                # user chunk after it, a longer one when the stats and the data disagree.
                wait = 0.5 if last is not None and last.next_offset == committed else 2.0
            try:
                d = await client.next_delivery(1, timeout=wait)
            except asyncio.TimeoutError:
                return got, chunks
            chunks.append(d.chunk)
            got.extend(d.chunk.messages())

    async def verify(self, port: int, rng: random.Random, *, exactly: int | None = None) -> dict:
        client = await self._connect(port)
        problems = []
        try:
            n = (await client.query_publisher_sequence(self.REF, self.STREAM)).sequence
            if exactly is not None and n != exactly:
                problems.append(f"publisher sequence {n}, expected {exactly}")
            if exactly is None and n < self.confirmed:
                problems.append(f"publisher sequence {n} below the confirmed id {self.confirmed}")
            if n > self.sent or n in self.torn:
                problems.append(f"publisher sequence {n}: never stored (sent up to {self.sent})")
            want = [b for pid in range(1, n + 1) for b in self.records(pid)]
            got, chunks = await self._read(client, len(want))
        finally:
            await client.close()
        bad = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
        if bad is not None:
            problems.append(f"record {bad} differs from what was sent: {got[bad][:32]!r}")
        if len(got) < len(want):
            problems.append(f"{len(want) - len(got)} stored record(s) not served")
        unknown = max(0, len(got) - len(want))
        if unknown:
            problems.append(f"{unknown} record(s) served beyond publishing id {n}")
        lost = sum(len(self.records(p)) for p in range(n + 1, self.confirmed + 1))
        offsets = [c.first_offset for c in chunks]
        if offsets != sorted(set(offsets)):
            problems.append("chunks served out of order or twice")
        return {"expected_at_least": sum(len(self.records(p)) for p in range(1, self.confirmed + 1)),
                "recovered": len(got), "sequence": n, "lost": lost if exactly is None else 0,
                "unknown": unknown + (bad is not None),
                "torn_served": sum(1 for p in self.torn if p <= n), "problems": problems}

    # -- damage --------------------------------------------------------------------------------

    def _segments(self, data_dir: str) -> list[Path]:
        d = Path(data_dir, STREAMS_DIR, stream_dirname(self.STREAM))
        return sorted(d.glob("*.segment"))

    @staticmethod
    def _chunks(path: Path) -> tuple[list[tuple[int, tuple]], int]:
        """(position, header fields) of each whole chunk of a segment, and where they end."""
        data = path.read_bytes()
        out, pos = [], 0
        while pos + osiris.HEADER_SIZE <= len(data):
            h = osiris.HEADER.unpack_from(data, pos)
            length = osiris.HEADER_SIZE + h[10] + h[8] + h[9]
            if pos + length > len(data):
                break
            out.append((pos, h))
            pos += length
        return out, pos

    def damage(self, data_dir: str, kind: str, rng: random.Random) -> dict:
        path = self._segments(data_dir)[-1]
        size = path.stat().st_size
        chunks, end = self._chunks(path)
        info = {"kind": kind, "file_bytes": size, "segment": path.name}
        if end != size:
            info["torn_by_kill_bytes"] = size - end
        if kind == "none" or end != size:
            return info
        if kind in ("cut", "flip"):
            self.sent += 1
            pid = self.sent
            self.torn.add(pid)
            entry = self.entry(pid)
            entry = osiris.SimpleEntry(entry) if isinstance(entry, bytes) else entry
            first = chunks[-1][1][6] + chunks[-1][1][3] if chunks else int(path.name.split(".")[0])
            trailer = osiris.encode_tracking([(osiris.TrackingType.SEQUENCE, self.REF, pid)])
            raw = bytearray(osiris.build_chunk([entry], first, int(time.time() * 1000),
                                               trailer=trailer).encode())
            info["publishing_id"] = pid
            return append_tail_damage(path, kind, raw, (osiris.HEADER_SIZE, len(raw) - len(trailer)), rng, info)
        return append_tail_damage(path, kind, None, None, rng, info)

    def recovered_cleanly(self, data_dir: str, damage: dict) -> bool | None:
        """After a restart: the damaged segment is back to its last whole chunk."""
        if "appended_bytes" not in damage and "torn_by_kill_bytes" not in damage:
            return None
        path = Path(data_dir, STREAMS_DIR, stream_dirname(self.STREAM), damage["segment"])
        return path.stat().st_size == damage["file_bytes"] - damage.get("torn_by_kill_bytes", 0)

    async def corrupt_confirmed(self, data_dir: str, scratch: str, rng: random.Random) -> dict:
        spots, before = [], 0       # (segment, chunk position, data span, pid before the chunk)
        for path in self._segments(scratch):
            chunks, _ = self._chunks(path)
            raw = path.read_bytes()
            for pos, h in chunks:
                if h[1] != ChunkType.USER:
                    continue
                data_at = pos + osiris.HEADER_SIZE + h[10]
                trailer = raw[data_at + h[8]:data_at + h[8] + h[9]]
                pid = max(v for _, _, v in osiris.parse_tracking(trailer))
                if pid <= self.confirmed:
                    spots.append((path, data_at, data_at + h[8], before))
                before = pid
        if not spots:
            return {"skipped": "no confirmed chunk"}
        path, start, stop, before = rng.choice(spots)
        data = bytearray(path.read_bytes())
        info = {"segment": path.name, "flipped": flip(data, start, stop, rng),
                "publishing_ids_before": before}
        path.write_bytes(bytes(data))
        broker = Broker(*self.args, "--data-dir", scratch, protocol=self.protocol).start()
        try:
            check = await _bounded(self.verify(broker.port, rng, exactly=before), "reading")
        finally:
            broker.kill()
        info.update(served=check["recovered"], problems=check["problems"][:5],
                    set_aside=sorted(p.name for p in path.parent.glob("*.corrupt*")))
        info["ok"] = not check["problems"]
        return info


async def _next_confirm(client: StreamClient) -> dict[int, int]:
    """{publishing id: code} of publisher 1's next PublishConfirm or PublishError. Raises
    ConnectionClosed as soon as the connection is gone (StreamClient.wait_confirms would wait
    out its whole timeout after a kill), TimeoutError after TIMEOUT."""
    for _ in range(int(TIMEOUT / 0.05)):
        if not client.errors[1].empty():
            return dict(client.errors[1].get_nowait().errors)
        try:
            frame = await asyncio.wait_for(client.confirms[1].get(), 0.05)
            return {i: Code.OK for i in frame.publishing_ids}
        except asyncio.TimeoutError:
            if client._closed is not None:          # FramedClient: the read loop ended
                raise ConnectionClosed(str(client._closed)) from None
    raise asyncio.TimeoutError("no PublishConfirm")


# --- the run ------------------------------------------------------------------------------------

def iteration_seed(seed: int, protocol: str, i: int) -> int:
    return zlib.crc32(f"{protocol}:{seed}:{i}".encode())


def run_broker(target, iterations_planned: int, corrupt_every: int, workdir: str,
               seed: int) -> dict:
    """Every iteration of one broker; stops early only when the broker does not come back."""
    p = target.params
    data_dir = os.path.join(workdir, "data")
    iterations, failure = [], None

    def restart(it: dict) -> Broker | None:
        """The broker again on the same directory; None when it does not come back (the
        iteration is recorded as failed, and the run stops)."""
        nonlocal failure
        try:
            return Broker(*target.args, "--data-dir", data_dir, protocol=target.protocol).start()
        except Failure as exc:
            it.update(outcome="fail", problems=[str(exc)])
            iterations.append(it)
            failure = str(exc)
            return None
    broker = Broker(*target.args, "--data-dir", data_dir, protocol=target.protocol).start()
    try:
        asyncio.run(_bounded(target.setup(broker.port), "setup"))
        for i in range(iterations_planned):
            s = iteration_seed(seed, target.protocol, i)
            rng = random.Random(s)
            mode = rng.choice(("count", "delay"))
            value = (rng.randint(0, p["max_count"]) if mode == "count"
                     else round(rng.uniform(0, p["max_delay_s"]), 4))
            kind = DAMAGE_KINDS[i % len(DAMAGE_KINDS)]
            it = {"iteration": i, "seed": s, "kill": {"mode": mode, "value": value}}
            killer = Killer(broker, mode, value)
            try:
                it.update(asyncio.run(_bounded(target.publish(broker.port, killer, rng),
                                               "publishing")))
            finally:
                killer.finish()
            it["kill"]["landed"] = killer.fired_at
            if corrupt_every and i % corrupt_every == corrupt_every - 1:
                scratch = os.path.join(workdir, "scratch")
                shutil.copytree(data_dir, scratch)
                try:
                    it["corrupt_confirmed"] = asyncio.run(
                        _bounded(target.corrupt_confirmed(data_dir, scratch, rng), "damage check"))
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)
            it["damage"] = target.damage(data_dir, kind, rng)
            started = restart(it)
            if started is None:
                break
            broker = started
            it["truncated_ok"] = target.recovered_cleanly(data_dir, it["damage"])
            every = p.get("ack_kill_every")
            if every and i % every == every - 1:
                # A kill while acking, then a restart and a second reading (BlipMQ).
                killer = Killer(broker, "count", rng.randint(0, p["max_acks"]))
                try:
                    check = asyncio.run(_bounded(target.verify(broker.port, rng, killer=killer),
                                                 "reading, then acking"))
                finally:
                    killer.finish()
                it["ack_kill"] = {"acks_sent": check.pop("acks_sent", 0), "landed": killer.fired_at}
                started = restart(it)
                if started is None:
                    break
                broker = started
                again = asyncio.run(_bounded(target.verify(broker.port, rng), "reading after the ack kill"))
                it["after_ack_kill"] = {k: again[k] for k in ("expected_at_least", "recovered")}
                for key in ("lost", "unknown", "torn_served"):
                    check[key] += again[key]
                check["problems"] += again["problems"]
            else:
                check = asyncio.run(_bounded(target.verify(broker.port, rng), "reading"))
            problems = it.pop("problems") + check.pop("problems")
            if it["truncated_ok"] is False:
                problems.append("the damaged tail was not truncated")
            if not it.get("corrupt_confirmed", {}).get("ok", True):
                problems.append("damaged confirmed record: " + repr(it["corrupt_confirmed"]))
            it.update(check, problems=problems[:10], outcome="fail" if problems else "ok")
            iterations.append(it)
    finally:
        broker.kill()
    return _summary(iterations, iterations_planned, failure)


def _summary(iterations: list[dict], planned: int, failure: str | None) -> dict:
    def total(key: str) -> int:
        return sum(it.get(key, 0) for it in iterations)
    damaged = [it for it in iterations if it.get("truncated_ok") is not None]
    corrupt = [it["corrupt_confirmed"] for it in iterations
               if "skipped" not in it.get("corrupt_confirmed", {"skipped": 1})]
    goals = [
        _goal("iterations completed", len(iterations) - (failure is not None), f"== {planned}",
              len(iterations) - (failure is not None) == planned),
        _goal("confirmed messages lost", total("lost"), "== 0", total("lost") == 0),
        _goal("messages served that were never sent or altered", total("unknown"), "== 0",
              total("unknown") == 0),
        _goal("torn or refused records served", total("torn_served"), "== 0",
              total("torn_served") == 0),
        _goal("damaged tails truncated back to the last valid record",
              f"{sum(1 for it in damaged if it['truncated_ok'])}/{len(damaged)}",
              "all", all(it["truncated_ok"] for it in damaged)),
        _goal("damaged confirmed records detected, never served",
              f"{sum(1 for c in corrupt if c['ok'])}/{len(corrupt)}", "all",
              all(c["ok"] for c in corrupt)),
        _goal("iterations with a problem", sum(it["outcome"] != "ok" for it in iterations),
              "== 0", all(it["outcome"] == "ok" for it in iterations)),
    ]
    return {"iterations": iterations, "failure": failure,
            "confirmed_total": total("confirmed"),
            "restarts_that_recovered_unconfirmed": sum(
                1 for it in iterations if it.get("recovered", 0) > it.get("expected_at_least", 0)),
            "damage_kinds": {k: sum(1 for it in iterations if it.get("damage", {}).get("kind") == k
                                    and ("appended_bytes" in it["damage"] or k == "none"))
                             for k in DAMAGE_KINDS},
            "torn_by_kill": sum(1 for it in iterations if "torn_by_kill_bytes" in it.get("damage", {})),
            "goals": goals, "ok": all(g["met"] for g in goals)}


def _goal(name: str, figure, target: str, met: bool) -> dict:
    return {"name": name, "figure": figure, "goal": target, "met": bool(met)}


def run(quick: bool, protocols=PROTOCOLS, seed: int = 1, iterations: int | None = None,
        fsync: str = "always") -> dict:
    params = dict(PARAMS[quick])
    if iterations is not None:
        params["iterations"] = iterations
    started = time.monotonic()
    results = {}
    for protocol in protocols:
        target = (BlipRun if protocol == "blipmq" else StreamRun)(params[protocol], fsync)
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"durability-{protocol}-") as workdir:
            results[protocol] = run_broker(target, params["iterations"], params["corrupt_every"],
                                           workdir, seed)
        results[protocol]["elapsed_s"] = round(time.monotonic() - t0, 1)
    return {"name": NAME, "quick": quick,
            "parameters": dict(params, seed=seed, fsync=fsync, damage_kinds=list(DAMAGE_KINDS),
                               protocols=list(protocols)),
            "brokers": results,
            "goals": [dict(g, name=f"{p}: {g['name']}") for p, r in results.items() for g in r["goals"]],
            "elapsed_s": round(time.monotonic() - started, 1),
            "ok": all(r["ok"] for r in results.values())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m soak.durability",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"{PARAMS[True]['iterations']} iterations per broker instead of "
                             f"{PARAMS[False]['iterations']}")
    parser.add_argument("--protocol", action="append", choices=PROTOCOLS, help="only these (repeatable)")
    parser.add_argument("--iterations", type=int, help="override the iterations per broker")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fsync", default="always", help="the brokers' --fsync policy")
    parser.add_argument("--out", default=f"reports/soak/{NAME}.json")
    args = parser.parse_args(argv)
    result = run(args.quick, tuple(args.protocol or PROTOCOLS), args.seed, args.iterations, args.fsync)
    write_result(args.out, result)
    for p, r in result["brokers"].items():
        failed = [g["name"] for g in r["goals"] if not g["met"]]
        print(f"{p}: {'ok' if r['ok'] else 'FAILED'}  {len(r['iterations'])} iterations, "
              f"{r['confirmed_total']} confirmed, damage {r['damage_kinds']}, "
              f"{r['elapsed_s']} s" + (f"; failed: {failed}" if failed else ""), flush=True)
    print(f"durability: {'all goals met' if result['ok'] else 'FAILED'} in {result['elapsed_s']} s; {args.out}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
