"""Micromessage2: the handshakes and frames a server may send that a client must cope with
(conformance/clients/scripted). A connection starts with handshakes (two from the client, its offer and
its final one; one from the server, or an ERROR frame instead), then frames that each start
with a flags byte ("Handshake", "Frames"); cut with :class:`MM2Splitter`, built and read with
the reference codec.

- ``error-response``: the client's offer is refused: an ERROR frame naming one of the
  extensions it requires as not supported (option ``extension``; default the first it
  requires), then the server ends the connection. "If the server doesn't implement the
  extensions requested by the client it must send and ERROR frame and disconnect directly
  after" (MM2-HS-005/-006); which extensions a server implements is its own business. The offer
  is recorded as the client's but held back from the broker. An offer that requires nothing
  cannot be refused on those grounds and is passed on.
- ``unknown-fields``: the server's reply suggests an optional vendor extension no client knows
  (``x-wirecheck-unknown:mode=ignore``; "Vendor specific extensions may exist, they must
  however start with x-"; "Server: ... I suggest Y like you but also Z"), and every extension
  it names carries a property no client knows (``x-wirecheck-unknown=ignore``; "Each extension
  can contain a name and properties (key/value)"). A client picks the optional extensions it
  wants ("we'll use the optional Y and Z") and reads the properties it knows. A client that
  accepts the unknown extension claims to implement what nobody implements: the broker then
  refuses its final handshake (an extension it does not support, MM2-HS-007).
- ``required-extension``: the server's reply requires a vendor extension no client implements
  (``x-wirecheck-required``; "Server: I support A, B, but I also require C"). "If the client do
  not support the extensions required by the server it MUST send an ERROR frame and
  disconnect" (MM2-HS-010): the client's ERROR goes to the broker, which ends the connection.
  A final handshake without it breaks MM2-HS-008 (the observer reports it) and one with it
  claims what the client cannot implement: either way the scenario refuses it with an ERROR
  frame and ends the connection, as the server must (MM2-HS-007/-015); the final handshake is
  held back from the broker, which never required anything.
- ``large-payload``: every server frame with a payload length (MESSAGE, EXTENSION such as the
  acks, ERROR) is written with the 4-byte length form (LARGE_PAYLOAD, 8), small ones included:
  "8 = LARGE_PAYLOAD. The length header will be 4 bytes instead of 1" (MM2-FRAME-002: a peer
  accepts it on any size).
- ``continued``: every MESSAGE the server pushes is cut into ``pieces`` frames (default 3; a
  payload of fewer bytes into one piece per byte; an empty one is left whole), CONTINUED (16)
  on all but the last, each a whole MESSAGE frame with the same sequence number, destination
  and properties ("16 = Continued: There are more frames for the same payload";
  MM2-FRAME-004). A piece the broker already cut (payloads above 1 MiB, MM2-FRAME-006) is cut
  further, keeping its own CONTINUED bit on its last part.

Not offered, because Micromessage2 has no such thing:
- ``heartbeat``/ping, ``metadata-update``, ``consumer-update``: the document defines no such
  frames or commands ("Frames", "COMMAND"; the only command it names is SUBSCRIBE).
- ``max-size`` as a scenario of its own: the largest frame the document knows is a MESSAGE
  piece of 1 MiB ("Multiple frames should be used if the payload in a MESSAGE frame is larger
  than 1 MiB", MM2-FRAME-006), and the broker itself pushes those for any larger payload a
  client sends; a scenario could only make one by inventing a message, whose sequence number
  would shift every later one and the acks with them. What a scenario can vary, the length
  form and the cut into pieces, are ``large-payload`` and ``continued``.
- an error answer to a valid request after the handshake: commands and SENDs have no answer in
  the document ("COMMAND": the payload only; acks are an extension), so there is no answer to
  turn into an error; ``error-response`` refuses the one request that has one, the offer.
"""
from __future__ import annotations

import dataclasses
import struct
from collections import deque

