"""SASL responses the RabbitMQ Stream broker accepts: PLAIN and (optional) AMQPLAIN."""
import asyncio

import pytest

from wirecheck.reference_impl.core.server import ThreadedServer
from wirecheck.reference_impl.rabbitmq_stream import make_broker, sasl
from wirecheck.reference_impl.rabbitmq_stream.client import StreamClient
from wirecheck.reference_impl.rabbitmq_stream.constants import Code


def amqplain(user: str, password: str) -> bytes:
    """AMQP 0-9-1 field-table body: shortstr name, 'S', long string value, per entry."""
    out = b""
    for name, value in (("LOGIN", user), ("PASSWORD", password)):
        raw = value.encode()
        out += bytes([len(name)]) + name.encode() + b"S" + len(raw).to_bytes(4, "big") + raw
    return out


@pytest.mark.parametrize("data,expected", [
    (b"\0guest\0guest", ("guest", "guest")),
    (b"authz\0u\0p", ("u", "p")),
    (b"\0only-two", None),
    (b"\0a\0b\0c", None),
    (b"\0\xff\0x", None),
    (None, None),
])
def test_plain(data, expected):
    assert sasl.plain(data) == expected


@pytest.mark.parametrize("data,expected", [
    (amqplain("guest", "guest"), ("guest", "guest")),
    (amqplain("guest", "guest")[:-1], None),                  # value shorter than its length
    (amqplain("guest", "guest").replace(b"S", b"I", 1), None),  # not a long string
    (bytes([5]) + b"LOGIN" + b"S" + (1).to_bytes(4, "big") + b"u", None),   # no PASSWORD
    (b"\x09", None),
    (None, None),
])
def test_amqplain(data, expected):
    assert sasl.amqplain(data) == expected


def test_broker_accepts_amqplain_and_refuses_a_wrong_password():
    async def scenario(port):
        c = await StreamClient.connect("127.0.0.1", port, handshake=False)
        await c.peer_properties({})
        assert "AMQPLAIN" in (await c.sasl_handshake()).mechanisms
        assert (await c.sasl_authenticate("AMQPLAIN", amqplain("guest", "guest"))).code == Code.OK
        await c.close()
        c = await StreamClient.connect("127.0.0.1", port, handshake=False)
        await c.peer_properties({})
        await c.sasl_handshake()
        r = await c.sasl_authenticate("AMQPLAIN", amqplain("guest", "nope"))
        assert r.code == Code.AUTHENTICATION_FAILURE
        await c.close()

    with ThreadedServer(make_broker()) as server:
        asyncio.run(asyncio.wait_for(scenario(server.server.port), 20))
