"""One recorded connection replayed to a target (conformance/captures/replay.py drives all of them
in capture order): the client's bytes sent, rewritten where the rules say, and the target's
answers compared frame by frame with the recorded ones.

Comparison
----------
Frames are compared as the reference codec decodes them (``frame_to_dict``), after the
protocol's rules (conformance/captures/replay_rules.py) have masked what may differ between two correct
servers (connection ids, timestamps, server versions, ...) and dropped frames that timers send
(heartbeats, pings). A frame the recorded server sent and the target did not, a different
frame, an extra frame, a close where none was recorded or none where one was: each is a
mismatch, with a diff of the fields. Frames a server sends on its own, not as the answer to a
request (``Rules.async_key``: a delivery, a confirm), are compared in order among those of
their key but may come anywhere among the other frames. A connection whose frames all match
is EQUIVALENT (PASS);
one with a mismatch FAILs; one the capture lacks bytes of is reported as incomplete (SKIPPED)
unless it already mismatched.

Rewriting
---------
Some client bytes cannot be sent again as recorded: credentials the target does not have, and
names that must be new (a stream that already exists from an earlier replay). The protocol's
rules rewrite such fields in decoded client frames, which are then encoded again; the answers
are mapped back before comparison. Where the recorded client bytes do not survive a decode and
encode unchanged (a malformed frame on an error path), that connection's bytes go unchanged.
"""
from __future__ import annotations

import json
import random
import selectors
import socket
import struct
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.target.connection import Transcript
from wirecheck.conformance.captures.tcpflows import Connection
from wirecheck.reference_impl.core.errors import FrameError


class ReplayDriver(Protocol):
    """What one connection's replay needs from the driver that owns the socket loop
    (replay.Replayer): declared here so that this module does not import the driver back."""
    spec: Any
    options: Any
    rules: Any
    rng: random.Random
    selector: selectors.BaseSelector

    def pace(self, rec_time: float) -> None: ...

    def pump(self, deadline: float, done: Callable[[], bool]) -> None: ...

    def flush(self, flow: "FlowReplay") -> None: ...


#: Mismatches listed per connection; the rest are counted.
MAX_MISMATCHES = 20
#: Transcript entries kept per connection.
MAX_TRANSCRIPT = 400
#: Frames the target may send ahead of the replay on one connection before it is a flood.
MAX_AHEAD = 100_000
#: After a connection's last recorded event: how long extra frames from the target are awaited.
GRACE = 0.05
READ_SIZE = 256 * 1024


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
    #: conversation (captures/flows.py LiveFlow: the same rules as the Spark pipeline's).
    requirements: list[str] = field(default_factory=list)


def diff(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Field-by-field differences of two decoded frames (dicts, lists, values)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for key in list(expected) + [k for k in actual if k not in expected]:
            where = f"{path}.{key}" if path else str(key)
            if key not in actual:
                out.append(f"{where}: expected {short_json(expected[key])}, absent")
            elif key not in expected:
                out.append(f"{where}: not expected, got {short_json(actual[key])}")
            else:
                out += diff(expected[key], actual[key], where)
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path or 'value'}: expected {len(expected)} items {short_json(expected)}, got "
                    f"{len(actual)} {short_json(actual)}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            out += diff(e, a, f"{path}[{i}]")
        return out
    if expected != actual:
        return [f"{path or 'value'}: expected {short_json(expected)}, got {short_json(actual)}"]
    return []


