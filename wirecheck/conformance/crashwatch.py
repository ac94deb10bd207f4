"""After each suite test against a target: is it still there?

A target that died (or hung) during a test makes every later test fail with "connection
refused" or a timeout: protocol violations that are not there, and no word of the one crash
that is. So after each test the kit connects again and runs the first step of the protocol's
handshake (conformance/preflight.py ``alive``, on a fresh connection, WebSocket targets
included). When that fails twice, a moment apart and the second time with a longer wait (a
busy machine is slow, not dead), the target is down:

- the test after which that was first seen gets the verdict CRASH (a failure, counted apart),
  with how the target was found (refused: the process is gone or stopped listening; silent: it
  accepts but no longer answers, a hang) and, when the kit runs the target
  (``--target-command``), its exit status and the last lines it printed;
- a test that was running beside it (pytest-xdist) is not judged (SKIPPED, "not judged: the
  target went down during <test>"), so nothing else is blamed;
- without ``--target-command`` every later test is not run (SKIPPED "not run: …"): the run ends
  at once, exit 1. With it, the process that started the target (the :class:`Supervisor`)
  restarts it on the same port and data directory, and the run goes on; each crash is one
  CRASH, with its test.

The processes of a run (xdist workers and the controller) share one folder: ``state.json``
(the target's generation: how many times it was restarted, and how each one ended),
``crash-<generation>.json`` (the test that saw that generation go down, created with O_EXCL so
exactly one claims it), ``restart-<generation>`` (a claimer's request to the supervisor) and
``kill-<generation>.json`` (a crash-recovery test's request: kill -9 the target and start it
again on the same data directory; not a crash, so it is never counted as one).

A test that kills the target must run alone: the tests of other xdist workers would see the
target vanish under them. So with ``--target-command`` every suite test holds ``run.lock``
shared, and a killing test holds it exclusively (:meth:`CrashWatch.turn`); ``gate.lock`` in
front of it, and an ``exclusive-*`` request file that new tests wait on (flock is not fair),
keep new tests from starting while a killing test waits for the running ones to finish. The
spin watch (target_health.py) takes the same exclusive turn to look at the target with no test
running.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
import threading
import time

from wirecheck.conformance.preflight import alive

#: Pause before the second look, and how much longer than the receive timeout it waits.
SETTLE_PAUSE = 0.3
SETTLE_FACTOR = 3.0
#: How often the supervisor and the waiting tests look at the folder.
POLL = 0.05

CRASH, NOT_JUDGED = "crash", "not-judged"


def _write_json(path: str, doc: dict) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        json.dump(doc, fh)
    os.replace(tmp, path)


def _read_json(path: str) -> dict | None:
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


class CrashWatch:
    """One process's view of the target's life (every xdist worker has one)."""

    def __init__(self, spec, profile, address: tuple, timeout: float, folder: str,
                 managed: bool = False, restart_timeout: float = 60.0) -> None:
        self.spec, self.profile = spec, profile
        self.host, self.port = address[0], address[1]
        self.url = address[2] if len(address) > 2 else None
        self.timeout = timeout
        self.folder = folder
        self.managed = managed
        self.restart_timeout = restart_timeout
        #: this process stopped looking: the target never answered
        self.unwatched = False

    @staticmethod
    def new_folder() -> str:
        return tempfile.mkdtemp(prefix="wirecheck-crashwatch-")

    # -- the shared state ----------------------------------------------------------------------

    def state(self) -> dict:
        return _read_json(os.path.join(self.folder, "state.json")) or {"generation": 0, "ended": []}

    def generation(self) -> int:
        return int(self.state()["generation"])

    def claimed(self, generation: int) -> dict | None:
        """The crash claimed for ``generation`` (``test``, ``reason``), if any."""
        return _read_json(os.path.join(self.folder, f"crash-{generation}.json"))

    def crashes(self) -> list[dict]:
        """Every crash of the run, in order: test, reason, and how the process ended."""
        ended = {e["generation"]: e for e in self.state()["ended"]}
        out = []
        for gen in range(self.generation() + 1):
            claim = self.claimed(gen)
            if claim is not None:
                out.append({**claim, **{k: v for k, v in ended.get(gen, {}).items() if k != "generation"}})
        return out

    def _claim(self, generation: int, nodeid: str, reason: str) -> bool:
        try:
            fd = os.open(os.path.join(self.folder, f"crash-{generation}.json"),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as fh:
            json.dump({"test": nodeid, "reason": reason, "time": time.time()}, fh)
        return True

    # -- before and after each test ------------------------------------------------------------

    def before(self) -> tuple[int, str | None]:
        """(the generation the test runs against, or why it is not run). A crash being handled
        is waited for; an unmanaged target that went down stays down."""
        state = self.state()
        gen = int(state["generation"])
        if state.get("gone"):
            return gen, f"not run: {state['gone']}"
        claim = self.claimed(gen)
        if claim is None:
            return gen, None
        if not self.managed:
            return gen, f"not run: the target went down during {claim['test']}"
        gen, gone = self._wait_restart(gen)
        if gone:
            return gen, f"not run: {gone}"
        return gen, None

    def after(self, nodeid: str, generation: int) -> tuple[str, str] | None:
        """After a test that started against ``generation``: None when the target lived
        through it; (CRASH, what happened) when it went down during this test; (NOT_JUDGED,
        the test it went down during) when another test's crash overlapped this one."""
        if self.unwatched or self.state().get("gone_after_kill_by") == nodeid:
            return None          # this test killed it and it did not come back: the test's FAIL says so
        if not self.seen_alive():
            # never seen answering (--no-preflight): one look; if it does not answer either,
            # nothing went down, and this process stops looking (a black hole would cost every
            # test a probe's timeout)
            if alive(self.spec, self.profile, self.host, self.port, self.url, self.timeout) is None:
                self.saw_alive()
            else:
                self.unwatched = True
            return None
        reason = self._look()
        if reason is not None:
            if self.generation() == generation and self._claim(generation, nodeid, reason):
                if not self.managed:
                    return CRASH, reason
                open(os.path.join(self.folder, f"restart-{generation}"), "w").close()
                _gen, gone = self._wait_restart(generation)
                ended = next((e for e in self.state()["ended"] if e["generation"] == generation), {})
                told = reason + (f"; the process: {ended['status']}" if ended.get("status") else "")
                if ended.get("output"):
                    told += "; its last output:\n" + ended["output"]
                if gone:
                    told += f"\n{gone}"
                return CRASH, told
            if self.managed:
                self._wait_restart(generation)
        elif self.generation() == generation and self.claimed(generation) is None:
            return None
        claim = self.claimed(generation)
        return NOT_JUDGED, claim["test"] if claim else "another test"

    def pgid(self) -> int | None:
        """The process group of the target the kit runs (None: not run by the kit, or down)."""
        return self.state().get("pgid") if self.managed else None

    def saw_alive(self) -> None:
        """The target answered (the preflight, or a look after a test): from now on, not
        answering is going down. A target never seen answering is not watched: with
        --no-preflight, a server that never spoke the protocol is the tests' to judge."""
        open(os.path.join(self.folder, "alive"), "a").close()

    def seen_alive(self) -> bool:
        return os.path.exists(os.path.join(self.folder, "alive"))

    def _look(self) -> str | None:
        reason = alive(self.spec, self.profile, self.host, self.port, self.url, self.timeout)
        if reason is None:
            return None
        time.sleep(SETTLE_PAUSE)
        return alive(self.spec, self.profile, self.host, self.port, self.url, self.timeout * SETTLE_FACTOR)

    def _wait_restart(self, generation: int) -> tuple[int, str | None]:
        """Wait until the supervisor has restarted generation ``generation``; (the new
        generation, None) or (…, why the target did not come back)."""
        deadline = time.monotonic() + self.restart_timeout
        while time.monotonic() < deadline:
            state = self.state()
            if state.get("gone"):
                return int(state["generation"]), state["gone"]
            if int(state["generation"]) > generation:
                return int(state["generation"]), None
            time.sleep(POLL)
        return generation, f"the target was not restarted within {self.restart_timeout:g} s"

    def kill_and_restart(self, nodeid: str) -> int:
        """kill -9 the target (its whole process group) and start it again with the same
        command, port and data directory; the new generation once it accepts connections.
        RuntimeError when it does not come back (every later test is then not run)."""
        if not self.managed:
            raise RuntimeError("the kit does not run the target (no --target-command)")
        generation = self.generation()
        _write_json(os.path.join(self.folder, f"kill-{generation}.json"), {"test": nodeid})
        gen, gone = self._wait_restart(generation)
        if gone:
            raise RuntimeError(gone)
        return gen

    @contextlib.contextmanager
    def turn(self, exclusive: bool):
        """Hold the run's lock for one test: shared for a test that leaves the target up,
        exclusive for one that kills it, or for the spin watch's look with nothing running
        (see the module's docstring). flock is not fair: a process that takes the lock again at
        once (the next test) can keep a waiting one out for good, so an exclusive taker first
        leaves a request file, and shared takers wait while one is there."""
        request = None
        if exclusive:
            request = os.path.join(self.folder, f"exclusive-{os.getpid()}-{threading.get_ident()}")
            open(request, "w").close()
        else:
            while any(name.startswith("exclusive-") for name in os.listdir(self.folder)):
                time.sleep(POLL)
        try:
            with open(os.path.join(self.folder, "gate.lock"), "a") as gate, \
                    open(os.path.join(self.folder, "run.lock"), "a") as run:
                fcntl.flock(gate, fcntl.LOCK_EX)
                try:
                    fcntl.flock(run, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
                finally:
                    if not exclusive:
                        fcntl.flock(gate, fcntl.LOCK_UN)
                try:
                    yield
                finally:
                    fcntl.flock(run, fcntl.LOCK_UN)
                    if exclusive:
                        fcntl.flock(gate, fcntl.LOCK_UN)
        finally:
            if request is not None:
                os.unlink(request)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class Supervisor:
    """In the process that started the target: restarts it when a test that saw it go down
    asks (never on its own: the test must see the crash first), recording how it ended."""

    def __init__(self, managed, folder: str) -> None:
        self.managed = managed
        self.folder = folder
        self.generation = 0
        self.ended: list[dict] = []
        self.gone: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wirecheck-supervisor", daemon=True)
        _write_json(os.path.join(folder, "state.json"), {"generation": 0, "ended": [], "pgid": self._pgid()})

    def _pgid(self) -> int | None:
        """The target's process group (its first process's id: it runs in a session of its own)."""
        proc = self.managed.proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def start(self) -> "Supervisor":
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(POLL):
            if self.gone is not None:
                continue
            if os.path.exists(os.path.join(self.folder, f"restart-{self.generation}")):
                self._restart()
            else:
                kill = _read_json(os.path.join(self.folder, f"kill-{self.generation}.json"))
                if kill is not None:
                    self._restart(kill["test"])

    def _restart(self, killed_for: str | None = None) -> None:
        """Restart after a crash, or (``killed_for``: the test that asked) kill -9 and start."""
        status = self.managed.exit_status()
        if killed_for is not None:
            status = (f"killed with SIGKILL by the kit for {killed_for}" if status == "running"
                      else f"already down before the kit's kill -9 ({status})")
        elif status == "running":
            status = "still running (hung): killed by the kit"
        output = self.managed.output_tail(15)
        try:
            self.managed.restart()
        except RuntimeError as exc:
            when = "the kit's kill -9" if killed_for else "a restart"
            self.gone = f"the target did not come back after {when}: {exc}"
        self.ended.append({"generation": self.generation, "status": status, "output": output,
                           "deliberate": killed_for is not None})
        if self.gone is None:
            self.generation += 1
        state = {"generation": self.generation, "ended": self.ended, "pgid": self._pgid()}
        if self.gone:
            state["gone"] = self.gone
            if killed_for is not None:
                state["gone_after_kill_by"] = killed_for
        _write_json(os.path.join(self.folder, "state.json"), state)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
