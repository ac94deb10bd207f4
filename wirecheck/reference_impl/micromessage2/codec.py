"""The Micromessage2 codec (micromessage2.md, "Handshake" and "Frames"; errata read as the
docs/protocols/micromessage2.md, "How the kit reads the document", says).

A connection starts with handshakes (no flags byte): the client sends two (its offer, then the
final one), the server one. ``[u8 major][u8 minor][u8 flags][u8 identity length][identity]
[u16 required length][required][u16 optional length][optional]``, lengths big-endian. During
the handshake a first byte equal to the ERROR flag (4, or 12 with LARGE_PAYLOAD) is an ERROR
frame instead: the peer refuses and disconnects. Then frames, each starting with a flags byte:

- no type bit: MESSAGE/SEND ``[u16 sequence][u8 dest length][dest][u16 properties length]
  [properties][u8|u32 payload length][payload]``; CONTINUED (16) on all but the last frame of
  a payload split into pieces (each piece a whole MESSAGE frame with the same sequence number,
  destination and properties; nothing else between them); the decoder yields the reassembled
  message;
- COMMAND (1): ``[u8|u32 length][name;key=value,...]``;
- EXTENSION (2): ``[u8 extension id][u8|u32 length][payload]``;
- ERROR (4): ``[u8|u32 length][UTF-8 text]`` (the document gives no layout; this is the real
  implementation's);
- LARGE_PAYLOAD (8): the payload length is 4 bytes instead of 1.

Errors (FrameError only): an unknown flag bit (UNKNOWN_TYPE), two type bits or CONTINUED on a
non-MESSAGE frame (BAD_VALUE), a length above the limit (LENGTH_TOO_LARGE, checked before the
body is buffered), a continued payload past ``max_message_size``, a CONTINUED piece whose
destination or properties are not UTF-8 break the stream (sticky).
A frame whose boundaries are sound but whose fields are not (bad UTF-8, bad command or property
syntax, a FIELD rule broken) raises once, after the frame is consumed: the stream goes on.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Optional, Union

from ..core.decoding import InPlaceDecoder
from ..core.decoding import decode_all as _decode_all
from ..core.errors import Category, FrameError, LengthError, PayloadError, UnknownTypeError
from ..core.limits import Limits
from . import syntax
from .constants import (CONTINUATION_SIZE, DOCUMENT_MINOR, KNOWN_BITS, MAJOR_VERSION, PROTOCOL,
                        SMALL_PAYLOAD_MAX, TYPE_BITS, FrameFlags as F)
from .syntax import Extension

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_HS_HEAD = struct.Struct(">BBBB")       # major, minor, flags, identity length
_MSG_HEAD = struct.Struct(">HB")        # sequence number, destination length
_UNKNOWN_BITS = 0xFF & ~int(KNOWN_BITS)
#: "Flag values" as plain ints for the hot paths: ``&`` and ``|`` on the IntFlag build a new
#: enum member each time (enum's ``__and__``/``__call__`` were most of the decoder's time).
_COMMAND, _EXTENSION, _ERROR = int(F.COMMAND), int(F.EXTENSION), int(F.ERROR)
_LARGE, _CONTINUED, _TYPE_BITS = int(F.LARGE_PAYLOAD), int(F.CONTINUED), int(TYPE_BITS)
#: First bytes read as an ERROR frame where a handshake is expected (so no handshake can have
#: them as its major version).
HANDSHAKE_ERROR_FLAGS = (F.ERROR, F.ERROR | F.LARGE_PAYLOAD)
_HANDSHAKE_ERROR_FIRST = frozenset(int(f) for f in HANDSHAKE_ERROR_FLAGS)


@dataclass(frozen=True, slots=True)
class MM2Limits(Limits):
    """``max_frame_size``: the largest payload length one frame may declare (the document
    splits payloads above 1 MiB, so a conforming peer never needs more; a lenient default
    leaves room); ``max_message_size``: the largest payload reassembled from CONTINUED frames."""
    max_frame_size: int = 16 * 1024 * 1024
    max_message_size: int = 64 * 1024 * 1024


_DEFAULT_LIMITS = MM2Limits()        # frozen: one instance serves every decoder


# --- frames -----------------------------------------------------------------------------------
# The frames are values: treated as immutable, but MESSAGE, COMMAND, EXTENSION and ERROR are not
# declared ``frozen``. A frozen dataclass sets each field through ``object.__setattr__``: a
# MESSAGE took ~0.50 µs to build against ~0.11 µs, a tenth of the frame decoder's fuzz target's
# time (two readings of every frame). Handshakes, a few per connection, stay frozen.

@dataclass(frozen=True, slots=True)
class Handshake:
    """"Handshake": the client's offer, the server's reply and the client's final message."""
    identity: str = ""
    required: tuple[Extension, ...] = ()
    optional: tuple[Extension, ...] = ()
    major: int = MAJOR_VERSION
    minor: int = DOCUMENT_MINOR
    flags: int = 0

    def names(self) -> tuple[str, ...]:
        """Extension names in handshake order (the final handshake's order gives the ids)."""
        return tuple(e.name for e in self.required + self.optional)


