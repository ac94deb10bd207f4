"""Write the Micromessage2 seed corpora: ``python -m wirecheck.fuzz.builders.mm2_corpora`` (deterministic).

``fuzz/corpora/micromessage2/``: frame streams as they follow the handshake, each of which the
registry's default decoder reads whole: both SPEC_NOTES vectors, the real server's ack and the
document's batch-ack and dotnet examples (errata applied), every frame type (small and
LARGE_PAYLOAD), CONTINUED messages, typed property values and a filter per operator, ERROR
frames (some holding an extension list, a command, properties or a filter as their text: the
decoder target hands ERROR texts to each text parser).

``fuzz/corpora/micromessage2-handshake/``: a client's side (offer, final, frames) or a server's
(reply or ERROR, frames) from the first byte: the document's handshake examples (erratum 1
applied), the real client's and server's, each extension list example of the document.

``fuzz/corpora/micromessage2-session/``: a client's side of a session, built with the profile's
own negotiation: pub/sub on topics and queues, filters, acks and batch-acks with each spelling
of the count, the client's sequence numbers across the wrap, delayed acks, json, dotnet,
CONTINUED SENDs, a slow subscriber, a full queue, the refusals of the handshake and of requests,
frames the codec refuses; the same in the real implementation's profile (last byte ``S``). The
identity's first character is the target's clock step per read (fuzz/harnesses/mm2.py).
"""
from __future__ import annotations

import struct

from wirecheck.conformance.strategies.micromessage2 import (BATCH_ACK_EXAMPLE, DOCUMENT_FINAL, DOCUMENT_OFFER,
                                                  DOCUMENT_REPLY, DOTNET_TYPE_EXAMPLE,
                                                  EXTENSION_LIST_EXAMPLES, FILTER_VALUE_EXAMPLES,
                                                  HANDSHAKE_ERROR, REAL_CLIENT_OFFER,
                                                  REAL_SERVER_ACK, REAL_SERVER_REPLY,
                                                  REAL_SERVER_SUGGESTS, SHARP_PLAIN,
                                                  SHARP_WITH_PROPERTIES)
from wirecheck.fuzz.builders.corpus_files import CORPORA, write_corpus
from wirecheck.fuzz.harnesses.mm2 import MARKER
from wirecheck.reference_impl.micromessage2 import codec
from wirecheck.reference_impl.micromessage2.codec import Command, Error, ExtensionFrame, Handshake, Message
from wirecheck.reference_impl.micromessage2.negotiation import ServerPolicy, reply_to
from wirecheck.reference_impl.micromessage2.session import MM2Session, Phase, SessionConfig
from wirecheck.reference_impl.micromessage2.state import BrokerState
from wirecheck.reference_impl.micromessage2.syntax import parse_extensions

_U16 = struct.Struct(">H")


def wire(*frames) -> bytes:
    return b"".join(codec.encode(f) for f in frames)


def sub(destination: str, flt: str | None = None) -> Command:
    return Command("subscribe", (("destination", destination),) + ((("filter", flt),) if flt else ()))


def ack(ext_id: int, seq: int) -> ExtensionFrame:
    return ExtensionFrame(ext_id, _U16.pack(seq))


def continued(message: Message, piece_size: int) -> bytes:
    return codec.encode_message(message, piece_size)


# --- frame streams ---------------------------------------------------------------------------------

#: The document's property example ("first_name:jonas;twitter:jgauffin;") and typed values.
DOC_PROPERTIES = (("first_name", "jonas"), ("twitter", "jgauffin"))
TYPED = tuple(zip(("n", "d", "t"), FILTER_VALUE_EXAMPLES))
#: A filter per operator the kit reads (filters.py), on numbers, dates and text.
FILTERS = ("n=N1", "n!=N2", "n<N5", "n<=N1", "n>N0", "n>=N1", "d<D1413198001.5", "d>=D0.0",
           "t=THello%20%22world%22", "t!=Tx", "t<THello", "t>T%22", "t&Tworld", "t~Tmother",
           "price>=N10;city=TOslo")