from wirecheck.conformance.clients.scripted import FrameShaper, Splitter
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.micromessage2 import codec
from wirecheck.reference_impl.micromessage2.codec import Error, ExtensionFrame, Handshake, Message
from wirecheck.reference_impl.micromessage2.constants import KNOWN_BITS, TYPE_BITS, FrameFlags as F
from wirecheck.reference_impl.micromessage2.syntax import Extension

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_HANDSHAKE_ERROR_FIRST = frozenset(int(f) for f in codec.HANDSHAKE_ERROR_FLAGS)
#: What a cut frame was: a handshake, an ERROR frame where a handshake was due (a refusal), or
#: a frame.
HANDSHAKE, REFUSAL, FRAME = "handshake", "refusal", "frame"
UNKNOWN_PROPERTY = ("x-wirecheck-unknown", "ignore")
UNKNOWN_EXTENSION = Extension("x-wirecheck-unknown", (("mode", "ignore"),))
REQUIRED_EXTENSION = Extension("x-wirecheck-required")


def handshake_size(buf: bytearray) -> int | None:
    """Bytes of the handshake at the start of ``buf``, or None when not yet known."""
    if len(buf) < 4:
        return None
    pos = 4 + buf[3]                                  # major, minor, flags, identity
    for _ in range(2):                                # RequiredExtensions, OptionalExtensions
        if len(buf) < pos + 2:
            return None
        pos += 2 + _U16.unpack_from(buf, pos)[0]
    return pos


def length_at(frame: bytes) -> int | None:
    """Where the payload length of the frame starting ``frame`` sits (its width is 4 with
    LARGE_PAYLOAD, else 1), or None when not yet known; ValueError for a flags byte the
    document does not allow ("Flag values")."""
    flags = frame[0]
    kind = flags & int(TYPE_BITS)
    if flags & ~int(KNOWN_BITS) & 0xFF or kind & (kind - 1) or (kind and flags & int(F.CONTINUED)):
        raise ValueError(f"flags 0x{flags:02x}")
    if kind == int(F.EXTENSION):
        return 2                                      # flags, extension id
    if kind:
        return 1                                      # COMMAND, ERROR: flags
    if len(frame) < 4:                                # MESSAGE: flags, sequence, dest length
        return None
    pos = 4 + frame[3]
    if len(frame) < pos + 2:
        return None
    return pos + 2 + _U16.unpack_from(frame, pos)[0]  # properties length, properties


def frame_size(buf: bytearray) -> int | None:
    at = length_at(buf)
    if at is None:
        return None
    width = 4 if buf[0] & int(F.LARGE_PAYLOAD) else 1
    if len(buf) < at + width:
        return None
    n = _U32.unpack_from(buf, at)[0] if width == 4 else buf[at]
    return at + width + n


class MM2Splitter(Splitter):
    """Handshakes first (``handshakes`` of them), then frames; what each cut frame was goes in
    :attr:`kinds`, in order, for the shaper."""

    def __init__(self, handshakes: int) -> None:
        super().__init__()
        self.handshakes = handshakes
        self.kinds: deque[str] = deque()

    def size(self, buf: bytearray) -> int | None:
        handshake = self.handshakes > 0 and buf[0] not in _HANDSHAKE_ERROR_FIRST
        n = handshake_size(buf) if handshake else frame_size(buf)
        if n is not None and len(buf) >= n:           # whole: the splitter cuts it now
            if handshake:
                self.handshakes -= 1
                self.kinds.append(HANDSHAKE)
            elif self.handshakes > 0:                 # an ERROR instead of a handshake
                self.handshakes = 0
                self.kinds.append(REFUSAL)
            else:
                self.kinds.append(FRAME)
        return n


def parse(frame: bytes, kind: str):
    """The typed frame of one whole frame's bytes (None for a CONTINUED piece, or when the
    codec does not read it). Names are read leniently (both profiles' replies)."""
    decoder = codec.Decoder(handshakes=1 if kind == HANDSHAKE else 0, strict=False)
    try:
        out = decoder.feed(frame)
    except FrameError:
        return None
    return out[0] if len(out) == 1 else None