@dataclass(slots=True)
class Message:
    """MESSAGE (server -> client) or SEND (client -> server). ``properties``: (key, value)
    pairs as written (values are FILTER_VALUE text in the document's reading). ``pieces``:
    how many frames carried it (more than 1: CONTINUED frames); ``large``: LARGE_PAYLOAD."""
    sequence: int
    destination: str = ""
    payload: bytes = b""
    properties: tuple[tuple[str, str], ...] = ()
    large: bool = field(default=False, compare=False)
    pieces: int = field(default=1, compare=False)

    def property(self, key: str, default: Optional[str] = None) -> Optional[str]:
        return syntax.lookup(self.properties, key, default)


@dataclass(slots=True)
class Command:
    """COMMAND: ``name;key=value,...`` (values URL-decoded)."""
    name: str
    args: tuple[tuple[str, str], ...] = ()
    large: bool = field(default=False, compare=False)

    def arg(self, key: str, default: Optional[str] = None) -> Optional[str]:
        return syntax.lookup(self.args, key, default)


@dataclass(slots=True)
class ExtensionFrame:
    """EXTENSION: the id of an extension from the final handshake (1-based) and its payload."""
    extension_id: int
    payload: bytes = b""
    large: bool = field(default=False, compare=False)


@dataclass(slots=True)
class Error:
    """ERROR: a text for humans."""
    text: str = ""
    large: bool = field(default=False, compare=False)


Frame = Union[Handshake, Message, Command, ExtensionFrame, Error]


def _err(cls, message: str, category: Category, offset: int, part: str = "") -> FrameError:
    """``part`` (FrameError.part): what was being read, where the category does not say it:
    "identity", "extensions", "command", "error-text", "destination", "properties",
    "continued" (CONTINUED pieces), "continued-limit" (the kit's reassembly limit)."""
    return cls(message, category=category, protocol=PROTOCOL, offset=offset, part=part)


# --- encoding ---------------------------------------------------------------------------------

def _ascii(text: str, what: str) -> bytes:
    try:
        return text.encode("ascii")
    except UnicodeEncodeError:
        raise ValueError(f"{what} must be ASCII") from None


def encode_handshake(hs: Handshake) -> bytes:
    identity = _ascii(hs.identity, "the identity")
    required = _ascii(syntax.format_extensions(hs.required), "the extension list")
    optional = _ascii(syntax.format_extensions(hs.optional), "the extension list")
    if len(identity) > 0xFF or len(required) > 0xFFFF or len(optional) > 0xFFFF:
        raise ValueError("a handshake field is longer than its length prefix allows")
    return (_HS_HEAD.pack(hs.major, hs.minor, hs.flags, len(identity)) + identity
            + _U16.pack(len(required)) + required + _U16.pack(len(optional)) + optional)


def _length(n: int, large: bool) -> tuple[int, bytes]:
    if large or n > SMALL_PAYLOAD_MAX:
        return _LARGE, _U32.pack(n)
    return 0, bytes((n,))


def _message_frame(m: Message, piece: bytes, continued: bool) -> bytes:
    dest = m.destination.encode("utf-8")
    props = syntax.format_properties(m.properties).encode("utf-8")
    if len(dest) > 0xFF or len(props) > 0xFFFF:
        raise ValueError("destination or properties longer than the length prefix allows")
    flag, plen = _length(len(piece), m.large)
    flags = flag | (_CONTINUED if continued else 0)
    return (bytes((flags,)) + _MSG_HEAD.pack(m.sequence, len(dest)) + dest
            + _U16.pack(len(props)) + props + plen + piece)


