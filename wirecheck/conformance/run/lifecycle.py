"""The target's life around the suite (the pytest plugin's hooks for it; plugin.py re-exports
them): the target process the kit runs with ``--target-command``, the preflight before any test,
and the watch after each test (conformance/target/crashwatch.py).

Order of a run: ``pytest_cmdline_main`` (before the session and before pytest-xdist starts its
workers) starts the target when the kit runs it, then runs the preflight; ``pytest_configure``
(plugin.py) makes each process's :class:`~crashwatch.CrashWatch`; the workers learn the
target's address and the watch's folder from ``pytest_configure_node``; each suite test is
preceded by :func:`pytest_runtest_setup` and judged for a crash by :func:`after_test`;
``pytest_unconfigure`` stops the target and the supervisor.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time

import pytest

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.run.suite_paths import suite_protocol

_WATCH_KEY = pytest.StashKey[object]()
_GENERATION_KEY = pytest.StashKey[int]()
_MANAGED_KEY = pytest.StashKey[tuple]()          # (ManagedTarget, Supervisor | None)
_PREFLIGHT_PASSED = pytest.StashKey[bool]()
_HEALTH_KEY = pytest.StashKey[tuple]()           # (wall time, resources) at the test's start
_SPINS_KEY = pytest.StashKey[object]()           # target_health.SpinWatch
_HELD_KEY = pytest.StashKey[list]()              # held_reports.Held, in the order the tests ran
_RERUN_TARGET_KEY = pytest.StashKey[object]()    # str | None: culprits.child_argv's --target
_ISOLATE_KEY = pytest.StashKey[object]()         # isolation.Isolation: a culprit re-run (culprits.py)
#: Default seconds a target started by the kit may take to accept connections.
START_TIMEOUT = 30.0


def add_options(group) -> None:
    group.addoption("--target-command", dest="wirecheck_target_command", default=None, metavar="CMD",
                    help="start the target with CMD ({host}, {port} and {data_dir} are filled in), "
                         "restart it after a CRASH, stop it at the end; --target defaults to "
                         "127.0.0.1:{port} (give --target http://127.0.0.1:0/hub for a URL)")
    group.addoption("--wirecheck-isolate", dest="wirecheck_isolate", default=None, help=argparse.SUPPRESS)
    group.addoption("--no-preflight", dest="wirecheck_preflight", action="store_false", default=True,
                    help="with --target: do not check before the run that the target answers the "
                         "protocol's handshake and takes the profile's credentials")


def _informational_run(config) -> bool:
    opt = config.option
    return any(getattr(opt, name, False) for name in (
        "collectonly", "help", "version", "showfixtures", "show_fixtures_per_test", "markers"))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Start the target when the kit runs it, then the preflight (conformance/target/preflight.py):
    a wrong --target, --protocol, command or credential ends the run with one line on stderr
    and exit 2 instead of a FAIL per test."""
    proto = config.getoption("wirecheck_protocol")
    if not proto or hasattr(config, "workerinput") or _informational_run(config):
        return None
    from wirecheck.conformance.target.preflight import PreflightError, preflight
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
        stop_target(config)
        return int(pytest.ExitCode.INTERRUPTED)
    config.stash[_PREFLIGHT_PASSED] = True
    return None


def _start_target(config) -> str | None:
    """Start ``--target-command``; point ``--target`` at it. An error message, or None."""
    from wirecheck.conformance.target.process import ManagedTarget
    address = config.getoption("wirecheck_target")
    host = address[0] if address else "127.0.0.1"
    try:
        managed = ManagedTarget.command(config.getoption("wirecheck_target_command"), host=host,
                                        start_timeout=START_TIMEOUT)
    except RuntimeError as exc:
        return str(exc)
    if not any("{port}" in a for a in managed.argv):
        if not (address and address[1]):
            return "the command needs {port} (the kit picks a free port), or give --target HOST:PORT"
        managed.port = address[1]          # the command listens where --target says
    try:
        managed.start()
    except RuntimeError as exc:
        managed.close()
        return str(exc)
    config.stash[_RERUN_TARGET_KEY] = _rerun_target(address, managed.argv)
    url = address[2] if address and len(address) > 2 else None
    if url:
        from urllib.parse import urlsplit, urlunsplit
        parts = urlsplit(url)
        url = urlunsplit(parts._replace(netloc=f"{parts.hostname}:{managed.port}"))
    config.option.wirecheck_target = (host, managed.port) + ((url,) if url else ())
    config.stash[_MANAGED_KEY] = (managed, None)
    return None


def _rerun_target(address, argv) -> str | None:
    """The ``--target`` a culprit re-run (culprits.py) gives with the same command: the URL's
    path, or the fixed port of a command that has no ``{port}``."""
    if not address:
        return None
    if len(address) > 2:
        return address[2]
    if any("{port}" in a for a in argv):
        return None
    host = f"[{address[0]}]" if ":" in address[0] else address[0]
    return f"{host}:{address[1]}"


