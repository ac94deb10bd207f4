"""What ``wirecheck replay`` may ignore, mask and rewrite, per protocol (applied per connection
by conformance/captures/replay_flow.py).

- ``IGNORED``: frame types a server sends on a timer (heartbeats, pings). Where they fall in
  a conversation depends on the clock, not on the client, so they are dropped from both sides
  before comparison.
- ``MASKED``: fields whose values two correct servers may choose differently (connection ids,
  timestamps, server name and version, chunk timestamps, ...), per frame type (``"*"``: every
  type). A path is dotted; ``*`` stands for every item of a list or every key of a dict. The
  value is replaced by ``"<masked>"`` on both sides: it must be present in both, but may differ.
- ``make_rewriter()``: client fields that cannot be sent again as recorded (credentials,
  names that must be new), rewritten in decoded frames; ``unmap`` undoes the renaming in the
  target's answers before they are compared.
- ``async_key()``: frames a server sends on its own (a delivery, a confirm) rather than as the
  answer to the request before them: compared in order among those of one key, wherever they
  come among the other frames.
- ``skipped()``, ``align()``: values a server numbers itself (RabbitMQ Stream offsets): the
  target's numbering is compared with the recording's for consistency, not for equality, and
  what a server may send beyond what was asked (the rest of a chunk) is left out.

Each rule says which document section lets the value vary.
"""
from __future__ import annotations

import bisect
import dataclasses
import hashlib
import json
import math
import time
from typing import Any

_MASKED = "<masked>"


def _mask_path(value: Any, parts: list[str]) -> Any:
    if not parts:
        return _MASKED
    head, rest = parts[0], parts[1:]
    if isinstance(value, dict):
        if head == "*":
            return {k: _mask_path(v, rest) for k, v in value.items()}
        if head in value:
            return {**value, head: _mask_path(value[head], rest)}
        return value
    if isinstance(value, list) and head == "*":
        return [_mask_path(v, rest) for v in value]
    return value


class Rules:
    IGNORED: frozenset[str] = frozenset()
    MASKED: dict[str, tuple[str, ...]] = {}
    #: lists whose order carries no meaning, per frame type: compared sorted
    UNORDERED: dict[str, tuple[str, ...]] = {}

    def __init__(self, options) -> None:
        self.options = options
        self._paths = {t: [p.split(".") for p in paths] for t, paths in self.MASKED.items()}
        #: one suffix for every renamed resource of this replay (connections share resources)
        self.suffix = unique_suffix(options, time.time())

    def ignored(self, frame: dict) -> bool:
        return frame.get("type") in self.IGNORED

    def expand(self, frame: dict) -> list[dict]:
        """The items a frame is compared as (most frames: itself). A protocol whose servers
        may group the same content into frames differently compares the content items."""
        return [frame]

    def mask(self, frame: dict) -> dict:
        for key in self.UNORDERED.get(frame.get("type"), ()):
            if isinstance(frame.get(key), list):
                frame = {**frame, key: sorted(frame[key], key=str)}
        for paths in (self._paths.get("*", ()), self._paths.get(frame.get("type"), ())):
            for parts in paths:
                frame = _mask_path(frame, parts)
        return frame

    def make_rewriter(self):
        return None

    def learn(self, expected: dict, actual: dict, rewriter=None) -> None:
        """A recorded frame and the target's, matched: values a client may echo later."""

    def client_sent(self, recorded: float, now: float) -> None:
        """Client bytes recorded at ``recorded`` (capture clock) go to the target at ``now``
        (wall clock): where the two timelines meet."""

    def async_key(self, frame: dict):
        """A key for a frame the server sends on its own (not the answer to the request
        before it), None for the others. Such frames are compared in order among those of
        their key, wherever they come among the other frames of the connection."""
        return None

    #: Frames of an asynchronous key (:meth:`async_key`) the target may send beyond the
    #: recording's when the recording never ended that key (:meth:`ends_async`): a stream the
    #: client cancelled or left, whose items in flight at that moment may still come. 0: none.
    TRAILING_ASYNC = 0

    def ends_async(self, frame: dict):
        """The asynchronous key a recorded server frame ends (no more frames of that key may
        follow it: a stream's Completion), or None."""
        return None

    def skipped(self, frame: dict, live: bool, rewriter) -> bool:
        """Whether ``frame`` (the target's if ``live``, else the recording's) is left out of
        the comparison: content a server may add beyond what the client asked for."""
        return False

    def align(self, expected: dict, actual: dict, rewriter) -> dict:
        """The target's frame with values the server numbers itself expressed in the
        recording's numbering, where the two numberings agree so far."""
        return actual

    def target_frame(self, frame: dict, rewriter) -> None:
        """Every frame the target sent, before comparison (flow control bookkeeping)."""

    def unblock(self, key, rewriter):
        """A client frame to send the target when the replay awaits a frame of async ``key``
        that the target cannot send yet by no fault of its own (flow control counted in
        units the server chooses), else None."""
        return None

    def timer_key(self, frame: dict):
        """What a server frame delivers, for a frame a server timer may send again (a
        redelivery); None for the others. On one connection, the second and later frames of a
        key are the timer's: the replay pairs them by key wherever they come, then compares
        them, since when a timer fires against the client's requests depends on the replay's
        pace."""
        return None


