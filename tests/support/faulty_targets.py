"""Targets that break one rule each, to prove the suite notices (and a black hole)."""
from __future__ import annotations

import socket
import threading

from wirecheck.reference_impl.blipmq import codec
from wirecheck.reference_impl.blipmq.broker import make_broker
from wirecheck.reference_impl.blipmq.codec import Ack, FrameType, Nack, Pong
from wirecheck.reference_impl.blipmq.session import BlipSession, Phase


class WrongNackCode(BlipSession):
    """Answers an empty-topic PUBLISH with 401 instead of 400."""

    def _nack(self, raw, code, message):
        if message == "empty topic" and raw.type is FrameType.PUBLISH:
            code = 401
        super()._nack(raw, code, message)


class WrongPongId(BlipSession):
    """Echoes PING's correlation id + 1."""

    def _on_ping(self, raw):
        self._send(Pong(raw.correlation_id + 1))


class NoCloseOnUnknownType(BlipSession):
    """Skips frames of unknown type instead of closing."""

    def receive(self, data, now):
        out = []
        for frame in _split_frames(data):
            if frame[4] not in {int(t) for t in FrameType}:
                continue
            out.extend(super().receive(frame, now))
        return out


class RenamedDuplicateHello(BlipSession):
    """A SHOULD-level deviation: another message for a second HELLO."""

    def _nack(self, raw, code, message):
        if message == "HELLO already performed":
            message = "duplicate HELLO"
        self._out.append(codec.encode(Nack(raw.correlation_id, code, message)))


class WrongAuthAckId(BlipSession):
    """Answers a good AUTH with an ACK whose correlation id is the AUTH's + 1 (a MUST broken,
    not a refusal of the credentials: the suite must judge it, not the preflight send it away)."""

    def _send(self, frame):
        if self.phase is Phase.READY and isinstance(frame, Ack) and not self._acked_auth:
            self._acked_auth = True
            frame = Ack(frame.correlation_id + 1, frame.subscription_id)
        super()._send(frame)

    _acked_auth = False


class SilentAfterHello(BlipSession):
    """Answers the HELLO and then nothing: a good AUTH gets no answer."""

    def _on_auth(self, raw):
        return None


def _split_frames(data):
    pos = 0
    while pos + 4 <= len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        yield data[pos:pos + 4 + n]
        pos += 4 + n


def broker_with(session_class, port: int = 0):
    broker = make_broker(port=port)
    state, config = broker.state, broker.server.make_session().config
    broker.server.make_session = lambda: session_class(state, config)
    return broker


class BlackHole:
    """Accepts connections, reads and discards everything, never answers, never closes."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._drain, args=(conn,), daemon=True).start()

    @staticmethod
    def _drain(conn) -> None:
        try:
            while conn.recv(1 << 20):
                pass
        except OSError:
            pass

    def close(self) -> None:
        self._stop = True
        self.sock.close()
        for c in self.conns:
            c.close()
