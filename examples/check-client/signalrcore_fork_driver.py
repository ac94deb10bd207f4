"""A ``wirecheck check-client`` driver for the forks of signalrcore 0.9.x on PyPI, which keep its
0.9 API (``send(..., on_invocation)``, ``stream(...).subscribe``, ``Subject``) under their own
package names: signalrcore-deng 0.9.6, signalrcorePPI 0.9.2 and xy-signalrcore 1.0.1 (module
``signalrcore``), signalrcore1 1.1.7 (module ``signalrcore1``), signalrcoreplus 0.10.3 (module
``signalrcoreplus``). SignalR's standard workload (docs/start/clients.md, "The client suite").

    wirecheck check-client --protocol signalr \
        --client-command "python examples/check-client/signalrcore_fork_driver.py MODULE {url} {count}"

MODULE is the fork's import name. Three forks install a top-level ``signalrcore`` (the name of
signalrcore itself) and they pin old ``websocket-client`` and ``msgpack`` releases: each needs an
environment of its own.

Negotiate and the WebSocket to the hub at URL (the JSON hub protocol), COUNT invocations of
``Echo("msg-N")`` printing ``received msg-N`` for each result, a ``Counter(COUNT, 0)`` server
stream printing ``received item-N`` for each item, an upload of ``0 .. COUNT-1`` to ``Sum``
through a ``Subject``, then ``stop()``. What the library reports as an error is printed as
``error TYPE: TEXT`` and the exit status is 1.

How the 0.9 API is used, and its quirks:

- it is threaded (websocket-client's ``run_forever`` and its callbacks); the callbacks only hand
  values to the main thread, which waits for them;
- it is configured with an ``access_token_factory`` (a constant token), as the forks' READMEs
  show: without one, signalrcorePPI's ``build()`` fails (``UnboundLocalError: ... 'auth_function'``:
  it passes ``auth_function`` on in the branch that never set it) and signalrcore1's ``start()``
  fails (``KeyError: 'Authorization'``: it logs ``self.headers['Authorization']``
  unconditionally). The same path is taken for all five, so they are compared alike;
- ``start()`` negotiates (``requests``), then runs the socket: in a thread of its own in most
  forks, in the calling thread in signalrcore1 (its ``start()`` returns only when the socket
  ends). So ``start()`` runs in a thread here and the driver waits for ``on_open`` (the
  handshake's answer) or for ``start()`` failing, :data:`WAIT` seconds;
- ``send(method, args, on_invocation)`` calls ``on_invocation(CompletionMessage)`` for the
  Completion, an error Completion included (``.error`` set; it also goes to ``on_error``);
- ``stream()`` sends the StreamInvocation before it returns the handler to ``subscribe`` to;
  items handled before that go to default callbacks that only log them (lost, not hidden here);
- ``Subject`` sends its Invocation without an invocationId: the hub's answer to ``Sum`` can
  never reach the application, so the upload is sent and not checked;
- a server Close is only logged, then ``stop()`` is called (signalrcore1: ``start()`` again);
  pending calls are neither failed nor completed. ``on_close`` is noted on a ``note`` line
  (the kit ignores it) and not turned into an error (the library does not do that).

Every wait is bounded: a callback that never comes within :data:`WAIT` seconds is printed as
``hung <what never came>`` (the kit's verdict: HANG) and the exit status is 1.
"""
import importlib
import logging
import queue
import sys
import threading
import time

#: Seconds any one step may take before the driver gives up on the library.
WAIT = 20
#: Seconds ``stop()`` may take.
STOP_WAIT = 5
#: The bearer token the access_token_factory hands over (the kit's hub checks none).
TOKEN = "wirecheck"


class Timeout(Exception):
    """A step the library never finished (the driver's bound, not the library's error)."""


class LibraryError(Exception):
    """An error the library handed to a callback (an error Completion)."""


def note(text: str) -> None:
    print(f"note {text}", flush=True)


