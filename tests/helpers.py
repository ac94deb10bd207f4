"""Shared helpers of the project's own tests."""
from __future__ import annotations

import random

from reference_impl.core.errors import FrameError


def decode_three_ways(make_decoder, data: bytes, seed: int = 0):
    """Decode ``data`` whole, one byte at a time and in random chunks (STYLE.md 10); assert
    the three agree and return (frames, error-or-None) of the whole decode."""
    results = []
    rng = random.Random(seed)
    for chunking in ("whole", "bytewise", "random"):
        dec = make_decoder()
        frames, error = [], None
        if chunking == "whole":
            pieces = [data]
        elif chunking == "bytewise":
            pieces = [data[i:i + 1] for i in range(len(data))]
        else:
            pieces, pos = [], 0
            while pos < len(data):
                n = rng.randint(1, 17)
                pieces.append(data[pos:pos + n])
                pos += n
        try:
            for piece in pieces:
                frames.extend(dec.feed(piece))
            dec.eof()
        except FrameError as exc:
            frames.extend(exc.frames)
            error = (exc.category, exc.offset)
        results.append((frames, error))
    assert results[0] == results[1] == results[2], results
    return results[0]


def tcp_segments(src, sport, dst, dport, isn, stream, cuts):
    """``stream`` as Ether/IP/TCP packets cut at the offsets ``cuts`` (sequence numbers from
    ``isn + 1``), for the scapy layers' TCPSession tests."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    bounds = [0, *cuts, len(stream)]
    return [Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport, flags="PA",
                                                 seq=isn + 1 + a, ack=1) / stream[a:b]
            for a, b in zip(bounds, bounds[1:]) if b > a]


def run_scratch_suite(tmp_path, source: str, protocol: str = "blipmq"):
    """Run ``source`` as a one-file suite of ``protocol`` in a scratch tree (the plugin sees it
    as that protocol's suite) with a JSON result file; (the completed process, the result doc)."""
    import json
    import os
    import subprocess
    import sys
    suite = tmp_path / "conformance" / "suites" / protocol
    suite.mkdir(parents=True)
    (suite / "test_scratch.py").write_text(source)
    report = tmp_path / "scratch.json"
    result = subprocess.run([sys.executable, "-m", "pytest", str(suite / "test_scratch.py"), "-p",
                             "no:cacheprovider", "--rootdir", str(tmp_path), "-c", os.devnull,
                             "--wirecheck-report", str(report)],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return result, (json.loads(report.read_text()) if report.exists() else None)