class _MM2Shaper(FrameShaper):
    """Knows which handshake or frame each one is; can refuse (an ERROR frame, then the
    server's close) and then holds whatever the client still sends."""

    def __init__(self, relay, options: dict) -> None:
        super().__init__(relay, options)
        self.refused = False
        self.client_handshakes = 0
        self.server_handshakes = 0

    def make_splitter(self, direction: str) -> MM2Splitter:
        return MM2Splitter(2 if direction == "c2s" else 1)

    def server_frame(self, frame: bytes) -> None:
        kind = self.down.kinds.popleft()
        if kind == REFUSAL:
            # the offer refused: a server that keeps the connection (sharpmessaging) reads a
            # new offer, and answers it with a new handshake
            self.up.handshakes, self.down.handshakes = 2, 1
        self.on_server(frame, kind)
        self.server_handshakes += kind == HANDSHAKE

    def client_data(self, data: bytes) -> None:
        if self.refused:
            # after the server's close the broker sees nothing more (whole frames or not)
            held = self.up.rest() + data
            if held:
                self.hold(held)
            return
        super().client_data(data)

    def client_eof(self) -> None:
        if self.refused:
            self.client_data(b"")
            self.relay.deliver_eof("c2s")
            return
        super().client_eof()

    def client_frame(self, frame: bytes) -> None:
        kind = self.up.kinds.popleft()
        if self.refused:
            self.hold(frame)                  # after the server's close: the broker never sees it
            return
        self.on_client(frame, kind)
        self.client_handshakes += kind == HANDSHAKE

    def on_server(self, frame: bytes, kind: str) -> None:
        self.send(frame)

    def on_client(self, frame: bytes, kind: str) -> None:
        self.pass_on(frame)

    def refuse(self, text: str) -> None:
        """An ERROR frame, then the server ends the connection ("send an ERROR frame and
        disconnect directly after")."""
        self.note(f"ERROR {text!r}, then the server's close")
        self.send(codec.encode(Error(text)))
        self.refused = True
        self.ended = True                     # the broker's later bytes are dropped
        self.cancel()
        self.relay.server_close()

    def eof(self) -> None:
        if not self.refused:                  # after our close, the broker's end says nothing
            super().eof()


class ErrorResponse(_MM2Shaper):
    name = "error-response"
    client_outcome = "error"
    summary = "the client's offer refused (ERROR: a required extension not supported), then the close"

    def on_client(self, frame: bytes, kind: str) -> None:
        if kind == HANDSHAKE and self.client_handshakes == 0 and not self.log:
            offer = parse(frame, kind)
            names = [e.name for e in offer.required] if isinstance(offer, Handshake) else []
            wanted = self.options.get("extension")
            target = (wanted if wanted in names else None) if wanted else (names[0] if names else None)
            if target is not None:
                self.hold(frame)
                # the reference broker's wording (reference_impl/micromessage2/negotiation.py)
                self.refuse(f"required extension(s) not supported: {target}")
                return
            self.note("the offer requires nothing this scenario refuses: passed on", acted=False)
        self.pass_on(frame)


def _with_unknown_property(ext: Extension) -> Extension:
    return Extension(ext.name, ext.properties + (UNKNOWN_PROPERTY,))


class UnknownFields(_MM2Shaper):
    name = "unknown-fields"
    client_outcome = "success"
    summary = "the reply suggests an unknown vendor extension; its extensions carry an unknown property"

    def on_server(self, frame: bytes, kind: str) -> None:
        reply = parse(frame, kind) if kind == HANDSHAKE else None
        if isinstance(reply, Handshake):
            reply = dataclasses.replace(
                reply, required=tuple(map(_with_unknown_property, reply.required)),
                optional=tuple(map(_with_unknown_property, reply.optional)) + (UNKNOWN_EXTENSION,))
            self.note(f"reply {codec.frame_to_dict(reply)}")
            frame = codec.encode(reply)
        self.send(frame)


