"""Frame structure: sizes, keys, versions, correlation ids, split and pipelined writes,
frame_max, unknown frames (rabbitmq-stream-protocol.adoc "Types", "Frame Structure",
"Response Codes", "Tune"; SPEC_NOTES.md)."""
import struct

import pytest

from wirecheck.conformance.report import verdicts
from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.codec import (Create, CreateResponse, Credit, Heartbeat, Metadata,
                                                  MetadataResponse, Open, OpenResponse, PeerProperties,
                                                  PeerPropertiesResponse, Publish, PublishConfirm,
                                                  PublishedMessage, SaslAuthenticate,
                                                  SaslAuthenticateResponse, SaslHandshake,
                                                  SaslHandshakeResponse, StoreOffset, Tune,
                                                  TuneResponse)
from wirecheck.reference_impl.rabbitmq_stream.constants import RESPONSE_BIT, Code, Key

from .conftest import raw


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


@pytest.mark.requirement("RMQS-TYPE-001", "RMQS-FRAME-001", "RMQS-FRAME-002", "RMQS-FRAME-003",
                         "RMQS-META-002", "RMQS-META-003")
def test_hand_built_metadata_and_its_response_by_the_types_rules(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "types")
    missing = rmqs.name("missing")
    # Built from "Types" and "Metadata" alone, not with the reference codec: key 15,
    # version 1, correlation id, [string].
    cid = 0x01020304
    body = struct.pack(">HHIi", 15, 1, cid, 2) + _string(stream) + _string(missing)
    conn.send(struct.pack(">I", len(body)) + body)
    (size,) = struct.unpack(">I", rmqs.recv_exact(conn, 4, "response size"))
    frame = rmqs.recv_exact(conn, size, f"a {size}-byte response")
    key, version, corr = struct.unpack_from(">HHI", frame)
    assert key == 15 | 0x8000, f"response key 0x{key:04x}, expected 0x800f (bit 15 set)"
    assert version == 1 and corr == cid, (version, corr)
    pos = 8
    (n_brokers,) = struct.unpack_from(">i", frame, pos)
    pos += 4
    brokers = {}
    for _ in range(n_brokers):
        ref, hlen = struct.unpack_from(">Hh", frame, pos)
        host = frame[pos + 4:pos + 4 + hlen].decode()
        (port,) = struct.unpack_from(">I", frame, pos + 4 + hlen)
        brokers[ref] = (host, port)
        pos += 4 + hlen + 4
    (n_streams,) = struct.unpack_from(">i", frame, pos)
    pos += 4
    entries = {}
    for _ in range(n_streams):
        (nlen,) = struct.unpack_from(">h", frame, pos)
        name = frame[pos + 2:pos + 2 + nlen].decode()
        pos += 2 + nlen
        code, leader, n_replicas = struct.unpack_from(">HHi", frame, pos)
        pos += 8 + 2 * n_replicas
        entries[name] = (code, leader)
    assert pos == size, f"{size - pos} bytes left after the last field: Size does not match the content"
    assert set(entries) == {stream, missing}, entries
    assert entries[missing][0] == Code.STREAM_DOES_NOT_EXIST
    code, leader = entries[stream]
    assert code == Code.OK and leader in brokers, (entries, brokers)
    host, port = brokers[leader]
    assert host and 0 < port < 65536, brokers


@pytest.mark.requirement("RMQS-FRAME-003")
@pytest.mark.parametrize("cid", [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF])
def test_any_correlation_id_is_echoed(rmqs, cid):
    conn = rmqs.connect()
    conn.send(Metadata(cid, ()))
    conn.expect(MetadataResponse, correlation_id=cid)


