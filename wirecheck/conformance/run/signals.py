"""Stopping a run (SIGINT, SIGTERM): what a CI runner does on a timeout or a cancelled job.

In the process that runs the suite (not an xdist worker), the first signal stops it the way
Ctrl-C stops pytest: the test in progress is interrupted, the workers are shut down, the
results so far are written (marked ``interrupted``, with what was not run) and the target the
kit started is stopped with its process group (plugin_lifecycle.pytest_unconfigure); the exit
status is 128 + the signal (130, 143). A second signal stops the target and exits at once.

xdist workers ignore both: sent to the whole process group (a terminal's Ctrl-C, a CI
runner's kill of the job), they would otherwise die under the controller, which could then
neither shut them down nor write what they had judged. The controller tells them through a
file (``wirecheck_stop_file`` in their workerinput): each worker ends after the test it is
running (:func:`stop_after_test`), instead of running the rest of its queue.
"""
from __future__ import annotations

import _thread
import os
import signal
import tempfile
import threading
import time

import pytest

#: Seconds between a worker's looks for the controller's stop file.
WATCH_INTERVAL = 0.2
_SIGNAL_KEY = pytest.StashKey[list]()      # [signal number] once one came
_STOP_FILE_KEY = pytest.StashKey[str]()    # the file the controller makes when stopped
_ENDING_KEY = pytest.StashKey[bool]()      # the tests are over: a signal is noted, not raised


def install(config, stop_now) -> None:
    """Handlers for SIGINT and SIGTERM in this process's main thread. ``stop_now()`` stops
    what the run started (called on a second signal, before exiting)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if hasattr(config, "workerinput"):
        _install_in_worker(config.workerinput.get("wirecheck_stop_file"))
        return
    got: list = []
    config.stash[_SIGNAL_KEY] = got
    fd, stop_file = tempfile.mkstemp(prefix="wirecheck-stop-")
    os.close(fd)
    os.unlink(stop_file)                       # it exists once a signal came
    config.stash[_STOP_FILE_KEY] = stop_file

    def handler(signum, _frame):
        if got:                                # the second one: at once
            try:                               # what the first one made (no cleanup runs after _exit)
                os.unlink(stop_file)
            except OSError:
                pass
            try:
                stop_now()
            finally:
                os._exit(128 + signum)
        got.append(signum)
        from wirecheck.conformance import cli_signals
        cli_signals.note(signum)               # `wirecheck check` tells it too, whatever ends the run
        try:
            with open(stop_file, "w") as fh:
                fh.write(signal.Signals(signum).name)
        except OSError:
            pass
        if config.stash.get(_ENDING_KEY, False):
            # the tests are over: the end (the workers' shutdown, the report, stopping the
            # target) takes moments and is let finish, or the report would be lost
            return
        raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)


def _install_in_worker(stop_file: str | None) -> None:
    """A worker takes a signal only once the controller was stopped (its stop file exists: a
    signal to the whole group reaches both, and the controller must outlive its workers); a
    thread watching for that file then interrupts the test it is running, so that the worker
    ends within moments (pytest-xdist kills a worker only after ten seconds)."""
    def handler(signum, _frame):
        if stop_file and os.path.exists(stop_file):
            raise KeyboardInterrupt("the run was stopped")

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)
    if not stop_file:
        return

    def watch() -> None:
        while not os.path.exists(stop_file):
            time.sleep(WATCH_INTERVAL)
        _thread.interrupt_main()               # SIGINT to the main thread: the handler above

    threading.Thread(target=watch, name="wirecheck-stop-watch", daemon=True).start()


def ending(config, over: bool) -> None:
    """``over``: the run's tests are over (pytest_sessionfinish on): a first signal is noted and
    the end goes on (a second still stops at once); False for a long step of the end that a
    signal should cut short (re-runs of suspects), which then catches the KeyboardInterrupt."""
    config.stash[_ENDING_KEY] = over


def received(config) -> int | None:
    """The signal that stopped the run, or None."""
    got = config.stash.get(_SIGNAL_KEY, None)
    return got[0] if got else None


def worker_input(config, workerinput: dict) -> None:
    """The stop file, for a worker (pytest_configure_node)."""
    stop_file = config.stash.get(_STOP_FILE_KEY, None)
    if stop_file:
        workerinput["wirecheck_stop_file"] = stop_file


def stop_after_test(item) -> None:
    """In a worker: once the controller was stopped, end after this test."""
    workerinput = getattr(item.config, "workerinput", None)
    stop_file = workerinput.get("wirecheck_stop_file") if workerinput else None
    if stop_file and os.path.exists(stop_file):
        item.session.shouldstop = "the run was stopped by a signal"


def cleanup(config) -> None:
    stop_file = config.stash.get(_STOP_FILE_KEY, None)
    if stop_file:
        try:
            os.unlink(stop_file)
        except OSError:
            pass