class RequiredExtension(_MM2Shaper):
    name = "required-extension"
    client_outcome = "error"
    summary = "the reply requires a vendor extension no client implements; the client must refuse"

    def on_server(self, frame: bytes, kind: str) -> None:
        reply = parse(frame, kind) if kind == HANDSHAKE and self.server_handshakes == 0 else None
        if isinstance(reply, Handshake):
            reply = dataclasses.replace(reply, required=reply.required + (REQUIRED_EXTENSION,))
            self.note(f"reply requires {REQUIRED_EXTENSION.name}")
            frame = codec.encode(reply)
        self.send(frame)

    def on_client(self, frame: bytes, kind: str) -> None:
        if kind == HANDSHAKE and self.client_handshakes == 1 and self.log:
            final = parse(frame, kind)
            self.hold(frame)                  # the broker never required it: it must not judge
            if isinstance(final, Handshake) and REQUIRED_EXTENSION.name in final.names():
                self.refuse(f"{REQUIRED_EXTENSION.name} is required by this server and implemented "
                            "by no client (wirecheck scenario required-extension)")
            else:
                self.refuse(f"the final handshake lacks the required extension(s): {REQUIRED_EXTENSION.name}")
            return
        if kind == REFUSAL and self.log:
            self.note("the client refused the reply with an ERROR frame", acted=False)
        self.pass_on(frame)


class LargePayload(_MM2Shaper):
    name = "large-payload"
    client_outcome = "success"
    summary = "every server frame written with the 4-byte payload length (LARGE_PAYLOAD)"

    def on_server(self, frame: bytes, kind: str) -> None:
        if kind != HANDSHAKE and not frame[0] & int(F.LARGE_PAYLOAD):
            typed = parse(frame, FRAME)
            if isinstance(typed, (Message, ExtensionFrame, Error, codec.Command)):
                large = codec.encode(dataclasses.replace(typed, large=True))
                at = length_at(frame)
                # the same frame but for the flag and the length's width
                if large[1:at] == frame[1:at] and large[at + 4:] == frame[at + 1:]:
                    self.note(f"{type(typed).__name__} with a 4-byte length")
                    frame = large
        self.send(frame)


class Continued(_MM2Shaper):
    name = "continued"
    client_outcome = "success"
    summary = "every MESSAGE cut into 3 CONTINUED pieces"

    def on_server(self, frame: bytes, kind: str) -> None:
        if kind == FRAME and not frame[0] & int(TYPE_BITS):
            frame = self._cut(frame)
        self.send(frame)

    def _cut(self, frame: bytes) -> bytes:
        continued = frame[0] & int(F.CONTINUED)
        whole = parse(bytes((frame[0] & ~int(F.CONTINUED),)) + frame[1:], FRAME)
        pieces = max(1, int(self.options.get("pieces", 3)))
        if not isinstance(whole, Message) or len(whole.payload) < 2 or pieces == 1:
            return frame
        size = -(-len(whole.payload) // pieces)
        out = codec.encode_message(dataclasses.replace(whole, large=bool(frame[0] & int(F.LARGE_PAYLOAD))),
                                   piece_size=size)
        splitter = MM2Splitter(0)
        parts = splitter.feed(out)
        at = length_at(frame)
        if splitter.buf or any(p[1:at] != frame[1:at] for p in parts):
            return frame                      # not the same sequence, destination, properties
        if continued:                         # a piece of a longer payload: more comes after
            parts[-1] = bytes((parts[-1][0] | int(F.CONTINUED),)) + parts[-1][1:]
        self.note(f"MESSAGE {whole.sequence} in {len(parts)} pieces")
        return b"".join(parts)


SCENARIOS = {cls.name: cls for cls in (ErrorResponse, UnknownFields, RequiredExtension,
                                       LargePayload, Continued)}