def encode_message(m: Message, piece_size: int = CONTINUATION_SIZE) -> bytes:
    """One frame, or CONTINUED frames of ``piece_size`` bytes when the payload is larger."""
    if not 0 <= m.sequence <= 0xFFFF:
        raise ValueError("the sequence number is a u16")
    payload = bytes(m.payload)
    if len(payload) <= piece_size:
        return _message_frame(m, payload, False)
    pieces = [payload[i:i + piece_size] for i in range(0, len(payload), piece_size)]
    return b"".join(_message_frame(m, p, i < len(pieces) - 1) for i, p in enumerate(pieces))


def _with_payload(type_bit: int, payload: bytes, large: bool, prefix: bytes = b"") -> bytes:
    flag, plen = _length(len(payload), large)
    return bytes((type_bit | flag,)) + prefix + plen + payload


def encode(frame: Frame) -> bytes:
    if isinstance(frame, Message):
        return encode_message(frame)
    if isinstance(frame, Handshake):
        return encode_handshake(frame)
    if isinstance(frame, Command):
        text = syntax.format_command(frame.name, frame.args).encode("utf-8")
        return _with_payload(_COMMAND, text, frame.large)
    if isinstance(frame, ExtensionFrame):
        if not 0 <= frame.extension_id <= 0xFF:
            raise ValueError("an extension id is one byte")
        return _with_payload(_EXTENSION, bytes(frame.payload), frame.large, bytes((frame.extension_id,)))
    if isinstance(frame, Error):
        return _with_payload(_ERROR, frame.text.encode("utf-8"), frame.large)
    raise TypeError(f"not a Micromessage2 frame: {frame!r}")


# --- decoding ---------------------------------------------------------------------------------

