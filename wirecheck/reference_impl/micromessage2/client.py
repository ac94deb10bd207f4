"""An asyncio Micromessage2 client (the client's side of "Handshake", SEND, acks, subscribe).

    client = await MM2Client.connect("127.0.0.1", 8334, required=["pubsub", "batch-ack:max-count=5"])
    await client.subscribe("topic/news", filter="price>=N10")
    await client.send("topic/news", b"hello", {"price": "N12"})
    message = await client.next_message()        # acked automatically unless auto_ack=False

The handshake: the offer, the server's reply (an ERROR instead raises :class:`HandshakeRefused`;
a reply requiring an extension the client does not implement gets an ERROR frame from the client
and raises :class:`ExtensionsNotImplemented`), then the final handshake: every required
extension of both sides, and the optional ones the client accepts (by default those of the
reply it knows). Sending respects the agreed window:
``send`` waits (bounded by ``timeout``) while ``window`` SENDs are unacked.
"""
from __future__ import annotations

import asyncio
import struct
from typing import Iterable, Optional

from ..core.client import ConnectionClosed, FramedClient
from . import codec, syntax
from .codec import Command, Error, ExtensionFrame, Handshake, Message
from .constants import ACK, BATCH_ACK, OFFICIAL_EXTENSIONS, SEQUENCE_FIRST, SUBSCRIBE
from .negotiation import ServerPolicy, agree
from .window import Inbox, Outbox

_SEQ = struct.Struct(">H")


class HandshakeRefused(Exception):
    """The server answered the handshake with an ERROR frame."""


class ExtensionsNotImplemented(HandshakeRefused):
    """The server's reply requires extensions this client does not implement: the client
    refused it with an ERROR frame and disconnects ("If the client do not support the
    extensions required by the server it MUST send an ERROR frame and disconnect")."""

    def __init__(self, names: list[str]) -> None:
        super().__init__("the server requires extension(s) this client does not implement: "
                         + ", ".join(names))
        self.names = names


def _extensions(items) -> tuple[syntax.Extension, ...]:
    if isinstance(items, str):
        return syntax.parse_extensions(items, strict=False)
    out = []
    for item in items or ():
        out.extend(syntax.parse_extensions(item, strict=False) if isinstance(item, str) else [item])
    return tuple(out)


def final_handshake(offer: Handshake, reply: Handshake, accept: Optional[Iterable[str]] = None) -> Handshake:
    """The client's final handshake ("Handshake": "the client must send it's message again, but
    with all required and optional frames that should be used"): its own required extensions,
    then those the server requires; of the reply's optional ones those named in ``accept``
    (default: every official extension). ``ack`` and ``batch-ack`` are alternatives: one
    required drops both from the optional list, else the first one suggested is kept."""
    known = set(OFFICIAL_EXTENSIONS) if accept is None else set(accept)
    required = list(offer.required)
    final_required = required + [e for e in reply.required if e.name not in {x.name for x in required}]
    taken = {e.name for e in final_required}
    final_optional = [e for e in reply.optional if e.name in known and e.name not in taken]
    if any(e.name in (ACK, BATCH_ACK) for e in final_required):
        final_optional = [e for e in final_optional if e.name not in (ACK, BATCH_ACK)]
    elif sum(e.name in (ACK, BATCH_ACK) for e in final_optional) > 1:
        first = next(e for e in final_optional if e.name in (ACK, BATCH_ACK))
        final_optional = [e for e in final_optional if e.name not in (ACK, BATCH_ACK) or e is first]
    return Handshake(offer.identity, tuple(final_required), tuple(final_optional),
                     minor=min(offer.minor, reply.minor))


