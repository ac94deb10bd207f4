"""Acceptance of the VibeMQ issue: gzip bombs (frames of at most ~100 KiB inflating to 10 MiB,
and to 100 MiB, past the 64 MiB default) sent to ``wirecheck serve --protocol vibemq`` is refused, and the broker
process does not grow past its decompression limit while refusing it (its peak RSS, read from
/proc, is compared with the one before)."""
import socket
import sys
import zlib

import pytest

from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq.codec import Message
from wirecheck.reference_impl.vibemq.constants import CommandType as T

from tests.support.blipmq_proc import BrokerProcess

LIMIT = 64 * 1024 * 1024
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def gzip_bomb(inflated: int) -> bytes:
    """A gzip stream of ``inflated`` zero bytes, built without holding them."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    parts = [deflater.compress(block) for _ in range(inflated >> 20)]
    return b"".join(parts) + deflater.flush()


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize("inflated_mib", [10, 100])
def test_gzip_bomb_refused_within_the_limit(inflated_mib):
    """10 MiB: under the limit, inflated and refused as no message; 100 MiB: past the limit,
    refused as soon as the output passes it."""
    bomb = gzip_bomb(inflated_mib * 1024 * 1024)
    assert len(bomb) < 120 * 1024                       # a ~100 KiB frame
    broker = BrokerProcess(protocol="vibemq").start()
    try:
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
            decoder = codec.Decoder()
            sock.sendall(codec.encode(Message(T.CONNECT, "c", headers={"authPassword": "vibemq"})))
            answers = []
            while not answers:
                answers += decoder.feed(sock.recv(65536))
            assert answers[0].type == T.CONNECT_ACK
            before = peak_rss_mb(broker.proc.pid)
            sock.sendall(len(bomb).to_bytes(4, "big") + b"\x01" + bomb)
            got = b""
            while True:                                   # an Error, then the close
                data = sock.recv(65536)
                if not data:
                    break
                got += data
            messages = codec.decode_all(got) if got else []
            assert all(m.type == T.ERROR and m.error_code == "INVALID_MESSAGE" for m in messages), messages
        after = peak_rss_mb(broker.proc.pid)
        assert after - before < LIMIT / 2**20 + 32, f"peak RSS grew {after - before:.0f} MB (limit 64 MiB)"
        # ...and it still serves others.
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
            sock.sendall(codec.encode(Message(T.PING, "alive")))
            decoder = codec.Decoder()
            pongs = []
            while not pongs:
                pongs += decoder.feed(sock.recv(65536))
            assert pongs[0].type == T.PONG and pongs[0].id == "alive"
    finally:
        broker.kill()
