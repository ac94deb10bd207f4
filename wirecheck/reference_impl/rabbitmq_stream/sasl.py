"""SASL responses the broker accepts (SaslAuthenticate): each parser returns (user, password)
or None when the data is malformed (answered with code 9, SASL error)."""
from __future__ import annotations

from typing import Optional

MECHANISMS = ("PLAIN", "AMQPLAIN")


def plain(data: Optional[bytes]) -> Optional[tuple[str, str]]:
    """PLAIN (RFC 4616): ``authzid \\0 user \\0 password``."""
    if data is None:
        return None
    parts = data.split(b"\0")
    if len(parts) != 3:
        return None
    try:
        return parts[1].decode("utf-8"), parts[2].decode("utf-8")
    except UnicodeDecodeError:
        return None


def amqplain(data: Optional[bytes]) -> Optional[tuple[str, str]]:
    """AMQPLAIN: an AMQP 0-9-1 field table body with LOGIN and PASSWORD long strings."""
    if data is None:
        return None
    fields: dict[str, bytes] = {}
    pos = 0
    try:
        while pos < len(data):
            n = data[pos]
            name = data[pos + 1:pos + 1 + n].decode("utf-8")
            pos += 1 + n
            if data[pos:pos + 1] != b"S":
                return None
            size = int.from_bytes(data[pos + 1:pos + 5], "big")
            value = data[pos + 5:pos + 5 + size]
            if len(value) != size:
                return None
            fields[name] = value
            pos += 5 + size
        return fields["LOGIN"].decode("utf-8"), fields["PASSWORD"].decode("utf-8")
    except (IndexError, KeyError, UnicodeDecodeError):
        return None