FRAMES = {
    "message-plain": Message(1, "q", b"hello"),
    "message-document-properties": Message(2, "topic/domain-events", b'{"a":1}', DOC_PROPERTIES),
    "message-typed-properties": Message(3, "topic/prices", b"", TYPED + (("price", "N-12.50"),)),
    "message-large-flag": Message(4, "q", b"abc", large=True),
    "message-large": Message(5, "q", bytes(range(256)) + b"x" * 44),
    "message-sequence-max": Message(65535, "q", b"wrap"),
    "message-empty": Message(0),
    "message-unicode-destination": Message(6, "очередь/✓", b"\x00\xff"),
    "command-subscribe": sub("topic/news"),
    "command-subscribe-filter": sub("topic/prices", "price>=N10;city=TOslo"),
    "command-url-encoded": Command("x-vendor", (("k", "a;b,c=d% e"), ("empty", ""))),
    "command-bare": Command("unsubscribe"),
    "command-large": Command("subscribe", (("destination", "q"),), large=True),
    "extension-ack": ack(1, 1),
    "extension-dotnet-type": ExtensionFrame(2, DOTNET_TYPE_EXAMPLE.encode()),
    "extension-large": ExtensionFrame(3, bytes(300)),
    "error": Error("required extension(s) not supported: x-nope"),
    "error-unicode-large": Error("ünïcode ✓", large=True),
}


def stream_seeds() -> dict[str, bytes]:
    seeds = {name: codec.encode(frame) for name, frame in FRAMES.items()}
    seeds["sharp-plain"] = SHARP_PLAIN
    seeds["sharp-with-properties"] = SHARP_WITH_PROPERTIES
    seeds["sharp-vectors-then-ack"] = SHARP_PLAIN + SHARP_WITH_PROPERTIES + REAL_SERVER_ACK
    seeds["document-batch-ack-example"] = BATCH_ACK_EXAMPLE
    seeds["filters-every-operator"] = wire(*(sub(f"topic/f{i}", f) for i, f in enumerate(FILTERS)),
                                           Message(7, "topic/f0", b"m", TYPED),
                                           Message(8, "topic/f1", b"m", (("n", "N2"), ("t", "Tx"))))
    texts = EXTENSION_LIST_EXAMPLES + FILTERS[-1:] + FILTER_VALUE_EXAMPLES + (
        "first_name:jonas;twitter:jgauffin;", "subscribe;destination=topic%2Fa,filter=n%3E%3DN1")
    seeds["error-texts"] = wire(*(Error(text) for text in texts))
    big = Message(9, "q", b"0123456789abcdef", (("n", "N1"),))
    seeds["continued"] = continued(big, 5)
    seeds["continued-large-pieces"] = continued(Message(10, "topic/t", b"x" * 40, large=True), 16)
    seeds["continued-then-frames"] = continued(big, 7) + wire(ack(2, 9), sub("q"), Message(11, "q", b"after"))
    seeds["every-frame-type"] = b"".join(seeds[name] for name in FRAMES) + seeds["continued"]
    return seeds


# --- handshakes ----------------------------------------------------------------------------------

def hs(identity: str, required: str = "", optional: str = "", major: int = 1, minor: int = 0,
       flags: int = 0) -> Handshake:
    return Handshake(identity, parse_extensions(required, False), parse_extensions(optional, False),
                     major, minor, flags)


def handshake_seeds() -> dict[str, bytes]:
    seeds = {
        "document-offer-final": DOCUMENT_OFFER + DOCUMENT_FINAL,
        "document-offer-final-frames": DOCUMENT_OFFER + DOCUMENT_FINAL
        + wire(ExtensionFrame(2, DOTNET_TYPE_EXAMPLE.encode()), Message(1, "q", b'{"a":1}'), ack(3, 1)),
        "document-reply": DOCUMENT_REPLY,
        "document-reply-frames": DOCUMENT_REPLY + wire(Message(1, "q", b'"x"'), ack(3, 1)),
        "real-client-offer-final": REAL_CLIENT_OFFER + REAL_CLIENT_OFFER,
        "real-server-reply-ack": REAL_SERVER_REPLY + REAL_SERVER_ACK,
        "real-server-suggests": codec.encode(hs("FastSocket v1.1", "", REAL_SERVER_SUGGESTS, minor=1)),
        "handshake-error": HANDSHAKE_ERROR,
        "client-error-first": wire(Error("bye")),
        "major-2": twice("v2", "json", major=2),
        "minor-flags-max": twice("x", "json", minor=255, flags=255),
        "identity-empty": twice(""),
        "identity-255": twice("i" * 255, "pubsub"),
        "url-encoded-values": twice("u", "x-vendor:key=Hello%20%25%20there%21,other=%C3%A9"),
        "ack-and-batch-ack": wire(hs("c", "", "ack;batch-ack:max-count=5"), hs("c", "ack;batch-ack")),
    }
    for i, text in enumerate(EXTENSION_LIST_EXAMPLES):
        # Written as the document writes it (not re-formatted), required then optional.
        raw = text.encode()
        offer = bytes([1, 0, 0, 1]) + b"c" + _U16.pack(len(raw)) + raw + _U16.pack(0)
        final = bytes([1, 0, 0, 1]) + b"c" + _U16.pack(0) + _U16.pack(len(raw)) + raw
        seeds[f"extension-list-{i}"] = offer + final
    return seeds


