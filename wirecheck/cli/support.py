"""What the command modules of ``wirecheck/cli/`` share: exit codes, argument types, the check
of a profile argument, and the check that an optional extra is installed."""
from __future__ import annotations

import argparse
import importlib.util
import os

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


def docs_url(args) -> None:
    """``--docs-url``: where the HTML report links the requirement IDs (report_html.docs_url)."""
    if args.docs_url is not None:
        from wirecheck.conformance.report.html import DOCS_URL_ENV
        os.environ[DOCS_URL_ENV] = args.docs_url
