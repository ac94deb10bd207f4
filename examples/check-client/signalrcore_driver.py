"""A ``wirecheck check-client`` driver for signalrcore (PyPI): SignalR's standard workload
(docs/start/clients.md, "The client suite").

    wirecheck check-client --protocol signalr \
        --client-command "python examples/check-client/signalrcore_driver.py {url} {count}"

Negotiate and the WebSocket to the hub at URL (the JSON hub protocol), COUNT invocations of
``Echo("msg-N")`` printing ``received msg-N`` for each result, a ``Counter(COUNT, 0)`` server
stream printing ``received item-N`` for each item, an upload of ``0 .. COUNT-1`` to ``Sum``
(client-to-server stream), then ``stop()``. What signalrcore reports as an error is printed as
``error TYPE: TEXT`` and the exit status is 1.

How signalrcore is used, and its quirks:

- it is threaded (its own socket code, a receive thread that runs the callbacks); the
  callbacks here only hand values to the main thread, which waits for them. What it drops it
  logs (a stream item with no callback yet: "next stream handler fired, no callback
  configured"), through Python's default handler, on stderr;
- ``start()`` connects synchronously, with no timeout of its own (negotiate over urllib, then
  the WebSocket); it runs in a thread, waited for :data:`WAIT` seconds. The ``{url}`` is given
  as is (``http://.../hub``: it negotiates there and opens the WebSocket at ``/hub?id=...``
  itself);
- ``invoke(method, args, on_invocation=...)`` calls ``on_invocation(CompletionMessage)`` for a
  result; an error Completion does NOT reach ``on_invocation``: signalrcore sends it to the
  connection-wide ``on_error`` callback only (documented: "raised if any hub method throws an
  exception"). The driver registers ``on_error`` and takes an error whose invocation id is the
  pending call's as that call's error;
- ``stream()`` sends the StreamInvocation before it returns the handler to ``subscribe`` to;
  the driver subscribes at once, as its documentation shows. Items (or the Completion) that the
  receive thread handles before that go to signalrcore's default callbacks, which only log
  them: they are lost to the application, and the driver does not hide that (no buffering);
- ``Subject`` (its client-to-server stream) sends the Invocation without an invocationId, so
  the hub's answer to ``Sum`` can never reach the application; the upload is sent and not
  checked;
- a server's Close message is only logged; the socket is then closed and ``on_close`` fires.
  Calls pending at that moment are neither failed nor completed. The driver does not turn
  ``on_close`` into an error for them (that would be the application doing what the library
  does not): it notes it on a ``note`` line, which the kit ignores. A call made after the
  close raises (``HubConnectionError``, or ``ValueError`` from the transport): that is an
  error signalrcore reported;
- ``stop()`` closes the socket under the receive thread and joins that thread, so it returns
  only once the thread wakes up: the server's next frame (a keep-alive Ping comes after 15 s
  of quiet, so a run that succeeds takes about 15 s) or the end of the connection.

Every wait is bounded: if a callback never comes within :data:`WAIT` seconds, the application
would wait forever; the driver prints ``hung <what never came>`` (the kit's verdict: HANG) and exits 1 instead
(saying so when ``on_close`` had fired meanwhile). ``start()`` and ``stop()`` run in a thread of
their own, waited for :data:`WAIT` and :data:`STOP_WAIT` seconds: one that does not return in
that time is reported the same way. After an error, ``stop()`` is given
:data:`STOP_AFTER_ERROR` seconds and the earlier error is the one reported (the kit's
``--budget`` is the outer bound).
"""
import queue
import sys
import threading
import time

from signalrcore.hub_connection_builder import HubConnectionBuilder
from signalrcore.subject import Subject

#: Seconds any one step may take before the driver gives up on the library.
WAIT = 20
#: Seconds ``stop()`` may take (it can wait for the server's next frame: a keep-alive Ping
#: comes every 15 s).
STOP_WAIT = 20
#: Seconds ``stop()`` is given after an error was already reported (the error is what counts;
#: the whole run must stay within the kit's budget).
STOP_AFTER_ERROR = 2


class Timeout(Exception):
    """A step the library never finished (the driver's bound, not the library's error)."""


