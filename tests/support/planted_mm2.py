"""A planted Micromessage2 server (the reference broker in its own process) with one defect: it
dies on a SEND whose properties hold two or more entries, as an independent server's property
parser did (it read the first entry and then ran off the list at the separator). Run with a
profile that turns ``pubsub`` off (that server had none): the suite must still send it such a
SEND (tests/conformance/suites/test_mm2_without_pubsub.py).

``python tests/support/planted_mm2.py --port P`` (prints ``listening on 127.0.0.1:P``).
"""
from __future__ import annotations

import argparse
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from wirecheck.reference_impl.core.server import ThreadedServer  # noqa: E402
from wirecheck.reference_impl.micromessage2 import broker as mm2_broker  # noqa: E402
from wirecheck.reference_impl.micromessage2.session import MM2Session  # noqa: E402


class PropertyListCrash(MM2Session):
    def _on_send(self, message) -> None:
        if len(message.properties) >= 2:
            sys.stderr.write("planted crash: a SEND with a list of properties\n"
                             "Traceback (most recent call last):\n"
                             '  File "properties.py", line 31, in read_properties\n'
                             "IndexError: property list ran past its end\n")
            sys.stderr.flush()
            os._exit(70)
        super()._on_send(message)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    mm2_broker.MM2Session = PropertyListCrash       # the class the broker makes its sessions from
    server = ThreadedServer(mm2_broker.make_broker(port=args.port)).start()
    print(f"listening on 127.0.0.1:{server.address[1]}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
