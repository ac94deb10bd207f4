"""Seeds of the BlipMQ write-ahead log target (fuzz/corpora/blipmq-wal/): logs as the broker
writes them (subscriptions, QoS1 publishes, settlements, after compaction), as the real
daemon writes them (version 1), and as a crash leaves them (a torn record, a zero-filled
tail). Run ``python -m wirecheck.fuzz.builders.wal_corpus`` to write them again."""
from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

from wirecheck.reference_impl.blipmq import wal
from wirecheck.reference_impl.blipmq.state import MAX_ID, BrokerState

CORPUS = Path(__file__).resolve().parents[1] / "corpora" / "blipmq-wal"


def _written(steps) -> bytes:
    """The log a broker writes while ``steps(state)`` runs (recovered from nothing first)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "blipmq.wal")
        log = wal.WriteAheadLog(path, "none")
        state = BrokerState(log, max_queue=4)
        log.recover(state)
        steps(state)
        log.close()
        return Path(path).read_bytes()


def _traffic(state: BrokerState) -> None:
    a = state.subscribe("orders", 1)
    state.subscribe("orders", 0)
    state.subscribe("prices.eur", 1)
    for i in range(3):
        state.publish(1, "orders", b"order %d" % i)
    state.publish(1, "prices.eur", "1,08 \u20ac".encode("utf-8"))
    got = state.poll(a, 0.0)
    state.ack(a, got.tag)


def _evictions(state: BrokerState) -> None:
    sub = state.subscribe("full", 1)
    for i in range(6):                       # max_queue 4: the oldest are settled as evicted
        state.publish(1, "full", bytes([i]) * 10)
    state.poll(sub, 0.0)


def seeds() -> dict[str, bytes]:
    header1 = wal.HEADER.pack(wal.MAGIC, 1)
    traffic = _written(_traffic)
    sub = bytes((wal.KIND_SUBSCRIBE,)) + struct.pack(">QB", 1, 1) + struct.pack(">H", 1) + b"t"
    return {
        "empty": wal.HEADER.pack(wal.MAGIC, wal.VERSION),
        "traffic": traffic,
        "evictions": _written(_evictions),
        "torn-record": traffic[:-5],
        "zero-tail": traffic + bytes(64),
        "version-1": header1 + b"".join(
            wal.encode_record(i + 1, bytes((1,)) + struct.pack(">H", 5) + b"topic" + b"message %d" % i)
            for i in range(3)),
        "ids-near-the-end": wal.HEADER.pack(wal.MAGIC, wal.VERSION) + wal.encode_record(MAX_ID - 1, sub)
        + wal.encode_record(MAX_ID, wal.publish_payload(1, "t", b"last", [1])),
        "subscriptions-only": _written(lambda s: [s.subscribe(f"topic.{i}", i % 2) for i in range(5)]),
    }


def main() -> None:
    CORPUS.mkdir(parents=True, exist_ok=True)
    for name, data in seeds().items():
        (CORPUS / name).write_bytes(data)
    print(f"{len(seeds())} seeds in {CORPUS}")


if __name__ == "__main__":
    main()
