"""SignalR hubs that break one rule each, to prove the suite notices (served over raw TCP)."""
from __future__ import annotations

from wirecheck.reference_impl.core.server import SessionServer
from wirecheck.reference_impl.signalr.hub import HubState
from wirecheck.reference_impl.signalr.messages import (Ack, CancelInvocation, Completion, HandshakeRequest,
                                                       Invocation, Sequence, StreamItem)
from wirecheck.reference_impl.signalr.session import HubConfig, HubSession


class StreamsSingleResults(HubSession):
    """Sends Add's result as a StreamItem before the Completion (SIGR-INV-003)."""

    def _call(self, method, iid, arguments, now, out):
        if method.name == "Add" and iid is not None:
            out.append(StreamItem(iid, sum(arguments)))
        super()._call(method, iid, arguments, now, out)


class NoHandshakeResponse(HubSession):
    """Never answers the handshake (SIGR-HS-004)."""

    def _handshake(self, message, out):
        before = len(out)
        super()._handshake(message, out)
        if self.phase == "open":
            del out[before:]


class AcceptsAnyProtocol(HubSession):
    """Answers {} to a protocol it does not have, then speaks JSON (SIGR-HS-002)."""

    def _handshake(self, message, out):
        if isinstance(message, HandshakeRequest) and message.protocol not in self.config.protocols:
            message = HandshakeRequest("json", message.version)
        super()._handshake(message, out)


class StreamEndsWithResult(HubSession):
    """Ends a stream with a Completion carrying a result (SIGR-STR-002)."""

    def _end_stream(self, iid, error):
        if error is None and self.profile != "draft":
            return Completion.with_result(iid, "last")
        return super()._end_stream(iid, error)


class IgnoresProtocolErrors(HubSession):
    """Passes over a message that is a protocol error (a Completion with both result and error,
    SIGR-ERR-006) and goes on: the MAY of SIGR-ERR-010 (end the connection) not taken."""

    def _protocol_error(self, out, category, message):
        if self.phase == "open":
            self.errors.append((category, message))
            return
        super()._protocol_error(out, category, message)

    def receive(self, data, now):
        # The base loop stops reading at a malformed record (it closes the connection then):
        # this hub goes on with whatever followed it in the same read, as it would had the
        # records come in reads of their own (the suite's Echo sent behind the error often
        # shares a read with it on a busy machine). Each pass consumes the bad record.
        out = super().receive(data, now)
        for _ in range(10_000):
            errors = len(self.errors)
            if self.phase != "open" or not self.decoder.buffered or self.decoder.broken:
                break
            out += super().receive(b"", now)
            if len(self.errors) == errors:
                break
        return out


class ClosesWithoutCloseMessage(HubSession):
    """Closes on a protocol error without announcing it with a Close message: a SHOULD broken
    (SIGR-V1-005), no MUST."""

    def _protocol_error(self, out, category, message):
        if self.phase == "open":
            self.errors.append((category, message))
            self._finish()
            return
        super()._protocol_error(out, category, message)


class RefusesAck(HubSession):
    """Takes Ack and Sequence (stateful reconnect, which it does not offer) as a protocol error
    instead of ignoring them: a SHOULD broken (SIGR-V1-006), no MUST."""

    def _dispatch(self, message, now, out):
        if isinstance(message, (Ack, Sequence)):
            self._protocol_error(out, "protocol", f"{type(message).__name__} is not supported")
            return
        super()._dispatch(message, now, out)


class StreamsOnAfterCancel(HubSession):
    """Ignores CancelInvocation, and answers no invocation while a stream runs (SIGR-STR-004):
    the stream goes on and the suite's barrier is never answered."""

    def _dispatch(self, message, now, out):
        if isinstance(message, CancelInvocation):
            return
        if isinstance(message, Invocation) and self._streams:
            return
        super()._dispatch(message, now, out)


def raw_server(session_class, profile: str = "v1") -> SessionServer:
    state = HubState()
    return SessionServer(lambda: session_class(HubConfig(profile=profile), state=state))


class OneCallAtATime(HubSession):
    """Runs one invocation at a time, as the document allows (ASP.NET Core's default of one
    parallel invocation per client): while a client-to-server stream is open, every other
    message but that stream's items and end waits until the call finishes. Not a fault: the
    suite must pass against it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._held: list = []

    def _dispatch(self, message, now, out):
        mine = isinstance(message, (StreamItem, Completion)) and message.invocation_id in self._uploads
        if self._uploads and not mine:
            self._held.append(message)
            return
        super()._dispatch(message, now, out)
        while self._held and not self._uploads:
            super()._dispatch(self._held.pop(0), now, out)
