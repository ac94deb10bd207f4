"""SignalR Hub Protocol (signalr-hub-protocol.md, an early draft; today's protocol from
SPEC_NOTES.md): a JSON handshake, then JSON (0x1E-separated) or MessagePack (VarInt-prefixed)
hub messages; served over raw TCP and over HTTP + WebSocket (negotiate) as real clients use it.
Profiles: ``v1`` (today's clients, the default) and ``draft`` (the document as written)."""
from ..core import registry
from . import codec, http_transport
from .constants import DEFAULT_PORT
from .session import HubSession


def make_broker(*args, **kwargs):
    """Registry factory (reference_impl/signalr/broker.py; imported on use: it needs aiohttp)."""
    from .broker import make_broker as factory
    return factory(*args, **kwargs)


def _client_class():
    try:
        from .client import HubClient
    except ImportError:          # pragma: no cover - the client needs aiohttp
        return object
    return HubClient


_TIMING = {"handshake_timeout": 15.0, "keep_alive_interval": 15.0, "client_timeout": 30.0}

SPEC = registry.register(registry.ProtocolSpec(
    id="signalr",
    title="SignalR Hub Protocol",
    document="signalr-hub-protocol.md",
    requirement_prefix="SIGR-",
    default_port=DEFAULT_PORT,
    make_decoder=codec.make_decoder,
    encode=codec.encode,
    # Hub messages as the codec shows them; HTTP and WebSocket frames of captures too.
    frame_to_dict=http_transport.frame_to_dict,
    session_class=HubSession,
    make_broker=make_broker,
    client_class=_client_class(),
    scapy_layer="wirecheck.reference_impl.signalr.scapy_layer:SignalR",
    strategies="wirecheck.conformance.strategies.signalr",
    requirements="wirecheck.conformance.requirements.signalr",
    suite="wirecheck.conformance.suites.signalr",
    profiles={
        # Today's protocol (SPEC_NOTES.md): what @microsoft/signalr, pysignalr and signalrcore speak.
        # target_case_ignored: ASP.NET Core's hub dispatcher looks the Target up without case
        # (docs/protocols/signalr.md, "How the kit reads the document"): v1 accepts either.
        # client_results (the hub invokes the client and waits for its Completion: AskMe),
        # handshake_timeout and client_timeout (the hub's timers) may be declared absent by a
        # profile file: their tests are then UNIMPLEMENTED.
        "v1": {"timing": dict(_TIMING),
               "features": {"handshake_response": True, "ping": True, "stream_invocation": True,
                            "client_streams": True, "headers": True, "target_case_ignored": True,
                            "client_results": True, "handshake_timeout": True, "client_timeout": True}},
        # The document as written: no handshake answer, StreamCompletion, nonblocking flag.
        "draft": {"timing": dict(_TIMING),
                  "features": {"handshake_response": False, "ping": False, "stream_invocation": False,
                               "client_streams": False, "headers": False, "target_case_ignored": False,
                               "client_results": True, "handshake_timeout": True, "client_timeout": False}},
    },
    default_profile="v1",
    extra_ports=(DEFAULT_PORT + 1,),           # the raw TCP transport
    # A captured connection may be either transport: HTTP + WebSocket, or raw TCP.
    make_capture_decoder=http_transport.make_capture_decoder,
    liveness="wirecheck.reference_impl.signalr.probe:liveness_probe",
    observer="wirecheck.reference_impl.signalr.observer:SignalRObserver",
    # Short enough for the three timer tests to take seconds, long enough that no other test's
    # connection lives to see a keep-alive Ping (the longest lives well under a second).
    embedded_timing={"handshake_timeout": 2.0, "keep_alive_interval": 3.0, "client_timeout": 4.0},
))
