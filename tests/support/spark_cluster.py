"""A real Spark standalone cluster on loopback for the tests: a master and workers as separate
processes, started with pyspark's own ``bin/spark-class`` (no download), and a Python for the
executors that has pyspark and the kit's dependencies but not the kit, as a cluster's machines
would: the job must bring the kit itself.

The executors' Python is a virtualenv whose ``site-packages`` reaches the kit's environment
through a ``.pth`` line: a directory put on ``sys.path`` that way gives its packages (pyspark,
pyarrow, msgpack, ...) but not what that environment's own ``.pth`` files add, which is how an
editable install of the kit is found; :func:`workers_python` checks that ``import wirecheck``
fails there. Every wait is bounded; leaving the context stops every process of the cluster.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import venv
from pathlib import Path

#: Seconds the master and the workers may take to start and register.
START_TIMEOUT = 90.0


def spark_home() -> Path:
    import pyspark
    return Path(pyspark.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def workers_python(where: Path) -> str:
    """A virtualenv at ``where`` whose Python has the kit's dependencies but not the kit."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    python = str(where / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    Path(site, "kit-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = subprocess.run([python, "-c", "import pyspark, pyarrow, msgpack\n"
                            "try:\n    import wirecheck\nexcept ImportError:\n    print('no kit')"],
                           capture_output=True, text=True, timeout=60, cwd=where,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if probe.stdout.strip() != "no kit":
        raise RuntimeError(f"the executors' Python {python} is not as wanted: {probe.stdout} {probe.stderr}")
    # the executors' command: that Python, each start written down (proof of who ran the tasks)
    wrapper = where / "bin" / "executor-python"
    wrapper.write_text(f"#!/bin/sh\necho \"$$\" >> {where / 'started'}\nexec {python} \"$@\"\n")
    wrapper.chmod(0o755)
    return str(wrapper)


def executor_starts(python: str) -> int:
    """How often the executors started the Python of :func:`workers_python`."""
    log = Path(python).parent.parent / "started"
    return len(log.read_text().split()) if log.exists() else 0


class StandaloneCluster:
    """``with StandaloneCluster(dir, workers=2) as c: c.master_url``: a master and ``workers``
    workers (``cores`` cores, ``memory`` each) on 127.0.0.1, their logs and work directories
    under ``dir``."""

    def __init__(self, directory: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.dir = Path(directory)
        self.workers, self.cores, self.memory = workers, cores, memory
        self.port, self.ui_port = _free_port(), _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def _start(self, name: str, *args: str) -> Path:
        log = self.dir / f"{name}.log"
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_LOG_DIR": str(self.dir), "SPARK_WORKER_DIR": str(self.dir / f"{name}-work")}
        with open(log, "w") as fh:
            self.procs.append(subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args],
                                               stdout=fh, stderr=subprocess.STDOUT, env=env,
                                               start_new_session=True))
        self.logs.append(log)
        return log

    def _wait_for(self, log: Path, text: str, deadline: float) -> None:
        while time.monotonic() < deadline:
            if text in log.read_text(errors="replace"):
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.3)
        raise RuntimeError(f"{log.name}: no {text!r} within {START_TIMEOUT} s:\n{log.read_text(errors='replace')[-3000:]}")

    def __enter__(self) -> "StandaloneCluster":
        self.dir.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + START_TIMEOUT
        try:
            master = self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                 "--port", str(self.port), "--webui-port", str(self.ui_port))
            self._wait_for(master, "I have been elected leader", deadline)
            # the workers start together (a JVM's start is seconds), then each must register
            workers = [self._start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                   "--cores", str(self.cores), "--memory", self.memory,
                                   "--webui-port", str(_free_port()), "--work-dir", str(self.dir / f"work-{i}"),
                                   self.master_url)
                       for i in range(self.workers)]
            for worker in workers:
                self._wait_for(worker, "Successfully registered with master", deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def active_apps(self) -> list[str]:
        """The applications the master has running (its web UI's JSON)."""
        import json
        import urllib.request
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=10) as answer:
            return [app.get("id", "?") for app in json.load(answer).get("activeapps", [])]

    def executors(self) -> list[int]:
        """The processes working in an application's directory under a worker (executors and
        their Python workers): what a finished or stopped application must not leave."""
        found = []
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
                except OSError:
                    continue
                if cwd.is_relative_to(self.dir) and cwd.parent.name.startswith("app-"):
                    found.append(int(pid))
        return found

    def stop(self) -> None:
        for p in reversed(self.procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in reversed(self.procs):
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(15)


def analyze_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "wirecheck", *args]


def driver_env() -> dict:
    """The driver's environment without an inherited PYSPARK_PYTHON (the embedded Spark of the
    test session sets one): the executors' Python must come from the command's own settings."""
    return {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
