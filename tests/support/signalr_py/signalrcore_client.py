"""The real client signalrcore (PyPI) against a hub, driven by tests/reference_impl/signalr/test_signalr_real_clients.py.

    python signalrcore_client.py URL json|messagepack yes|no    (third argument: skipNegotiation)

Runs Echo, Add, a server stream (Counter), Remember + Recall, an error (Fail), a server-to-client
call (CallMe), then a client stream (Sum) last, a barrier call (Echo) and stop(). Prints one line
``RESULT <json>``; every wait is bounded. signalrcore is threaded (its own socket code), so the
callbacks below only set ``threading.Event``s.

signalrcore quirks (signalr-real-clients.md):
- every ``send``/``invoke`` carries an invocationId (no true fire-and-forget): Remember is
  answered with a void Completion, which the driver ignores;
- it cannot answer the server with a result (its handlers' return values are dropped), so
  AskMe is not run: the hub would wait for a Completion that never comes;
- its client stream (``Subject``) sends the Invocation without an invocationId, so Sum's result
  can never reach it; in MessagePack the client stream is malformed (``[1, {}, "Sum", [],
  [id]]``: the id slot is missing; the stream end ``[3, {}, id]`` lacks its ResultKind): the
  hub must refuse it (Close with an error, then the socket closes), so Sum comes last;
- its MessagePack reader indexes item 5 (streamIds) of every Invocation, so an Invocation from
  the server written with 5 items (as @microsoft/signalr writes them) would raise inside the
  library and be dropped; the reference hub writes 6 (an empty streamIds, as ASP.NET Core does);
- ``stream()`` sends the StreamInvocation before the caller can subscribe, and loses the items
  that arrive in between (:class:`BufferingStreamHandler` keeps them);
- ``stop()`` closes the socket's descriptor under its blocked receive thread and joins it: it
  returns only when the hub sends its next frame (see SIGNALRCORE_KEEP_ALIVE in the test);
- it reports a server's Close only in its log, and an error Completion only to ``on_error``.
"""
from __future__ import annotations

import json
import logging
import sys
import threading

from signalrcore.hub import base_hub_connection
from signalrcore.hub.handlers import StreamHandler
from signalrcore.hub_connection_builder import HubConnectionBuilder
from signalrcore.subject import Subject
from signalrcore.types import HubProtocolEncoding

STEP = 10.0


class BufferingStreamHandler(StreamHandler):
    """``stream()`` sends the StreamInvocation before it returns the handler to subscribe to,
    and items arriving in between go to a default callback that only logs: the first item is
    lost whenever the hub is quick. This handler keeps them, in order, until ``subscribe``."""

    def __init__(self, event: str, invocation_id: str) -> None:
        super().__init__(event, invocation_id)
        self.early: list = []
        self.user: dict = {}
        self.lock = threading.Lock()
        self.next_callback = lambda item: self._deliver("next", item)
        self.complete_callback = lambda message: self._deliver("complete", message)
        self.error_callback = lambda message: self._deliver("error", message)

    def _deliver(self, kind: str, value) -> None:
        with self.lock:
            if not self.user:
                self.early.append((kind, value))
            else:
                self.user[kind](value)

    def subscribe(self, subscribe_callbacks: dict) -> None:
        with self.lock:
            self.user = {k: subscribe_callbacks[k] for k in ("next", "complete", "error")}
            for kind, value in self.early:
                self.user[kind](value)
            self.early.clear()


base_hub_connection.StreamHandler = BufferingStreamHandler


class Waiter:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.value = None

    def set(self, value=None) -> None:
        self.value = value
        self.event.set()

    def get(self, what: str):
        if not self.event.wait(STEP):
            raise TimeoutError(f"timeout: {what}")
        return self.value


def main(url: str, protocol: str, skip: bool) -> dict:
    logging.getLogger("SignalRCoreClient").setLevel(logging.CRITICAL)
    encoding = HubProtocolEncoding.binary if protocol == "messagepack" else HubProtocolEncoding.text
    connection = (HubConnectionBuilder()
                  .with_url(url, options={"skip_negotiation": skip})
                  .with_hub_protocol(encoding)
                  .build())
    opened, closed, hello = Waiter(), Waiter(), Waiter()
    errors: list = []
    connection.on_open(opened.set)
    connection.on_close(closed.set)
    connection.on_error(lambda message: errors.append(getattr(message, "error", str(message))))
    connection.on("Hello", hello.set)

    def call(method: str, *args):
        done = Waiter()
        before = len(errors)
        connection.invoke(method, list(args), on_invocation=done.set)
        # An error Completion goes to on_error only; poll both.
        for _ in range(int(STEP / 0.01)):
            if done.event.is_set():
                return done.value.result
            if len(errors) > before:
                return {"error": errors[before]}
            if closed.event.is_set():
                raise ConnectionError(f"{method}: the connection is closed")
            done.event.wait(0.01)
        raise TimeoutError(f"timeout: {method}")

    result: dict = {}
    connection.start()
    try:
        opened.get("open")
        result["echo"] = call("Echo", "hello ✓")
        result["add"] = call("Add", 2, 3)

        items: list = []
        ended = Waiter()
        connection.stream("Counter", [5, 10]).subscribe({
            "next": items.append, "complete": ended.set,
            "error": lambda m: ended.set({"error": getattr(m, "error", str(m))})})
        ended.get("Counter")
        result["counter"] = items

        call("Remember", "fire-and-forget")     # has an invocationId anyway (see above)
        result["recall"] = call("Recall")
        result["fail"] = call("Fail", "boom")
        call("CallMe", "Hello", 7)
        # None if the server's Invocation never reached the handler (see the module docstring).
        # signalrcore's socket thread runs "Hello" before it reads CallMe's Completion (the
        # hub sends them in that order), so a short grace is enough.
        result["callme"] = hello.value if hello.event.wait(1.0) else None

        subject = Subject()
        try:
            connection.send("Sum", subject)
            for n in (1, 2, 3, 4):
                subject.next(n)
            subject.complete()
            result["after_sum"] = call("Echo", "still open")         # barrier
        except (TimeoutError, ValueError, OSError) as exc:
            # The hub closed on the malformed Sum (MessagePack): depending on timing, the
            # library fails on an item it sends after the close, or on the barrier call.
            # (OSError covers the ConnectionError raised by call() once closed)
            result["after_sum"] = {"failed": f"{type(exc).__name__}: {exc}"}
        result["closed_by_server"] = closed.event.wait(STEP if "failed" in str(result["after_sum"])
                                                       else 0)
        result["errors"] = errors
    finally:
        connection.stop()
    return result


if __name__ == "__main__":
    out = main(sys.argv[1], sys.argv[2], sys.argv[3] == "yes")
    print("RESULT " + json.dumps(out), flush=True)
