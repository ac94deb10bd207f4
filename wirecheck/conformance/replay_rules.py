"""What ``wirecheck replay`` may ignore, mask and rewrite, per protocol (applied per connection
by conformance/replay_flow.py).

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

Each rule says which document section lets the value vary.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
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

    def learn(self, expected: dict, actual: dict) -> None:
        """A recorded frame and the target's, matched: values a client may echo later."""

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
        # unacked one is delivered again with the same tag after a timeout (README "How the kit
        # reads the BlipMQ document"), answering whichever POLL comes after it.
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


class RMQSRewriter(NameRewriter):
    # rabbitmq-stream-protocol.adoc: the fields that name a stream or a super stream.
    FIELDS = ("stream", "streams", "name", "partitions", "super_stream")

    def rewrite(self, frame):
        new = super().rewrite(frame) if self.suffix else None
        if self.credentials and type(frame).__name__ == "SaslAuthenticate" and frame.mechanism == "PLAIN":
            user, password = self.credentials
            new = dataclasses.replace(new or frame, data=b"\0" + user.encode() + b"\0" + password.encode())
        if type(frame).__name__ == "Subscribe" and frame.offset_type == 5 and frame.offset is not None:
            # "Subscribe": offset type 5 is a timestamp (ms), which a client takes from the
            # chunks it was delivered: the same moment relative to the target's chunks
            new = dataclasses.replace(new or frame, offset=self.rules.translate_timestamp(
                frame.offset, self.clock_shift))
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
    # "SaslHandshake": a list of mechanisms (RabbitMQ sends AMQPLAIN first).
    UNORDERED = {"SaslHandshakeResponse": ("mechanisms",)}

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

    def __init__(self, options) -> None:
        super().__init__(options)
        self._stamps: dict[int, int] = {}       # recorded chunk timestamp -> the target's

    def make_rewriter(self):
        rewriter = RMQSRewriter(self.suffix if self.options.unique_names else "", self.options.credentials)
        rewriter.rules = self
        return rewriter

    def learn(self, expected: dict, actual: dict) -> None:
        if expected.get("type") == actual.get("type") == "Deliver (message)":
            rec, got = expected.get("timestamp"), actual.get("timestamp")
            if isinstance(rec, int) and isinstance(got, int):
                self._stamps[rec] = got

    def translate_timestamp(self, stamp: int, clock_shift: float) -> int:
        """The target's time for a recorded chunk time, relative to the nearest chunk both
        delivered; without one, shifted by the clocks' difference."""
        if not self._stamps:
            return stamp + round(clock_shift * 1000)
        nearest = min(self._stamps, key=lambda r: abs(r - stamp))
        return self._stamps[nearest] + (stamp - nearest)


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

    def __init__(self, options) -> None:
        super().__init__(options)
        self.tokens: dict[bytes, bytes] = {}      # recorded negotiate token/id -> the target's

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

    def learn(self, expected: dict, actual: dict) -> None:
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