class NameRewriter:
    """Renames resources (streams, topics, queues) to names no earlier replay used: each name
    gets a suffix made from the replay's seed and start; answers get it stripped."""

    #: dataclass fields holding one name, or a tuple/list of names
    FIELDS: tuple[str, ...] = ()

    def __init__(self, suffix: str, credentials: tuple[str, str] | None) -> None:
        self.suffix = suffix
        self.credentials = credentials
        #: replay wall clock - capture clock, set before each rewrite (timestamps the client
        #: took from the recorded server mean the same moment shifted by this)
        self.clock_shift = 0.0

    def _rename(self, value):
        if isinstance(value, str) and value:
            return value + self.suffix
        if isinstance(value, (tuple, list)):
            return type(value)(self._rename(v) for v in value)
        return value

    def rewrite(self, frame):
        """A new frame, or None when nothing in ``frame`` is rewritten."""
        if not dataclasses.is_dataclass(frame):
            return None
        changes = {f.name: self._rename(getattr(frame, f.name)) for f in dataclasses.fields(frame)
                   if f.name in self.FIELDS and getattr(frame, f.name)}
        return dataclasses.replace(frame, **changes) if changes else None

    def unmap(self, value):
        if isinstance(value, str):
            return value.replace(self.suffix, "") if self.suffix in value else value
        if isinstance(value, dict):
            return {self.unmap(k): self.unmap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.unmap(v) for v in value]
        return value


def unique_suffix(options, start: float) -> str:
    """A short suffix for renamed resources, different for every replay run."""
    digest = hashlib.sha1(f"{options.seed}:{start}".encode()).hexdigest()[:8]
    return f"-r{digest}"


# -- per protocol ------------------------------------------------------------------------------

class BlipRules(Rules):
    def timer_key(self, frame: dict):
        # blipmq-protocol.md "POLL": a QoS1 delivery's correlation_id is its delivery tag; an
        # unacked one is delivered again with the same tag after a timeout (docs/protocols/blipmq.md,
        # "How the kit reads the document"), answering whichever POLL comes after it.
        if frame.get("type") == "PUBLISH" and frame.get("qos") == 1:
            return frame.get("topic"), frame.get("correlation_id")
        return None


