"""The three-step handshake ("Handshake"): layout, versions, required and optional extensions,
the final handshake and extension ids."""
import pytest

from wirecheck.conformance.target.connection import TargetError
from wirecheck.reference_impl.micromessage2 import codec
from wirecheck.reference_impl.micromessage2.codec import Error, Handshake, Message


@pytest.mark.requirement("MM2-HS-001", "MM2-HS-002")
def test_offer_without_extensions_gets_a_handshake(mm2):
    conn = mm2.open()
    conn.send(mm2.offer())
    reply = mm2.reply(conn)
    assert reply.major == 1
    mm2.final(conn)
    mm2.barrier(conn, "the final handshake")


@pytest.mark.requirement("MM2-HS-001", "MM2-HS-013")
def test_document_example_offer_json_dotnet(mm2):
    # The document's first example with erratum 1 applied: RequiredLen 11 for "json;dotnet".
    mm2.needs("json")
    raw = bytes([1, 0, 0, 4]) + b"hulk" + bytes([0, 11]) + b"json;dotnet" + bytes([0, 0])
    conn = mm2.open()
    conn.send(raw)
    reply = mm2.reply(conn, "the reply to the document's example")
    offered = mm2.offer(required="json;dotnet").required
    extra = tuple(e for e in reply.required if e.name not in ("json", "dotnet"))
    mm2.final(conn, offered + extra, identity="hulk")
    mm2.barrier(conn, "the final handshake")


@pytest.mark.requirement("MM2-HS-003")
def test_lowest_minor_version_is_used(mm2):
    conn = mm2.open()
    conn.send(mm2.offer(minor=0))
    reply = mm2.reply(conn)
    assert reply.minor == 0, f"a 1.0 client got a {reply.major}.{reply.minor} reply: the lowest version is 1.0"


@pytest.mark.requirement("MM2-HS-003", "MM2-HS-004")
@pytest.mark.parametrize("major", [2, 9])
def test_higher_major_version_gets_the_lowest_or_an_error(mm2, major):
    """"If versions differ the lowest version should be used": a 1.x server answers a 2.x or
    9.x client with its own 1.x (the client then decides), or, as the semantic versioning the
    document starts from allows between majors, refuses with ERROR and disconnects."""
    conn = mm2.open()
    conn.send(mm2.offer(major=major))
    frame = mm2.next(conn, f"a 1.x handshake or an ERROR (client major {major})")
    if isinstance(frame, Error):
        mm2.expect_closed(conn, f"an ERROR for major version {major}")
        return
    if not isinstance(frame, Handshake):
        raise TargetError(f"expected a handshake or an ERROR, got {codec.frame_to_dict(frame)}")
    assert frame.major < major, (f"a {major}.0 client got a {frame.major}.{frame.minor} reply: the lowest "
                                 f"version should be used")


@pytest.mark.requirement("MM2-HS-004")
def test_lower_major_version_the_server_lacks_gets_error_and_disconnect(mm2):
    """A 0.x client: the lowest version is 0.x. A server that speaks it answers 0.x; one that
    does not "should send an ERROR frame and then disconnect"; a 1.x answer is neither."""
    conn = mm2.open()
    conn.send(mm2.offer(major=0))
    frame = mm2.next(conn, "an ERROR or a 0.x handshake (client major 0)")
    if isinstance(frame, Handshake):
        assert frame.major == 0, f"a 0.0 client got a {frame.major}.{frame.minor} reply: the lowest version is 0"
        return
    if not isinstance(frame, Error):
        raise TargetError(f"expected an ERROR, got {codec.frame_to_dict(frame)}")
    mm2.expect_closed(conn, "an ERROR for major version 0")


@pytest.mark.requirement("MM2-HS-005")
def test_unknown_required_extension_gets_an_error(mm2):
    conn = mm2.open()
    conn.send(mm2.offer(required="x-wirecheck-unknown"))
    mm2.expect_error(conn, "an ERROR for a required extension the server lacks")


@pytest.mark.requirement("MM2-HS-006")
def test_unknown_required_extension_disconnects(mm2):
    conn = mm2.open()
    conn.send(mm2.offer(required="json;x-wirecheck-unknown"))
    mm2.expect_error_then_close(conn, "a required extension the server lacks")


@pytest.mark.requirement("MM2-HS-007")
def test_final_handshake_with_unsupported_extension_is_refused(mm2):
    conn = mm2.open()
    conn.send(mm2.offer())
    mm2.reply(conn)
    conn.send(mm2.offer(required="x-wirecheck-unknown"))
    mm2.expect_error_then_close(conn, "the final handshake uses an extension the server lacks")


@pytest.mark.requirement("MM2-HS-015")
def test_final_handshake_without_what_the_server_requires_is_refused(mm2):
    conn = mm2.open()
    conn.send(mm2.offer(required="ack"))
    reply = mm2.reply(conn)
    if not reply.required:
        pytest.skip("UNIMPLEMENTED: the target requires no extension of a client, so dropping one "
                    "cannot be tried")
    conn.send(Handshake("wirecheck"))
    mm2.expect_error_then_close(conn, "the final handshake dropped a required extension")


@pytest.mark.requirement("MM2-HS-009", "MM2-HS-014")
def test_reply_suggests_the_clients_optional_extensions(mm2):
    known = "json" if mm2.has("json") else "dotnet"      # one the target supports
    conn = mm2.open()
    conn.send(mm2.offer(optional=f"{known};x-wirecheck-vendor"))
    reply = mm2.reply(conn)
    names = reply.names()
    assert known in names, f"the server supports {known} but did not suggest it back: {names}"
    assert "x-wirecheck-vendor" not in names, f"an unknown vendor extension was offered back: {names}"
    mm2.final(conn, (), tuple(e for e in reply.optional if e.name == known))
    mm2.barrier(conn, "the final handshake")


