"""``wirecheck replay PCAP --target HOST:PORT``: the client side of every captured connection,
sent again to a target over fresh connections, and the target's answers compared frame by frame
with the recorded ones.

How a capture is replayed
-------------------------
The capture is read segment by segment (conformance/pcapfile.py) and reassembled
(conformance/tcpflows.py) as it streams; nothing but the connections in progress is held, so
a capture of any size replays in bounded memory. The replay walks the recorded events in
capture order, across all connections at once:

- a new connection: a new connection to the target;
- client bytes: sent to the target (with ``--rechunk``, cut into random pieces, seeded);
- a server frame: the target's next frame on that connection is read (with a timeout: the
  larger of ``--timeout`` and 1.5 times the recorded wait plus a second) and compared with it;
- a FIN or RST of the client: the same to the target; of the server: the target must close too.

Walking in capture order keeps what one connection caused on another (a publish on one and the
delivery on a subscriber's): the delivery is awaited only after the publish was sent.

Comparison
----------
Frames are compared as the reference codec decodes them (``frame_to_dict``), after the
protocol's rules (conformance/replay_rules.py) have masked what may differ between two correct
servers (connection ids, timestamps, server versions, ...) and dropped frames that timers send
(heartbeats, pings). A frame the recorded server sent and the target did not, a different
frame, an extra frame, a close where none was recorded or none where one was: each is a
mismatch, with a diff of the fields. A connection whose frames all match is EQUIVALENT (PASS);
one with a mismatch FAILs; one the capture lacks bytes of is reported as incomplete (SKIPPED)
unless it already mismatched.

Rewriting
---------
Some client bytes cannot be sent again as recorded: credentials the target does not have, and
names that must be new (a stream that already exists from an earlier replay). The protocol's
rules rewrite such fields in decoded client frames, which are then encoded again; the answers
are mapped back before comparison. Where the recorded client bytes do not survive a decode and
encode unchanged (a malformed frame on an error path), that connection's bytes go unchanged.

Byte files
----------
A file that is not a capture (a fuzzer's finding) is one client stream: it is sent whole over
one connection, the answers are decoded and listed (bytes the reference codec cannot read are
a FAIL), and the target must then answer the protocol's liveness probe on a new connection
(conformance/liveness.py): refused (a crash) or no answer (a hang) is a FAIL. A network
fuzzer's finding ``X.bin`` has ``X.json`` beside it: the bytes go in the writes it lists, and
without ``--protocol`` the protocol and profile are taken from there.
"""
from __future__ import annotations

import json
import os
import random
import selectors
import socket
import struct
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from conformance import verdicts
from conformance.pcapdecode import capture_ports
from conformance.pcapfile import CaptureFormatError, PcapReader
from conformance.replay_rules import rules_for
from conformance.target import Transcript
from conformance.tcpflows import Connection, Stream, TcpReassembler
from reference_impl.core.errors import FrameError

EXIT_OK, EXIT_MISMATCH, EXIT_HARNESS = 0, 1, 2
#: Mismatches listed per connection; the rest are counted.
MAX_MISMATCHES = 20
#: Transcript entries kept per connection.
MAX_TRANSCRIPT = 400
#: Frames the target may send ahead of the replay on one connection before it is a flood.
MAX_AHEAD = 100_000
#: After a connection's last recorded event: how long extra frames from the target are awaited.
GRACE = 0.05
_READ = 256 * 1024


@dataclass
class ReplayOptions:
    target: tuple[str, int]
    ports: tuple[int, ...] = ()
    timeout: float = 5.0
    rechunk: bool = False
    seed: int = 0
    profile: str | None = None
    credentials: tuple[str, str] | None = None
    unique_names: bool = True
    #: Keep the capture's pacing of client events (a client that waited for a server's timer
    #: waits as long again), each wait at most ``max_gap`` seconds; False: as fast as answers come.
    paced: bool = True
    max_gap: float = 5.0


@dataclass
class FlowResult:
    index: int
    name: str
    verdict: str = verdicts.PASS
    mismatches: list[str] = field(default_factory=list)
    more_mismatches: int = 0
    notes: list[str] = field(default_factory=list)
    frames_compared: int = 0
    incomplete: str | None = None
    duration: float = 0.0
    expected: list | None = None
    actual: str | None = None
    transcript: dict | None = None
    rewritten: bool = False
    #: Requirement IDs the target broke, as the protocol's observer judged the replayed
    #: conversation (pipeline/flows.py LiveFlow: the same rules as the Spark pipeline's).
    requirements: list[str] = field(default_factory=list)


