"""Shared helpers of the project's own tests."""
from __future__ import annotations

import random

from wirecheck.reference_impl.core.errors import FrameError


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


def tcp_conversation(port, c2s, s2c, c_cuts, s_cuts):
    """One TCP connection as packets: the SYN and SYN-ACK of 10.0.0.1:40000 (ISN 1000) to
    10.0.0.2:``port`` (ISN 9000), then ``c2s`` and ``s2c`` cut at ``c_cuts``/``s_cuts``, the two
    directions taking turns (the client's first segment first)."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    out = tcp_segments("10.0.0.1", 40000, "10.0.0.2", port, 1000, c2s, c_cuts)
    back = tcp_segments("10.0.0.2", port, "10.0.0.1", 40000, 9000, s2c, s_cuts)
    syn = [Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=40000, dport=port, flags="S", seq=1000),
           Ether() / IP(src="10.0.0.2", dst="10.0.0.1") / TCP(sport=port, dport=40000, flags="SA",
                                                              seq=9000, ack=1001)]
    return syn + [p for pair in zip(out, back) for p in pair] + out[len(back):] + back[len(out):]


def run_scratch_suite(tmp_path, source: str, protocol: str = "blipmq", strict: bool = False):
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
                             "--wirecheck-report", str(report)] + (["-o", "strict=true"] if strict else []),
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return result, (json.loads(report.read_text()) if report.exists() else None)