@pytest.mark.requirement("MM2-HS-011", "MM2-ACK-007")
@pytest.mark.parametrize("order", ["json;batch-ack:max-count=2;pubsub", "pubsub;batch-ack:max-count=2;json"])
def test_extension_ids_follow_the_final_order(mm2, order):
    conn = mm2.connect(required=order)
    topic = mm2.destination("topic")
    mm2.subscribe(conn, topic)
    mm2.barrier(conn, "subscribe")
    ids = conn.ids
    for i in range(2):
        mm2.send(conn, topic, b'{"n": %d}' % i)
    got = mm2.messages(conn, 2)
    assert mm2.numbers(conn, got) == [1, 2]
    # The server acks our two SENDs with the batch-ack id of the final order.
    if not conn.acks:
        frame = conn.recv(expecting=f"an ack with extension id {ids['batch-ack']}")
        assert frame == codec.ExtensionFrame(ids["batch-ack"], b"\x00\x02"), codec.frame_to_dict(frame)
    else:
        assert conn.acks[-1] == 2
    mm2.ack(conn, 2)
    mm2.barrier(conn, "the ack with the negotiated id")


@pytest.mark.requirement("MM2-HS-011", "MM2-ACK-007")
@pytest.mark.parametrize("first", [True, False], ids=["ack-first", "ack-second"])
def test_ack_id_follows_the_final_order(mm2, first):
    window = mm2.window_extension(2)
    conn = mm2.connect(required=f"{window};dotnet" if first else f"dotnet;{window}")
    queue = mm2.destination("queue")
    mm2.send(conn, queue)
    mm2.send(conn, queue)
    frame = conn.recv(expecting=f"an ack with extension id {1 if first else 2}")
    assert frame == codec.ExtensionFrame(1 if first else 2, b"\x00\x02"), codec.frame_to_dict(frame)


@pytest.mark.requirement("MM2-HS-001", "MM2-FRAME-005")
@pytest.mark.parametrize("chunks", [1, 2, 5])
def test_bare_handshake_split(mm2, chunks):
    """The handshake alone, no extension offered, cut into pieces of ``chunks`` bytes: needs
    nothing optional. The reply shows the offer was put together; where the target answers
    commands, the barrier shows the final handshake was too."""
    conn = mm2.open()
    conn.send(mm2.offer(), chunks=chunks)
    reply = mm2.reply(conn, "the reply to an offer sent in pieces")
    final = mm2.offer()
    conn.send(Handshake(final.identity, tuple(reply.required), ()), chunks=chunks)
    if mm2.commands:
        mm2.barrier(conn, "a final handshake sent in pieces")


@pytest.mark.requirement("MM2-HS-012", "MM2-FRAME-005")
@pytest.mark.parametrize("chunks", [1, 3, 7])
def test_handshake_and_frames_split_and_pipelined(mm2, chunks):
    mm2.needs("pubsub")
    conn = mm2.open()
    conn.send(mm2.offer(required="pubsub"), chunks=chunks)
    reply = mm2.reply(conn)
    topic = mm2.destination("topic")
    final = Handshake("wirecheck", tuple(e for e in mm2.offer(required="pubsub").required), ())
    conn.ids = {"pubsub": 1}
    conn.send(final, codec.Command("subscribe", (("destination", topic),)),
              codec.Message(1, topic, b"hello"), chunks=chunks)
    got = mm2.expect(conn, Message, "the message sent in the same write as the handshake")
    assert (got.destination, got.payload) == (topic, b"hello")
    assert reply.major == 1
    mm2.barrier(conn)


@pytest.mark.requirement("MM2-HS-012", "MM2-FRAME-005")
@pytest.mark.parametrize("chunks", [1, 3, 7])
def test_handshake_and_send_split_and_pipelined(mm2, chunks):
    """The same without pubsub: a SEND in the final handshake's write (both split into
    ``chunks``) is read, as its ack proves (a window of one)."""
    window = mm2.window_extension(1)
    conn = mm2.open()
    conn.send(mm2.offer(required=window), chunks=chunks)
    reply = mm2.reply(conn)
    queue = mm2.destination("queue")
    offered = mm2.offer(required=window)
    final = Handshake("wirecheck", tuple(offered.required) + tuple(
        e for e in reply.required if e.name not in offered.names()), ())
    conn.ids = {e.name: i for i, e in enumerate(final.required, 1)}
    conn.send(final, codec.Message(1, queue, b"hello"), chunks=chunks)
    conn.sent = 1
    assert mm2.expect_acks(conn, 1, "the ack of a SEND in the same write as the final handshake") == [1]


@pytest.mark.requirement("MM2-ERR-001", "MM2-HS-005")
def test_error_frame_layout(mm2):
    conn = mm2.open()
    conn.send(mm2.offer(required="x-wirecheck-unknown"))
    frame = conn.recv(expecting="an ERROR frame")
    assert isinstance(frame, Error) and frame.text, codec.frame_to_dict(frame)


@pytest.mark.requirement("MM2-HS-001")
def test_what_the_server_suggests_to_a_bare_offer(mm2):
    """INFORMATIONAL: the server's identity, version and the extensions it suggests to a client
    that offers none (the document leaves all three to the implementation)."""
    from wirecheck.conformance.report.verdicts import informational
    conn = mm2.open()
    conn.send(mm2.offer())
    reply = mm2.reply(conn)
    informational(f"identity {reply.identity!r}, version {reply.major}.{reply.minor}, required "
                  f"{[str(e) for e in reply.required]}, optional {[str(e) for e in reply.optional]}")
