"""A BlipMQ reference broker as its own process that dies (``os._exit``, as a crash does: no
goodbye on any socket) when its Nth connection arrives, or hangs (stops answering, keeps
accepting) with ``--hang``; or, still answering, starts a thread that spins for good at its
Nth connection (``--spin-on N``), or keeps a descriptor open for every connection
(``--leak-fds``). ``python -m tests.support.crashing_target --crash-on N`` prints its port;
with ``--port P`` (as ``--target-command`` runs it) it listens there until it is killed."""
from __future__ import annotations

import argparse
import os
import sys
import threading

from wirecheck.reference_impl.blipmq.broker import make_broker
from wirecheck.reference_impl.core.server import ThreadedServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--crash-on", type=int, default=0, help="the connection that kills it")
    parser.add_argument("--spin-on", type=int, default=0, help="the connection that starts a spinning thread")
    parser.add_argument("--leak-fds", action="store_true", help="a descriptor never closed per connection")
    parser.add_argument("--hang", action="store_true", help="stop answering instead of exiting")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--data-dir", default=None, help="the broker's WAL (crash recovery)")
    args = parser.parse_args()
    broker = make_broker(port=args.port, data_dir=args.data_dir)
    make_session = broker.server.make_session
    count = 0
    stuck = threading.Event()

    leaked = []

    def spin():
        while True:
            pass

    def counting():
        nonlocal count
        count += 1
        if args.leak_fds:
            leaked.append(open(os.devnull, "rb"))
        if count == args.spin_on:
            threading.Thread(target=spin, name="spinner", daemon=True).start()
        if count == args.crash_on:
            if args.hang:
                stuck.set()
            else:
                os._exit(70)
        if stuck.is_set():
            stuck.wait()
            threading.Event().wait()         # never returns: the event loop is stuck
        return make_session()

    broker.server.make_session = counting
    server = ThreadedServer(broker).start()
    print(server.address[1], flush=True)
    if sys.stdin.isatty() or args.port:      # run by --target-command: until it is killed
        threading.Event().wait()
    sys.stdin.read()                         # ends when the test closes our stdin


if __name__ == "__main__":
    main()