def shown(value) -> str:
    """A result as one word (the kit reads ``received ID``)."""
    return value if isinstance(value, str) and value.isprintable() and " " not in value else f"(other:{value!r})"


class Events:
    """What the library's callbacks report, in order, for the main thread."""

    def __init__(self) -> None:
        self.queue: queue.Queue = queue.Queue()
        self.closed_at: float | None = None

    def put(self, kind: str, value=None) -> None:
        self.queue.put((kind, value))

    def wait_for(self, what: str, kind_wanted: str):
        """The value of the next ``kind_wanted`` event; a ``failed`` event raises; a Timeout."""
        deadline = time.monotonic() + WAIT
        while True:
            try:
                kind, value = self.queue.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                closed = (f" (on_close had fired {time.monotonic() - self.closed_at:.1f} s before; the "
                          "pending call was never failed)") if self.closed_at is not None else ""
                raise Timeout(f"{what} never came within {WAIT} s{closed}") from None
            if kind == "failed":
                raise value
            if kind == kind_wanted:
                return value


def workload(module: str, url: str, count: int) -> None:
    builder = importlib.import_module(f"{module}.hub_connection_builder")
    subject_module = importlib.import_module(f"{module}.subject")
    events = Events()
    # an access_token_factory, as the forks' README shows: signalrcorePPI and signalrcore1 cannot
    # connect without one (see the header); the token is sent as "Authorization: Bearer ..."
    connection = builder.HubConnectionBuilder().with_url(url, options={"access_token_factory": lambda: TOKEN}) \
        .configure_logging(logging.CRITICAL).build()

    def on_close(*_) -> None:
        events.closed_at = time.monotonic()
        note("on_close: the connection ended (pending calls stay pending)")

    connection.on_open(lambda *_: events.put("open"))
    connection.on_close(on_close)
    connection.on_error(lambda message: note(f"on_error: {getattr(message, 'error', message)}"))

    def run_start() -> None:
        try:
            connection.start()
        except BaseException as exc:       # noqa: BLE001 - handed to the main thread
            events.put("failed", exc)

    threading.Thread(target=run_start, name="start()", daemon=True).start()
    failed = True
    try:
        events.wait_for("the connection (negotiate, WebSocket, handshake)", "open")
        for i in range(count):
            connection.send("Echo", [f"msg-{i}"], on_invocation=lambda message: events.put("done", message))
            message = events.wait_for(f"the Completion of Echo(msg-{i})", "done")
            if getattr(message, "error", None):
                raise LibraryError(f"Echo(msg-{i}): {message.error}")
            print(f"received {shown(message.result)}", flush=True)

        handler = connection.stream("Counter", [count, 0])
        handler.subscribe({
            "next": lambda item: print(f"received item-{item}" if isinstance(item, int)
                                       else f"received (other:{item!r})", flush=True),
            "complete": lambda message: events.put("done", message),
            "error": lambda message: events.put(
                "failed", LibraryError(f"Counter: {getattr(message, 'error', message)}")),
        })
        message = events.wait_for("the end of the Counter stream", "done")
        if getattr(message, "error", None):
            raise LibraryError(f"Counter: {message.error}")

        subject = subject_module.Subject()
        connection.send("Sum", subject)
        for value in range(count):
            subject.next(value)
        subject.complete()
        failed = False
    finally:
        stopper = threading.Thread(target=connection.stop, name="stop()", daemon=True)
        stopper.start()
        stopper.join(STOP_WAIT)
        if stopper.is_alive() and not failed:
            raise Timeout(f"the return of stop() never came within {STOP_WAIT} s")


def main() -> int:
    module, url, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    try:
        workload(module, url, count)
    except Timeout as exc:
        print(f"hung {exc}", flush=True)     # the library never returned: a HANG
        return 1
    except Exception as exc:          # noqa: BLE001 - what the library raised to its application
        print(f"error {type(exc).__name__}: {exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
