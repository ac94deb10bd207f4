"""BlipMQ (blipmq-protocol.md): u32 length, u8 type, u64 correlation id; HELLO/AUTH; QoS0/1;
POLL; WAL."""
from ..core import registry
from . import codec
from .broker import DEFAULT_PORT, make_broker
from .client import BlipClient
from .session import BlipSession

SPEC = registry.register(registry.ProtocolSpec(
    id="blipmq",
    title="BlipMQ",
    document="blipmq-protocol.md",
    requirement_prefix="BLIP-",
    default_port=DEFAULT_PORT,
    make_decoder=lambda limits=None, origin=None, profile=None: codec.Decoder(limits),  # same wire both ways
    encode=codec.encode,
    frame_to_dict=codec.frame_to_dict,
    session_class=BlipSession,
    make_broker=make_broker,
    client_class=BlipClient,
    scapy_layer="wirecheck.reference_impl.blipmq.scapy_layer:BlipMQ",
    strategies="wirecheck.conformance.strategies.blipmq",
    requirements="wirecheck.conformance.requirements.blipmq",
    suite="wirecheck.conformance.suites.blipmq",
    profiles={
        # The document as written, with the real codec's strictness (SPEC_NOTES.md).
        # ``durable``: the target keeps QoS1 publishes in a WAL (the crash-recovery tests, which
        # run only when the kit runs the target; false: it is run without one).
        "document": {"credentials": {"api_key": "dev-key"},
                     "limits": {"max_frame_size": codec.MAX_FRAME_SIZE},
                     "features": {"durable": True}},
        # The real daemon (bravo1goingdark/blipmq): same wire; keys come from its config.
        "blipmq-daemon": {"extends": "document",
                          "credentials": {"api_key": "dev-key"}},
    },
    liveness="wirecheck.reference_impl.blipmq.probe:liveness_probe",
    observer="wirecheck.reference_impl.blipmq.observer:BlipObserver",
    server_frame_rules="wirecheck.reference_impl.blipmq.observer:server_frame_requirement",
))