# --- sessions ------------------------------------------------------------------------------------

def twice(identity: str, required: str = "", optional: str = "", **kw) -> bytes:
    """An offer repeated as the final handshake (as the real client does: SPEC_NOTES)."""
    return wire(hs(identity, required, optional, **kw), hs(identity, required, optional, **kw))


def who(step: float, name: str = "client") -> str:
    """An identity whose first character makes the target's clock step ``step`` seconds."""
    return chr(round(step * 100)) + name


def opening(profile: str, offer: Handshake, use: str | None = None) -> tuple[bytes, dict[str, int]]:
    """The offer and a final handshake that completes the negotiation in ``profile``: what the
    server required, then the offer's own (or ``use``, the extensions to use); with the
    extension ids (positions in the final handshake, from 1). Checked against a session."""
    reply = reply_to(ServerPolicy.for_profile(profile), offer)
    if use is None:
        names = offer.names()
        required = offer.required + tuple(e for e in reply.required if e.name not in names)
        optional = tuple(e for e in reply.optional if e.name in names)
    else:
        required, optional = parse_extensions(use, False), ()
    final = Handshake(offer.identity, required, optional, offer.major, offer.minor)
    data = codec.encode(offer) + codec.encode(final)
    session = MM2Session(BrokerState(), SessionConfig.for_profile(profile))
    session.receive(data, 0.0)
    assert session.phase is Phase.OPEN, f"{offer} / {final} does not open a session"
    return data, {name: i for i, name in enumerate(final.names(), 1)}


def session(profile: str, identity: str, required: str, optional: str = "", use: str | None = None,
            frames=lambda ids: (), flags: int = 0) -> bytes:
    """An opening and frames; odd ``flags`` (the offer's reserved byte) make the target start the
    session's sequence numbers at 65531 (fuzz/harnesses/mm2.py ``WRAP_BYTE``)."""
    data, ids = opening(profile, hs(identity, required, optional, flags=flags), use)
    return data + b"".join(f if isinstance(f, bytes) else codec.encode(f) for f in frames(ids))


def sends(first: int, count: int, destination: str, **kw) -> list[Message]:
    return [Message((first + i - 1) % 65535 + 1, destination, b"m%d" % i, **kw) for i in range(count)]


