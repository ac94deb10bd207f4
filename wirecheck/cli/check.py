"""``wirecheck check``: a protocol's black-box suite against a target, run by pytest in this
process with the kit's own configuration (the plugin, conformance/plugin.py, does the rest)."""
from __future__ import annotations

import os

from wirecheck.cli.support import EXIT_HARNESS, EXIT_NONCONFORMANT, EXIT_OK, docs_url


def suite_dir(spec) -> str:
    import importlib
    return os.path.dirname(importlib.import_module(spec.suite).__file__)


def pytest_args(spec, target: str | None, profile: str | None, report: str | None,
                junit: str | None, workers: str | None, timeout: float | None,
                strict: bool, extra: list[str]) -> list[str]:
    suites = os.path.dirname(suite_dir(spec))
    # The kit's own ini, wherever it is run from: the caller's pytest configuration (addopts,
    # plugins) must not change what the suite does.
    # paths (or node ids) among the pytest arguments narrow the run to them; else the suite
    named = [a for a in extra if not a.startswith("-") and os.path.exists(a.split("::")[0])]
    # -q unless the user asks for more (-v: pytest's failure pages, each transcript in full)
    verbose = any(a == "--verbose" or (a.startswith("-v") and set(a[1:]) == {"v"}) for a in extra)
    argv = ([] if named else [suite_dir(spec)]) + ["--protocol", spec.id] + ([] if verbose else ["-q"]) + [
            "-p", "no:cacheprovider",
            "--rootdir", suites, "-c", os.path.join(suites, "pytest.ini"),
            # this process imported the kit before pytest started: nothing to rewrite, no warning
            "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    if target:
        argv += ["--target", target]
    if profile:
        argv += ["--profile", profile]
    if report:
        argv += ["--wirecheck-report", report]
    if junit:
        argv += ["--junitxml", junit]
    if workers:
        argv += ["-n", workers]
    if timeout:
        argv += ["--wirecheck-timeout", str(timeout)]
    if strict:
        argv += ["--strict"]
    return argv + list(extra)


def exit_code(pytest_status: int) -> int:
    """pytest's status -> 0 conformant, 1 not conformant, 2 harness error."""
    if pytest_status == 0:
        return EXIT_OK
    if pytest_status == 1:
        return EXIT_NONCONFORMANT
    if pytest_status > 128:              # stopped by a signal (run/signals.py): 130, 143
        return pytest_status
    return EXIT_HARNESS


def cmd_check(args) -> int:
    """The suite in this process; the plugin writes the result file or HTML report (``--report
    FILE.json|FILE.html``) and exits 2 when a verdict is the kit's own HARNESS-ERROR, exactly as
    ``pytest --protocol P`` does."""
    import pytest
    argv = pytest_args(args.protocol, args.target, args.profile, args.report, args.junitxml,
                       args.n, args.timeout, args.strict, args.pytest_args)
    if args.label:
        argv += ["--wirecheck-label", args.label]
    if args.no_preflight:
        argv += ["--no-preflight"]
    if args.target_command:
        argv += ["--target-command", args.target_command]
    docs_url(args)
    status = exit_code(int(pytest.main(argv)))
    from wirecheck.conformance import cli_signals
    if cli_signals.received() is not None and status <= 128:
        # a signal at the very end (the report was already written whole): still 128 + it
        return cli_signals.exit_status()
    return status