class VibeRules(Rules):
    MASKED = {
        # vibemq-protocol.rst "QueueInfo": createdAt is the wall-clock time the queue was made.
        "queueInfo": ("payload.createdAt",),
        # "ConnectAck": the server names the connection and itself.
        "connectAck": ("headers.connectionId", "headers.serverVersion"),
    }

    def timer_key(self, frame: dict):
        # vibemq-protocol.rst "Deliver": a message not acknowledged in time is delivered again
        # (same id, ``deliveryAttempts`` counting), pushed when the server's timer fires.
        if frame.get("type") == "deliver":
            return frame.get("queue"), frame.get("id")
        return None


class MM2Rules(Rules):
    pass


class OffsetNumbering:
    """How the recording's offsets of one stream map to the target's, as learned from the
    messages both delivered: runs of recorded offsets with one difference (target - recorded)
    each. A server spends offsets as it chooses (a StoreOffset, a batch of them, or none when
    they share a chunk with messages: rabbitmq-stream-protocol.adoc "StoreOffset" does not
    say), so two correct servers may number the same messages differently; what must hold is
    one order and one mapping."""

    #: Runs kept per stream; beyond it the oldest is dropped (the mapping gets looser there).
    MAX_RUNS = 10_000

    def __init__(self) -> None:
        self.starts: list[int] = []      # first recorded offset of each run (sorted)
        self.ends: list[int] = []        # last recorded offset seen in it
        self.deltas: list[int] = []

    def _run(self, recorded: int) -> int:
        """Index of the last run starting at or before ``recorded`` (-1: none)."""
        return bisect.bisect_right(self.starts, recorded) - 1

    def consistent(self, recorded: int, target: int) -> bool:
        """Whether the pair keeps one order and one mapping with the pairs learned so far."""
        i = self._run(recorded)
        if i >= 0 and recorded <= self.ends[i]:
            return target == recorded + self.deltas[i]
        if i >= 0 and target <= self.ends[i] + self.deltas[i]:
            return False
        return i + 1 >= len(self.starts) or target < self.starts[i + 1] + self.deltas[i + 1]

    def add(self, recorded: int, target: int) -> None:
        if not self.consistent(recorded, target):
            return
        i = self._run(recorded)
        if i >= 0 and recorded <= self.ends[i]:
            return
        if i >= 0 and target - recorded == self.deltas[i]:
            self.ends[i] = recorded
            return
        self.starts.insert(i + 1, recorded)
        self.ends.insert(i + 1, recorded)
        self.deltas.insert(i + 1, target - recorded)
        if len(self.starts) > self.MAX_RUNS:
            del self.starts[0], self.ends[0], self.deltas[0]

    def to_target(self, recorded: int) -> int:
        """The target's offset for a recorded one: by the run at or before it, else as is."""
        i = self._run(recorded)
        return recorded + self.deltas[i] if i >= 0 else recorded


