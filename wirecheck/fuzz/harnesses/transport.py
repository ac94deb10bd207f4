"""Shared bodies of the atheris targets over SignalR's transports (STYLE.md point 8): the capture
decoder of HTTP + WebSocket (reference_impl/signalr/http_transport.py) and the suite's own
WebSocket frame reader (conformance/target/websocket.py).

A seed is one direction of one TCP connection as captured (fuzz/corpora/signalr-http/): a
client's negotiate request or ``GET ... Upgrade: websocket`` then masked frames, or a server's
responses, ``101`` then frames; a few are the raw transport (the capture decoder sniffs which).
The first bytes choose the read sizes (fuzz/harnesses/base.py), all of them are fed.

Documented errors: :class:`FrameError` from the capture decoder (a transport error is sticky, a
bad hub message is not, and decoding goes on after it), :class:`WebSocketError` from the frame
reader. Anything else propagates, and the fuzzer reports it as a crash.
"""
from __future__ import annotations

import json

from wirecheck.conformance.target import websocket
from wirecheck.fuzz.harnesses.base import read_sizes
from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.signalr import http_transport
from wirecheck.reference_impl.signalr.http_transport import (MAX_CHUNK_LINE, SNIFF_LIMIT, CaptureDecoder,
                                                   TransportLimits)

#: Small limits, so that inputs of a few KiB reach every LENGTH_TOO_LARGE and the bounds on
#: what the decoder holds between reads can be checked (below).
SMALL = TransportLimits(max_frame_size=300, max_header_block=200, max_header_fields=8,
                        max_body=400, max_message=600)
#: WebSocket frame head: 2 bytes, a 64-bit length, a masking key.
_WS_HEAD = 14
#: Hub framing around a record: a 5-byte VarInt or a separator.
_HUB_FRAMING = 5


def _pieces(data: bytes, sizes) -> list[bytes]:
    out, pos = [], 0
    for size in sizes:
        out.append(data[pos:pos + size])
        pos += size
    return out


def _bound(decoder: CaptureDecoder, limits: TransportLimits) -> int:
    """Most bytes ``decoder`` may hold between two reads (STYLE 7: lengths are checked before
    the bytes are waited for): one unfinished item of the state it is in, the hub's record."""
    hub = limits.max_frame_size + _HUB_FRAMING
    if decoder.transport is None:
        return SNIFF_LIMIT
    if decoder.transport == "raw":
        return hub
    if decoder.decoder.websocket:
        return _WS_HEAD + limits.max_message + hub
    head = max(limits.max_header_block, MAX_CHUNK_LINE)
    return head + 2 * limits.max_body + 2


def capture_events(pieces, *, origin=None, profile=None, limits=None) -> tuple[list, CaptureDecoder]:
    """Everything a fresh capture decoder makes of ``pieces`` then the end of the stream, in
    order: frames and hub messages, and each error as ``("error", category, offset)``. A
    transport error ends the list; after a bad hub message the decoding goes on (the records
    around it are intact). With ``limits``, what the decoder holds is checked after each read."""
    decoder = CaptureDecoder(limits, origin=origin, profile=profile)
    out: list = []

    def run(call, piece=None) -> bool:
        while True:
            try:
                out.extend(call(piece) if piece is not None else call())
                return True
            except FrameError as exc:
                out.extend(exc.frames)
                out.append(("error", exc.category, exc.offset))
                if decoder.broken or call is decoder.eof:
                    return False
                call, piece = decoder.feed, b""     # what the error held back comes next

    for piece in pieces:
        if not run(decoder.feed, piece):
            return out, decoder
        if limits is not None:
            bound = _bound(decoder, limits)
            assert decoder.buffered <= bound, f"{decoder.buffered} bytes held (bound {bound})"
    run(decoder.eof)
    return out, decoder


def _same(whole: list, other: list, how: str) -> None:
    # repr first: a MessagePack NaN decodes twice to two floats that are not equal.
    if repr(whole) != repr(other) and whole != other:
        first = next((i for i, (a, b) in enumerate(zip(whole, other)) if a != b),
                     min(len(whole), len(other)))
        raise AssertionError(f"{how} decoding disagrees with whole decoding from item #{first}: "
                             f"{other[first:first + 2]!r} vs {whole[first:first + 2]!r}")


def http_one_input(data: bytes) -> None:
    """``data`` as one captured direction: decoded whole and in reads chosen by its first bytes
    (as client, server or either, hub profile v1 or draft, default and small limits), every way
    giving the same frames, hub messages and errors; an HTTP stream read with its direction
    given decodes as with the direction guessed; every item has a JSON view."""
    pieces = _pieces(data, read_sizes(data))
    for origin, profile, limits in ((None, None, None), ("client", None, None),
                                    ("server", None, None), (None, "draft", None), (None, None, SMALL)):
        whole, decoder = capture_events([data], origin=origin, profile=profile, limits=limits)
        chunked, _ = capture_events(pieces, origin=origin, profile=profile, limits=limits)
        _same(whole, chunked, f"chunked ({origin}, {profile}, {'small' if limits else 'default'} limits)")
        if origin is None and profile is None and limits is None:
            for item in whole:
                if not isinstance(item, tuple):
                    json.dumps(http_transport.frame_to_dict(item))
            direction = getattr(decoder.decoder, "direction", None)
            if decoder.transport == "http" and direction is not None:
                told, _ = capture_events([data], origin=direction)
                _same(whole, told, f"with origin {direction!r} given,")


# --- the suite's WebSocket frame reader -----------------------------------------------------------

def reader_events(pieces) -> list:
    """The (opcode, fin, payload) frames of a fresh :class:`websocket.FrameReader`, then
    ``("error", message)`` if it refused the stream."""
    reader, out = websocket.FrameReader(), []
    for piece in pieces:
        try:
            out.extend(reader.feed(piece))
        except websocket.WebSocketError as exc:
            out.extend(exc.frames)
            out.append(("error", str(exc)))
            return out
    return out


def _server_frame(opcode: int, fin: bool, payload: bytes) -> bytes:
    """An unmasked frame (a server's, RFC 6455 5.2), minimal length encoding."""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    if n < 126:
        head += bytes([n])
    elif n < 1 << 16:
        head += bytes([126]) + n.to_bytes(2, "big")
    else:
        head += bytes([127]) + n.to_bytes(8, "big")
    return head + payload


def websocket_reader_one_input(data: bytes) -> None:
    """``data`` from a server after its ``101`` (a seed's HTTP head, if any, is skipped): the
    suite's frame reader gives the same frames and error whole and in reads chosen by the first
    bytes; the frames re-encoded (minimal lengths, no RSV bits) read back the same."""
    end = data.find(b"\r\n\r\n")
    body = data[end + 4:] if data.startswith(b"HTTP/") and end >= 0 else data
    whole = reader_events([body])
    _same(whole, reader_events(_pieces(body, read_sizes(data))), "chunked")
    frames = [item for item in whole if item[0] != "error"]
    for opcode, fin, payload in frames:
        assert 0 <= opcode <= 0xF and isinstance(payload, bytes), (opcode, fin, payload)
    wire = b"".join(_server_frame(*item) for item in frames)
    assert reader_events([wire]) == frames, "the frames do not survive encode/read"
