"""The test hub of the reference server: one method per interaction kind of the document.

Methods are data (name, parameter checks, client-stream count, kind), so the session binds
and dispatches them generically and the suite can list them. Nothing here does I/O or reads
a clock: a server stream is a :class:`StreamPlan` (items, the interval between them, a final
error) that the session plays on its ticks.

==================  ==================================  ======================================
method              kind                                document example it mirrors
==================  ==================================  ======================================
Echo(text)          single result                       Add ("Single Result")
Add(x, y)           single result                       Add
Nothing()           void (Completion without result)    NonBlocking's void method
Fail(message)       error result                        SingleResultFailure
Batched(count)      single result holding a list        Batched ("Batched Result")
Counter(n, ms)      server stream 0..n-1, one per ms    Stream ("Streamed Result")
StreamFailure(n)    stream 0..n-1 then error            StreamFailure
Endless(ms)         stream until CancelInvocation       "Streamed Result closed early"
Sum(stream)         client-to-server stream of ints     (v1: streamIds)
Remember(value)     fire-and-forget target              NonBlocking
Recall()            the last value Remember stored      (proves a fire-and-forget arrived)
CallMe(m, arg)      server invokes client method m      (server -> client Invocation)
AskMe(m, arg)       server invokes m with an id and     (v1 client results; draft: the server
                    returns the client's result          as Caller)
==================  ==================================  ======================================
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

#: The document's error text for StreamFailure ("Ran out of data!").
STREAM_FAILURE_ERROR = "Ran out of data!"
#: Endless streams tick at least this often apart (a zero interval would flood).
MIN_ENDLESS_INTERVAL = 0.001
#: Upper bounds on what one call may ask for.
MAX_COUNT = 1_000_000
MAX_DELAY_MS = 60_000


class HubError(Exception):
    """The method failed; the message goes to the caller as the Completion's error."""


class _Void:
    def __repr__(self) -> str:
        return "VOID"


VOID = _Void()


@dataclass
class StreamPlan:
    items: Iterator[Any]
    interval: float = 0.0            # seconds between items (the first goes at once)
    error: Optional[str] = None      # sent after the last item instead of a clean end


@dataclass(frozen=True)
class ClientCall:
    """Invoke ``target(*arguments)`` on the client; ``expect_result``: with an id, and the
    method's own result is the client's Completion."""
    target: str
    arguments: list
    expect_result: bool = False
    then: Any = VOID                 # result of the hub method when not expecting one


@dataclass
class ConnectionContext:
    """Per-connection state a method may use."""
    connection_id: str = ""
    remembered: Any = None


@dataclass
class HubState:
    """Shared by every connection of one server."""
    connections: int = 0
    invocations: int = 0
    counters: dict = field(default_factory=dict)


# --- parameter checks: return the value or raise HubError ------------------------------------

def _int(value, name: str) -> int:
    if type(value) is not int:
        raise HubError(f"'{name}' must be an integer")
    return value


def _count(value, name: str) -> int:
    value = _int(value, name)
    if not 0 <= value <= MAX_COUNT:
        raise HubError(f"'{name}' must be 0..{MAX_COUNT}")
    return value


def _delay(value, name: str) -> float:
    value = _int(value, name)
    if not 0 <= value <= MAX_DELAY_MS:
        raise HubError(f"'{name}' must be 0..{MAX_DELAY_MS} ms")
    return value / 1000.0


def _str(value, name: str) -> str:
    if type(value) is not str:
        raise HubError(f"'{name}' must be a string")
    return value


def _any(value, name: str):
    return value


@dataclass(frozen=True)
class Method:
    name: str
    params: tuple[tuple[str, Callable], ...]
    call: Callable[..., Any]          # (ctx, *args[, stream items]) -> value | VOID | StreamPlan | ClientCall
    streaming: bool = False           # results are a server stream
    client_streams: int = 0           # trailing parameters fed by client streams

    @property
    def arity(self) -> int:
        return len(self.params) + self.client_streams


def _remember(ctx: ConnectionContext, value):
    ctx.remembered = value
    return VOID


def _fail(ctx, message: str):
    raise HubError(message)


def _sum(ctx, items: list):
    total = 0
    for item in items:
        if type(item) is not int:
            raise HubError("Sum takes a stream of integers")
        total += item
    return total


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("Echo", (("text", _str),), lambda ctx, text: text),
    Method("Add", (("x", _int), ("y", _int)), lambda ctx, x, y: x + y),
    Method("Nothing", (), lambda ctx: VOID),
    Method("Fail", (("message", _str),), _fail),
    Method("Batched", (("count", _count),), lambda ctx, n: list(range(n))),
    Method("Counter", (("count", _count), ("delayMs", _delay)),
           lambda ctx, n, delay: StreamPlan(iter(range(n)), delay), streaming=True),
    Method("StreamFailure", (("count", _count),),
           lambda ctx, n: StreamPlan(iter(range(n)), 0.0, STREAM_FAILURE_ERROR), streaming=True),
    Method("Endless", (("delayMs", _delay),),
           lambda ctx, delay: StreamPlan(itertools.count(), max(delay, MIN_ENDLESS_INTERVAL)),
           streaming=True),
    Method("Sum", (), _sum, client_streams=1),
    Method("Remember", (("value", _any),), _remember),
    Method("Recall", (), lambda ctx: ctx.remembered),
    Method("CallMe", (("method", _str), ("argument", _any)),
           lambda ctx, m, arg: ClientCall(m, [arg], False, True)),
    Method("AskMe", (("method", _str), ("argument", _any)),
           lambda ctx, m, arg: ClientCall(m, [arg], True)),
)}


def bind(method: Method, arguments: list) -> list:
    """Check the arguments of a call; HubError with the reason on a mismatch."""
    if len(arguments) != len(method.params):
        raise HubError(f"Invocation provides {len(arguments)} argument(s) but target expects "
                       f"{len(method.params)}.")
    return [check(value, name) for (name, check), value in zip(method.params, arguments)]
