"""VibeMQ (vibemq-protocol.rst, with the real implementation's differences from SPEC_NOTES.md):
u32 length + compression flags byte, binary messages with a JSON payload; queues with
delivery modes, acks, redelivery, dead letters. Profiles: ``document`` (default),
``vibemq-1.8`` (the real server) and ``vibemq-1.0`` (protocol 1.0 framing, no flags byte)."""
from ..core import registry
from . import codec
from .broker import make_broker as _make_broker
from .client import VibeClient
from .constants import DEFAULT_PORT
from .session import VibeSession

#: What the embedded reference broker runs with and the suite waits for (a real server's own
#: values go in a profile file: ack timeout 30 s, retries from 2 s).
_TIMING = {"ack_timeout": 0.4, "retry_base_delay": 0.2, "retry_max_delay": 1.0,
           "max_messages_per_second": 100}
_LIMITS = {"max_frame_size": 1_048_576, "max_decompressed": 64 * 1024 * 1024}


def make_broker(host: str = "127.0.0.1", port: int = 0, **options):
    """Registry factory: the broker speaks ``profile`` with that profile's timing unless told
    otherwise (so the embedded suite's redelivery tests take a fraction of a second)."""
    name = options.get("profile") or "document"
    timing = SPEC.profiles.get(name, {}).get("timing", _TIMING)
    for key in _TIMING:
        options.setdefault(key, timing.get(key, _TIMING[key]))
    return _make_broker(host, port, **options)


_DOCUMENT_FEATURES = {"connect_ack_document_headers": True, "publish_ack_headers": True,
                      "deliver_headers": True, "queue_exists_error": True,
                      "queue_not_found_errors": True, "implicit_queues": True,
                      "queue_info_names": True, "compression": True}

SPEC = registry.register(registry.ProtocolSpec(
    id="vibemq",
    title="VibeMQ",
    document="vibemq-protocol.rst",
    requirement_prefix="VIBE-",
    default_port=DEFAULT_PORT,
    make_decoder=codec.make_decoder,
    encode=codec.encode,
    frame_to_dict=codec.frame_to_dict,
    session_class=VibeSession,
    make_broker=make_broker,
    client_class=VibeClient,
    scapy_layer="wirecheck.reference_impl.vibemq.scapy_layer:VibeMQ",
    strategies="wirecheck.conformance.strategies.vibemq",
    requirements="wirecheck.conformance.requirements.vibemq",
    suite="wirecheck.conformance.suites.vibemq",
    profiles={
        "document": {"credentials": {"password": "vibemq"}, "timing": dict(_TIMING),
                     "limits": dict(_LIMITS), "features": dict(_DOCUMENT_FEATURES)},
        # The real server (SPEC_NOTES.md): error fields only in Error; ConnectAck with a new id
        # and only negotiated-compression; PublishAck and Deliver without the document's
        # headers; CreateQueue/DeleteQueue/QueueInfo answered without QUEUE_EXISTS /
        # QUEUE_NOT_FOUND; QueueInfo's enums as numbers.
        "vibemq-1.8": {"extends": "document",
                       "features": {"connect_ack_document_headers": False, "publish_ack_headers": False,
                                    "deliver_headers": False, "queue_exists_error": False,
                                    "queue_not_found_errors": False, "queue_info_names": False}},
        # Protocol 1.0: no compression flags byte, so no compression.
        "vibemq-1.0": {"extends": "vibemq-1.8", "features": {"compression": False}},
    },
    default_profile="document",
    liveness="wirecheck.reference_impl.vibemq.probe:liveness_probe",
    observer="wirecheck.reference_impl.vibemq.observer:VibeObserver",
    server_frame_rules="wirecheck.reference_impl.vibemq.observer:server_frame_requirement",
))
