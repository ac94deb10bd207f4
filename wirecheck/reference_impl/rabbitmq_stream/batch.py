"""What one read of a connection writes to the streams under the ``rabbitmq-3.10`` profile,
batched as RabbitMQ 3.10.8's stream writer batches it (sans-IO; session.py owns the batch).

Observed on the real server (tests/reference_impl/rabbitmq_stream/test_rmqs_rich_capture.py checks it there):

- the messages of the Publish frames that reach the writer together go into one chunk, and a
  StoreOffset among them rides in that chunk's trailer: it spends no offset;
- StoreOffsets that reach it together without a message for that stream are one tracking
  chunk: one offset for all of them (a StoreOffset alone: one offset, SPEC_NOTES.md);
- the confirms go out once the chunk is written.

"Together" is a matter of timing on the real server; here it is one read (one ``receive``).
Any other frame of the connection (a query, Subscribe, Credit, Delete, Close...) first writes
what is pending, so that it sees everything sent before it. The document leaves all of this
open: "Deliver" carries an Osiris chunk without saying how messages are grouped into chunks,
and "StoreOffset" does not say where the offset is kept; only the numbering a client sees
depends on it.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Iterator

from . import codec
from .chunk import Entry, SimpleEntry
from .constants import Code
from .store import StoreError

log = logging.getLogger("wirecheck.rabbitmq_stream")

#: A chunk's NumEntries is a u16.
MAX_ENTRIES = 0xFFFF
#: Bytes of message bodies one batch holds before it is written.
MAX_BYTES = 8 * 1024 * 1024


@dataclass(slots=True)
class StreamBatch:
    """What is pending for one stream."""
    entries: list = field(default_factory=list)
    size: int = 0
    #: publisher reference -> last publishing id kept (deduplication sees these first)
    sequences: dict = field(default_factory=dict)
    #: consumer reference -> stored offset (the last one wins, as in a tracking delta)
    offsets: dict = field(default_factory=dict)
    #: (publisher id, publishing ids) per Publish frame, in order: confirmed once written
    confirms: list = field(default_factory=list)


def _size(entry: Entry) -> int:
    return len(entry.body) if isinstance(entry, SimpleEntry) else len(entry.body) + 11


class WriteBatch:
    def __init__(self) -> None:
        self.streams: dict[str, StreamBatch] = {}

    def __bool__(self) -> bool:
        return bool(self.streams)

    def sequence(self, stream: str, reference: str) -> int | None:
        """The last publishing id of ``reference`` kept in this batch, if any."""
        pending = self.streams.get(stream)
        return None if pending is None else pending.sequences.get(reference)

    def would_overflow(self, stream: str, entries: list) -> bool:
        pending = self.streams.get(stream)
        return pending is not None and (len(pending.entries) + len(entries) > MAX_ENTRIES
                                        or pending.size + sum(map(_size, entries)) > MAX_BYTES)

    def publish(self, stream: str, publisher_id: int, publishing_ids: tuple, entries: list,
                reference: str = "", last: int | None = None) -> None:
        """One Publish frame: the ``entries`` kept (deduplicated already), the ids to confirm,
        and the reference's last kept id when it has one."""
        pending = self.streams.setdefault(stream, StreamBatch())
        pending.entries += entries
        pending.size += sum(map(_size, entries))
        if reference and entries and last is not None:
            pending.sequences[reference] = last
        pending.confirms.append((publisher_id, publishing_ids))

    def store_offset(self, stream: str, reference: str, offset: int) -> None:
        self.streams.setdefault(stream, StreamBatch()).offsets[reference] = offset

    def take(self) -> dict[str, StreamBatch]:
        out, self.streams = self.streams, {}
        return out

    def write(self, stream_log: Callable, now_ms: int) -> Iterator[tuple[str, bool, list]]:
        """Write what is pending, per stream: one user chunk with the stored offsets in its
        trailer, or one tracking chunk. Yields (stream, whether messages were written, the
        frames to send: its PublishConfirms in the order of the Publish frames, or
        PublishErrors if the write failed). ``stream_log(name)`` gives a stream's log."""
        for name, pending in self.take().items():
            log_ = stream_log(name)
            try:
                if log_ is None:
                    raise StoreError(f"stream {name!r} does not exist")
                if pending.entries:
                    log_.append(pending.entries, now_ms, pending.sequences, pending.offsets)
                elif pending.offsets:
                    log_.store_offsets(pending.offsets, now_ms)
            except (OSError, StoreError) as exc:
                log.error("writing to %s failed: %s", name, exc)
                code = Code.INTERNAL_ERROR if log_ is not None else Code.STREAM_DOES_NOT_EXIST
                yield name, False, [codec.PublishError(pid, tuple((i, code) for i in ids))
                                    for pid, ids in pending.confirms]
                continue
            yield name, bool(pending.entries), [codec.PublishConfirm(pid, ids) for pid, ids in pending.confirms]