def stop_target(config) -> None:
    """Stop the watch, the supervisor and the target the kit started (its process group)."""
    spinwatch = config.stash.get(_SPINS_KEY, None)
    if spinwatch is not None:
        spinwatch.stop()
    managed, supervisor = config.stash.get(_MANAGED_KEY, (None, None))
    if supervisor is not None:
        supervisor.stop()
    if managed is not None:
        managed.close()
        config.stash[_MANAGED_KEY] = (None, None)


def start_watch(config, spec, per_test: float, strict: bool) -> None:
    """With a target (not the embedded broker, which lives in this process): the watch of this
    process, and in the process that runs the target, its supervisor. In a culprit re-run
    (``--wirecheck-isolate``, culprits.py) no watch: each test is judged alone (isolation.py)."""
    from wirecheck.conformance.target.crashwatch import CrashWatch, Supervisor
    from wirecheck.conformance.profiles import load_profile
    workerinput = getattr(config, "workerinput", None)
    if workerinput and workerinput.get("wirecheck_target"):
        config.option.wirecheck_target = tuple(workerinput["wirecheck_target"])
    address = config.getoption("wirecheck_target")
    if not address:
        return
    managed, _ = config.stash.get(_MANAGED_KEY, (None, None))
    profile = load_profile(spec, config.getoption("wirecheck_profile"))
    if config.getoption("wirecheck_isolate"):
        from wirecheck.conformance.run.isolation import Isolation
        if managed is not None:
            config.stash[_ISOLATE_KEY] = Isolation(config.getoption("wirecheck_isolate"), managed, spec,
                                                   profile, address, config.getoption("wirecheck_timeout"))
        return
    folder = workerinput.get("wirecheck_watch") if workerinput else None
    command = (workerinput.get("wirecheck_command") if workerinput
               else config.getoption("wirecheck_target_command"))
    finder = _finder(config, command, workerinput.get("wirecheck_rerun_target") if workerinput
                     else config.stash.get(_RERUN_TARGET_KEY, None), per_test, strict) if command else None
    watch = CrashWatch(spec, profile, address, config.getoption("wirecheck_timeout"),
                       folder or CrashWatch.new_folder(), managed=bool(command),
                       restart_timeout=START_TIMEOUT + 30, finder=finder)
    if finder is not None:
        finder.paths_file = os.path.join(watch.folder, "paths.json")
    config.stash[_WATCH_KEY] = watch
    config.stash[_HELD_KEY] = []
    if config.stash.get(_PREFLIGHT_PASSED, False):
        watch.saw_alive()
    if managed is not None:
        from wirecheck.conformance.target.health import SpinWatch
        supervisor = Supervisor(managed, watch.folder)
        config.stash[_MANAGED_KEY] = (managed, supervisor)
        spins = config.stash[_SPINS_KEY] = SpinWatch(
            lambda: managed.proc.pid if managed.proc is not None and managed.proc.poll() is None else None,
            watch.turn, os.path.join(watch.folder, "tests.jsonl"), os.path.join(watch.folder, "spins.json"),
            ready_at=lambda: managed.ready_at, restart=lambda: _restart_after_spin(watch))
        supervisor.before_kill = spins.look_now
        supervisor.start()
        spins.start()


def _restart_after_spin(watch) -> None:
    """A spinning thread found (no test runs): the target is started afresh, as for a
    crash-recovery kill, so that the next test that sets one spinning is seen too."""
    watch.clear_before_kill("the spin watch's restart")
    try:
        watch.kill_and_restart("(the spin watch)")
    except RuntimeError:
        pass                     # it did not come back: the next test's look finds that


def _finder(config, command: str, rerun_target: str | None, per_test: float, strict: bool):
    """The re-runner of a crash's suspects (culprits.py), with this run's options."""
    from wirecheck.conformance.run.culprits import Finder, child_argv
    return Finder(child_argv(config, command, rerun_target, strict), str(config.rootpath),
                  str(config.invocation_params.dir), per_test)


def collected(config, items) -> None:
    """The suite's tests, once collected: where a culprit search finds each one's file."""
    watch = config.stash.get(_WATCH_KEY, None)
    if watch is not None and watch.finder is not None:
        watch.finder.paths = {item.nodeid: str(item.path) for item in items}
        from wirecheck.conformance.target.crashwatch import write_json
        write_json(watch.finder.paths_file, watch.finder.paths)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist: every worker speaks to the same target and watches through one folder."""
    from wirecheck.conformance.run import signals as run_signals
    run_signals.worker_input(node.config, node.workerinput)
    watch = node.config.stash.get(_WATCH_KEY, None)
    if watch is not None:
        node.workerinput["wirecheck_watch"] = watch.folder
        node.workerinput["wirecheck_target"] = list(node.config.getoption("wirecheck_target"))
        node.workerinput["wirecheck_managed"] = watch.managed
        node.workerinput["wirecheck_command"] = node.config.getoption("wirecheck_target_command")
        node.workerinput["wirecheck_rerun_target"] = node.config.stash.get(_RERUN_TARGET_KEY, None)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item) -> None:
    watch = item.config.stash.get(_WATCH_KEY, None)
    if watch is None or not _is_suite(item):
        return
    generation, why_not = watch.before()
    if why_not:
        pytest.skip(why_not)
    item.stash[_GENERATION_KEY] = generation
    watch.note("start", generation, item.nodeid)
    pgid = watch.pgid()
    started = time.time()
    from wirecheck.conformance.target.health import resources
    item.stash[_HEALTH_KEY] = (started, resources(pgid) if pgid else None)


def note_health(item) -> None:
    """After a test's call: the target's memory and descriptors (target/health.py), as the
    test's properties."""
    watch = item.config.stash.get(_WATCH_KEY, None)
    if watch is not None and _GENERATION_KEY in item.stash:
        _note_health(item, watch)


