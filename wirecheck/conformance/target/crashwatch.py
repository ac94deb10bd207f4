"""After each suite test against a target: is it still there, and if not, which test did it?

A target that died (or hung) makes every later test fail with "connection refused" or a
timeout: protocol violations that are not there, and no word of the one crash that is. So after
each test the kit connects again and runs the first step of the protocol's handshake
(conformance/target/preflight.py ``alive``, on a fresh connection, WebSocket targets included). When
that fails twice, a moment apart and the second time with a longer wait (a busy machine is
slow, not dead), the target is down.

Which test brought it down is not "the test after which that was seen": under pytest-xdist
other tests were talking to it too, and a server often dies a moment after the input that
killed it (a parse in a background task), when the test that sent it has ended and the next one
has begun. So the kit keeps a journal of the run (``journal.jsonl``: when each test started and
ended, against which generation of the target, and each moment a look found the target
answering), and when the target is found down, the **suspects** are the tests of that generation
that were running at any moment from :data:`AFTER_INPUT` seconds before the last time it was
seen answering, to the moment it was found down.

- With ``--target-command`` (the kit can start the target): the process that found it down
  (the *claimer*: ``crash-<generation>.json`` is created with O_EXCL, so exactly one claims)
  has the supervisor stop what is left of it, then re-runs the suspects one at a time, each
  against a freshly started target (conformance/run/culprits.py); a suspect is CRASH when it
  brings the target down on its own; when none does, the tests that ran before them on that
  generation are replayed in order and halved until the earlier test whose state the crash
  needs is found. Every suspect's verdict is the one of its own re-run
  (``culprits-<generation>.json``); then the target is restarted and the run goes on.
- Without it: the suspects are "not judged: the target went down while …", with their names,
  and every later test is not run (the run ends at once, exit 1).

A test's reports are held back until no crash can be charged to it any more (a look found the
target answering :data:`AFTER_INPUT` seconds after the test ended, in the same generation) or
the crash's culprits are known (run/lifecycle.py): then the same test gets the same verdict
under ``-n 1`` and ``-n auto``.

The processes of a run (xdist workers and the controller) share one folder: ``state.json``
(the target's generation: how many times it was restarted, and how each one ended), the journal,
the claims and culprits, ``stop-<generation>`` and ``restart-<generation>`` (the claimer's
requests to the supervisor) and ``kill-<generation>.json`` (a crash-recovery test's request:
kill -9 the target and start it again on the same data directory; not a crash).

A test that kills the target must run alone: the tests of other xdist workers would see the
target vanish under them. So with ``--target-command`` every suite test holds ``run.lock``
shared, and a killing test holds it exclusively (:meth:`CrashWatch.turn`); ``gate.lock`` in
front of it, and an ``exclusive-*`` request file that new tests wait on (flock is not fair),
keep new tests from starting while a killing test waits for the running ones to finish. The
spin watch (target/health.py) takes the same exclusive turn to look at the target with no test
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

from wirecheck.conformance.target.preflight import alive

#: Pause before the second look, and how much longer than the receive timeout it waits.
SETTLE_PAUSE = 0.3
SETTLE_FACTOR = 3.0
#: How often the supervisor and the waiting tests look at the folder.
POLL = 0.05
#: Seconds a server may take to die of an input after the test that sent it has ended (a
#: parse in a background task, a deferred write): a test that ended this long before the
#: target was last seen answering is not a suspect; a look this long after a test ended clears it.
AFTER_INPUT = 1.5



def write_json(path: str, doc: dict) -> None:
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w") as fh:
        json.dump(doc, fh)
    os.replace(tmp, path)


def read_json(path: str) -> dict | None:
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def append_line(path: str, record: dict) -> None:
    """One JSON line, appended in a single write (O_APPEND: lines of several processes never mix)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
    finally:
        os.close(fd)


def read_lines(path: str) -> list[dict]:
    out = []
    try:
        with open(path) as fh:
            for line in fh:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue              # a line being written
    except OSError:
        pass
    return out


def look(spec, profile, host: str, port: int, url: str | None, timeout: float) -> str | None:
    """None when the target answers the first step of its handshake; else how it was found
    (refused, silent), after a second, longer look a moment later."""
    reason = alive(spec, profile, host, port, url, timeout)
    if reason is None:
        return None
    time.sleep(SETTLE_PAUSE)
    return alive(spec, profile, host, port, url, timeout * SETTLE_FACTOR)


