"""Compression negotiation and per-frame flags ("Compression", "Negotiation", "Threshold")."""
import pytest

from wirecheck.conformance.report.verdicts import unimplemented
from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import COMPRESSION_BY_NAME, CommandType as T
from wirecheck.reference_impl.vibemq.constants import Compression

from .conftest import raw_frame


def _v11(vibe):
    if vibe.reading == "vibemq-1.0" or not vibe.feature("compression"):
        unimplemented("compression (protocol 1.1; the profile's compression)")


def _big(vibe, n: int = 4000):
    return {"text": "compress me " * (n // 12)}


@pytest.mark.requirement("VIBE-COMP-001", "VIBE-COMP-003", "VIBE-COMP-004")
@pytest.mark.parametrize("name", ["gzip", "brotli"])
def test_negotiated_algorithm_is_used(vibe, name):
    _v11(vibe)
    conn = vibe.connect(compression=name)
    assert conn.connect_ack.header("negotiated-compression") == name, conn.connect_ack.headers
    q = vibe.create_queue(conn)
    vibe.subscribe(conn, q)
    other = vibe.connect()
    vibe.publish(other, q, _big(vibe))
    deliver = vibe.expect(conn, T.DELIVER, "the Deliver of a large message")
    assert deliver.compression == COMPRESSION_BY_NAME[name], \
        f"a body over the threshold goes out with {name}, got flag {deliver.compression}"
    conn.send(Message(T.PING, "small"))
    pong = vibe.expect(conn, T.PONG, id="small")
    assert pong.compression == Compression.NONE, "a frame below the threshold is not compressed"


@pytest.mark.requirement("VIBE-COMP-002")
@pytest.mark.parametrize("offer", [None, "", "zstd,lz4", "deflate"])
def test_no_common_algorithm_means_no_compression(vibe, offer):
    conn = vibe.connect(compression=offer)
    assert conn.connect_ack.header("negotiated-compression") is None, conn.connect_ack.headers
    q = vibe.create_queue(conn)
    vibe.subscribe(conn, q)
    other = vibe.connect()
    vibe.publish(other, q, _big(vibe))
    deliver = vibe.expect(conn, T.DELIVER)
    assert deliver.compression == Compression.NONE


@pytest.mark.requirement("VIBE-COMP-006")
@pytest.mark.parametrize("offer,expected", [("brotli,gzip", "brotli"), ("gzip,brotli", "gzip"),
                                            ("zstd,gzip", "gzip"), ("gzip", "gzip")])
def test_first_supported_algorithm_in_client_order(vibe, offer, expected):
    _v11(vibe)
    conn = vibe.connect(compression=offer)
    assert conn.connect_ack.header("negotiated-compression") == expected, conn.connect_ack.headers


@pytest.mark.requirement("VIBE-COMP-005")
def test_mixed_compression_stream_from_the_client(vibe):
    _v11(vibe)
    conn = vibe.connect(compression="gzip")
    q = vibe.create_queue(conn)
    ids = []
    for flag in (Compression.GZIP, Compression.NONE, Compression.BROTLI, Compression.GZIP):
        mid = vibe.new_id("mix")
        ids.append(mid)
        conn.send(vibe.encode(Message(T.PUBLISH, mid, q, {"n": len(ids)}), compression=flag))
        vibe.expect(conn, T.PUBLISH_ACK, f"PublishAck of a frame with flag {flag}")
    vibe.barrier(conn, "four publishes with mixed flags")


@pytest.mark.requirement("VIBE-COMP-007")
@pytest.mark.parametrize("flag", [Compression.GZIP, Compression.BROTLI])
def test_corrupted_compressed_body(vibe, flag):
    _v11(vibe)
    conn = vibe.connect(compression="gzip,brotli")
    body = bytearray(vibe.encode(Message(T.PING, "c"), compression=flag)[5:])
    body[len(body) // 2] ^= 0xFF
    body[-1] ^= 0xFF
    conn.send(raw_frame(vibe, bytes(body), flag))
    vibe.expect_error_or_close(conn, ("INVALID_MESSAGE",), "a corrupt compressed body")
