"""Planted BlipMQ servers that fail on *what they are sent*, as independent servers do: the
reference broker in its own process, with a scanner in front of each session that reads the
frames of the byte stream (its own reading, so that a frame type the codec refuses is seen too)
and acts on particular contents:

- ``auth-key-signed``: an AUTH whose key_len is 0x8000 or more (a u16 read as signed; in the
  handshake). The suite sends one: ``test_api_key_length[65535]``.
- ``topic-signed``: a SUBSCRIBE or PUBLISH whose topic_len is 0x8000 or more (a length field):
  ``test_topic_length_both_ways[65535]``.
- ``type-0xee``: frame type 0xEE, a type byte the parser does not know:
  ``test_unknown_frame_type_closes_connection[0xee]`` and
  ``test_frames_before_an_unknown_type_are_still_answered``.
- ``topic-256-after-ack0``: a SUBSCRIBE whose topic is 256 bytes, but only once an earlier
  connection sent an ACK for subscription 0 (state one connection leaves for the next, as a
  server that keeps a per-process table does): ``test_topic_length_both_ways[256]`` after
  ``test_ack_subscription_zero`` (or the MUST state machine's "ack zero" step).

None of these is drawn by the suite's state machines (their keys and topics are short, their
unknown types are 0x00, 0x0A, 0x10, 0x7F and 0xFF). What the server does then (``--effect``):
``crash`` (``os._exit(70)`` after a line on stderr naming the input, ``--delay S`` seconds
later from a background task, as a server whose parser fails off the connection's path),
``hang`` (the event loop blocks for good: connections are still accepted, nothing is
answered), ``spin`` (a thread that loops for good; once) or ``grow`` (32 MiB kept for good,
each time).

``--whole-first-read``: the server reads a connection's first frame (the HELLO) in one read, or
never: when its first read holds less, it stops reading that connection and answers nothing (a
server that never reassembles a handshake; not a crash).

``python tests/support/planted_servers.py --port P --on auth-key-signed,type-0xee [--effect crash]``
"""
from __future__ import annotations

import argparse
import os
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from wirecheck.reference_impl.blipmq.broker import make_broker  # noqa: E402
from wirecheck.reference_impl.core.server import ThreadedServer  # noqa: E402

TRIGGERS = ("auth-key-signed", "topic-signed", "type-0xee", "topic-256-after-ack0")
AUTH, PUBLISH, SUBSCRIBE, ACK = 0x02, 0x03, 0x04, 0x05
#: Bytes a ``grow`` trigger keeps for good.
GROWTH = 32 << 20


class Planted:
    """What the process remembers across connections, and what it does on a trigger."""

    def __init__(self, triggers: set[str], effect: str, delay: float) -> None:
        self.triggers, self.effect, self.delay = triggers, effect, delay
        self.acked_zero = False
        self.spinning = False
        self.kept: list[bytearray] = []
        self.lock = threading.Lock()

    def which(self, kind: int, payload: bytes) -> str | None:
        """The trigger a frame of type ``kind`` with ``payload`` fires, if any."""
        if kind == ACK and len(payload) >= 8 and struct.unpack(">Q", payload[:8])[0] == 0:
            self.acked_zero = True
        if kind == 0xEE and "type-0xee" in self.triggers:
            return "type-0xee"
        if kind == AUTH and len(payload) >= 2 and "auth-key-signed" in self.triggers:
            if struct.unpack(">h", payload[:2])[0] < 0:
                return "auth-key-signed"
        topic_at = {SUBSCRIBE: 0, PUBLISH: 1}.get(kind)
        if topic_at is not None and len(payload) >= topic_at + 2:
            (signed,) = struct.unpack(">h", payload[topic_at:topic_at + 2])
            if signed < 0 and "topic-signed" in self.triggers:
                return "topic-signed"
            if kind == SUBSCRIBE and signed == 256 and self.acked_zero \
                    and "topic-256-after-ack0" in self.triggers:
                return "topic-256-after-ack0"
        return None

    def fire(self, trigger: str) -> None:
        if self.effect == "spin":
            with self.lock:
                if not self.spinning:
                    self.spinning = True
                    threading.Thread(target=_spin, name="planted-spin", daemon=True).start()
            return
        if self.effect == "hang":
            sys.stderr.write(f"planted hang: {trigger}\n")
            sys.stderr.flush()
            threading.Event().wait()
        if self.effect == "grow":
            with self.lock:
                self.kept.append(bytearray(os.urandom(1024)) * (GROWTH // 1024))
            return
        if self.delay:
            threading.Thread(target=self._die_later, args=(trigger,), daemon=True).start()
        else:
            _die(trigger)

    def _die_later(self, trigger: str) -> None:
        time.sleep(self.delay)
        _die(trigger)


def _spin() -> None:
    while True:
        pass


def _die(trigger: str) -> None:
    sys.stderr.write(f"planted crash: {trigger}\nTraceback (most recent call last):\n"
                     f"  File \"parser.py\", line 42, in read_frame\nParseError: {trigger}\n")
    sys.stderr.flush()
    os._exit(70)


class Scanner:
    """Reads the frames of one connection's byte stream (u32 length, u8 type, u64 id, payload)
    and hands each to :meth:`Planted.which`; the bytes then go to the real session."""

    def __init__(self, planted: Planted, session, whole_first_read: bool = False) -> None:
        self.planted, self.session = planted, session
        self.buffer = bytearray()
        self.broken = False
        self.first, self.whole_first_read, self.deaf = True, whole_first_read, False

    def receive(self, data: bytes, now: float):
        if self.first and self.whole_first_read:
            self.first = False
            self.deaf = len(data) < 4 or len(data) < 4 + struct.unpack(">I", data[:4])[0]
        if self.deaf:
            return []
        if not self.broken:
            self.buffer += data
            while len(self.buffer) >= 4:
                (length,) = struct.unpack(">I", self.buffer[:4])
                if length < 9 or length > 16 << 20:
                    self.broken = True            # the session closes the connection
                    break
                if len(self.buffer) < 4 + length:
                    break
                kind = self.buffer[4]
                payload = bytes(self.buffer[13:4 + length])
                del self.buffer[:4 + length]
                trigger = self.planted.which(kind, payload)
                if trigger is not None:
                    self.planted.fire(trigger)
        return self.session.receive(data, now)

    def __getattr__(self, name):
        return getattr(self.session, name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--on", default=",".join(TRIGGERS[:3]),
                        help=f"comma-separated triggers: {', '.join(TRIGGERS)}")
    parser.add_argument("--effect", choices=("crash", "hang", "spin", "grow"), default="crash")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between the input and the crash")
    parser.add_argument("--whole-first-read", action="store_true",
                        help="a first read without the whole HELLO: the connection is never answered")
    args = parser.parse_args()
    triggers = {t for t in args.on.split(",") if t}
    unknown = triggers - set(TRIGGERS)
    if unknown:
        parser.error(f"unknown triggers: {', '.join(sorted(unknown))}")
    planted = Planted(triggers, args.effect, args.delay)
    broker = make_broker(port=args.port, data_dir=args.data_dir)
    make_session = broker.server.make_session
    broker.server.make_session = lambda: Scanner(planted, make_session(), args.whole_first_read)
    server = ThreadedServer(broker).start()
    print(f"listening on 127.0.0.1:{server.address[1]}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
