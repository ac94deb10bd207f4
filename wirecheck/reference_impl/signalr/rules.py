"""Invocation rules of the document ("Completion and results", "Errors"), as data both sides
use: the server session checks the client, the client checks the server, and an observer can
check both directions of a recorded conversation with the same tables.

An :class:`InvocationBook` belongs to one endpoint and records the invocations it *sent*
(``sent_invocation``), then judges every response the peer sends for them
(``peer_response``), and it records the invocation ids the *peer* used (``peer_invocation``)
to catch reuse. A breach raises :class:`HubProtocolError` with its own :class:`Violation`.
"""
from __future__ import annotations

from collections import OrderedDict
from enum import StrEnum
from typing import Optional


class Violation(StrEnum):
    """Session-level protocol errors of "Errors" (each its own category)."""
    UNKNOWN_INVOCATION_ID = "UNKNOWN_INVOCATION_ID"          # response to an id never invoked
    RESPONSE_TO_NONBLOCKING = "RESPONSE_TO_NONBLOCKING"      # response to a non-blocking call
    AFTER_COMPLETION = "AFTER_COMPLETION"                    # any message after the Completion
    COMPLETION_AFTER_STREAM_ITEM = "COMPLETION_AFTER_STREAM_ITEM"   # draft: a result after items
    STREAM_ITEM_FOR_SINGLE_RESULT = "STREAM_ITEM_FOR_SINGLE_RESULT"  # v1: items for an Invocation
    DUPLICATE_INVOCATION_ID = "DUPLICATE_INVOCATION_ID"      # an id the sender already used
    HANDSHAKE_FIRST = "HANDSHAKE_FIRST"                      # anything before the handshake
    MALFORMED_MESSAGE = "MALFORMED_MESSAGE"                  # a FrameError (its category says which)


class HubProtocolError(Exception):
    def __init__(self, violation: Violation, message: str) -> None:
        super().__init__(message)
        self.violation = violation
        self.message = message


#: How many finished ids each book remembers (AFTER_COMPLETION, DUPLICATE checks): bounded.
REMEMBER = 4096

# States of an invocation this endpoint sent.
SINGLE, STREAM, NONBLOCKING, DONE = "single", "stream", "nonblocking", "done"


class InvocationBook:
    def __init__(self, profile: str = "v1", remember: int = REMEMBER) -> None:
        self.profile = profile
        self.remember = remember
        self._sent: OrderedDict[str, list] = OrderedDict()      # id -> [state, items seen]
        self._peer_ids: OrderedDict[str, None] = OrderedDict()

    # -- what this endpoint sends ----------------------------------------------------------------

    def sent_invocation(self, invocation_id: Optional[str], streaming: bool = False,
                        nonblocking: bool = False) -> None:
        if invocation_id is None:
            return
        self._remember(self._sent, invocation_id, [NONBLOCKING if nonblocking else STREAM if streaming else SINGLE, 0])

    def outstanding(self, invocation_id: str) -> bool:
        entry = self._sent.get(invocation_id)
        return entry is not None and entry[0] in (SINGLE, STREAM)

    # -- what the peer sends ---------------------------------------------------------------------

    def peer_response(self, kind: str, invocation_id: str, has_result: bool = False) -> None:
        """``kind``: "item" (StreamItem), "completion" (Completion) or "stream_completion"."""
        entry = self._sent.get(invocation_id)
        if entry is None:
            raise HubProtocolError(Violation.UNKNOWN_INVOCATION_ID,
                                   f"{_names[kind]} for invocation id {invocation_id!r}, never invoked")
        state = entry[0]
        if state == NONBLOCKING:
            raise HubProtocolError(Violation.RESPONSE_TO_NONBLOCKING,
                                   f"{_names[kind]} for the non-blocking invocation {invocation_id!r}")
        if state == DONE:
            raise HubProtocolError(Violation.AFTER_COMPLETION,
                                   f"{_names[kind]} for invocation {invocation_id!r} after its completion")
        if kind == "item":
            if self.profile != "draft" and state == SINGLE:
                raise HubProtocolError(Violation.STREAM_ITEM_FOR_SINGLE_RESULT,
                                       f"StreamItem for the single-result invocation {invocation_id!r}")
            entry[1] += 1
            return
        if kind == "completion" and entry[1]:
            # Draft: "a protocol error ... to send a Completion message when a StreamItem
            # message has previously been sent"; v1 ends a stream with a Completion, which
            # must then carry no result.
            if self.profile == "draft" or has_result:
                raise HubProtocolError(Violation.COMPLETION_AFTER_STREAM_ITEM,
                                       f"Completion{' with a result' if has_result else ''} for "
                                       f"{invocation_id!r} after {entry[1]} StreamItem(s)")
        entry[0] = DONE

    def peer_invocation(self, invocation_id: Optional[str], active: bool = False) -> None:
        """The peer starts an invocation. Draft: any reuse of an id is an error ("an Invocation
        ID that has already been used by that endpoint"); v1 servers only refuse an id still
        in use, and only to a call that starts a stream (ASP.NET Core's dispatcher checks it
        there alone): the caller says so with ``active``."""
        if invocation_id is None:
            return
        if invocation_id in self._peer_ids and (self.profile == "draft" or active):
            raise HubProtocolError(Violation.DUPLICATE_INVOCATION_ID,
                                   f"invocation id {invocation_id!r} already used")
        self._remember(self._peer_ids, invocation_id, None)

    def _remember(self, book: OrderedDict, key: str, value) -> None:
        book[key] = value
        book.move_to_end(key)
        while len(book) > self.remember:
            book.popitem(last=False)


_names = {"item": "StreamItem", "completion": "Completion", "stream_completion": "StreamCompletion"}