def _note_health(item, watch) -> None:
    """The target's memory and descriptors after the test, and their growth during it, as the
    test's properties (target/health.py)."""
    started = item.stash.get(_HEALTH_KEY, None)
    pgid = watch.pgid()
    if started is None or not pgid:
        return
    from wirecheck.conformance.target.health import resources
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


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session):
    """The tests are over: from now on a signal is noted, not raised (run_signals.ending), so
    that xdist's shutdown of its workers and the report are not cut short. Before the results
    are written: the spin watch's last look, with no test running."""
    from wirecheck.conformance.run import signals as run_signals
    run_signals.ending(session.config, True)
    spinwatch = session.config.stash.get(_SPINS_KEY, None)
    if spinwatch is not None and not hasattr(session.config, "workerinput"):
        if run_signals.received(session.config) is None:      # stopped by a signal: no last look
            spinwatch.finish()
    yield


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """In a culprit search's child (``--wirecheck-isolate``, culprits.py): the search instead of
    the usual loop (isolation.py)."""
    isolation = session.config.stash.get(_ISOLATE_KEY, None)
    if isolation is None or session.config.option.collectonly:
        return None
    from wirecheck.conformance.run.isolation import run
    run(session, isolation)
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """A suite test against a watched target: run it, look at the target, and hold its reports
    back until no crash can be charged to it (held_reports.py)."""
    from wirecheck.conformance.run import signals as run_signals
    run_signals.stop_after_test(item)          # the run was stopped: this worker ends after it
    if not _is_suite(item):
        return None
    watch = item.config.stash.get(_WATCH_KEY, None)
    if watch is None:
        return None
    from _pytest.runner import runtestprotocol

    from wirecheck.conformance.run import held_reports
    held = item.config.stash[_HELD_KEY]
    # a test that kills the target runs alone (crashwatch.CrashWatch.turn)
    exclusive = KILLS_THE_TARGET in getattr(item, "fixturenames", ())
    with watch.turn(exclusive) if watch.managed else contextlib.nullcontext():
        if exclusive and watch.managed and watch.seen_alive():
            watch.clear_before_kill(item.nodeid)
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        generation = item.stash.get(_GENERATION_KEY, None)
        if generation is not None:
            ended = time.time()
            watch.note("end", generation, item.nodeid, when=ended)
            watch.after(item.nodeid, generation)
            _log_times(item, watch)           # after the look: its connection is this test's traffic too
    if generation is None or watch.unwatched:
        held_reports.drain(item.config, watch, held, final=False, give_up_after=0)
        held_reports.log(item, reports)       # never ran against the target: nothing to charge it
    else:
        held.append(held_reports.Held(item, reports, generation, ended))
    last = nextitem is None
    held_reports.drain(item.config, watch, held, final=last,
                       give_up_after=watch.restart_timeout + (watch.finder.allowance() if watch.finder else 0))
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


def health_check(config, spin: list[str], growth: list[str]) -> dict | None:
    """The suspects of a spin and of a growth measured each on a target of its own (run/health_reruns.py),
    once the run is over (the
    run's target is stopped first: a re-run may need its port); None when the kit does not run
    the target."""
    watch = config.stash.get(_WATCH_KEY, None)
    if watch is None or watch.finder is None or hasattr(config, "workerinput"):
        return None
    stop_target(config)
    try:
        return watch.finder.health(spin, growth)
    except Exception as exc:           # the kit's own failure: said, and nobody is charged
        return {"results": {}, "error": f"{type(exc).__name__}: {exc}"}


def crashes(config) -> list[dict]:
    watch = config.stash.get(_WATCH_KEY, None)
    return watch.crashes() if watch is not None else []


def _is_suite(item) -> bool:
    return suite_protocol(item.path) is not None


def stop_at_once(config) -> None:
    """A second signal: the target stopped, the crash watch's folder removed and every process
    the run started (xdist's workers among them) killed, before the process exits without the
    usual end (run/signals.py). Killed, the workers cannot report into a closed channel."""
    from wirecheck.conformance import cli_signals
    try:
        stop_target(config)
    finally:
        watch = config.stash.get(_WATCH_KEY, None)
        if watch is not None:
            watch.close()
        cli_signals.kill_descendants(signal.SIGKILL)


def pytest_unconfigure(config) -> None:
    if hasattr(config, "workerinput"):
        return
    from wirecheck.conformance.run import signals as run_signals
    run_signals.cleanup(config)
    stop_target(config)
    watch = config.stash.get(_WATCH_KEY, None)
    if watch is not None:
        watch.close()
