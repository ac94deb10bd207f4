"""A real RabbitMQ as the kit's ``--target-command``: one node in the foreground, its stream
port and data where the command line says, so that the kit can kill it (``kill -9`` of its
process group) and start it again on the same data:

    python tests/support/rabbitmq_target.py --port {port} --data-dir {data_dir}

The node's name is derived from the data directory (RabbitMQ keeps a node's data under its
name), so every start on one directory is the same node. Configuration as
tools/rabbitmq_real.py writes it (guest/guest, vhost ``/``, the stream plugin, loopback only).

**Warm-up on a new data directory.** RabbitMQ 3.10.8 creates its stream coordinator at the
node's first stream Create, and Ra records the coordinator's name in a file it writes to disk
only every 500 ms (``names.dets``, auto-saved) or at a clean stop. A kill -9 within about half
a second of that first Create loses the record: after the restart the coordinator is never
started again and every stream answers "stream not available" (code 6) for good (seen: 300 s).
That is a real defect the crash-recovery tests do find (RMQS-STORE-*), but not the one a
deployment meets (its coordinator was created long before any crash). So the first start on
a directory runs the node once, creates a stream, waits, and stops it cleanly; then the node
the kit sees is started.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tools.rabbitmq_real import SERVER, RealRabbitMQ, available, stream_handshake  # noqa: E402
from wirecheck.conformance.target.process import free_port  # noqa: E402

#: Seconds the warm-up waits after its Create (Ra's auto-save is every 0.5 s).
SETTLE = 3.0


def warm_up(node: RealRabbitMQ, env: dict, data_dir: str) -> None:
    """Start the node, create a stream, let the coordinator's registration reach the disk, stop
    the node cleanly."""
    proc = subprocess.Popen([SERVER], env=env, cwd=data_dir, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                stream_handshake(node.host, node.stream_port, create="wirecheck-warm-up")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"RabbitMQ did not start for the warm-up (exit {proc.poll()})")
                time.sleep(0.25)
        time.sleep(SETTLE)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="the stream port")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    if not available():
        print(f"RabbitMQ server not found at {SERVER}", file=sys.stderr)
        return 2
    data_dir = os.path.abspath(args.data_dir)
    os.makedirs(data_dir, exist_ok=True)
    node = RealRabbitMQ(host=args.host)
    node.nodename = f"wirecheck-{hashlib.sha256(data_dir.encode()).hexdigest()[:12]}@localhost"
    marker = os.path.join(data_dir, "wirecheck-warmed-up")
    if not os.path.exists(marker):
        # on a port of its own: the kit, which watches --port, must not take it for the target
        node.stream_port = free_port(args.host)
        warm_up(node, node._write_files(data_dir), data_dir)
        open(marker, "w").close()
    node.stream_port = args.port
    env = node._write_files(data_dir)
    os.chdir(data_dir)
    os.execve(SERVER, [SERVER], env)
    return 0          # not reached


if __name__ == "__main__":
    sys.exit(main())