def diff(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Field-by-field differences of two decoded frames (dicts, lists, values)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for key in list(expected) + [k for k in actual if k not in expected]:
            where = f"{path}.{key}" if path else str(key)
            if key not in actual:
                out.append(f"{where}: expected {_short(expected[key])}, absent")
            elif key not in expected:
                out.append(f"{where}: not expected, got {_short(actual[key])}")
            else:
                out += diff(expected[key], actual[key], where)
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path or 'value'}: expected {len(expected)} items {_short(expected)}, got "
                    f"{len(actual)} {_short(actual)}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            out += diff(e, a, f"{path}[{i}]")
        return out
    if expected != actual:
        return [f"{path or 'value'}: expected {_short(expected)}, got {_short(actual)}"]
    return []


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


class _Flow:
    """One recorded connection and its replay."""

    def __init__(self, replay: "Replayer", conn: Connection) -> None:
        self.replay = replay
        self.conn = conn
        spec, profile = replay.spec, replay.options.profile
        self.result = FlowResult(conn.index, conn.name)
        self.transcript = Transcript(conn.name)
        self.started = time.monotonic()
        self.rec_client = spec.capture_decoder(origin="client", profile=profile)
        self.rec_server = spec.capture_decoder(origin="server", profile=profile)
        self.live = spec.capture_decoder(origin="server", profile=profile)
        # the rules' rewriter: ``rewriting`` while the client's bytes survive decode + encode;
        # its ``unmap`` applies to the target's answers for the whole connection
        self.rewriter = replay.rules.make_rewriter()
        # the observer, on what was really sent and what the target really answered
        from pipeline.flows import LiveFlow
        self.check = LiveFlow(spec, conn.client, conn.server, time.monotonic(), profile, conn.name)
        self.check.conn.mid_stream = conn.mid_stream
        self.rewriting = self.rewriter is not None
        self.pending_client = b""           # client bytes held until a frame is whole (rewriting)
        self.actual: deque = deque()        # ("frame", dict, frame) or ("error", category, msg)
        # frames a server timer sends again (Rules.timer_key), matched by key wherever they come:
        # keys seen once on each side, the target's not yet expected, the recorded not yet come
        self.keys_recorded: set = set()
        self.keys_received: set = set()
        self.early: list = []
        self.late: list = []
        self.outbox = bytearray()
        self.sock: socket.socket | None = None
        self.live_closed: str | None = None   # how the target closed: "fin", "rst"
        self.live_dead = False              # the target's bytes stopped decoding
        self.rec_server_dead = False
        self.client_gone = False
        self.stalled = False
        self.last_event = None              # capture time of this connection's last event
        self.finished = False
        if conn.mid_stream:
            self.note("the capture starts in the middle of this connection (no SYN): the target "
                      "gets the client's bytes without their beginning")

    # -- bookkeeping ------------------------------------------------------------------------

    def note(self, text: str) -> None:
        self.result.notes.append(text)
        self.transcript.add("--", b"", text)

    def log(self, direction: str, data: bytes, note: str) -> None:
        if len(self.transcript.entries) < MAX_TRANSCRIPT:
            self.transcript.add(direction, data[:4096], note)

    def mismatch(self, text: str, expected: list | None = None, actual: str | None = None) -> None:
        r = self.result
        r.verdict = verdicts.FAIL
        if expected is not None and r.expected is None:
            r.expected, r.actual = expected, actual
        if len(r.mismatches) < MAX_MISMATCHES:
            r.mismatches.append(text)
        else:
            r.more_mismatches += 1
        self.transcript.add("--", b"", "MISMATCH: " + text)

    # -- the target side --------------------------------------------------------------------

    def connect(self) -> None:
        try:
            sock = socket.create_connection(self.replay.options.target, timeout=self.replay.options.timeout)
        except OSError as exc:
            self.live_closed = "refused"
            self.mismatch(f"cannot connect to the target: {exc}")
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        self.sock = sock
        self.replay.selector.register(sock, selectors.EVENT_READ, self)
        self.transcript.add("--", b"", f"connected to {self.replay.options.target[0]}:"
                                       f"{self.replay.options.target[1]}")

    def on_readable(self) -> None:
        try:
            data = self.sock.recv(_READ)
        except BlockingIOError:
            return
        except OSError as exc:
            self._target_closed("rst", str(exc))
            return
        if not data:
            self._target_closed("fin", "")
            return
        self.check.data("s2c", data, time.monotonic())
        if self.live_dead:
            return
        try:
            frames = self.live.feed(data)
        except FrameError as exc:
            self._take(exc.frames, data)
            self.actual.append(("error", exc.category, str(exc)))
            self.log("<-", data, f"undecodable: {exc}")
            self.live_dead = True
            return
        self._take(frames, data)
        if len(self.actual) + len(self.early) > MAX_AHEAD:
            self.mismatch(f"the target sent more than {MAX_AHEAD} frames the capture does not have yet")
            self.live_dead = True
            self._close_socket(abort=True)

    def _take(self, frames: list, data: bytes) -> None:
        rules = self.replay.rules
        for frame in frames:
            d = self.replay.spec.frame_to_dict(frame)
            if self.rewriter is not None:
                d = self.rewriter.unmap(d)
            if rules.ignored(d):
                continue
            for item in rules.expand(d):
                if self._timer_frame(item, self.keys_received):
                    self._pair_timer_frame(("frame", item, frame), recorded=False)
                else:
                    self.actual.append(("frame", item, frame))

    def _timer_frame(self, item: dict, seen: set) -> bool:
        """Whether ``item`` is a timer's frame: its key (Rules.timer_key) came before on
        this side of the connection."""
        key = self.replay.rules.timer_key(item)
        if key is None:
            return False
        if key in seen:
            return True
        seen.add(key)
        return False

    def _pair_timer_frame(self, item: tuple, recorded: bool) -> None:
        """A timer's frame, the recording's (``recorded``) or the target's: compared with the
        first of the other side's still unpaired ones with its key, or kept until one comes."""
        mine, others = (self.late, self.early) if recorded else (self.early, self.late)
        other = self._pop_same_key(others, item)
        if other is None:
            mine.append(item)
        elif recorded:
            self._timer_match(item, other)
        else:
            self._timer_match(other, item)

    def _pop_same_key(self, pool: list, item: tuple):
        """The first frame of ``pool`` with ``item``'s timer key, taken out; None if none."""
        key = self.replay.rules.timer_key(item[1])
        for i, other in enumerate(pool):
            if self.replay.rules.timer_key(other[1]) == key:
                return pool.pop(i)
        return None

    def _timer_match(self, want: tuple, got: tuple) -> None:
        self.result.frames_compared += 1
        self.transcript.add("--", b"", "a timer's frame, compared out of order: " + _short(want[1], 200))
        self._compare(want, got)

    def _unmatched_timer_frames(self, wait: float) -> None:
        """At the end: the recorded timer frames still to come get ``wait`` seconds; then each
        one missing, and each one the target sent that the recording lacks, is a mismatch."""
        if self.late and self.sock is not None and self.live_closed is None:
            self.replay.pump(time.monotonic() + wait, lambda: not self.late or self.live_closed is not None)
        for want in self.late:
            self.mismatch(f"expected {self._describe(want)} (sent again by a timer); it never came",
                          [self._describe(want)], "nothing")
        for got in self.early:
            self.mismatch(f"the target sent {self._describe(got)} again (a timer's frame) where the "
                          "recorded server did not", ["nothing"], self._describe(got))
        self.late, self.early = [], []

    def _target_closed(self, how: str, detail: str) -> None:
        if self.live_closed is None and not self.live_dead:
            try:
                self._take(self.live.eof() or [], b"")
            except FrameError:
                pass
        if self.live_closed is None:
            self.live_closed = how
            self.check.ended("s2c", how, time.monotonic())
            self.transcript.add("--", b"", f"target closed the connection ({how}{': ' + detail if detail else ''})")
        self._unregister()

    def _unregister(self) -> None:
        if self.sock is not None:
            try:
                self.replay.selector.unregister(self.sock)
            except (KeyError, ValueError):
                pass
            if self.outbox:
                self.outbox.clear()

    def on_writable(self) -> None:
        if not self.outbox or self.sock is None:
            return
        try:
            n = self.sock.send(self.outbox[:_READ])
        except BlockingIOError:
            return
        except OSError as exc:
            # the target reset the connection under our write: what it sent before (a close
            # frame, an error) may still be readable, so reading goes on until it ends
            self.outbox.clear()
            self.client_gone = True
            self.transcript.add("--", b"", f"sending failed: {exc}")
            return
        del self.outbox[:n]

    def _close_socket(self, abort: bool = False) -> None:
        if self.sock is None:
            return
        self._unregister()
        if abort:
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        self.sock.close()
        self.sock = None

    # -- recorded events --------------------------------------------------------------------

    def client_bytes(self, data: bytes, rec_time: float) -> None:
        self.last_event = rec_time
        self.replay.pace(rec_time)
        if self.client_gone or self.sock is None or self.live_closed is not None:
            return
        if self.rewriting:
            self.rewriter.clock_shift = time.time() - rec_time
            rewrite_bytes = getattr(self.rewriter, "rewrite_bytes", None)
            data = rewrite_bytes(data) if rewrite_bytes is not None else self._rewrite(data)
            if not data:
                return
        self._send(data)

    def _rewrite(self, data: bytes) -> bytes:
        """Decoded client frames with the rules' rewrites, encoded again (see the module doc)."""
        spec = self.replay.spec
        buf = self.pending_client + data
        try:
            frames = self.rec_client.feed(data)
        except FrameError:
            frames = None
        if frames is None:
            self.rewriting = False                # malformed bytes go as recorded
            self.pending_client = b""
            return buf
        out, used = [], 0
        for frame in frames:
            try:
                raw = spec.encode(frame)
            except Exception:                     # noqa: BLE001 - a frame the encoder cannot write
                raw = None
            if raw is None or buf[used:used + len(raw)] != raw:
                self.rewriting = False            # not byte-exact: send the rest as recorded
                self.pending_client = b""
                return b"".join(out) + buf[used:]
            used += len(raw)
            new = self.rewriter.rewrite(frame)
            if new is not None:
                out.append(spec.encode(new))
                self.result.rewritten = True
            else:
                out.append(raw)
        self.pending_client = buf[used:]
        return b"".join(out)

    def _send(self, data: bytes) -> None:
        self.check.data("c2s", data, time.monotonic())
        rng = self.replay.rng
        if self.replay.options.rechunk and len(data) > 1:
            pos = 0
            while pos < len(data):
                n = min(len(data) - pos, rng.choice((1, 2, 3, 7, 64, 1500, rng.randint(1, len(data)))))
                piece = data[pos:pos + n]
                pos += n
                self.log("->", piece, f"{len(piece)} bytes (rechunked)")
                self.outbox += piece
                self.replay.flush(self)
                # take what the target already answered before the next piece: a target that
                # closes on a bad frame would otherwise reset the connection under its answer
                self.replay.pump(time.monotonic(), lambda: False)
        else:
            self.log("->", data, f"{len(data)} bytes")
            self.outbox += data
            self.replay.flush(self)

    def client_end(self, how: str, missing, rec_time: float) -> None:
        self.replay.pace(rec_time)
        if missing is not None:
            if self.result.incomplete:
                return
            self.result.incomplete = f"the capture lacks client bytes {missing[0]}..{missing[1]}"
            self.note(self.result.incomplete + ": the rest of this connection is not replayed")
            self.client_gone = True
            self._close_socket(abort=True)
            return
        if how == "end" or self.sock is None:
            return
        self.replay.flush(self)
        self.client_gone = True
        self.check.ended("c2s", how, time.monotonic())
        if how == "rst":
            self.transcript.add("--", b"", "client reset the connection (as recorded)")
            self._close_socket(abort=True)
        else:
            self.transcript.add("--", b"", "client closed its side (as recorded)")
            try:
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def server_bytes(self, data: bytes, rec_time: float) -> None:
        # the recorded wait since this connection's last event the replay waited for or sent
        # (frames it ignores, such as pings, happen on the server's clock and are not awaited)
        gap = rec_time - self.last_event if self.last_event is not None else 0.0
        if self.rec_server_dead:
            return
        try:
            frames = self.rec_server.feed(data)
            error = None
        except FrameError as exc:
            frames, error = exc.frames, exc
            self.rec_server_dead = True
        rules = self.replay.rules
        for frame in frames:
            d = self.replay.spec.frame_to_dict(frame)
            if rules.ignored(d):
                continue
            for item in rules.expand(d):
                if self._timer_frame(item, self.keys_recorded):
                    self._pair_timer_frame(("frame", item, frame), recorded=True)
                else:
                    self.expect(("frame", item, frame), gap)
                self.last_event, gap = rec_time, 0.0
        if error is not None:
            self.expect(("error", error.category, str(error)), gap)
            self.last_event = rec_time

    def expect(self, item: tuple, gap: float) -> None:
        opts = self.replay.options
        wait = 0.0 if self.stalled else max(opts.timeout, gap * 1.5 + 1.0)
        self.replay.pump(time.monotonic() + wait, lambda: bool(self.actual) or self.live_closed is not None)
        want = self._describe(item)
        if not self.actual:
            if self.live_closed is not None:
                self.mismatch(f"expected {want}; the target had closed the connection ({self.live_closed})",
                              [want], "connection closed")
            elif self.conn.streams["c2s"].pending:
                # the client bytes the recorded answer replies to are not in the capture (a
                # hole, with later bytes already seen): not the target's fault
                hole = self.conn.streams["c2s"]
                self.result.incomplete = (f"the capture lacks client bytes {hole.pos}..{hole.pending[0][0]} "
                                          f"(the target had nothing to answer {want})")
                self.note(self.result.incomplete + ": the rest of this connection is not compared")
                self.rec_server_dead = self.client_gone = True
                self._close_socket(abort=True)
            else:
                self.mismatch(f"expected {want}; nothing came within {wait:.1f}s", [want], "nothing (timeout)")
                self.stalled = True
            return
        got = self.actual.popleft()
        self.result.frames_compared += 1
        self._compare(item, got)

    def _describe(self, item: tuple) -> str:
        if item[0] == "error":
            return f"undecodable bytes ({item[1]})"
        return _short(item[1], 300)

    def _compare(self, want: tuple, got: tuple) -> None:
        rules = self.replay.rules
        if want[0] == "error" or got[0] == "error":
            if want[0] == got[0] == "error" and want[1] == got[1]:
                self.log("<-", b"", f"undecodable bytes ({got[1]}) as recorded")
                return
            self.mismatch(f"expected {self._describe(want)}, got {self._describe(got)}",
                          [self._describe(want)], self._describe(got))
            return
        expected, actual = rules.mask(want[1]), rules.mask(got[1])
        self.log("<-", self._encoded(got[2]), _short(got[1], 300))
        differences = diff(expected, actual)
        if not differences:                       # only a true pair teaches echoed values
            rules.learn(want[1], got[1])
        if differences:
            self.mismatch(f"frame {self.result.frames_compared}: " + "; ".join(differences[:8]),
                          [_short(want[1], 300)], _short(got[1], 300))

    def _encoded(self, frame) -> bytes:
        try:
            return self.replay.spec.encode(frame)
        except Exception:                         # noqa: BLE001 - a view only
            return b""

    def server_end(self, how: str, missing, rec_time: float) -> None:
        if missing is not None:
            self.result.incomplete = f"the capture lacks server bytes {missing[0]}..{missing[1]}"
            self.note(self.result.incomplete + ": later answers are not compared")
            self.rec_server_dead = True
            return
        if how == "end" or self.rec_server_dead:
            return
        gap = rec_time - self.last_event if self.last_event is not None else 0.0
        try:
            last = self.rec_server.eof() or []    # a frame that ends with the stream (HTTP)
        except FrameError:
            last = []
        for frame in last:
            for item in self.replay.rules.expand(self.replay.spec.frame_to_dict(frame)):
                self.expect(("frame", item, frame), gap)
        wait = 0.0 if self.stalled else max(self.replay.options.timeout, gap * 1.5 + 1.0)
        self._unmatched_timer_frames(wait)
        self.replay.pump(time.monotonic() + wait, lambda: bool(self.actual) or self.live_closed is not None)
        self._extra_frames("before closing")
        if self.live_closed is None:
            self.replay.pump(time.monotonic() + wait, lambda: self.live_closed is not None)
            self._extra_frames("before closing")
        if self.live_closed is None:
            self.mismatch(f"the recorded server closed the connection ({how}); the target did not "
                          f"within {wait:.1f}s", [f"connection closed ({how})"], "connection open")
            self.stalled = True

    def _extra_frames(self, when: str) -> None:
        while self.actual:
            got = self.actual.popleft()
            self.mismatch(f"the target sent a frame the recorded server did not {when}: "
                          f"{self._describe(got)}", ["nothing"], self._describe(got))

    def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        if self.sock is not None and self.live_closed is None and not self.live_dead:
            self.replay.pump(time.monotonic() + GRACE, lambda: bool(self.actual) or self.live_closed is not None)
        self._unmatched_timer_frames(0.0 if self.stalled else self.replay.options.timeout)
        self._extra_frames("at the end")
        self._close_socket()
        self._judge(self.check.finish(time.monotonic()))
        r = self.result
        if r.incomplete and r.verdict == verdicts.PASS:
            r.verdict = verdicts.SKIPPED
        r.duration = time.monotonic() - self.started
        r.transcript = self.transcript.to_json(max_bytes=256)


    def _judge(self, violations: list[dict]) -> None:
        """The observer's findings: a MUST the target broke fails the connection, a SHOULD
        makes it NON-STRICT; what the recorded client broke is noted (the capture's doing:
        the replay sends the client's bytes as recorded)."""
        for v in violations:
            text = f"{v['requirement']} ({v['level'] or 'MUST'}): {v['message']}"
            if v["direction"] == "c2s":
                self.note(f"the recorded client broke {text}")
                continue
            if v["requirement"] not in self.result.requirements:
                self.result.requirements.append(v["requirement"])
            if v["level"] in ("SHOULD", "MAY"):
                self.note(f"the target broke {text}")
                if self.result.verdict == verdicts.PASS:
                    self.result.verdict = verdicts.NON_STRICT
            else:
                self.mismatch(f"the target broke {text}", [f"no violation of {v['requirement']}"], text)


