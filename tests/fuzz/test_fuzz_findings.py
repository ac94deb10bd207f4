"""Regression tests for what the atheris targets over the capture reader, the suite's WebSocket
reader and MM2's filters found (wirecheck/fuzz/fuzz_pcap.py, fuzz_websocket_reader.py, fuzz_mm2_syntax.py).
The crashing inputs are in wirecheck/fuzz/crashers/<corpus>/ and replayed by tests/fuzz/test_fuzz_corpus.py."""
import io
import struct

import pytest

from wirecheck.conformance.captures.pcapfile import CaptureFormatError, PcapReader
from wirecheck.conformance.target.websocket import FrameReader, WebSocketError
from wirecheck.reference_impl.micromessage2.filters import parse_filter

SHB = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)


def _block(btype: int, body: bytes) -> bytes:
    return struct.pack("<II", btype, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))


@pytest.mark.parametrize("body, what", [
    (b"", "interface description block of 0 bytes"),          # struct.error before the fix
    (b"\x01\x00\x00\x00",  "interface description block of 4 bytes"),
    # if_tsresol (code 9) of one byte, the block ending right after the option's header:
    # IndexError before the fix.
    (struct.pack("<HHIHH", 1, 0, 262144, 9, 1), "option 9 of 1 bytes runs past its block"),
])
def test_broken_pcapng_interface_block_is_a_capture_format_error(body, what):
    with pytest.raises(CaptureFormatError, match=what):
        list(PcapReader(io.BytesIO(SHB + _block(1, body))))


def test_pcapng_tsresol_inside_its_block_still_read():
    body = struct.pack("<HHIHHB3xHH", 1, 0, 262144, 9, 1, 9, 0, 0)
    frame = bytes(16)                                         # not IP: skipped, but read
    packet = _block(6, struct.pack("<IIIII", 0, 0, 10**9, len(frame), len(frame)) + frame)
    reader = PcapReader(io.BytesIO(SHB + _block(1, body) + packet))
    assert list(reader) == [] and reader.records == 1 and reader._interfaces == [(1, 1e-9)]


def test_reader_closes_the_file_it_opened_on_a_bad_header(tmp_path):
    path = tmp_path / "short.pcap"
    path.write_bytes(b"\xd4\xc3\xb2\xa1\x02\x00")             # magic, then a cut header
    opened = []
    real_open = open

    def tracking_open(*args, **kwargs):
        fh = real_open(*args, **kwargs)
        opened.append(fh)
        return fh

    import builtins
    builtins.open, saved = tracking_open, builtins.open
    try:
        with pytest.raises(CaptureFormatError):
            PcapReader(str(path))
    finally:
        builtins.open = saved
    assert opened and all(fh.closed for fh in opened)


def test_websocket_reader_keeps_the_frames_before_a_refused_one():
    """Frames read in the same ``feed`` as a refused frame were lost (and consumed) before the
    fix, so what the suite saw depended on how TCP split the bytes."""
    data = b"\x81\x02hi" + b"\x82\x01x" + b"\x81\x80\x00\x00\x00\x00"     # text, binary, masked
    whole = FrameReader()
    with pytest.raises(WebSocketError) as caught:
        whole.feed(data)
    assert caught.value.frames == [(1, True, b"hi"), (2, True, b"x")]
    split = FrameReader()
    assert split.feed(data[:4]) + split.feed(data[4:7]) == caught.value.frames
    with pytest.raises(WebSocketError):
        split.feed(data[7:])
    with pytest.raises(WebSocketError, match="masked"):          # sticky, nothing buffered
        whole.feed(b"\x81\x00")
    assert len(whole._buf) == 0


def test_websocket_reader_many_small_frames_in_one_feed():
    frames = FrameReader().feed(b"\x8a\x00" * 50_000)          # linear: one compaction per feed
    assert len(frames) == 50_000 and frames[0] == (0xA, True, b"")


@pytest.mark.parametrize("text", ["x=N0.000000001", "x<D0.0000001", "x>=N-0.00000000000000000001"])
def test_filter_text_reads_back(text):
    """``str(Filter)`` wrote small numbers in exponent form (``N1E-9``), which is not a
    FILTER_VALUE, so a filter's text did not read back."""
    flt = parse_filter(text)
    assert str(flt) == text
    assert parse_filter(str(flt)) == flt


def test_response_read_to_eof_after_one_with_a_length_whatever_the_reads():
    """Found by the 10-minute campaign (wirecheck/fuzz/crashers/signalr-http/response-to-eof-after-content-length):
    the shared decoder loop's "bytes the frame in hand needs" shortcut used the same attribute
    name as the HTTP reader's own count of body bytes, so after a response with Content-Length
    a later response read to the end of the stream lost its last read."""
    from wirecheck.reference_impl.signalr.http_transport import make_capture_decoder
    data = (b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"
            b"HTTP/1.1 200 OK\r\nContent-Lngth: 2\r\nh: 2\r\n\r\n{}")
    whole = make_capture_decoder(origin="server")
    expected = whole.feed(data) + whole.eof()
    assert expected[-1].body == b"{}"
    for cut in range(1, len(data)):
        d = make_capture_decoder(origin="server")
        got = d.feed(data[:cut]) + d.feed(data[cut:-1]) + d.feed(data[-1:]) + d.eof()
        assert got == expected, cut
