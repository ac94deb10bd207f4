"""The RabbitMQ Stream observer's reading of the server's own commands (observer.py): Tune,
PublishConfirm and PublishError, Credit responses, Deliver (credit, versions, chunk order and
timestamps), MetadataUpdate and ConsumerUpdate. A mixin of :class:`observer.StreamObserver`,
whose state it reads and writes."""
from __future__ import annotations

from typing import Optional

from ..core.observer import C2S, S2C, Exchange
from . import codec
from .constants import Code


class ServerCommands:
    # server commands

    def _s_tune(self, frame, index, time) -> None:
        if not isinstance(frame, codec.Tune):
            return
        if self.fresh and not self.authenticated:
            self.violate("RMQS-HS-004", S2C, index, "Tune before a successful SaslAuthenticate")
        self.server_tune = (frame, index, time)

    def _s_publish_confirm(self, frame, index, time) -> Optional[Exchange]:
        return self._publish_answer(frame.publisher_id, [(p, None) for p in frame.publishing_ids],
                                    index, time)

    def _s_publish_error(self, frame, index, time) -> Optional[Exchange]:
        return self._publish_answer(frame.publisher_id, list(frame.errors), index, time)

    def _publish_answer(self, publisher_id, items, index, time) -> Optional[Exchange]:
        pub = self.pubs.get(publisher_id)
        tables = [t for t in (pub.inflight if pub else None, self.undeclared.get(publisher_id)) if t]
        last = None
        for pid, code in items:
            queue = next((t[pid] for t in tables if t.get(pid)), None)
            if not queue:
                if code is None and self.fresh and C2S not in self.blind:
                    self.violate("RMQS-PUB-007", S2C, index, f"publisher {publisher_id}: publishing "
                                 f"id {pid} confirmed but not awaiting a confirm")
                continue
            publish = queue.popleft()
            if publish.undeclared and code != Code.PUBLISHER_DOES_NOT_EXIST and self.fresh:
                what = "confirmed" if code is None else f"error code {code}"
                self.violate("RMQS-PUB-008", S2C, index, f"publisher {publisher_id} is not declared: "
                             f"publishing id {pid} {what}, not PublishError 18")
                publish.undeclared = False           # one report per Publish
            publish.remaining -= 1
            if publish.remaining == 0:
                last = self.answered(publish.index, index, "Publish", time - publish.time)
        return last

    def _credit_response(self, frame, index, time) -> Optional[Exchange]:
        sid = frame.subscription_id
        queue = self.credits.get(sid)
        if not queue:
            if self.fresh and C2S not in self.blind:
                self.violate("RMQS-FRAME-003", S2C, index, f"CreditResponse for subscription {sid}: "
                             "no Credit awaits it")
            return None
        req = queue.popleft()
        state = self._sub_state(sid)
        if frame.code == Code.OK or (state == "active" and self.fresh):
            # "the server sent a response only in case of problem"
            self.violate("RMQS-CREDIT-003", S2C, index, f"Credit for subscription {sid} answered "
                         f"(code {frame.code}) though it succeeded")
        elif state == "absent" and frame.code != Code.SUBSCRIPTION_ID_DOES_NOT_EXIST and self.fresh:
            self.violate("RMQS-CREDIT-004", S2C, index, f"Credit for unknown subscription {sid}: "
                         f"code {frame.code}, not 4")
        return self.answered(req.index, index, "Credit", time - req.time)

    def _s_deliver(self, frame, index, time) -> None:
        sid = frame.subscription_id
        if frame.version >= 2 and not self.deliver_v2 and self.fresh:
            self.violate("RMQS-DELIVER-001", S2C, index, "Deliver version 2 before the client "
                         "announced it")
        chunk = frame.chunk
        if chunk.chunk_type != 0:
            self.violate("RMQS-DELIVER-002", S2C, index, f"chunk type {chunk.chunk_type}, not user (0)")
        if chunk.trailer and self.notes:
            self.violate("RMQS-DELIVER-006", S2C, index, f"{len(chunk.trailer)} trailer bytes")
        if self.frame_max:
            self._size_check(S2C, frame, index)
        if not self.fresh:
            return
        sub = self.subs.get(sid)
        if sub is None:
            if self.sub_ops[sid] == 0 and C2S not in self.blind:
                rule = "RMQS-UNSUB-001" if sid in self.gone_subs else "RMQS-CREDIT-001"
                self.violate(rule, S2C, index, f"Deliver for subscription {sid}, which does not exist")
            return
        if sub.credit <= 0 and C2S not in self.blind:
            # Credit counts chunks ("Credit => uint16 // the number of chunks that can be
            # sent"); every Credit seen so far is an upper bound of the server's.
            rule = "RMQS-CREDIT-002" if sub.credited else "RMQS-CREDIT-001"
            self.violate(rule, S2C, index, f"Deliver for subscription {sid} without credit")
        sub.credit = max(sub.credit - 1, 0)
        if chunk.first_offset < sub.next_offset:
            self.violate("RMQS-DELIVER-005", S2C, index, f"chunk at offset {chunk.first_offset} after "
                         f"one that ended at {sub.next_offset}")
        if chunk.timestamp < sub.timestamp and self.notes:
            self.violate("RMQS-DELIVER-008", S2C, index, f"chunk timestamp {chunk.timestamp} before "
                         f"{sub.timestamp}")
        sub.next_offset = max(sub.next_offset, chunk.first_offset + chunk.num_records)
        sub.timestamp = max(sub.timestamp, chunk.timestamp)

    def _s_metadata_update(self, frame, index, time) -> None:
        if self.fresh and self.notes and frame.stream not in self.used_streams:
            self.violate("RMQS-META-008", S2C, index, f"MetadataUpdate for {frame.stream!r}, which "
                         "this connection neither publishes to nor consumes from")
        # The stream's subscriptions and publishers are gone (RMQS-META-007, a SHOULD): what
        # the server now holds of them is not known for sure.
        for sub in self.subs.values():
            if sub.stream == frame.stream:
                sub.state = "unknown"
        for pub in self.pubs.values():
            if pub.stream == frame.stream:
                pub.state = "unknown"

    def _s_consumer_update(self, frame, index, time) -> None:
        sub = self.subs.get(frame.subscription_id)
        if sub is not None:         # delivery restarts from the client's answer
            sub.next_offset, sub.timestamp = -1, -1