class Decoder(InPlaceDecoder):
    """Incremental decoder of one direction of a connection. ``handshakes``: how many
    handshake messages come first (2 from a client, 1 from a server, 0 for frames alone).
    ``strict``: the document's FIELD rule for command names and keys (profile ``document``).

    Frames are read in place in the decoder's own buffer (core/decoding.py
    :class:`InPlaceDecoder`)."""

    protocol = PROTOCOL

    def __init__(self, limits: Optional[MM2Limits] = None, handshakes: int = 0,
                 strict: bool = True) -> None:
        self.limits = limits or _DEFAULT_LIMITS
        self._handshakes = handshakes
        self.strict = strict
        self._init_buffer()
        # Bytes the frame in hand needs before reading it again can change anything: every
        # check up to where it stopped read bytes that stay buffered, so with fewer there
        # next_frame answers None at once (reads of a byte or two cost one comparison).
        self._frame_need = 1
        self._error: Optional[FrameError] = None
        self._partial: Optional[list] = None   # seq, dest, properties text, large, data, pieces

    @property
    def handshakes(self) -> int:
        """Handshakes still expected before frames."""
        return self._handshakes

    @handshakes.setter
    def handshakes(self, count: int) -> None:
        # The session (a refused offer: the next one comes) and the fuzzers set it from outside:
        # what the bytes buffered need is read anew.
        self._handshakes = count
        self._frame_need = 1

    def eof(self) -> None:
        """The stream ended: a partial frame, or a CONTINUED message without its last piece, is
        truncated."""
        super().eof()
        if self._error is None and self._partial is not None:
            raise _err(PayloadError, f"stream ended inside a CONTINUED message ({self._partial[5]} "
                       "pieces read)", Category.TRUNCATED, self._base + self._pos, "continued")

    def _fail(self, exc: FrameError) -> FrameError:
        self._error = exc
        return exc

    def next_frame(self) -> Optional[Frame]:
        if self._error is not None:
            raise self._error
        data, p = self._data, self._pos
        if len(data) - p < self._frame_need:
            return None
        if self._handshakes > 0:
            # An ERROR frame, with a 1-byte or (LARGE_PAYLOAD, "Flag values") a 4-byte length:
            # the encoder writes texts above 255 bytes with 4 (a major version of 4 or 12 is
            # refused anyway). Found by fuzz/fuzz_mm2_session.py: a long refusal text was
            # read by the client as a handshake.
            if data[p] not in _HANDSHAKE_ERROR_FIRST:
                return self._handshake()
            self._handshakes = 0             # an ERROR instead of a handshake: the peer gives up
        frame = _READERS[data[p]](self, data, p)
        if frame is _PIECE:
            return self._read_on()
        return frame

    def _read_on(self) -> Optional[Frame]:
        """next_frame after a CONTINUED piece was buffered (so no error, no handshake left):
        the frames after it, as long as they are pieces too."""
        while True:
            data, p = self._data, self._pos
            if len(data) - p < self._frame_need:
                return None
            frame = _READERS[data[p]](self, data, p)
            if frame is not _PIECE:
                return frame

    def _take(self, n: int, skip: int = 0) -> bytes:
        """Consume ``skip + n`` bytes (the caller checked they are there); the last ``n``. The
        next frame needs its first byte again."""
        at = self._pos + skip
        self._pos = at + n
        self._frame_need = 1
        return bytes(self._data[at:at + n])

    def _wait(self, need: int) -> None:
        self._frame_need = need
        return None

    # -- handshake -----------------------------------------------------------------------------

    def _handshake(self) -> Optional[Handshake]:
        data, p = self._data, self._pos
        start = self._base + p
        available = len(data) - p
        if available < 4:
            return self._wait(4)
        major, minor, flags, idlen = _HS_HEAD.unpack_from(data, p)
        pos = 4 + idlen
        if available < pos + 2:
            return self._wait(pos + 2)
        (req_len,) = _U16.unpack_from(data, p + pos)
        pos += 2 + req_len
        if available < pos + 2:
            return self._wait(pos + 2)
        (opt_len,) = _U16.unpack_from(data, p + pos)
        total = pos + 2 + opt_len
        if available < total:
            return self._wait(total)
        raw = self._take(total)
        self._handshakes -= 1                 # consumed, whatever its fields turn out to be
        identity = self._text(raw, 4, 4 + idlen, "the identity", start, "identity", ascii=True)
        r0 = 4 + idlen + 2
        required = self._text(raw, r0, r0 + req_len, "RequiredExtensions", start, "extensions", ascii=True)
        o0 = r0 + req_len + 2
        optional = self._text(raw, o0, o0 + opt_len, "OptionalExtensions", start, "extensions", ascii=True)
        return Handshake(identity, syntax.parse_extensions(required, self.strict, start + r0),
                         syntax.parse_extensions(optional, self.strict, start + o0),
                         major, minor, flags)

    @staticmethod
    def _text(raw: bytes, a: int, b: int, what: str, base: int, part: str, ascii: bool = False) -> str:
        try:
            return raw[a:b].decode("ascii" if ascii else "utf-8")
        except UnicodeDecodeError as exc:
            raise _err(PayloadError, f"{what} is not {'ASCII' if ascii else 'UTF-8'}",
                       Category.BAD_ENCODING, base + a + exc.start, part) from None

    # -- frames --------------------------------------------------------------------------------

    def _too_large(self, n: int, at: int, start: int) -> FrameError:
        return self._fail(_err(LengthError, f"payload length {n} above the limit "
                               f"{self.limits.max_frame_size}", Category.LENGTH_TOO_LARGE, start + at))

    # The two readers below read the frame at ``p`` in ``data`` (the buffer) in place, the
    # payload length ("Flag values": 1 byte, or 4 with LARGE_PAYLOAD) included.

    def _refused(self, data: bytearray, p: int):
        """A flags byte of :data:`_BAD_FLAGS`: refused whatever follows."""
        raise self._fail(_flags_error(data[p], self._base + p))

    def _frame(self, data: bytearray, p: int):
        """A COMMAND, ERROR or EXTENSION frame. Where its payload length sits and how wide it
        is come from a table by flags byte (:data:`_LAYOUT`), and reading past the buffered
        bytes raises struct.error, as in :meth:`_message`: few tests per frame."""
        if self._partial is not None:
            raise self._fail(_err(PayloadError, "a frame came between the pieces of a CONTINUED "
                                  "message", Category.BAD_VALUE, self._base + p, "continued"))
        flags = data[p]
        at, length, kind = _LAYOUT[flags]           # after the extension id, if any
        head = at + length.size
        try:
            (n,) = length.unpack_from(data, p + at)
        except struct.error:
            return self._wait(head)
        if n > self.limits.max_frame_size:
            raise self._too_large(n, at, self._base + p)
        if len(data) - p < head + n:
            return self._wait(head + n)
        start = self._base + p
        ext_id = data[p + 1]
        payload = self._take(n, head)
        if kind == _EXTENSION:
            return ExtensionFrame(ext_id, payload, length is _U32)
        if kind == _ERROR:
            return Error(self._text(payload, 0, n, "the ERROR text", start + head, "error-text"),
                         length is _U32)
        text = self._text(payload, 0, n, "the command", start + head, "command")
        name, args = syntax.parse_command(text, self.strict, start + head)
        return Command(name, args, length is _U32)

    def _message(self, data: bytearray, p: int):
        # The three lengths read at once: reading past the buffered bytes raises struct.error,
        # and only then are the waits worked out (_message_need). With every length read, each
        # of those waits is met (each ends at or before the payload length's end).
        flags = data[p]
        length = _LENGTH[flags]                     # u8, or u32 with LARGE_PAYLOAD
        try:
            seq, dlen = _MSG_HEAD.unpack_from(data, p + 1)
            (plen,) = _U16.unpack_from(data, p + 4 + dlen)
            pos = 6 + dlen + plen
            (n,) = length.unpack_from(data, p + pos)
        except struct.error:
            return self._wait(_message_need(data, p, length.size))
        total = pos + length.size + n
        if n > self.limits.max_frame_size:
            raise self._too_large(n, pos, self._base + p)
        end = p + total
        if len(data) < end:
            return self._wait(total)
        if flags & _CONTINUED or self._partial is not None:
            return self._piece(flags, seq, dlen, plen, n, total)
        start = self._base + p
        self._pos = end                         # consumed, whatever its fields turn out to be
        self._frame_need = 1
        try:
            dest = data[p + 4:p + 4 + dlen].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _err(PayloadError, "the destination is not UTF-8", Category.BAD_ENCODING,
                       start + 4 + exc.start, "destination") from None
        try:
            props = data[p + 6 + dlen:p + pos].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _err(PayloadError, "the properties is not UTF-8", Category.BAD_ENCODING,
                       start + 6 + dlen + exc.start, "properties") from None
        return Message(seq, dest, bytes(data[end - n:end]),
                       syntax.parse_properties(props, start) if props else (), length is _U32, 1)

    def _piece(self, flags: int, seq: int, dlen: int, plen: int, n: int, total: int):
        """A MESSAGE frame that is a CONTINUED piece, or the last piece (all its bytes are
        buffered)."""
        start = self._base + self._pos
        large = bool(flags & _LARGE)
        continued = bool(flags & _CONTINUED)
        partial = self._partial
        if (len(partial[4]) if partial is not None else 0) + n > self.limits.max_message_size:
            raise self._fail(_err(LengthError, f"CONTINUED payload above the limit "
                                  f"{self.limits.max_message_size}", Category.LENGTH_TOO_LARGE, start,
                                  "continued-limit"))
        raw = self._take(total)
        try:
            dest = raw[4:4 + dlen].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._unreadable(_err(PayloadError, "the destination is not UTF-8",
                                        Category.BAD_ENCODING, start + 4 + exc.start, "destination"),
                                   True) from None
        try:
            props = raw[6 + dlen:6 + dlen + plen].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._unreadable(_err(PayloadError, "the properties is not UTF-8",
                                        Category.BAD_ENCODING, start + 6 + dlen + exc.start, "properties"),
                                   True) from None
        payload = raw[total - n:]
        if partial is not None:
            p_seq, p_dest, p_props, p_large, pieces, count = partial
            if (seq, dest, props) != (p_seq, p_dest, p_props):
                self._partial = None
                raise self._fail(_err(PayloadError, "a CONTINUED piece names another sequence number, "
                                      "destination or properties", Category.BAD_VALUE, start, "continued"))
            pieces += payload
            if continued:
                partial[5] = count + 1
                return _PIECE
            self._partial = None
            return Message(seq, dest, bytes(pieces), syntax.parse_properties(props, start) if props else (),
                           p_large, count + 1)
        # The raw properties text is kept to compare the later pieces with.
        self._partial = [seq, dest, props, large, bytearray(payload), 1]
        return _PIECE

    def _unreadable(self, exc: FrameError, piece: bool) -> FrameError:
        """A MESSAGE frame's destination or properties are not UTF-8: an error of that frame
        (the stream goes on), or with ``piece`` (a CONTINUED piece, or the last one) a broken
        stream. "MESSAGE": CONTINUED pieces make one payload. A piece whose destination or
        properties cannot be read cannot be matched with the others, and going on would yield
        the message without it (or its later pieces as a message of their own): the stream is
        broken, as for a piece naming another message. (Found by fuzz/fuzz_mm2_decoder.py.)"""
        if piece:
            self._partial = None
            self._fail(exc)
        return exc