class Replayer:
    """The reassembly sink that drives the replay (see the module doc)."""

    def __init__(self, spec, options: ReplayOptions, on_flow_done: Callable[[FlowResult], None] | None = None) -> None:
        self.spec = spec
        self.options = options
        self.rules = rules_for(spec.id)(options)
        self.rng = random.Random(options.seed)
        self._offset: float | None = None      # replay clock - capture clock (pacing)
        self._last_paced: tuple[float, float] | None = None   # last client event: (capture, replay) time
        self.selector = selectors.DefaultSelector()
        self.flows: dict[int, _Flow] = {}
        self.results: list[FlowResult] = []
        self.on_flow_done = on_flow_done
        self.reassembler = TcpReassembler(self, capture_ports(spec, options.ports))

    # -- I/O --------------------------------------------------------------------------------

    def pace(self, rec_time: float) -> None:
        """Hold a client event until as long after the first event as it was in the capture
        (gaps longer than ``max_gap`` shortened to it), reading answers meanwhile."""
        if not self.options.paced:
            return
        now = time.monotonic()
        if self._offset is None:
            self._offset = now - rec_time
        due = rec_time + self._offset
        if self._last_paced is not None:
            # a replay running late never shortens the gap between two client events (a
            # client that waited 5 ms between publishes for distinct timestamps waits 5 ms)
            last_rec, last_now = self._last_paced
            due = max(due, last_now + min(rec_time - last_rec, self.options.max_gap))
        if due - now > self.options.max_gap:
            self._offset -= due - now - self.options.max_gap
            due = now + self.options.max_gap
        if due > now:
            self.pump(due, lambda: False)
        self._last_paced = (rec_time, max(now, due))

    def pump(self, deadline: float, done: Callable[[], bool]) -> None:
        """Read from every open connection (and write what waits) until ``done()`` or the
        deadline."""
        while True:
            if done():
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if not self.selector.get_map():
                return
            for key, events in self.selector.select(min(left, 0.5)):
                flow: _Flow = key.data
                if events & selectors.EVENT_WRITE:
                    flow.on_writable()
                    self._want_write(flow)
                if events & selectors.EVENT_READ and flow.sock is not None:
                    flow.on_readable()

    def _want_write(self, flow: _Flow) -> None:
        if flow.sock is None:
            return
        mask = selectors.EVENT_READ | (selectors.EVENT_WRITE if flow.outbox else 0)
        try:
            self.selector.modify(flow.sock, mask, flow)
        except (KeyError, ValueError):
            pass

    def flush(self, flow: _Flow) -> None:
        """Write ``flow``'s outbox, reading all connections meanwhile; a target that stops
        reading for longer than the timeout is a mismatch."""
        flow.on_writable()
        while flow.outbox and flow.sock is not None:
            self._want_write(flow)
            before = len(flow.outbox)
            self.pump(time.monotonic() + self.options.timeout, lambda: len(flow.outbox) < before or flow.sock is None
                      or flow.live_closed is not None)
            if flow.outbox and len(flow.outbox) >= before:
                flow.mismatch(f"the target stopped reading ({len(flow.outbox)} bytes unsent after "
                              f"{self.options.timeout:.1f}s)")
                flow.outbox.clear()
                flow.client_gone = True
                flow._close_socket(abort=True)
        self._want_write(flow)

    # -- reassembly sink --------------------------------------------------------------------

    def opened(self, conn: Connection, time_: float) -> None:
        flow = _Flow(self, conn)
        conn.user["flow"] = flow
        self.flows[conn.index] = flow
        flow.connect()

    def data(self, stream: Stream, data: bytes, time_: float) -> None:
        flow: _Flow = stream.conn.user["flow"]
        if stream.direction == "c2s":
            flow.client_bytes(data, time_)
        else:
            flow.server_bytes(data, time_)

    def ended(self, stream: Stream, time_: float, how: str, missing) -> None:
        flow: _Flow = stream.conn.user["flow"]
        if stream.direction == "c2s":
            flow.client_end(how, missing, time_)
        else:
            flow.server_end(how, missing, time_)
        if all(s.ended for s in stream.conn.streams.values()):
            self._done(flow)

    def _done(self, flow: _Flow) -> None:
        flow.finish()
        self.flows.pop(flow.conn.index, None)
        self.results.append(flow.result)
        if self.on_flow_done is not None:
            self.on_flow_done(flow.result)

    def close(self, time_: float) -> None:
        self.reassembler.close(time_)
        for flow in list(self.flows.values()):
            self._done(flow)
        self.selector.close()