def short_json(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


class FlowReplay:
    """One recorded connection and its replay."""

    def __init__(self, replay: ReplayDriver, conn: Connection) -> None:
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
        from wirecheck.conformance.captures.flows import LiveFlow
        self.check = LiveFlow(spec, conn.client, conn.server, time.monotonic(), profile, conn.name)
        self.check.conn.mid_stream = conn.mid_stream
        self.rewriting = self.rewriter is not None
        self.pending_client = b""           # client bytes held until a frame is whole (rewriting)
        self.actual: deque = deque()        # ("frame", dict, frame) or ("error", category, msg)
        # the target's asynchronous frames (Rules.async_key), per key, not yet compared
        self.async_got: dict = {}
        # async keys the recording ended (Rules.ends_async), and the target's frames of the
        # others taken beyond the recording's (Rules.TRAILING_ASYNC)
        self.async_ended: set = set()
        self.trailing: dict = {}
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
        self.unblocked = 0                  # frames the replay added (Rules.unblock)
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
            data = self.sock.recv(READ_SIZE)
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
        if len(self.actual) + len(self.early) + sum(map(len, self.async_got.values())) > MAX_AHEAD:
            self.mismatch(f"the target sent more than {MAX_AHEAD} frames the capture does not have yet")
            self.live_dead = True
            self.close_socket(abort=True)

    def _compared(self, frames: list, live: bool):
        """``(item, frame, again)`` for what the comparison sees of ``frames``: the rules' view of each
        (the target's answers mapped back through the rewriter), ignored frames dropped, each
        expanded; and whether ``item`` is a server timer's frame again, paired by key
        (:meth:`_pair_timer_frame`) rather than in order."""
        rules, view = self.replay.rules, self.replay.spec.frame_to_dict
        unmap = self.rewriter.unmap if live and self.rewriter is not None else None
        seen = self.keys_received if live else self.keys_recorded
        for frame in frames:
            d = view(frame) if unmap is None else unmap(view(frame))
            if live:
                rules.target_frame(d, self.rewriter)
            if not rules.ignored(d):
                for item in rules.expand(d):
                    if not rules.skipped(item, live, self.rewriter):
                        yield item, frame, self._timer_frame(item, seen)

    def _take(self, frames: list, data: bytes) -> None:
        for item, frame, again in self._compared(frames, live=True):
            entry = ("frame", item, frame)
            key = self.replay.rules.async_key(item)
            if again:
                self._pair_timer_frame(entry, recorded=False)
            elif key is not None:
                self.async_got.setdefault(key, deque()).append(entry)
            else:
                self.actual.append(entry)

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
        self.transcript.add("--", b"", "a timer's frame, compared out of order: " + short_json(want[1], 200))
        self._compare(want, got)

    def _unmatched_timer_frames(self, wait: float) -> None:
        """At the end: the recorded timer frames still to come get ``wait`` seconds. A repeat
        the target never sent, or one the recording lacks, is a note, not a mismatch: how often
        a redelivery timer fires depends on its setting (no document fixes it) and on the
        replay's pace against it (a slow link, a busy machine). The first delivery of each key
        is compared in order, and the repeats that both sides sent are compared by key; the
        suites' own tests judge whether a target redelivers at all."""
        if self.late and self.sock is not None and self.live_closed is None:
            self.replay.pump(time.monotonic() + wait, lambda: not self.late or self.live_closed is not None)
        for want in self.late:
            self.note(f"the recorded server sent {self._describe(want)} again (a timer's frame); the "
                      f"target did not within {wait:g} s: the timer's pace, not a mismatch")
        for got in self.early:
            self.note(f"the target sent {self._describe(got)} again (a timer's frame) where the "
                      "recorded server did not: the timer's pace, not a mismatch")
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
            n = self.sock.send(self.outbox[:READ_SIZE])
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

    def close_socket(self, abort: bool = False) -> None:
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
            self.replay.rules.client_sent(rec_time, time.time())
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
            self.close_socket(abort=True)
            return
        if how == "end" or self.sock is None:
            return
        self.replay.flush(self)
        self.client_gone = True
        self.check.ended("c2s", how, time.monotonic())
        if how == "rst":
            self.transcript.add("--", b"", "client reset the connection (as recorded)")
            self.close_socket(abort=True)
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
        for item, frame, again in self._compared(frames, live=False):
            entry = ("frame", item, frame)
            ended = self.replay.rules.ends_async(item)
            if ended is not None:
                self.async_ended.add(ended)
            if again:
                self._pair_timer_frame(entry, recorded=True)
            else:
                self.expect(entry, gap, self.replay.rules.async_key(item))
            self.last_event, gap = rec_time, 0.0
        if error is not None:
            self.expect(("error", error.category, str(error)), gap)
            self.last_event = rec_time

    def expect(self, item: tuple, gap: float, key=None) -> None:
        """The target's next frame, compared with the recorded ``item``; with an async ``key``
        (Rules.async_key), the target's next frame of that key, wherever it came."""
        opts = self.replay.options
        wait = 0.0 if self.stalled else max(opts.timeout, gap * 1.5 + 1.0)
        pool = self.actual if key is None else self.async_got.setdefault(key, deque())
        if key is not None and not pool:
            self._unblock(key)
        self.replay.pump(time.monotonic() + wait, lambda: bool(pool) or self.live_closed is not None)
        want = self._describe(item)
        if not pool:
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
                self.close_socket(abort=True)
            else:
                self.mismatch(f"expected {want}; nothing came within {wait:.1f}s", [want], "nothing (timeout)")
                self.stalled = True
            return
        got = pool.popleft()
        self.result.frames_compared += 1
        self._compare(item, got)

    def _unblock(self, key) -> None:
        """Send what the rules say the target needs to send the awaited frame (Rules.unblock),
        noted once per connection."""
        frame = self.replay.rules.unblock(key, self.rewriter)
        if frame is None or self.sock is None or self.live_closed is not None or self.client_gone:
            return
        self.unblocked += 1
        if self.unblocked == 1:
            self.note(f"the replay sent {type(frame).__name__} frames the recording lacks, so that the "
                      "target could send what the recording has (its flow control counts units it "
                      "chose differently): see the transcript")
        self.log("--", b"", f"added by the replay: {short_json(self.replay.spec.frame_to_dict(frame), 200)}")
        self._send(self.replay.spec.encode(frame))

    def _describe(self, item: tuple) -> str:
        if item[0] == "error":
            return f"undecodable bytes ({item[1]})"
        return short_json(item[1], 300)

    def _compare(self, want: tuple, got: tuple) -> None:
        rules = self.replay.rules
        if want[0] == "error" or got[0] == "error":
            if want[0] == got[0] == "error" and want[1] == got[1]:
                self.log("<-", b"", f"undecodable bytes ({got[1]}) as recorded")
                return
            self.mismatch(f"expected {self._describe(want)}, got {self._describe(got)}",
                          [self._describe(want)], self._describe(got))
            return
        expected = rules.mask(want[1])
        actual = rules.mask(rules.align(want[1], got[1], self.rewriter))
        self.log("<-", self._encoded(got[2]), short_json(got[1], 300))
        differences = diff(expected, actual)
        if not differences:                       # only a true pair teaches echoed values
            rules.learn(want[1], got[1], self.rewriter)
        if differences:
            self.mismatch(f"frame {self.result.frames_compared}: " + "; ".join(differences[:8]),
                          [short_json(want[1], 300)], short_json(got[1], 300))

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
                self.expect(("frame", item, frame), gap, self.replay.rules.async_key(item))
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

    def received(self) -> list:
        """The target's frames not compared yet, asynchronous ones included (taken out)."""
        out = list(self.actual)
        self.actual.clear()
        for pool in self.async_got.values():
            out += pool
            pool.clear()
        return out

    def _extra_frames(self, when: str) -> None:
        for key, pool in ((None, self.actual), *self.async_got.items()):
            while pool:
                got = pool.popleft()
                if key is not None and self._trailing(key, got):
                    continue
                self.mismatch(f"the target sent a frame the recorded server did not {when}: "
                              f"{self._describe(got)}", ["nothing"], self._describe(got))

    def _trailing(self, key, got) -> bool:
        """Whether ``got``, beyond the recording's frames of ``key``, is one of the few a
        sequence the recording never ended may still carry (Rules.TRAILING_ASYNC); noted."""
        if key in self.async_ended or self.trailing.get(key, 0) >= self.replay.rules.TRAILING_ASYNC:
            return False
        self.trailing[key] = self.trailing.get(key, 0) + 1
        self.note(f"the target sent {self._describe(got)} beyond the recording's, in a sequence the "
                  "recorded server never ended (the client cancelled or left it): frames in flight "
                  "then may still come")
        return True

    def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        if self.sock is not None and self.live_closed is None and not self.live_dead:
            self.replay.pump(time.monotonic() + GRACE, lambda: bool(self.actual) or self.live_closed is not None)
        self._unmatched_timer_frames(0.0 if self.stalled else self.replay.options.timeout)
        self._extra_frames("at the end")
        self.close_socket()
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