def _flags_error(flags: int, start: int) -> FrameError:
    """Why a flags byte of :data:`_BAD_FLAGS` is refused ("Flag values"), first reason first."""
    if flags & _UNKNOWN_BITS:
        return _err(UnknownTypeError, f"unknown flag bits 0x{flags & _UNKNOWN_BITS:02x} "
                    f"in flags 0x{flags:02x}", Category.UNKNOWN_TYPE, start)
    kind = flags & _TYPE_BITS
    if kind & (kind - 1):
        return _err(PayloadError, f"flags 0x{flags:02x} name two frame types", Category.BAD_VALUE, start)
    return _err(PayloadError, "CONTINUED is defined for MESSAGE frames only", Category.BAD_VALUE, start,
                "continued")


#: Flags bytes refused whatever follows: an unknown bit, two type bits, or CONTINUED on a frame
#: that is not a MESSAGE ("Flag values"). One set lookup per frame instead of three tests.
_BAD_FLAGS = frozenset(f for f in range(256)
                       if f & _UNKNOWN_BITS or (f & _TYPE_BITS) & ((f & _TYPE_BITS) - 1)
                       or (f & _TYPE_BITS and f & _CONTINUED))
_PIECE = object()
#: Flags bytes of a MESSAGE frame that are not refused (no type bit, no unknown bit).
_MESSAGE_FLAGS = frozenset(f for f in range(256) if f not in _BAD_FLAGS and not f & _TYPE_BITS)
_U8 = struct.Struct(">B")
#: The payload length's layout by flags byte ("Flag values"): 4 bytes with LARGE_PAYLOAD.
_LENGTH = tuple(_U32 if f & _LARGE else _U8 for f in range(256))
#: Of a COMMAND, ERROR or EXTENSION frame, by flags byte: the payload length's offset (after
#: the extension id of an EXTENSION frame), its layout, the frame type bits.
_LAYOUT = tuple((2 if f & _TYPE_BITS == _EXTENSION else 1, _LENGTH[f], f & _TYPE_BITS)
                for f in range(256))