# -- whole captures ----------------------------------------------------------------------------

def is_capture(path: str) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head[:2] == b"\x1f\x8b":
        import gzip
        try:
            with gzip.open(path, "rb") as fh:
                head = fh.read(4)
        except (OSError, EOFError):
            return False
    return head in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d",
                    b"\x0a\x0d\x0d\x0a")


def guess_protocol(path: str, ports: tuple[int, ...] = (), limit: int = 2000):
    """The registered protocol whose port the capture's first TCP segments use, or None."""
    from reference_impl.core import registry
    by_port = {}
    for spec in registry.all_protocols():
        for port in (spec.default_port, *spec.extra_ports):
            by_port.setdefault(port, spec)
    with PcapReader(path) as reader:
        for n, seg in enumerate(reader):
            for port in (seg.dst[1], seg.src[1]):
                if port in by_port:
                    return by_port[port]
            if n >= limit:
                break
    return None


def replay_capture(spec, path: str, options: ReplayOptions, progress=None) -> list[FlowResult]:
    """Replay every ``spec`` connection of the capture at ``path``; ``progress(position, flows,
    mismatching)`` is called as the file is read."""
    bad = 0

    def done(result: FlowResult) -> None:
        nonlocal bad
        bad += result.verdict == verdicts.FAIL

    replayer = Replayer(spec, options, done)
    reader = PcapReader(path)
    last = 0.0
    with reader:
        for n, seg in enumerate(reader):
            last = seg.time
            replayer.reassembler.segment(seg)
            if progress is not None and n % 64 == 0:
                progress(reader.file_position, len(replayer.results), bad)
    replayer.close(last)
    if progress is not None:
        progress(reader.file_position, len(replayer.results), bad)
    replayer.results.sort(key=lambda r: r.index)
    return replayer.results


