"""The target's life around the suite (the pytest plugin's hooks for it; plugin.py re-exports
them): the target process the kit runs with ``--target-command``, the preflight before any test,
and the watch after each test (conformance/crashwatch.py).

Order of a run: ``pytest_cmdline_main`` (before the session and before pytest-xdist starts its
workers) starts the target when the kit runs it, then runs the preflight; ``pytest_configure``
(plugin.py) makes each process's :class:`~crashwatch.CrashWatch`; the workers learn the
target's address and the watch's folder from ``pytest_configure_node``; each suite test is
preceded by :func:`pytest_runtest_setup` and judged for a crash by :func:`after_test`;
``pytest_unconfigure`` stops the target and the supervisor.
"""
from __future__ import annotations

import shlex
import sys

import pytest

from wirecheck.conformance import verdicts
from wirecheck.conformance.suite_paths import suite_protocol

_WATCH_KEY = pytest.StashKey[object]()
_GENERATION_KEY = pytest.StashKey[int]()
_MANAGED_KEY = pytest.StashKey[tuple]()          # (ManagedTarget, Supervisor | None)
_PREFLIGHT_PASSED = pytest.StashKey[bool]()
_HEALTH_KEY = pytest.StashKey[tuple]()           # (wall time, resources) at the test's start
_SPINS_KEY = pytest.StashKey[object]()           # target_health.SpinWatch
#: Default seconds a target started by the kit may take to accept connections.
START_TIMEOUT = 30.0
#: How many times a test is run while each run overlaps another test's crash (then it stays
#: "not judged").
RUNS_BESIDE_A_CRASH = 3


def add_options(group) -> None:
    group.addoption("--target-command", dest="wirecheck_target_command", default=None, metavar="CMD",
                    help="start the target with CMD ({host}, {port} and {data_dir} are filled in), "
                         "restart it after a CRASH, stop it at the end; --target defaults to "
                         "127.0.0.1:{port} (give --target http://127.0.0.1:0/hub for a URL)")
    group.addoption("--no-preflight", dest="wirecheck_preflight", action="store_false", default=True,
                    help="with --target: do not check before the run that the target answers the "
                         "protocol's handshake and takes the profile's credentials")


