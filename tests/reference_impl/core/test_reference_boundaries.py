"""Reference brokers at the edges of their length fields (issue 33, item 5): what the
boundary suites (``suites/<protocol>/test_boundaries.py``) found wrong, checked in memory."""
from wirecheck.reference_impl.micromessage2 import codec as mm2_codec
from wirecheck.reference_impl.micromessage2.codec import Handshake
from wirecheck.reference_impl.micromessage2.negotiation import ServerPolicy, reply_to
from wirecheck.reference_impl.micromessage2.session import MM2Session, SessionConfig
from wirecheck.reference_impl.micromessage2.state import BrokerState
from wirecheck.reference_impl.micromessage2.syntax import Extension, format_extensions


def _vendor(total: int) -> tuple[Extension, ...]:
    """Unknown vendor extensions whose list is exactly ``total`` bytes."""
    names, size = [], 0
    while size < total:
        name = f"x-v{len(names)}-" + "p" * 60
        room = total - size - (1 if names else 0)
        name = name[:room] if room < len(name) + 8 else name
        names.append(name)
        size += len(name) + (1 if len(names) > 1 else 0)
    exts = tuple(Extension(n) for n in names)
    assert len(format_extensions(exts)) == total
    return exts


def test_mm2_sharpmessaging_reply_to_a_full_optional_list_fits():
    """The real reading echoes the client's optional extensions and adds its own suggestions:
    with a client list of 65,535 bytes (the u16's limit) that reply did not fit its length
    field, and encoding it raised out of the session (the connection died unanswered). The
    reply now leaves out what the server does not support."""
    offer = Handshake("c", (), _vendor(0xFFFF))
    policy = ServerPolicy.for_profile("sharpmessaging")
    reply = reply_to(policy, offer)
    assert len(format_extensions(reply.optional)) <= 0xFFFF
    assert {e.name for e in reply.optional} == {"ack", "dotnet"}
    mm2_codec.encode(reply)                                       # no ValueError
    # A shorter list is still echoed whole, as the real implementation does.
    short = Handshake("c", (), _vendor(300))
    assert reply_to(policy, short).optional[:len(short.optional)] == short.optional


def test_mm2_sharpmessaging_session_answers_a_full_optional_list():
    session = MM2Session(BrokerState(), SessionConfig.for_profile("sharpmessaging"))
    out = session.receive(mm2_codec.encode(Handshake("c", (), _vendor(0xFFFF))), 0.0)
    (reply,) = mm2_codec.decode_all(b"".join(out), origin="server", profile="sharpmessaging")
    assert isinstance(reply, Handshake) and not session.closed


def test_rmqs_stream_names_as_long_as_a_string_holds():
    """The reference refused stream names past 255 bytes with 17, where the document's string
    holds 32,767 and RabbitMQ 3.10.8 creates such streams (observed up to 32,767 bytes)."""
    from wirecheck.reference_impl.rabbitmq_stream.state import BrokerState
    assert BrokerState.valid_name("n" * 256) and BrokerState.valid_name("n" * 0x7FFF)
    assert not BrokerState.valid_name("") and not BrokerState.valid_name("amq.x")