@pytest.mark.requirement("RMQS-FRAME-004", "RMQS-HB-001", "RMQS-OFFSET-001", "RMQS-CREDIT-003")
def test_commands_without_response_get_none(rmqs):
    conn = rmqs.connect()
    stream = rmqs.create(conn, "noresp")
    rmqs.subscribe(conn, 1, stream, credit=1)     # empty stream: nothing to deliver
    conn.send(Heartbeat(), StoreOffset("wirecheck-ref", stream, 0), Credit(1, 5))
    rmqs.barrier(conn, "Heartbeat, StoreOffset and Credit")


@pytest.mark.requirement("RMQS-FRAME-014")
@pytest.mark.parametrize("chunks", [1, 3], ids=["1-byte-writes", "3-byte-writes"])
def test_handshake_sent_in_small_pieces(rmqs, chunks):
    conn = rmqs.connect("tcp")
    a, b, c, d = (rmqs.cid() for _ in range(4))
    conn.send(PeerProperties(a, {"product": "wirecheck"}), chunks=chunks)
    conn.expect(PeerPropertiesResponse, correlation_id=a, code=Code.OK)
    conn.send(SaslHandshake(b), chunks=chunks)
    conn.expect(SaslHandshakeResponse, correlation_id=b, code=Code.OK)
    conn.send(SaslAuthenticate(c, "PLAIN", rmqs.plain()), chunks=chunks)
    conn.expect(SaslAuthenticateResponse, correlation_id=c, code=Code.OK)
    tune = conn.expect(Tune)
    conn.send(TuneResponse(tune.frame_max, tune.heartbeat), chunks=chunks)
    conn.send(Open(d, rmqs.vhost), chunks=chunks)
    conn.expect(OpenResponse, correlation_id=d, code=Code.OK)


@pytest.mark.requirement("RMQS-FRAME-005")
@pytest.mark.parametrize("chunks", [1, 3], ids=["1-byte-writes", "3-byte-writes"])
def test_requests_sent_in_small_pieces_after_open(rmqs, chunks):
    conn = rmqs.connect()
    name, cid, meta = rmqs.name("pieces"), rmqs.cid(), rmqs.cid()
    conn.send(Create(cid, name, {}), chunks=chunks)
    conn.expect(CreateResponse, correlation_id=cid, code=Code.OK)
    rmqs.created.append(name)
    conn.send(Metadata(meta, (name,)), chunks=chunks)
    assert conn.expect(MetadataResponse, correlation_id=meta).streams[0].code == Code.OK


@pytest.mark.requirement("RMQS-FRAME-005", "RMQS-STREAM-001")
@pytest.mark.parametrize("split", [1, 4, 6, 8, 12, 15], ids=lambda n: f"after-byte-{n}")
def test_frame_split_in_two_writes(rmqs, split):
    conn = rmqs.connect()
    name, cid = rmqs.name("split"), rmqs.cid()
    conn.send(Create(cid, name, {}), chunks=[split])
    conn.expect(CreateResponse, correlation_id=cid, code=Code.OK)
    rmqs.created.append(name)


@pytest.mark.requirement("RMQS-FRAME-005", "RMQS-FRAME-006")
def test_many_frames_split_at_odd_boundaries(rmqs):
    conn = rmqs.connect()
    cids = [rmqs.cid() for _ in range(30)]
    conn.send(*[Metadata(c, ()) for c in cids], chunks=[3, 7, 11, 2, 1, 40, 17, 5, 9, 13] * 5)
    for c in cids:
        conn.expect(MetadataResponse, correlation_id=c)


@pytest.mark.requirement("RMQS-FRAME-006")
def test_pipelined_requests_answered_in_order(rmqs):
    conn = rmqs.connect()
    cids = [rmqs.cid() for _ in range(200)]
    conn.send(*[Metadata(c, ()) for c in cids])
    for c in cids:
        conn.expect(MetadataResponse, correlation_id=c)


