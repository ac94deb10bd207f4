"""A planted SignalR hub (the reference hub, HTTP + WebSocket, in its own process) that dies on a
record split across WebSocket messages, as a server that parses each message as whole records
does: a text message that does not end at a record separator, or a binary message whose last
VarInt-prefixed record runs past its end (the handshake, JSON in either encoding, included).
A split over WebSocket is content, not timing: each message's bounds are what the client sent.

A length prefix above 16 MiB, or one longer than five bytes, is no split (another defect,
which the suite's invalid-prefix tests send): the hub answers those as the reference does.

``--bare``: instead, a hub with none of what a hub may lack: no client results (``AskMe`` is
not a method: its invocations get the "unknown method" Completion), no handshake timeout and
no client timeout (a silent connection is kept). A profile file says so (``[features]
client_results``, ``handshake_timeout``, ``client_timeout`` false) and no test may then fail.

``--idless-completions``: instead, the reference hub with one defect: every non-blocking
invocation (v1: no invocationId) is answered with a Completion that has no invocationId, as an
independent hub did. The one rule it breaks is SIGR-INV-007; every value still carries through.

``--silent-refusals``: instead, the reference hub with one defect: a failed handshake (an
unsupported protocol, a first message that is not a handshake) is closed without the v1 error
response; only SIGR-HS-005 is broken.

``--lenient``: instead, the reference hub that passes over a message it reads but finds wrong
past the handshake (an id never invoked, reused, finished) and goes on: the document allows it
("may ... terminate", SIGR-ERR-010), so no test may fail.

``python tests/support/planted_signalr.py --port P [--bare | --idless-completions | --silent-refusals | --lenient] [--draft]``
(serves ``http://127.0.0.1:P/hub``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from wirecheck.reference_impl.core.server import ThreadedServer  # noqa: E402
from wirecheck.reference_impl.signalr import broker  # noqa: E402
from wirecheck.reference_impl.signalr.messages import Invocation  # noqa: E402
from wirecheck.reference_impl.signalr.session import HANDSHAKE, HubProtocolError, HubSession  # noqa: E402

RS = b"\x1e"
#: A declared record longer than this is not a split record but a length out of bounds.
MAX_RECORD = 16 << 20


def _binary_split(data: bytes) -> bool:
    """Whether VarInt-prefixed records in ``data`` end inside one."""
    pos = 0
    while pos < len(data):
        length = shift = 0
        while True:
            if pos >= len(data):
                return True                  # the prefix itself runs past the message
            byte = data[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
            if shift >= 35:
                return False                 # an invalid prefix: not a split
        if length > MAX_RECORD:
            return False
        if pos + length > len(data):
            return True
        pos += length
    return False


def splits_a_record(protocol: str | None, data: bytes) -> bool:
    if protocol is None:                     # the handshake: JSON text ending at 0x1e
        end = data.find(RS)
        if end < 0:
            return True
        try:
            protocol = json.loads(data[:end]).get("protocol")
        except (ValueError, AttributeError):
            return False                     # not a handshake: the hub answers that
        data = data[end + 1:]
        if not data:
            return False
    if protocol == "messagepack":
        return _binary_split(data)
    return not data.endswith(RS)


class SplitCrashSession(HubSession):
    def receive(self, data: bytes, now: float) -> list[bytes]:
        if self.transport == "websocket" and data and splits_a_record(self.protocol, data):
            sys.stderr.write("planted crash: record split across WebSocket messages\n"
                             "Traceback (most recent call last):\n"
                             '  File "hub_reader.py", line 88, in read_message\n'
                             "IncompleteRecordError: message ends inside a record\n")
            sys.stderr.flush()
            os._exit(71)
        return super().receive(data, now)


#: The id-less Completion, by hub protocol: JSON ``{"type":3,"result":null}``, MessagePack
#: ``[3, {}, nil, 2]`` (void) behind its VarInt length.
IDLESS_COMPLETION = {"json": b'{"type":3,"result":null}\x1e', "messagepack": b"\x05\x94\x03\x80\xc0\x02"}


class IdlessCompletionSession(HubSession):
    def _dispatch(self, message, now: float, out: list) -> None:
        handshaken = self.protocol is not None
        super()._dispatch(message, now, out)
        if handshaken and type(message) is Invocation and message.invocation_id is None:
            out.append(IDLESS_COMPLETION[self.protocol])


class LenientSession(HubSession):
    """Past the handshake, a message the hub reads but finds wrong (an id never invoked, reused
    or finished: a HubProtocolError) is passed over and the connection goes on, as the
    document allows (SIGR-ERR-010 "may ... terminate"); what does not decode still closes."""
    def _dispatch(self, message, now: float, out: list) -> None:
        try:
            super()._dispatch(message, now, out)
        except HubProtocolError:
            if self.phase == HANDSHAKE:
                raise


class SilentRefusalSession(HubSession):
    def _handshake_failed(self, out: list, reason: str) -> None:
        self._finish()                      # no {"error": ...} first


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--bare", action="store_true", help="no client results, no timers (and no crash)")
    parser.add_argument("--silent-refusals", action="store_true",
                        help="failed handshakes closed without the error response (and no crash)")
    parser.add_argument("--draft", action="store_true", help="the hub reads the draft document (profile draft)")
    parser.add_argument("--lenient", action="store_true",
                        help="protocol errors the hub reads past the handshake passed over (and no crash)")
    parser.add_argument("--idless-completions", action="store_true",
                        help="non-blocking invocations answered by a Completion without id (and no crash)")
    args = parser.parse_args()
    options = {}
    if args.bare:
        from wirecheck.reference_impl.signalr import hub
        del hub.METHODS["AskMe"]
        options = {"handshake_timeout": 1e9, "client_timeout": 1e9}
    elif args.idless_completions:
        broker.HubSession = IdlessCompletionSession
    elif args.lenient:
        broker.HubSession = LenientSession
    elif args.silent_refusals:
        broker.HubSession = SilentRefusalSession
    else:
        broker.HubSession = SplitCrashSession        # the class the hub makes its sessions from
    if args.draft:
        options["profile"] = "draft"
    server = ThreadedServer(broker.make_broker(port=args.port, raw_port=0, **options)).start()
    print(f"serving http://127.0.0.1:{server.address[1]}/hub", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
