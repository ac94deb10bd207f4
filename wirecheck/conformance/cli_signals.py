"""Stopping a command (SIGINT, SIGTERM): Ctrl-C, or a CI runner's timeout or cancelled job.

Every ``wirecheck`` command stops the same way (cli.main installs :func:`install` before it
runs one): the first signal raises KeyboardInterrupt in the main thread, as Ctrl-C does, so the
command's ``finally`` blocks stop what it started (the target and its process group, client
drivers, brokers, Spark) and it writes what it judged so far, marked ``interrupted``; the exit
status is 128 + the signal (130, 143). A second signal kills every process the command started
(its descendants, each with its process group) and exits at once. After a stopped command,
:func:`sweep` ends any descendant that a ``finally`` did not: nothing of the run is left.

The suites run under pytest have their own handler (run/signals.py): it also stops xdist
workers and writes the suite's JSON; serve and record wait on the signals in their event loop
(:func:`until_stopped`), which notes them here.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
import time

#: Seconds a descendant has between SIGTERM and SIGKILL in :func:`sweep`.
SWEEP_GRACE = 3.0

#: prctl(2): orphaned descendants are reparented to this process (Linux 3.4+).
PR_SET_CHILD_SUBREAPER = 36

_received: list[int] = []


def install(subreaper: bool = True) -> dict:
    """SIGINT and SIGTERM handlers for this process (main thread only); the handlers they
    replace, for :func:`restore`. ``subreaper``: this process is made the "subreaper" of what
    it starts, so that a grandchild whose parent died (a target whose suite was killed) stays
    a descendant the :func:`sweep` finds, instead of going to init (a command's own process;
    not a caller that runs a command in-process, which would then have to reap them)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    _received.clear()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, _handler)
    if subreaper:
        _become_subreaper()
    return previous


def restore(previous: dict) -> None:
    """Put back the handlers :func:`install` replaced."""
    for sig, handler in previous.items():
        if handler is not None:
            signal.signal(sig, handler)


def _become_subreaper() -> None:
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):          # not Linux: orphans go to init as usual
        pass


def _handler(signum, _frame) -> None:
    if _received:                           # the second one: at once
        try:
            kill_descendants(signal.SIGKILL)
        finally:
            os._exit(128 + signum)
    note(signum)
    raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")


def note(signum: int) -> None:
    """A signal came (an event loop's handler saw it rather than :func:`_handler`)."""
    if not _received:
        _received.append(signum)


def received() -> int | None:
    """The first signal that came, or None."""
    return _received[0] if _received else None


def exit_status() -> int:
    """128 + the signal that stopped the command (a KeyboardInterrupt without one: Ctrl-C)."""
    return 128 + (received() or signal.SIGINT)


def signal_name() -> str:
    """"SIGTERM": the signal that stopped the command (SIGINT for a bare KeyboardInterrupt)."""
    return signal.Signals(received() or signal.SIGINT).name


def interrupted(not_run: list[str] | None = None, what: str = "tests") -> dict:
    """What a stopped command's JSON says: ``{"signal", "not_run", "not_run_<what>"}`` (the
    suites' own, run/signals.py, says ``not_run_tests``)."""
    return {"signal": signal_name(), "not_run": len(not_run or []),
            f"not_run_{what}": list(not_run or [])}


#: Seconds a child given the signal has to write what it judged and exit, before SIGKILL.
PASS_ON_GRACE = 60.0


def wait_child(proc, grace: float = PASS_ON_GRACE) -> tuple[int, bool]:
    """Wait for ``proc`` (a ``wirecheck`` command started in a session of its own, so that a
    signal to our process group does not reach it twice); stopped meanwhile, pass the signal
    on and wait for it to stop the way it does (its report written, its target stopped).
    (returncode, whether we were stopped)."""
    try:
        return proc.wait(), False
    except KeyboardInterrupt:
        signum = received() or signal.SIGINT
        try:
            proc.send_signal(signum)
            return proc.wait(grace), True
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            return proc.wait(), True
        except ProcessLookupError:
            return proc.wait(), True