def _informational_run(config) -> bool:
    opt = config.option
    return any(getattr(opt, name, False) for name in (
        "collectonly", "help", "version", "showfixtures", "show_fixtures_per_test", "markers"))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Start the target when the kit runs it, then the preflight (conformance/preflight.py):
    a wrong --target, --protocol, command or credential ends the run with one line on stderr
    and exit 2 instead of a FAIL per test."""
    proto = config.getoption("wirecheck_protocol")
    if not proto or hasattr(config, "workerinput") or _informational_run(config):
        return None
    from wirecheck.conformance.preflight import PreflightError, preflight
    from wirecheck.conformance.profiles import ProfileError, load_profile
    from wirecheck.reference_impl.core import registry
    try:
        spec = registry.get(proto)
        profile = load_profile(spec, config.getoption("wirecheck_profile"))
    except (KeyError, ProfileError):
        return None                      # pytest_configure names it as a usage error
    if not config.getoption("wirecheck_target_command") and profile.target.get("command") \
            and not config.getoption("wirecheck_target"):
        config.option.wirecheck_target_command = str(profile.target["command"])   # the profile's
    if config.getoption("wirecheck_target_command"):
        failed = _start_target(config)
        if failed:
            sys.stderr.write(f"wirecheck: --target-command: {failed}\n")
            return int(pytest.ExitCode.INTERRUPTED)
    address = config.getoption("wirecheck_target")
    if not address or not config.getoption("wirecheck_preflight"):
        return None
    try:
        preflight(spec, profile, address[0], address[1], address[2] if len(address) > 2 else None,
                  config.getoption("wirecheck_timeout"))
    except PreflightError as exc:
        sys.stderr.write(f"wirecheck preflight: {exc} (--no-preflight skips this check)\n")
        _stop_target(config)
        return int(pytest.ExitCode.INTERRUPTED)
    config.stash[_PREFLIGHT_PASSED] = True
    return None


def _start_target(config) -> str | None:
    """Start ``--target-command``; point ``--target`` at it. An error message, or None."""
    from wirecheck.conformance.target_process import ManagedTarget
    address = config.getoption("wirecheck_target")
    host = address[0] if address else "127.0.0.1"
    managed = ManagedTarget(shlex.split(config.getoption("wirecheck_target_command")), host=host,
                            start_timeout=START_TIMEOUT)
    if not any("{port}" in a for a in managed.argv):
        if not (address and address[1]):
            return "the command needs {port} (the kit picks a free port), or give --target HOST:PORT"
        managed.port = address[1]          # the command listens where --target says
    try:
        managed.start()
    except RuntimeError as exc:
        managed.close()
        return str(exc)
    url = address[2] if address and len(address) > 2 else None
    if url:
        from urllib.parse import urlsplit, urlunsplit
        parts = urlsplit(url)
        url = urlunsplit(parts._replace(netloc=f"{parts.hostname}:{managed.port}"))
    config.option.wirecheck_target = (host, managed.port) + ((url,) if url else ())
    config.stash[_MANAGED_KEY] = (managed, None)
    return None


def _stop_target(config) -> None:
    spinwatch = config.stash.get(_SPINS_KEY, None)
    if spinwatch is not None:
        spinwatch.stop()
    managed, supervisor = config.stash.get(_MANAGED_KEY, (None, None))
    if supervisor is not None:
        supervisor.stop()
    if managed is not None:
        managed.close()
        config.stash[_MANAGED_KEY] = (None, None)


def start_watch(config, spec) -> None:
    """With a target (not the embedded broker, which lives in this process): the watch of this
    process, and in the process that runs the target, its supervisor."""
    from wirecheck.conformance.crashwatch import CrashWatch, Supervisor
    from wirecheck.conformance.profiles import load_profile
    workerinput = getattr(config, "workerinput", None)
    if workerinput and workerinput.get("wirecheck_target"):
        config.option.wirecheck_target = tuple(workerinput["wirecheck_target"])
    address = config.getoption("wirecheck_target")
    if not address:
        return
    managed, _ = config.stash.get(_MANAGED_KEY, (None, None))
    folder = workerinput.get("wirecheck_watch") if workerinput else None
    watch = CrashWatch(spec, load_profile(spec, config.getoption("wirecheck_profile")), address,
                       config.getoption("wirecheck_timeout"), folder or CrashWatch.new_folder(),
                       managed=bool(workerinput.get("wirecheck_managed") if workerinput
                                    else config.getoption("wirecheck_target_command")),
                       restart_timeout=START_TIMEOUT + 30)
    config.stash[_WATCH_KEY] = watch
    if config.stash.get(_PREFLIGHT_PASSED, False):
        watch.saw_alive()
    if managed is not None:
        import os

        from wirecheck.conformance.target_health import SpinWatch
        config.stash[_MANAGED_KEY] = (managed, Supervisor(managed, watch.folder).start())
        config.stash[_SPINS_KEY] = SpinWatch(
            lambda: managed.proc.pid if managed.proc is not None and managed.proc.poll() is None else None,
            watch.turn, os.path.join(watch.folder, "tests.jsonl"), os.path.join(watch.folder, "spins.json"),
            ready_at=lambda: managed.ready_at).start()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist: every worker speaks to the same target and watches through one folder."""
    watch = node.config.stash.get(_WATCH_KEY, None)
    if watch is not None:
        node.workerinput["wirecheck_watch"] = watch.folder
        node.workerinput["wirecheck_target"] = list(node.config.getoption("wirecheck_target"))
        node.workerinput["wirecheck_managed"] = watch.managed


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item) -> None:
    watch = item.config.stash.get(_WATCH_KEY, None)
    if watch is None or not _is_suite(item):
        return
    generation, why_not = watch.before()
    if why_not:
        pytest.skip(why_not)
    item.stash[_GENERATION_KEY] = generation
    pgid = watch.pgid()
    if pgid:
        import time

        from wirecheck.conformance.target_health import resources
        item.stash[_HEALTH_KEY] = (time.time(), resources(pgid))


def after_test(item, report) -> bool:
    """After a test's call: True when the target went down during it (the report becomes the
    CRASH); a test whose run overlapped another's crash is not judged (the report becomes a
    skip)."""
    watch = item.config.stash.get(_WATCH_KEY, None)
    if watch is None or report.skipped or _GENERATION_KEY not in item.stash:
        return False
    from wirecheck.conformance.crashwatch import CRASH
    _note_health(item, watch)
    seen = watch.after(item.nodeid, item.stash[_GENERATION_KEY])
    _log_times(item, watch)           # after the look: its connection is this test's traffic too
    if seen is None:
        return False
    kind, text = seen
    if kind == CRASH:
        before = f"\n\n{report.longrepr}" if report.longrepr else ""
        report.outcome = "failed"
        report.longrepr = f"{verdicts.CRASH_PREFIX}the target went down during this test: {text}{before}"
        return True
    report.outcome = "skipped"
    report.longrepr = (str(item.path), item.location[1] or 0,
                       f"Skipped: not judged: the target went down during {text}")
    report.wirecheck_not_judged = True
    return False


