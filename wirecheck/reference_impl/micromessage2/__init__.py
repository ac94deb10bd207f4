"""Micromessage2 (micromessage2.md, with the errata and the real implementation's choices from
SPEC_NOTES.md): a three-step handshake negotiating extensions, then flag-typed frames
(MESSAGE/SEND, COMMAND, EXTENSION, ERROR); acks, batch-acks, pub/sub with filters. Profiles:
``document`` (default: the document as the kit reads it) and ``sharpmessaging`` (the real
implementation, SharpMessaging 1.1)."""
from ..core import registry
from . import codec
from .broker import make_broker
from .client import MM2Client
from .constants import DEFAULT_PORT
from .session import MM2Session

SPEC = registry.register(registry.ProtocolSpec(
    id="micromessage2",
    title="Micromessage2",
    document="micromessage2.md",
    requirement_prefix="MM2-",
    default_port=DEFAULT_PORT,
    make_decoder=codec.make_decoder,
    encode=codec.encode,
    frame_to_dict=codec.frame_to_dict,
    session_class=MM2Session,
    make_broker=make_broker,
    client_class=MM2Client,
    scapy_layer="wirecheck.reference_impl.micromessage2.scapy_layer:MM2",
    strategies="wirecheck.conformance.strategies.micromessage2",
    requirements="wirecheck.conformance.requirements.micromessage2",
    suite="wirecheck.conformance.suites.micromessage2",
    profiles={
        # [timing] ack_delay: how long the target may wait before acking a SEND (the suite
        # waits this long, plus its timeout, for a delayed ack).
        # (No feature for the disconnect after a missing required extension: the document
        # requires it, so a target that keeps the connection fails MM2-HS-006 unless waived.)
        "document": {"timing": {"ack_delay": 0.2}},
        # SharpMessaging 1.1 (SPEC_NOTES): answers 1.1 whatever the client offers; a missing
        # required extension gets an ERROR without a disconnect; acks after AckExpireTime.
        # Its server has no COMMAND handling (so no pubsub, and the suite's barrier is the ack
        # of a SEND), no batch-ack and no json (its source, commit 6c00afd).
        "sharpmessaging": {"extends": "document", "timing": {"ack_delay": 0.5},
                           "features": {"commands": False, "pubsub": False, "batch_ack": False,
                                        "json": False},
                           "waivers": {"MM2-HS-006": "SharpMessaging 1.1 answers a missing required "
                                       "extension with an ERROR frame and keeps the connection (SPEC_NOTES)"}},
    },
    default_profile="document",
    liveness="wirecheck.reference_impl.micromessage2.probe:liveness_probe",
    observer="wirecheck.reference_impl.micromessage2.observer:MM2Observer",
))
