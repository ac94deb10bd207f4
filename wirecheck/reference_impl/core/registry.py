"""The protocol registry: every protocol registers itself once; everything else iterates it.

Slots holding heavy or optional modules (scapy layer, hypothesis strategies, requirement
catalogue, suite) are dotted import paths resolved on first use, so importing the registry
never imports scapy or hypothesis.
"""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

_PROTOCOLS: dict[str, "ProtocolSpec"] = {}

#: Packages that register a protocol when imported (one line per protocol).
_BUILTIN = ("wirecheck.reference_impl.blipmq", "wirecheck.reference_impl.rabbitmq_stream", "wirecheck.reference_impl.signalr",
            "wirecheck.reference_impl.vibemq", "wirecheck.reference_impl.micromessage2")


@dataclass(frozen=True)
class ProtocolSpec:
    id: str                                  # CLI / --protocol name
    title: str
    document: str                            # file name under shared/specs
    requirement_prefix: str                  # e.g. "BLIP-"
    default_port: int
    make_decoder: Callable[..., Any]         # (limits=None, origin=None|'server'|'client', profile=None) -> decoder with feed()
    encode: Callable[[Any], bytes]
    frame_to_dict: Callable[[Any], dict]
    session_class: type
    make_broker: Callable[..., Any]          # (host, port, *, data_dir, api_keys, ...) -> broker
    client_class: type
    scapy_layer: str                         # "module:Class"
    strategies: str                          # module of hypothesis strategies
    requirements: str                        # module with REQUIREMENTS
    suite: str                               # package of the black-box suite
    profiles: dict[str, dict] = field(default_factory=dict)   # built-in profile name -> settings
    default_profile: str = "document"
    extra_ports: tuple[int, ...] = ()        # more well-known ports (e.g. a second transport)
    #: Decoder for one direction of a captured TCP connection (decode --pcap, replay), when it
    #: differs from ``make_decoder`` (SignalR: HTTP + WebSocket around the hub messages).
    #: Same signature as ``make_decoder``; None means ``make_decoder``.
    make_capture_decoder: Callable[..., Any] | None = None
    #: ``"module:function"``: ``function(profile) -> bytes`` a client sends on a fresh
    #: connection that any live server answers with at least one frame (the network fuzzer's
    #: and byte-file replay's liveness check).
    liveness: str = ""
    #: ``"module:Class"``: the protocol's :class:`wirecheck.reference_impl.core.observer.Observer`
    #: (its session rules checking both sides of a recorded conversation); empty: the base
    #: observer, which checks framing only.
    observer: str = ""
    #: Timers (profile ``timing`` keys, seconds) the reference broker gets when the suite
    #: starts it itself (no ``--target``), and which the suite then waits for, in place of the
    #: profile's: the same behaviour checked in seconds instead of minutes (SignalR's
    #: keep-alive and timeouts are server settings, 15-30 s by default). A target the user
    #: names keeps its profile's timing.
    embedded_timing: dict = field(default_factory=dict)
    #: ``"module:function"``: ``function(FrameError) -> str``, the rule a frame the server sent
    #: that does not decode breaks ("" none): a live suite charges that rule, at its level, not
    #: the test's own (conformance/target/connection.py Connection.breach_of). Empty: the suite's conftest
    #: decides (SignalR, Micromessage2: it depends on the connection's state).
    server_frame_rules: str = ""

    def capture_decoder(self, **kwargs):
        return (self.make_capture_decoder or self.make_decoder)(**kwargs)

    def liveness_probe(self, profile: str | None = None) -> bytes:
        return self.load("liveness")(profile)

    def make_observer(self, profile: str | None = None):
        if not self.observer:
            from .observer import Observer
            return Observer(profile)
        return self.load("observer")(profile)

    def load(self, slot: str):
        """Import a lazy slot: ``"pkg.mod"`` -> module, ``"pkg.mod:Name"`` -> attribute."""
        return _load(getattr(self, slot))


@functools.cache
def _load(path: str):
    """Remembered: an observer is made per connection, and import_module takes its import
    lock every time (a capture analysis has thousands of connections)."""
    module, _, attr = path.partition(":")
    mod = importlib.import_module(module)
    return getattr(mod, attr) if attr else mod


def register(spec: ProtocolSpec) -> ProtocolSpec:
    if spec.id in _PROTOCOLS and _PROTOCOLS[spec.id] is not spec:
        raise ValueError(f"protocol {spec.id!r} registered twice")
    _PROTOCOLS[spec.id] = spec
    return spec


_loaded = False


def _load_builtin() -> None:
    global _loaded
    if not _loaded:
        for package in _BUILTIN:
            importlib.import_module(package)
        _loaded = True


def get(protocol_id: str) -> ProtocolSpec:
    _load_builtin()
    try:
        return _PROTOCOLS[protocol_id]
    except KeyError:
        known = ", ".join(sorted(_PROTOCOLS)) or "none"
        raise KeyError(f"unknown protocol {protocol_id!r} (known: {known})") from None


def all_protocols() -> list[ProtocolSpec]:
    _load_builtin()
    return [_PROTOCOLS[k] for k in sorted(_PROTOCOLS)]
