"""Write the seed corpora of the nested-decoder targets: ``python -m wirecheck.fuzz.builders.nested_corpora``
(deterministic).

``micromessage2-syntax``: lines of text as MM2 frames carry them (micromessage2.md's own
examples: extension lists, a COMMAND, MESSAGE properties, FILTER_VALUEs; the sharpmessaging
spellings; filters for every operator and type), several lines per seed.
``rabbitmq-stream-sasl``: SaslAuthenticate responses, PLAIN (RFC 4616) and AMQPLAIN field tables,
as the real clients send them (captures/rabbitmq-stream/real: rstream sends PLAIN).
"""
from __future__ import annotations

from wirecheck.fuzz.builders.corpus_files import CORPORA, write_corpus

SYNTAX = {
    "doc-required-extensions": "batch-ack:max-count=10;json;microauth",
    "doc-intro-extensions": "batch-ack:count=10;json;dotnet",
    "doc-server-extensions": "json;ack;batch-ack",
    "doc-erratum-colon": "batch-ack:max-count:100;",
    "doc-bare-extension": "batch-ack;",
    "doc-properties": "first_name:jonas;twitter:jgauffin;",
    "doc-command": "CommandName;key=value,key=value,key=value",
    "sharp-extensions": "MessagesPerAck:value=5;json;dotnet",
    "subscribe-command": "subscribe;destination=topic%2Fa,filter=n%3E%3DN1",
    "unsubscribe-command": "unsubscribe;destination=q%20x",
    "url-escapes": "k:T%E2%9C%93%20x%25%3B%2C%3D%3A;\nk=T%E2%9C%93%20x%25%3B%2C%3D%3A",
    "typed-properties": "price:N10.5;when:D1700000000.25;city:TOslo%20C;n:N-3;",
    "untyped-properties": "last_name:kalle;age:42;",
    "filter-numbers": "price>=N10;price<N100.5;qty!=N0;n=N-1\nprice:N42;qty:N1;n:N-1;",
    "filter-dates": "when>D1700000000.0;when<=D1800000000.5\nwhen:D1750000000.125;",
    "filter-text": "city=TOslo;name<TJo;name>Tas;tag&Tfoo;tag~Tbar\ncity:TOslo;name:TJonas;tag:Tfoobaz;",
    "filter-untyped": "last_name=Tkalle;age>N40\nlast_name:kalle;age:42;",
    "filter-small-number": "x=N0.000000001;y<N1000000000000000000000\nx:N0.000000001;y:N7;",
    "several-lines": "json;ack\nsubscribe;destination=a\nk:v;\nk=Tv",
}


def _amqplain(**fields: str) -> bytes:
    out = bytearray()
    for name, value in fields.items():
        raw = value.encode()
        out += bytes([len(name)]) + name.encode() + b"S" + len(raw).to_bytes(4, "big") + raw
    return bytes(out)


SASL = {
    "plain-guest": b"\x00guest\x00guest",
    "plain-authzid": b"admin\x00user\x00p\xc3\xa4ss",
    "plain-empty": b"\x00\x00",
    "amqplain-guest": _amqplain(LOGIN="guest", PASSWORD="guest"),
    "amqplain-reversed-extra": _amqplain(PASSWORD="secret", LOGIN="user", x="1"),
    "amqplain-utf8": _amqplain(LOGIN="\u00e4", PASSWORD="\u2713"),
}


def main() -> None:
    write_corpus(CORPORA / "micromessage2-syntax", {k: v.encode() for k, v in SYNTAX.items()})
    write_corpus(CORPORA / "rabbitmq-stream-sasl", SASL)
    print(f"{len(SYNTAX)} + {len(SASL)} seeds")


if __name__ == "__main__":
    main()
