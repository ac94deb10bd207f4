"""asyncio glue shared by the reference clients of every protocol.

A :class:`FramedClient` owns one connection: a read loop that feeds the protocol's incremental
decoder and hands each frame to :meth:`on_frame`, a table of futures keyed by whatever the
protocol correlates answers with, and failure propagation: when the connection ends (EOF, reset,
an undecodable frame), every waiter gets :class:`ConnectionClosed` and further writes raise it.
Protocol clients subclass it and add their requests.
"""
from __future__ import annotations

import asyncio
from typing import Hashable

from .errors import FrameError


class ConnectionClosed(Exception):
    """The connection ended; pending requests fail with this."""


class FramedClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, decoder,
                 timeout: float = 10.0) -> None:
        self.reader, self.writer, self.decoder, self.timeout = reader, writer, decoder, timeout
        self._pending: dict[Hashable, asyncio.Future] = {}
        self._closed: BaseException | None = None
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())

    @staticmethod
    async def open_stream(host: str, port: int, timeout: float):
        return await asyncio.wait_for(asyncio.open_connection(host, port), timeout)

    # -- for subclasses ------------------------------------------------------------------------

    def on_frame(self, frame) -> None:
        raise NotImplementedError

    def on_closed(self, exc: ConnectionClosed) -> None:
        """Fail whatever waiters the subclass keeps outside the pending table."""

    def write(self, data: bytes) -> None:
        if self._closed is not None:
            raise ConnectionClosed(str(self._closed))
        self.writer.write(data)

    def expect(self, key: Hashable) -> asyncio.Future:
        """Register a waiter for the answer correlated by ``key``."""
        fut = asyncio.get_running_loop().create_future()
        self._pending[key] = fut
        return fut

    def forget(self, key: Hashable) -> None:
        self._pending.pop(key, None)

    def resolve(self, key: Hashable, value=None, error: BaseException | None = None) -> bool:
        """Complete the waiter for ``key``; False if nobody was waiting for it."""
        fut = self._pending.pop(key, None)
        if fut is None or fut.done():
            return False
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(value)
        return True

    async def request(self, key: Hashable, data: bytes):
        """Send ``data`` and wait (bounded by ``timeout``) for the answer correlated by ``key``."""
        fut = self.expect(key)
        self.write(data)
        await self.writer.drain()
        return await asyncio.wait_for(fut, self.timeout)

    # -- lifecycle -----------------------------------------------------------------------------

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass
        self._reader_task.cancel()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def _read_loop(self) -> None:
        try:
            while data := await self.reader.read(65536):
                for frame in self.decoder.feed(data):
                    self.on_frame(frame)
            self._fail(ConnectionClosed("connection closed by the peer"))
        except (FrameError, ConnectionError, OSError) as exc:
            self._fail(ConnectionClosed(f"connection lost: {exc}"))

    def _fail(self, exc: ConnectionClosed) -> None:
        self._closed = exc
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(exc)
                fut.exception()   # a waiter still gets it; nobody waiting is not an error
        self._pending.clear()
        self.on_closed(exc)
