"""``wirecheck replay``: a capture's client side (or a fuzz finding's bytes) sent to a target,
which the kit may start itself (``--target-command``)."""
from __future__ import annotations

import sys

from wirecheck.cli.support import EXIT_HARNESS, EXIT_NONCONFORMANT, host_port_arg


def cmd_replay(args) -> int:
    from wirecheck.conformance.captures import replay
    if not args.target and not args.target_command:
        print("wirecheck replay: give --target HOST:PORT, or --target-command CMD", file=sys.stderr)
        return EXIT_HARNESS
    try:
        args.target = host_port_arg(args.target) if args.target else ("127.0.0.1", 0)
    except ValueError as exc:
        print(f"wirecheck replay: --target {exc}", file=sys.stderr)
        return EXIT_HARNESS
    if not args.target_command:
        return replay.main(args)
    return _replay_managed(args, replay)


def _replay_managed(args, replay) -> int:
    """``replay --target-command``: the kit starts the target, replays, and tells whether the
    target was still running at the end (a replay that kills the target would otherwise show as
    connections refused, with no word of the crash)."""
    from wirecheck.conformance.target.process import ManagedTarget
    host, port = args.target[0], args.target[1]
    try:
        managed = ManagedTarget.command(args.target_command, host=host, start_timeout=30.0)
    except RuntimeError as exc:
        print(f"wirecheck replay: --target-command: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    if not any("{port}" in a for a in managed.argv):
        if not port:
            print("wirecheck replay: --target-command needs {port} (the kit picks a free port), or "
                  "give --target HOST:PORT", file=sys.stderr)
            return EXIT_HARNESS
        managed.port = port
    try:
        managed.start()
    except RuntimeError as exc:
        managed.close()
        print(f"wirecheck replay: --target-command: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    try:
        args.target = (host, managed.port) + tuple(args.target[2:])
        status = replay.main(args)
        if managed.exited():
            print(f"wirecheck replay: the target went down during the replay ({managed.exit_status()}); "
                  f"its last output:\n{managed.output_tail(15)}", file=sys.stderr)
            return max(status, EXIT_NONCONFORMANT) if status != EXIT_HARNESS else status
        return status
    finally:
        managed.close()