class RMQSRewriter(NameRewriter):
    # rabbitmq-stream-protocol.adoc: the fields that name a stream or a super stream.
    FIELDS = ("stream", "streams", "name", "partitions", "super_stream")
    #: Unanswered QueryOffset requests remembered per connection.
    MAX_QUERIES = 10_000

    def __init__(self, suffix: str, credentials, rules: "RMQSRules") -> None:
        super().__init__(suffix, credentials)
        self.rules = rules
        #: subscription id -> (stream, recorded offset, target offset); offsets for type 4 only
        self.subscriptions: dict[int, tuple] = {}
        #: QueryOffset correlation id -> (stream, reference)
        self.queries: dict[int, tuple[str, str]] = {}
        #: subscription id -> credit the target has left, as far as the replay knows
        self.credit: dict[int, int] = {}

    def rewrite(self, frame):
        new = super().rewrite(frame) if self.suffix else None
        kind = type(frame).__name__
        if self.credentials and kind == "SaslAuthenticate" and frame.mechanism == "PLAIN":
            user, password = self.credentials
            new = dataclasses.replace(new or frame, data=b"\0" + user.encode() + b"\0" + password.encode())
        if kind == "Subscribe":
            recorded = target = None
            if frame.offset_type == 5 and frame.offset is not None:
                # "Subscribe": offset type 5 is a timestamp (ms), which a client takes from the
                # chunks it was delivered or from its clock: the same moment relative to the
                # target's chunks
                new = dataclasses.replace(new or frame, offset=self.rules.translate_timestamp(
                    frame.offset, self.clock_shift, frame.stream))
            elif frame.offset_type == 4 and frame.offset is not None:
                recorded, target = frame.offset, self.rules.numbering(frame.stream).to_target(frame.offset)
                if target != recorded:
                    new = dataclasses.replace(new or frame, offset=target)
            self.subscriptions[frame.subscription_id] = (frame.stream, recorded, target)
            self.credit[frame.subscription_id] = frame.credit
        elif kind == "Credit":
            if frame.subscription_id in self.credit:
                self.credit[frame.subscription_id] += frame.credit
        elif kind == "Unsubscribe":
            self.credit.pop(frame.subscription_id, None)
        elif kind == "StoreOffset":
            # the offset a client stores is one the recorded server numbered: the target's
            target = self.rules.numbering(frame.stream).to_target(frame.offset)
            self.rules.stored[(frame.stream, frame.reference)] = (frame.offset, target)
            if target != frame.offset:
                new = dataclasses.replace(new or frame, offset=target)
        elif kind == "QueryOffset":
            if len(self.queries) >= self.MAX_QUERIES:
                self.queries.pop(next(iter(self.queries)))
            self.queries[frame.correlation_id] = (frame.stream, frame.reference)
        elif kind == "Delete":
            self.rules.forget(frame.stream)
        return new