class MM2Client(FramedClient):
    #: The extensions this client implements: a reply requiring any other is refused.
    implemented = frozenset(OFFICIAL_EXTENSIONS)

    def __init__(self, reader, writer, timeout: float, auto_ack: bool, profile: str) -> None:
        super().__init__(reader, writer, codec.make_decoder(origin="server", profile=profile), timeout)
        self.auto_ack = auto_ack
        self.profile = profile
        self.reply: Optional[asyncio.Future] = asyncio.get_running_loop().create_future()
        self.agreement = None
        self.messages: asyncio.Queue = asyncio.Queue()
        self.errors: list[str] = []
        self.outbox = Outbox(None)
        self.inbox = Inbox(None)
        self._room = asyncio.Event()
        self._room.set()
        self.dotnet_type: Optional[str] = None

    @classmethod
    async def connect(cls, host: str, port: int, *, identity: str = "wirecheck-client",
                      required: Iterable = (), optional: Iterable = (), accept: Optional[Iterable[str]] = None,
                      minor: int = 0, timeout: float = 10.0, auto_ack: bool = True,
                      profile: str = "document", first_sequence: int = SEQUENCE_FIRST) -> "MM2Client":
        """``first_sequence``: the sequence number of the first SEND (1; a test starts near
        65535 to reach the wrap quickly)."""
        reader, writer = await cls.open_stream(host, port, timeout)
        client = cls(reader, writer, timeout, auto_ack, profile)
        try:
            await client._handshake(identity, _extensions(required), _extensions(optional),
                                    accept, minor, first_sequence)
        except BaseException:
            await client.close()
            raise
        return client

    async def _handshake(self, identity, required, optional, accept, minor, first_sequence) -> None:
        offer = Handshake(identity, required, optional, minor=minor)
        self.write(codec.encode(offer))
        reply = await asyncio.wait_for(self.reply, self.timeout)
        if isinstance(reply, Error):
            raise HandshakeRefused(reply.text)
        unknown = [e.name for e in reply.required if e.name not in self.implemented]
        if unknown:
            # MM2-HS-010: refuse with an ERROR frame; connect() then closes the connection
            self.write(codec.encode(Error(f"required extension(s) not implemented: {', '.join(unknown)}")))
            await asyncio.wait_for(self.writer.drain(), self.timeout)
            raise ExtensionsNotImplemented(unknown)
        final = final_handshake(offer, reply, accept)
        policy = ServerPolicy.for_profile(self.profile, supported=tuple({e.name for e in final.required + final.optional}))
        self.agreement = agree(policy, offer, reply, final)
        self.outbox = Outbox(self.agreement.window, first_sequence)
        self.inbox = Inbox(self.agreement.window)
        self.write(codec.encode(final))
        await self.writer.drain()

    # -- frames --------------------------------------------------------------------------------

    def on_frame(self, frame) -> None:
        if isinstance(frame, Handshake):
            if not self.reply.done():
                self.reply.set_result(frame)
            return
        if isinstance(frame, Error):
            if not self.reply.done():
                self.reply.set_result(frame)
            self.errors.append(frame.text)
            return
        a = self.agreement
        if isinstance(frame, ExtensionFrame) and a is not None:
            name = a.by_id.get(frame.extension_id)
            if name in (ACK, BATCH_ACK) and len(frame.payload) == 2:
                try:
                    self.outbox.ack(_SEQ.unpack(frame.payload)[0])
                except ValueError as exc:
                    self.errors.append(f"server acked what was not sent: {exc}")
                if self.outbox.has_room():
                    self._room.set()
            elif name == "dotnet":
                self.dotnet_type = frame.payload.decode("utf-8", "replace")
            return
        if isinstance(frame, Message):
            self.messages.put_nowait((frame, self.dotnet_type))
            if a is not None and a.window is not None and self.auto_ack:
                if self.inbox.received(frame.sequence):
                    self.ack(self.inbox.take_ack())

    def on_closed(self, exc: ConnectionClosed) -> None:
        if self.reply is not None and not self.reply.done():
            self.reply.set_exception(exc)
        self._room.set()

    # -- requests ------------------------------------------------------------------------------

    def ack(self, sequence: int) -> None:
        if self.agreement is None or self.agreement.ack_id is None:
            raise RuntimeError("no ack extension was agreed")
        self.write(codec.encode(ExtensionFrame(self.agreement.ack_id, _SEQ.pack(sequence))))

    async def subscribe(self, destination: str, filter: Optional[str] = None) -> None:
        args = [("destination", destination)] + ([("filter", filter)] if filter is not None else [])
        self.write(codec.encode(Command(SUBSCRIBE, tuple(args))))
        await self.writer.drain()

    async def send(self, destination: str, payload: bytes, properties=(), dotnet_type: Optional[str] = None) -> int:
        """SEND one message; waits while the agreed window is full. Its sequence number."""
        while not self.outbox.has_room():
            self._room.clear()
            await asyncio.wait_for(self._room.wait(), self.timeout)
            if self._closed is not None:
                raise ConnectionClosed(str(self._closed))
        if dotnet_type is not None:
            self.write(codec.encode(ExtensionFrame(self.agreement.id_of("dotnet"), dotnet_type.encode())))
        props = tuple(properties.items()) if isinstance(properties, dict) else tuple(properties)
        seq = self.outbox.send(destination)
        self.write(codec.encode(Message(seq, destination, bytes(payload), props)))
        await self.writer.drain()
        return seq

    async def next_message(self, timeout: Optional[float] = None) -> Message:
        message, _type = await asyncio.wait_for(self.messages.get(), timeout or self.timeout)
        return message
