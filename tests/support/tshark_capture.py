"""Live captures of real peers on the loopback interface with Wireshark's ``dumpcap`` (``tshark``
when dumpcap is missing), installed by ``make tshark``.

``capture_loopback(ports, path)`` records TCP on ``ports`` into a classic pcap while its block
runs::

    with capture_loopback([port], tmp_path / "s.pcap") as pcap:
        ...talk to the peer...
    decode_pcap(spec, pcap, ports=[port])

Start: dumpcap prints ``Capturing on 'Loopback: lo'`` *before* it opens the packet socket, so
that line does not mean packets are being recorded. The output file is opened only after the
socket is bound and the filter attached, and its 24-byte header is written at once: the block
starts when the header is on disk.

End: dumpcap writes what it captured in batches (about every 0.75 s) and on SIGTERM drops
packets still waiting in the kernel's capture buffer, so stopping right after the last send
loses segments. Before stopping, one UDP datagram carrying a random marker is sent to a port
of our own (part of the capture filter) and the file is read until the marker appears: loopback
hands every packet to the capture socket when it is sent, so everything sent before the marker
is then in the file. The capture thus holds one extra UDP datagram; TCP readers ignore it.
Then dumpcap is stopped (SIGTERM, bounded wait, SIGKILL if needed) and the file is checked
record by record.

``tshark_available()`` says why a capture is impossible here (no binary, no permission), for a
skip reason.
"""
from __future__ import annotations

import contextlib
import functools
import os
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterable, Iterator

INTERFACE = "lo"
INSTALL_HINT = "`make tshark` installs it"
PCAP_HEADER = 24            # classic pcap file header
PCAP_RECORD_HEADER = 16
_PCAP_MAGIC = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">",
               b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">"}
_POLL = 0.01


class CaptureError(RuntimeError):
    """The capture could not start, did not stop, or left an incomplete file."""


def _tool() -> tuple[str, str] | None:
    """(name, path) of the capture program: dumpcap, else tshark, else None."""
    for name in ("dumpcap", "tshark"):
        path = shutil.which(name)
        if path:
            return name, path
    return None


@functools.lru_cache(maxsize=None)
def tshark_available() -> str | None:
    """None when loopback can be captured here; otherwise why not (a skip reason)."""
    tool = _tool()
    if tool is None:
        return f"neither dumpcap nor tshark is on PATH ({INSTALL_HINT})"
    name, path = tool
    # Listing the link types opens the interface: it needs the same rights as capturing.
    try:
        proc = subprocess.run([path, "-L", "-i", INTERFACE], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{name} -L -i {INTERFACE} failed: {exc}"
    if proc.returncode != 0:
        first = next((line.strip() for line in proc.stderr.splitlines() if line.strip()),
                     f"exit status {proc.returncode}")
        return f"{name} cannot capture on {INTERFACE}: {first}"
    return None


def _command(name: str, path: str, capture_filter: str, out: str) -> list[str]:
    fmt = ["-P"] if name == "dumpcap" else ["-F", "pcap"]       # classic pcap, not pcapng
    return [path, "-q", "-i", INTERFACE, "-f", capture_filter, *fmt, "-w", out]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return -1


def _contains(path: str, token: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return token in f.read()
    except FileNotFoundError:
        return False


def check_pcap(path: str) -> int:
    """Number of records of the classic pcap at ``path``; CaptureError unless its records end
    exactly at the end of the file."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < PCAP_HEADER or data[:4] not in _PCAP_MAGIC:
        raise CaptureError(f"{path}: not a classic pcap ({len(data)} bytes)")
    order, at, count = _PCAP_MAGIC[data[:4]], PCAP_HEADER, 0
    while at < len(data):
        if at + PCAP_RECORD_HEADER > len(data):
            raise CaptureError(f"{path}: record header cut at byte {at}")
        incl = struct.unpack_from(order + "I", data, at + 8)[0]
        at += PCAP_RECORD_HEADER + incl
        if at > len(data):
            raise CaptureError(f"{path}: record {count + 1} cut ({at - len(data)} bytes missing)")
        count += 1
    return count


@contextlib.contextmanager
def capture_loopback(ports: Iterable[int], path, timeout: float = 10.0) -> Iterator[Path]:
    """Capture TCP to or from ``ports`` on loopback into the classic pcap ``path`` while the
    block runs (yields ``path`` as a Path). Each wait (start, catching up, stop) is bounded by
    ``timeout`` seconds; CaptureError when one runs out or the file is incomplete."""
    ports = [int(p) for p in ports]
    if not ports:
        raise ValueError("capture_loopback needs at least one port")
    if (reason := tshark_available()) is not None:
        raise CaptureError(reason)
    name, exe = _tool()
    out = os.fspath(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(out)                  # a stale file would look like a started capture

    marker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    marker.bind(("127.0.0.1", 0))       # held for the whole capture: the port stays ours
    marker_port = marker.getsockname()[1]
    capture_filter = " or ".join([*(f"tcp port {p}" for p in ports),
                                  f"(udp dst port {marker_port} and dst host 127.0.0.1)"])
    stderr: list[str] = []
    proc = subprocess.Popen(_command(name, exe, capture_filter, out), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            errors="replace")
    reader = threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True,
                              name="dumpcap-stderr")
    reader.start()

    def stop() -> int | None:
        """SIGTERM, then SIGKILL; the exit status, or None if it had to be killed."""
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
            return None
        finally:
            reader.join(timeout)
            proc.stderr.close()

    def said() -> str:
        return " | ".join(line.strip() for line in stderr if line.strip()) or "(nothing on stderr)"

    try:
        deadline = time.monotonic() + timeout
        while _size(out) < PCAP_HEADER:
            if proc.poll() is not None:
                raise CaptureError(f"{name} exited with status {proc.returncode} before "
                                   f"capturing: {said()}")
            if time.monotonic() > deadline:
                raise CaptureError(f"{name} did not start capturing on {INTERFACE} within "
                                   f"{timeout} s: {said()}")
            time.sleep(_POLL)
    except BaseException:
        stop()
        marker.close()
        raise

    failed = True
    try:
        yield Path(out)
        failed = False
    finally:
        try:
            token = b"wirecheck-capture-end-" + secrets.token_hex(16).encode()
            marker.sendto(token, ("127.0.0.1", marker_port))
            deadline = time.monotonic() + timeout
            while not _contains(out, token) and proc.poll() is None \
                    and time.monotonic() < deadline:
                time.sleep(_POLL * 5)
            status = stop()
        finally:
            marker.close()
        if not failed:                  # never hide the block's own exception
            if status is None:
                raise CaptureError(f"{name} did not stop within {timeout} s after SIGTERM")
            if status != 0:
                raise CaptureError(f"{name} exited with status {status}: {said()}")
            check_pcap(out)
            if not _contains(out, token):
                raise CaptureError(f"{name} had not written everything captured within "
                                   f"{timeout} s (end marker missing): {said()}")
