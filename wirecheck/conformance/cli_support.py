"""What the command line (cli.py) and its subcommand modules (clientcheck.py, fuzz/command.py,
pipeline/command.py) share: exit codes, argument types, waiting for a stop signal, and the
check that an optional extra is installed. The subcommand modules import this, never cli.py,
so the command line imports them and nothing imports it back."""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import signal

from wirecheck.reference_impl.core import registry

EXIT_OK, EXIT_NONCONFORMANT, EXIT_HARNESS = 0, 1, 2

#: What each optional extra brings (pyproject.toml ``[project.optional-dependencies]``): the
#: modules whose absence means the extra is not installed.
EXTRAS = {
    "fuzz": ("atheris",),
    "spark": ("pyspark", "pyarrow"),
    "allure": ("allure_pytest",),
    "captures": ("scapy",),
}


def missing_extra(extra: str, what: str) -> str | None:
    """None when ``extra``'s modules can be imported; otherwise the one line that tells the
    user which extra to install for ``what`` (a command exits 2 with it)."""
    absent = [m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None]
    if not absent:
        return None
    return (f"{what} needs {', '.join(absent)}, which this installation lacks: "
            f"pip install 'wirecheck[{extra}]'")


def protocol_arg(name: str):
    try:
        return registry.get(name)
    except KeyError as exc:
        raise argparse.ArgumentTypeError(exc.args[0]) from None


def key_values(pairs: list[str], flag: str, example: str) -> dict[str, str]:
    """Repeated ``FLAG KEY=VALUE`` arguments as a dict; ValueError names a malformed one."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip() or not value:
            raise ValueError(f"{flag} {pair!r}: expected KEY=VALUE, e.g. {example}")
        out[key.strip()] = value
    return out


async def until_stopped(duration: float | None = None) -> None:
    """Wait for SIGINT or SIGTERM, or ``duration`` seconds when given (serve, record); the
    signal is noted (cli_signals.py), and the command's exit status is then 128 + it."""
    from wirecheck.conformance import cli_signals
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stopped(sig: int) -> None:
        if stop.is_set():                # a second signal while stopping: at once
            cli_signals.kill_descendants(signal.SIGKILL)
            os._exit(128 + sig)
        cli_signals.note(sig)
        stop.set()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopped, sig)
    if duration:
        loop.call_later(duration, stop.set)
    await stop.wait()


def stopped_status() -> int:
    """A serve or record command's exit status: 128 + the signal that stopped it, else 0."""
    from wirecheck.conformance import cli_signals
    return cli_signals.exit_status() if cli_signals.received() is not None else EXIT_OK


def host_port_arg(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT``; an empty host is loopback) for record and replay."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


def check_profile(spec, name: str | None) -> str | None:
    """Validate ``--profile`` for serve/decode; returns an error message or None. (BlipMQ's
    profiles share one wire format, so its codec and broker do not vary with them.)"""
    from wirecheck.conformance.profiles import ProfileError, load_profile
    try:
        load_profile(spec, name)
    except ProfileError as exc:
        return str(exc)
    return None


def profile_base(spec, name: str | None) -> str | None:
    """The built-in profile a ``--profile`` is or extends (what codecs that vary by profile,
    like SignalR's draft and v1, are told)."""
    from wirecheck.conformance.profiles import load_profile
    return load_profile(spec, name).base