@pytest.mark.requirement("RMQS-FRAME-014")
def test_handshake_pipelined_in_two_writes(rmqs):
    conn = rmqs.connect("tcp")
    a, b, c, d, e = (rmqs.cid() for _ in range(5))
    # The Tune answer depends on the server's Tune, so the handshake is two writes: up to
    # SaslAuthenticate, then the Tune answer with Open and a first request.
    conn.send(PeerProperties(a, {}), SaslHandshake(b), SaslAuthenticate(c, "PLAIN", rmqs.plain()))
    conn.expect(PeerPropertiesResponse, correlation_id=a, code=Code.OK)
    conn.expect(SaslHandshakeResponse, correlation_id=b, code=Code.OK)
    conn.expect(SaslAuthenticateResponse, correlation_id=c, code=Code.OK)
    tune = conn.expect(Tune)
    conn.send(TuneResponse(tune.frame_max, tune.heartbeat), Open(d, rmqs.vhost), Metadata(e, ()))
    conn.expect(OpenResponse, correlation_id=d, code=Code.OK)
    conn.expect(MetadataResponse, correlation_id=e)


FRAME_MAX = 4096


@pytest.mark.requirement("RMQS-FRAME-007")
@pytest.mark.parametrize("excess", [1, 100_000])
def test_frame_above_the_tuned_frame_max_gets_close_14(rmqs, excess):
    if not rmqs.profile.feature("frame_max_enforced"):
        verdicts.unimplemented("frame_max_enforced: the target accepts frames above the tuned "
                               "frame_max (RabbitMQ 3.10, SPEC_NOTES.md)")
    conn = rmqs.connect(frame_max=FRAME_MAX)
    stream = rmqs.create(conn, "fmax")
    rmqs.declare(conn, 1, stream)
    frame = codec.encode(Publish(1, (PublishedMessage(1, b"x" * (FRAME_MAX + excess)),)))
    assert struct.unpack(">I", frame[:4])[0] > FRAME_MAX
    conn.send(frame)
    rmqs.expect_close(conn, Code.FRAME_TOO_LARGE, f"a {len(frame)}-byte frame, frame_max {FRAME_MAX}")


@pytest.mark.requirement("RMQS-FRAME-007")
def test_size_above_frame_max_closes_without_waiting_for_the_body(rmqs):
    if not rmqs.profile.feature("frame_max_enforced"):
        verdicts.unimplemented("frame_max_enforced (RabbitMQ 3.10, SPEC_NOTES.md)")
    conn = rmqs.connect(frame_max=FRAME_MAX)
    # Only the 8-byte head of a 1 GiB frame: a server that buffers the declared body before
    # checking the size never answers, and the test fails by timeout.
    conn.send(struct.pack(">IHH", 1 << 30, Key.PUBLISH, 1))
    rmqs.expect_close(conn, Code.FRAME_TOO_LARGE, "a 1 GiB size field")


@pytest.mark.requirement("RMQS-FRAME-008", "RMQS-PUB-007", "RMQS-TUNE-001")
def test_frame_of_exactly_frame_max_is_accepted(rmqs):
    conn = rmqs.connect(frame_max=FRAME_MAX)
    stream = rmqs.create(conn, "fmax")
    rmqs.declare(conn, 1, stream)
    # Size field == FRAME_MAX: whichever of "size field" or "size + 4" a server compares,
    # a frame just under frame_max is within it; keep 4 bytes of slack for the latter.
    head = len(codec.encode(Publish(1, (PublishedMessage(1, b""),))))
    body = b"y" * (FRAME_MAX - head)
    frame = codec.encode(Publish(1, (PublishedMessage(1, body),)))
    assert len(frame) == FRAME_MAX
    conn.send(frame)
    conn.expect(PublishConfirm, publisher_id=1, publishing_ids=(1,))


@pytest.mark.requirement("RMQS-FRAME-009")
def test_unknown_key_gets_close_13(rmqs, unknown_key):
    # unknown_key: see conftest.pytest_generate_tests (keys 26-30 too when the profile lacks them)
    conn = rmqs.connect()
    conn.send(raw(unknown_key, 1, struct.pack(">I", rmqs.cid()) + _string("x")))
    rmqs.expect_close(conn, Code.UNKNOWN_FRAME, f"key 0x{unknown_key:04x}")


