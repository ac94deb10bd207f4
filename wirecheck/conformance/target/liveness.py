"""Is the target still alive? A fresh connection sends the protocol's liveness probe (the
registry's ``liveness`` slot: a PING, a PeerProperties, a Connect, a handshake offer...) and
must get at least one frame the reference decoder reads, within the timeout.

Shared by the network fuzzer (fuzz/live/fuzzer.py: crash and hang detection after every case) and
byte-file replay (conformance/captures/replay.py: does the target survive a finding?). Statuses:

- ``ok``: a frame came back;
- ``refused``: no connection (the process is gone, or stopped listening): a crash;
- ``silent``: connected, but nothing within the timeout (a stuck event loop, a deadlock): a hang;
- ``closed``: the target closed (or reset) the connection without a frame;
- ``garbage``: the answer does not decode with the reference codec (a protocol violation).
"""
from __future__ import annotations

import select
import socket
import struct
import time
from dataclasses import dataclass, field

from wirecheck.reference_impl.core.errors import FrameError

OK, REFUSED, SILENT, CLOSED, GARBAGE = "ok", "refused", "silent", "closed", "garbage"


@dataclass
class ProbeResult:
    status: str
    detail: str = ""
    frames: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == OK


def open_connection(host: str, port: int, timeout: float) -> socket.socket:
    """A connected socket, Nagle off, closed with a reset (no TIME_WAIT piling up over
    thousands of short connections). Raises OSError."""
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return sock


def probe(spec, host: str, port: int, profile: str | None = None, timeout: float = 2.0) -> ProbeResult:
    try:
        sock = open_connection(host, port, timeout)
    except OSError as exc:
        return ProbeResult(REFUSED, f"cannot connect to {host}:{port}: {exc.strerror or exc}")
    decoder = spec.make_decoder(origin="server", profile=profile)
    deadline = time.monotonic() + timeout
    try:
        sock.sendall(spec.liveness_probe(profile))
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                return ProbeResult(SILENT, f"no answer to the liveness probe within {timeout:g} s")
            data = sock.recv(65536)
            if not data:
                return ProbeResult(CLOSED, "the target closed the probe's connection without an answer")
            try:
                frames = decoder.feed(data)
            except FrameError as exc:
                return ProbeResult(GARBAGE, f"the answer to the liveness probe does not decode: {exc}")
            if frames:
                return ProbeResult(OK, "", frames)
    except OSError as exc:
        return ProbeResult(CLOSED, f"the probe's connection failed: {exc.strerror or exc}")
    finally:
        sock.close()


def settled_probe(spec, host: str, port: int, profile: str | None = None, timeout: float = 2.0,
                  pause: float = 0.2) -> ProbeResult:
    """A probe, and a second one ``pause`` s later when the first got no answer: a process that
    is dying may still accept and then reset (the second is refused), and one answer missed
    is not yet a hang."""
    result = probe(spec, host, port, profile, timeout)
    if result.status in (SILENT, CLOSED):
        time.sleep(pause)
        result = probe(spec, host, port, profile, timeout)
    return result