#: The reader of a frame by its flags byte: a table rather than tests, one lookup per frame.
_READERS = tuple(Decoder._refused if f in _BAD_FLAGS else
                 Decoder._message if f in _MESSAGE_FLAGS else Decoder._frame for f in range(256))


def _message_need(data: bytearray, p: int, size: int) -> int:
    """The bytes a MESSAGE frame at ``p`` needs before its payload length can be read, as far
    as the lengths buffered place it (empty destination and properties at first): each wait
    is for the bytes up to that field, so reads of a byte or two make few passes. Nothing
    about a MESSAGE can be decided before its payload length is read (the sequence number
    and the two lengths before it are never refused)."""
    available = len(data) - p
    if available < 6 + size:
        return 6 + size
    pos = 4 + data[p + 3]
    if available < pos + 2 + size:
        return pos + 2 + size
    return pos + 2 + _U16.unpack_from(data, p + pos)[0] + size


def make_decoder(limits=None, origin=None, profile=None, handshakes=None) -> Decoder:
    """Registry factory. ``origin``: who sent the bytes: ``client`` (two handshakes first),
    ``server`` (one), None (frames only, after the handshake). ``profile``: ``sharpmessaging``
    reads names leniently (see :mod:`.syntax`)."""
    if handshakes is None:
        handshakes = {"client": 2, "server": 1}.get(origin, 0)
    return Decoder(limits, handshakes, strict=profile != "sharpmessaging")


def decode_all(data: bytes, origin=None, profile=None) -> list[Frame]:
    return _decode_all(make_decoder(origin=origin, profile=profile), data)


# --- reporting --------------------------------------------------------------------------------

def _shown(data: bytes) -> dict:
    try:
        return {"payload": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"payload_hex": data.hex()}


def frame_to_dict(frame: Frame) -> dict:
    if isinstance(frame, Handshake):
        return {"type": "Handshake", "version": f"{frame.major}.{frame.minor}", "flags": frame.flags,
                "identity": frame.identity, "required": syntax.format_extensions(frame.required),
                "optional": syntax.format_extensions(frame.optional)}
    if isinstance(frame, Message):
        d = {"type": "Message", "sequence": frame.sequence, "destination": frame.destination,
             "properties": syntax.format_properties(frame.properties), "length": len(frame.payload)}
        if frame.pieces > 1:
            d["pieces"] = frame.pieces
        d.update(_shown(frame.payload[:256]))
        return d
    if isinstance(frame, Command):
        return {"type": "Command", "name": frame.name, "args": dict(frame.args)}
    if isinstance(frame, ExtensionFrame):
        return {"type": "Extension", "id": frame.extension_id, "payload_hex": frame.payload.hex()}
    if isinstance(frame, Error):
        return {"type": "Error", "text": frame.text}
    return {"type": type(frame).__name__}