def replay_bytes(spec, path: str, options: ReplayOptions) -> list[FlowResult]:
    """A byte file (a fuzzer's finding) as one client stream; see the module doc."""
    with open(path, "rb") as fh:
        data = fh.read()
    conn = Connection(0, ("file", 0), tuple(options.target))
    replayer = Replayer(spec, options)
    flow = _Flow(replayer, conn)
    flow.connect()
    if flow.sock is not None:
        pos = 0
        for size in _finding_writes(path, len(data)):      # as the fuzzer wrote them
            flow.client_bytes(data[pos:pos + size], 0.0)
            pos += size
        # answers until the target closes or is quiet for the timeout
        while flow.live_closed is None:
            before = len(flow.actual)
            replayer.pump(time.monotonic() + options.timeout,
                          lambda: len(flow.actual) > before or flow.live_closed is not None)
            if len(flow.actual) == before:
                break
        for kind, what, *_ in flow.actual:
            flow.log("<-", b"", _short(what, 300) if kind == "frame" else f"undecodable bytes ({what})")
            if kind == "error":
                flow.mismatch(f"the target answered with bytes the reference decoder rejects ({what})",
                              ["frames the reference codec reads"], f"undecodable ({what})")
        answers = [item for item in flow.actual]
        flow.actual.clear()
        flow._close_socket()
        flow.note(f"the target answered {sum(a[0] == 'frame' for a in answers)} frame(s) and "
                  + ("kept the connection open" if flow.live_closed is None else
                     f"closed the connection ({flow.live_closed})"))
        from conformance import liveness
        host, port = options.target
        alive = liveness.settled_probe(spec, host, port, options.profile, options.timeout)
        if alive.ok:
            flow.note("the target answers the liveness probe on a new connection afterwards")
        else:
            what = {liveness.REFUSED: "no longer accepts connections (crashed?)",
                    liveness.SILENT: "no longer answers (hung?)",
                    liveness.CLOSED: "closes new connections without an answer"}.get(
                        alive.status, "answers the liveness probe wrongly")
            flow.mismatch(f"after these bytes the target {what}: {alive.detail}",
                          ["an answer to the liveness probe"], f"{alive.status} ({alive.detail})")
    flow.finish()
    replayer.selector.close()
    return [flow.result]