def _note_health(item, watch) -> None:
    """The target's memory and descriptors after the test, and their growth during it, as the
    test's properties (target_health.py)."""
    started = item.stash.get(_HEALTH_KEY, None)
    pgid = watch.pgid()
    if started is None or not pgid:
        return
    from wirecheck.conformance.target_health import resources
    _began, before = started
    after = resources(pgid)
    if after is not None:
        item.user_properties.append(("target_rss_kb", after["rss_kb"]))
        item.user_properties.append(("target_fds", after["fds"]))
        if before is not None and watch.pgid() == pgid:
            item.user_properties.append(("target_rss_growth_kb", after["rss_kb"] - before["rss_kb"]))
            item.user_properties.append(("target_fd_growth", after["fds"] - before["fds"]))


def _log_times(item, watch) -> None:
    """The test's start and end (wall clock), for the spin watch to name the test that set a
    thread going."""
    started = item.stash.get(_HEALTH_KEY, None)
    if started is None:
        return
    import json
    import os
    import time
    line = json.dumps({"test": item.nodeid, "start": started[0], "end": time.time()}) + "\n"
    fd = os.open(os.path.join(watch.folder, "tests.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def spins(config) -> list[dict]:
    """The spinning threads the run found (target_health.SpinWatch), after it finished."""
    spinwatch = config.stash.get(_SPINS_KEY, None)
    return list(spinwatch.spins) if spinwatch is not None else []


def idle_checks(config) -> dict | None:
    """How often the spin watch paused the tests to look at the target, and for how long."""
    spinwatch = config.stash.get(_SPINS_KEY, None)
    if spinwatch is None:
        return None
    return {"checks": spinwatch._checks, "paused_seconds": round(spinwatch.paused, 1)}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    """Before the results are written: the spin watch's last look, with no test running."""
    spinwatch = session.config.stash.get(_SPINS_KEY, None)
    if spinwatch is not None and not hasattr(session.config, "workerinput"):
        spinwatch.finish()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """With --target-command, a test that ran beside another test's crash is run again, against
    the restarted target, so that it gets the verdict it would get from a healthy one."""
    watch = item.config.stash.get(_WATCH_KEY, None)
    if watch is None or not watch.managed or not _is_suite(item):
        return None
    from _pytest.runner import runtestprotocol
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    # a test that kills the target runs alone (crashwatch.CrashWatch.turn)
    with watch.turn(exclusive=KILLS_THE_TARGET in getattr(item, "fixturenames", ())):
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        for _again in range(RUNS_BESIDE_A_CRASH - 1):
            if not any(getattr(r, "wirecheck_not_judged", False) for r in reports):
                break
            item.user_properties.clear()          # the earlier run's verdict is not this one's
            reports = runtestprotocol(item, nextitem=nextitem, log=False)
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


#: The fixture of the tests that kill the target (crash recovery).
KILLS_THE_TARGET = "target_process"


class TargetProcess:
    """What a crash-recovery test may do to a target the kit runs: kill it."""

    def __init__(self, item, watch) -> None:
        self._item, self._watch = item, watch
        self.kills = 0

    def kill_and_restart(self) -> None:
        """``kill -9`` the target's process group, start it again (same command, port and data
        directory) and return once it accepts connections. A target that does not come back
        fails the test (and the run stops, as after a crash)."""
        try:
            self._item.stash[_GENERATION_KEY] = self._watch.kill_and_restart(self._item.nodeid)
        except RuntimeError as exc:
            pytest.fail(f"after kill -9: {exc}", pytrace=False)
        self.kills += 1


@pytest.fixture
def target_process(request):
    """The target's process, for tests that kill it; SKIPPED unless the kit runs the target
    (``--target-command``): only then can it kill and restart it."""
    watch = request.config.stash.get(_WATCH_KEY, None)
    if watch is None or not watch.managed:
        pytest.skip(f"{verdicts.NEEDS_TARGET_COMMAND}: the kit kills the target (kill -9) and "
                    "starts it again, so it must be the one running it")
    return TargetProcess(request.node, watch)


def crashes(config) -> list[dict]:
    watch = config.stash.get(_WATCH_KEY, None)
    return watch.crashes() if watch is not None else []


def _is_suite(item) -> bool:
    return suite_protocol(item.path) is not None


def pytest_unconfigure(config) -> None:
    if hasattr(config, "workerinput"):
        return
    _stop_target(config)
    watch = config.stash.get(_WATCH_KEY, None)
    if watch is not None:
        watch.close()