class RMQSRules(Rules):
    # Heartbeats go on the server's timer ("Heartbeat").
    IGNORED = frozenset({"Heartbeat"})
    MASKED = {
        # "PeerProperties": the server describes itself (product, version, cluster...).
        "PeerPropertiesResponse": ("properties",),
        # "Open": where the server tells clients to connect; deployment, not protocol.
        "OpenResponse": ("properties.advertised_host", "properties.advertised_port"),
        "MetadataResponse": ("brokers.*.host", "brokers.*.port"),
        # Osiris chunk header: the chunk's creation time (wall clock, milliseconds).
        "Deliver (message)": ("timestamp",),
    }
    UNORDERED = {
        # "SaslHandshake": a list of mechanisms (RabbitMQ sends AMQPLAIN first).
        "SaslHandshakeResponse": ("mechanisms",),
        # "Metadata": [Broker] [StreamMetadata], in no order the document gives (RabbitMQ
        # 3.10 answers the streams in reverse name order, whatever order they were asked in).
        "MetadataResponse": ("brokers", "streams"),
    }
    #: Time anchors kept per kind; beyond it every other one is dropped.
    MAX_ANCHORS = 100_000

    def __init__(self, options) -> None:
        super().__init__(options)
        #: (recorded ms, target ms), sorted: per stream, the chunk times both servers gave the
        #: same messages; and when the client's bytes were captured against when the replay
        #: sent them (loopback captures: the capture's clock is the server's and the client's)
        self._chunk_times: dict[str, list[tuple[int, int]]] = {}
        self._client_times: list[tuple[int, int]] = []
        #: recorded stream name -> the target's numbering of its offsets
        self.offsets: dict[str, OffsetNumbering] = {}
        #: (stream, reference) -> (recorded offset, offset sent to the target) of the last StoreOffset
        self.stored: dict[tuple[str, str], tuple[int, int]] = {}

    def forget(self, stream: str) -> None:
        """A stream deleted: one of that name created later starts again (offsets from 0,
        chunk times of its own)."""
        self.offsets.pop(stream, None)
        self._chunk_times.pop(stream, None)

    def numbering(self, stream: str) -> OffsetNumbering:
        numbering = self.offsets.get(stream)
        if numbering is None:
            numbering = self.offsets[stream] = OffsetNumbering()
        return numbering

    def expand(self, frame: dict) -> list[dict]:
        """A Deliver as its messages: how a server groups published messages into chunks
        ("Deliver": one chunk, any number of entries) is its own choice, as are the chunk's
        CRC, sizes and committed chunk id. Compared: subscription, offset, body, chunk type."""
        if frame.get("type") == "PublishConfirm" and isinstance(frame.get("publishing_ids"), list):
            # "PublishConfirm": how many ids one confirm carries is the server's choice
            return [{"type": "PublishConfirm (id)", "publisher_id": frame.get("publisher_id"),
                     "publishing_id": pid} for pid in frame["publishing_ids"]]
        if frame.get("type") == "PublishError" and isinstance(frame.get("errors"), list):
            return [{"type": "PublishError (id)", "publisher_id": frame.get("publisher_id"),
                     "error": error} for error in frame["errors"]]
        if frame.get("type") != "Deliver" or not isinstance(frame.get("chunk"), dict):
            return [frame]
        chunk = frame["chunk"]
        first = chunk.get("first_offset", 0)
        return [{"type": "Deliver (message)", "subscription_id": frame.get("subscription_id"),
                 "offset": first + i, "message": message, "chunk_type": chunk.get("chunk_type"),
                 "timestamp": chunk.get("timestamp")}
                for i, message in enumerate(chunk.get("messages") or [])]

    def async_key(self, frame: dict):
        # "Frame Structure": Deliver, PublishConfirm, PublishError and MetadataUpdate are
        # one-direction commands, not answers; the server sends them when a chunk is written
        # or a stream changes, so where they fall among the answers to later requests is its
        # timing (RabbitMQ sends a Deliver before the SubscribeResponse of a later
        # subscription, or after it). In order per subscription, publisher or stream.
        kind = frame.get("type")
        if kind == "Deliver (message)":
            return kind, frame.get("subscription_id")
        if kind in ("PublishConfirm (id)", "PublishError (id)"):
            return kind, frame.get("publisher_id")
        if kind == "MetadataUpdate":
            return kind, frame.get("stream")
        return None

    def skipped(self, frame: dict, live: bool, rewriter) -> bool:
        # "Subscribe" from an offset: "Deliver" carries whole chunks, and where a chunk begins
        # is the server's choice, so the messages before the requested offset that come with
        # the first chunk are not compared (clients skip them).
        if frame.get("type") != "Deliver (message)" or rewriter is None:
            return False
        _, recorded, target = rewriter.subscriptions.get(frame.get("subscription_id"), (None, None, None))
        start = target if live else recorded
        offset = frame.get("offset")
        return start is not None and isinstance(offset, int) and offset < start

    def align(self, expected: dict, actual: dict, rewriter) -> dict:
        kind = actual.get("type")
        if kind != expected.get("type") or rewriter is None:
            return actual
        if kind == "Deliver (message)" and expected.get("subscription_id") == actual.get("subscription_id"):
            stream = rewriter.subscriptions.get(actual.get("subscription_id"), (None,))[0]
            rec, got = expected.get("offset"), actual.get("offset")
            if stream is not None and isinstance(rec, int) and isinstance(got, int) \
                    and self.numbering(stream).consistent(rec, got):
                return {**actual, "offset": rec}
        elif kind == "QueryOffsetResponse":
            # the target answers the offset the replay stored, in its numbering
            query = rewriter.queries.pop(actual.get("correlation_id"), None)
            if query is not None and self.stored.get(query) == (expected.get("offset"), actual.get("offset")):
                return {**actual, "offset": expected.get("offset")}
        return actual

    def target_frame(self, frame: dict, rewriter) -> None:
        if frame.get("type") == "Deliver" and rewriter is not None:
            sid = frame.get("subscription_id")
            if sid in rewriter.credit:
                rewriter.credit[sid] -= 1

    def unblock(self, key, rewriter):
        # "Credit": the number of chunks the server may send, and how messages are grouped
        # into chunks is the server's ("Deliver"). A target that cut the recorded messages
        # into more chunks than the recorded server used up the recorded client's credit
        # before the messages the recording has: one more credit for what is awaited.
        if rewriter is None or key[0] != "Deliver (message)" or rewriter.credit.get(key[1], 1) > 0:
            return None
        from wirecheck.reference_impl.rabbitmq_stream.codec import Credit
        rewriter.credit[key[1]] += 1
        return Credit(key[1], 1)

    def make_rewriter(self):
        return RMQSRewriter(self.suffix if self.options.unique_names else "", self.options.credentials, self)

    def learn(self, expected: dict, actual: dict, rewriter=None) -> None:
        if expected.get("type") == actual.get("type") == "Deliver (message)":
            stream = None if rewriter is None else rewriter.subscriptions.get(
                actual.get("subscription_id"), (None,))[0]
            if stream is None:
                return
            rec, got = expected.get("timestamp"), actual.get("timestamp")
            if isinstance(rec, int) and isinstance(got, int):
                self._anchor(self._chunk_times.setdefault(stream, []), rec, got)
            rec, got = expected.get("offset"), actual.get("offset")
            if isinstance(rec, int) and isinstance(got, int):
                self.numbering(stream).add(rec, got)

    def client_sent(self, recorded: float, now: float) -> None:
        # whole milliseconds rounded down, as a server stamps a chunk and a client reads its
        # clock: a chunk written after this send then has a time at or after ``now``'s
        self._anchor(self._client_times, math.floor(recorded * 1000 + 1e-6), math.floor(now * 1000 + 1e-6))

    def _anchor(self, anchors: list, recorded: int, target: int) -> None:
        """Add a pair; the latest pair of one recorded time replaces the one before."""
        i = bisect.bisect_left(anchors, (recorded,))
        if i < len(anchors) and anchors[i][0] == recorded:
            anchors[i] = (recorded, target)
            return
        anchors.insert(i, (recorded, target))
        if len(anchors) > self.MAX_ANCHORS:
            del anchors[::2]

    @staticmethod
    def _nearest(anchors: list, stamp: int):
        i = bisect.bisect_left(anchors, (stamp,))
        return min(anchors[max(i - 1, 0):i + 1], key=lambda a: abs(a[0] - stamp), default=None)

    def translate_timestamp(self, stamp: int, clock_shift: float, stream: str | None = None) -> int:
        """The target's time for a recorded time ("Subscribe", offset type 5: the first chunk
        at or after it). A chunk time of ``stream`` both servers gave the same messages maps
        exactly (the client took it from a delivery). Any other time is placed by the moment
        the client sent something nearest to it (else by the nearest such chunk, else by the
        clocks' difference at the Subscribe), then kept between the target's times of the
        known chunks around it: after the one before, at most the one after. The nearest
        moment keeps the replay's own pace out of it: a replay running behind or ahead of the
        recording between a publish and a subscription from a time taken before it would
        otherwise move that time past chunks it meant, or before chunks it did not. The time
        then stays between the replay's moments of the client's sends around it: a replay
        running faster than the recording (unpaced) sends a publish taken 50 ms after the time
        perhaps 1 ms after the send before it, and the time must stay before that publish's
        chunk."""
        chunks = self._chunk_times.get(stream, [])
        i = bisect.bisect_left(chunks, (stamp,))
        if i < len(chunks) and chunks[i][0] == stamp:
            return chunks[i][1]
        before, after = (chunks[i - 1] if i else None), (chunks[i] if i < len(chunks) else None)
        sent = self._client_times
        anchor = self._nearest(sent, stamp) or min(
            (a for a in (before, after) if a is not None), key=lambda a: abs(a[0] - stamp), default=None)
        guess = stamp + round(clock_shift * 1000) if anchor is None else anchor[1] + (stamp - anchor[0])
        j = bisect.bisect_right(sent, (stamp, math.inf))
        if j:
            guess = max(guess, sent[j - 1][1])          # sent at or before the time: not before it
        if j < len(sent):
            guess = min(guess, sent[j][1])              # sent after the time: not after it
        if before is not None:
            guess = max(guess, before[1] + 1)
        if after is not None:
            guess = min(guess, after[1])
        return guess