def result_document(spec, path: str, results: list[FlowResult], options: ReplayOptions,
                    started: float, label: str | None) -> dict:
    """The replay as a result file (the format ``wirecheck report`` reads)."""
    counts: dict[str, int] = {}
    tests = []
    base = os.path.basename(path)
    for r in results:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
        lines = list(r.mismatches)
        if r.more_mismatches:
            lines.append(f"... and {r.more_mismatches} more mismatch(es)")
        if r.incomplete:
            lines.append(f"incomplete capture: {r.incomplete}")
        message = "\n".join(lines) if lines else (
            f"equivalent ({r.frames_compared} frame(s) compared)" + ("; names rewritten" if r.rewritten else ""))
        tests.append({"nodeid": f"replay::{base}::#{r.index} {r.name}", "protocol": spec.id,
                      "requirements": list(r.requirements), "verdict": r.verdict, "message": message,
                      "transcript": "", "wire": [r.transcript] if r.transcript else [],
                      "expected": r.expected, "actual": r.actual, "duration": r.duration,
                      "notes": r.notes, "frames_compared": r.frames_compared})
    return {"kind": "replay", "capture": path, "started": started, "finished": time.time(),
            "exitstatus": EXIT_MISMATCH if counts.get(verdicts.FAIL) else EXIT_OK,
            "target": [options.target[0], options.target[1]], "label": label or f"replay of {base}",
            "profile": options.profile, "strict": False, "rechunk": options.rechunk, "seed": options.seed,
            "summary": {spec.id: {"counts": counts, "waivers": {}, "stale_waivers": [], "catalogue": {},
                                  "failing_requirements": [], "unimplemented_requirements": [],
                                  "waived_requirements": []}},
            "tests": tests}