class LibraryError(Exception):
    """An error signalrcore handed to a callback (an error Completion)."""


def note(text: str) -> None:
    print(f"note {text}", flush=True)


def shown(value) -> str:
    """A result as one word (the kit reads ``received ID``)."""
    return value if isinstance(value, str) and value.isprintable() and " " not in value else f"(other:{value!r})"


class Events:
    """What signalrcore's callbacks report, in order, for the main thread."""

    def __init__(self) -> None:
        self.queue: queue.Queue = queue.Queue()
        self.closed_at: float | None = None

    def put(self, kind: str, value=None) -> None:
        self.queue.put((kind, value))

    def wait_for(self, what: str, want) -> object:
        """Take events until ``want(kind, value)`` answers something other than None (returned);
        an ``error`` event for the pending call raises it; a Timeout after WAIT seconds."""
        deadline = time.monotonic() + WAIT
        while True:
            left = deadline - time.monotonic()
            try:
                kind, value = self.queue.get(timeout=max(left, 0))
            except queue.Empty:
                closed = (f" (on_close had fired {time.monotonic() - self.closed_at:.1f} s before; the "
                          "pending call was never failed)") if self.closed_at is not None else ""
                raise Timeout(f"{what} never came within {WAIT} s{closed}") from None
            got = want(kind, value)
            if got is not None:
                return got


def in_thread(function, what: str, seconds: float):
    """``function()`` run in a thread of its own, waited for ``seconds``: its result, or what it
    raised, or a Timeout (signalrcore's blocking calls have no timeout of their own)."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = function()
        except BaseException as exc:       # noqa: BLE001 - handed to the main thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name=what, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise Timeout(f"the return of {what} never came within {seconds} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def workload(url: str, count: int) -> None:
    events = Events()
    connection = HubConnectionBuilder().with_url(url).build()

    def on_close() -> None:
        events.closed_at = time.monotonic()
        note("on_close: the connection ended (pending calls stay pending)")

    connection.on_open(lambda: events.put("open"))
    connection.on_close(on_close)
    connection.on_error(lambda message: events.put("error", message))

    in_thread(connection.start, "start()", WAIT)
    failed = True
    try:
        events.wait_for("the connection (negotiate, WebSocket, handshake)",
                        lambda kind, value: True if kind == "open" else None)

        def outcome_of(invocation_id: str, what: str):
            def want(kind, value):
                if kind == "error":
                    if getattr(value, "invocation_id", None) == invocation_id:
                        raise LibraryError(f"{what}: {getattr(value, 'error', value)}")
                    note(f"on_error for another call: {getattr(value, 'error', value)}")
                    return None
                if kind == "done" and getattr(value, "invocation_id", None) == invocation_id:
                    return value
                return None
            return want

        for i in range(count):
            call = connection.invoke("Echo", [f"msg-{i}"],
                                     on_invocation=lambda message: events.put("done", message))
            message = events.wait_for(f"the Completion of Echo(msg-{i})",
                                      outcome_of(call.invocation_id, f"Echo(msg-{i})"))
            print(f"received {shown(message.result)}", flush=True)

        handler = connection.stream("Counter", [count, 0])
        handler.subscribe({
            "next": lambda item: print(f"received item-{item}" if isinstance(item, int)
                                       else f"received (other:{item!r})", flush=True),
            "complete": lambda message: events.put("done", message),
            "error": lambda message: events.put("error", message),
        })
        events.wait_for("the end of the Counter stream", outcome_of(handler.invocation_id, "Counter"))

        subject = Subject()
        connection.send("Sum", subject)
        for value in range(count):
            subject.next(value)
        subject.complete()
        failed = False
    finally:
        try:
            in_thread(connection.stop, "stop()", STOP_AFTER_ERROR if failed else STOP_WAIT)
        except Exception:
            if not failed:                 # after an earlier error, that error is reported
                raise


def main() -> int:
    url, count = sys.argv[1], int(sys.argv[2])
    try:
        workload(url, count)
    except Timeout as exc:
        print(f"hung {exc}", flush=True)     # the library never returned: a HANG
        return 1
    except Exception as exc:          # noqa: BLE001 - what signalrcore raised to its application
        print(f"error {type(exc).__name__}: {exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