class TokenRewriter:
    """Client bytes with the recorded server-chosen tokens replaced by the target's (SignalR's
    ``?id=<connectionToken>``): a byte-level rewrite, as the HTTP request is not re-encoded."""

    def __init__(self, rules: "SignalRRules") -> None:
        self.rules = rules
        self.clock_shift = 0.0

    def rewrite_bytes(self, data: bytes) -> bytes:
        for recorded, actual in self.rules.tokens.items():
            if recorded in data:
                data = data.replace(recorded, actual)
        return data

    def unmap(self, value):
        return value


class SignalRRules(Rules):
    # Pings go on the keep-alive timer (SPEC_NOTES.md "SignalR": KeepAliveInterval).
    IGNORED = frozenset({"Ping", "WebSocketPing", "WebSocketPong"})
    #: HTTP header fields of the server's own (RFC 9110 "Date", "Server").
    VOLATILE_HEADERS = frozenset({"date", "server"})
    # Negotiate: the server picks the connection's id and token.
    MASKED = {"HttpResponse": ("body.connectionId", "body.connectionToken")}

    #: "CancelInvocation": the server stops the stream, but items it had produced before the
    #: cancel arrived may still be on the wire (the suite allows as many, SIGR-STR-004).
    TRAILING_ASYNC = 3

    def __init__(self, options) -> None:
        super().__init__(options)
        self.tokens: dict[bytes, bytes] = {}      # recorded negotiate token/id -> the target's

    def async_key(self, frame: dict):
        # "Streaming": a server stream's items come as the hub method produces them, on its
        # own clock: two streams interleave differently from run to run, and an item may
        # come before or after the answer to a later, unrelated invocation. In order per stream.
        if frame.get("type") == "StreamItem":
            return "StreamItem", frame.get("invocation_id")
        return None

    def ends_async(self, frame: dict):
        if frame.get("type") == "Completion":
            return "StreamItem", frame.get("invocation_id")
        return None

    def expand(self, frame: dict) -> list[dict]:
        """HTTP messages compared as a status, the header fields that are not the server's
        own (names lower-cased, order free) and the body (JSON parsed)."""
        if frame.get("type") not in ("HttpResponse", "HttpRequest"):
            return [frame]
        headers = sorted([k.lower(), v] for k, v in frame.get("headers", [])
                         if k.lower() not in self.VOLATILE_HEADERS | {"content-length"})
        body = frame.get("body")
        if isinstance(body, str) and body[:1] in ("{", "["):
            try:
                body = json.loads(body)
            except ValueError:
                pass
        return [{**frame, "headers": headers, "body": body}]

    def learn(self, expected: dict, actual: dict, rewriter=None) -> None:
        if expected.get("type") == actual.get("type") == "HttpResponse":
            rec, got = expected.get("body"), actual.get("body")
            if isinstance(rec, dict) and isinstance(got, dict):
                for key in ("connectionToken", "connectionId"):
                    if isinstance(rec.get(key), str) and isinstance(got.get(key), str) and rec[key]:
                        self.tokens[rec[key].encode()] = got[key].encode()

    def make_rewriter(self):
        return TokenRewriter(self)


_RULES = {"blipmq": BlipRules, "vibemq": VibeRules, "micromessage2": MM2Rules,
          "rabbitmq-stream": RMQSRules, "signalr": SignalRRules}


def rules_for(protocol_id: str) -> type[Rules]:
    return _RULES.get(protocol_id, Rules)