def suspects(journal: list[dict], generation: int, found_down: float, since: float = 0.0) -> list[str]:
    """The tests of ``generation`` that ran at some moment from :data:`AFTER_INPUT` s before the
    target was last seen answering (or ``since``, its start) to ``found_down``, by start time."""
    seen = [r["t"] for r in journal if r["e"] == "alive" and r["g"] == generation and r["t"] <= found_down]
    last_alive = max(seen, default=since)
    started = {r["test"]: r["t"] for r in journal if r["e"] == "start" and r["g"] == generation}
    ended = {r["test"]: r["t"] for r in journal if r["e"] == "end" and r["g"] == generation}
    out = [(t, test) for test, t in started.items()
           if t <= found_down and (test not in ended or ended[test] > last_alive - AFTER_INPUT)]
    return [test for _t, test in sorted(out)]


def earlier(journal: list[dict], generation: int, before: float) -> list[str]:
    """The tests of ``generation`` that started before ``before``, in order: what a crash that
    needs state may need."""
    started = sorted((r["t"], r["test"]) for r in journal
                     if r["e"] == "start" and r["g"] == generation and r["t"] < before)
    return [test for _t, test in started]


class CrashWatch:
    """One process's view of the target's life (every xdist worker has one). ``finder``
    (conformance/run/culprits.py) re-runs suspects on fresh targets; None without --target-command."""

    def __init__(self, spec, profile, address: tuple, timeout: float, folder: str,
                 managed: bool = False, restart_timeout: float = 60.0, finder=None) -> None:
        self.spec, self.profile = spec, profile
        self.host, self.port = address[0], address[1]
        self.url = address[2] if len(address) > 2 else None
        self.timeout = timeout
        self.folder = folder
        self.managed = managed
        self.restart_timeout = restart_timeout
        self.finder = finder
        #: this process stopped looking: the target never answered
        self.unwatched = False

    @staticmethod
    def new_folder() -> str:
        return tempfile.mkdtemp(prefix="wirecheck-crashwatch-")

    def _path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    # -- the shared state ----------------------------------------------------------------------

    def state(self) -> dict:
        return read_json(self._path("state.json")) or {"generation": 0, "ended": []}

    def generation(self) -> int:
        return int(self.state()["generation"])

    def claimed(self, generation: int) -> dict | None:
        """The claim of ``generation``'s crash (``test``: who found it down, ``reason``), if any."""
        return read_json(self._path(f"crash-{generation}.json"))

    def culprits(self, generation: int) -> dict | None:
        """What the kit found out about ``generation``'s crash, once it has (see the module doc)."""
        return read_json(self._path(f"culprits-{generation}.json"))

    def crashes(self) -> list[dict]:
        """Every crash of the run, in order (the culprits documents)."""
        out = []
        for gen in range(self.generation() + 1):
            doc = self.culprits(gen)
            if doc is not None:
                out.append(doc)
        return out

    def journal(self) -> list[dict]:
        return read_lines(self._path("journal.jsonl"))

    def note(self, event: str, generation: int, test: str | None = None, when: float | None = None) -> None:
        record = {"e": event, "g": generation, "t": time.time() if when is None else when}
        if test is not None:
            record["test"] = test
        append_line(self._path("journal.jsonl"), record)

    def _claim(self, generation: int, nodeid: str, reason: str) -> bool:
        try:
            fd = os.open(self._path(f"crash-{generation}.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
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
            return gen, "not run: the target went down earlier in the run"
        gen, gone = self._wait_restart(gen)
        if gone:
            return gen, f"not run: {gone}"
        return gen, None

    def after(self, nodeid: str, generation: int) -> None:
        """After a test that ran against ``generation``: look at the target. Answering: noted
        in the journal. Down: the first process to see it claims the crash and finds its
        culprits (this may take a while: the suspects are re-run); the others go on, and their
        tests wait for the culprits (run/lifecycle.py)."""
        if self.unwatched or self.state().get("gone_after_kill_by") == nodeid:
            return               # this test killed it and it did not come back: the test's FAIL says so
        if not self.seen_alive():
            # never seen answering (--no-preflight): one look; if it does not answer either,
            # nothing went down, and this process stops looking (a black hole would cost every
            # test a probe's timeout)
            if alive(self.spec, self.profile, self.host, self.port, self.url, self.timeout) is None:
                self.saw_alive()
            else:
                self.unwatched = True
            return
        self.look_now(nodeid, generation)

    def look_now(self, nodeid: str, generation: int, ran: bool = True) -> None:
        """Look at the target after ``nodeid`` (``ran``: a test that ran against it)."""
        looked = time.time()
        reason = look(self.spec, self.profile, self.host, self.port, self.url, self.timeout)
        if self.generation() != generation or self.claimed(generation) is not None:
            return               # restarted or claimed meanwhile: this look says nothing of the generation
        if reason is None:
            self.note("alive", generation, when=looked)
            return
        if self._claim(generation, nodeid, reason):
            self._handle_crash(nodeid, generation, reason, looked, suspect=ran)

    def clear_before_kill(self, nodeid: str) -> None:
        """Before a test that kills the target (it runs alone): the tests before it are given
        their :data:`AFTER_INPUT` seconds, and the target a look; a crash they caused is theirs,
        not hidden by the kill."""
        generation = self.generation()
        ends = [r["t"] for r in self.journal() if r["e"] == "end" and r["g"] == generation]
        wait = max(ends, default=0.0) + AFTER_INPUT - time.time()
        if wait > 0:
            time.sleep(wait)
        self.look_now(f"(the look before {nodeid})", generation, ran=False)

    def settled(self, generation: int, ended: float) -> tuple[str, dict | None]:
        """Whether a test of ``generation`` that ended at ``ended`` can be reported:
        ("clear", None) when the target answered :data:`AFTER_INPUT` s after it, or the
        generation ended by the kit's own kill; ("culprits", doc) once its crash is sorted out;
        ("wait", None) otherwise."""
        doc = self.culprits(generation)
        if doc is not None:
            return "culprits", doc
        if self.claimed(generation) is not None:
            return "wait", None
        ended_gen = next((e for e in self.state()["ended"] if e["generation"] == generation), None)
        if ended_gen is not None and ended_gen.get("deliberate"):
            return "clear", None
        if any(r["e"] == "alive" and r["g"] == generation and r["t"] >= ended + AFTER_INPUT
               for r in self.journal()):
            return "clear", None
        return "wait", None

    def _handle_crash(self, nodeid: str, generation: int, reason: str, found: float, suspect: bool = True) -> None:
        doc = {"generation": generation, "found_by": nodeid, "reason": reason, "found_at": found}
        if self.managed:
            self._request(f"stop-{generation}")
            self._wait(lambda s: s.get("stopped", -1) >= generation or s.get("gone"))
            ended = next((e for e in self.state()["ended"] if e["generation"] == generation), {})
            doc.update(status=ended.get("status"), output=ended.get("output", ""))
        journal = self.journal()
        doc["suspects"] = suspects(journal, generation, time.time())
        if suspect and nodeid not in doc["suspects"]:
            doc["suspects"].append(nodeid)
        if self.finder is not None:
            first = min((r["t"] for r in journal if r["e"] == "start" and r.get("test") in doc["suspects"]
                         and r["g"] == generation), default=found)
            try:
                doc.update(self.finder.find(doc["suspects"], earlier(journal, generation, first)))
            except Exception as exc:            # the kit's own failure: the suspects stay unjudged
                doc.update(attributed=False, culprits=[], results={},
                           error=f"{type(exc).__name__}: {exc}")
        else:
            doc.update(attributed=False, culprits=[], results={})
        write_json(self._path(f"culprits-{generation}.json"), doc)
        if self.managed:
            self._request(f"restart-{generation}")
            self._wait_restart(generation)

    def _request(self, name: str) -> None:
        open(self._path(name), "w").close()

    def _wait(self, done) -> dict:
        deadline = time.monotonic() + self.restart_timeout
        while time.monotonic() < deadline:
            state = self.state()
            if done(state):
                return state
            time.sleep(POLL)
        return self.state()

    def pgid(self) -> int | None:
        """The process group of the target the kit runs (None: not run by the kit, or down)."""
        return self.state().get("pgid") if self.managed else None

    def saw_alive(self) -> None:
        """The target answered (the preflight, or a look after a test): from now on, not
        answering is going down. A target never seen answering is not watched: with
        --no-preflight, a server that never spoke the protocol is the tests' to judge."""
        open(self._path("alive"), "a").close()

    def seen_alive(self) -> bool:
        return os.path.exists(self._path("alive"))

    def _wait_restart(self, generation: int) -> tuple[int, str | None]:
        """Wait until the supervisor has restarted generation ``generation``; (the new
        generation, None) or (…, why the target did not come back). The crash's culprits are
        found before the restart, so the wait allows for their re-runs."""
        allowed = self.restart_timeout + (self.finder.allowance() if self.finder is not None else 0.0)
        deadline = time.monotonic() + allowed
        while time.monotonic() < deadline:
            state = self.state()
            if state.get("gone"):
                return int(state["generation"]), state["gone"]
            if int(state["generation"]) > generation:
                return int(state["generation"]), None
            time.sleep(POLL)
        return generation, f"the target was not restarted within {allowed:g} s"

    def kill_and_restart(self, nodeid: str) -> int:
        """kill -9 the target (its whole process group) and start it again with the same
        command, port and data directory; the new generation once it accepts connections.
        RuntimeError when it does not come back (every later test is then not run)."""
        if not self.managed:
            raise RuntimeError("the kit does not run the target (no --target-command)")
        generation = self.generation()
        write_json(self._path(f"kill-{generation}.json"), {"test": nodeid})
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
            request = self._path(f"exclusive-{os.getpid()}-{threading.get_ident()}")
            open(request, "w").close()
        else:
            while any(name.startswith("exclusive-") for name in os.listdir(self.folder)):
                time.sleep(POLL)
        try:
            with open(self._path("gate.lock"), "a") as gate, open(self._path("run.lock"), "a") as run:
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
    """In the process that started the target: stops it when a test that saw it go down asks
    (never on its own: the test must see the crash first), recording how it ended, and starts it
    again once that test has found the crash's culprits; kills and restarts it for a
    crash-recovery test."""

    def __init__(self, managed, folder: str) -> None:
        self.managed = managed
        self.folder = folder
        self.generation = 0
        self.ended: list[dict] = []
        self.gone: str | None = None
        self.stopped = -1
        #: called before a deliberate kill (a crash-recovery test's, the spin watch's restart):
        #: what would go with the process is looked at first (target_health.SpinWatch.look_now)
        self.before_kill = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wirecheck-supervisor", daemon=True)
        self._save()

    def _pgid(self) -> int | None:
        """The target's process group (its first process's id: it runs in a session of its own)."""
        proc = self.managed.proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def start(self) -> "Supervisor":
        self._thread.start()
        return self

    def _has(self, name: str) -> bool:
        return os.path.exists(os.path.join(self.folder, name))

    def _run(self) -> None:
        while not self._stop.wait(POLL):
            if self.gone is not None:
                continue
            gen = self.generation
            if self.stopped < gen and self._has(f"stop-{gen}"):
                self._stop_crashed()
            elif self._has(f"restart-{gen}"):
                self._start_again()
            else:
                kill = read_json(os.path.join(self.folder, f"kill-{gen}.json"))
                if kill is not None:
                    self._kill_and_start(kill["test"])

    def _stop_crashed(self) -> None:
        """After a crash: how the process ended (or that it hung), and what it printed last;
        whatever is left of it is stopped, so that the culprits' re-runs may take its port."""
        status = self.managed.exit_status()
        if status == "running":
            status = "still running (hung): killed by the kit"
        output = self.managed.output_tail(15)
        self.managed.stop()
        self.ended.append({"generation": self.generation, "status": status, "output": output,
                           "deliberate": False})
        self.stopped = self.generation
        self._save()

    def _start_again(self) -> None:
        if self.stopped < self.generation:            # a restart asked without a stop (older callers)
            self._stop_crashed()
        try:
            self.managed.restarts += 1
            self.managed.start()
        except RuntimeError as exc:
            self.gone = f"the target did not come back after a restart: {exc}"
        if self.gone is None:
            self.generation += 1
        self._save()

    def _kill_and_start(self, killed_for: str) -> None:
        if self.before_kill is not None:
            try:
                self.before_kill()
            except Exception:        # noqa: BLE001 - a look that fails must not keep the kill from happening
                pass
        status = self.managed.exit_status()
        status = (f"killed with SIGKILL by the kit for {killed_for}" if status == "running"
                  else f"already down before the kit's kill -9 ({status})")
        output = self.managed.output_tail(15)
        try:
            self.managed.restart()
        except RuntimeError as exc:
            self.gone = f"the target did not come back after the kit's kill -9: {exc}"
        self.ended.append({"generation": self.generation, "status": status, "output": output,
                           "deliberate": True})
        if self.gone is None:
            self.generation += 1
        self._save(killed_for)

    def _save(self, killed_for: str | None = None) -> None:
        state = {"generation": self.generation, "ended": self.ended, "pgid": self._pgid(),
                 "stopped": self.stopped}
        if self.gone:
            state["gone"] = self.gone
            if killed_for is not None:
                state["gone_after_kill_by"] = killed_for
        write_json(os.path.join(self.folder, "state.json"), state)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