def _progress_bar(path: str, enabled: bool):
    """A rich progress bar over the capture's bytes (stderr), or a no-op."""
    if not enabled:
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
    bar = Progress(TextColumn("replay {task.fields[name]}"), BarColumn(), DownloadColumn(),
                   TextColumn("{task.fields[flows]} connections, {task.fields[bad]} mismatching"),
                   TimeRemainingColumn(), console=Console(stderr=True), transient=False)
    task = bar.add_task("replay", total=os.path.getsize(path), name=os.path.basename(path), flows=0, bad=0)

    def update(position: int, flows: int, bad: int) -> None:
        bar.update(task, completed=position, flows=flows, bad=bad)
    return bar, update


def main(args) -> int:
    """``wirecheck replay`` (conformance/cli.py builds ``args``; ``args.target`` is parsed)."""
    path, target = args.pcap, args.target
    if not os.path.isfile(path):
        print(f"wirecheck replay: no such file: {path}", file=sys.stderr)
        return EXIT_HARNESS
    credentials = None
    if args.credentials:
        user, sep, password = args.credentials.partition(":")
        if not sep:
            print("wirecheck replay: --credentials is USER:PASSWORD", file=sys.stderr)
            return EXIT_HARNESS
        credentials = (user, password)
    options = ReplayOptions(target, tuple(args.port or ()), args.timeout, args.rechunk, args.seed,
                            args.profile, credentials, not args.keep_names, not args.fast, args.max_gap)
    capture = is_capture(path)
    spec = args.protocol
    if spec is None and not capture:
        spec, finding_profile = _finding_protocol(path)
        if args.profile is None:
            args.profile = finding_profile
    try:
        if spec is None:
            spec = guess_protocol(path, options.ports) if capture else None
            if spec is None:
                print(f"wirecheck replay: cannot tell the protocol of {path}: give --protocol",
                      file=sys.stderr)
                return EXIT_HARNESS
        if args.profile is not None:
            from conformance.profiles import ProfileError, load_profile
            try:
                options.profile = load_profile(spec, args.profile).base
            except ProfileError as exc:
                print(f"wirecheck replay: {exc}", file=sys.stderr)
                return EXIT_HARNESS
        started = time.time()
        if capture:
            show = args.progress if args.progress is not None else sys.stderr.isatty()
            bar, update = _progress_bar(path, show)
            if bar is not None:
                with bar:
                    results = replay_capture(spec, path, options, update)
            else:
                results = replay_capture(spec, path, options)
            if not results:
                print(f"wirecheck replay: no {spec.id} connection in {path} (ports "
                      f"{sorted(capture_ports(spec, options.ports))}; --port adds one)", file=sys.stderr)
                return EXIT_HARNESS
        else:
            results = replay_bytes(spec, path, options)
    except (OSError, CaptureFormatError) as exc:
        print(f"wirecheck replay: {path}: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    doc = result_document(spec, path, results, options, started, args.label)
    doc["mode"] = "capture" if capture else "bytes"
    _print_summary(doc, results, args.json)
    if args.report:
        _write_report(doc, args.report)
    return doc["exitstatus"]


def _finding_meta(path: str) -> dict:
    """The JSON a network fuzzer finding ``X.bin`` has beside it (``X.json``), or {}."""
    try:
        with open(os.path.splitext(path)[0] + ".json", encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _finding_writes(path: str, total: int) -> list[int]:
    """The write sizes the fuzzer used for this finding, else one write of everything."""
    writes = _finding_meta(path).get("writes")
    if isinstance(writes, list) and all(isinstance(w, int) and w > 0 for w in writes) and sum(writes) == total:
        return writes
    return [total]


def _finding_protocol(path: str):
    """(spec, profile) from a network fuzzer finding's JSON beside ``path``, else (None, None)."""
    from reference_impl.core import registry
    doc = _finding_meta(path)
    try:
        return registry.get(doc["protocol"]), doc.get("profile")
    except (KeyError, TypeError):
        return None, None


def _print_summary(doc: dict, results: list[FlowResult], as_json: bool) -> None:
    counts = next(iter(doc["summary"].values()))["counts"]
    equivalent = counts.get(verdicts.PASS, 0)
    if as_json:
        print(json.dumps({"capture": doc["capture"], "connections": len(results), "equivalent": equivalent,
                          "mismatching": counts.get(verdicts.FAIL, 0),
                          "incomplete": counts.get(verdicts.SKIPPED, 0),
                          "frames_compared": sum(r.frames_compared for r in results),
                          "mismatches": [{"connection": f"#{r.index} {r.name}", "diff": r.mismatches}
                                         for r in results if r.verdict == verdicts.FAIL]}))
        return
    if doc.get("mode") == "bytes":
        r = results[0]
        print(f"{r.verdict} {doc['capture']}: " + "; ".join(r.mismatches + r.notes))
        return
    for r in results:
        if r.verdict != verdicts.PASS:
            print(f"{r.verdict} #{r.index} {r.name}")
            for line in r.mismatches + ([f"... {r.more_mismatches} more"] if r.more_mismatches else []):
                print(f"    {line}")
            if r.incomplete:
                print(f"    {r.incomplete}")
    print(f"{doc['capture']}: {len(results)} connection(s), {equivalent} equivalent, "
          f"{counts.get(verdicts.FAIL, 0)} mismatching, {counts.get(verdicts.SKIPPED, 0)} incomplete; "
          f"{sum(r.frames_compared for r in results)} frame(s) compared")


def _write_report(doc: dict, out: str) -> None:
    from conformance.report_index import write_result
    write_result(doc, out, os.path.splitext(os.path.basename(doc["capture"]))[0] + ".replay.json")