def document_sessions() -> dict[str, bytes]:
    d = "document"
    typed = (("price", "N12"), ("city", "TOslo"), ("name", "TJonas"), ("when", "D1413198000.0"))
    return {
        "pubsub-topic": session(d, who(0.05), "pubsub", frames=lambda ids: [
            sub("topic/news"), Message(1, "topic/news", b"hello", DOC_PROPERTIES),
            Message(2, "topic/news", b"again"), Message(3, "topic/other", b"nobody")]),
        "pubsub-queue": session(d, who(0.05), "pubsub", frames=lambda ids: [
            Message(1, "later", b"waits"), sub("jobs"), *sends(2, 3, "jobs"), sub("later")]),
        "filters": session(d, who(0.05), "pubsub", frames=lambda ids: [
            sub("topic/p", "price>=N10;city=TOslo"), sub("topic/t", "name<TJo;name>Tas;name&To;name~Tx"),
            sub("topic/d", "when<D1413198001.0;when!=D0.0"), sub("jobs", "price<N5"),
            Message(1, "topic/p", b"p", typed), Message(2, "topic/p", b"p", (("price", "N9"),)),
            Message(3, "topic/t", b"t", typed), Message(4, "topic/d", b"d", typed),
            Message(5, "jobs", b"j", (("price", "N4"),)), Message(6, "jobs", b"j", typed)]),
        "batch-ack-window": session(d, who(0), "pubsub;batch-ack:max-count=3", frames=lambda ids: [
            sub("topic/t"), *sends(1, 5, "topic/t"), ack(ids["batch-ack"], 2),
            ack(ids["batch-ack"], 5), *sends(6, 3, "topic/t"), ack(ids["batch-ack"], 8)]),
        "ack-window-1": session(d, who(0), "pubsub;ack", frames=lambda ids: [
            sub("jobs"), *sends(1, 3, "jobs"), ack(ids["ack"], 1), ack(ids["ack"], 2), ack(ids["ack"], 3)]),
        "batch-ack-count": session(d, who(0), "batch-ack:count=2", frames=lambda ids: sends(1, 5, "q")),
        "batch-ack-batch-max": session(d, who(0), "batch-ack:batch-max=2",
                                       frames=lambda ids: sends(1, 3, "q")),
        "batch-ack-max-count-colon": session(d, who(0), "batch-ack:max-count:2",
                                             frames=lambda ids: sends(1, 3, "q")),
        "batch-ack-default": session(d, who(0.05), "batch-ack", frames=lambda ids: sends(1, 12, "q")),
        "client-wrap": session(d, who(0), "batch-ack:max-count=4", frames=lambda ids: sends(65533, 6, "q")),
        # The session's MESSAGEs from 65531: acks before, at and after the wrap (cumulative).
        "server-wrap": session(d, who(0), "pubsub;batch-ack:max-count=3", flags=1, frames=lambda ids: [
            sub("topic/w"), *sends(1, 9, "topic/w"), ack(ids["batch-ack"], 65532),
            ack(ids["batch-ack"], 65535), ack(ids["batch-ack"], 2), ack(ids["batch-ack"], 65535)]),
        "server-wrap-ack": session(d, who(0.05), "pubsub;ack", flags=1, frames=lambda ids: [
            sub("jobs"), *sends(1, 7, "jobs"), *(ack(ids["ack"], n) for n in (65531, 65532, 65533, 65534,
                                                                              65535, 1, 2))]),
        "delayed-ack": session(d, who(0.33), "pubsub;batch-ack:max-count=10",
                               frames=lambda ids: [*sends(1, 2, "q"), sub("q"), ack(ids["batch-ack"], 1)]),
        "json": session(d, who(0.05), "json;pubsub", frames=lambda ids: [
            sub("topic/j"), Message(1, "topic/j", b'{"title":"Hello","n":[1,2.5,null]}'),
            Message(2, "topic/j", b"{not json"), Message(3, "topic/j", b"[" * 600 + b"]" * 600)]),
        "dotnet": session(d, who(0.05), "pubsub;dotnet", frames=lambda ids: [
            sub("topic/n"), ExtensionFrame(ids["dotnet"], DOTNET_TYPE_EXAMPLE.encode()),
            Message(1, "topic/n", b"typed"), Message(2, "topic/n", b"same type"),
            ExtensionFrame(ids["dotnet"], b"\xff")]),
        "optional-extensions": session(d, who(0), "pubsub", "batch-ack:max-count=2;x-vendor",
                                       frames=lambda ids: [sub("topic/o"), *sends(1, 3, "topic/o"),
                                                           ack(ids["batch-ack"], 1)]),
        "continued-send": session(d, who(0.05), "pubsub", frames=lambda ids: [
            sub("topic/c"), continued(Message(1, "topic/c", b"0123456789", (("n", "N1"),)), 3),
            continued(Message(2, "topic/c", b"y" * 40, large=True), 16)]),
        "slow-subscriber": session(d, who(0), "pubsub;ack", frames=lambda ids: [
            sub("topic/s"), *sends(1, 20, "topic/s"), Message(21, "topic/s", b"after the close")]),
        "queue-full": session(d, who(0), "pubsub",
                              frames=lambda ids: [*sends(1, 20, "backlog"), sub("backlog")]),
        "request-errors": session(d, who(0.05), "pubsub;batch-ack", frames=lambda ids: [
            Command("unsubscribe", (("destination", "q"),)), Command("subscribe"),
            sub("q", "price>>N1"), sub("q", "t<=Tx"), ack(ids["batch-ack"], 7), ExtensionFrame(9, b""),
            ExtensionFrame(ids["pubsub"], b"x"), ExtensionFrame(ids["batch-ack"], b"\x00\x01\x02"),
            Message(1, "", b"no destination"), sub("q"), Message(2, "q", b"fine")]),
        "subscribe-without-pubsub": session(d, who(0.05), "json", frames=lambda ids: [
            sub("q"), Message(1, "q", b"1")]),
        "client-error": session(d, who(0.05), "pubsub", frames=lambda ids: [
            sub("q"), Error("bye"), Message(1, "q", b"ignored")]),
        "bad-flags": session(d, who(0.05), "pubsub", frames=lambda ids: [b"\x40\x00", sub("q")]),
        "field-error": session(d, who(0.05), "pubsub", frames=lambda ids: [
            Command("Subscribe", (("destination", "q"),)), sub("q")]),
        "length-over-limit": session(d, who(0.05), "pubsub", frames=lambda ids: [b"\x09\xff\xff\xff\xff"]),
        "continued-interrupted": session(d, who(0.05), "pubsub", frames=lambda ids: [
            continued(Message(1, "q", b"abcdef"), 3)[:10], sub("q")]),
        "major-2": twice(who(0.05), "pubsub", major=2) + wire(sub("q")),
        "unsupported-required": twice(who(0.05), "x-nope") + wire(sub("q")),
        "final-unsupported": wire(hs(who(0.05), "pubsub"), hs(who(0.05), "pubsub;x-nope"), sub("q")),
        "final-ack-and-batch-ack": wire(hs(who(0.05), "", "ack;batch-ack"), hs(who(0.05), "ack;batch-ack")),
        "final-bad-window": twice(who(0.05), "batch-ack:max-count=0"),
        "final-window-too-large": twice(who(0.05), "batch-ack:max-count=70000"),
        "error-instead-of-final": wire(hs(who(0.05), "pubsub"), Error("no"), hs(who(0.05), "pubsub")),
    }


