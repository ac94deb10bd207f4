"""RabbitMQ Stream (rabbitmq-stream-protocol.adoc, with the real server's differences from
SPEC_NOTES.md): u32 size, u16 key, u16 version; PLAIN auth, Tune, Open; streams stored as
Osiris chunks in segment files; publish with confirms and deduplication; credit-based
consumption; super streams."""
from ..core import registry
from . import codec
from .broker import make_broker
from .client import StreamClient
from .constants import DEFAULT_FRAME_MAX, DEFAULT_PORT
from .session import StreamSession

SPEC = registry.register(registry.ProtocolSpec(
    id="rabbitmq-stream",
    title="RabbitMQ Stream",
    document="rabbitmq-stream-protocol.adoc",
    requirement_prefix="RMQS-",
    default_port=DEFAULT_PORT,
    make_decoder=lambda limits=None, origin=None, profile=None: codec.Decoder(limits, origin=origin),
    encode=codec.encode,
    frame_to_dict=codec.frame_to_dict,
    session_class=StreamSession,
    make_broker=make_broker,
    client_class=StreamClient,
    scapy_layer="wirecheck.reference_impl.rabbitmq_stream.scapy_layer:RabbitMQStream",
    strategies="wirecheck.conformance.strategies.rabbitmq_stream",
    requirements="wirecheck.conformance.requirements.rabbitmq_stream",
    suite="wirecheck.conformance.suites.rabbitmq_stream",
    profiles={
        # Today's server: keys 1-30, Publish/Deliver v2 after ExchangeCommandVersions.
        "current": {"credentials": {"user": "guest", "password": "guest", "vhost": "/"},
                    "limits": {"max_frame_size": DEFAULT_FRAME_MAX},
                    # ``durable``: streams are kept on disk (the crash-recovery tests, run only
                    # when the kit runs the target; false: it keeps them in memory)
                    "features": {"keys_26_30": True, "frame_max_enforced": True,
                                 "route_response_bit": True, "durable": True}},
        # RabbitMQ 3.10 (Debian bookworm): keys 1-25 only; what it lacks is UNIMPLEMENTED.
        # Observed on 3.10.8: it never checks an incoming frame against the tuned frame_max
        # (SPEC_NOTES.md; a 16 MiB Publish after agreeing 1 MiB is confirmed), and it answers
        # Route and Partitions with the request key (0x0018/0x0019, bit 15 clear).
        "rabbitmq-3.10": {"extends": "current",
                          "features": {"keys_26_30": False, "frame_max_enforced": False,
                                       "route_response_bit": False},
                          # A defect, not a reading: before Open, 3.10.8 drops a connection
                          # whose frames come split into writes of 1 or 3 bytes, or several
                          # in one write (after Open both are fine).
                          "waivers": {"RMQS-FRAME-014": "RabbitMQ 3.10.8 drops a connection whose "
                                                        "handshake frames are split or pipelined"}},
    },
    default_profile="current",
    liveness="wirecheck.reference_impl.rabbitmq_stream.probe:liveness_probe",
    observer="wirecheck.reference_impl.rabbitmq_stream.observer:StreamObserver",
    server_frame_rules="wirecheck.reference_impl.rabbitmq_stream.observer:server_frame_requirement",
))
