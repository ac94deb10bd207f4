"""A BlipMQ reference broker with one planted fault, for the network fuzzer's tests:
``python -m tests.support.fuzz_faulty_broker --fault crash|hang|garbage --port N``.

- ``crash``: the process aborts on a PING whose length prefix is below the minimum of 9
  (blipmq-protocol.md "Frame Layout"), a frame the real rules refuse and close on;
- ``hang``: the event loop spins forever on a PING with correlation id 0;
- ``garbage``: a PING whose correlation id has the top bit set is answered with bytes that
  are no frame (a length prefix of 3).

No seed session holds any of these (the seeds stop at the first malformed frame; no recorded
PING has id 0 or the top bit set), so the fuzzer must make them.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import struct
import sys

from wirecheck.reference_impl.blipmq.codec import FrameType
from wirecheck.reference_impl.blipmq.session import BlipSession
from tests.support.faulty_targets import broker_with

PING = int(FrameType.PING)


class FaultySession(BlipSession):
    fault = "crash"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._scan = bytearray()

    def receive(self, data, now):
        self._scan += data
        while len(self._scan) >= 13:
            n, kind, cid = struct.unpack_from(">IBQ", self._scan)
            if kind == PING:
                if self.fault == "crash" and n < 9:
                    print("Fatal: frame length underflow in PING", flush=True)
                    os.abort()
                if self.fault == "hang" and cid == 0 and n == 9:
                    while True:
                        pass
                if self.fault == "garbage" and cid >> 63 and n == 9:
                    return [b"\x00\x00\x00\x03\x07"]
            if n < 9 or len(self._scan) < 4 + n:
                break
            del self._scan[:4 + n]
        return super().receive(data, now)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", choices=("crash", "hang", "garbage"), required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    FaultySession.fault = args.fault
    broker = broker_with(FaultySession, args.port)

    async def run() -> None:
        await broker.start()
        print(f"faulty blipmq broker ({args.fault}) listening on 127.0.0.1:{broker.port}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
