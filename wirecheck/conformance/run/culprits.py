"""Which test brought the target down: its suspects re-run on freshly started targets.

When the target goes down while several tests were talking to it (crashwatch.py names them:
the *suspects*), the process that found it down runs a child pytest with the run's own suite,
profile, timeout, budget and ``--target-command``; the child (isolation.py) re-runs the suspects
on targets it starts afresh, in order and then one at a time, and halves what is left until each
crash has its test, or the earlier test whose state it needs. Every suspect's verdict is the one
of its own re-run, so the same test gets the same verdict whatever ran beside it.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile

from wirecheck.conformance.target.crashwatch import read_json, read_lines

#: Earlier tests (those that ran before the suspects on the crashed target) handed to the search.
MAX_EARLIER = 256
#: Seconds for the child pytest to start and collect.
CHILD_SLACK = 60.0
#: The longest a search may take (then its suspects stay "not judged").
MAX_SEARCH = 1800.0


class ChildFailed(RuntimeError):
    """The child run gave no result."""


class Finder:
    """Runs the search of one crash in a child pytest. ``base_argv`` is the child's command line
    up to the tests (python -m pytest, the run's options, --target-command); ``root`` turns node
    ids into paths; ``per_test`` is a test's budget (seconds)."""

    def __init__(self, base_argv: list[str], root: str, cwd: str, per_test: float) -> None:
        self.base_argv = base_argv
        self.root = root
        self.cwd = cwd
        self.per_test = per_test
        #: node id -> the test file's path (set once the run has collected: conftest's
        #: node ids are relative to where the run started, which the child may not share)
        self.paths: dict[str, str] = {}
        #: where a process that collected wrote them (crashwatch's folder)
        self.paths_file: str | None = None

    def budget(self, tests: int) -> float:
        return min(MAX_SEARCH, CHILD_SLACK + 3 * tests * (self.per_test + 10.0))

    def allowance(self) -> float:
        """How long other tests wait for the culprits of one crash before giving up."""
        return MAX_SEARCH + 30.0

    def find(self, suspects: list[str], earlier: list[str]) -> dict:
        """The crash search's result (isolation.py), with ``attributed``."""
        earlier = [t for t in earlier if t not in suspects][-MAX_EARLIER:]
        done = self._child({"suspects": suspects, "earlier": earlier}, list(dict.fromkeys(earlier + suspects)))
        done["attributed"] = bool(done["culprits"])
        return done

    def health(self, spin: list[str], growth: list[str]) -> dict:
        """Each test on a fresh target of its own (isolation.py's health mode, run/health_reruns.py): a
        ``growth`` suspect three times, its memory and descriptors read after each run; a
        ``spin`` suspect then left with nothing to do, its threads' CPU read."""
        tests = sorted(set(spin) | set(growth))
        return self._child({"mode": "health", "tests": tests, "spin": spin, "growth": growth}, tests)

    def _child(self, request_body: dict, tests: list[str]) -> dict:
        fd, out = tempfile.mkstemp(prefix="wirecheck-rerun-", suffix=".jsonl")
        os.close(fd)
        request = out[:-len(".jsonl")] + ".request.json"
        with open(request, "w") as fh:
            json.dump({**request_body, "out": out, "args": {t: self._arg(t) for t in tests}}, fh)
        argv = self.base_argv + ["--wirecheck-isolate", request] + [self._arg(t) for t in tests]
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTEST_XDIST", "PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST"))}
        proc = subprocess.Popen(argv, cwd=self.cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=self.budget(len(tests)))
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid, signal.SIGTERM)
            try:
                output, _ = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid, signal.SIGKILL)
                output, _ = proc.communicate()
        finally:
            records = read_lines(out)
            for r in records:                 # a target the child left running (it was killed)
                if "pgid" in r:
                    _kill_group(r["pgid"], signal.SIGKILL)
            for path in (out, request):
                os.unlink(path)
        done = next((r["done"] for r in records if "done" in r), None)
        if done is None:
            tail = (output or b"").decode("utf-8", "replace").strip().splitlines()[-12:]
            raise ChildFailed(f"the re-runs gave no result (exit status {proc.returncode}):\n" + "\n".join(tail))
        return done

    def _arg(self, nodeid: str) -> str:
        if not self.paths and self.paths_file:       # the xdist controller collects nothing itself
            self.paths = read_json(self.paths_file) or {}
        path, sep, rest = nodeid.partition("::")
        return self.paths.get(nodeid, os.path.join(self.root, path)) + sep + rest


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def child_argv(config, target_command: str, target: str | None, strict: bool) -> list[str]:
    """The child's command line up to its tests: this Python's pytest with the run's options."""
    opt = config.option
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
            "-o", "addopts=", "--rootdir", str(config.rootpath), "--protocol", opt.wirecheck_protocol,
            "--target-command", target_command, "--wirecheck-timeout", repr(opt.wirecheck_timeout),
            # re-runs judge each test as the run does; the run's allowance is not theirs to spend
            "--wirecheck-run-budget", repr(MAX_SEARCH)]
    if config.inipath is not None:
        argv += ["-c", str(config.inipath)]
    if opt.wirecheck_profile:
        argv += ["--profile", opt.wirecheck_profile]
    if target:
        argv += ["--target", target]
    if getattr(opt, "wirecheck_test_budget", None):
        argv += ["--wirecheck-test-budget", repr(opt.wirecheck_test_budget)]
    if strict:
        argv += ["-o", "strict=true"]
    # what the hypothesis-driven tests draw: the same seed and profile as the run's
    if getattr(opt, "hypothesis_seed", None) is not None:
        argv += ["--hypothesis-seed", str(opt.hypothesis_seed)]
    if getattr(opt, "hypothesis_profile", None):
        argv += ["--hypothesis-profile", opt.hypothesis_profile]
    # plugins the run loaded by name (-p NAME), but not those a child must not have
    argv += [a for name in _plugins(config) for a in ("-p", name)]
    return argv


def _plugins(config) -> list[str]:
    args = list(config.invocation_params.args)
    names = [v for f, v in zip(args, args[1:]) if f == "-p"]
    names += [a[2:] for a in args if a.startswith("-p") and len(a) > 2 and not a.startswith("-p=")]
    return [n for n in names if n not in ("xdist", "no:xdist", "no:cacheprovider", "cacheprovider")]