@pytest.mark.requirement("RMQS-FRAME-009", "RMQS-FRAME-006")
def test_requests_before_an_unknown_key_are_answered(rmqs):
    conn = rmqs.connect()
    cid = rmqs.cid()
    conn.send(Metadata(cid, ()), raw(0x0042, 1, struct.pack(">I", rmqs.cid())))
    conn.expect(MetadataResponse, correlation_id=cid)
    rmqs.expect_close(conn, Code.UNKNOWN_FRAME, "key 0x0042 after a Metadata query")


@pytest.mark.requirement("RMQS-FRAME-010")
@pytest.mark.parametrize("key,version", [(Key.METADATA, 0), (Key.METADATA, 2), (Key.DELETE, 99),
                                         (Key.PUBLISH, 0), (Key.PUBLISH, 99)],
                         ids=["metadata-v0", "metadata-v2", "delete-v99", "publish-v0", "publish-v99"])
def test_unknown_version_gets_close_13(rmqs, key, version):
    conn = rmqs.connect()
    if key == Key.PUBLISH:
        body = struct.pack(">BiQI", 1, 1, 1, 1) + b"v"
    else:
        body = struct.pack(">I", rmqs.cid()) + (struct.pack(">i", 0) if key == Key.METADATA else _string("x"))
    conn.send(raw(key, version, body))
    rmqs.expect_close(conn, Code.UNKNOWN_FRAME, f"{Key(key).name} version {version}")


@pytest.mark.requirement("RMQS-FRAME-011")
@pytest.mark.parametrize("size", [0, 1, 2, 3])
def test_size_below_four_ends_the_connection(rmqs, size):
    conn = rmqs.connect()
    conn.send(struct.pack(">I", size) + bytes([0, 0x17, 0])[:size])
    rmqs.expect_refused(conn, f"a frame of size {size}")


@pytest.mark.requirement("RMQS-FRAME-012")
@pytest.mark.parametrize("key", [Key.CREATE, Key.METADATA, Key.SUBSCRIBE], ids=lambda k: Key(k).name.lower())
def test_response_to_a_request_never_sent_gets_close_13(rmqs, key):
    conn = rmqs.connect()
    conn.send(raw(key | RESPONSE_BIT, 1, struct.pack(">IH", 5, Code.OK)))
    rmqs.expect_close(conn, Code.UNKNOWN_FRAME, f"response key 0x{key | RESPONSE_BIT:04x}")


@pytest.mark.requirement("RMQS-FRAME-013")
@pytest.mark.parametrize("key,body", [
    (Key.CREATE, struct.pack(">I", 7) + struct.pack(">h", 40) + b"short"),
    (Key.METADATA, struct.pack(">Ii", 7, 1) + struct.pack(">h", 50) + b"abc"),
    (Key.SUBSCRIBE, struct.pack(">IB", 7, 1) + _string("s") + struct.pack(">HHi", 1, 10, 1) + _string("k")),
    (Key.DECLARE_PUBLISHER, struct.pack(">IB", 7, 1) + _string("ref")),
    (Key.DELETE, struct.pack(">I", 7) + _string("x") + b"\x00\x01"),
    (Key.UNSUBSCRIBE, struct.pack(">I", 7)),
], ids=["create-string-past-the-end", "metadata-string-past-the-end", "subscribe-property-without-value",
        "declare-publisher-without-stream", "delete-with-trailing-bytes", "unsubscribe-without-id"])
def test_malformed_content_ends_the_connection(rmqs, key, body):
    conn = rmqs.connect()
    conn.send(raw(key, 1, body))
    rmqs.expect_refused(conn, f"a malformed {Key(key).name}")
