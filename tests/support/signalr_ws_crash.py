"""The reference SignalR hub (HTTP + WebSocket, and raw TCP) in its own process, made to abort
on the first protocol error it meets (a record that is not a valid message): a planted crash
for the network fuzzer over WebSocket. ``python tests/support/signalr_ws_crash.py PORT``."""
from __future__ import annotations

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from wirecheck.reference_impl.core.server import ThreadedServer  # noqa: E402
from wirecheck.reference_impl.signalr import broker  # noqa: E402
from wirecheck.reference_impl.signalr.session import HubSession  # noqa: E402


class AbortingSession(HubSession):
    def _protocol_error(self, out, category, message):
        sys.stderr.write(f"Fatal: protocol error {category}\n")
        sys.stderr.flush()
        os.abort()


def main() -> None:
    broker.HubSession = AbortingSession          # the class the broker makes its sessions from
    # raw_port=0: only the HTTP port is the test's (port + 1 may be taken)
    server = ThreadedServer(broker.make_broker(port=int(sys.argv[1]), raw_port=0)).start()
    print(f"serving on {server.address}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