def sharp_sessions() -> dict[str, bytes]:
    s = "sharpmessaging"
    return {
        # SPEC_NOTES: the real client's offer, repeated as its final handshake ("ack" is id 1);
        # "hulk" makes the clock step 1.04 s, past AckExpireTime (500 ms) at every read.
        "real-client": REAL_CLIENT_OFFER + REAL_CLIENT_OFFER + wire(*sends(1, 12, "q")),
        "messages-per-ack": session(s, who(0), "ack:MessagesPerAck=2,AckExpireTime=100;pubsub",
                                    frames=lambda ids: [sub("topic/a"), *sends(1, 5, "topic/a"),
                                                        ack(ids["ack"], 1), ack(ids["ack"], 2)]),
        "no-extensions": session(s, who(0.05), "", use="ack:MessagesPerAck=3,AckExpireTime=50;dotnet",
                                 frames=lambda ids: [ExtensionFrame(ids["dotnet"], b"System.String"),
                                                     *sends(1, 4, "q")]),
        "refusal-then-offer": wire(hs(who(0.05), "x-nope")) + session(
            s, who(0.05), "pubsub", frames=lambda ids: [sub("topic/r"), Message(1, "topic/r", b"retried")]),
        "untyped-filter": session(s, who(0.05), "pubsub", frames=lambda ids: [
            sub("topic/u", "last_name=Tkalle;age>N40"),
            Message(1, "topic/u", b"k", (("last_name", "kalle"), ("age", "42"))),
            Message(2, "topic/u", b"k", (("last_name", "kalle"),))]),
        "lenient-names": session(s, who(0.05), "pubsub", frames=lambda ids: [
            Command("Subscribe", (("Destination", "q"),)), Command("x_vendor"), sub("q")]),
        "client-1-0": session(s, who(0.05), "pubsub", frames=lambda ids: [sub("q"), Message(1, "q", b"x")]),
        "bad-ack-expire": twice(who(0.05), "ack:AckExpireTime=abc"),
        "batch-ack-window": session(s, who(0), "pubsub;batch-ack:max-count=2", frames=lambda ids: [
            sub("topic/b"), *sends(1, 4, "topic/b"), ack(ids["batch-ack"], 2)]),
    }


def session_seeds() -> dict[str, bytes]:
    seeds = document_sessions()
    for name, data in seeds.items():
        assert data[-1:] != MARKER, f"{name}: ends with the profile marker"
    seeds.update({f"sharp-{name}": data + MARKER for name, data in sharp_sessions().items()})
    return seeds


def main() -> None:
    for corpus, seeds in (("micromessage2", stream_seeds()), ("micromessage2-handshake", handshake_seeds()),
                          ("micromessage2-session", session_seeds())):
        write_corpus(CORPORA / corpus, seeds)
        print(f"{len(seeds)} seeds in {CORPORA / corpus}")


if __name__ == "__main__":
    main()