def _communicate(proc, timeout: float | None) -> tuple[str, str]:
    """``proc.communicate(timeout)``; past the timeout its process group is killed and
    TimeoutExpired raised, as subprocess.run does (it kills only the child)."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise


def run_child(argv: list[str], timeout: float | None = None, grace: float = PASS_ON_GRACE,
              **popen) -> subprocess.CompletedProcess:
    """subprocess.run with the output captured (text), for a child that stops on a signal the
    way these commands do: it is started in a session of its own and, when we are stopped,
    given the signal once (:func:`wait_child`) rather than killed (subprocess.run's way,
    which leaves what the child started running). ``.stopped`` on the result says whether we
    were; TimeoutExpired as subprocess.run raises it, the child killed."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True, **popen) as proc:
        stopped = False
        try:
            out, err = _communicate(proc, timeout)
        except KeyboardInterrupt:
            stopped = True
            try:
                proc.send_signal(received() or signal.SIGINT)
                out, err = proc.communicate(timeout=grace)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
    done = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    done.stopped = stopped
    return done


class Children:
    """Child commands started from several threads (a pool of jobs), each in a session of its
    own and known here while it runs, so that a stopped parent gives each the signal once
    (:meth:`pass_on`, :meth:`stop`), as :func:`wait_child` does for one child."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set = set()

    @contextlib.contextmanager
    def started(self, argv: list[str], **popen):
        """``with children.started(argv, ...) as proc:`` a Popen known to the set while it runs."""
        with subprocess.Popen(argv, start_new_session=True, **popen) as proc:
            with self._lock:
                self._procs.add(proc)
            try:
                yield proc
            finally:
                with self._lock:
                    self._procs.discard(proc)

    def run(self, argv: list[str], timeout: float | None = None, **popen) -> subprocess.CompletedProcess:
        """subprocess.run with the output captured (text); TimeoutExpired as it raises it, the
        child's process group killed."""
        with self.started(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen) as proc:
            out, err = _communicate(proc, timeout)
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    def pass_on(self, signum: int | None = None) -> list:
        """Give every running child ``signum`` (the one that stopped us by default)."""
        signum = signum or received() or signal.SIGINT
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            try:
                proc.send_signal(signum)
            except OSError:                        # ended meanwhile
                pass
        return procs

    def stop(self, grace: float = PASS_ON_GRACE) -> None:
        """:meth:`pass_on`, then wait up to ``grace`` s for them; the process group of any
        still running is killed."""
        procs = self.pass_on()
        deadline = time.monotonic() + grace
        for proc in procs:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass


def descendants(pid: int | None = None) -> list[int]:
    """Every process below ``pid`` (this one by default), read from /proc; children first."""
    root = os.getpid() if pid is None else pid
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the fields after its last ")"
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[0] != "Z":       # an exited child not yet waited for: gone
            parents.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_descendants(sig: int) -> list[int]:
    """Send ``sig`` to every descendant and to each one's process group when it leads its own
    (a target started in a session of its own has children of its own); the pids signalled."""
    mine = os.getpgrp()
    pids = descendants()
    for pid in pids:
        try:
            if os.getpgid(pid) == pid and pid != mine:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            continue
    return pids


def sweep(grace: float = SWEEP_GRACE) -> list[int]:
    """End what a stopped command left running: SIGTERM, then SIGKILL after ``grace`` s; the
    pids that were still there (each is a bug of the command's own cleanup)."""
    _reap()
    left = kill_descendants(signal.SIGTERM)
    if not left:
        return []
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap()
        if not descendants():
            return left
        time.sleep(0.05)
    kill_descendants(signal.SIGKILL)
    _reap()
    return left


def _reap() -> None:
    """Wait for children that have exited (they stay zombies, and so descendants, until then)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


async def until_stopped(duration: float | None = None) -> None:
    """Wait for SIGINT or SIGTERM, or ``duration`` seconds when given (serve, record); the
    signal is noted (:func:`note`), and the command's exit status is then 128 + it."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stopped(sig: int) -> None:
        if stop.is_set():                # a second signal while stopping: at once
            kill_descendants(signal.SIGKILL)
            os._exit(128 + sig)
        note(sig)
        stop.set()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopped, sig)
    if duration:
        loop.call_later(duration, stop.set)
    await stop.wait()


def stopped_status() -> int:
    """A serve or record command's exit status: 128 + the signal that stopped it, else 0."""
    return exit_status() if received() is not None else 0
